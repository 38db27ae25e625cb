"""
===================================================
Tune the number of bins with GridSearchCV
===================================================

:class:`~skcalib.HistogramBinningCalibrator` has two choices to make: how
many bins, and whether they have equal widths or equal masses. Because a
calibrator is an ordinary estimator whose ``clone`` keeps the prefit
classifier, :class:`~sklearn.model_selection.GridSearchCV` tunes them on the
calibration set by cross-validation, never refitting the classifier.

Scored by the expected calibration error alone
(:data:`skcalib.metrics.ece_scorer`), the search makes a choice worth
looking at twice.
"""

# %%
# A prefit random forest
# ----------------------
# Random forests average votes and are typically under-confident near 0 and
# 1; their probabilities are multiples of ``1 / n_estimators``, so many of
# them tie.
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_classification
from sklearn.ensemble import RandomForestClassifier
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import GridSearchCV, train_test_split

from skcalib import HistogramBinningCalibrator
from skcalib.metrics import (
    ece_scorer,
    expected_calibration_error,
    negative_log_likelihood,
    nll_scorer,
)

X, y = make_classification(
    n_samples=30_000,
    n_informative=6,
    n_redundant=4,
    flip_y=0.05,
    class_sep=0.8,
    random_state=1,
)
X_train, X_rest, y_train, y_rest = train_test_split(
    X, y, train_size=10_000, random_state=0
)
X_cal, X_test, y_cal, y_test = train_test_split(
    X_rest, y_rest, train_size=10_000, random_state=0
)
forest = RandomForestClassifier(
    n_estimators=50, min_samples_leaf=3, random_state=0
).fit(X_train, y_train)

# %%
# Search with the ECE scorer
# --------------------------
# Five-fold cross-validation on the calibration set, over the number of bins
# and the binning strategy. ``ece_scorer`` is the negated confidence ECE
# (greater is better), ready for ``scoring=``. We also record the negative
# log-likelihood with ``nll_scorer``; ``refit="ece"`` picks by the ECE.
grid = {
    "n_bins": [2, 5, 10, 20, 40, 80],
    "strategy": ["uniform", "quantile"],
}
search = GridSearchCV(
    HistogramBinningCalibrator(estimator=forest),
    grid,
    scoring={"ece": ece_scorer, "nll": nll_scorer},
    refit="ece",
    cv=5,
).fit(X_cal, y_cal)
print("picked by the ECE:", search.best_params_)
best = search.best_estimator_
print("the forest was not refit:", best.estimator is forest)

# %%
# ECE and log-loss against the number of bins
# -------------------------------------------
# Cross-validated means (scorers are negated, so we flip the sign back).
results = search.cv_results_
fig, (ax_ece, ax_nll) = plt.subplots(1, 2, figsize=(7.5, 3.4), sharex=True)
for strategy, marker in [("uniform", "o"), ("quantile", "s")]:
    rows = np.flatnonzero(results["param_strategy"] == strategy)
    n_bins = np.asarray(results["param_n_bins"][rows], dtype=int)
    ece = -results["mean_test_ece"][rows]
    nll = -results["mean_test_nll"][rows]
    ax_ece.plot(n_bins, ece, marker=marker, label=strategy)
    ax_nll.plot(n_bins, nll, marker=marker, label=strategy)
titles = {
    ax_ece: "ECE (lower is better)",
    ax_nll: "log-loss (lower is better)",
}
for ax, title in titles.items():
    ax.set_xscale("log", base=2)
    ax.set_xticks(grid["n_bins"], labels=[str(n) for n in grid["n_bins"]])
    ax.set_xlabel("n_bins")
    ax.set_title(title)
    ax.legend(title="strategy")
fig.suptitle("Histogram binning of a random forest (5-fold CV)")
fig.tight_layout()
plt.show()

# %%
# The ECE keeps falling as the bins get *fewer*: with two bins the calibrator
# outputs two numbers, each exactly the frequency of its bin, and a binned
# error has almost nothing left to measure. The log-loss, a proper score,
# sees what was lost: the ranking of the samples inside each bin. It prefers
# a few dozen bins, and rises again when the bins get too small to estimate.
#
# Pick by a proper score, check the ECE
# -------------------------------------
# The search already scored every candidate by the log-loss too: take the
# best by that score (``rank_test_nll``), fit it on the whole calibration set,
# and compare both choices with the forest on the test split, which neither
# has seen.
by_nll = results["params"][np.argmin(results["rank_test_nll"])]
print("picked by the log-loss:", by_nll)
binning_nll = HistogramBinningCalibrator(forest, **by_nll).fit(X_cal, y_cal)

models = {
    "forest": forest,
    "binning, by ECE": best,
    "binning, by NLL": binning_nll,
}
print(f"{'':<17}{'ECE':>8}{'NLL':>8}{'ROC AUC':>9}")
for name, model in models.items():
    proba = model.predict_proba(X_test)
    print(
        f"{name:<17}"
        f"{expected_calibration_error(y_test, proba):>8.4f}"
        f"{negative_log_likelihood(y_test, proba):>8.4f}"
        f"{roc_auc_score(y_test, proba[:, 1]):>9.4f}"
    )

# %%
# The ECE-picked calibrator has the lowest test ECE and the worst log-loss
# and ROC AUC, worse than the forest it calibrates. The NLL-picked one
# improves the log-loss and keeps most of the ranking, at a still small ECE.
# Use the ECE to *see* miscalibration, and a proper score to *choose*.
