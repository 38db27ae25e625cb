"""Smooth ECE (Błasiok & Nakkiran 2023) and its kernel-smoothed reliability
curve, for the confidence, top-label and classwise kinds.

The kernel smoother and the bandwidth search are in
:mod:`skcalib.metrics._smooth_kernel`; this module turns the validated
inputs into the cells of a kind (one prediction/outcome pair per cell) and
combines the cells' errors.
"""

from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np

from skcalib._core.compat import Interval, StrOptions, validate_params
from skcalib._core.inputs import (
    COMMON_CONSTRAINTS,
    KINDS,
    binary_column,
    check_metric_inputs,
    curve_cells,
)
from skcalib._core.top1 import top1
from skcalib._core.xp import host_array_api
from skcalib.metrics._smooth_kernel import (
    DENSITY_EPS,
    KernelSmoother,
    fixed_point_bandwidth,
)

__all__ = [
    "SmoothReliabilityCurve",
    "smooth_calibration_error",
    "smooth_reliability_curve",
]

#: The curve is NaN where the density is below this fraction of its maximum.
_NEAR_DATA = 1e-9

SMOOTH_CONSTRAINTS = {
    **COMMON_CONSTRAINTS,
    "kind": [StrOptions(set(KINDS))],
    "bandwidth": [StrOptions({"auto"}), Interval(Real, 0, None, closed="neither")],
    "boundary": [StrOptions({"reflect", "relplot"})],
}


def _unit_weights(inputs):
    """Weights of mean 1 (``relplot``'s density regulariser is per unit of
    mean weight, so that scaling every weight changes nothing)."""
    w = inputs.sample_weight
    if w is None:
        return np.ones(inputs.n_samples)
    return w / w.mean()


def _column(proba, j):
    """Probability of class ``j`` as float64 (1-D ``proba``: binary)."""
    col = binary_column(proba, j) if proba.ndim == 1 else proba[:, j]
    return np.asarray(col, dtype=np.float64)


def _cells(inputs, kind):
    """``[(f, a, w, share)]``: predictions, 0/1 outcomes, weights and the
    share of each cell's error in the result."""
    proba, y = inputs.proba, inputs.y
    w = _unit_weights(inputs)
    if kind == "classwise":
        k = inputs.n_classes
        # Two classes: the positive class's error (see the docstring).
        columns = [1] if k == 2 else range(k)
        return [
            (_column(proba, j), (y == j).astype(np.float64), w, 1 / len(columns))
            for j in columns
        ]
    pred, conf = top1(proba, check_values=False)
    f = conf.astype(np.float64)
    correct = (pred == y).astype(np.float64)
    if kind == "confidence":
        return [(f, correct, w, 1.0)]
    total = w.sum()
    cells = []
    for j in range(inputs.n_classes):
        mask = pred == j
        wj = w[mask]
        share = wj.sum() / total
        if share > 0:
            cells.append((f[mask], correct[mask], wj, share))
    return cells


def _cell_error(f, a, w, bandwidth, boundary):
    """``(sigma, smECE_sigma)`` of one cell."""
    smoother = KernelSmoother(f, np.stack([w, w * (f - a)]), boundary)
    if bandwidth == "auto":
        return fixed_point_bandwidth(smoother)
    return float(bandwidth), smoother.smooth_ece(float(bandwidth))


