"""CalibrationMonitor: window statistics against the metric functions, time
windows, bad input, and simulations of the sequential test's validity (false
alarms on calibrated streams at most alpha, looking after every batch) and
power (a temperature jump is flagged within a few batches)."""

import datetime

import numpy as np
import pytest
from scipy.special import softmax
from scipy.stats import binom, chi2

import skcalib
from skcalib._core.binning import assign_bins
from skcalib.metrics import (
    brier_score,
    calibration_error_interval,
    classwise_calibration_error,
    expected_calibration_error,
    negative_log_likelihood,
    reliability_curve,
)
from skcalib.monitoring import CalibrationMonitor
from skcalib.monitoring._eprocess import (
    BettingState,
    bet_bounds,
    driving_cells,
    log_e_value,
    step,
)

K = 10


def _batches(rng, n_streams, n_rows, temperature, scale=2.0):
    """Labels and shown probabilities ``(S, n)``, ``(S, n, K)``: the truth is
    softmax(z), the forecast softmax(z / temperature)."""
    z = scale * rng.standard_normal((n_streams, n_rows, K))
    p = softmax(z, axis=-1)
    y = (p.cumsum(axis=-1) < rng.uniform(size=(n_streams, n_rows, 1))).sum(axis=-1)
    return np.minimum(y, K - 1), softmax(z / temperature, axis=-1)


def _simulate(n_streams, temperatures, n_rows=500, n_bins=15, memory=1000, seed=0):
    """First alarm batch of the monitor's e-process and of a chi-square test
    of the per-bin gaps repeated at every look, per stream (-1: none).

    The e-process runs through the monitor's own betting code
    (``skcalib.monitoring._eprocess.step``) on all streams at once.
    """
    rng = np.random.default_rng(seed)
    edges = np.linspace(0, 1, n_bins + 1)
    state = BettingState.start(n_streams, n_bins)
    bounds = bet_bounds(edges, 1)
    gap = np.zeros((n_streams, n_bins))
    var = np.zeros((n_streams, n_bins))
    alarm = np.full(n_streams, -1)
    naive = np.full(n_streams, -1)
    for t, temperature in enumerate(temperatures):
        y, q = _batches(rng, n_streams, n_rows, temperature)
        conf = q.max(axis=-1)
        resid = (q.argmax(axis=-1) == y) - conf
        cells = assign_bins(conf.ravel(), edges).reshape(conf.shape)
        step(state, cells, resid, n_rows, 1 - 1 / memory, bounds)
        logs = log_e_value(state.log_wealth)
        alarm[(alarm < 0) & (logs >= np.log(20))] = t
        ids = (cells + n_bins * np.arange(n_streams)[:, None]).ravel()
        size = n_streams * n_bins
        gap += np.bincount(ids, resid.ravel(), size).reshape(-1, n_bins)
        v = (conf * (1 - conf)).ravel()
        var += np.bincount(ids, v, size).reshape(-1, n_bins)
        stat = np.where(var > 0, gap**2 / np.where(var > 0, var, 1), 0).sum(axis=1)
        p_value = chi2.sf(stat, (var > 0).sum(axis=1))
        naive[(naive < 0) & (p_value < 0.05)] = t
    return alarm, naive


def _stream(seed, n_batches=6, n_rows=300, temperature=1.0):
    rng = np.random.default_rng(seed)
    y, q = _batches(rng, 1, n_rows * n_batches, temperature)
    return y[0], q[0]


# ------------------------------------------------------------ window metrics
def test_window_metrics_equal_the_metric_functions_on_the_window_rows():
    y, q = _stream(0, temperature=1.3)
    mon = CalibrationMonitor(window=700, labels=np.arange(K), random_state=0)
    for start in range(0, y.size, 300):  # batches straddle the windows
        mon.update(y[start : start + 300], q[start : start + 300])
    rows = mon.windows()
    assert [r["n"] for r in rows] == [700, 700, 400]
    assert [r["complete"] for r in rows] == [True, True, False]
    for r in rows:
        ys, qs = y[r["start"] : r["end"]], q[r["start"] : r["end"]]
        kw = {"labels": np.arange(K)}
        assert r["ece"] == pytest.approx(
            expected_calibration_error(ys, qs, **kw), abs=1e-12
        )
        assert r["brier"] == pytest.approx(brier_score(ys, qs, **kw), abs=1e-12)
        assert r["nll"] == pytest.approx(
            negative_log_likelihood(ys, qs, **kw), abs=1e-12
        )
        assert r["accuracy"] == pytest.approx(np.mean(qs.argmax(1) == ys), abs=1e-12)
        curve = reliability_curve(ys, qs, **kw)
        np.testing.assert_allclose(r["curve"].counts, curve.counts)
        np.testing.assert_allclose(r["curve"].accuracy, curve.accuracy, atol=1e-12)


