"""The Bayes-decision meta-estimator: calibrated probabilities in, actions out."""

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin, clone
from sklearn.utils import get_tags
from sklearn.utils.validation import check_is_fitted

from skcalib._core.compat import HasMethods, _fit_context
from skcalib._core.xp import namespace, to_numpy
from skcalib._core.xp.estimator import follows_input, move_fitted_attributes
from skcalib.calibration import IdentityCalibrator
from skcalib.decision._bayes import bayes_decisions
from skcalib.decision._costs import (
    check_abstain_label,
    check_cost_matrix,
    zero_one_cost,
)

__all__ = ["BayesDecisionClassifier"]


class BayesDecisionClassifier(ClassifierMixin, MetaEstimatorMixin, BaseEstimator):
    """Predict the action of least expected cost from a classifier's probabilities.

    ``fit`` fits a clone of ``estimator`` (typically a skcalib calibrator,
    fitted on calibration data); ``predict`` returns, for each sample, the
    action ``a`` that minimises the expected cost
    ``sum_k p_k cost_matrix[k, a]`` under the estimator's probabilities
    ``p`` (:func:`~skcalib.decision.bayes_decisions`): a class label, or
    ``abstain_label`` when the cost matrix has an abstain column.
    :meth:`predict_proba` returns the estimator's probabilities unchanged.
    The decisions are Bayes-optimal when the probabilities are calibrated.

    Parameters
    ----------
    estimator : estimator or None, default=None
        A classifier with ``fit`` and ``predict_proba``, cloned and fitted by
        :meth:`fit`: a skcalib calibrator (wrapping a prefit model, which it
        never refits, or in raw-score mode), a
        :class:`~skcalib.CalibratedClassifier`, or any scikit-learn
        classifier. To use a prefit scikit-learn classifier as it is, wrap
        it in :class:`sklearn.frozen.FrozenEstimator`. ``None`` means
        ``IdentityCalibrator()``: ``X`` holds probabilities
        (or logits) already, e.g. the output of a calibrator in the step
        before this one of a :class:`~sklearn.pipeline.Pipeline`.
    cost_matrix : array-like of shape (n_classes, n_classes) or \
(n_classes, n_classes + 1), default=None
        ``cost_matrix[k, a]``: the cost of action ``a`` on a sample of true
        class ``classes_[k]``. Rows are true classes, as in
        :func:`sklearn.metrics.confusion_matrix`; column ``a < n_classes``
        predicts ``classes_[a]``, an extra last column abstains. ``None``
        means the 0-1 cost ``1 - I`` (``predict`` is then the argmax, as for
        any classifier).
    abstain_label : object, default=-1
        What :meth:`predict` returns for a sample on which abstaining costs
        least; it must not be a class label. Of another kind than the
        classes (e.g. ``-1`` with string classes), the predictions are of
        object dtype.

    Attributes
    ----------
    estimator_ : estimator
        The fitted clone of ``estimator``.
    classes_ : ndarray of shape (n_classes,)
        ``estimator_.classes_``: the rows of ``cost_matrix_``.
    cost_matrix_ : ndarray of shape (n_classes, n_classes) or \
(n_classes, n_classes + 1)
        The validated costs, float64.
    n_features_in_ : int
        Number of features seen at fit (when ``estimator_`` has it).
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Names of the features seen at fit (when ``estimator_`` has them).

    See Also
    --------
    skcalib.decision.bayes_decisions : the decision rule, on probabilities.
    skcalib.decision.expected_cost : the mean cost of decisions.
    sklearn.model_selection.TunedThresholdClassifierCV : binary only; tunes
        a threshold on data instead of deriving it from calibrated
        probabilities.

    Notes
    -----
    For two classes and a 2x2 cost matrix the rule is a threshold on the
    probability of ``classes_[1]``: predict it when

    .. math::

        p_1 > p^* = \\frac{C_{01} - C_{00}}{(C_{01} - C_{00}) + (C_{10} - C_{11})},

    which is what :class:`~sklearn.model_selection.FixedThresholdClassifier`
    does with ``threshold=p*`` (except at ``p_1 = p*`` exactly: the tie goes
    to ``classes_[0]`` here, to ``classes_[1]`` there).
    :class:`~sklearn.model_selection.TunedThresholdClassifierCV` with the
    negated :func:`~skcalib.decision.expected_cost` as its scorer searches
    the threshold that minimises the cost on data instead; on calibrated
    probabilities that threshold approaches ``p*`` as the data grow. The
    two differ when the probabilities are not calibrated (the tuned
    threshold corrects a miscalibration that is monotone, the Bayes rule
    does not), when the data are few (the tuned threshold is noisy: the
    cost is flat near its minimum), and for more than two classes or an
    abstain option, which a single threshold cannot express.

    ``sample_weight`` is passed to ``estimator``'s ``fit``.

    References
    ----------
    .. [1] C. Elkan, "The foundations of cost-sensitive learning", IJCAI 2001.
    .. [2] C. K. Chow, "On optimum recognition error and reject tradeoff",
       IEEE Transactions on Information Theory 16(1), 1970.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.linear_model import LogisticRegression
    >>> from skcalib import BayesDecisionClassifier, TemperatureCalibrator
    >>> X, y = make_classification(3000, n_classes=3, n_informative=4,
    ...                            random_state=0)
    >>> clf = LogisticRegression().fit(X[:1000], y[:1000])
    >>> cost = np.array([[0.0, 1.0, 1.0, 0.3],
    ...                  [1.0, 0.0, 1.0, 0.3],
    ...                  [5.0, 5.0, 0.0, 0.3]])  # missing class 2 costs 5
    >>> model = BayesDecisionClassifier(
    ...     TemperatureCalibrator(estimator=clf), cost_matrix=cost
    ... ).fit(X[1000:2000], y[1000:2000])
    >>> decisions = model.predict(X[2000:])
    >>> sorted(set(decisions.tolist()))
    [-1, 0, 1, 2]
    """

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["fit", "predict_proba"]), None],
        "cost_matrix": ["array-like", None],
        "abstain_label": "no_validation",
    }

    def __init__(self, estimator=None, cost_matrix=None, *, abstain_label=-1):
        self.estimator = estimator
        self.cost_matrix = cost_matrix
        self.abstain_label = abstain_label

    def _get_estimator(self):
        return IdentityCalibrator() if self.estimator is None else self.estimator

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y, sample_weight=None, **fit_params):
        """Fit a clone of the estimator and check the costs against its classes.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            What ``estimator`` takes (with ``estimator=None``: probabilities
            or logits, one column per class).
        y : array-like of shape (n_samples,)
            Labels.
        sample_weight : array-like of shape (n_samples,), default=None
            Passed to the estimator's ``fit`` (when not None).
        **fit_params : dict
            Other parameters of the estimator's ``fit``.

        Returns
        -------
        self : object
            The fitted meta-estimator.
        """
        if sample_weight is not None:
            fit_params["sample_weight"] = sample_weight
        estimator = clone(self._get_estimator()).fit(X, y, **fit_params)
        classes = np.asarray(to_numpy(estimator.classes_))
        if self.cost_matrix is None:
            cost, abstain = zero_one_cost(classes.size), False
        else:
            cost, abstain = check_cost_matrix(self.cost_matrix, classes.size)
        if abstain:
            check_abstain_label(self.abstain_label, classes)
        self.estimator_ = estimator
        self.classes_ = classes
        self.cost_matrix_ = cost
        for name in ("n_features_in_", "feature_names_in_"):
            if hasattr(estimator, name):
                setattr(self, name, getattr(estimator, name))
        if (ns := namespace(X)) is not None:  # arrays follow X (array API)
            move_fitted_attributes(self, ns)
        return self

    @follows_input
    def predict_proba(self, X):
        """Return the estimator's class probabilities.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            What ``estimator`` takes.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            ``estimator_.predict_proba(X)``, columns in the order of
            ``classes_``.
        """
        check_is_fitted(self)
        return self.estimator_.predict_proba(X)

    @follows_input
    def predict(self, X):
        """Return the action of least expected cost of each sample.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            What ``estimator`` takes.

        Returns
        -------
        decisions : ndarray of shape (n_samples,)
            A label of ``classes_`` or ``abstain_label`` per sample; ties go
            to the lowest column of ``cost_matrix_`` (a class rather than
            abstaining, the first class in ``classes_`` among classes).
        """
        proba = self.predict_proba(X)
        return bayes_decisions(
            proba,
            self.cost_matrix_,
            labels=self.classes_,
            abstain_label=self.abstain_label,
        )

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        inner = get_tags(self._get_estimator()).input_tags
        tags.input_tags.sparse = inner.sparse
        tags.input_tags.allow_nan = inner.allow_nan
        tags.input_tags.string = inner.string
        tags.input_tags.categorical = inner.categorical
        return tags