@host_array_api("y_proba")
@validate_params(SMOOTH_CONSTRAINTS, prefer_skip_nested_validation=True)
def smooth_calibration_error(
    y_true,
    y_proba,
    *,
    kind="confidence",
    bandwidth="auto",
    boundary="reflect",
    sample_weight=None,
    labels=None,
):
    """Smooth ECE: the calibration error of the kernel-smoothed reliability
    diagram, with its self-chosen bandwidth (no bins).

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True class labels (integers or strings).
    y_proba : array-like of shape (n_samples,) or (n_samples, n_classes)
        Predicted probabilities. 1-D: probability of the positive class (the
        larger label, or ``labels[1]``). 2-D: one column per class in the
        order of ``labels``; rows sum to 1.
    kind : {"confidence", "top_label", "classwise"}, default="confidence"
        ``"confidence"``: the top-1 probability against top-1 correctness,
        all samples pooled. ``"top_label"``: per predicted class ``k``, the
        smooth ECE of the confidence of the samples predicted ``k`` (each
        with its own bandwidth), weighted by the fraction of the weight
        predicted ``k``. ``"classwise"``: the **mean** over classes of the
        smooth ECE of ``p_k`` against ``y == k``. With two classes, the
        smooth ECE of ``p_1`` against ``y == labels[1]`` (``relplot``'s
        ``smECE(p, y)``): the two classes' errors are equal (the reflected
        kernel is symmetric; with ``boundary="relplot"``, up to its
        half-node offset below ``sigma = 0.01``).
    bandwidth : "auto" or float, default="auto"
        Width :math:`\\sigma` of the Gaussian kernel. ``"auto"``: the fixed
        point :math:`\\sigma^* = \\mathrm{smECE}_{\\sigma^*}` of each cell
        (see Notes); a float: that width for every cell.
    boundary : {"reflect", "relplot"}, default="reflect"
        ``"reflect"``: the Gaussian kernel reflected at 0 and 1 of the
        paper. ``"relplot"``: the discretisation of ``relplot`` 0.1, whose
        ``smECE`` this then equals; it counts the samples at exactly 0 or 1
        half (see Notes).
    sample_weight : array-like of shape (n_samples,), default=None
        Sample weights (weighted kernel sums).
    labels : array-like of shape (n_classes,), default=None
        Class labels of the columns of ``y_proba``; default: the sorted
        labels of ``y_true``, which must then name every column (see
        :func:`expected_calibration_error`).

    Returns
    -------
    error : float
        In ``[0, 1]``.

    See Also
    --------
    smooth_reliability_curve : The smoothed curve, its density and bandwidth.
    expected_calibration_error : The binned error.

    Notes
    -----
    For predictions :math:`f_i`, outcomes :math:`a_i \\in \\{0, 1\\}` and
    weights :math:`w_i` of one cell, with :math:`K_\\sigma` the Gaussian
    kernel of width :math:`\\sigma` reflected at 0 and 1 [1]_:

    .. math::

        \\mathrm{smECE}_\\sigma = \\frac{\\int_0^1 \\big| \\sum_i w_i
        K_\\sigma(t, f_i) (f_i - a_i) \\big| \\, dt}{\\int_0^1 \\sum_i w_i
        K_\\sigma(t, f_i) \\, dt},

    the mean absolute residual of the Nadaraya-Watson regression of the
    residual :math:`f - a` on :math:`f`, weighted by the kernel density of
    :math:`f`. :math:`\\mathrm{smECE}_\\sigma` decreases in :math:`\\sigma`,
    and the smooth ECE is its value at the fixed point
    :math:`\\sigma^* = \\mathrm{smECE}_{\\sigma^*}`, which makes it a
    consistent calibration measure (within constant factors of the
    distance to calibration) [1]_.

    With ``boundary="reflect"``, :math:`K_\\sigma(t, f) = \\varphi_\\sigma(t
    - f) + \\varphi_\\sigma(t + f) + \\varphi_\\sigma(t - 2 + f)`
    (:math:`\\varphi_\\sigma` the normal density). The integrals are
    computed on the grid of the authors' package ``relplot`` 0.1: the
    samples are spread on about ``max(1000, 10 / sigma)`` nodes by linear
    interpolation, the nodes are mirrored at both ends and convolved with
    the Gaussian by FFT, read at ``max(200, 10 / sigma)`` points and
    integrated by the trapezoidal rule; the fixed point is bracketed by 10
    bisections of ``[0, 1]`` (resolution :math:`2^{-10}`, the upper end is
    used, as ``relplot``). The cost is ``O(n)`` per grid size plus
    ``O(m \\log m)`` per tried bandwidth: about 0.2 s for ``n = 1e6``.

    With ``boundary="relplot"`` the convolution and the sum are
    ``relplot``'s too, and the result equals ``relplot.smECE`` to rounding
    (tested to 1e-9 on real predictions, binary and top-label). That
    convolution does not mirror the end nodes, so a sample at exactly 0 or 1
    counts half, in the density and in the residual; it also truncates the
    kernel at offsets of 1/2, below ``sigma = 0.01`` may centre it half a
    node off, its sum gives the two end points full weight, and it adds
    :math:`10^{-4}` to the density at each point (here per unit of mean
    weight, so that the scale of the weights does not matter; a weight of
    2 then differs from a repeated row by about 1e-4 / n, relative). The
    default is within 1e-4 (relative) of the exact integrals, and exactly
    invariant to the scale of the weights and to repeated rows.

    Deep networks' float32 confidences are often exactly 1.0: on the
    CIFAR-10 test predictions of a WideResNet (netcal), 25 % of them are,
    and ``relplot`` gives 0.0757 where the reflected kernel gives 0.0537,
    which is :math:`|\\overline{f - a}|` (the smoothed residuals there all
    have one sign, so every bandwidth gives about that). When no prediction
    lies within one grid step (about 1e-3) of 0 or 1, the two agree to
    about 1e-4 / n (``relplot``'s regulariser); for predictions spread over
    ``[0, 1]``, to about 1e-3 (relative).

    References
    ----------
    .. [1] J. Błasiok and P. Nakkiran, "Smooth ECE: Principled Reliability
       Diagrams via Kernel Smoothing", ICLR 2024 (arXiv:2309.12236, 2023).

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib.metrics import smooth_calibration_error
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=20000)
    >>> y = (rng.uniform(size=p.size) < p).astype(int)      # calibrated
    >>> round(smooth_calibration_error(y, p, kind="classwise"), 3)
    0.011
    >>> y_over = (rng.uniform(size=p.size) < 0.5 + (p - 0.5) / 2).astype(int)
    >>> round(smooth_calibration_error(y_over, p, kind="classwise"), 3)
    0.119
    """
    inputs = check_metric_inputs(
        y_true, y_proba, sample_weight=sample_weight, labels=labels
    )
    total = 0.0
    for f, a, w, share in _cells(inputs, kind):
        total += share * _cell_error(f, a, w, bandwidth, boundary)[1]
    return float(total)


