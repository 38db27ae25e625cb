"""
============================================
Calibrate an unfitted model by cross-fitting
============================================

When there is no separate calibration set, the classifier and its
calibrator must share the training data. Calibrating on the scores the
classifier gives its *own* training samples would fit the calibrator to
scores that are too good to be true. :class:`~skcalib.CalibratedClassifier`
cross-fits instead: the classifier is trained on the training part of each
split, and any skcalib calibrator is fitted on the scores it gives the
held-out part.

Gaussian naive Bayes on correlated features is the patient again: it counts
the same evidence several times and is far too sure of itself.
"""

# %%
# Data and the uncalibrated model
# -------------------------------
# Three classes; half of the 16 features are linear combinations of the
# informative ones, which naive Bayes takes for independent evidence.
import time

import matplotlib.pyplot as plt
import numpy as np
from sklearn.calibration import CalibratedClassifierCV
from sklearn.datasets import make_classification
from sklearn.model_selection import train_test_split
from sklearn.naive_bayes import GaussianNB

from skcalib import (
    AutoCalibrator,
    CalibratedClassifier,
    IsotonicCalibrator,
    TemperatureCalibrator,
)
from skcalib.metrics import (
    brier_score,
    expected_calibration_error,
    negative_log_likelihood,
)
from skcalib.plotting import ReliabilityDisplay

X, y = make_classification(
    n_samples=20_000,
    n_features=16,
    n_informative=5,
    n_redundant=8,
    n_classes=3,
    random_state=0,
)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.5, random_state=0)

# %%
# Cross-fitted calibrators
# ------------------------
# ``CalibratedClassifier(estimator, calibrator, cv=5)`` takes an *unfitted*
# classifier and any calibrator in raw-score mode. With ``ensemble=True``
# (the default) it keeps one (classifier, calibrator) pair per split and
# averages their probabilities, as scikit-learn's
# :class:`~sklearn.calibration.CalibratedClassifierCV` does; that one is in
# the table too, with isotonic calibration.
models = {
    "GaussianNB": GaussianNB(),
    "sklearn isotonic": CalibratedClassifierCV(GaussianNB(), method="isotonic"),
    "+ temperature": CalibratedClassifier(GaussianNB(), TemperatureCalibrator()),
    "+ isotonic": CalibratedClassifier(GaussianNB(), IsotonicCalibrator()),
    "+ AutoCalibrator": CalibratedClassifier(GaussianNB(), AutoCalibrator()),
}
print(f"{'':<18}{'NLL':>8}{'Brier':>8}{'ECE':>8}{'accuracy':>10}{'fit s':>7}")
for name, model in models.items():
    t0 = time.perf_counter()
    model.fit(X_train, y_train)
    seconds = time.perf_counter() - t0
    proba = model.predict_proba(X_test)
    print(
        f"{name:<18}"
        f"{negative_log_likelihood(y_test, proba):>8.4f}"
        f"{brier_score(y_test, proba):>8.4f}"
        f"{expected_calibration_error(y_test, proba):>8.4f}"
        f"{np.mean(model.predict(X_test) == y_test):>10.4f}"
        f"{seconds:>7.2f}"
    )

# %%
# Every calibrator cuts the log-loss by about a third and the ECE by more.
# Temperature scaling keeps each prediction (dividing the logits by one
# temperature cannot change an arg-max) but cannot fix errors that differ
# from class to class; the one-vs-rest isotonic maps and the calibrators
# that :class:`~skcalib.AutoCalibrator` chose can. Our isotonic calibrator
# and scikit-learn's give close but not equal numbers: ours maps the
# log-odds of each class, scikit-learn's the probability itself (the fitted
# points are the same, the interpolation between them differs).
#
# What AutoCalibrator chose, split by split
# -----------------------------------------
# Each of the five pairs has its own AutoCalibrator, which cross-validated
# its candidates on its held-out part and kept the identity unless another
# candidate's mean gain in log-loss exceeded one (corrected) standard error.
auto_model = models["+ AutoCalibrator"]
for i, pair in enumerate(auto_model.calibrated_classifiers_):
    res = pair.calibrator.cv_results_
    best = pair.calibrator.best_index_
    gain, se = res["mean_test_gain"][best], res["se_test_gain"][best]
    print(
        f"split {i}: {res['candidate'][best]:<15} gain {gain:.3f} +- {se:.3f}; "
        f"{res['beats_identity'].sum()} of {res['candidate'].size - 1} "
        "candidates beat the identity"
    )

# %%
# Reliability diagrams
# --------------------
# Confidence (top-1 probability) against accuracy, on the test half, with
# each bin's 95% Wilson interval for its accuracy.
fig, ax = plt.subplots(figsize=(6.4, 6.4))
for name in ("GaussianNB", "+ temperature", "+ AutoCalibrator"):
    ReliabilityDisplay.from_estimator(
        models[name],
        X_test,
        y_test,
        name=name,
        ax=ax,
        show_histogram=True,
        show_intervals=True,
    )
ax.set_title("Gaussian naive Bayes, 3 classes, 10 000 test samples")
plt.show()

# %%
# One calibrator for a refitted model: ``ensemble=False``
# -------------------------------------------------------
# ``ensemble=False`` pools the out-of-fold scores of all splits, fits a
# single calibrator on them and refits the classifier on all the training
# data. Prediction then needs one classifier instead of five; the
# calibrator saw every training sample once.
pooled = CalibratedClassifier(GaussianNB(), IsotonicCalibrator(), ensemble=False)
proba = pooled.fit(X_train, y_train).predict_proba(X_test)
print(f"pooled isotonic: NLL {negative_log_likelihood(y_test, proba):.4f}")
print("pairs kept:", len(pooled.calibrated_classifiers_))

# %%
# The splits must suit the mode: with ``ensemble=False`` each sample must be
# in exactly one test part, so a ``ShuffleSplit`` is refused with a message
# that says why; the ensemble accepts it.
from sklearn.model_selection import ShuffleSplit  # noqa: E402

try:
    CalibratedClassifier(
        GaussianNB(), cv=ShuffleSplit(3, test_size=0.2, random_state=0), ensemble=False
    ).fit(X_train, y_train)
except ValueError as exc:
    print(exc)
