"""Size and power of the calibration tests by simulation (``slow``).

Calibrated data: logits ``z ~ N(0, 1.5**2)`` (binary: one logit; multiclass:
4 of them), labels drawn from ``sigmoid(z)`` / ``softmax(z)``, the
predictions being those true probabilities. Type-I error at level 0.05 over
2000 replications at ``n = 1000`` must be in ``[0.03, 0.07]`` (the binomial
standard error is 0.005). Power: the same data, predictions
``softmax(z / 1.5)`` (temperature 1.5: under-confident), printed at
``n = 1000`` and ``10000`` (run with ``-s`` to see the tables) and checked
to grow with ``n``.
"""

import numpy as np
import pytest

from skcalib.metrics import (
    cumulative_calibration_test,
    hosmer_lemeshow_test,
    spiegelhalter_test,
)

pytestmark = pytest.mark.slow

ALPHA = 0.05
N_REPS = 2000
N = 1000
TESTS = {
    "spiegelhalter": lambda y, p: spiegelhalter_test(y, p),
    "hosmer_lemeshow": lambda y, p: hosmer_lemeshow_test(y, p),
    "ks": lambda y, p: cumulative_calibration_test(y, p, statistic="ks"),
    "kuiper": lambda y, p: cumulative_calibration_test(y, p, statistic="kuiper"),
}


def _softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _draw(rng, n, k, temperature=1.0):
    """Labels from softmax(z) and the predictions softmax(z / temperature)
    (binary: the probability of class 1)."""
    z = rng.normal(scale=1.5, size=(n, k))
    if k == 2:
        z[:, 0] = 0.0
    true = _softmax(z)
    y = (rng.uniform(size=(n, 1)) > np.cumsum(true, axis=1)).sum(axis=1)
    y = np.minimum(y, k - 1)
    proba = _softmax(z / temperature)
    return y, (proba[:, 1] if k == 2 else proba)


def _rejection_rates(k, n, n_reps, temperature, seed, tests=TESTS):
    rng = np.random.default_rng(seed)
    rejected = dict.fromkeys(tests, 0)
    for _ in range(n_reps):
        y, p = _draw(rng, n, k, temperature)
        if k == 2 and np.unique(y).size < 2:
            continue
        for name, test in tests.items():
            rejected[name] += test(y, p).pvalue <= ALPHA
    return {name: count / n_reps for name, count in rejected.items()}


def _print_table(title, rates):
    print(f"\n{title}")
    for name, rate in rates.items():
        print(f"  {name:28s} {rate:.4f}")


@pytest.mark.parametrize("k", [2, 4], ids=["binary", "multiclass-holm"])
def test_type_one_error(k):
    rates = _rejection_rates(k, N, N_REPS, 1.0, seed=k)
    _print_table(f"type-I error at alpha=0.05, n={N}, {N_REPS} reps, K={k}", rates)
    for name, rate in rates.items():
        assert 0.03 <= rate <= 0.07, (name, rate)


def _logistic_fit_predictions(z, y, n_iter=25):
    """In-sample predictions of a logistic regression of ``y`` on ``z``
    (Newton's method, every replication at once: rows of ``z`` and ``y``)."""
    X = np.stack((np.ones_like(z), z), axis=-1)
    beta = np.zeros(z.shape[:1] + (2,))
    for _ in range(n_iter):
        p = 1.0 / (1.0 + np.exp(-np.einsum("rnj,rj->rn", X, beta)))
        grad = np.einsum("rnj,rn->rj", X, y - p)
        hess = np.einsum("rnj,rn,rnk->rjk", X, p * (1 - p), X)
        beta += np.linalg.solve(hess, grad[..., None])[..., 0]
    return 1.0 / (1.0 + np.exp(-np.einsum("rnj,rj->rn", X, beta)))


def test_hosmer_lemeshow_ddof():
    """Fitted in-sample: ddof=2 holds its level; on true probabilities
    (held-out predictions) ddof=2 rejects too often and ddof=0 holds it."""
    rng = np.random.default_rng(11)
    z = rng.normal(scale=1.5, size=(N_REPS, N))
    y = (rng.uniform(size=z.shape) < 1 / (1 + np.exp(-z))).astype(float)
    fitted = _logistic_fit_predictions(z, y)
    true = 1 / (1 + np.exp(-z))
    rates = {
        "in-sample fit, ddof=2": np.mean(
            [
                hosmer_lemeshow_test(y[r], fitted[r], ddof=2).pvalue <= ALPHA
                for r in range(N_REPS)
            ]
        ),
        "true probabilities, ddof=2": np.mean(
            [
                hosmer_lemeshow_test(y[r], true[r], ddof=2).pvalue <= ALPHA
                for r in range(N_REPS)
            ]
        ),
    }
    _print_table(f"Hosmer-Lemeshow type-I error, n={N}, {N_REPS} reps", rates)
    assert 0.03 <= rates["in-sample fit, ddof=2"] <= 0.07
    assert rates["true probabilities, ddof=2"] > 0.08


@pytest.mark.parametrize("k", [2, 4], ids=["binary", "multiclass-holm"])
def test_power_against_temperature(k):
    small = _rejection_rates(k, 1000, 400, 1.5, seed=20 + k)
    large = _rejection_rates(k, 10000, 100, 1.5, seed=30 + k)
    _print_table(f"power, T=1.5, n=1000, 400 reps, K={k}", small)
    _print_table(f"power, T=1.5, n=10000, 100 reps, K={k}", large)
    for name in TESTS:
        assert large[name] >= small[name] - 0.05, name
        assert large[name] > 0.5, name