def test_window_ece_interval_is_close_to_the_row_bootstrap_interval():
    y, q = _stream(1, n_batches=10, temperature=1.5)
    mon = CalibrationMonitor(window=3000, n_resamples=400, random_state=0)
    mon.update(y, q)
    (r,) = mon.windows()
    ci = calibration_error_interval(y, q, n_resamples=400, random_state=0)
    assert r["ece_low"] <= r["ece"] <= r["ece_high"] + 0.01
    assert r["ece_low"] == pytest.approx(ci.low, abs=0.01)
    assert r["ece_high"] == pytest.approx(ci.high, abs=0.01)


def test_classwise_windows_and_drivers_name_classes():
    y, q = _stream(2, n_batches=10, temperature=1.8)
    mon = CalibrationMonitor(window=1500, kind="classwise", random_state=0)
    for start in range(0, y.size, 300):
        mon.update(y[start : start + 300], q[start : start + 300])
    r = mon.windows()[0]
    ref = classwise_calibration_error(y[:1500], q[:1500], labels=np.arange(K))
    assert r["classwise_ece"] == pytest.approx(ref, abs=1e-12)
    assert mon.cell_e_values_.shape == (K, 15)
    assert mon.alarm_ is not None
    assert all(d["class"] in range(K) for d in mon.drivers_)


def test_time_windows_and_empty_window():
    y, q = _stream(3, n_batches=1, n_rows=400)
    day = np.datetime64("2024-01-01T00:00", "ns")
    # 100 rows on day 0, 100 on day 1, none on day 2, 200 on day 3
    ts = np.sort(day + np.repeat([0, 30, 75], [100, 100, 200]).astype("timedelta64[h]"))
    mon = CalibrationMonitor(window="1D", random_state=0)
    mon.update(y[:250], q[:250], timestamps=ts[:250])
    mon.update(y[250:], q[250:], timestamps=ts[250:])
    rows = mon.windows()
    assert [r["n"] for r in rows] == [100, 100, 0, 200]
    assert rows[2]["ece"] is None and rows[2]["brier"] is None  # not NaN
    assert rows[0]["start"] == day and rows[0]["end"] == day + np.timedelta64(1, "D")
    assert rows[3]["ece"] == pytest.approx(
        expected_calibration_error(y[200:], q[200:], labels=np.arange(K)), abs=1e-12
    )
    same = CalibrationMonitor(window=datetime.timedelta(days=1)).update(
        y, q, timestamps=ts
    )
    assert [r["n"] for r in same.windows()] == [100, 100, 0, 200]


def test_max_windows_bounds_the_kept_windows():
    y, q = _stream(4, n_batches=4, n_rows=250)
    mon = CalibrationMonitor(window=100, max_windows=3).update(y, q)
    rows = mon.windows()
    assert [r["window"] for r in rows] == [7, 8, 9]
    assert mon.n_windows_dropped_ == 7


