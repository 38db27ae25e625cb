"""Split-conformal prediction sets: LAC and APS, marginal or class-conditional."""

import warnings
from numbers import Real

import numpy as np
from sklearn.base import clone
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from skcalib._base import BaseCalibrator
from skcalib._core.compat import HasMethods, Interval, StrOptions
from skcalib._core.weights import check_count_weights
from skcalib._core.xp import namespace
from skcalib._core.xp_estimator import call_on_host
from skcalib.conformal._quantile import _min_samples, conformal_quantile

__all__ = ["ConformalClassifier"]

#: Work arrays of the set computation hold at most this many cells per block.
_BLOCK_CELLS = 1 << 20
#: Constants of the SplitMix64 finaliser (Steele, Lea & Flood 2014).
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


# ------------------------------------------------------------------ algorithm
def aps_mass_above(proba):
    """Probability mass of the classes more probable than each class.

    ``above[i, k] = sum of proba[i, j] over j with proba[i, j] > proba[i, k]``:
    the classes are sorted once per row (descending), the sorted
    probabilities summed cumulatively, and every class of a block of tied
    probabilities gets the mass before the block (ties are treated alike,
    whatever their column order). Sums run in the dtype of ``proba``, in the
    sorted order.

    Parameters
    ----------
    proba : ndarray of shape (n, K)

    Returns
    -------
    above : ndarray of shape (n, K), dtype of ``proba``
    """
    n, k = proba.shape
    order = np.argsort(proba, axis=1)[:, ::-1]  # descending; tie order irrelevant
    sorted_p = np.take_along_axis(proba, order, axis=1)
    before = np.zeros_like(sorted_p)
    if k > 1:
        np.cumsum(sorted_p[:, :-1], axis=1, out=before[:, 1:])
        new_block = np.ones((n, k), dtype=bool)
        np.not_equal(sorted_p[:, 1:], sorted_p[:, :-1], out=new_block[:, 1:])
        if not new_block.all():
            start = np.where(new_block, np.arange(k), 0)
            np.maximum.accumulate(start, axis=1, out=start)
            before = np.take_along_axis(before, start, axis=1)
    above = np.empty_like(proba)
    np.put_along_axis(above, order, before, axis=1)
    return above


def _mix64(h):
    """SplitMix64 finaliser of a uint64 array (wraps modulo 2**64, no warning)."""
    h = h + _GOLDEN
    h = (h ^ (h >> np.uint64(30))) * _MIX1
    h = (h ^ (h >> np.uint64(27))) * _MIX2
    return h ^ (h >> np.uint64(31))


def row_uniforms(proba, seed):
    """One uniform on [0, 1) per row, a function of the seed and the row only.

    The row's probabilities, rounded to float32 and read as bit patterns
    (``-0.0`` read as ``0.0``), are folded into a 64-bit hash one column at
    a time with the SplitMix64 finaliser, starting from the hashed ``seed``;
    the top 53 bits of the hash are the uniform. A row therefore gets the
    same uniform in every call and in any batch, equal rows get equal
    uniforms, and so do rows that differ only by float64 rounding (1-D
    binary scores and their two-column form give probabilities a few ulps
    apart); for a random seed the uniforms of distinct rows behave as
    independent U(0, 1) draws, independent of the labels.

    Parameters
    ----------
    proba : ndarray of shape (n, K)
    seed : int
        Non-negative, below 2**63.

    Returns
    -------
    u : ndarray of shape (n,), float64
    """
    bits = (
        (np.ascontiguousarray(proba, dtype=np.float32) + np.float32(0.0))
        .view(np.uint32)
        .astype(np.uint64)
    )
    h = _mix64(np.full(bits.shape[0], seed, dtype=np.uint64))
    for j in range(bits.shape[1]):  # a loop over columns, vectorised over rows
        h = _mix64(h ^ bits[:, j])
    return (h >> np.uint64(11)).astype(np.float64) * 2.0**-53


