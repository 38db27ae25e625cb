"""Coverage studies (slow) of LAC, APS and Mondrian sets on real
predictions and on small synthetic calibration sets."""

import numpy as np
import pytest

from skcalib.conformal._classifier import ConformalClassifier
from skcalib.conformal._metrics import (
    classwise_set_coverage,
    mean_set_size,
    set_coverage_score,
)
from skcalib.datasets import make_miscalibrated_scores


def _make(*args, **kwargs):
    """Miscalibrated logits and their labels."""
    logits, y, _ = make_miscalibrated_scores(*args, **kwargs)
    return logits, y


# ------------------------------------------------------- coverage (statistical)
def _coverage_runs(proba, y, n_cal, n_splits, seed, **params):
    """Coverage, class-wise coverage and mean size over random splits."""
    rng = np.random.default_rng(seed)
    cov, classwise, size = [], [], []
    for _ in range(n_splits):
        perm = rng.permutation(y.size)
        cal, test = perm[:n_cal], perm[n_cal:]
        cp = ConformalClassifier(random_state=int(rng.integers(2**31)), **params).fit(
            proba[cal], y[cal]
        )
        sets = cp.predict_set(proba[test])
        cov.append(set_coverage_score(y[test], sets, labels=cp.classes_))
        classwise.append(classwise_set_coverage(y[test], sets, labels=cp.classes_))
        size.append(mean_set_size(sets))
    return np.array(cov), np.array(classwise), np.array(size)


def _check_coverage(cov, alpha, n_cal, upper=False):
    """Mean coverage within Monte-Carlo error of [1 - alpha, 1 - alpha + 1/(n+1)].

    The tolerance is 4 standard errors of the mean over the splits (their
    spread measures both the calibration and the test sampling noise).
    """
    tol = 4 * cov.std(ddof=1) / np.sqrt(cov.size) + 1e-4
    assert cov.mean() >= 1 - alpha - tol, (cov.mean(), tol)
    if upper:
        assert cov.mean() <= 1 - alpha + 1 / (n_cal + 1) + tol, (cov.mean(), tol)


CONFIGS = [
    {"method": "lac"},
    {"method": "aps"},
    {"method": "aps", "randomized": True},
    {"method": "lac", "class_conditional": True},
    {"method": "raps", "randomized": True, "k_reg": 2, "lam": 0.05},
    {"method": "top_k"},
]


@pytest.mark.slow
@pytest.mark.parametrize(
    "relpath, n_cal, n_splits",
    [
        ("netcal/densenet-bc-100-cifar-100.npz", 5000, 40),
        ("netcal/wideresnet-16-4-cifar-10.npz", 2000, 100),
        ("verified_calibration/cifar10_vgg16.npz", 1000, 100),
        ("pycalib/mnist__random_forest.npz", 1000, 100),  # many tied scores
        ("pycalib/kitti__AdaBoost.npz", 500, 100),
    ],
)
def test_coverage_on_real_predictions(shared_loader, relpath, n_cal, n_splits):
    probs, labels = shared_loader(relpath)
    probs = probs.astype(np.float64)
    probs /= probs.sum(axis=1, keepdims=True)
    alpha = 0.1
    for i, params in enumerate(CONFIGS):
        cov, classwise, size = _coverage_runs(
            probs, labels, n_cal, n_splits, seed=i, alpha=alpha, **params
        )
        _check_coverage(cov, alpha, n_cal, upper=params.get("randomized", False))
        assert size.mean() < probs.shape[1]
        if params.get("class_conditional") and probs.shape[1] <= 10:
            for c in range(probs.shape[1]):
                _check_coverage(classwise[:, c], alpha, n_cal)


@pytest.mark.slow
@pytest.mark.parametrize("n_cal, k, n_splits", [(20, 2, 500), (200, 5, 200)])
def test_coverage_on_synthetic_scores(n_cal, k, n_splits):
    """Small calibration sets: the finite-sample correction is what holds
    the lower bound (the plain empirical quantile gives ``ceil(n (1 - alpha))
    / (n + 1)``, 0.76 instead of 0.8 at n=20, alpha=0.2)."""
    logits, y = _make(5000, k, temperature=2.0, class_sep=1.5, random_state=0)
    for alpha in (0.05, 0.2):
        for params in CONFIGS[:3]:
            cov, _, _ = _coverage_runs(
                logits, y, n_cal, n_splits, seed=1, alpha=alpha, **params
            )
            _check_coverage(cov, alpha, n_cal, upper=params.get("randomized", False))
