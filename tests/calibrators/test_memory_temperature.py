"""Temperature scaling without n x K temporaries (issue 23): the blocked
``predict_proba`` and fit on probabilities give the results of the
whole-array formulas bit for bit, and their peak extra memory is bounded."""

import tracemalloc
import warnings

import numpy as np
import pytest

import skcalib._core.solvers.temperature as solver_module
import skcalib.calibration._temperature as temperature_module
from skcalib import TemperatureCalibrator
from skcalib._core.scores import PROBA_FLOOR, Scores, log_floored, softmax
from skcalib._core.solvers.temperature import fit_temperature
from skcalib.metrics import negative_log_likelihood


def reference_softmax(z):
    """The softmax of the whole array, as written before the blocks."""
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    return p


def reference_logits(x, dtype):
    """The logits the calibrator used before: ``log(max(p, floor))`` of the
    whole array for probabilities, ``[0, s]`` / ``log([1 - p, p])`` for 1-D."""
    x = np.asarray(x, dtype=dtype)
    if x.ndim == 1:
        if x.min() < 0 or x.max() > 1:
            return np.column_stack((np.zeros_like(x), x))
        return np.log(np.maximum(np.column_stack((1 - x, x)), dtype(PROBA_FLOOR)))
    if x.min() < 0 or x.max() > 1:
        return x
    return np.log(np.maximum(x, dtype(PROBA_FLOOR)))


def make_logits(n, k, dtype, scale=3.0, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    z = rng.standard_normal((n, k)) * scale
    z[np.arange(n), y] += scale / 3
    return z.astype(dtype), y


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of a few rows, so that every test crosses block boundaries."""
    monkeypatch.setattr(temperature_module, "_PREDICT_BLOCK", 50)
    monkeypatch.setattr(solver_module, "_LOG_BLOCK", 70)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("k", [2, 3, 17])
@pytest.mark.parametrize("kind", ["logits", "probabilities"])
@pytest.mark.parametrize("weighted", [False, True])
def test_blocked_equals_whole_array(small_blocks, dtype, k, kind, weighted):
    z, y = make_logits(1003, k, dtype)
    x = z if kind == "logits" else reference_softmax(z)
    w = np.random.default_rng(1).uniform(0, 3, y.size) if weighted else None
    cal = TemperatureCalibrator().fit(x, y, sample_weight=w)
    logits = reference_logits(x, dtype)
    t_ref = fit_temperature(logits, y, w)[0]
    assert cal.temperature_ == t_ref
    proba = cal.predict_proba(x)
    expected = reference_softmax(logits / logits.dtype.type(cal.temperature_))
    assert proba.dtype == dtype
    np.testing.assert_array_equal(proba, expected)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["logits", "probabilities"])
def test_binary_1d_equals_whole_array(small_blocks, dtype, kind):
    rng = np.random.default_rng(2)
    s = rng.standard_normal(777) * 2
    y = (rng.uniform(size=s.size) < 1 / (1 + np.exp(-s / 2))).astype(int)
    x = (s if kind == "logits" else 1 / (1 + np.exp(-s))).astype(dtype)
    cal = TemperatureCalibrator().fit(x, y)
    logits = reference_logits(x, dtype)
    assert cal.temperature_ == fit_temperature(logits, y)[0]
    expected = reference_softmax(logits / logits.dtype.type(cal.temperature_))
    np.testing.assert_array_equal(cal.predict_proba(x), expected)


def test_probabilities_subsampled_path_equals_logits():
    # Over 200 000 rows: the subsample start and the float32 first pass,
    # each pass taking the log block by block.
    z, y = make_logits(200_003, 3, np.float32, seed=3)
    p = reference_softmax(z)
    t, n_iter, status = fit_temperature(p, y, probabilities=True)
    assert (t, n_iter, status) == fit_temperature(
        np.log(np.maximum(p, np.float32(PROBA_FLOOR))), y
    )
    assert status == "converged"
    # threads give the same sums (blocks added in a fixed order)
    assert fit_temperature(p, y, probabilities=True, n_jobs=2)[0] == t


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_extreme_scores(small_blocks, dtype):
    z, y = make_logits(501, 4, dtype, scale=1e4, seed=4)
    cal = TemperatureCalibrator().fit(z, y)
    proba = cal.predict_proba(z)
    assert np.all(np.isfinite(proba))
    expected = reference_softmax(z / dtype(cal.temperature_))
    np.testing.assert_array_equal(proba, expected)
    # probabilities with exact zeros (floored before the log) and ones
    p = reference_softmax(z)
    assert (p == 0).any()
    cal_p = TemperatureCalibrator(score_type="probability").fit(p, y)
    logits = reference_logits(p, dtype)
    assert cal_p.temperature_ == fit_temperature(logits, y)[0]
    np.testing.assert_array_equal(
        cal_p.predict_proba(p),
        reference_softmax(logits / dtype(cal_p.temperature_)),
    )


def test_separated_and_constant_probabilities(small_blocks):
    # Every true class on top: T stops at its lower bound, computed from the
    # blocked row ranges as from the whole array.
    z, _ = make_logits(300, 3, np.float64, seed=5)
    y = z.argmax(axis=1)
    p = reference_softmax(z)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cal = TemperatureCalibrator().fit(p, y)
    expected = fit_temperature(np.log(np.maximum(p, PROBA_FLOOR)), y)
    assert expected[2] == "lower_bound"
    assert cal.temperature_ == expected[0]
    # Constant rows: the NLL does not depend on T.
    flat = np.full((300, 3), 1 / 3)
    assert fit_temperature(flat, y, probabilities=True) == (1.0, 0, "converged")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_out_and_logit_rows(dtype):
    z, _ = make_logits(64, 5, dtype, seed=6)
    out = z.copy()
    assert softmax(out, out=out) is out
    np.testing.assert_array_equal(out, softmax(z))
    p = reference_softmax(z)
    scores = Scores(p, "probability", 5)
    np.testing.assert_array_equal(scores.logit_rows(10, 30), scores.logits[10:30])
    np.testing.assert_array_equal(log_floored(p), np.log(np.maximum(p, PROBA_FLOOR)))


def _peak(fn):
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_peak_memory_bounds():
    # n x K float32 with K = 200: the per-row float64 arrays of the solver
    # are 1/100 of a copy each. Before issue 23: predict_proba 4 copies
    # (one is the output), the fit on probabilities 2.
    z, y = make_logits(20_000, 200, np.float32, seed=7)
    p = reference_softmax(z)
    copy = z.nbytes
    cal = TemperatureCalibrator().fit(p, y)
    assert _peak(lambda: cal.predict_proba(p)) < 1.2 * copy
    cal_z = TemperatureCalibrator().fit(z, y)
    assert _peak(lambda: cal_z.predict_proba(z)) < 1.2 * copy
    assert _peak(lambda: TemperatureCalibrator().fit(p, y)) < 0.3 * copy
    assert _peak(lambda: negative_log_likelihood(y, p)) < 0.25 * copy
