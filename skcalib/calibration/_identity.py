"""No calibration, in the calibrator API: the reference every method is
compared with."""

import numpy as np

from skcalib._base import BaseCalibrator

__all__ = ["IdentityCalibrator"]


class IdentityCalibrator(BaseCalibrator):
    """No calibration: the model's own probabilities, in the calibrator API.

    ``predict_proba`` returns the probabilities the scores stand for: the
    rows of probability scores divided by their sums (they sum to 1 only
    within rounding), or the softmax of logits (a binary 1-D score ``s``
    gives ``(1 - sigmoid(s), sigmoid(s))``). ``fit`` learns nothing but
    ``classes_`` and ``score_type_``. It is the reference that
    :class:`AutoCalibrator` keeps unless a calibrator is clearly better, and
    a baseline for :func:`~sklearn.model_selection.cross_validate` or
    :class:`~sklearn.model_selection.GridSearchCV`.

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

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    score_type_ : str
        What the scores were taken to be.
    n_features_in_ : int
        Number of columns of ``X`` seen at fit (2-D input).

    See Also
    --------
    AutoCalibrator : chooses between this and real calibrators.

    Notes
    -----
    Array API: with ``array_api_dispatch=True``, raw scores of another
    namespace (torch, CuPy, ...) are computed on their device (only the
    validation's few scalars cross to the host); wrapper mode runs on the
    host, one transfer each way.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib import IdentityCalibrator
    >>> logits = np.array([[0.0, 1.0], [2.0, 0.0]])
    >>> IdentityCalibrator().fit(logits, [1, 0]).predict_proba(logits).round(3)
    array([[0.269, 0.731],
           [0.881, 0.119]])
    """

    _array_api_native = True

    def __init__(
        self,
        estimator=None,
        *,
        score_type="auto",
        response_method="auto",
        classes=None,
    ):
        self.estimator = estimator
        self.score_type = score_type
        self.response_method = response_method
        self.classes = classes

    def _fit(self, scores, y, sample_weight):
        pass

    def _predict_proba(self, scores):
        if scores.score_type != "probability":
            return np.exp(scores.log_proba)
        proba = np.array(scores.proba, copy=True)
        proba /= proba.sum(axis=1, keepdims=True)
        return proba

    def _fit_xp(self, scores, y, sample_weight):
        pass

    def _predict_proba_xp(self, scores):
        xp = scores.xp
        if scores.score_type != "probability":
            return xp.exp(scores.log_proba)
        proba = scores.proba
        return proba / xp.sum(proba, axis=1, keepdims=True)
