"""
======================================================
Conformal prediction sets on a CIFAR-10 network
======================================================

Instead of one predicted class, a conformal predictor returns a *set* of
classes that holds the true class for at least ``1 - alpha`` of new images,
whatever the network. This example builds such sets for a WideResNet-16-4
on CIFAR-10 (its softmax outputs ship with skcalib,
:func:`skcalib.datasets.load_predictions`) with
:class:`skcalib.ConformalClassifier`, compares the LAC, APS, RAPS and
top-k scores and the class-conditional (Mondrian) variant, and checks the
guarantee on held-out images at several levels from one fit. See
:ref:`conformal` for the definitions.
"""

# %%
# The predictions
# ---------------
# Float32 softmax probabilities of shape ``(10000, 10)`` and the labels.
# Half of the images calibrate, the other half test; the split is random
# with a fixed seed.
import matplotlib.pyplot as plt
import numpy as np

from skcalib import ConformalClassifier
from skcalib.datasets import load_predictions
from skcalib.metrics import (
    classwise_set_coverage,
    mean_set_size,
    set_coverage_score,
)

data = load_predictions("cifar10_wideresnet")
proba, labels = data.probs, data.labels
cal, test = np.split(np.random.default_rng(0).permutation(labels.size), 2)
y_test = labels[test]
print(f"accuracy on the test half: {np.mean(proba[test].argmax(1) == y_test):.4f}")

# %%
# Four conformal predictors at ``alpha = 0.1``
# --------------------------------------------
# LAC (``1 - p_y``) cuts the probabilities at one level. APS adds classes in
# decreasing probability until their mass reaches the threshold; its
# randomised version counts only a uniform fraction of the last class.
# Mondrian LAC has one threshold per class. Every predictor works in
# raw-score mode: ``X`` is the matrix of probabilities.
alpha = 0.1
predictors = {
    "LAC": ConformalClassifier(alpha=alpha),
    "APS": ConformalClassifier(alpha=alpha, method="aps"),
    "APS randomised": ConformalClassifier(
        alpha=alpha, method="aps", randomized=True, random_state=0
    ),
    "LAC Mondrian": ConformalClassifier(alpha=alpha, class_conditional=True),
}
sets = {}
print(f"{'':<16}{'coverage':>9}{'mean size':>10}{'empty':>7}")
for name, predictor in predictors.items():
    predictor.fit(proba[cal], labels[cal])
    sets[name] = predictor.predict_set(proba[test])
    print(
        f"{name:<16}"
        f"{set_coverage_score(y_test, sets[name]):>9.4f}"
        f"{mean_set_size(sets[name]):>10.3f}"
        f"{np.mean(sets[name].sum(axis=1) == 0):>7.1%}"
    )

# %%
# LAC, randomised APS and Mondrian LAC cover about 90% of the test images
# with about one class per set. Non-randomised APS covers nearly all of
# them, with six classes per set on average and many sets of all ten
# classes: the network is confident, so most
# calibration images have a score (the mass up to and including the true
# class) within a hair of 1, the threshold is nearly 1, and a set keeps
# adding classes until almost all the mass is in. Randomisation removes
# that waste; with confident models, use ``randomized=True`` for APS.
#
# How large are the sets?
# -----------------------
# The number of classes per set. A set of size 1 is a confident prediction
# that comes with the guarantee; an empty set says that no class is
# plausible enough at this level; larger sets mark the ambiguous images.
fig, ax = plt.subplots(figsize=(7, 3.8))
sizes = np.arange(11)
width = 0.2
for i, (name, s) in enumerate(sets.items()):
    counts = np.bincount(s.sum(axis=1), minlength=11)
    ax.bar(sizes + (i - 1.5) * width, counts, width=width, label=name)
ax.set_yscale("log")
ax.set_xticks(sizes)
ax.set_xlabel("set size (classes)")
ax.set_ylabel("test images")
ax.set_title(f"Prediction-set sizes at alpha = {alpha}")
ax.legend(fontsize="small", loc="upper center")
plt.show()

