"""Temperature scaling: divide the logits by one fitted temperature."""

import warnings
from functools import partial
from numbers import Integral, Real

import numpy as np
from joblib import effective_n_jobs
from sklearn.exceptions import ConvergenceWarning

from skcalib._base import BaseCalibrator
from skcalib._core.compat import Interval
from skcalib._core.scores import softmax
from skcalib._core.solvers.temperature import (
    SEPARATED_FRACTION,
    UPPER_FACTOR,
    _gap_scale,
    _newton_temperature,
    _temperature_terms,
    fit_temperature,
    moderate_scale,
    temperature_bounds,
)
from skcalib._core.xp.scores import softmax as xp_softmax
from skcalib._core.xp.solvers_temperature import fit_temperature_xp
from skcalib.calibration._partial_fit import FORGETTING_FACTOR, PartialFitMixin

__all__ = ["TemperatureCalibrator"]

#: Elements per block of :meth:`TemperatureCalibrator.predict_proba` (a block
#: of the output is computed in place, in cache).
_PREDICT_BLOCK = 1 << 18


def _first_chunk_temperature(scores, y, w):
    """``log(1 / T)`` fitted to 1e-3 on one chunk, or None."""
    if w is not None and not w.sum() > 0:
        return None
    temperature, _, status = fit_temperature(scores.logits, y, w, tol=1e-3)
    return -np.log(temperature) if status == "converged" else None


def _temperature_chunk_scale(scores, y, w):
    """``(max |d|, max w |d|, max row range)`` of one chunk (rows of
    positive weight), for :func:`temperature_bounds`."""
    z = scores.logits
    z_max = z.max(axis=1).astype(np.float64)
    gap = z_max - z[np.arange(z.shape[0]), y]
    ranges = z_max - z.min(axis=1)
    if w is not None:
        keep = w > 0
        w_gap = gap[keep] * w[keep]
        gap, ranges = gap[keep], ranges[keep]
    else:
        w_gap = gap
    return tuple(float(v.max(initial=0.0)) for v in (gap, w_gap, ranges))


