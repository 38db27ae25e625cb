"""Venn-ABERS predictors: inductive (IVAP) and cross (CVAP)."""

from numbers import Integral

import numpy as np
from sklearn.utils.validation import check_is_fitted

from skcalib._core import accel as _accel
from skcalib._core.compat import Interval
from skcalib._core.weights import check_count_weights
from skcalib.calibration._one_vs_rest import _OneVsRestCalibrator

__all__ = ["VennAbersCalibrator"]


# ------------------------------------------------------------------ algorithm
def _upper_fits(w, u):
    """Isotonic fit at each distinct score with one extra positive tied to it.

    Scores ``x_1 < ... < x_k`` carry weights ``w`` (repetition counts) and
    ``u`` positives. For every ``i`` the isotonic regression of the data with
    one more sample ``(x_i, 1)`` is evaluated at ``x_i``; that value is the
    slope of the edge of the greatest convex minorant over ``x_i`` of the
    cumulative sum diagram (CSD) ``P_j = (W_j, U_j)`` (cumulative weights and
    positives, ``P_0 = (0, 0)``) with the extra sample added: the points
    left of ``x_i`` move by ``(-1, -1)``. That edge is the lower common
    tangent (bridge) of the shifted left part and the right part
    ``{P_i, ..., P_k}``.

    One sweep over ``i`` (Vovk & Petej's idea): a stack holds the lower
    convex hull of ``{L} ∪ {P_i, ..., P_k}``, leftmost vertex on top, where
    ``L`` is the left end of the bridge. When ``i`` grows, the left part gains
    ``N = P_i - (1, 1)`` and the right part loses ``P_i``; the new left end is
    either ``L`` or ``N`` (``N`` when it lies on or below the current bridge,
    whose slope is at most 1, so ``P_i`` then drops out of the hull as well),
    and hull vertices hidden behind ``L`` stay hidden from ``N``. Each point is
    pushed and popped at most once: O(k). Coordinates are integers for
    integer weights, so every orientation test is exact.

    Returns
    -------
    num, den : ndarray of shape (k,)
        The fitted value at ``x_i`` is ``num[i] / den[i]``.
    """
    k = len(w)
    cw = np.concatenate(([0.0], np.cumsum(w, dtype=np.float64)))
    cu = np.concatenate(([0.0], np.cumsum(u, dtype=np.float64)))
    kernel = _accel.compiled(_upper_fits_sweep, k)
    if kernel is not None:  # the fast extra: the same sweep, compiled
        num, den = np.empty(k), np.empty(k)
        kernel(cw, cu, np.empty(k + 1), np.empty(k + 1), num, den)
        return num, den
    # Python lists index faster than numpy arrays element by element.
    num, den = [0.0] * k, [0.0] * k
    _upper_fits_sweep(
        cw.tolist(), cu.tolist(), [0.0] * (k + 1), [0.0] * (k + 1), num, den
    )
    return np.array(num), np.array(den)


def _upper_fits_sweep(cw, cu, sx, sy, num, den):
    """The sweep of :func:`_upper_fits` on the cumulative sums ``cw``, ``cu``
    (length ``k + 1``), with ``sx``, ``sy`` (length ``k + 1``) as the hull's
    stack and ``num``, ``den`` (length ``k``) as outputs. Lists or arrays:
    it runs as Python and, with numba, compiled."""
    k = len(num)
    # Hull of {P_0 - (1, 1)} ∪ {P_1, ..., P_k}, built from the right.
    sx[0] = cw[k]
    sy[0] = cu[k]
    top = 1
    for j in range(k - 1, -1, -1):
        ax, ay = (cw[j], cu[j]) if j else (-1.0, -1.0)
        while top >= 2:
            tx, ty, qx, qy = sx[top - 1], sy[top - 1], sx[top - 2], sy[top - 2]
            if (ty - ay) * (qx - tx) >= (qy - ty) * (tx - ax):
                top -= 1  # the top is not strictly below the chord: not a vertex
            else:
                break
        sx[top] = ax
        sy[top] = ay
        top += 1
    lx, ly, bx, by = sx[top - 1], sy[top - 1], sx[top - 2], sy[top - 2]
    for i in range(1, k + 1):
        nu = by - ly
        de = bx - lx
        num[i - 1] = nu
        den[i - 1] = de
        if i == k:
            break
        nx = cw[i] - 1.0
        ny = cu[i] - 1.0
        if (ny - ly) * de <= nu * (nx - lx):  # N on or below the bridge
            top -= 1
            while top >= 2:
                tx, ty, qx, qy = sx[top - 1], sy[top - 1], sx[top - 2], sy[top - 2]
                if (ty - ny) * (qx - tx) >= (qy - ty) * (tx - nx):
                    top -= 1
                else:
                    break
            sx[top] = nx
            sy[top] = ny
            top += 1
            lx, ly, bx, by = nx, ny, sx[top - 2], sy[top - 2]


