"""
=========================================
Compare calibrators on a CIFAR-10 network
=========================================

Four calibrators, one network: a WideResNet-16-4 trained on CIFAR-10, whose
softmax outputs on the 10 000 test images ship with skcalib
(:func:`skcalib.datasets.load_predictions`). Half of the images fit the
calibrators, the other half evaluates them, with proper scores, calibration
errors and overlaid reliability diagrams.
"""

# %%
# The predictions
# ---------------
# Float32 softmax probabilities of shape ``(10000, 10)`` and the true labels.
# Only the predictions are needed: every calibrator works in raw-score mode,
# where ``X`` holds the scores. The rows are split with a fixed seed.
from time import perf_counter

import matplotlib.pyplot as plt
import numpy as np

from skcalib import (
    HistogramBinningCalibrator,
    IsotonicCalibrator,
    PlattCalibrator,
    TemperatureCalibrator,
)
from skcalib.datasets import load_predictions
from skcalib.metrics import (
    brier_score,
    classwise_calibration_error,
    expected_calibration_error,
    negative_log_likelihood,
)
from skcalib.plotting import ReliabilityDisplay

data = load_predictions("cifar10_wideresnet")
proba, labels = data.probs, data.labels
print(data.description)

rng = np.random.default_rng(0)
order = rng.permutation(labels.size)
fit, test = order[:5000], order[5000:]

# %%
# Fit the calibrators
# -------------------
# Temperature scaling is natively multiclass. Platt scaling, histogram
# binning and isotonic regression calibrate one score at a time; with ten
# classes they fit one map per class (one-vs-rest) and renormalise.
calibrators = {
    "temperature": TemperatureCalibrator(),
    "Platt": PlattCalibrator(),
    "histogram binning": HistogramBinningCalibrator(strategy="quantile"),
    "isotonic": IsotonicCalibrator(),
}
fit_seconds = {}
for name, calibrator in calibrators.items():
    start = perf_counter()
    calibrator.fit(proba[fit], labels[fit])
    fit_seconds[name] = perf_counter() - start
print(f"temperature: {calibrators['temperature'].temperature_:.3f}")

# %%
# Scores on the held-out half
# ---------------------------
# Negative log-likelihood and Brier score (proper scores, lower is better),
# top-1 (confidence) and classwise ECE (15 uniform bins), and accuracy.
y_test = labels[test]
results = {"uncalibrated": proba[test]}
for name, calibrator in calibrators.items():
    results[name] = calibrator.predict_proba(proba[test])

columns = ["NLL", "Brier", "ECE", "cw-ECE", "acc", "fit s"]
print(f"{'':<19}" + "".join(f"{column:>8}" for column in columns))
for name, p in results.items():
    seconds = f"{fit_seconds.get(name, 0.0):>8.3f}"
    print(
        f"{name:<19}"
        f"{negative_log_likelihood(y_test, p):>8.4f}"
        f"{brier_score(y_test, p):>8.4f}"
        f"{expected_calibration_error(y_test, p):>8.4f}"
        f"{classwise_calibration_error(y_test, p):>8.4f}"
        f"{np.mean(p.argmax(axis=1) == y_test):>8.4f}"
        f"{seconds}"
    )

# %%
# Every calibrator lowers the ECE. Temperature scaling keeps the accuracy
# exactly (dividing logits by one number never changes the arg-max); the
# one-vs-rest methods change some predictions. Histogram binning is the
# cautionary tale: its ECE falls, yet its Brier score barely improves and it
# loses accuracy, because each class's probability is flattened to a few
# values before the rows are renormalised. Read the proper scores (NLL,
# Brier) before the ECE.
#
# Overlaid reliability diagrams
# -----------------------------
# Two panels, each with the uncalibrated network for reference: the scaling
# methods on the left, the non-parametric ones on the right. Each display is
# drawn on the panel's axes (``ax=``); displays on the same axes share the
# diagonal and the confidence histogram below. The error bars are each bin's
# 95% Wilson interval for its accuracy: wide where a bin holds few images.
fig, axes = plt.subplots(1, 2, figsize=(7.5, 5), sharey=True)
panels = {
    "Scaling": ("temperature", "Platt"),
    "Non-parametric": ("histogram binning", "isotonic"),
}
for ax, (title, names) in zip(axes, panels.items(), strict=True):
    for name in ("uncalibrated", *names):
        disp = ReliabilityDisplay.from_predictions(
            y_test,
            results[name],
            name=name,
            ax=ax,
            show_histogram=True,
            show_intervals=True,
        )
    ax.set_title(title)
    ax.legend(loc="upper left", fontsize="x-small")  # the emptiest corner
    # Most images sit in the top bin: a log scale shows the other bins too.
    disp.ax_hist_.set_yscale("log")
axes[1].set_ylabel("")
disp.ax_hist_.set_ylabel("")  # it would touch the left panel
fig.suptitle("WideResNet-16-4 on CIFAR-10, 5000 held-out images")
plt.show()

# %%
# The network is over-confident: its curve runs below the diagonal. The
# calibrated curves follow it; where they wander (the low-confidence bins),
# the histogram, on a log scale, shows how few images support them.
