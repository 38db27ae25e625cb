"""Prior (label) shift adaptation: re-weight calibrated probabilities to the
class priors of the data they are used on."""

from numbers import Integral, Real

import numpy as np
from sklearn.utils.validation import check_is_fitted

from skcalib._base import BaseCalibrator
from skcalib._core.compat import Interval, StrOptions, _fit_context
from skcalib._core.prior_estimation import (
    bbse_priors,
    check_priors,
    confusion,
    em_priors,
    warn_em_unconverged,
)
from skcalib._core.scores import log_softmax
from skcalib._core.weights import _checked_weights

__all__ = ["PriorShiftAdapter"]


class PriorShiftAdapter(BaseCalibrator):
    """Adapt calibrated probabilities to new class priors (label shift).

    Under label shift the class-conditional distributions ``p(x | y)`` are
    the same on the source (calibration) data and on the target data; only
    the class priors change, from ``pi_s`` to ``pi_t``. Bayes' rule then
    gives the target posteriors from the source-calibrated ones:

    .. math::

        p_t(y = k \\mid x) = \\frac{w_k\\, p_s(k \\mid x)}
        {\\sum_j w_j\\, p_s(j \\mid x)}, \\qquad w_k = \\frac{\\pi_{t,k}}
        {\\pi_{s,k}}.

    :meth:`fit` learns ``pi_s`` (the weighted label frequencies of the
    source) and the source confusion matrix; the target priors are either
    given (``target_priors``) or estimated from *unlabelled* target data by
    :meth:`fit_target`, with ``method``:

    * ``"em"``: the EM of Saerens et al. (2002), the maximum-likelihood
      priors of the target rows (see Notes);
    * ``"bbse"``: black-box shift estimation (Lipton et al. 2018) from the
      hard (argmax) predictions: ``w = C^{-1} mu``, with ``C`` the joint
      source confusion matrix and ``mu`` the target frequencies of the
      predicted classes;
    * ``"bbse_soft"``: the same with the probabilities as soft predictions.

    Until the target priors are given or estimated they are the source
    priors, and the adapter returns the source probabilities unchanged.
    Estimation happens in :meth:`fit_target` only, never in
    :meth:`transform`: a row's adapted probabilities do not depend on the
    other rows of the batch they come with.

    ``X`` holds the source-calibrated scores: probabilities (the output of
    any calibrator), or logits (their softmax is used); in wrapper mode
    (``estimator=``) a prefit, calibrated model gives them from features,
    as in every skcalib calibrator. After a calibrator in a
    :class:`~sklearn.pipeline.Pipeline`, give the target rows to
    :meth:`fit_target` through the earlier steps:
    ``pipe[-1].fit_target(pipe[:-1].transform(X_target))``.

    EM assumes that ``p_s(y | x)`` is calibrated on the source and that its
    mean over the source equals ``pi_s``; bias-corrected temperature scaling
    (:class:`BiasCorrectedTemperatureCalibrator`) and vector scaling give
    exactly that on their calibration data (Alexandari et al. 2020).

    Parameters
    ----------
    estimator : classifier or None, default=None
        A prefit, calibrated classifier (wrapper mode) or ``None`` (``X``
        holds the scores).
    target_priors : array-like of shape (n_classes,) or None, default=None
        The target class priors, in the order of ``classes_``: non-negative,
        summing to 1 (within 1e-6). ``None``: estimated by :meth:`fit_target`
        (the source priors until then).
    method : {"em", "bbse", "bbse_soft"}, default="em"
        How :meth:`fit_target` estimates the target priors.
    score_type : {"auto", "logit", "probability"}, default="auto"
        What raw ``X`` holds; see :class:`~skcalib._base.BaseCalibrator`.
        Probabilities whose rows do not sum to 1 are an error.
    response_method : {"auto", "decision_function", "predict_proba"}, default="auto"
        Wrapper mode: the method that gives scores.
    classes : array-like of shape (n_classes,), default=None
        Raw-score mode: the class of each score column, so that ``y`` may
        miss classes (:ref:`absent_classes`); None: the sorted labels of ``y``.
    max_iter : int, default=1000
        EM iterations.
    tol : float, default=1e-8
        EM stops when no prior changes by more than ``tol`` in an iteration.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    score_type_ : str
        What the scores were taken to be.
    source_priors_ : ndarray of shape (n_classes,)
        Weighted class frequencies of the source labels.
    confusion_matrix_ : ndarray of shape (n_classes, n_classes)
        Joint source confusion ``P_s(y = i, yhat = j)`` (rows true classes,
        columns predicted; total 1); with soft predictions (the expected
        confusion) for ``method="bbse_soft"``.
    target_priors_ : ndarray of shape (n_classes,)
        The target priors in use: given, estimated, or the source priors.
    weights_ : ndarray of shape (n_classes,)
        ``target_priors_ / source_priors_``.
    n_iter_ : int
        EM iterations of the last :meth:`fit_target` (0 before, and for
        BBSE).
    n_clipped_ : int
        BBSE: negative prior estimates set to 0 by the last
        :meth:`fit_target` (0 for EM and before).
    n_features_in_ : int
        Number of columns of ``X`` seen at fit (2-D input).

    See Also
    --------
    BiasCorrectedTemperatureCalibrator : the calibration EM works best after.

    Notes
    -----
    EM: from ``pi = pi_s``, the E step re-weights the source posteriors of
    the target rows to the current priors,
    ``q_ik = (pi_k / pi_s,k) p_ik / sum_j (pi_j / pi_s,j) p_ij``, the M step
    sets ``pi_k`` to the (weighted) mean of ``q_ik``. Each step raises the
    target log-likelihood ``sum_i log sum_k (pi_k / pi_s,k) p_ik``, which is
    concave in ``pi``; the fixed point is its maximum (the mean of the
    adapted probabilities equals ``target_priors_``). Convergence is
    linear, slow when the classes overlap.

    BBSE: ``P_t(yhat = j) = sum_i C[i, j] w_i`` under label shift; the
    least-squares solution of ``C^T w = mu`` can have negative entries from
    sampling noise (rare classes, small target sets): ``w * pi_s`` is
    clipped at 0 and renormalised to sum 1 (``n_clipped_`` counts the
    clipped entries). A singular ``C`` (a class never predicted) gives the
    minimum-norm solution and a warning. BBSE needs ``p_s`` to be neither
    calibrated nor accurate, only its confusion matrix invertible; EM is
    more accurate when ``p_s`` is calibrated.

    A class with zero total weight in the source labels has no source
    prior to divide by: :meth:`fit` refuses it.

    References
    ----------
    .. [1] M. Saerens, P. Latinne and C. Decaestecker, "Adjusting the
       Outputs of a Classifier to New a Priori Probabilities: A Simple
       Procedure", Neural Computation 14(1), 2002.
    .. [2] Z. C. Lipton, Y.-X. Wang and A. J. Smola, "Detecting and
       Correcting for Label Shift with Black Box Predictors", ICML 2018.
    .. [3] A. Alexandari, A. Kundaje and A. Shrikumar, "Maximum Likelihood
       with Bias-Corrected Calibration is Hard-To-Beat at Label Shift
       Adaptation", ICML 2020.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib import PriorShiftAdapter
    >>> proba = np.array([[0.7, 0.3], [0.4, 0.6], [0.2, 0.8], [0.9, 0.1]])
    >>> y = [0, 1, 1, 0]                                  # source priors 1/2
    >>> adapter = PriorShiftAdapter(target_priors=[0.2, 0.8]).fit(proba, y)
    >>> adapter.predict_proba(proba[:1]).round(3)         # 0.7 / 4 vs 0.3
    array([[0.368, 0.632]])
    >>> target = np.array([[0.9, 0.1], [0.2, 0.8], [0.3, 0.7], [0.1, 0.9]])
    >>> em = PriorShiftAdapter(method="em").fit(proba, y).fit_target(target)
    >>> em.target_priors_.round(3)                        # unlabelled target
    array([0.243, 0.757])
    >>> em.predict_proba(target).mean(axis=0).round(3)   # EM's fixed point
    array([0.243, 0.757])
    """

    _parameter_constraints: dict = {
        **BaseCalibrator._parameter_constraints,
        "target_priors": ["array-like", None],
        "method": [StrOptions({"em", "bbse", "bbse_soft"})],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="neither")],
    }

    def __init__(
        self,
        estimator=None,
        *,
        target_priors=None,
        method="em",
        score_type="auto",
        response_method="auto",
        classes=None,
        max_iter=1000,
        tol=1e-8,
    ):
        self.estimator = estimator
        self.target_priors = target_priors
        self.method = method
        self.score_type = score_type
        self.response_method = response_method
        self.classes = classes
        self.max_iter = max_iter
        self.tol = tol

    # ------------------------------------------------------------------ fit
    def _fit(self, scores, y, sample_weight):
        k = len(self.classes_)
        w = np.ones(y.shape[0]) if sample_weight is None else sample_weight
        counts = np.bincount(y, weights=w, minlength=k)
        if np.any(counts <= 0):
            bad = int(np.flatnonzero(counts <= 0)[0])
            raise ValueError(
                f"class {self.classes_[bad]!r} has zero total weight in the "
                "source labels: its source prior is 0, and a prior shift to or "
                "from it is undefined."
            )
        self.source_priors_ = counts / counts.sum()
        self.confusion_matrix_ = confusion(
            y, _proba(scores), w, k, soft=self.method == "bbse_soft"
        )
        if self.target_priors is None:
            target = self.source_priors_.copy()
        else:
            target = check_priors(self.target_priors, self.classes_.tolist())
        self._set_target(target, n_iter=0, n_clipped=0)

    def _set_target(self, priors, *, n_iter, n_clipped):
        self.target_priors_ = priors
        self.weights_ = priors / self.source_priors_
        self.n_iter_ = int(n_iter)
        self.n_clipped_ = int(n_clipped)

    @_fit_context(prefer_skip_nested_validation=False)
    def fit_target(self, X, sample_weight=None):
        """Estimate the target priors from unlabelled target data.

        Parameters
        ----------
        X : array-like
            The target rows, as :meth:`fit` takes ``X`` (scores in
            raw-score mode, features in wrapper mode), one column per class.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights of the target rows.

        Returns
        -------
        self : object
            The adapter, with ``target_priors_``, ``weights_``, ``n_iter_``
            and ``n_clipped_`` set from ``X``.
        """
        check_is_fitted(self)
        name = type(self).__name__
        if self.target_priors is not None:
            raise ValueError(
                f"{name} was given target_priors={self.target_priors!r}; "
                "fit_target would replace them. Use target_priors=None to "
                "estimate the target priors from data."
            )
        proba = _proba(self._scores(*self._raw_scores(X, reset=False), reset=False))
        if sample_weight is not None:
            sample_weight = _checked_weights(sample_weight, np.empty(proba.shape[0]))
        if self.method == "em":
            priors, n_iter, converged = em_priors(
                proba,
                self.source_priors_,
                sample_weight,
                max_iter=self.max_iter,
                tol=self.tol,
            )
            if not converged:
                warn_em_unconverged(name, self.max_iter, self.tol)
            self._set_target(priors, n_iter=n_iter, n_clipped=0)
        else:
            priors, n_clipped = bbse_priors(
                self.confusion_matrix_,
                proba,
                self.source_priors_,
                sample_weight,
                soft=self.method == "bbse_soft",
            )
            self._set_target(priors, n_iter=0, n_clipped=n_clipped)
        return self

    # -------------------------------------------------------------- predict
    def _predict_proba(self, scores):
        log_p = scores.log_proba
        with np.errstate(divide="ignore"):
            shift = np.log(self.weights_).astype(log_p.dtype)
        out = log_softmax(log_p + shift)
        return np.exp(out, out=out)


def _proba(scores):
    """Probabilities (n, K) of validated :class:`~skcalib._core.scores.Scores`,
    rows summing to 1."""
    if scores.score_type != "probability":
        return np.exp(scores.log_proba)
    proba = np.asarray(scores.proba, dtype=np.float64)
    return proba / proba.sum(axis=1, keepdims=True)
