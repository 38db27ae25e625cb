"""Split-conformal prediction sets (LAC, APS, RAPS, top-k), marginal or
class-conditional, at one or several levels."""

from numbers import Integral, Real

import numpy as np
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from skcalib._base import BaseCalibrator
from skcalib._core.compat import HasMethods, Interval, StrOptions
from skcalib._core.inputs import input_kind
from skcalib._core.totals import class_members
from skcalib._core.weights import check_count_weights
from skcalib._core.xp import namespace
from skcalib._core.xp.estimator import call_on_host, follows_input
from skcalib.conformal._classifier_chunks import engine_sets, fit_chunks
from skcalib.conformal._quantile import (
    check_alphas,
    conformal_quantile,
    quantiles_of_sorted,
    sort_scores,
)
from skcalib.conformal._raps_tuning import resolve_raps
from skcalib.conformal._scores import (  # re-exported: imported from here
    aps_mass_above,
    calibration_uniforms,
    check_set_options,
    label_scores,
    prediction_sets,
    prediction_sets_many,
    resolve_randomized,
    row_uniforms,
)
from skcalib.conformal._set_calibrator import calibrator_input, fit_set_calibrator
from skcalib.conformal._threshold_warnings import (
    warn_full_classes,
    warn_other_levels,
    warn_too_few,
)

__all__ = ["ConformalClassifier"]
_REEXPORTS = (aps_mass_above, conformal_quantile, label_scores, prediction_sets)


