"""
===============================================================================
Reliability diagram of a CIFAR-100 network before and after temperature scaling
===============================================================================

A DenseNet-BC-100 trained on CIFAR-100 is over-confident: when it says 90%,
it is right far less often. This example draws its reliability diagram, fits
:class:`~skcalib.TemperatureCalibrator` on half of the test set (Guo et al.
2017) and overlays the calibrated diagram computed on the other half, with
the gap of each bin to the diagonal and the confidence histogram.

The predictions come from the netcal project (Apache-2.0); see
``shared/data/README.md``.
"""

# %%
# Load the predictions
# --------------------
# The file holds float32 softmax probabilities of shape ``(10000, 100)`` and
# the true labels. The rows are split with a fixed seed: 5000 to fit the
# temperature, 5000 to evaluate.
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from skcalib import TemperatureCalibrator
from skcalib.metrics import expected_calibration_error
from skcalib.plotting import ReliabilityDisplay

try:
    EXAMPLES_DIR = Path(__file__).resolve().parent
except NameError:  # sphinx-gallery runs examples without __file__, from here
    EXAMPLES_DIR = Path.cwd()
DATA_DIR = EXAMPLES_DIR.parents[1] / "shared" / "data"
DATA_FILE = DATA_DIR / "netcal" / "densenet-bc-100-cifar-100.npz"
if not DATA_FILE.exists():
    raise SystemExit(
        f"Data file not found: {DATA_FILE}\nThis example needs the shared "
        "netcal predictions (shared/data/netcal/densenet-bc-100-cifar-100.npz) "
        "next to the repository."
    )

with np.load(DATA_FILE) as data:
    proba, labels = data["predictions"], data["ground_truth"]

rng = np.random.default_rng(0)
order = rng.permutation(labels.shape[0])
fit_rows, test_rows = order[:5000], order[5000:]
print(f"{proba.shape[0]} images, {proba.shape[1]} classes")

# %%
# Fit temperature scaling
# -----------------------
# The file holds probabilities; their logarithm equals the logits up to a
# per-row constant, to which the softmax is blind, so it is all temperature
# scaling needs.
log_proba = np.log(proba)
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
# diagonal and the histogram panel. The shaded bars are the gaps between each
# bin's accuracy and its mean confidence: their count-weighted mean length is
# the ECE in the legend. ``from_estimator`` takes the calibrator and its input
# (here the log-probabilities), exactly like a scikit-learn classifier.
uncalibrated = ReliabilityDisplay.from_predictions(
    y_test,
    proba[test_rows],
    name="Uncalibrated",
    show_histogram=True,
    show_gaps=True,
)
calibrated = ReliabilityDisplay.from_estimator(
    calibrator,
    log_proba[test_rows],
    y_test,
    name="Temperature scaling",
    ax=uncalibrated.ax_,
    show_histogram=True,
    show_gaps=True,
)
uncalibrated.ax_.set_title("DenseNet-BC-100 on CIFAR-100 (5000 test images)")
plt.show()

# %%
# The uncalibrated network sits well below the diagonal: in every bin it is
# less accurate than it is confident, and most images land in the top bin.
# One temperature brings every bin close to the diagonal and spreads the
# confidences out (histogram), without changing a single prediction.
