"""The optional calibrator of a split-conformal classifier: fitted on the
calibration scores before the threshold, applied before every set."""

import numpy as np
from sklearn.base import clone

from skcalib._base import BaseCalibrator

__all__ = []  # private module


def calibrator_input(calibrator, raw):
    """The scores as ``calibrator`` takes them: plain classifiers want 2-D
    features, skcalib calibrators take 1-D binary scores as they are."""
    if raw.ndim == 1 and not isinstance(calibrator, BaseCalibrator):
        return raw[:, None]
    return raw


def fit_set_calibrator(calibrator, raw, y, sample_weight, score_type, classes):
    """A clone of ``calibrator`` fitted on the raw scores and the encoded
    labels ``y`` (``None`` when ``calibrator`` is ``None``).

    A skcalib calibrator gets the conformal classifier's ``score_type_`` and
    ``classes=range(K)``, so a class absent from ``y`` keeps its column; any
    other calibrator needs calibration samples of every class."""
    if calibrator is None:
        return None
    calibrator = clone(calibrator)
    params = calibrator.get_params(deep=False)
    if params.get("estimator") is not None:
        raise ValueError(
            "calibrator must work on scores (its estimator must be None); "
            "pass the classifier as ConformalClassifier(estimator=...), got "
            f"calibrator estimator={params['estimator']!r}."
        )
    if "score_type" in params:
        calibrator.set_params(score_type=score_type)
    if "classes" in params:
        calibrator.set_params(classes=np.arange(len(classes)))
    missing = np.setdiff1d(np.arange(len(classes)), y)
    if missing.size and "classes" not in params:
        raise ValueError(
            f"calibrator needs calibration samples of every class; classes "
            f"{classes[missing].tolist()} have none."
        )
    fit_params = {} if sample_weight is None else {"sample_weight": sample_weight}
    return calibrator.fit(calibrator_input(calibrator, raw), y, **fit_params)
