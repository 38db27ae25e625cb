"""
==============================================================================
Reliability diagram of a CIFAR-10 network before and after temperature scaling
==============================================================================

A WideResNet-16-4 trained on CIFAR-10 is over-confident: when it says 99%, it
is right less often. This example draws its reliability diagram, fits
:class:`~skcalib.TemperatureCalibrator` on half of the test set (Guo et al.
2017) and overlays the calibrated diagram computed on the other half, with
the gap of each bin to the diagonal, each bin's 95% interval and the
confidence histogram.

The predictions ship with skcalib (:func:`skcalib.datasets.load_predictions`;
they come from the netcal project, Apache-2.0).
"""

# %%
# Load the predictions
# --------------------
# ``probs`` holds float32 softmax probabilities of shape ``(10000, 10)`` and
# ``labels`` the true classes. The rows are split with a fixed seed: 5000 to
# fit the temperature, 5000 to evaluate.
import matplotlib.pyplot as plt
import numpy as np

from skcalib import TemperatureCalibrator
from skcalib.datasets import load_predictions
from skcalib.metrics import expected_calibration_error
from skcalib.plotting import ReliabilityDisplay

data = load_predictions("cifar10_wideresnet")
proba, labels = data.probs, data.labels

rng = np.random.default_rng(0)
order = rng.permutation(labels.shape[0])
fit_rows, test_rows = order[:5000], order[5000:]
print(f"{proba.shape[0]} images, {proba.shape[1]} classes")
print(f"accuracy: {np.mean(proba.argmax(axis=1) == labels):.3f}")

# %%
# Fit temperature scaling
# -----------------------
# The file holds probabilities; their logarithm equals the logits up to a
# per-row constant, to which the softmax is blind, so it is all temperature
# scaling needs. (The smallest probabilities are clipped first: a float32
# probability can be exactly 0.)
log_proba = np.log(np.clip(proba, 1e-12, None))
calibrator = TemperatureCalibrator().fit(log_proba[fit_rows], labels[fit_rows])
print(f"fitted temperature: {calibrator.temperature_:.3f}")

# %%
# Expected calibration error before and after
# -------------------------------------------
# Top-1 (confidence) ECE with 15 equal-width bins, on the held-out half.
y_test = labels[test_rows]
proba_calibrated = calibrator.predict_proba(log_proba[test_rows])
ece_before = expected_calibration_error(y_test, proba[test_rows])
ece_after = expected_calibration_error(y_test, proba_calibrated)
print(f"ECE before: {ece_before:.4f}")
print(f"ECE after:  {ece_after:.4f}")

# %%
# Overlaid reliability diagrams
# -----------------------------
# The first display creates the axes and the histogram panel below it; the
# second one is drawn on the same axes (``ax=disp.ax_``), so it shares the
# diagonal and the histogram panel. The shaded bars, drawn for the
# uncalibrated network only (two sets of them overlap), are the gaps between
# each bin's accuracy and its mean confidence: their count-weighted mean length
# is the ECE in the legend. The error bars are each bin's 95% Wilson interval
# for its accuracy: a bin of a few images has a wide one, so a point far
# from the diagonal there is weak evidence. ``from_estimator`` takes the
# calibrator and its input (here the log-probabilities), exactly like a
# scikit-learn classifier.
uncalibrated = ReliabilityDisplay.from_predictions(
    y_test,
    proba[test_rows],
    name="Uncalibrated",
    show_histogram=True,
    show_gaps=True,
    show_intervals=True,
)
calibrated = ReliabilityDisplay.from_estimator(
    calibrator,
    log_proba[test_rows],
    y_test,
    name="Temperature scaling",
    ax=uncalibrated.ax_,
    show_histogram=True,
    show_intervals=True,
)
uncalibrated.ax_.set_title("WideResNet-16-4 on CIFAR-10 (5000 test images)")
plt.show()

# %%
# The uncalibrated network sits below the diagonal: in most bins it is less
# accurate than it is confident, and most images land in the top bin. One
# temperature (above 1: it softens the probabilities) brings the bins close to
# the diagonal, within their intervals, and spreads the confidences out
# (histogram), without changing a single prediction.