class ConformalClassifier(BaseCalibrator):
    """Split-conformal prediction sets with a coverage guarantee.

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
    method : {"lac", "aps", "raps", "top_k"}, default="lac"
        Nonconformity score. ``"lac"`` (least ambiguous set-valued
        classifier): ``1 - p_y``; gives the smallest sets on average, can
        give empty sets. ``"aps"`` (adaptive prediction sets): the mass of the
        classes more probable than ``y``, plus ``p_y``; larger sets on hard
        samples, smaller on easy ones, never empty unless randomised or
        ``include_last_label=False``. ``"raps"`` (regularised APS): the APS
        score plus ``lam * max(rank_y - k_reg, 0)``, which penalises long
        tails of unlikely classes (smaller, more stable sets than APS).
        ``"top_k"``: the rank of ``y`` among the classes (1 = most
        probable); every set holds the same number :math:`\\hat k` of most
        probable classes.
    alpha : float in (0, 1), default=0.1
        Miscoverage level: sets contain the true class with probability at
        least ``1 - alpha``. :meth:`predict_set` can give the sets of other
        levels too (``alpha=`` there).
    k_reg : int >= 0 or "auto", default="auto"
        RAPS only: the rank from which the penalty applies (classes ranked
        ``k_reg`` or better are not penalised). ``"auto"``: chosen on a
        tuning split of the calibration data (``tuning_size``) as the top-k
        set size at ``alpha`` (see Notes, *Choosing k_reg and lam*).
    lam : float >= 0 or "auto", default="auto"
        RAPS only: the penalty per rank beyond ``k_reg`` (:math:`\\lambda`
        of Angelopoulos et al. 2021). ``"auto"``: the value of
        ``(0.001, 0.01, 0.1, 0.2, 0.5)`` with the smallest mean set size on
        the tuning split. ``lam=0`` is APS.
    tuning_size : float in (0, 1), default=0.2
        RAPS with ``k_reg="auto"`` or ``lam="auto"``: the fraction of the
        calibration rows used to choose them, ``ceil(tuning_size * n)`` rows
        drawn by a random permutation from ``random_state`` (by position,
        whatever the rows hold); the threshold is computed on the other
        rows only, so the guarantee stays exact with ``n`` the number of
        those rows (``n_tuning_`` rows are spent on tuning). An error when
        no row is left for the threshold, a warning when the tuning rows
        are too few for a finite top-k threshold.
    include_last_label : bool, default=True
        Non-randomised APS and RAPS: whether a set includes the class whose
        cumulative score crosses the threshold. ``True`` (Romano et al.
        2020): never empty, conservative (coverage often well above
        ``1 - alpha``). ``False`` (MAPIE's ``include_last_label=False``):
        only the classes whose own score is within the threshold, the plain
        conformal set of the score; coverage ``>= 1 - alpha`` still holds
        (and ``<= 1 - alpha + 1 / (n + 1)`` without tied scores), sets are
        smaller and can be empty (see ``include_top``).
    class_conditional : bool, default=False
        Mondrian conformal prediction: one threshold per class, fitted on the
        calibration samples of that class, for coverage ``>= 1 - alpha``
        within every class. A class with fewer than ``(1 - alpha) / alpha``
        calibration samples (weighted count; 9 at ``alpha=0.1``) has an
        infinite threshold and is in every set (with a warning).
    randomized : bool or "auto", default="auto"
        APS and RAPS only: randomised scores ``above_y + u p_y`` (plus the
        RAPS penalty) with ``u`` uniform on [0, 1], for coverage at most ``1 -
        alpha + 1 / (n + 1)`` (exact on average, without tied scores)
        instead of the conservative non-randomised sets, which are far
        larger on confident models (see Notes, *Which APS sets by
        default*). Sets can then be empty (see ``include_top``).
        ``"auto"``: True for APS and RAPS unless
        ``include_last_label=False`` (a rule of non-randomised sets), False
        for LAC and top-k; the value used is ``randomized_``. The uniforms
        depend on ``random_state`` and the row positions (see Notes,
        *Randomised sets*). The default was False before issue 30.
    include_top : bool, default=False
        Add the most probable class to every set, so that no set is empty.
        Coverage can only grow (the lower bound holds; the upper bound of
        randomised APS does not). Non-randomised APS and RAPS sets with
        ``include_last_label=True`` always contain it.
    random_state : int, RandomState instance or None, default=None
        Randomised sets: draws, at fit, the seeds of the calibration rows'
        uniforms and of the test rows'; RAPS with ``"auto"`` parameters:
        then draws the tuning split. Deterministic given an int
        (or a ``RandomState`` in the same state); ``None`` draws afresh at
        each fit.
    score_type : {"auto", "logit", "probability"}, default="auto"
        What raw ``X`` holds; see :class:`~skcalib._base.BaseCalibrator`.
    response_method : {"auto", "decision_function", "predict_proba"}, default="auto"
        Wrapper mode: the method that gives scores.
    classes : array-like of shape (n_classes,), default=None
        Raw-score mode: the class of each score column, so that ``y`` may
        miss classes (:ref:`absent_classes`); None: the sorted labels of ``y``.

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
        (one per class with ``class_conditional=True``) at ``alpha``; ``inf``
        where there were too few calibration samples (full sets).
    k_reg_ : int
        RAPS only: the ``k_reg`` used (chosen on the tuning split when
        ``k_reg="auto"``).
    lam_ : float
        RAPS only: the ``lam`` used.
    randomized_ : bool
        Whether the sets are randomised (``randomized`` resolved).
    n_tuning_ : int
        RAPS only: the number of calibration rows set aside to choose
        ``k_reg`` and ``lam`` (0 when both are given).
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
    LabelShiftConformalClassifier : Sets that keep coverage under label shift.
    CovariateShiftConformalClassifier : The same under covariate shift.
    ConformalRiskController : Sets that bound an expected loss (multi-label
        false negative rate); its miscoverage sets are these LAC sets.

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
      :math:`C(x) = \\{k : m_k(x) + u\\,p_k(x) \\le \\hat q\\}`;
    * RAPS (Angelopoulos, Bates, Malik & Jordan 2021): with :math:`o_y(x) = 1
      + |\\{j : p_j(x) > p_y(x)\\}|` the rank of :math:`y`, the APS score
      plus :math:`\\lambda\\,(o_y(x) - k_{reg})^+`; the sets are those of APS
      with the penalty added to the cumulative mass (the crossing class is
      in when :math:`m_k + \\lambda (o_k - 1 - k_{reg})^+ < \\hat q`);
    * top-k: :math:`s(x, y) = o_y(x)`; :math:`C(x)` holds the
      :math:`\\hat k = \\lfloor \\hat q \\rfloor` most probable classes
      (more when probabilities tie), the same number for every input.

    **The last label** (``include_last_label=False``, non-randomised APS and
    RAPS): :math:`C(x) = \\{k : s(x, k) \\le \\hat q\\}` without the classes
    that add no mass at the threshold. Since :math:`Y \\in C(X)` exactly when
    the test score is at most :math:`\\hat q` (but in that degenerate case),
    coverage is :math:`\\ge 1 - \\alpha` and, without tied scores,
    :math:`\\le 1 - \\alpha + 1 / (n + 1)`; the default sets add the class
    that crosses :math:`\\hat q` and over-cover. MAPIE computes its threshold
    from randomised scores and then drops the last label, which can
    under-cover; skcalib's threshold comes from the same scores as the sets.

    **Choosing k_reg and lam** (``"auto"``, the procedure of Angelopoulos et
    al. 2021): about a ``tuning_size`` share of the calibration rows is set
    aside by a random permutation (by position); ``k_reg``
    is the top-k set size of those rows at ``alpha`` (the
    :math:`\\lceil (n_t + 1)(1 - \\alpha) \\rceil`-th smallest rank of the true
    label, as MAPIE does); ``lam`` is the value of (0.001, 0.01, 0.1, 0.2,
    0.5) whose RAPS sets on those rows are smallest on average. The threshold
    uses the other rows only, so the guarantee is exact with :math:`n` their
    number (``n_tuning_`` rows are spent on tuning).

    **Several levels.** The sorted calibration scores are kept at fit; the
    threshold at any level is read from them, and ``predict_set(X,
    alpha=[...])`` sorts each row once for all levels. Thresholds do not
    increase with ``alpha`` and the sets grow with the threshold, so sets
    are nested; per-class thresholds (``class_conditional=True``) are read
    per level and class alike.

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
    row for non-randomised sets (randomised: a row of weight 2 has one
    uniform, two copies have two; RAPS ``"auto"``: the split is drawn by
    position), and scaling all weights changes the threshold. This is not the
    covariate-shift weighting of Tibshirani et al. (2019)
    (:class:`CovariateShiftConformalClassifier`).

    **Class-conditional (Mondrian) mode** (Vovk 2012; Ding et al. 2023):
    :math:`\\hat q_k` from the scores :math:`s(x_i, k)` of the calibration
    samples with :math:`y_i = k` only; :math:`C(x) = \\{k : s(x, k) \\le
    \\hat q_k\\}` (APS: :math:`m_k(x) < \\hat q_k`). Then
    :math:`\\mathbb{P}(Y \\in C(X) \\mid Y = k) \\ge 1 - \\alpha` for every
    :math:`k`, at the price of larger sets on rare classes.

    **Which APS sets by default.** When most calibration samples are
    predicted correctly with a probability near 1, :math:`\\hat q` is itself
    within a hair of 1 and a non-randomised set keeps adding classes until
    nearly all the mass is in. Measured on the netcal CIFAR predictions
    (``alpha=0.1``, 10 random 5000 / 5000 calibration / test splits, mean
    coverage and mean set size; RAPS with ``"auto"`` tuning; "no last":
    ``include_last_label=False``):

    ==========================  =============  =============  =============
    set rule                    CIFAR-100 WRN  CIFAR-100 DN   CIFAR-10 WRN
    ==========================  =============  =============  =============
    APS non-randomised          0.9996 / 60.3  0.9977 / 24.1  0.9999 / 7.26
    APS non-randomised no last  0.9022 / 59.3  0.9011 / 23.1  0.9000 / 6.26
    APS randomised              0.9016 / 8.07  0.8989 / 2.50  0.8979 / 1.08
    RAPS non-randomised         0.9330 / 4.65  0.9303 / 4.30  0.9711 / 2.16
    RAPS randomised             0.9030 / 2.68  0.8988 / 2.15  0.8988 / 1.01
    LAC                         0.9025 / 2.22  0.8991 / 2.10  0.9002 / 0.97
    ==========================  =============  =============  =============

    Dropping the last label keeps the coverage exact but not the size (9.5%
    of the sets are empty, the others nearly full); randomising gives exact
    coverage with sets 3 to 10 times smaller, so ``randomized="auto"``
    randomises APS and RAPS. Pass ``randomized=False`` for deterministic
    sets (the conservative rule of Romano et al. 2020). On heavily tied
    probabilities (rounded to two decimals, most classes at exactly 0),
    tied classes share a rank and randomised RAPS sets grow (14 classes on
    rounded CIFAR-100 against 5.3 with ``randomized=False``, both covering);
    there, pass ``randomized=False`` with RAPS or use randomised APS.

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

    **Randomised sets: the randomness contract.** At fit two seeds are
    drawn from ``random_state``. The uniforms of the calibration rows are
    independent draws by position (``numpy.random.default_rng`` of the
    first seed); the uniform of a test row in :meth:`predict_set` is a hash
    of the second seed, the row's position in ``X`` and its probabilities
    :math:`p(x)` (their bits in float32, see ``row_uniforms`` in
    ``skcalib.conformal._scores``). Over the random seeds every uniform is
    U(0, 1), independent of the other rows' and of the labels, also when
    rows have identical probabilities, which is what the guarantee and its
    upper bound need. The trade-off: given a seed, results depend on the
    row order (permuting the calibration rows, or a test row's position in
    ``X``, can change a set near the threshold), and a weight of 2 is not a
    duplicated row. Uniforms that were functions of each row's
    probabilities (skcalib before issue 30) are row-order invariant but
    give tied rows the same uniform: exactness is lost on discrete scores
    and, in the RAPS tuning split, tied rows all fell on one side, which
    broke the coverage (0.80 instead of 0.90 on a model with two distinct
    probability rows). The same call gives the same sets, :meth:`predict_set`
    changes no state, and one-row calls of different rows draw different
    uniforms.

    **In chunks and on a cluster** (``fit_chunks``, Dask, Spark, Ray): the
    threshold is the in-memory one, exactly, from a distributed order
    statistic (2 to 4 passes; no score is collected, so only the fitted
    ``alpha`` is served); randomised sets and ``"auto"`` RAPS parameters
    need row positions and are refused (guide "Calibration on a cluster").

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

    Several levels from the same fit (columns: levels; at ``alpha=0.5`` the
    threshold is the 4th smallest score, 0.4):

    >>> cp.predict_set([[0.5, 0.4, 0.1]], alpha=[0.3, 0.5])[0]
    array([[ True, False],
           [ True, False],
           [False, False]])
    """

    _parameter_constraints: dict = {
        **BaseCalibrator._parameter_constraints,
        "calibrator": [HasMethods(["fit", "predict_proba"]), None],
        "method": [StrOptions({"lac", "aps", "raps", "top_k"})],
        "alpha": [Interval(Real, 0, 1, closed="neither")],
        "k_reg": [Interval(Integral, 0, None, closed="left"), StrOptions({"auto"})],
        "lam": [Interval(Real, 0, None, closed="left"), StrOptions({"auto"})],
        "tuning_size": [Interval(Real, 0, 1, closed="neither")],
        "include_last_label": ["boolean"],
        "class_conditional": ["boolean"],
        "randomized": ["boolean", StrOptions({"auto"})],
        "include_top": ["boolean"],
        "random_state": ["random_state"],
    }

    #: Weights are repetition counts and the test sample counts with weight 1
    #: (the level is ``(1 - alpha)(W + 1)``): they are used as given.
    _rescale_sample_weight = False

    _chunk_fit_condition = "randomized=False with numeric RAPS parameters"

    def __init__(
        self,
        estimator=None,
        *,
        calibrator=None,
        method="lac",
        alpha=0.1,
        k_reg="auto",
        lam="auto",
        tuning_size=0.2,
        include_last_label=True,
        class_conditional=False,
        randomized="auto",
        include_top=False,
        random_state=None,
        score_type="auto",
        response_method="auto",
        classes=None,
    ):
        self.estimator = estimator
        self.calibrator = calibrator
        self.method = method
        self.alpha = alpha
        self.k_reg = k_reg
        self.lam = lam
        self.tuning_size = tuning_size
        self.include_last_label = include_last_label
        self.class_conditional = class_conditional
        self.randomized = randomized
        self.include_top = include_top
        self.random_state = random_state
        self.score_type = score_type
        self.response_method = response_method
        self.classes = classes

    # ------------------------------------------------------------ probabilities
    def _fit_calibrator(self, scores, y, sample_weight):
        return fit_set_calibrator(
            self.calibrator,
            scores.raw,
            y,
            sample_weight,
            self.score_type_,
            self.classes_,
        )

    def _predict_proba(self, scores):
        if self.calibrator_ is None:
            return scores.proba
        proba = self.calibrator_.predict_proba(
            calibrator_input(self.calibrator_, scores.raw)
        )
        return np.asarray(proba).astype(scores.dtype, copy=False)

    # ---------------------------------------------------------------- fitting
    def _score_params(self):
        """Keyword arguments of ``label_scores`` and ``prediction_sets``."""
        params = {"include_last_label": self.include_last_label}
        if self.method == "raps":
            params.update(k_reg=self.k_reg_, lam=self.lam_)
        return params

    def _fit(self, scores, y, sample_weight):
        check_count_weights(sample_weight, type(self).__name__)
        self.randomized_ = resolve_randomized(
            self.randomized, self.method, self.include_last_label
        )
        check_set_options(self.method, self.randomized_, self.include_last_label)
        self.calibrator_ = self._fit_calibrator(scores, y, sample_weight)
        proba = self._predict_proba(scores)
        rng = check_random_state(self.random_state)
        u = None
        self._set_seed = None  # the seed of the test rows' uniforms, if any
        if self.randomized_:
            cal_seed, self._set_seed = (
                int(v) for v in rng.randint(np.iinfo(np.int32).max, size=2)
            )
            u = calibration_uniforms(y.size, cal_seed)  # by position
        if self.method == "raps":
            self.k_reg_, self.lam_, cal = resolve_raps(
                self, proba, y, u, sample_weight, rng
            )
            self.n_tuning_ = y.size - cal.size
            proba, y = proba[cal], y[cal]
            u = None if u is None else u[cal]
            sample_weight = None if sample_weight is None else sample_weight[cal]
        s = label_scores(proba, y, self.method, u, **self._score_params())
        groups = [slice(None)]
        if self.class_conditional:
            groups = class_members(y, len(self.classes_))
        # sorted scores and cumulative weights: the threshold at any level
        self._calibration_scores = [
            sort_scores(s[g], None if sample_weight is None else sample_weight[g])
            for g in groups
        ]
        thresholds = self._thresholds(np.array([self.alpha]))[0]
        self._set_threshold(thresholds, _count(y, sample_weight))

    def _fit_chunks(self, data):
        """Chunks and engines (Dask, Spark, Ray): the threshold by an exact
        distributed search; ``randomized_`` False and numbers for RAPS."""
        self._set_threshold(fit_chunks(self, data), data.total_weight)

    def _set_threshold(self, thresholds, total_weight):
        """``threshold_`` from the fitted level's thresholds, with a warning
        for each infinite one."""
        if self.class_conditional:
            warn_full_classes(self.classes_, thresholds, self.alpha)
            self.threshold_ = thresholds
            return
        self.threshold_ = float(thresholds)
        if np.isinf(self.threshold_):
            warn_too_few(self.alpha, total_weight)

    def _thresholds(self, alphas):
        """Thresholds at levels ``alphas``: ``(m,)``, or ``(m, K)`` per class."""
        if self._calibration_scores is None:  # fitted in chunks
            if not np.array_equal(alphas, [self.alpha]):
                raise ValueError(
                    f"{type(self).__name__} fitted in chunks or on a cluster keeps "
                    f"the threshold of its alpha={self.alpha} only (the calibration "
                    f"scores stayed where they were), not those of alpha="
                    f"{alphas.tolist()}; set alpha and fit again."
                )
            return np.asarray(self.threshold_, dtype=np.float64)[None]
        per_group = [quantiles_of_sorted(*g, alphas) for g in self._calibration_scores]
        if not self.class_conditional:
            return per_group[0]
        return np.stack(per_group, axis=1)

    # ------------------------------------------------------------- prediction
    @follows_input
    def predict_set(self, X, alpha=None):
        """Conformal prediction sets, at the fitted level or at several.

        Parameters
        ----------
        X : array-like
            Raw scores (raw-score mode) or features (wrapper mode), as in
            :meth:`fit`.
        alpha : None, float in (0, 1) or array-like of shape (n_alpha,), \
                default=None
            Miscoverage level(s). ``None``: the fitted ``alpha`` (the sets of
            ``threshold_``). A float: the sets at that level, from the same
            calibration scores (no refit). A list of strictly increasing
            floats in (0, 1): the sets at every level, sorting each row once;
            the set of a larger ``alpha`` is a subset of the set of a
            smaller one (nested sets). With ``method="raps"`` and ``"auto"``
            parameters, ``k_reg_`` and ``lam_`` were chosen at the fitted
            ``alpha`` and serve every level.

        Returns
        -------
        sets : ndarray of shape (n_samples, n_classes) or \
                (n_samples, n_classes, n_alpha), dtype=bool
            ``sets[i, k]`` (``sets[i, k, a]`` for a list of levels) is True
            when ``classes_[k]`` is in the set of sample ``i`` (at level
            ``alpha[a]``). Set sizes are ``sets.sum(axis=1)``. The set of a
            row does not depend on the other rows of ``X`` (with
            ``randomized=True`` too: its uniform is a function of
            ``random_state`` and the row, see Notes).
        """
        check_is_fitted(self)
        if (engine := input_kind(X)) != "numpy":
            return engine_sets(self, engine, X, alpha)
        if namespace(X) is not None:  # sets on the host, returned on the device
            return call_on_host(self, "predict_set", X, alpha)
        alphas, scalar = check_alphas(self.alpha if alpha is None else alpha)
        if alpha is None:
            thresholds = np.asarray(self.threshold_, dtype=np.float64)[None]
        else:
            thresholds = self._thresholds(alphas)
            classes = self.classes_ if self.class_conditional else None
            warn_other_levels(classes, thresholds, alphas, self.alpha)
        scores = self._scores(*self._raw_scores(X, reset=False), reset=False)
        proba = self._predict_proba(scores)
        u = None
        if self._set_seed is not None:
            u = row_uniforms(proba, self._set_seed)
        sets = prediction_sets_many(
            proba,
            self.method,
            thresholds,
            u,
            include_top=self.include_top,
            **self._score_params(),
        )
        return sets[:, :, 0] if scalar else sets


def _count(y, sample_weight):
    return float(y.size if sample_weight is None else sample_weight.sum())
