"""The maximum mean calibration error against a double loop, a hand
computation and netcal's numbers."""

import numpy as np
import pytest

from skcalib.metrics import maximum_mean_calibration_error, mmce
from skcalib.metrics._mmce import laplacian_pair_sum


def _data(n, k, seed):
    """Softmax of 2 N(0, 1) logits and labels drawn uniformly (independent
    of the probabilities: miscalibrated)."""
    rng = np.random.default_rng(seed)
    z = 2.0 * rng.normal(size=(n, k))
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    return rng.integers(0, k, n), p


def _slow(y, p, bandwidth=0.4, w=None):
    """Kumar et al.'s eq. 2 as written: a double loop over the pairs."""
    n = len(y)
    w = np.ones(n) if w is None else np.asarray(w, float)
    r = [max(row) for row in p]
    c = [float(int(np.argmax(row)) == y[i]) for i, row in enumerate(p)]
    total = 0.0
    for i in range(n):
        for j in range(n):
            k = np.exp(-abs(r[i] - r[j]) / bandwidth)
            total += w[i] * w[j] * (c[i] - r[i]) * (c[j] - r[j]) * k
    return np.sqrt(total / w.sum() ** 2)


def test_hand_computed_tiny_case():
    # y = [0, 1, 1, 0], P(y=1) = [0.2, 0.9, 0.3, 0.4]: confidences
    # r = [0.8, 0.9, 0.7, 0.6], predictions [0, 1, 0, 0], correct [1, 1, 0, 1],
    # d = c - r = [0.2, 0.1, -0.7, 0.4]
    d = [0.2, 0.1, -0.7, 0.4]
    r = [0.8, 0.9, 0.7, 0.6]
    s = sum(
        d[i] * d[j] * np.exp(-2.5 * abs(r[i] - r[j]))
        for i in range(4)
        for j in range(4)
    )
    y, p = [0, 1, 1, 0], [0.2, 0.9, 0.3, 0.4]
    assert mmce(y, p, squared=True) == pytest.approx(s / 16, rel=1e-13)
    assert mmce(y, p) == pytest.approx(np.sqrt(s / 16), rel=1e-13)
    assert mmce(y, p) == pytest.approx(0.08905030564111, rel=1e-12)


@pytest.mark.parametrize(("n", "k", "seed"), [(60, 3, 0), (90, 2, 1), (70, 6, 2)])
def test_matches_the_double_loop(n, k, seed):
    y, p = _data(n, k, seed)
    w = np.random.default_rng(seed).uniform(0.1, 3.0, n)
    for bandwidth in (0.4, 0.05, 0.003):  # 0.003: several blocks of the sort
        assert mmce(y, p, bandwidth=bandwidth) == pytest.approx(
            _slow(y, p, bandwidth), rel=1e-11
        )
        assert mmce(y, p, bandwidth=bandwidth, sample_weight=w) == pytest.approx(
            _slow(y, p, bandwidth, w), rel=1e-11
        )


def test_pair_sum_with_ties_and_extreme_bandwidths():
    rng = np.random.default_rng(3)
    r = np.round(rng.uniform(0.3, 1.0, 300), 2)  # many ties
    d = rng.normal(size=300)
    for bw in (10.0, 0.4, 1e-3, 1e-6):
        K = np.exp(-np.abs(r[:, None] - r[None, :]) / bw)
        assert laplacian_pair_sum(r, d, bw) == pytest.approx(d @ K @ d, rel=1e-10)


#: netcal 1.4.0 (numpy 2.4.6), ``netcal.metrics.MMCE().measure(p, y)`` on
#: ``_data(n, k, seed)``, computed in a separate venv with
#: ``pip install torch==2.13.0 netcal`` (netcal's kernel is
#: ``exp(-2.5 |r_i - r_j|)``, the square root of the V-statistic over N^2).
NETCAL = [
    ((40, 3, 0), 0.31361440763477505),
    ((200, 10, 1), 0.34548716431617965),
    ((500, 2, 2), 0.3407751907737906),
]


@pytest.mark.parametrize(("args", "expected"), NETCAL)
def test_netcal_reference_numbers(args, expected):
    y, p = _data(*args)
    assert maximum_mean_calibration_error(y, p) == pytest.approx(expected, rel=1e-12)


def test_calibrated_confidence_is_small_and_weights_are_rows():
    rng = np.random.default_rng(4)
    n = 20000
    r = rng.uniform(0.5, 1.0, n)
    correct = rng.uniform(size=n) < r  # calibrated confidence
    y = np.where(correct, 1, 0)
    p = r  # P(y = 1) = r > 0.5: predicts 1, right with probability r
    assert mmce(y, p) < 0.01
    assert mmce(y, np.minimum(r + 0.2, 1.0)) > 0.1  # over-confident
    w = rng.integers(0, 3, 500)
    w[:2] = 1
    a = mmce(y[:500], p[:500], sample_weight=w.astype(float))
    b = mmce(np.repeat(y[:500], w), np.repeat(p[:500], w))
    assert a == pytest.approx(b, rel=1e-12)


def test_large_n_is_fast_and_uses_no_quadratic_memory():
    import tracemalloc

    y, p = _data(200_000, 10, 5)
    tracemalloc.start()
    value = mmce(y, p)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 200 * 200_000  # O(n) bytes; an n x n float64 array is 3.2e11
    assert 0.0 < value < 1.0


def test_bad_input():
    y, p = _data(50, 3, 6)
    with pytest.raises(ValueError, match="bandwidth"):
        mmce(y, p, bandwidth=0.0)
    bad = p.copy()
    bad[3, 0] = np.nan
    with pytest.raises(ValueError, match="NaN|finite"):
        mmce(y, bad)
    with pytest.raises(ValueError, match="sum"):
        mmce(y, p * 0.9)
    with pytest.raises(ValueError, match="sums to 0"):
        mmce(y, p, sample_weight=np.zeros(50))
    with pytest.raises(ValueError, match="labels="):
        mmce(np.zeros(50, int), p)
