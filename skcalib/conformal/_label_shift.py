"""Conformal prediction sets under label shift (Podkopaev & Ramdas 2021):
split conformal with the calibration scores weighted by the ratio of the
target to the source class priors."""

from numbers import Integral, Real

import numpy as np

from skcalib._core.compat import Interval, StrOptions
from skcalib._core.prior_estimation import (
    bbse_priors,
    check_priors,
    confusion,
    em_priors,
    warn_em_unconverged,
)
from skcalib._core.xp.estimator import follows_input
from skcalib.conformal._weighted import _WeightedConformalBase, check_target_rows

__all__ = ["LabelShiftConformalClassifier"]


class LabelShiftConformalClassifier(_WeightedConformalBase):
    """Conformal prediction sets that keep their coverage under label shift.

    Split conformal (:class:`ConformalClassifier`) promises coverage
    ``1 - alpha`` when the test data look like the calibration data. Under
    *label shift* the class-conditional distributions ``p(x | y)`` stay the
    same but the class priors move from ``q_s`` (calibration, "source") to
    ``q_t`` (target): the classes the model finds hard may become frequent,
    and plain sets under-cover. Weighting each calibration score by the
    ratio of priors of its class, ``w_y = q_t(y) / q_s(y)``, restores the
    guarantee (Podkopaev & Ramdas 2021):

    .. math::

        \\mathbb{P}_t\\big(Y \\in C(X)\\big) \\ge 1 - \\alpha.

    The threshold of candidate class ``y`` is the weighted ``1 - alpha``
    quantile of the calibration scores ``s_i`` with weights ``w_{Y_i}``,
    the test point counted with weight ``w_y`` at :math:`+\\infty`; the set
    is ``{y : s(x, y) <= q_y}`` (see Notes).

    The target priors are given (``target_priors``) or estimated from
    unlabelled target rows passed to :meth:`fit` as ``X_target``, by the EM
    of Saerens et al. (2002) or by black-box shift estimation (Lipton et al.
    2018), the estimators of :class:`PriorShiftAdapter`. **With estimated
    priors the guarantee holds only up to the estimation error** of the
    priors: the weights are then estimates, and coverage is ``1 - alpha``
    minus a term that shrinks with the size of ``X_target`` (measured in
    the user guide, :ref:`conformal_shift`). ``q_s`` is the (weighted)
    class frequency of the calibration labels.

    Like :class:`ConformalClassifier`, it takes raw scores (``X`` holds
    logits or probabilities) or a prefit ``estimator`` (``X`` holds its
    features, never refit); :meth:`predict_proba` returns the model's
    probabilities unchanged (for probabilities adapted to the target
    priors, see :class:`PriorShiftAdapter`).

    Parameters
    ----------
    estimator : classifier or None, default=None
        A prefit classifier (wrapper mode) or ``None`` (``X`` holds scores).
    target_priors : array-like of shape (n_classes,), "uniform" or None, \
            default=None
        The target class priors in the order of ``classes_``: non-negative,
        summing to 1 within 1e-6; ``"uniform"``: ``1 / n_classes`` each;
        ``None``: estimated from ``X_target`` (then required by :meth:`fit`).
        Giving both priors and ``X_target`` is an error. A class with target
        prior 0 cannot occur in the target: it is in no set (see Notes).
    prior_method : {"em", "bbse", "bbse_soft"}, default="em"
        How the target priors are estimated from ``X_target``: EM of the
        target likelihood (needs calibrated probabilities), BBSE from the
        hard predictions' confusion matrix on the calibration data, or BBSE
        with soft predictions (see :class:`PriorShiftAdapter`).
    method : {"lac", "aps"}, default="lac"
        Nonconformity score, as in :class:`ConformalClassifier`.
    alpha : float in (0, 1), default=0.1
        Miscoverage level (:meth:`predict_set` takes others too).
    include_last_label : bool, default=True
        Non-randomised APS: whether a set includes the class whose
        cumulative score crosses the threshold (as in
        :class:`ConformalClassifier`).
    randomized : bool or "auto", default="auto"
        APS only: randomised scores (``"auto"``: True for APS unless
        ``include_last_label=False``, False for LAC), with the uniforms of
        :class:`ConformalClassifier`.
    include_top : bool, default=False
        Add the most probable class to every set.
    random_state : int, RandomState instance or None, default=None
        Seeds of the uniforms of randomised sets.
    score_type : {"auto", "logit", "probability"}, default="auto"
        What raw ``X`` holds; see :class:`~skcalib._base.BaseCalibrator`.
    response_method : {"auto", "decision_function", "predict_proba"}, default="auto"
        Wrapper mode: the method that gives scores.
    classes : array-like of shape (n_classes,), default=None
        Raw-score mode: the class of each score column; None: the sorted
        labels of ``y``. Every class needs calibration samples.
    max_iter : int, default=1000
        EM iterations (``prior_method="em"``).
    tol : float, default=1e-8
        EM stops when no prior changes by more than ``tol``.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels; the columns of :meth:`predict_set`.
    score_type_ : str
        What the scores were taken to be.
    source_priors_ : ndarray of shape (n_classes,)
        Weighted class frequencies of the calibration labels, ``q_s``.
    target_priors_ : ndarray of shape (n_classes,)
        The target priors in use (given or estimated), ``q_t``.
    weights_ : ndarray of shape (n_classes,)
        ``target_priors_ / source_priors_``.
    threshold_ : ndarray of shape (n_classes,)
        The threshold ``q_y`` of each class at ``alpha``; ``inf`` for a
        class whose weight dominates the calibration weights (full sets for
        it), ``-inf`` for a class of target prior 0 (never in a set).
    n_effective_ : float
        Kish's effective size ``(sum w)^2 / sum w^2`` of the calibration
        weights.
    n_iter_ : int
        EM iterations (0 when the priors are not estimated by EM).
    n_clipped_ : int
        BBSE: negative prior estimates set to 0.
    randomized_ : bool
        Whether the sets are randomised.
    n_features_in_ : int
        Number of columns of ``X`` seen at fit (2-D input).
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Names of the features seen at fit (when they are all strings).

    See Also
    --------
    ConformalClassifier : Split conformal without shift.
    CovariateShiftConformalClassifier : Conformal sets under covariate shift.
    PriorShiftAdapter : Probabilities adapted to new class priors.

    Notes
    -----
    **Threshold.** With calibration scores :math:`s_i` of labels
    :math:`Y_i` and weights :math:`v_i = c_i\\, w_{Y_i}` (:math:`c_i` the
    ``sample_weight``, 1 by default), :math:`W = \\sum_i v_i`, the
    threshold of class :math:`y` is the smallest :math:`s_{(k)}` with
    :math:`\\sum_{i : s_i \\le s_{(k)}} v_i \\ge (1 - \\alpha)(W + w_y)`,
    :math:`+\\infty` if none; i.e. the :math:`1 - \\alpha` quantile of
    :math:`\\sum_i v_i \\delta_{s_i} + w_y \\delta_{+\\infty}` (normalised).
    The scores are sorted once at fit; the thresholds of all classes and
    levels are one ``searchsorted`` of the cumulative weights. Equal
    weights (target priors equal to the source priors) give exactly the
    sets of :class:`ConformalClassifier`.

    **Full sets.** A class whose weight :math:`w_y` is large against the
    calibration weights (a class rare in the calibration data and frequent
    in the target) can get :math:`q_y = +\\infty`: it is then in every set.
    This is the method's answer (too few effective calibration samples for
    that class), not a failure.

    **Zero target priors.** A class with :math:`q_t(y) = 0` does not occur
    in the target, so leaving it out changes no coverage: its threshold is
    :math:`-\\infty` and it is in no set. With estimated priors (BBSE
    clips negative estimates to 0) a wrong zero loses that class's
    coverage: check ``target_priors_``.

    **Estimated priors.** The guarantee assumes the true ratios; with
    priors estimated from :math:`m` target rows the coverage error is of
    the order of the error of the ratios (Podkopaev & Ramdas 2021).

    References
    ----------
    .. [1] A. Podkopaev and A. Ramdas, "Distribution-free uncertainty
       quantification for classification under label shift", UAI 2021.
    .. [2] R. J. Tibshirani, R. F. Barber, E. J. Candès and A. Ramdas,
       "Conformal prediction under covariate shift", NeurIPS 2019.
    .. [3] M. Saerens, P. Latinne and C. Decaestecker, "Adjusting the
       Outputs of a Classifier to New a Priori Probabilities: A Simple
       Procedure", Neural Computation 14(1), 2002.
    .. [4] Z. C. Lipton, Y.-X. Wang and A. J. Smola, "Detecting and
       Correcting for Label Shift with Black Box Predictors", ICML 2018.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib import LabelShiftConformalClassifier
    >>> proba = np.array([[0.9, 0.1], [0.8, 0.2], [0.7, 0.3], [0.6, 0.4],
    ...                   [0.3, 0.7], [0.45, 0.55], [0.2, 0.8], [0.1, 0.9]])
    >>> y = np.array([0, 0, 0, 1, 1, 1, 1, 0])
    >>> cp = LabelShiftConformalClassifier(target_priors=[0.2, 0.8], alpha=0.3)
    >>> cp.fit(proba, y).weights_                     # source priors 1/2
    array([0.4, 1.6])
    >>> cp.threshold_     # 1 - p_y weighted .4 / 1.6, test weight w_y at inf
    array([0.45, 0.6 ])
    >>> cp.predict_set([[0.6, 0.4], [0.3, 0.7]])
    array([[ True,  True],
           [False,  True]])
    """

    _parameter_constraints: dict = {
        **_WeightedConformalBase._parameter_constraints,
        "target_priors": ["array-like", StrOptions({"uniform"}), None],
        "prior_method": [StrOptions({"em", "bbse", "bbse_soft"})],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="neither")],
    }

    def __init__(
        self,
        estimator=None,
        *,
        target_priors=None,
        prior_method="em",
        method="lac",
        alpha=0.1,
        include_last_label=True,
        randomized="auto",
        include_top=False,
        random_state=None,
        score_type="auto",
        response_method="auto",
        classes=None,
        max_iter=1000,
        tol=1e-8,
    ):
        self.estimator = estimator
        self.target_priors = target_priors
        self.prior_method = prior_method
        self.method = method
        self.alpha = alpha
        self.include_last_label = include_last_label
        self.randomized = randomized
        self.include_top = include_top
        self.random_state = random_state
        self.score_type = score_type
        self.response_method = response_method
        self.classes = classes
        self.max_iter = max_iter
        self.tol = tol

    def fit(self, X, y, sample_weight=None, X_target=None):
        """Fit the weighted conformal thresholds on calibration data.

        Parameters
        ----------
        X : array-like
            Calibration scores (raw-score mode) or features (wrapper mode).
        y : array-like of shape (n_samples,)
            True labels of the calibration rows.
        sample_weight : array-like of shape (n_samples,), default=None
            Repetition counts of the calibration rows (multiplied into the
            class weights; they also weigh the source priors).
        X_target : array-like, default=None
            Unlabelled target rows, read like ``X``: the target priors are
            estimated from them (``target_priors=None``).

        Returns
        -------
        self : object
            The fitted classifier.
        """
        return self._fit_with(X, y, sample_weight, {"X_target": X_target})

    # ---------------------------------------------------------------- fit
    def _calibration_weights(self, scores, proba, y, sample_weight):
        k = len(self.classes_)
        counts = np.bincount(
            y, weights=None if sample_weight is None else sample_weight, minlength=k
        )
        if np.any(counts <= 0):
            bad = self.classes_[np.flatnonzero(counts <= 0)].tolist()
            raise ValueError(
                f"classes {bad} have no calibration samples (zero total weight): "
                "their source prior is 0 and the ratio of priors of a label "
                "shift to them is undefined."
            )
        self.source_priors_ = counts / counts.sum()
        self.target_priors_ = self._target_priors(proba, y, sample_weight)
        self.weights_ = self.target_priors_ / self.source_priors_
        return self.weights_[y]

    def _target_priors(self, proba, y, sample_weight):
        self.n_iter_, self.n_clipped_ = 0, 0
        X_target = check_target_rows(self, self._fit_extra.get("X_target"))
        classes = self.classes_.tolist()
        if self.target_priors is not None:
            if X_target is not None:
                raise ValueError(
                    f"target_priors={self.target_priors!r} was given and so was "
                    "X_target; the priors would be estimated from X_target. Give "
                    "one of them (target_priors=None to estimate)."
                )
            if isinstance(self.target_priors, str):  # "uniform"
                return np.full(len(classes), 1.0 / len(classes))
            return check_priors(self.target_priors, classes)
        if X_target is None:
            raise ValueError(
                f"{type(self).__name__} with target_priors=None estimates the "
                "target priors from unlabelled target rows: pass "
                "fit(X, y, X_target=...), or give target_priors."
            )
        target = self._predict_proba(
            self._scores(*self._raw_scores(X_target, reset=False), reset=False)
        )
        target = np.asarray(target, dtype=np.float64)
        if self.prior_method == "em":
            priors, self.n_iter_, converged = em_priors(
                target, self.source_priors_, max_iter=self.max_iter, tol=self.tol
            )
            if not converged:
                warn_em_unconverged(type(self).__name__, self.max_iter, self.tol)
            return priors
        soft = self.prior_method == "bbse_soft"
        C = confusion(
            y, np.asarray(proba, np.float64), sample_weight, len(classes), soft=soft
        )
        priors, self.n_clipped_ = bbse_priors(C, target, self.source_priors_, soft=soft)
        return priors

    def _fit(self, scores, y, sample_weight):
        super()._fit(scores, y, sample_weight)
        self.threshold_ = self._class_thresholds(np.array([self.alpha]))[0]

    def _class_thresholds(self, alphas):
        """``(m, K)`` thresholds: the test weight of class ``y`` is ``w_y``;
        classes of target prior 0 get ``-inf`` (in no set)."""
        t = self._thresholds_at(alphas[:, None], self.weights_[None, :])
        return np.where(self.weights_[None, :] > 0, t, -np.inf)

    # ------------------------------------------------------------ predict
    def _sets(self, X, proba, u, alphas):
        if alphas.size == 1 and alphas[0] == self.alpha:
            thresholds = self.threshold_[None, :]
        else:
            thresholds = self._class_thresholds(alphas)
        return self._sets_per_class(proba, u, thresholds)

    @follows_input
    def predict_set(self, X, alpha=None):
        """Prediction sets under the target priors.

        Parameters
        ----------
        X : array-like
            Raw scores (raw-score mode) or features (wrapper mode).
        alpha : None, float in (0, 1) or array-like of shape (n_alpha,), \
                default=None
            Miscoverage level(s); ``None``: the fitted ``alpha``. A strictly
            increasing list gives nested sets at every level.

        Returns
        -------
        sets : ndarray of shape (n_samples, n_classes) or \
                (n_samples, n_classes, n_alpha), dtype=bool
            ``sets[i, k]`` is True when ``classes_[k]`` is in the set of
            sample ``i``; sizes are ``sets.sum(axis=1)``.
        """
        return self._predict_sets(X, alpha, ())
