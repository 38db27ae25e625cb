"""Coverage studies (slow) of RAPS, top-k and APS without the last label:
mean coverage over many random calibration/test splits of a synthetic
problem within Monte-Carlo error of the bounds the theory gives."""

import numpy as np
import pytest

from skcalib import ConformalClassifier
from skcalib.conformal._quantile import conformal_quantile
from skcalib.conformal._scores import label_scores, prediction_sets
from skcalib.datasets import make_miscalibrated_scores

N_CAL, N_TEST, N_SPLITS = 400, 1000, 300


@pytest.fixture(scope="module")
def pool():
    """Probabilities of an over-confident 10-class model (continuous: no
    tied scores) and their labels."""
    logits, y, _ = make_miscalibrated_scores(
        20000, 10, temperature=0.6, class_sep=1.5, random_state=0
    )
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    return p / p.sum(axis=1, keepdims=True), y


def _splits(n, seed):
    rng = np.random.default_rng(seed)
    for _ in range(N_SPLITS):
        perm = rng.permutation(n)
        yield perm[:N_CAL], perm[N_CAL : N_CAL + N_TEST], int(rng.integers(2**31))


def _check(cov, alpha, n_threshold=None):
    """Mean coverage >= 1 - alpha - tol and, where ``n_threshold`` is given
    (scores without ties), <= 1 - alpha + 1 / (n + 1) + tol; tol is 4
    standard errors of the mean over the splits."""
    cov = np.asarray(cov)
    tol = 4 * cov.std(ddof=1) / np.sqrt(cov.size) + 1e-4
    assert cov.mean() >= 1 - alpha - tol, (cov.mean(), tol)
    if n_threshold is not None:
        upper = 1 - alpha + 1 / (n_threshold + 1) + tol
        assert cov.mean() <= upper, (cov.mean(), upper)


CASES = [
    # (params, exact): exact -> the upper bound holds too
    ({"method": "raps", "randomized": True}, True),
    ({"method": "raps", "include_last_label": False}, True),
    ({"method": "raps", "k_reg": 1, "lam": 0.2}, False),
    ({"method": "aps", "include_last_label": False}, True),
    ({"method": "top_k"}, False),
]


@pytest.mark.slow
@pytest.mark.parametrize("params, exact", CASES)
def test_coverage_of_the_new_scores(pool, params, exact):
    proba, y = pool
    for alpha in (0.1, 0.2):
        cov = []
        for cal, test, seed in _splits(y.size, seed=int(alpha * 100)):
            cp = ConformalClassifier(alpha=alpha, random_state=seed, **params)
            sets = cp.fit(proba[cal], y[cal]).predict_set(proba[test])
            cov.append(sets[np.arange(test.size), y[test]].mean())
        n_threshold = N_CAL - getattr(cp, "n_tuning_", 0)
        _check(cov, alpha, n_threshold if exact else None)


@pytest.mark.slow
def test_several_levels_cover_each_level(pool):
    """One fit, sets at three levels: each level's coverage is exact."""
    proba, y = pool
    alphas = [0.05, 0.1, 0.3]
    cov = []
    for cal, test, seed in _splits(y.size, seed=7):
        cp = ConformalClassifier(
            method="aps", randomized=True, random_state=seed, alpha=0.1
        ).fit(proba[cal], y[cal])
        sets = cp.predict_set(proba[test], alpha=alphas)
        cov.append(sets[np.arange(test.size), y[test]].mean(axis=0))
    cov = np.array(cov)
    for a, alpha in enumerate(alphas):
        _check(cov[:, a], alpha, N_CAL)


@pytest.mark.slow
def test_class_conditional_raps_covers_every_class(pool):
    proba, y = pool
    cov = []
    for cal, test, seed in _splits(y.size, seed=11):
        cp = ConformalClassifier(
            method="raps",
            randomized=True,
            class_conditional=True,
            k_reg=2,
            lam=0.05,
            random_state=seed,
            alpha=0.2,
        ).fit(proba[cal], y[cal])
        sets = cp.predict_set(proba[test])
        hit = sets[np.arange(test.size), y[test]]
        cov.append([hit[y[test] == c].mean() for c in range(10)])
    cov = np.array(cov)
    for c in range(10):
        _check(cov[:, c], 0.2)


@pytest.mark.slow
def test_a_randomised_threshold_with_the_last_label_dropped_under_covers(pool):
    """MAPIE's ``include_last_label=False``: the threshold of randomised
    scores with the sets of the non-randomised rule. The scores of the sets
    are larger than those of the threshold, so coverage falls below
    ``1 - alpha``; skcalib's threshold of the same rule covers (above)."""
    proba, y = pool
    alpha, cov = 0.1, []
    rng = np.random.default_rng(5)
    for cal, test, _ in _splits(y.size, seed=13):
        u = rng.uniform(size=cal.size)
        t = conformal_quantile(label_scores(proba[cal], y[cal], "aps", u), alpha)
        sets = prediction_sets(
            proba[test], "aps", t, include_top=True, include_last_label=False
        )
        cov.append(sets[np.arange(test.size), y[test]].mean())
    cov = np.array(cov)
    tol = 4 * cov.std(ddof=1) / np.sqrt(cov.size)
    assert cov.mean() < 1 - alpha - tol, cov.mean()