# -------------------------------------------------------------- bad input
def test_bad_input_raises_and_leaves_the_state_unchanged():
    y, q = _stream(5, n_batches=1)
    mon = CalibrationMonitor(labels=np.arange(K)).update(y[:100], q[:100])
    before = (mon.n_samples_, mon.log_e_value_, mon.n_batches_)
    bad_y = y[100:200].copy()
    bad_y[3] = 42
    with pytest.raises(ValueError, match=r"\[42\]"):
        mon.update(bad_y, q[100:200])
    bad_q = q[100:200].copy()
    bad_q[5] *= 0.9
    with pytest.raises(ValueError, match="row 5 sums to"):
        mon.update(y[100:200], bad_q)
    nan_q = q[100:200].copy()
    nan_q[2, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        mon.update(y[100:200], nan_q)
    with pytest.raises(ValueError, match="101"):
        mon.update(y[100:200], q[100:201])
    assert (mon.n_samples_, mon.log_e_value_, mon.n_batches_) == before
    # an empty batch is a look that changes nothing else
    mon.update(y[:0], q[:0])
    assert mon.n_batches_ == before[2] + 1 and mon.n_samples_ == before[0]


def test_unseen_class_without_labels_is_an_error():
    y, q = _stream(6, n_batches=1)
    keep = y != 9
    mon = CalibrationMonitor()
    with pytest.raises(ValueError, match="labels="):
        mon.update(y[keep][:50], q[keep][:50])


def test_timestamp_errors():
    y, q = _stream(7, n_batches=1, n_rows=20)
    t0 = np.datetime64("2024-01-01", "ns")
    ts = t0 + np.arange(20).astype("timedelta64[s]")
    kw = {"labels": np.arange(K)}
    with pytest.raises(ValueError, match="row 6 .* before row 5"):
        CalibrationMonitor(window="1h", **kw).update(
            y, q, timestamps=ts[[*range(6), 4, *range(7, 20)]]
        )
    mon = CalibrationMonitor(window="1h", **kw).update(
        y[:10], q[:10], timestamps=ts[10:]
    )
    with pytest.raises(ValueError, match="across batches"):
        mon.update(y[10:], q[10:], timestamps=ts[:10])
    with pytest.raises(ValueError, match="every batch or with none"):
        mon.update(y[10:], q[10:])
    with pytest.raises(ValueError, match="timestamps="):
        CalibrationMonitor(window="1D", **kw).update(y, q)
    with pytest.raises(TypeError, match="datetimes"):
        CalibrationMonitor(window="1D", **kw).update(y, q, timestamps=np.arange(20.0))
    with pytest.raises(ValueError, match="NaT"):
        bad = ts.copy()
        bad[3] = np.datetime64("NaT")
        CalibrationMonitor(window="1D", **kw).update(y, q, timestamps=bad)
    with pytest.raises(ValueError, match="not a duration"):
        CalibrationMonitor(window="1 fortnight", **kw).update(y, q, timestamps=ts)
    with pytest.raises(ValueError, match="alpha"):
        CalibrationMonitor(alpha=1.5).update(y, q)


# ------------------------------------------------------------ the test
def test_monitor_e_value_is_the_core_e_process():
    # the class runs the same betting code as the simulations below
    rng = np.random.default_rng(8)
    temps = [1.0] * 3 + [2.0] * 5
    parts = [_batches(rng, 1, 500, t) for t in temps]
    y = np.concatenate([p[0] for p in parts], axis=1)
    q = np.concatenate([p[1] for p in parts], axis=1)
    edges = np.linspace(0, 1, 16)
    state, bounds = BettingState.start(1, 15), bet_bounds(edges, 1)
    mon = CalibrationMonitor(labels=np.arange(K))
    best = 0.0
    for t in range(len(temps)):
        ys, qs = y[0, t * 500 : (t + 1) * 500], q[0, t * 500 : (t + 1) * 500]
        mon.update(ys, qs)
        conf = qs.max(axis=1)
        cells = assign_bins(conf, edges)[None]
        step(state, cells, ((qs.argmax(1) == ys) - conf)[None], 500, 0.999, bounds)
        logs = log_e_value(state.log_wealth)[0]
        assert mon.log_e_value_ == pytest.approx(logs, abs=1e-12)
        best = max(best, logs)
    assert mon.p_value_ == pytest.approx(min(1.0, np.exp(-best)), rel=1e-12)
    assert mon.alarm_ is not None and mon.alarm_ >= 3


def test_bets_use_past_batches_only():
    # the first batch is bet on with lambda = 0 whatever its outcomes: the
    # wealth after one batch is exactly 1 (predictability)
    y, q = _stream(9, n_batches=1, temperature=3.0)
    mon = CalibrationMonitor().update(y, q)
    assert mon.e_value_ == 1.0
    np.testing.assert_array_equal(mon.cell_e_values_, 1.0)


def test_one_cell_wealth_by_hand():
    # two batches in one bin: wealth = prod over batch 2 of (1 + lambda r),
    # lambda from batch 1 by the aGRAPA rule, shrunk and clipped
    edges = np.linspace(0, 1, 3)  # bins [0, .5], (.5, 1]
    state, bounds = BettingState.start(1, 2), bet_bounds(edges, 1)
    r1 = np.array([0.3, 0.3, 0.3, -0.7, 0.3, 0.3, 0.3, 0.3])  # conf 0.7
    step(state, np.ones((1, 8), np.intp), r1[None], 8, 1.0, bounds)
    m = 9.0
    mean, second = r1.sum() / m, (0.25 + (r1**2).sum()) / m
    shrunk = max(abs(mean) - 2 * np.sqrt(second / m), 0) * np.sign(mean)
    lam = np.clip(shrunk / second, -0.5 / 0.5, 0.5 / 1.0)
    r2 = np.array([0.3, -0.7, 0.3])
    step(state, np.ones((1, 3), np.intp), r2[None], 3, 1.0, bounds)
    assert state.log_wealth[0, 1] == pytest.approx(np.log1p(lam * r2).sum(), abs=1e-14)
    expect = np.log((np.exp(state.log_wealth[0, 1]) + 1) / 2)
    assert log_e_value(state.log_wealth)[0] == pytest.approx(expect, abs=1e-14)


def test_driving_cells_reach_the_threshold_alone():
    logs = np.log(np.array([1.0, 60.0, 0.5, 45.0, 1.2]))
    cells = driving_cells(logs, 0.05)  # average of 5 must reach 20
    np.testing.assert_array_equal(cells, [1, 3])


def _binomial_bound(alpha, n):
    return binom.ppf(0.999, n, alpha) / n


def test_type_one_error_small():
    alarm, naive = _simulate(100, [1.0] * 20, n_rows=300)
    assert (alarm >= 0).mean() <= _binomial_bound(0.05, 100)
    assert (naive >= 0).mean() > (alarm >= 0).mean()


@pytest.mark.slow
def test_type_one_error_under_continuous_monitoring():
    # 1000 calibrated streams, a look after each of 50 batches of 500 rows:
    # false alarms <= alpha + binomial noise; the fixed-n test repeated at
    # every look alarms on many more
    alarm, naive = _simulate(1000, [1.0] * 50)
    rate, naive_rate = (alarm >= 0).mean(), (naive >= 0).mean()
    assert rate <= _binomial_bound(0.05, 1000), rate
    assert naive_rate > 0.15, naive_rate


def test_power_small():
    alarm, _ = _simulate(50, [1.0] * 10 + [1.6] * 8)
    delay = np.where(alarm >= 10, alarm - 10 + 1, 99)
    assert (delay <= 5).mean() >= 0.9


@pytest.mark.slow
def test_power_and_detection_delay():
    # temperature 1 -> 1.6 at batch 25 (500 rows, K = 10): flagged within 5
    # batches in >= 90% of 500 runs
    alarm, _ = _simulate(500, [1.0] * 25 + [1.6] * 10, seed=1)
    before = ((alarm >= 0) & (alarm < 25)).mean()
    delay = np.where(alarm >= 25, alarm - 25 + 1, 99)
    assert before <= _binomial_bound(0.05, 500)
    assert (delay <= 5).mean() >= 0.9, (delay <= 5).mean()


def test_monitor_is_exported():
    assert skcalib.CalibrationMonitor is CalibrationMonitor
    assert "CalibrationMonitor" in skcalib.__all__


def test_window_e_value_is_after_its_last_batch():
    # Time windows of one day, one batch per half day: the batch that opens
    # day 2 closes day 1, whose e-value is the one after day 1's second
    # batch (not after the batch that closed it).
    rng = np.random.default_rng(3)
    mon = CalibrationMonitor(window="1D", labels=np.arange(3), random_state=0)
    seen = []
    for b in range(6):
        p = rng.dirichlet(np.ones(3) * 0.3, 200)
        y = rng.integers(0, 3, 200)  # miscalibrated: the e-process moves
        t = np.datetime64("2024-01-01T00:00") + np.timedelta64(12 * b, "h")
        mon.update(y, p, timestamps=np.full(200, t))
        seen.append(mon.e_value_)
    rows = mon.windows()
    assert [r["n"] for r in rows] == [400, 400, 400]
    assert [r["e_value"] for r in rows[:2]] == [seen[1], seen[3]]
    assert rows[2]["e_value"] == seen[5] and not rows[2]["complete"]
    assert len(set(seen)) == len(seen)  # the values differ: the test can fail