@dataclass(frozen=True, eq=False)
class SmoothReliabilityCurve:
    """The kernel-smoothed reliability curve of one cell, from
    :func:`smooth_reliability_curve`. Arrays are read-only.

    Attributes
    ----------
    x : ndarray of shape (n_points,)
        Equally spaced predicted probabilities (confidences) from 0 to 1.
    accuracy : ndarray of shape (n_points,)
        Kernel (Nadaraya-Watson) estimate of the observed frequency of the
        event (correct prediction, or the class) at ``x``.
    mean_confidence : ndarray of shape (n_points,)
        The same estimate of the mean prediction at ``x`` (close to ``x``
        where the density is not small); the smooth ECE is the
        density-weighted mean of ``|mean_confidence - accuracy|``.
    density : ndarray of shape (n_points,)
        Kernel density of the predictions at ``x`` (reflected at 0 and 1; it
        integrates to 1 over ``[0, 1]``). The curve means little where the
        density is near 0, and is NaN where it is below 1e-9 of its
        maximum.
    bandwidth : float
        Kernel width used (the fixed point for ``bandwidth="auto"``).
    smooth_ece : float
        The smooth ECE of this cell at ``bandwidth``.
    kind : str
        ``"confidence"``, ``"top_label"`` or ``"classwise"``.
    class_index : int or None
        The column the curve is about, or None (pooled top-1 confidence).

    See Also
    --------
    smooth_reliability_curve : Computes it.
    smooth_calibration_error : The error.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib.metrics import smooth_reliability_curve
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=5000)
    >>> y = (rng.uniform(size=p.size) < p ** 2).astype(int)
    >>> curve = smooth_reliability_curve(y, p, kind="classwise", n_points=5)
    >>> curve.x
    array([0.  , 0.25, 0.5 , 0.75, 1.  ])
    >>> np.round(curve.accuracy, 2)
    array([0.02, 0.09, 0.29, 0.58, 0.77])
    >>> round(curve.bandwidth, 4), round(curve.smooth_ece, 4)
    (0.1621, 0.1617)
    """

    x: np.ndarray
    accuracy: np.ndarray
    mean_confidence: np.ndarray
    density: np.ndarray
    bandwidth: float
    smooth_ece: float
    kind: str
    class_index: int | None


def _curve_cell(inputs, kind, class_index):
    """``(f, a, w)`` of the cell a curve is about (weights of mean 1)."""
    w = _unit_weights(inputs)
    if kind == "classwise":
        a = (inputs.y == class_index).astype(np.float64)
        return _column(inputs.proba, class_index), a, w
    pred, conf = top1(inputs.proba, check_values=False)
    f = conf.astype(np.float64)
    a = (pred == inputs.y).astype(np.float64)
    if kind == "top_label":
        mask = pred == class_index
        return f[mask], a[mask], w[mask]
    return f, a, w


def _curve_arrays(sums, total, boundary):
    """``[accuracy, mean_confidence, density]`` from the smoothed weight,
    weighted outcome and weighted prediction at the points of the curve."""
    dens, acc, conf = sums
    dens = np.maximum(dens, 0.0)
    if boundary == "relplot":  # relplot's KernelSmoother
        denom = dens + DENSITY_EPS
        ratios = [np.clip(v / denom, 0.0, 1.0) for v in (acc, conf)]
    else:
        # NaN where no prediction is near (where the sums underflow).
        near = dens > _NEAR_DATA * dens.max()
        safe = np.where(near, dens, 1.0)
        ratios = [
            np.where(near, np.clip(v / safe, 0.0, 1.0), np.nan) for v in (acc, conf)
        ]
    return [*ratios, dens / total]