def _blocks(n, k):
    step = max(1, _BLOCK_CELLS // max(k, 1))
    return [slice(start, min(start + step, n)) for start in range(0, n, step)]


def _sorted_mass(proba):
    """Each row in decreasing order, and the mass before each position.

    ``before[:, j]`` is the cumulative sum of the ``j`` largest probabilities,
    added in that order: the same numbers as :func:`aps_mass_above` at the
    first position of each block of ties.
    """
    desc = np.sort(proba, axis=1)[:, ::-1]
    before = np.zeros(desc.shape, dtype=desc.dtype)
    np.cumsum(desc[:, :-1], axis=1, out=before[:, 1:])
    return desc, before


def label_scores(proba, y, method, u=None):
    """Nonconformity score of the class ``y[i]`` of every row.

    LAC: ``1 - p_y``. APS: ``above_y + p_y`` (``above_y + u p_y`` when
    randomised with uniforms ``u``), where ``above_y`` (the values of
    :func:`aps_mass_above`) is read from the sorted row at the position of
    the first class as probable as ``y``: no ``argsort`` is needed.
    """
    rows = np.arange(y.size)
    if method == "lac":
        return 1 - proba[rows, y]
    dtype = proba.dtype if u is None else np.result_type(proba.dtype, np.float64)
    out = np.empty(y.size, dtype=dtype)
    for b in _blocks(y.size, proba.shape[1]):
        p = proba[b]
        r = rows[: p.shape[0]]
        p_y = p[r, y[b]]
        _, before = _sorted_mass(p)
        above_y = before[r, np.count_nonzero(p > p_y[:, None], axis=1)]
        out[b] = above_y + (p_y if u is None else u[b] * p_y)
    return out


def prediction_sets(proba, method, threshold, u=None, include_top=False):
    """Boolean ``(n, K)`` prediction sets from probabilities and thresholds.

    ``threshold`` is a float (marginal) or an array of shape (K,) (one per
    class). LAC: ``1 - p_k <= t_k``. Non-randomised APS: ``above_k < t_k``
    (the classes are added in decreasing probability up to and including the
    one whose cumulative mass reaches ``t``). Randomised APS:
    ``above_k + u p_k <= t_k``.

    With one threshold the APS score grows along each sorted row (also in
    floating point, and constant over a block of ties), so the classes that
    pass are those at least as probable as the last sorted position that
    passes: one ``sort`` per row, no ``argsort``. Per-class thresholds need
    the score of every class (:func:`aps_mass_above`).
    """
    n, k = proba.shape
    sets = np.empty((n, k), dtype=bool)
    marginal = np.ndim(threshold) == 0
    for b in _blocks(n, k):
        p = proba[b]
        if method == "lac":
            np.less_equal(1 - p, threshold, out=sets[b])
        elif marginal:
            desc, before = _sorted_mass(p)
            if u is None:
                passed = before < threshold
            else:
                passed = before + u[b, None] * desc <= threshold
            m = np.count_nonzero(passed, axis=1)
            last = desc[np.arange(p.shape[0]), np.maximum(m - 1, 0)]
            cutoff = np.where(m > 0, last, np.inf)
            np.greater_equal(p, cutoff[:, None], out=sets[b])
        elif u is None:
            np.less(aps_mass_above(p), threshold, out=sets[b])
        else:
            score = aps_mass_above(p) + u[b, None] * p
            np.less_equal(score, threshold, out=sets[b])
    if include_top:
        sets[np.arange(n), np.argmax(proba, axis=1)] = True
    return sets


# ------------------------------------------------------------------ estimator
class ConformalClassifier(BaseCalibrator):
    """Split-conformal prediction sets with a coverage guarantee (LAC or APS).

    Fitted on a calibration set that the model was not trained on, it returns
    for each new sample a set of classes (:meth:`predict_set`) that contains
    the true class with probability at least ``1 - alpha``:

    .. math::

        \\mathbb{P}\\big(Y_{n+1} \\in C(X_{n+1})\\big) \\ge 1 - \\alpha,

    for any model and any data distribution, as long as the calibration and
    test samples are exchangeable (e.g. i.i.d.). The probability is over the
    calibration set and the test sample together: it is a guarantee on
    average, not for each sample or for each calibration set.

    Like every calibrator it takes raw scores (``X`` holds logits, decision
    values or probabilities) or a prefit ``estimator`` (``X`` holds its
    features). The scores become probabilities ``p`` through an optional
    ``calibrator`` (else the softmax of logits, or the probabilities as
    given); :meth:`predict_proba` returns them and :meth:`predict` their
    argmax.

    Parameters
    ----------
    estimator : classifier or None, default=None
        A prefit classifier (wrapper mode) or ``None`` (``X`` holds scores).
        A skcalib calibrator already fitted on other data is a classifier
        too: pass it here to conformalise calibrated probabilities with the
        exact guarantee (see Notes).
    calibrator : estimator or None, default=None
        Cloned and fitted on the calibration scores to turn them into
        probabilities before the conformal step (any skcalib calibrator, or a
        classifier with ``fit`` / ``predict_proba`` taking the scores as
        features). Its ``score_type`` is set to ``score_type_``. ``None``:
        softmax of logits, or the probabilities as given. It is fitted on the
        same samples as the threshold, which makes the guarantee approximate
        (see Notes).
    method : {"lac", "aps"}, default="lac"
        Nonconformity score. ``"lac"`` (least ambiguous set-valued
        classifier): ``1 - p_y``; gives the smallest sets on average, can
        give empty sets. ``"aps"`` (adaptive prediction sets): the mass of the
        classes more probable than ``y``, plus ``p_y``; larger sets on hard
        samples, smaller on easy ones, never empty unless randomised.
    alpha : float in (0, 1), default=0.1
        Miscoverage level: sets contain the true class with probability at
        least ``1 - alpha``.
    class_conditional : bool, default=False
        Mondrian conformal prediction: one threshold per class, fitted on the
        calibration samples of that class, for coverage ``>= 1 - alpha``
        within every class. A class with fewer than ``(1 - alpha) / alpha``
        calibration samples (weighted count; 9 at ``alpha=0.1``) has an
        infinite threshold and is in every set (with a warning).
    randomized : bool, default=False
        APS only: randomised APS scores ``above_y + u p_y`` with ``u`` uniform
        on [0, 1], for coverage at most ``1 - alpha + 1 / (n + 1)`` (exact on
        average) instead of the conservative non-randomised sets; recommended
        for confident models, whose non-randomised APS sets are very large
        (see Notes). Sets can then be empty (see ``include_top``). The
        uniform of a row depends only on ``random_state`` and the row's
        probabilities (see Notes, *Randomised sets*).
    include_top : bool, default=False
        Add the most probable class to every set, so that no set is empty.
        Coverage can only grow (the lower bound holds; the upper bound of
        randomised APS does not). Non-randomised APS sets always contain it.
    random_state : int, RandomState instance or None, default=None
        ``randomized=True`` only: draws, at fit, the seed from which the
        uniform of every calibration and test row is derived. Deterministic
        given an int (or a ``RandomState`` in the same state); ``None``
        draws a fresh seed at each fit.
    score_type : {"auto", "logit", "probability"}, default="auto"
        What raw ``X`` holds; see :class:`~skcalib._base.BaseCalibrator`.
    response_method : {"auto", "decision_function", "predict_proba"}, default="auto"
        Wrapper mode: the method that gives scores.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels; the columns of :meth:`predict_set`.
    score_type_ : str
        What the scores were taken to be (``"logit"`` or ``"probability"``).
    calibrator_ : estimator or None
        The fitted clone of ``calibrator``.
    threshold_ : float or ndarray of shape (n_classes,)
        The conformal threshold :math:`\\hat q` of the nonconformity scores
        (one per class with ``class_conditional=True``); ``inf`` where there
        were too few calibration samples (full sets).
    n_features_in_ : int
        Number of columns of ``X`` seen at fit (2-D input).
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Names of the features seen at fit (when they are all strings).

    See Also
    --------
    skcalib.metrics.set_coverage_score : Fraction of sets holding the true class.
    skcalib.metrics.mean_set_size : Average number of classes per set.
    skcalib.metrics.classwise_set_coverage : Coverage within each class.
    VennAbersCalibrator : Probabilities with a validity guarantee.

    Notes
    -----
    **Scores.** With :math:`p_k(x)` the probability of class :math:`k`,

    * LAC (Sadinle, Lei & Wasserman 2019): :math:`s(x, y) = 1 - p_y(x)`, and
      :math:`C(x) = \\{k : 1 - p_k(x) \\le \\hat q\\}`;
    * APS (Romano, Sesia & Candès 2020): with
      :math:`m_y(x) = \\sum_{j : p_j(x) > p_y(x)} p_j(x)` the mass of the
      classes more probable than :math:`y`, :math:`s(x, y) = m_y(x) +
      p_y(x)` and :math:`C(x) = \\{k : m_k(x) < \\hat q\\}`: classes are
      added in decreasing probability until the cumulative mass reaches
      :math:`\\hat q`, the class that crosses it included (Angelopoulos &
      Bates 2021). Tied probabilities get the same score, whatever their
      column order;
    * randomised APS: :math:`s(x, y, u) = m_y(x) + u\\,p_y(x)`, :math:`u
      \\sim U(0, 1)` drawn per sample (one for all classes of a sample), and
      :math:`C(x) = \\{k : m_k(x) + u\\,p_k(x) \\le \\hat q\\}`.

    **Threshold.** With calibration scores :math:`s_1, \\ldots, s_n`,
    :math:`\\hat q` is the :math:`\\lceil (n + 1)(1 - \\alpha) \\rceil`-th
    smallest, i.e. the empirical quantile at level
    :math:`\\lceil (n + 1)(1 - \\alpha) \\rceil / n`; it is :math:`+\\infty`
    (every set is full, with a warning) when :math:`(n + 1)(1 - \\alpha) >
    n`. Then :math:`1 - \\alpha \\le \\mathbb{P}(Y \\in C(X))`, and
    :math:`\\le 1 - \\alpha + 1 / (n + 1)` when the scores have no ties
    (randomised APS). With ``sample_weight`` :math:`w_i` (repetition
    counts, total :math:`W`), :math:`\\hat q` is the smallest :math:`s_{(k)}`
    with :math:`\\sum_{i : s_i \\le s_{(k)}} w_i \\ge (1 - \\alpha)(W + 1)`:
    the test sample counts with weight 1, a weight of 2 equals a duplicated
    row (also with ``randomized=True``: equal rows get equal uniforms), and
    scaling all weights changes the threshold. This is not the
    covariate-shift weighting of Tibshirani et al. (2019).

    **Class-conditional (Mondrian) mode** (Vovk 2012; Ding et al. 2023):
    :math:`\\hat q_k` from the scores :math:`s(x_i, k)` of the calibration
    samples with :math:`y_i = k` only; :math:`C(x) = \\{k : s(x, k) \\le
    \\hat q_k\\}` (APS: :math:`m_k(x) < \\hat q_k`). Then
    :math:`\\mathbb{P}(Y \\in C(X) \\mid Y = k) \\ge 1 - \\alpha` for every
    :math:`k`, at the price of larger sets on rare classes.

    **Non-randomised APS is conservative.** When most calibration samples
    are predicted correctly with a probability near 1, :math:`\\hat q` is
    itself within a hair of 1 and a set keeps adding classes until nearly all
    the mass is in: on a WideResNet for CIFAR-10 (91% accuracy,
    ``alpha=0.1``) non-randomised APS covers 99.99% of test images with 7
    classes per set on average, randomised APS 90% with 1.1 (see
    ``benchmarks/results/conformal.md``).

    **Empty sets.** LAC and randomised APS sets can be empty (no class is
    plausible enough); this is part of the method and of its exact coverage.
    ``include_top=True`` fills them with the most probable class.

    **Calibrator.** The guarantee is exact when the probabilities do not
    depend on the calibration samples. ``calibrator=`` fits its map on the
    same samples as :math:`\\hat q`, which breaks the exchangeability of
    calibration and test scores slightly: harmless for a one-parameter map
    such as temperature scaling on thousands of samples, but a flexible map
    (isotonic, binning) fitted on few samples fits them better than new ones
    and can under-cover. For the exact guarantee, fit the calibrator on one
    part of the held-out data and pass it as ``estimator`` of a
    ``ConformalClassifier`` fitted on the other part.

    **Randomised sets: the randomness contract.** At fit one seed is drawn
    from ``random_state``. The uniform :math:`u` of a row, at fit and in
    :meth:`predict_set` alike, is a hash of that seed and of the row's
    probabilities :math:`p(x)` (their float64 bits, see
    ``row_uniforms`` in this module); nothing else enters it. So a row gets the same
    :math:`u`, hence the same set, whether it is predicted alone, in any
    batch or at any position, repeated calls give the same sets,
    :meth:`predict_set` changes no state, and the coverage of a test set
    does not depend on how its rows are batched. Over the random seed the
    :math:`u` of distinct rows are independent uniforms, independent of the
    labels, and calibration and test rows are treated alike, which is what
    the coverage guarantee needs. Rows with identical probabilities share
    their :math:`u` (the ``1 / (n + 1)`` upper bound assumes distinct
    scores anyway). Float32 and float64 inputs that round to different
    probabilities get different uniforms.

    References
    ----------
    .. [1] M. Sadinle, J. Lei and L. Wasserman, "Least ambiguous set-valued
       classifiers with bounded error levels", JASA 114, 2019.
    .. [2] Y. Romano, M. Sesia and E. Candès, "Classification with valid and
       adaptive coverage", NeurIPS 2020.
    .. [3] A. N. Angelopoulos and S. Bates, "A gentle introduction to
       conformal prediction and distribution-free uncertainty
       quantification", arXiv:2107.07511, 2021.
    .. [4] V. Vovk, "Conditional validity of inductive conformal predictors",
       ACML 2012.
    .. [5] T. Ding, A. N. Angelopoulos, S. Bates, M. I. Jordan and R. J.
       Tibshirani, "Class-conditional conformal prediction with many
       classes", NeurIPS 2023.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib import ConformalClassifier
    >>> proba = np.array([[0.7, 0.2, 0.1], [0.5, 0.4, 0.1], [0.1, 0.8, 0.1],
    ...                   [0.2, 0.2, 0.6], [0.3, 0.3, 0.4], [0.6, 0.3, 0.1]])
    >>> y = np.array([0, 1, 1, 2, 0, 0])
    >>> cp = ConformalClassifier(alpha=0.3).fit(proba, y)
    >>> cp.threshold_  # 1 - p_y: .3 .6 .2 .4 .7 .4; ceil(7 * 0.7) = 5th smallest
    0.6
    >>> cp.predict_set([[0.5, 0.4, 0.1], [0.1, 0.1, 0.8]])
    array([[ True,  True, False],
           [False, False,  True]])
    """

    _parameter_constraints: dict = {
        **BaseCalibrator._parameter_constraints,
        "calibrator": [HasMethods(["fit", "predict_proba"]), None],
        "method": [StrOptions({"lac", "aps"})],
        "alpha": [Interval(Real, 0, 1, closed="neither")],
        "class_conditional": ["boolean"],
        "randomized": ["boolean"],
        "include_top": ["boolean"],
        "random_state": ["random_state"],
    }

    #: Weights are repetition counts and the test sample counts with weight 1
    #: (the level is ``(1 - alpha)(W + 1)``): they are used as given.
    _rescale_sample_weight = False

    def __init__(
        self,
        estimator=None,
        *,
        calibrator=None,
        method="lac",
        alpha=0.1,
        class_conditional=False,
        randomized=False,
        include_top=False,
        random_state=None,
        score_type="auto",
        response_method="auto",
    ):
        self.estimator = estimator
        self.calibrator = calibrator
        self.method = method
        self.alpha = alpha
        self.class_conditional = class_conditional
        self.randomized = randomized
        self.include_top = include_top
        self.random_state = random_state
        self.score_type = score_type
        self.response_method = response_method

    # ------------------------------------------------------------ probabilities
    @staticmethod
    def _calibrator_input(calibrator, raw):
        if raw.ndim == 1 and not isinstance(calibrator, BaseCalibrator):
            return raw[:, None]  # plain classifiers want 2-D features
        return raw

    def _fit_calibrator(self, scores, y, sample_weight):
        if self.calibrator is None:
            return None
        calibrator = clone(self.calibrator)
        params = calibrator.get_params(deep=False)
        if params.get("estimator") is not None:
            raise ValueError(
                "calibrator must work on scores (its estimator must be None); "
                "pass the classifier as ConformalClassifier(estimator=...), got "
                f"calibrator estimator={params['estimator']!r}."
            )
        if "score_type" in params:
            calibrator.set_params(score_type=self.score_type_)
        missing = np.setdiff1d(np.arange(len(self.classes_)), y)
        if missing.size:
            raise ValueError(
                f"calibrator needs calibration samples of every class; classes "
                f"{self.classes_[missing].tolist()} have none."
            )
        fit_params = {} if sample_weight is None else {"sample_weight": sample_weight}
        return calibrator.fit(
            self._calibrator_input(calibrator, scores.raw), y, **fit_params
        )

    def _predict_proba(self, scores):
        if self.calibrator_ is None:
            return scores.proba
        proba = self.calibrator_.predict_proba(
            self._calibrator_input(self.calibrator_, scores.raw)
        )
        return np.asarray(proba).astype(scores.dtype, copy=False)

    # ---------------------------------------------------------------- fitting
    def _fit(self, scores, y, sample_weight):
        check_count_weights(sample_weight, type(self).__name__)
        if self.randomized and self.method != "aps":
            raise ValueError(
                f"randomized=True applies to method='aps' only, got "
                f"method={self.method!r}."
            )
        self.calibrator_ = self._fit_calibrator(scores, y, sample_weight)
        proba = self._predict_proba(scores)
        u = None
        self._set_seed = None  # the seed of the rows' uniforms, if any
        if self.randomized:
            rng = check_random_state(self.random_state)
            self._set_seed = int(rng.randint(np.iinfo(np.int32).max))
            u = row_uniforms(proba, self._set_seed)
        s = label_scores(proba, y, self.method, u)
        if not self.class_conditional:
            self.threshold_ = conformal_quantile(s, self.alpha, sample_weight)
            if np.isinf(self.threshold_):
                warnings.warn(
                    f"alpha={self.alpha} needs at least "
                    f"{_min_samples(self.alpha)} calibration samples (weighted), "
                    f"got {_count(y, sample_weight):g}: the threshold is infinite "
                    "and every prediction set holds every class.",
                    UserWarning,
                    stacklevel=4,
                )
            return
        thresholds = np.empty(len(self.classes_))
        for k in range(thresholds.size):
            mask = y == k
            w = None if sample_weight is None else sample_weight[mask]
            thresholds[k] = conformal_quantile(s[mask], self.alpha, w)
        full = np.flatnonzero(np.isinf(thresholds))
        if full.size:
            warnings.warn(
                f"Classes {self.classes_[full].tolist()} have fewer than "
                f"{_min_samples(self.alpha)} calibration samples (weighted) at "
                f"alpha={self.alpha}: their threshold is infinite and they are in "
                "every prediction set.",
                UserWarning,
                stacklevel=4,
            )
        self.threshold_ = thresholds

    # ------------------------------------------------------------- prediction
    def predict_set(self, X):
        """Conformal prediction sets.

        Parameters
        ----------
        X : array-like
            Raw scores (raw-score mode) or features (wrapper mode), as in
            :meth:`fit`.

        Returns
        -------
        sets : ndarray of shape (n_samples, n_classes), dtype=bool
            ``sets[i, k]`` is True when ``classes_[k]`` is in the set of
            sample ``i``. Set sizes are ``sets.sum(axis=1)``. The set of a
            row does not depend on the other rows of ``X`` (with
            ``randomized=True`` too: its uniform is a function of
            ``random_state`` and the row, see Notes).
        """
        check_is_fitted(self)
        if namespace(X) is not None:  # sets on the host, returned on the device
            return call_on_host(self, "predict_set", X)
        scores = self._scores(*self._raw_scores(X, reset=False), reset=False)
        proba = self._predict_proba(scores)
        u = None
        if self._set_seed is not None:
            u = row_uniforms(proba, self._set_seed)
        return prediction_sets(
            proba, self.method, self.threshold_, u, include_top=self.include_top
        )


def _count(y, sample_weight):
    return float(y.size if sample_weight is None else sample_weight.sum())
