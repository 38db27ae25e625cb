"""
=================================
Calibrate a prefit classifier
=================================

A classifier is trained once; skcalib calibrates it afterwards, on data it
was not trained on, without ever refitting it (*wrapper mode*: the calibrator
takes the classifier's features as ``X`` and reads its scores).

Gaussian naive Bayes assumes independent features. On correlated features it
counts the same evidence several times and becomes badly over-confident,
which makes it a good patient.
"""

# %%
# Three disjoint splits
# ---------------------
# One split to train the classifier, one to fit the calibrators (the
# calibration set), one to evaluate everything.
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_classification
from sklearn.model_selection import train_test_split
from sklearn.naive_bayes import GaussianNB

from skcalib import IsotonicCalibrator, PlattCalibrator
from skcalib.metrics import (
    brier_score,
    expected_calibration_error,
    negative_log_likelihood,
)
from skcalib.plotting import ReliabilityDisplay

X, y = make_classification(
    n_samples=30_000, n_informative=4, n_redundant=10, random_state=0
)
X_train, X_rest, y_train, y_rest = train_test_split(
    X, y, train_size=10_000, random_state=0
)
X_cal, X_test, y_cal, y_test = train_test_split(
    X_rest, y_rest, train_size=10_000, random_state=0
)

clf = GaussianNB().fit(X_train, y_train)

# %%
# Calibrate
# ---------
# Pass the fitted classifier as ``estimator`` and fit on the calibration set.
# ``GaussianNB`` has no ``decision_function``, so the calibrators read its
# ``predict_proba`` (``response_method="auto"``) and know they are given
# probabilities (``score_type_``). Platt scaling fits two parameters on the
# log-odds; isotonic regression fits a monotone step function and needs more
# data (10 000 samples are plenty).
platt = PlattCalibrator(estimator=clf).fit(X_cal, y_cal)
isotonic = IsotonicCalibrator(estimator=clf).fit(X_cal, y_cal)
print("scores read as:", platt.score_type_)
print("Platt slope:", platt.coef_.round(3))
print("Platt intercept:", platt.intercept_.round(3))
print("the classifier is the very same object:", platt.estimator is clf)

# %%
# Before and after
# ----------------
# Two proper scores (negative log-likelihood and Brier score: lower is
# better, and they reward sharp *and* calibrated probabilities) and the
# expected calibration error (15 uniform bins, top-1 confidence), all on the
# test split.
models = {"GaussianNB": clf, "+ Platt": platt, "+ isotonic": isotonic}
print(f"{'':<12}{'NLL':>8}{'Brier':>8}{'ECE':>8}{'accuracy':>10}")
for name, model in models.items():
    proba = model.predict_proba(X_test)
    print(
        f"{name:<12}"
        f"{negative_log_likelihood(y_test, proba):>8.4f}"
        f"{brier_score(y_test, proba):>8.4f}"
        f"{expected_calibration_error(y_test, proba):>8.4f}"
        f"{np.mean(model.predict(X_test) == y_test):>10.4f}"
    )

# %%
# Both calibrators cut the log-loss and the ECE. The accuracy changes too:
# for a binary problem ``predict`` thresholds the calibrated probability at
# 0.5, and after calibration that threshold sits where it should.
#
# Reliability diagrams
# --------------------
# For a binary problem the classic diagram plots the predicted probability
# of the positive class against the observed fraction of positives:
# ``kind="classwise"`` (which for two classes selects the positive class).
# The ECE in the legend is that of the curve drawn. ``from_estimator`` works
# with the classifier and the calibrators alike; passing ``ax=`` overlays the
# displays on one axes, and the histogram panel below is shared. The error
# bars are each bin's 95% Wilson interval for its fraction of positives.
fig, ax = plt.subplots(figsize=(6.4, 6.4))
for name, model in models.items():
    disp = ReliabilityDisplay.from_estimator(
        model,
        X_test,
        y_test,
        kind="classwise",
        name=name,
        ax=ax,
        show_histogram=True,
        show_intervals=True,
    )
ax.set_title("Gaussian naive Bayes, 10 000 test samples")
plt.show()

# %%
# The uncalibrated model's curve is no sigmoid: near 0 it is far too sure
# (many of the samples it all but rules out are positive), and over most of
# the middle the fraction of positives hardly depends on its probability.
# Platt scaling's single sigmoid cannot follow that shape. Isotonic
# regression pools the flat middle into one wide step (the tall bar of its
# histogram) and tracks the diagonal elsewhere; it gives the best log-loss
# and Brier score of the three.
