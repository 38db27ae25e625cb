"""Isotonic regression calibration, on top of scikit-learn's IsotonicRegression."""

from functools import partial

import numpy as np
from sklearn.isotonic import IsotonicRegression, isotonic_regression

from skcalib._core.compat import StrOptions
from skcalib.calibration._one_vs_rest import _OneVsRestCalibrator

__all__ = ["IsotonicCalibrator"]


#: Centered isotonic regression takes blocks whose fitted values differ by at
#: most this for one block.
TIE_TOL = 1e-10

#: Chunked fitting pools the scores into this many equal cells of their range.
CHUNK_CELLS = 1 << 16


def centered_points(x, fitted, w):
    """Knots of centered isotonic regression (Oron & Flournoy 2017).

    ``x`` are the sorted distinct scores, ``fitted`` their isotonic fit and
    ``w`` their weights (all positive). Every level set of ``fitted`` (a
    maximal run of equal values, so a block of pool-adjacent-violators) is
    replaced by one point at the weighted mean of its scores, with the
    block's value; the ends of the score range are kept with the value of
    the first and last block. Between the knots the map is linear, so it is
    strictly increasing from the first block centre to the last.
    """
    # Blocks whose values agree to TIE_TOL are one block (as the authors'
    # package compares values rounded to 8 digits): the values of two blocks
    # that tie in exact arithmetic differ by rounding, in a way that depends
    # on the scale of the weights, and the centres must not.
    start = np.flatnonzero(np.r_[True, np.diff(fitted) > TIE_TOL])
    stop = np.r_[start[1:], x.size] - 1
    total = np.add.reduceat(w, start)
    # The mean offset from the block's first score: its rounding error is
    # relative to the block's spread, not to the size of the scores (two
    # close scores of very different values make a steep segment, which a
    # centre off by one rounding of |x| would move visibly).
    first = x[start]
    offset = x - np.repeat(first, np.diff(np.r_[start, x.size]))
    centre = first + np.add.reduceat(w * offset, start) / total
    # Rounding may put a mean a hair outside its block: clip it back, so the
    # centres stay strictly increasing (blocks hold disjoint score ranges).
    centre = np.clip(centre, x[start], x[stop])
    level = np.clip(np.add.reduceat(w * fitted, start) / total, 0.0, 1.0)
    level = np.maximum.accumulate(level)
    knots_x = np.r_[x[0], centre, x[-1]]
    knots_y = np.r_[level[0], level, level[-1]]
    keep = np.r_[True, knots_x[1:] > knots_x[:-1]]
    return knots_x[keep], knots_y[keep]


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