@host_array_api("y_proba")
@validate_params(
    {
        **SMOOTH_CONSTRAINTS,
        "class_index": [Interval(Integral, 0, None, closed="left"), None],
        "n_points": [Interval(Integral, 2, None, closed="left")],
    },
    prefer_skip_nested_validation=True,
)
def smooth_reliability_curve(
    y_true,
    y_proba,
    *,
    kind="confidence",
    class_index=None,
    bandwidth="auto",
    boundary="reflect",
    n_points=200,
    sample_weight=None,
    labels=None,
):
    """Kernel-smoothed reliability curve: accuracy against confidence, the
    density of the predictions and the bandwidth of the smooth ECE.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True class labels (integers or strings).
    y_proba : array-like of shape (n_samples,) or (n_samples, n_classes)
        Predicted probabilities (1-D: of the positive class).
    kind : {"confidence", "top_label", "classwise"}, default="confidence"
        As :func:`reliability_curve`: ``"confidence"`` the top-1 probability
        of every sample against its correctness; ``"top_label"`` with
        ``class_index=k`` the same for the samples predicted ``k`` (without:
        as ``"confidence"``); ``"classwise"`` the probability of class
        ``class_index`` against ``y == class`` (binary: the positive class
        by default).
    class_index : int, default=None
        Column of ``y_proba`` (index into ``labels``) the curve is about.
    bandwidth : "auto" or float, default="auto"
        Kernel width; ``"auto"``: the fixed point of the smooth ECE of this
        cell (see :func:`smooth_calibration_error`).
    boundary : {"reflect", "relplot"}, default="reflect"
        The kernel at the ends of ``[0, 1]`` (see
        :func:`smooth_calibration_error`).
    n_points : int, default=200
        Number of equally spaced points of ``[0, 1]`` the curve is read at.
    sample_weight : array-like of shape (n_samples,), default=None
        Sample weights.
    labels : array-like of shape (n_classes,), default=None
        Class labels of the columns of ``y_proba``.

    Returns
    -------
    curve : SmoothReliabilityCurve
        ``x``, ``accuracy``, ``mean_confidence``, ``density``,
        ``bandwidth`` and ``smooth_ece``.

    See Also
    --------
    smooth_calibration_error : The error of this curve.
    reliability_curve : The binned curve.

    Notes
    -----
    With the reflected Gaussian kernel :math:`K_\\sigma` of
    :func:`smooth_calibration_error`:

    .. math::

        \\mathrm{acc}(t) = \\frac{\\sum_i w_i K_\\sigma(t, f_i) a_i}
        {\\sum_i w_i K_\\sigma(t, f_i)}, \\qquad
        \\mathrm{density}(t) = \\frac{\\sum_i w_i K_\\sigma(t, f_i)}
        {\\sum_i w_i},

    ``accuracy`` and ``mean_confidence`` being NaN where the density is
    below 1e-9 of its maximum (no prediction near ``t``). With
    ``boundary="relplot"`` these are ``relplot``'s ``KernelSmoother`` and
    ``kde`` of the same width (``relplot``'s drawn curve averages bootstrap
    resamples of the former): the denominator of ``acc`` has
    :math:`10^{-4}` added (per unit of mean weight), which makes it 0, not
    NaN, far from the predictions.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib.metrics import smooth_reliability_curve
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=5000)
    >>> y = (rng.uniform(size=p.size) < p).astype(int)
    >>> curve = smooth_reliability_curve(y, p, kind="classwise", n_points=3)
    >>> np.round(curve.accuracy, 2), round(curve.bandwidth, 4)
    (array([0.  , 0.46, 1.  ]), 0.0166)
    """
    inputs = check_metric_inputs(
        y_true, y_proba, sample_weight=sample_weight, labels=labels
    )
    kind_, class_index = curve_cells(kind, class_index, inputs.n_classes)
    f, a, w = _curve_cell(inputs, kind_, class_index)
    if not w.sum() > 0:
        raise ValueError(
            f"no sample (of positive weight) is predicted as class {class_index}; "
            "its top-label curve is undefined."
        )
    sigma, error = _cell_error(f, a, w, bandwidth, boundary)
    x = np.linspace(0.0, 1.0, n_points)
    smoother = KernelSmoother(f, np.stack([w, w * a, w * f]), boundary)
    sums = smoother.at(sigma, x, exact=boundary == "reflect")
    arrays = _curve_arrays(sums, w.sum(), boundary)
    arrays.insert(0, x)
    for arr in arrays:
        arr.flags.writeable = False
    return SmoothReliabilityCurve(
        *arrays,
        bandwidth=float(sigma),
        smooth_ece=float(error),
        kind=kind,
        class_index=class_index,
    )
