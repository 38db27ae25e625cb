"""Conformal prediction sets under covariate shift (Tibshirani, Barber,
Candès & Ramdas 2019): split conformal with the calibration scores weighted
by the likelihood ratio of the target to the calibration inputs."""

from numbers import Real

import numpy as np
from sklearn.base import clone
from sklearn.utils.validation import check_is_fitted

from skcalib._core.compat import HasMethods, Interval, StrOptions
from skcalib._core.xp.estimator import follows_input
from skcalib.conformal._quantile import check_alphas
from skcalib.conformal._weighted import (
    _WeightedConformalBase,
    check_target_rows,
    check_weights,
)

__all__ = ["CovariateShiftConformalClassifier"]


class CovariateShiftConformalClassifier(_WeightedConformalBase):
    """Conformal prediction sets that keep their coverage under covariate
    shift.

    Under *covariate shift* the inputs of the target data follow another
    distribution, ``p_t(x) != p_s(x)``, but the labels given the inputs do
    not, ``p_t(y | x) = p_s(y | x)``. If the model errs more where the
    target puts more mass, plain split conformal sets
    (:class:`ConformalClassifier`) under-cover. Weighting the calibration
    scores by the likelihood ratio ``w(x) = dP_t / dP_s (x)`` restores the
    guarantee (Tibshirani et al. 2019):

    .. math::

        \\mathbb{P}_t\\big(Y \\in C(X)\\big) \\ge 1 - \\alpha.

    The threshold of a test point ``x`` is the weighted ``1 - alpha``
    quantile of the calibration scores with weights ``w(X_i)``, the test
    point counted with its own weight ``w(x)`` at :math:`+\\infty`; it
    differs from point to point (see Notes). The likelihood ratio is

    * ``"classifier"`` (default): estimated by a domain classifier
      (``domain_classifier``, a ``LogisticRegression`` by default) trained
      at :meth:`fit` to tell the calibration rows ``X`` (label 0) from the
      unlabelled target rows ``X_target`` (label 1):
      ``w(x) = (n_cal / n_target) * P(target | x) / P(cal | x)``, its
      probabilities clipped to ``[proba_clip, 1 - proba_clip]`` so that no
      weight is 0 or infinite. The classifier is fitted once on all the
      calibration and target rows (no cross-fitting): the calibration
      weights are in-sample predictions, harmless for a low-capacity model
      such as the default but optimistic for a flexible one;
    * a callable: ``w = likelihood_ratio(X)``, applied to the calibration
      ``X`` at fit and to the test ``X`` in :meth:`predict_set`;
    * ``"given"``: the weights as arrays, ``calibration_weight`` to
      :meth:`fit` and ``test_weight`` to :meth:`predict_set`.

    The ratio is a function of what ``X`` holds: the features in wrapper
    mode (``estimator=``, the usual case: the shift is in the features),
    the scores in raw-score mode (valid when the shift acts through them;
    otherwise give the weights as arrays). **With an estimated ratio the
    guarantee holds only up to the estimation error** of the ratio.

    Parameters
    ----------
    estimator : classifier or None, default=None
        A prefit classifier (wrapper mode, never refit) or ``None`` (``X``
        holds scores).
    likelihood_ratio : "classifier", "given" or callable, default="classifier"
        Where the weights ``w(x)`` come from (see above). A callable takes
        ``X`` as :meth:`fit` and :meth:`predict_set` get it and returns one
        finite non-negative weight per row.
    domain_classifier : classifier or None, default=None
        ``likelihood_ratio="classifier"``: the (unfitted) classifier of
        calibration against target rows, cloned and fitted at :meth:`fit`;
        ``None``: ``LogisticRegression()``.
    proba_clip : float in (0, 0.5), default=1e-3
        The domain classifier's probability of the target is clipped to
        ``[proba_clip, 1 - proba_clip]``: weights stay within a factor
        ``((1 - proba_clip) / proba_clip)^2`` of each other.
    method : {"lac", "aps"}, default="lac"
        Nonconformity score, as in :class:`ConformalClassifier`.
    alpha : float in (0, 1), default=0.1
        Miscoverage level (:meth:`predict_set` takes others too).
    include_last_label : bool, default=True
        Non-randomised APS: as in :class:`ConformalClassifier`.
    randomized : bool or "auto", default="auto"
        APS only: randomised scores (``"auto"``: True for APS unless
        ``include_last_label=False``, False for LAC).
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
        labels of ``y``.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels; the columns of :meth:`predict_set`.
    score_type_ : str
        What the scores were taken to be.
    calibration_weights_ : ndarray of shape (n_samples,)
        The likelihood ratios ``w(X_i)`` of the calibration rows (before
        ``sample_weight``).
    domain_classifier_ : classifier or None
        The fitted domain classifier (``likelihood_ratio="classifier"``).
    n_effective_ : float
        Kish's effective size ``(sum w)^2 / sum w^2`` of the calibration
        weights.
    randomized_ : bool
        Whether the sets are randomised.
    n_features_in_ : int
        Number of columns of ``X`` seen at fit (2-D input).
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Names of the features seen at fit (when they are all strings).

    See Also
    --------
    ConformalClassifier : Split conformal without shift.
    LabelShiftConformalClassifier : Conformal sets under label shift.

    Notes
    -----
    **Threshold.** With calibration scores :math:`s_i`, weights :math:`v_i
    = c_i\\, w(X_i)` (:math:`c_i` the ``sample_weight``, 1 by default) and
    :math:`W = \\sum_i v_i`, the threshold of a test point :math:`x` is the
    smallest :math:`s_{(k)}` with :math:`\\sum_{i : s_i \\le s_{(k)}} v_i
    \\ge (1 - \\alpha)(W + w(x))`, :math:`+\\infty` if none: the
    :math:`1 - \\alpha` quantile of :math:`\\sum_i v_i \\delta_{s_i} +
    w(x) \\delta_{+\\infty}` (normalised). The scores are sorted once at
    fit; the thresholds of all test rows are one ``searchsorted`` of the
    cumulative weights. The weights need only be known up to a common
    factor. Equal weights give exactly the sets of
    :class:`ConformalClassifier`.

    **Full sets.** A test point whose weight is large against the
    calibration weights (a region the calibration data barely cover) gets
    the threshold :math:`+\\infty` and a set of every class. This is the
    method's answer (too few effective calibration samples), not a
    failure.

    References
    ----------
    .. [1] R. J. Tibshirani, R. F. Barber, E. J. Candès and A. Ramdas,
       "Conformal prediction under covariate shift", NeurIPS 2019.
    .. [2] A. Podkopaev and A. Ramdas, "Distribution-free uncertainty
       quantification for classification under label shift", UAI 2021.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib import CovariateShiftConformalClassifier
    >>> proba = np.array([[0.9, 0.1], [0.8, 0.2], [0.7, 0.3], [0.6, 0.4],
    ...                   [0.3, 0.7], [0.45, 0.55], [0.2, 0.8], [0.1, 0.9]])
    >>> y = np.array([0, 0, 0, 1, 1, 1, 1, 0])
    >>> w_cal = np.array([1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.2])
    >>> cp = CovariateShiftConformalClassifier(likelihood_ratio="given",
    ...                                        alpha=0.3)
    >>> cp = cp.fit(proba, y, calibration_weight=w_cal)
    >>> test = [[0.35, 0.65], [0.35, 0.65]]
    >>> cp.predict_set(test, test_weight=[0.2, 5.0])     # thresholds .45, inf
    array([[False,  True],
           [ True,  True]])
    """

    _parameter_constraints: dict = {
        **_WeightedConformalBase._parameter_constraints,
        "likelihood_ratio": [StrOptions({"classifier", "given"}), callable],
        "domain_classifier": [HasMethods(["fit", "predict_proba"]), None],
        "proba_clip": [Interval(Real, 0, 0.5, closed="neither")],
    }

    def __init__(
        self,
        estimator=None,
        *,
        likelihood_ratio="classifier",
        domain_classifier=None,
        proba_clip=1e-3,
        method="lac",
        alpha=0.1,
        include_last_label=True,
        randomized="auto",
        include_top=False,
        random_state=None,
        score_type="auto",
        response_method="auto",
        classes=None,
    ):
        self.estimator = estimator
        self.likelihood_ratio = likelihood_ratio
        self.domain_classifier = domain_classifier
        self.proba_clip = proba_clip
        self.method = method
        self.alpha = alpha
        self.include_last_label = include_last_label
        self.randomized = randomized
        self.include_top = include_top
        self.random_state = random_state
        self.score_type = score_type
        self.response_method = response_method
        self.classes = classes

    def fit(self, X, y, sample_weight=None, X_target=None, calibration_weight=None):
        """Fit the calibration scores and their likelihood-ratio weights.

        Parameters
        ----------
        X : array-like
            Calibration scores (raw-score mode) or features (wrapper mode).
        y : array-like of shape (n_samples,)
            True labels of the calibration rows.
        sample_weight : array-like of shape (n_samples,), default=None
            Repetition counts of the calibration rows, multiplied into the
            likelihood-ratio weights.
        X_target : array-like, default=None
            ``likelihood_ratio="classifier"``: unlabelled target rows, read
            like ``X``, for the domain classifier (required then).
        calibration_weight : array-like of shape (n_samples,), default=None
            ``likelihood_ratio="given"``: the likelihood ratio of each
            calibration row (required then).

        Returns
        -------
        self : object
            The fitted classifier.
        """
        extra = {"X": X, "X_target": X_target, "calibration_weight": calibration_weight}
        return self._fit_with(X, y, sample_weight, extra)

    # ---------------------------------------------------------------- fit
    def _calibration_weights(self, scores, proba, y, sample_weight):
        X = self._fit_extra["X"]
        X_target = self._fit_extra.get("X_target")
        given = self._fit_extra.get("calibration_weight")
        self.domain_classifier_ = None
        self._check_extra(X_target, given)
        if self.likelihood_ratio == "given":
            w = check_weights(given, y.size, "calibration_weight")
        elif callable(self.likelihood_ratio):
            ratio = self.likelihood_ratio(self._ratio_input(X, scores))
            w = check_weights(ratio, y.size, "w(X)")
        else:
            X_target = check_target_rows(self, X_target)
            if self.estimator is None:  # scores, validated like X
                X_target = self._raw_scores(X_target, reset=False)[0]
            w = self._fit_domain_classifier(self._ratio_input(X, scores), X_target)
        self.calibration_weights_ = w
        return w

    def _check_extra(self, X_target, given):
        mode = self.likelihood_ratio
        if mode == "given" and given is None:
            raise ValueError(
                "likelihood_ratio='given' needs the calibration weights: pass "
                "fit(X, y, calibration_weight=...)."
            )
        if mode != "given" and given is not None:
            raise ValueError(
                f"calibration_weight is for likelihood_ratio='given', got "
                f"likelihood_ratio={mode!r}."
            )
        if mode == "classifier" and X_target is None:
            raise ValueError(
                "likelihood_ratio='classifier' estimates the likelihood ratio "
                "from unlabelled target rows: pass fit(X, y, X_target=...), or "
                "give the ratio (a callable, or 'given' arrays)."
            )
        if mode != "classifier" and X_target is not None:
            raise ValueError(
                f"X_target is for likelihood_ratio='classifier', got "
                f"likelihood_ratio={mode!r}."
            )

    def _domain_features(self, X):
        X = np.asarray(X)
        return X[:, None] if X.ndim == 1 else X

    def _fit_domain_classifier(self, X, X_target):
        model = self.domain_classifier
        if model is None:
            from sklearn.linear_model import LogisticRegression

            model = LogisticRegression()
        model = clone(model)
        cal = self._domain_features(X)
        target = self._domain_features(X_target)
        features = np.concatenate([cal, target])
        labels = np.r_[np.zeros(cal.shape[0]), np.ones(target.shape[0])].astype(int)
        self.domain_classifier_ = model.fit(features, labels)
        self._size_ratio = cal.shape[0] / target.shape[0]
        return self._domain_ratio(cal)

    def _domain_ratio(self, X):
        """``(n_cal / n_target) * P(target | x) / P(cal | x)``, the
        probability clipped to ``[proba_clip, 1 - proba_clip]``."""
        proba = np.asarray(self.domain_classifier_.predict_proba(X))
        column = list(self.domain_classifier_.classes_).index(1)
        p = np.clip(proba[:, column], self.proba_clip, 1.0 - self.proba_clip)
        return self._size_ratio * p / (1.0 - p)

    # ------------------------------------------------------------ predict
    def _test_weights(self, X, n, test_weight):
        mode = self.likelihood_ratio
        if mode == "given":
            if test_weight is None:
                raise ValueError(
                    "likelihood_ratio='given' needs the test weights: pass "
                    "predict_set(X, test_weight=...)."
                )
            return check_weights(test_weight, n, "test_weight")
        if test_weight is not None:
            raise ValueError(
                f"test_weight is for likelihood_ratio='given', got "
                f"likelihood_ratio={mode!r}: the weights come from it."
            )
        if callable(mode):
            return check_weights(mode(X), n, "w(X)")
        return self._domain_ratio(self._domain_features(X))

    def _sets(self, X, proba, u, alphas, test_weight):
        w = self._test_weights(X, proba.shape[0], test_weight)
        thresholds = self._thresholds_at(alphas[None, :], w[:, None])
        return self._sets_per_row(proba, u, thresholds)

    @follows_input
    def predict_set(self, X, alpha=None, test_weight=None):
        """Prediction sets with each test row's own weighted threshold.

        Parameters
        ----------
        X : array-like
            Raw scores (raw-score mode) or features (wrapper mode).
        alpha : None, float in (0, 1) or array-like of shape (n_alpha,), \
                default=None
            Miscoverage level(s); ``None``: the fitted ``alpha``.
        test_weight : array-like of shape (n_samples,), default=None
            ``likelihood_ratio="given"``: the likelihood ratio of each test
            row (required then, an error otherwise).

        Returns
        -------
        sets : ndarray of shape (n_samples, n_classes) or \
                (n_samples, n_classes, n_alpha), dtype=bool
            ``sets[i, k]`` is True when ``classes_[k]`` is in the set of
            sample ``i``.
        """
        check_is_fitted(self)
        return self._predict_sets(X, alpha, (test_weight,))

    def predict_threshold(self, X, alpha=None, test_weight=None):
        """The weighted conformal threshold of each test row.

        Parameters
        ----------
        X, alpha, test_weight
            As in :meth:`predict_set` (``alpha`` one level).

        Returns
        -------
        threshold : ndarray of shape (n_samples,)
            ``inf`` where the row's weight leaves too few effective
            calibration samples (its set holds every class).
        """
        check_is_fitted(self)
        alphas, _ = check_alphas(self.alpha if alpha is None else alpha)
        if alphas.size != 1:
            raise ValueError(f"predict_threshold takes one alpha, got {alpha!r}.")
        scores, proba, _ = self._set_inputs(X)
        w = self._test_weights(
            self._ratio_input(X, scores), proba.shape[0], test_weight
        )
        return self._thresholds_at(alphas, w[:, None])[:, 0]
