"""Isotonic regression calibration, on top of scikit-learn's IsotonicRegression."""

from functools import partial

import numpy as np
from sklearn.isotonic import IsotonicRegression, isotonic_regression

from skcalib.calibration._binary import _BinaryMapCalibrator

__all__ = ["IsotonicCalibrator"]


#: Chunked fitting pools the scores into this many equal cells of their range.
CHUNK_CELLS = 1 << 16


def _range_chunk(scores, y, w, *, view):
    score = view(scores, y)[0]
    if w is not None:
        score = score[w > 0]
    if not score.size:
        return None
    return float(score.min()), float(score.max())


def _cell_chunk(scores, y, w, *, view, lo, hi, n_cells):
    """Weights, positives and scores summed per cell of ``[lo, hi]``."""
    score, target = view(scores, y)
    scale = n_cells / (hi - lo) if hi > lo else 0.0
    cell = np.clip((score - lo) * scale, 0, n_cells - 1).astype(np.intp)
    if w is None:
        counts = np.bincount(cell, minlength=n_cells).astype(np.float64)
        return (
            counts,
            np.bincount(cell, weights=target.astype(np.float64), minlength=n_cells),
            np.bincount(cell, weights=score, minlength=n_cells),
        )
    return (
        np.bincount(cell, weights=w, minlength=n_cells),
        np.bincount(cell, weights=w * target, minlength=n_cells),
        np.bincount(cell, weights=w * score, minlength=n_cells),
    )


class IsotonicCalibrator(_BinaryMapCalibrator):
    """Isotonic regression: the best non-decreasing map of the score.

    Fits :class:`sklearn.isotonic.IsotonicRegression` (pool-adjacent-
    violators, weighted) of the 0/1 target on the log-odds of the model,
    ``s = log(p / (1 - p))`` or the decision value. Log-odds keep the order of
    extreme scores that would tie as probabilities (``1 - 1e-20 == 1`` in
    float64); at the fitted points the map is the same as on probabilities,
    between them it interpolates linearly in log-odds. Scores outside the
    fitted range take the value at the nearest end (``out_of_bounds="clip"``).

    Outputs are kept in ``[1e-12, 1 - 1e-12]``: isotonic regression gives
    exact 0 and 1 at the ends, which would make log-loss infinite. It needs
    data: with fewer than about a thousand calibration samples its step
    function overfits; prefer :class:`PlattCalibrator` or
    :class:`TemperatureCalibrator` there.

    :meth:`fit_chunks` (and :meth:`fit` on Dask arrays) pools the scores
    into 65536 equal cells of their range (in log-odds) and fits the
    isotonic regression of the cells' weighted mean scores and targets: the
    same map as :meth:`fit` when no cell holds two distinct scores (for
    example a model with fewer distinct outputs), else an approximation at
    that resolution.

    Parameters
    ----------
    estimator : classifier or None, default=None
        A prefit classifier (wrapper mode) or ``None`` (``X`` holds scores).
    score_type : {"auto", "logit", "probability"}, default="auto"
        What raw ``X`` holds.
    response_method : {"auto", "decision_function", "predict_proba"}, default="auto"
        Wrapper mode: the method that gives scores.
    multi_class : {"ovr", "top_label"}, default="ovr"
        Strategy for more than two classes.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    score_type_ : str
        What the scores were taken to be.
    calibrators_ : list of IsotonicRegression or None
        The fitted regression of each map (one for binary problems).
    n_features_in_ : int
        Number of columns of ``X`` seen at fit (2-D input).

    See Also
    --------
    HistogramBinningCalibrator : fixed bins instead of data-chosen steps.
    sklearn.isotonic.IsotonicRegression : the solver used.

    References
    ----------
    .. [1] B. Zadrozny and C. Elkan, "Transforming classifier scores into
       accurate multiclass probability estimates", KDD 2002.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib import IsotonicCalibrator
    >>> p = np.array([0.1, 0.3, 0.4, 0.6, 0.8, 0.9])
    >>> y = np.array([0, 1, 0, 1, 1, 1])
    >>> cal = IsotonicCalibrator().fit(p, y)
    >>> cal.predict_proba(p)[:, 1]
    array([1.e-12, 5.e-01, 5.e-01, 1.e+00, 1.e+00, 1.e+00])
    """

    _map_input = "log_odds"

    def __init__(
        self,
        estimator=None,
        *,
        score_type="auto",
        response_method="auto",
        multi_class="ovr",
    ):
        self.estimator = estimator
        self.score_type = score_type
        self.response_method = response_method
        self.multi_class = multi_class

    def _fit_map(self, score, target, sample_weight):
        # Pool tied scores (weighted mean of the target, summed weights) and
        # run sklearn's pool-adjacent-violators on the sorted unique points:
        # IsotonicRegression.fit does the same after a lexsort of (y, X),
        # which costs more than the whole fit here. The fitted
        # IsotonicRegression is then built on the points where the solution
        # changes (what it keeps itself), so it is the same map.
        order = np.argsort(score)  # order within ties does not matter
        s = score[order]
        first = np.flatnonzero(np.r_[True, s[1:] != s[:-1]])
        if sample_weight is None:
            w = np.diff(np.r_[first, s.size]).astype(np.float64)
            wy = np.add.reduceat(target[order], first)
        else:
            sw = sample_weight[order]
            w = np.add.reduceat(sw, first)
            wy = np.add.reduceat(sw * target[order], first)
        keep = w > 0
        x_u, w_u = s[first][keep], w[keep]
        y_u = isotonic_regression(
            wy[keep] / w_u, sample_weight=w_u, y_min=0.0, y_max=1.0, increasing=True
        )
        # Keep both ends of every constant run (IsotonicRegression's rule).
        ends = np.ones(y_u.size, dtype=bool)
        ends[1:-1] = (y_u[1:-1] != y_u[:-2]) | (y_u[1:-1] != y_u[2:])
        return IsotonicRegression(
            y_min=0.0, y_max=1.0, increasing=True, out_of_bounds="clip"
        ).fit(x_u[ends], y_u[ends])

    def _fit_map_chunks(self, data, view, n_pos):
        # Two passes: the range of the scores, then per-cell sums on
        # CHUNK_CELLS equal cells of it; the fit is the exact isotonic
        # regression of the cells' weighted mean scores and targets.
        lo, hi = data.map_scores(
            partial(_range_chunk, view=view),
            combine=lambda parts: (
                min(p[0] for p in parts if p is not None),
                max(p[1] for p in parts if p is not None),
            ),
        )
        counts, sum_y, sum_s = data.map_scores(
            partial(_cell_chunk, view=view, lo=lo, hi=hi, n_cells=CHUNK_CELLS)
        )
        keep = counts > 0
        w = counts[keep]
        return self._fit_map(sum_s[keep] / w, sum_y[keep] / w, w)

    def _apply_map(self, fitted, score):
        # IsotonicRegression.predict with out_of_bounds="clip": linear
        # interpolation between the thresholds, constant beyond them.
        return np.interp(score, fitted.X_thresholds_, fitted.y_thresholds_)
