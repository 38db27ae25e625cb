"""The numerical core of the smooth ECE: the reflected Gaussian kernel
smoother on a grid of ``[0, 1]`` and the fixed-point bandwidth search.

Błasiok & Nakkiran (2023) define, for predictions :math:`f_i \\in [0, 1]`,
outcomes :math:`y_i` and weights :math:`w_i`, the kernel-smoothed residual
and density

.. math::

    \\hat r_\\sigma(t) = \\sum_i w_i K_\\sigma(t, f_i) (f_i - y_i), \\qquad
    \\hat\\delta_\\sigma(t) = \\sum_i w_i K_\\sigma(t, f_i),

with :math:`K_\\sigma` the Gaussian kernel of width :math:`\\sigma`
reflected at 0 and 1, and :math:`\\mathrm{smECE}_\\sigma = \\int |\\hat
r_\\sigma| / \\int \\hat\\delta_\\sigma`. The bandwidth is the fixed point
:math:`\\sigma^*` of :math:`\\sigma \\mapsto \\mathrm{smECE}_\\sigma` (the
map decreases in :math:`\\sigma`, so the fixed point is unique).

The discretisation follows the authors' package ``relplot`` 0.1:

* the samples are spread on ``m`` equally spaced nodes ``g / (m - 1)`` by
  linear interpolation weights (each sample gives its weight to its two
  neighbouring nodes), ``m = max(2000, round(20 / sigma)) // 2 + 1``;
* the node values, mirrored about the first and the last node, are
  convolved with the Gaussian weights of the node offsets
  (:func:`reflected_convolution`);
* both sums are read at ``max(200, round(10 / sigma))`` equally spaced
  points of ``[0, 1]`` by linear interpolation, and the smooth ECE is
  :math:`\\sum_t |\\hat r(t)| / \\sum_t \\hat\\delta(t)`;
* :math:`\\sigma^*` is bracketed by 10 bisections of ``[0, 1]`` with the
  test ":math:`\\sigma < 10^{-3}` or :math:`\\sigma <
  \\mathrm{smECE}_\\sigma`", and the upper end of the last bracket is
  used (a resolution of :math:`2^{-10}`).

``boundary="relplot"`` keeps ``relplot``'s convolution and sum too, and
then the numbers agree with its ``smECE`` to rounding. Its convolution does
not mirror the end nodes (a sample at exactly 0 or 1 counts half, in the
density and in the residual; float32 confidences of deep networks often
are exactly 1.0), truncates the kernel at offsets of 1/2 and, for an even
``m`` (bandwidths below 0.01), centres it half a node off; its sum over
the reading points gives the end points full weight, and adds
:math:`\\epsilon = 10^{-4}` to the density at each point (here per unit
of mean weight: the weights are scaled to mean 1, which keeps the result
free of the scale of the weights, but makes a weight of 2 differ from a
repeated row by about 1e-4 / n, relative). ``boundary="reflect"``
(the default) mirrors the end nodes, centres the kernel over offsets up to
1 and sums by the trapezoidal rule: the paper's reflected kernel on the
same grid (within 1e-4, relative, of the exact integrals for bandwidths
from 0.005 to 0.1; tested).

The cost is one :func:`numpy.bincount` pass over the samples per distinct
grid size (one for every :math:`\\sigma \\ge 0.01`) and an FFT convolution
of ``O(m log m)`` per evaluated bandwidth: ``O(n + m log m)`` in all.
"""

import numpy as np

__all__ = []  # private module

#: relplot's regulariser of the density (per unit of mean sample weight).
DENSITY_EPS = 1e-4
#: Bandwidths below this are accepted by the fixed-point test (relplot's).
SIGMA_FLOOR = 1e-3
#: Bisections of [0, 1] bracketing the fixed point (relplot's).
N_BISECTIONS = 10


def grid_size(sigma):
    """Number of nodes of the grid the samples are spread on."""
    return max(2000, round(20 / sigma)) // 2 + 1


def eval_size(sigma):
    """Number of points at which the smoothed sums are read."""
    return max(round(10 / sigma), 200)