class IsotonicCalibrator(_OneVsRestCalibrator):
    """Isotonic regression: the best non-decreasing map of the score.

    Fits :class:`sklearn.isotonic.IsotonicRegression` (pool-adjacent-
    violators, weighted) of the 0/1 target on the log-odds of the model,
    ``s = log(p / (1 - p))`` or the decision value. Log-odds keep the order of
    extreme scores that would tie as probabilities (``1 - 1e-20 == 1`` in
    float64). By default (``method="centered"``) the step function is then
    turned into the centered isotonic regression of Oron & Flournoy [2]_,
    which is strictly increasing between the first and the last block, so it
    keeps the ranking of the scores (and the ROC-AUC) that the steps of plain
    isotonic regression destroy by ties. Scores outside the fitted range take
    the value at the nearest end (``out_of_bounds="clip"``).

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
    classes : array-like of shape (n_classes,), default=None
        Raw-score mode: the class of each score column, so that ``y`` may
        miss classes (:ref:`absent_classes`); None: the sorted labels of ``y``.
    multi_class : {"ovr", "top_label"}, default="ovr"
        Strategy for more than two classes.
    method : {"centered", "pav"}, default="centered"
        ``"pav"``: the isotonic regression itself, a step function (linear
        between the two ends of each constant run, as
        :class:`~sklearn.isotonic.IsotonicRegression` predicts), which ties
        every score of a block. ``"centered"``: centered isotonic regression
        (see Notes), strictly increasing between the first and the last block
        centre. The default is ``"centered"`` (was ``"pav"``): on the 22
        binary sets of the project's benchmark (pycalib kitti and pcam,
        50/50 stratified split with seed 0; splinecalib with its own split;
        ``python -m benchmarks.bench_isotonic_ranking``) it keeps the test
        ROC-AUC of the uncalibrated scores (within 1e-4 on every set; plain
        isotonic moves it by -0.0027 to +0.0006, mean -0.0002) and lowers
        the held-out NLL on 19 of 22 sets (mean -0.0027, at best -0.0150 on
        mozilla4 cb2, at worst +0.0033 on mozilla4 rf).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    score_type_ : str
        What the scores were taken to be.
    calibrators_ : list of IsotonicRegression or None
        The fitted regression of each map (one for binary problems). With
        ``method="centered"`` it is fitted on the knots of the centered map
        (its ``X_thresholds_`` and ``y_thresholds_``).
    n_features_in_ : int
        Number of columns of ``X`` seen at fit (2-D input).

    See Also
    --------
    HistogramBinningCalibrator : fixed bins instead of data-chosen steps.
    sklearn.isotonic.IsotonicRegression : the solver used.

    Notes
    -----
    **Centered isotonic regression** (CIR, Oron & Flournoy [2]_). Let
    :math:`x_1 < \\dots < x_m` be the distinct scores with weights
    :math:`w_j` and :math:`\\hat f` their weighted isotonic regression
    (pool-adjacent-violators). Every block :math:`B` of :math:`\\hat f` (a
    maximal run of equal fitted values :math:`v_B`, so adjacent blocks have
    strictly increasing values) becomes one knot at its weighted centre,

    .. math::

        \\bar x_B = \\frac{\\sum_{j \\in B} w_j x_j}{\\sum_{j \\in B} w_j},
        \\qquad (\\bar x_B, v_B),

    and the map interpolates linearly between consecutive knots, constant
    from :math:`x_1` to the first centre and from the last centre to
    :math:`x_m` (and beyond, clipped). At the knots' scores it fits the data
    as the isotonic regression does; the scores of a block get distinct
    values, except in the first half of the first block and the last half of
    the last. As in the ``strict=TRUE`` mode of the authors' ``cir``
    package, blocks at 0 or 1 are centred too (their default leaves those
    flat), so a run of scores without any positive is not all mapped to
    ``1e-12``. The fitted map is still non-decreasing, with values in
    ``[0, 1]``.

    Array API: computed on the host, one transfer each way (the
    pool-adjacent-violators algorithm is sequential): with
    ``array_api_dispatch=True`` the inputs are moved to numpy once, and the
    outputs and fitted arrays come back to the input's namespace and device.

    References
    ----------
    .. [1] B. Zadrozny and C. Elkan, "Transforming classifier scores into
       accurate multiclass probability estimates", KDD 2002.
    .. [2] A. P. Oron and N. Flournoy, "Centered Isotonic Regression: Point
       and Interval Estimation for Dose-Response Studies", Statistics in
       Biopharmaceutical Research 9, 2017.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib import IsotonicCalibrator
    >>> p = np.array([0.1, 0.3, 0.4, 0.6, 0.8, 0.9])
    >>> y = np.array([0, 1, 0, 1, 1, 1])
    >>> IsotonicCalibrator(method="pav").fit(p, y).predict_proba(p)[:, 1]
    array([1.e-12, 5.e-01, 5.e-01, 1.e+00, 1.e+00, 1.e+00])
    >>> cal = IsotonicCalibrator().fit(p, y)   # centered: knots at block centres
    >>> cal.predict_proba(p)[:, 1].round(3)
    array([0.   , 0.43 , 0.556, 0.764, 1.   , 1.   ])
    """

    _parameter_constraints: dict = {
        **_OneVsRestCalibrator._parameter_constraints,
        "method": [StrOptions({"pav", "centered"})],
    }
    _map_input = "log_odds"

    def __init__(
        self,
        estimator=None,
        *,
        score_type="auto",
        response_method="auto",
        classes=None,
        multi_class="ovr",
        method="centered",
    ):
        self.estimator = estimator
        self.score_type = score_type
        self.response_method = response_method
        self.classes = classes
        self.multi_class = multi_class
        self.method = method

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
        if self.method == "centered":
            knots_x, knots_y = centered_points(x_u, y_u, w_u)
            # The knots are increasing in y (strictly between the block
            # centres): IsotonicRegression keeps every one of them.
            return IsotonicRegression(
                y_min=0.0, y_max=1.0, increasing=True, out_of_bounds="clip"
            ).fit(knots_x, knots_y)
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