# %%
# Coverage follows ``1 - alpha``
# ------------------------------
# One fit per method serves every level: ``predict_set(X, alpha=alphas)``
# reads the threshold of each level from the sorted calibration scores and
# returns nested sets of shape ``(n_test, 10, n_alpha)``. The coverage
# tracks the diagonal ``1 - alpha`` (top-k in steps: one class more or less
# for every image); the price, the mean set size, grows as ``alpha``
# shrinks. RAPS adds a penalty per rank beyond ``k_reg`` to the APS score
# (``k_reg`` and ``lam`` chosen on 20% of the calibration half).
alphas = np.array([0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3])
curves = {
    "LAC": {},
    "APS randomised": {"method": "aps", "randomized": True},
    "RAPS randomised": {"method": "raps", "randomized": True},
    "top-k": {"method": "top_k"},
}
fig, (ax_cov, ax_size) = plt.subplots(1, 2, figsize=(7.5, 3.6))
for name, params in curves.items():
    cp = ConformalClassifier(random_state=0, **params).fit(proba[cal], labels[cal])
    s = cp.predict_set(proba[test], alpha=alphas)
    coverage = s[np.arange(test.size), y_test].mean(axis=0)
    size = s.sum(axis=1).mean(axis=0)
    ax_cov.plot(1 - alphas, coverage, "o-", label=name)
    ax_size.plot(1 - alphas, size, "o-", label=name)
ax_cov.plot([0.7, 1], [0.7, 1], "k--", lw=1, label="1 - alpha")
ax_cov.set_xlabel("target coverage 1 - alpha")
ax_cov.set_ylabel("test coverage")
ax_cov.legend(fontsize="small")
ax_size.set_xlabel("target coverage 1 - alpha")
ax_size.set_ylabel("mean set size")
ax_size.legend(fontsize="small")
fig.suptitle("One calibration half, one test half")
fig.tight_layout()
plt.show()

# %%
# One split gives one draw: the coverage scatters around its expectation by
# about ``sqrt(alpha (1 - alpha) / 5000)``, 0.4 percentage points at
# ``alpha = 0.1``. The guarantee is on the average over calibration sets
# (skcalib's conformal benchmark averages 20 splits of 34 real prediction
# sets).
#
# Coverage class by class
# -----------------------
# The guarantee of marginal sets is an average over classes. Class by
# class, LAC covers the easy classes (automobiles, ships) more than 90% of
# the time and the hard ones (cats, dogs, birds) less. Mondrian sets have a
# threshold per class and cover each class about 90% of the time.
class_names = [
    "airplane",
    "automobile",
    "bird",
    "cat",
    "deer",
    "dog",
    "frog",
    "horse",
    "ship",
    "truck",
]
fig, ax = plt.subplots(figsize=(7, 3.4))
x = np.arange(10)
for i, name in enumerate(["LAC", "LAC Mondrian"]):
    per_class = classwise_set_coverage(y_test, sets[name])
    ax.bar(x + (i - 0.5) * 0.4, per_class, width=0.4, label=name)
ax.axhline(1 - alpha, color="k", ls="--", lw=1, label="1 - alpha")
ax.set_xticks(x, class_names, rotation=30, ha="right")
ax.set_ylim(0.6, 1.06)
ax.set_ylabel("coverage within the class")
ax.legend(fontsize="small", loc="upper center", ncol=3)
fig.tight_layout()
plt.show()

# %%
# The probabilities behind the sets
# ---------------------------------
# ``predict_proba`` returns the probabilities the sets were built from (here
# the network's own; ``calibrator=`` would calibrate them first) and
# ``predict`` their arg-max. A set for a few test images, with the classes
# by name:
lac = predictors["LAC"]
for i in range(5):
    members = [class_names[k] for k in np.flatnonzero(sets["LAC"][i])]
    top = lac.predict(proba[test][i : i + 1])[0]
    print(f"true {class_names[y_test[i]]:<10} top {class_names[top]:<10} {members}")
