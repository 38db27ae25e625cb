"""The fused one-pass kernels of the binned metrics (skcalib._core.accel,
loops in skcalib._core.accel.kernels) give the numpy path's per-cell sums
bit for bit, and the numpy path's errors for bad probabilities."""

import numpy as np
import pytest

from skcalib._core import accel as _accel
from skcalib._core.inputs import check_metric_inputs
from skcalib._core.scores import rounding_tolerance
from skcalib._core.top1 import _block_rows, top1
from skcalib._core.totals import statistics
from skcalib.metrics import classwise_calibration_error, expected_calibration_error

pytest.importorskip("numba")

KINDS = ("confidence", "top_label", "classwise")


def _numpy_path(monkeypatch):
    monkeypatch.setattr(_accel, "kernels_for", lambda size: None)


@pytest.fixture
def fused(monkeypatch):
    """Kernels for every size (the production threshold is 65536 entries)."""
    monkeypatch.setattr(_accel, "MIN_SIZE", 0)
    assert _accel.kernels_for(1) is not None


def _softmax(rng, n, k, dtype, scale=2.0):
    z = rng.standard_normal((n, k)) * scale
    p = np.exp(z - z.max(axis=1, keepdims=True))
    return (p / p.sum(axis=1, keepdims=True)).astype(dtype)


def _both(f):
    """``f()`` with the kernels, then on the numpy path."""
    with pytest.MonkeyPatch.context() as m:
        m.setattr(_accel, "MIN_SIZE", 0)
        a = f()
    with pytest.MonkeyPatch.context() as m:
        _numpy_path(m)
        b = f()
    return a, b