def venn_abers_table(score, target, sample_weight=None):
    """The inductive Venn-ABERS predictor of one calibration set.

    Parameters
    ----------
    score : ndarray of shape (n,)
        Calibration scores (any order-preserving transform gives the same
        predictor).
    target : ndarray of shape (n,)
        0/1 labels.
    sample_weight : ndarray of shape (n,) or None
        Non-negative integer repetition counts.

    Returns
    -------
    table : tuple of three ndarrays
        ``(x, p0, p1)``: the ``k`` distinct calibration scores with positive
        weight in increasing order, and two lookup tables of length ``k + 1``
        read by :func:`venn_abers_interval`. ``p0[j]`` (``j >= 1``) is the
        isotonic fit at ``x_j`` with an extra negative tied to it, ``p0[0] =
        0``; ``p1[j - 1]`` the fit with an extra positive, ``p1[k] = 1``.
    """
    if sample_weight is not None:
        keep = sample_weight > 0
        score, target, sample_weight = score[keep], target[keep], sample_weight[keep]
    order = np.argsort(score, kind="stable")
    s = score[order]
    first = np.flatnonzero(np.r_[True, s[1:] != s[:-1]])
    if sample_weight is None:
        w = np.diff(np.r_[first, s.size]).astype(np.float64)
        u = np.add.reduceat(target[order].astype(np.float64), first)
    else:
        sw = sample_weight[order]
        w = np.add.reduceat(sw, first)
        u = np.add.reduceat(sw * target[order], first)
    num1, den1 = _upper_fits(w, u)
    # Label 0 is label 1 of the mirrored problem (scores reversed, labels
    # flipped): p0(x_j) = 1 - p1_mirror(x_j), formed exactly from num/den.
    num0, den0 = _upper_fits(w[::-1], (w - u)[::-1])
    p0 = ((den0 - num0) / den0)[::-1]
    p1 = num1 / den1
    return s[first], np.r_[0.0, p0], np.r_[p1, 1.0]


def venn_abers_interval(table, score):
    """``(p0, p1)`` of the inductive Venn-ABERS predictor for test scores.

    A test score equal to a calibration score ``x_j`` is tied to it. A score
    between ``x_j`` and ``x_{j+1}`` has ``p0`` of ``x_j`` and ``p1`` of
    ``x_{j+1}``: a negative test sample always joins the block on its left and
    a positive one the block on its right (a block's first sample is never
    below its mean, its last never above), so tying it to that neighbour
    changes nothing. Below every calibration score ``p0 = 0``, above every one
    ``p1 = 1``. O(log k) per score.
    """
    x, p0, p1 = table
    if score.size > 4096 and x.size > 4096:
        # Binary searches of sorted keys reuse the previous position and stay
        # in cache; random keys into a large table miss it at every level.
        order = np.argsort(score)
        keys = score[order]
        out0, out1 = np.empty(score.size), np.empty(score.size)
        out0[order] = p0[np.searchsorted(x, keys, side="right")]
        out1[order] = p1[np.searchsorted(x, keys, side="left")]
        return out0, out1
    return (
        p0[np.searchsorted(x, score, side="right")],
        p1[np.searchsorted(x, score, side="left")],
    )