class KernelSmoother:
    """Reflected-Gaussian smoothing of ``(f, values)`` on the grids of
    :func:`grid_size`, the spread of the samples cached per grid size.

    Parameters
    ----------
    f : ndarray of shape (n,)
        Predictions in ``[0, 1]`` (float64).
    values : ndarray of shape (n_values, n)
        What is smoothed (weighted): row 0 is the weight of each sample,
        the other rows the weight times a per-sample value.
        Weights of mean 1 for ``boundary="relplot"`` (:data:`DENSITY_EPS`
        is per unit of mean weight).
    boundary : {"reflect", "relplot"}, default="reflect"
        See :func:`reflected_convolution`.
    """

    def __init__(self, f, values, boundary="reflect"):
        self.f = f
        self.values = values
        self.boundary = boundary
        self._spread = {}

    def spread(self, m):
        """``(n_values, m)`` node sums of linear interpolation weights."""
        if m not in self._spread:
            scaled = self.f * (m - 1)
            node = scaled.astype(np.intp)
            np.clip(node, 0, m - 2, out=node)
            frac = scaled - node
            out = np.empty((self.values.shape[0], m))
            for row, v in zip(out, self.values, strict=True):
                upper = v * frac
                row[:] = np.bincount(node, weights=v - upper, minlength=m)
                row[1:] += np.bincount(node, weights=upper, minlength=m - 1)[: m - 1]
            self._spread = {m: out}  # grids are visited in runs of one size
        return self._spread[m]

    def on_grid(self, sigma, exact=False):
        """The smoothed sums on the ``m`` nodes, ``(n_values, m)``."""
        nodes = self.spread(grid_size(sigma))
        return reflected_convolution(nodes, sigma, self.boundary, exact)

    def at(self, sigma, t, exact=False):
        """The smoothed sums read at the points ``t``, ``(n_values, t.size)``."""
        grid = self.on_grid(sigma, exact)
        nodes = np.linspace(0.0, 1.0, grid.shape[1])
        return np.stack([np.interp(t, nodes, g) for g in grid])

    def smooth_ece(self, sigma):
        """:math:`\\mathrm{smECE}_\\sigma` (``values``: weight, weighted residual)."""
        t = np.linspace(0.0, 1.0, eval_size(sigma))
        density, residual = self.at(sigma, t)
        if self.boundary == "relplot":  # a plain sum, regularised
            return float(np.abs(residual).sum() / (density + DENSITY_EPS).sum())
        quad = np.ones_like(t)
        quad[[0, -1]] = 0.5  # the trapezoidal rule
        return float(quad @ np.abs(residual) / (quad @ density))


def reflected_convolution(nodes, sigma, boundary, exact=False):
    """Convolve the node sums ``(n_values, m)`` with the Gaussian of width
    ``sigma`` reflected at both ends of ``[0, 1]``.

    ``"reflect"``: the kernel of the paper, :math:`\\varphi_\\sigma(t - f) +
    \\varphi_\\sigma(t + f) + \\varphi_\\sigma(t - 2 + f)`, over offsets up
    to 1 (the end nodes are their own mirror images, so they count twice).
    ``"relplot"``: relplot 0.1's discretisation: offsets up to 1/2, the end
    nodes once (samples at exactly 0 or 1 count half), and for an even ``m``
    the kernel centred half a node off.

    By FFT (rounding of about 1e-16 of the largest sum), or with ``exact``
    (``"reflect"`` only) directly over the offsets whose Gaussian weight is
    not 0 (each sum then has a small relative error, also where it is tiny).
    """
    # scipy.signal costs about 0.1 s to import: only where a smooth ECE runs.
    from scipy.signal import fftconvolve

    m = nodes.shape[1]
    if boundary == "reflect":
        nodes = nodes.copy()
        nodes[:, [0, -1]] *= 2
    # Mirrored about the first and the last node (neither repeated): node
    # indices -(m - 1) .. 2 (m - 1).
    ext = np.concatenate([nodes[:, :0:-1], nodes, nodes[:, -2::-1]], axis=1)
    if boundary == "relplot":
        kernel = _gaussian(np.linspace(0.0, 1.0, m) - 0.5, sigma)
        full = fftconvolve(ext, kernel[None, :], mode="valid", axes=1)
        return full[:, m // 2 : m // 2 + m]
    kernel = _gaussian(np.linspace(-1.0, 1.0, 2 * m - 1), sigma)
    if not exact:
        return fftconvolve(ext, kernel[None, :], mode="valid", axes=1)
    half = int(np.count_nonzero(kernel[m - 1 :])) - 1  # offsets of weight > 0
    kernel = kernel[m - 1 - half : m + half]
    start = m - 1 - half
    return np.stack([np.convolve(e, kernel, "valid")[start : start + m] for e in ext])


def _gaussian(offsets, sigma):
    return np.exp(-offsets * offsets / (2 * sigma * sigma)) / (
        np.sqrt(2 * np.pi) * sigma
    )


def fixed_point_bandwidth(smoother):
    """``(sigma, smECE_sigma)`` at the bisected fixed point ``sigma*``."""

    def below(sigma):  # sigma is left of the fixed point
        if sigma < SIGMA_FLOOR:
            return True, None
        value = smoother.smooth_ece(sigma)
        return sigma < value, value

    hit, value = below(1.0)
    if hit:
        return 1.0, value
    lo, hi, at_hi = 0.0, 1.0, value
    for _ in range(N_BISECTIONS):
        mid = (lo + hi) / 2
        hit, value = below(mid)
        if hit:
            lo = mid
        else:
            hi, at_hi = mid, value
    return hi, at_hi