def _rounded_rows(rng, n, k, dtype):
    """Softmax rows, a quarter of them on a grid of 1/10 (scores on the edges
    of 10 and 5 uniform bins, and ties of the row maximum)."""
    p = _softmax(rng, n, k, np.float64)
    q = np.round(p[: n // 4] * 10)
    q[:, 0] += 10 - q.sum(axis=1)  # the grid rows sum to 10 tenths exactly
    ok = q.min(axis=1) >= 0
    p[: n // 4][ok] = q[ok] / 10
    return p.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
@pytest.mark.parametrize("k", [3, 30, 40])  # 40: the vectorised row passes
def test_statistics_equal_numpy_path(dtype, weighted, kind, strategy, k):
    rng = np.random.default_rng(k)
    n = 3000 if k == 3 else 2500  # several blocks of the numpy path at K >= 30
    p = _rounded_rows(rng, n, k, dtype)
    y = rng.integers(0, k, n)
    w = rng.random(n) * 3 if weighted else None
    inp = check_metric_inputs(y, p, sample_weight=w, check_values=False)
    for n_bins in (1, 10, 15):
        a, b = _both(lambda m=n_bins: statistics(inp, kind, m, strategy)[0])
        assert a.shape == b.shape
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("kind", KINDS)
def test_binary_1d_equal_numpy_path(dtype, weighted, kind):
    rng = np.random.default_rng(7)
    n = 4000
    p = rng.random(n)
    p[:1000] = np.round(p[:1000] * 10) / 10  # on the edges, and p == 1 - p
    p = p.astype(dtype)
    y = rng.integers(0, 2, n)
    w = rng.random(n) if weighted else None
    inp = check_metric_inputs(y, p, sample_weight=w, check_values=False)
    a, b = _both(lambda: statistics(inp, kind, 10, "uniform")[0])
    np.testing.assert_array_equal(a, b)
    # 1-D binary is the 2-D two-column problem (same cells)
    p2 = np.column_stack([1 - p, p]).astype(dtype)
    inp2 = check_metric_inputs(y, p2, sample_weight=w, check_values=False)
    c, d = _both(lambda: statistics(inp2, kind, 10, "uniform")[0])
    np.testing.assert_array_equal(c, d)
    np.testing.assert_allclose(a, c, rtol=1e-12, atol=0)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_confidence_totals_match_reference(fused, dtype):
    """Against a direct computation: bins by ``np.searchsorted`` on the edges
    in the scores' dtype (right-closed), sums by ``np.add.at``."""
    rng = np.random.default_rng(3)
    n, k, n_bins = 5000, 10, 10
    p = _rounded_rows(rng, n, k, dtype)
    y = rng.integers(0, k, n)
    w = rng.random(n)
    inp = check_metric_inputs(y, p, sample_weight=w, check_values=False)
    totals = statistics(inp, "confidence", n_bins, "uniform")[0][:, 0]
    conf = p.max(axis=1)
    hit = (p.argmax(axis=1) == y).astype(float)
    interior = np.linspace(0, 1, n_bins + 1)[1:-1].astype(dtype)
    ids = np.searchsorted(interior, conf, side="left")
    ws = w / inp.weight_scale
    ref = np.zeros((5, n_bins))
    for row, v in enumerate([ws, ws * conf, ws * hit, ws * ws, np.ones(n)]):
        np.add.at(ref[row], ids, v)
    np.testing.assert_allclose(totals, ref, rtol=1e-12, atol=1e-12)
    # a score on an edge is in the lower bin: 0.3 (float32 or float64) in bin 2
    on_edge = conf == dtype(0.3)
    assert on_edge.any()
    assert set(ids[on_edge]) == {2}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_top1_equal_numpy_path(dtype):
    rng = np.random.default_rng(5)
    p = _rounded_rows(rng, 3001, 7, dtype)  # odd: the unpaired last row
    p[5] = np.array([0.25, 0.25, 0, 0.5, 0, 0, 0], dtype=dtype)[[3, 1, 0, 2, 4, 5, 6]]
    (pa, ca), (pb, cb) = _both(lambda: top1(p))
    np.testing.assert_array_equal(pa, pb)
    np.testing.assert_array_equal(ca, cb)
    np.testing.assert_array_equal(pa, p.argmax(axis=1))  # first column on ties
    assert ca.dtype == dtype


def _error(f):
    try:
        f()
    except ValueError as exc:
        return str(exc)
    return None


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("bad", ["nan", "-nan", "negative", "above", "sum", "inf"])
@pytest.mark.parametrize("k", [4, 40])
def test_bad_values_same_message(dtype, kind, bad, k):
    rng = np.random.default_rng(11)
    p = _softmax(rng, 3000, k, dtype)
    y = rng.integers(0, k, 3000)
    row = 2100
    if bad in ("nan", "-nan"):
        p[row, 1] = np.nan if bad == "nan" else -np.nan
        p[2500, 0] = np.nan
    elif bad == "negative":
        p[row, 2] = -0.25
    elif bad == "above":
        p[row] = 0
        p[row, 0] = 1.5
    elif bad == "sum":
        p[row] *= 1.01
    else:
        p[row, 0] = np.inf
    messages = _both(
        lambda: _error(lambda: expected_calibration_error(y, p, kind=kind))
    )
    assert messages[0] is not None
    assert messages[0] == messages[1]
    assert f"row {row}" in messages[0]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_binary_bad_values_same_message(dtype):
    rng = np.random.default_rng(12)
    p = rng.random(3000).astype(dtype)
    y = rng.integers(0, 2, 3000)
    for value in (np.nan, -0.5, 1.5):
        q = p.copy()
        q[1700] = value
        for kind in KINDS:
            a, b = _both(
                lambda q=q, kind=kind: _error(
                    lambda: expected_calibration_error(y, q, kind=kind)
                )
            )
            assert a is not None and a == b and "row 1700" in a


def test_row_sums_near_the_tolerance(fused):
    """Rows whose sum is just inside the rounding tolerance (5e-5 per column)
    are accepted, just outside rejected, as on the numpy path."""
    rng = np.random.default_rng(13)
    p = _softmax(rng, 2000, 4, np.float64)
    y = rng.integers(0, 4, 2000)
    tol = 2e-4  # rounding_tolerance(4, float64)
    p[100] *= 1 + tol * (1 - 1e-9)  # within the kernel's margin: numpy decides
    a, b = _both(lambda: expected_calibration_error(y, p))
    assert a == b
    p[100] *= 1 + 1e-6
    a, b = _both(lambda: _error(lambda: expected_calibration_error(y, p)))
    assert a is not None and a == b and "row 100 sums to" in a


@pytest.mark.parametrize("kind", KINDS)
def test_unchecked_bad_values_take_numpy_path(kind):
    """``check_values=False`` (callers that check elsewhere) with a NaN: the
    kernel's result is not used, the numpy path's is."""
    rng = np.random.default_rng(17)
    p = _softmax(rng, 3000, 5, np.float64)
    p[10, 3] = np.nan
    y = rng.integers(0, 5, 3000)
    inp = check_metric_inputs(y, p, check_values=False)

    def unchecked():
        try:
            return statistics(inp, kind, 10, "uniform", check_values=False)[0]
        except ValueError as exc:  # the numpy path's own failure on NaN
            return str(exc)

    a, b = _both(unchecked)
    if isinstance(b, str):
        assert a == b
    else:
        np.testing.assert_array_equal(a, b)


def test_non_contiguous_takes_numpy_path(fused):
    rng = np.random.default_rng(19)
    p = np.asfortranarray(_softmax(rng, 3000, 6, np.float64))
    y = rng.integers(0, 6, 3000)
    inp = check_metric_inputs(y, p, check_values=False)
    assert _accel.binned_totals(p, y, None, None, 10, "confidence", 1, 1.0) is None
    a, b = _both(lambda: statistics(inp, "classwise", 10, "uniform")[0])
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_metrics_equal_numpy_path(dtype):
    rng = np.random.default_rng(23)
    p = _rounded_rows(rng, 4000, 10, dtype)
    y = rng.integers(0, 10, 4000)
    w = rng.integers(0, 4, 4000)
    for kw in ({}, {"kind": "top_label"}, {"norm": "l2", "debias": True}):
        a, b = _both(
            lambda kw=kw: expected_calibration_error(y, p, sample_weight=w, **kw)
        )
        assert a == b
    a, b = _both(lambda: classwise_calibration_error(y, p, n_bins=20))
    assert a == b
    # weight 2 is a duplicated row, on the kernel path
    with pytest.MonkeyPatch.context() as m:
        m.setattr(_accel, "MIN_SIZE", 0)
        w2 = np.where(np.arange(4000) < 50, 2, 1)
        dup = np.r_[np.arange(4000), np.arange(50)]
        weighted = expected_calibration_error(y, p, sample_weight=w2)
        duplicated = expected_calibration_error(y[dup], p[dup])
    assert weighted == pytest.approx(duplicated, rel=1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("k", [4, 40])
def test_negative_zero_is_a_valid_probability(dtype, k):
    """-0.0 has the sign bit the kernels flag; the numpy check accepts it and
    the kernel's sums (bins, top-1) are still the numpy path's."""
    rng = np.random.default_rng(29)
    p = _rounded_rows(rng, 3000, k, dtype)
    p[p == 0] = -0.0
    p[7, :] = 0
    p[7, 1] = 1
    p[7, 0] = -0.0
    assert np.signbit(p).any()
    y = rng.integers(0, k, 3000)
    inp = check_metric_inputs(y, p, check_values=False)
    for kind in KINDS:
        a, b = _both(lambda kind=kind: statistics(inp, kind, 10, "uniform")[0])
        np.testing.assert_array_equal(a, b)
    (pa, ca), (pb, cb) = _both(lambda: top1(p))
    np.testing.assert_array_equal(pa, pb)
    np.testing.assert_array_equal(ca, cb)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_wide_rows_ties_and_edges_equal_numpy_path(dtype):
    """Many columns (vectorised passes): ties of the row maximum go to the
    first column, entries on the edges to the lower bin, as numpy."""
    rng = np.random.default_rng(31)
    k, n = 64, 3000
    p = _rounded_rows(rng, n, k, dtype)
    p[:200] = 0
    cols = rng.integers(0, k, (200, 2))
    p[np.arange(200), cols[:, 0]] += dtype(0.5)
    p[np.arange(200), cols[:, 1]] += dtype(0.5)  # a tie, or a single 1.0
    y = rng.integers(0, k, n)
    (pa, ca), (pb, cb) = _both(lambda: top1(p))
    np.testing.assert_array_equal(pa, p.argmax(axis=1))
    np.testing.assert_array_equal(pa, pb)
    np.testing.assert_array_equal(ca, cb)
    w = rng.random(n)
    for weights in (None, w):
        inp = check_metric_inputs(y, p, sample_weight=weights, check_values=False)
        for kind in KINDS:
            for n_bins in (1, 2, 10):
                a, b = _both(
                    lambda i=inp, kind=kind, m=n_bins: statistics(
                        i, kind, m, "uniform"
                    )[0]
                )
                np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("k", [2, 10, 31])
@pytest.mark.parametrize("extra", [1, 2, 3])
def test_block_tails_equal_numpy_path(dtype, k, extra):
    """Below 32 columns the kernel scans 16 rows at a time (the top-1 scan of
    the quantile path four): blocks whose length is not a multiple of 16
    (the last one, and every one when the block is), each kind, weighted or
    not, give the numpy path's sums."""
    rng = np.random.default_rng(41 + k + extra)
    block = _block_rows(np.empty((1, k), dtype=dtype))
    n = 2 * block + extra if k > 2 else 4 * 1024 + extra
    p = _rounded_rows(rng, n, k, dtype)
    y = rng.integers(0, k, n)
    for w in (None, rng.random(n)):
        inp = check_metric_inputs(y, p, sample_weight=w, check_values=False)
        for kind in ("confidence", "top_label"):
            a, b = _both(lambda i=inp, kd=kind: statistics(i, kd, 15, "uniform")[0])
            np.testing.assert_array_equal(a, b)
    (pa, ca), (pb, cb) = _both(lambda: top1(p[: 4 * 17 + extra]))
    np.testing.assert_array_equal(pa, pb)
    np.testing.assert_array_equal(ca, cb)


def test_float32_row_sums_near_the_tolerance(fused):
    """float32 rows are summed in float32 by the narrow scans (and compared
    in float32 with the bound rounded down by the vector kernel), against a
    bound tightened by ``K * 2**-23``: rows just inside or outside the
    tolerance get the numpy path's result or error."""
    rng = np.random.default_rng(43)
    p = _softmax(rng, 2000, 4, np.float32)
    y = rng.integers(0, 4, 2000)
    tol = rounding_tolerance(4, np.float32)
    row = p[100].astype(np.float64)
    for scale, raises in [(1 + tol - 4e-7, False), (1 + tol + 1e-5, True)]:
        p[100] = (row / row.sum() * scale).astype(np.float32)
        a, b = _both(lambda: _error(lambda: expected_calibration_error(y, p)))
        assert a == b and (a is not None) == raises
        if not raises:
            e1, e2 = _both(lambda: expected_calibration_error(y, p))
            assert e1 == e2