def _temperature_chunk_terms(scores, y, w, *, beta, coarse, scale=1.0):
    """:func:`_temperature_terms` of one chunk of scores, gaps in units of
    ``scale``."""
    z = scores.logits
    z_max = z.max(axis=1).astype(np.float64)
    dy = (z[np.arange(z.shape[0]), y] - z_max) / scale
    chunk_rows = max(1, 2**16 // max(1, z.shape[1]))
    return tuple(
        _temperature_terms(
            z, z_max, dy, beta, w, chunk_rows, 1, coarse=coarse, inv_scale=1 / scale
        )
    )


class TemperatureCalibrator(PartialFitMixin, BaseCalibrator):
    """Temperature scaling: divide the logits by one fitted temperature.

    .. math::

        \\hat p(y = k \\mid z) = \\frac{\\exp(z_k / T)}{\\sum_j \\exp(z_j / T)}

    with ``T > 0`` minimising the weighted negative log-likelihood on the
    calibration data. Native multiclass; dividing by ``T`` never changes the
    predicted class. Probabilities are turned into log-probabilities first
    (softmax is invariant to a per-row constant, so ``log p`` is as good as
    the logits). A binary 1-D score ``s`` becomes the logits ``(0, s)``, so
    ``P(y = 1) = sigmoid(s / T)``.

    The NLL is convex in ``1/T``: ``T`` is found by Newton's method on
    ``log(1/T)`` with exact derivatives in float64, safeguarded by a bracket
    (bisection when a Newton step leaves it), until a step in ``log T`` is
    below ``tol``. On large data a first run on every 16th row gives the
    starting point, so the scores are read about three times in all.

    The search range follows the scale of the scores, so logits multiplied
    by ``c`` give ``c`` times the temperature (and the same NLL), for any
    ``c``. Its lower end is provably below the optimum (half of
    ``max_i w_i g_i / (W log K)``, with ``g_i`` the gap between the top
    score and the true class's score); its upper end is ``1e12 max_i g_i``,
    beyond which the scores carry no information (a warning says so). When
    every calibration sample's true class has the top score, the
    likelihood increases without bound as ``T -> 0``: ``T`` stops at
    ``1e-4`` times the largest score range of a row, with a warning.

    Parameters
    ----------
    estimator : classifier or None, default=None
        A prefit classifier (wrapper mode) or ``None`` (``X`` holds scores).
    score_type : {"auto", "logit", "probability"}, default="auto"
        What raw ``X`` holds.
    response_method : {"auto", "decision_function", "predict_proba"}, default="auto"
        Wrapper mode: the method that gives scores.
    classes : array-like of shape (n_classes,), default=None
        Raw-score mode: the class of each score column, so that ``y`` may
        miss classes (:ref:`absent_classes`); None: the sorted labels of ``y``.
    max_iter : int, default=100
        Newton/bisection iterations.
    tol : float, default=1e-8
        Tolerance on the last Newton step in ``log T`` (the error left after
        it is about ``tol**2``).
    n_jobs : int or None, default=None
        Threads for the passes over the scores (numpy releases the GIL);
        ``None`` means 1 unless in a :func:`joblib.parallel_backend` context,
        ``-1`` all cores. The result does not depend on it.
    forgetting_factor : float in (0, 1], default=1.0
        :meth:`partial_fit` only: after ``m`` batches, the rows of the
        ``j``-th weigh ``forgetting_factor ** (m - j)`` times their
        ``sample_weight`` (exponential forgetting of old batches, for
        drifting streams): the fit is the weighted fit on the concatenated
        batches. 1 forgets nothing; :meth:`fit` does not use it.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    score_type_ : str
        What the scores were taken to be.
    temperature_ : float
        The fitted temperature (> 0). Above 1: the model was over-confident.
    n_iter_ : int
        Iterations used.
    n_features_in_ : int
        Number of columns of ``X`` seen at fit (2-D input).

    See Also
    --------
    PlattCalibrator : two parameters per class, binary or one-vs-rest.
    sklearn.calibration.CalibratedClassifierCV : ``method="temperature"``
        (scikit-learn >= 1.8) minimises the same NLL with Brent's method; it
        maps a 1-D decision value ``s`` to the logits ``(-s, s)``, so its
        temperature is twice ours on 1-D binary scores.

    Notes
    -----
    Array API: with ``array_api_dispatch=True``, raw scores of another
    namespace (torch, CuPy, array-api-strict, ...) are fitted and predicted
    on their device, the per-row terms in the input's compute dtype (float32
    for float16, bfloat16 and float32) and the sums over the rows in float64
    where the device has it; each Newton pass sends three scalars (the NLL
    and its two derivatives) to the host, where the iteration runs, and
    nothing of size ``n`` crosses except the sample weights, checked on the
    host. ``n_jobs`` does not apply there. Wrapper mode computes on the host.

    Memory (numpy): :meth:`predict_proba` computes its output block of rows
    by block in place, so it allocates nothing else of size ``n x K``; a fit
    on 2-D probabilities takes their log block by block inside each pass
    (the same temperature, bit for bit, as a fit on ``log p``).

    References
    ----------
    .. [1] C. Guo, G. Pleiss, Y. Sun and K. Q. Weinberger, "On Calibration of
       Modern Neural Networks", ICML 2017.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib import TemperatureCalibrator
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 3, 2000)
    >>> logits = rng.normal(size=(2000, 3)) + np.eye(3)[y]  # calibrated logits
    >>> ts = TemperatureCalibrator().fit(3.0 * logits, y)   # three times too sharp
    >>> round(ts.temperature_, 1)
    3.1
    >>> float(ts.predict_proba(3.0 * logits[:1]).sum())
    1.0
    """

    _parameter_constraints: dict = {
        **BaseCalibrator._parameter_constraints,
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "n_jobs": [Integral, None],
        "forgetting_factor": FORGETTING_FACTOR,
    }

    _array_api_native = True

    def __init__(
        self,
        estimator=None,
        *,
        score_type="auto",
        response_method="auto",
        classes=None,
        max_iter=100,
        tol=1e-8,
        n_jobs=None,
        forgetting_factor=1.0,
    ):
        self.estimator = estimator
        self.score_type = score_type
        self.response_method = response_method
        self.classes = classes
        self.max_iter = max_iter
        self.tol = tol
        self.n_jobs = n_jobs
        self.forgetting_factor = forgetting_factor

    def _fit(self, scores, y, sample_weight):
        # 2-D probabilities go to the solver as they are: it takes their log
        # block by block in each pass (no n x K array of log-probabilities).
        probabilities = scores.score_type == "probability" and scores.raw.ndim == 2
        self._set_temperature(
            *fit_temperature(
                scores.raw if probabilities else scores.logits,
                y,
                sample_weight,
                max_iter=self.max_iter,
                tol=self.tol,
                n_jobs=effective_n_jobs(self.n_jobs),
                probabilities=probabilities,
            )
        )

    def _fit_chunks(self, data):
        # Same Newton iteration, each pass a sum over the chunks, in units of
        # the largest gap as in fit. A problem whose NLL does not depend on
        # T (constant rows) stops at T = 1; one where every sample is right
        # with a margin runs to the lower bound.
        max_gap, max_weighted_gap, max_range = data.map_scores(
            _temperature_chunk_scale,
            combine=lambda parts: tuple(
                max(p[i] for p in parts if p is not None) for i in range(3)
            ),
        )
        if max_gap == 0:
            if max_range == 0:  # constant rows: the NLL does not depend on T
                self._set_temperature(1.0, 0, "converged")
            else:  # every sample right: the infimum is at T -> 0
                self._set_temperature(SEPARATED_FRACTION * max_range, 0, "lower_bound")
            return
        scale = _gap_scale(max_gap)
        lo, hi = temperature_bounds(
            max_gap, max_weighted_gap, data.total_weight, data.classes.size
        )
        bounds = (lo / scale, hi / scale)

        def terms(beta, coarse):
            return data.map_scores(
                partial(_temperature_chunk_terms, beta=beta, coarse=coarse, scale=scale)
            )

        # Start from the temperature of the first chunk (read once more, on
        # its own): the passes over all chunks then begin near the optimum,
        # the first of them in float32, as in fit.
        start = data.first_scores(_first_chunk_temperature)
        if start is not None:
            start = min(
                max(start + np.log(scale), -np.log(bounds[1])), -np.log(bounds[0])
            )
        u, n_iter, status = _newton_temperature(
            terms,
            -np.log(min(max(1.0, bounds[0]), bounds[1])) if start is None else start,
            data.total_weight,
            self.max_iter,
            self.tol,
            bounds,
            coarse_first=start is not None and moderate_scale(scale),
        )
        self._set_temperature(float(np.exp(-u)) * scale, n_iter, status)

    def _fit_xp(self, scores, y, sample_weight):
        # The same iteration with its passes on the device (n_jobs does not
        # apply: the namespace parallelises each pass itself).
        self._set_temperature(
            *fit_temperature_xp(
                scores.ns,
                scores.logits,
                y,
                sample_weight,
                max_iter=self.max_iter,
                tol=self.tol,
            ),
            stacklevel=5,
        )

    def _set_temperature(self, temperature, n_iter, status, stacklevel=4):
        if status == "max_iter":
            warnings.warn(
                f"Temperature scaling did not converge in max_iter={self.max_iter} "
                f"iterations (T={temperature:.6g}); increase max_iter or tol.",
                ConvergenceWarning,
                stacklevel=stacklevel,
            )
        elif status in ("lower_bound", "upper_bound"):
            warnings.warn(
                f"The likelihood is maximised at the {status.replace('_', ' ')} "
                f"T={temperature:g}: "
                + (
                    "every calibration sample is predicted correctly with a margin."
                    if status == "lower_bound"
                    else f"{UPPER_FACTOR:g} times the largest gap between the true "
                    "class's score and the top score; the scores carry no "
                    "information about the labels."
                ),
                UserWarning,
                stacklevel=stacklevel,
            )
        self.temperature_ = temperature
        self.n_iter_ = n_iter

    def _predict_proba(self, scores):
        # The scores as fitted (logits as given, log p for probabilities):
        # log-softmax would round away the information of tiny logits.
        # Block by block into the output: no other n x K array.
        n_classes = len(self.classes_)
        out = np.empty((scores.n_samples, n_classes), dtype=scores.dtype)
        temperature = scores.dtype.type(self.temperature_)
        step = max(1, _PREDICT_BLOCK // n_classes)
        for start in range(0, scores.n_samples, step):
            block = out[start : start + step]
            np.divide(scores.logit_rows(start, start + step), temperature, out=block)
            softmax(block, out=block)
        return out

    def _predict_proba_xp(self, scores):
        return xp_softmax(scores.xp, scores.logits / self.temperature_)