def merge_interval(p0, p1):
    """The probability ``p1 / (1 - p0 + p1)`` that minimises the worst-case
    log loss over the two predictions (Vovk et al. 2015)."""
    return p1 / (1.0 - p0 + p1)


# ------------------------------------------------------------------ estimator
class VennAbersCalibrator(_OneVsRestCalibrator):
    """Venn-ABERS calibration: isotonic regression with the test point added.

    For a test score ``s`` (the log-odds of the class: binary, one-vs-rest
    or top-label, see ``multi_class``) the calibration scores and labels are
    augmented with ``(s, 0)``, then with ``(s, 1)``; isotonic regression of
    each augmented set evaluated at ``s`` gives two probabilities
    ``p0 <= p1`` of the label being 1. Under exchangeability one of the two
    is perfectly calibrated (Vovk & Petej 2014); their gap is the price of
    that guarantee and shrinks like ``1 / n``. :meth:`predict_interval`
    returns the pair; :meth:`predict_proba` merges it into one probability
    that minimises the worst-case log loss (Vovk, Petej & Fedorova 2015):

    .. math::

        p = \\frac{p_1}{1 - p_0 + p_1} \\in [p_0, p_1].

    **Inductive** (``cv=None``, IVAP): the whole calibration set is the
    calibration set of one predictor. **Cross** (``cv=k``, CVAP): the
    calibration samples are split into ``k`` stratified folds
    (``random_state``), one inductive predictor is built on each fold, and
    their pairs are merged with geometric means,

    .. math::

        p = \\frac{\\mathrm{GM}(p_1)}{\\mathrm{GM}(1 - p_0) + \\mathrm{GM}(p_1)}.

    In the paper each fold calibrates a model trained on the other folds;
    here the model is prefit, so the folds only split the calibration data.
    With a prefit model, ``cv=None`` uses every sample in one predictor and is
    usually at least as good; ``cv`` exists for parity with the published
    method and for use inside a cross-fitting meta-estimator.

    Computation: the calibration scores are sorted once (O(n log n)); one
    sweep over the cumulative sum diagram then gives the two isotonic fits
    for a test point tied to every distinct calibration score (the
    greatest-convex-minorant algorithm of Vovk et al. 2015, O(n), exact
    integer arithmetic), and every test point is answered by a binary search
    (O(log n)): no isotonic regression is refitted per test point. The sweep
    is a Python loop of about 1-2 microseconds per distinct score and
    direction.

    **Sample weights.** Venn-ABERS is defined for unweighted samples;
    ``sample_weight`` is accepted as integer repetition counts (a weight of
    2 is exactly a duplicated row, 0 a dropped one, for ``cv=None``), and a
    non-integer weight raises ``ValueError``: there is no weighted version
    with the validity guarantee. With ``cv``, rows (not their repetitions)
    are assigned to folds.

    **More than two classes.** One predictor per class on the class's
    log-odds against "this class or not" (``"ovr"``; rows of
    :meth:`predict_proba` are then divided by their sum, so they may leave the
    per-class intervals), or per predicted class on the confidence
    (``"top_label"``). The guarantee holds for each binary problem, not for
    the renormalised rows.

    Parameters
    ----------
    estimator : classifier or None, default=None
        A prefit classifier (wrapper mode) or ``None`` (``X`` holds scores).
    cv : int or None, default=None
        ``None``: inductive Venn-ABERS. An integer ``k >= 2``: cross
        Venn-ABERS with ``k`` stratified folds of the calibration data.
    random_state : int, RandomState instance or None, default=None
        Shuffling of the folds (``cv`` only).
    score_type : {"auto", "logit", "probability"}, default="auto"
        What raw ``X`` holds.
    response_method : {"auto", "decision_function", "predict_proba"}, default="auto"
        Wrapper mode: the method that gives scores.
    classes : array-like of shape (n_classes,), default=None
        Raw-score mode: the class of each score column, so that ``y`` may
        miss classes (:ref:`absent_classes`); None: the sorted labels of ``y``.
    multi_class : {"ovr", "top_label"}, default="ovr"
        Strategy for more than two classes.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    score_type_ : str
        What the scores were taken to be.
    calibrators_ : list
        One entry per map (one for binary problems; ``None`` for a top-label
        class never predicted at fit, whose confidence is kept). With
        ``cv=None`` an entry is a tuple ``(x, p0, p1)``: the distinct
        calibration log-odds in increasing order and the lookup tables of the
        two isotonic fits (see ``venn_abers_table``); with ``cv`` it is a list
        of such tuples, one per fold.
    n_features_in_ : int
        Number of columns of ``X`` seen at fit (2-D input).

    See Also
    --------
    IsotonicCalibrator : isotonic regression fitted once, without the test
        point; can output 0 and 1 and overfits small calibration sets.
    HistogramBinningCalibrator : fixed bins instead of isotonic steps.

    Notes
    -----
    ``p0 = 0`` below the smallest calibration score and ``p1 = 1`` above the
    largest: the merged probability there is ``p1 / (1 + p1)`` or
    ``1 / (2 - p0)``, so Venn-ABERS never outputs 0 or 1 (``p`` lies in
    ``[1 / (n + 2), (n + 1) / (n + 2)]``), and log-loss stays finite.

    Array API: computed on the host, one transfer each way (the Venn-ABERS
    hull is sequential): with ``array_api_dispatch=True`` the inputs are
    moved to numpy once, and the outputs and fitted arrays come back to the
    input's namespace and device.

    References
    ----------
    .. [1] V. Vovk and I. Petej, "Venn-Abers predictors", UAI 2014.
    .. [2] V. Vovk, I. Petej and V. Fedorova, "Large-scale probabilistic
       predictors with and without guarantees of validity", NeurIPS 2015.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib import VennAbersCalibrator
    >>> s = np.array([-2.0, -1.0, 0.0, 1.0, 2.0, 3.0])
    >>> y = np.array([0, 0, 1, 0, 1, 1])
    >>> va = VennAbersCalibrator().fit(s, y)
    >>> p0, p1 = va.predict_interval(np.array([0.5, 2.5]))
    >>> p0.round(3), p1.round(3)
    (array([0.333, 0.5  ]), array([0.667, 1.   ]))
    >>> va.predict_proba(np.array([0.5, 2.5]))[:, 1].round(3)
    array([0.5  , 0.667])
    """

    #: Weights are integer repetition counts here: never rescaled.
    _rescale_sample_weight = False

    _parameter_constraints: dict = {
        **_OneVsRestCalibrator._parameter_constraints,
        "cv": [Interval(Integral, 2, None, closed="left"), None],
        "random_state": ["random_state"],
    }
    _map_input = "log_odds"

    def __init__(
        self,
        estimator=None,
        *,
        cv=None,
        random_state=None,
        score_type="auto",
        response_method="auto",
        classes=None,
        multi_class="ovr",
    ):
        self.estimator = estimator
        self.cv = cv
        self.random_state = random_state
        self.score_type = score_type
        self.response_method = response_method
        self.classes = classes
        self.multi_class = multi_class

    def _fit(self, scores, y, sample_weight):
        check_count_weights(sample_weight, type(self).__name__)
        if sample_weight is not None:
            fractional = np.flatnonzero(sample_weight != np.round(sample_weight))
            if fractional.size:
                i = int(fractional[0])
                raise ValueError(
                    "VennAbersCalibrator accepts sample_weight only as integer "
                    "repetition counts (Venn-ABERS predictors are defined for "
                    f"unweighted samples); sample_weight[{i}] = "
                    f"{float(sample_weight[i])!r}."
                )
        super()._fit(scores, y, sample_weight)

    def _fit_map(self, score, target, sample_weight):
        if self.cv is None:
            return venn_abers_table(score, target, sample_weight)
        if sample_weight is not None:
            keep = sample_weight > 0
            score, target, sample_weight = (
                score[keep],
                target[keep],
                sample_weight[keep],
            )
        from sklearn.model_selection import StratifiedKFold  # not on import

        folds = StratifiedKFold(
            n_splits=self.cv, shuffle=True, random_state=self.random_state
        )
        return [
            venn_abers_table(
                score[idx],
                target[idx],
                None if sample_weight is None else sample_weight[idx],
            )
            for _, idx in folds.split(score, target)
        ]

    @staticmethod
    def _fold_intervals(fitted, score):
        """``(p0, p1)`` of shape (n_folds, n) (one fold for IVAP)."""
        tables = [fitted] if isinstance(fitted, tuple) else fitted
        pairs = [venn_abers_interval(table, score) for table in tables]
        return (
            np.array([p[0] for p in pairs], dtype=np.float64),
            np.array([p[1] for p in pairs], dtype=np.float64),
        )

    def _apply_map(self, fitted, score):
        p0, p1 = self._fold_intervals(fitted, score)
        if p0.shape[0] == 1:
            return merge_interval(p0[0], p1[0])
        g1 = np.exp(np.log(p1).mean(axis=0))
        g0 = np.exp(np.log1p(-p0).mean(axis=0))
        return g1 / (g0 + g1)

    def _interval(self, fitted, score):
        p0, p1 = self._fold_intervals(fitted, score)
        return p0.min(axis=0), p1.max(axis=0)

    def predict_interval(self, X):
        """The Venn-ABERS pair ``(p0, p1)`` of every sample.

        ``p0`` is the calibrated probability of the class if the test sample
        were a negative, ``p1`` if it were a positive; :meth:`predict_proba`
        merges them into ``p1 / (1 - p0 + p1)``, which lies between them. With
        ``cv``, the interval spans the folds' pairs: ``(min p0, max p1)``
        (the merged probability lies in it too).

        Parameters
        ----------
        X : array-like
            Raw scores (raw-score mode) or features (wrapper mode), as in
            :meth:`fit`.

        Returns
        -------
        p0, p1 : ndarray of shape (n_samples,) or (n_samples, n_classes)
            Two classes: the pair for the positive class ``classes_[1]``,
            shape (n_samples,). More classes with ``multi_class="ovr"``: the
            one-vs-rest pair of every class, before the rows of
            :meth:`predict_proba` are renormalised, shape (n_samples,
            n_classes). With ``multi_class="top_label"``: the pair for the
            confidence of the predicted class, shape (n_samples,) (equal to
            the confidence for a class never predicted at fit). Same dtype as
            :meth:`predict_proba`.
        """
        check_is_fitted(self)
        scores = self._scores(*self._raw_scores(X, reset=False), reset=False)
        dtype = scores.dtype
        n, n_classes = scores.n_samples, scores.n_classes
        if n_classes == 2 and self.multi_class == "ovr":
            p0, p1 = self._interval(self.calibrators_[0], self._binary_scores(scores))
            return p0.astype(dtype, copy=False), p1.astype(dtype, copy=False)
        log_proba = scores.log_proba
        mapped = self._map_scores(scores)
        if self.multi_class == "ovr":
            p0 = np.empty((n, n_classes))
            p1 = np.empty((n, n_classes))
            for k, fitted in enumerate(self.calibrators_):
                p0[:, k], p1[:, k] = self._interval(fitted, mapped[:, k])
            return p0.astype(dtype, copy=False), p1.astype(dtype, copy=False)
        rows = np.arange(n)
        top = np.argmax(log_proba, axis=1)
        p0 = np.exp(log_proba[rows, top], dtype=np.float64)
        p1 = p0.copy()
        for k, fitted in enumerate(self.calibrators_):
            mask = top == k
            if fitted is not None and mask.any():
                p0[mask], p1[mask] = self._interval(fitted, mapped[mask, k])
        return p0.astype(dtype, copy=False), p1.astype(dtype, copy=False)
