"""The compiled kernels of skcalib._core.accel (the ``fast`` extra) give exactly
what the numpy paths give: ranges, per-bin counts and table look-ups, and
so the same fitted histogram binning and the same probabilities."""

import numpy as np
import pytest

from skcalib import HistogramBinningCalibrator
from skcalib._core import accel as _accel
from skcalib._core.binning import (
    _kernel_tables,
    bin_edges,
    bin_sums,
    lookup_bins,
)
from skcalib.datasets import load_predictions

pytest.importorskip("numba")


@pytest.fixture
def kernels(monkeypatch):
    """Kernels for every size (the default threshold keeps small inputs on numpy)."""
    monkeypatch.setattr(_accel, "MIN_SIZE", 0)
    assert _accel.kernels_for(1) is not None
    return _accel


@pytest.fixture
def numpy_only(monkeypatch):
    monkeypatch.setattr(_accel, "kernels_for", lambda size: None)


def _edge_heavy_scores(rng, edges, dtype, n=20_000):
    """Uniform scores, every edge and its float neighbours, 0 and 1."""
    edges = np.asarray(edges, dtype=dtype)
    near = np.concatenate(
        [edges, np.nextafter(edges, 2), np.nextafter(edges, -1), [0.0, 1.0]]
    )
    near = near[(near >= 0) & (near <= 1)].astype(dtype)
    scores = np.concatenate([rng.uniform(size=n).astype(dtype), near])
    return rng.permutation(scores)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.int8])
@pytest.mark.parametrize("layout", ["C", "F", "strided"])
def test_value_range_matches_numpy(kernels, dtype, layout):
    rng = np.random.default_rng(0)
    x = (rng.normal(size=(300, 7)) * 50).astype(dtype)
    if layout == "F":
        x = np.asfortranarray(x)
    elif layout == "strided":
        x = x[::2, ::3]
    lo, hi, nan = kernels.value_range(x)
    assert (lo, hi, nan) == (x.min(), x.max(), False)
    assert type(lo) is type(x.min())


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("where", [0, 1234, -1])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_value_range_reports_non_finite_anywhere(kernels, dtype, where, bad):
    x = np.linspace(-3, 3, 5000).astype(dtype)
    x[where] = bad
    lo, hi, nan = kernels.value_range(x)
    assert nan == bool(np.isnan(bad))
    if not np.isnan(bad):
        assert (lo, hi) == (x.min(), x.max())


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize(
    "n_bins, strategy",
    [(2, "uniform"), (15, "uniform"), (97, "uniform"), (10, "quantile")],
)
@pytest.mark.parametrize("target_kind", ["bool", "int"])
def test_cell_counts_equal_binary_search_counts(
    kernels, dtype, n_bins, strategy, target_kind
):
    rng = np.random.default_rng(n_bins)
    base = rng.beta(0.5, 0.5, 3000).round(2)  # ties for quantile edges
    edges = bin_edges(base, n_bins, strategy)
    scores = _edge_heavy_scores(rng, edges, dtype)
    y = rng.integers(0, 2, scores.size)
    target = y.astype(bool) if target_kind == "bool" else y
    interior = np.ascontiguousarray(edges[1:-1], dtype=dtype)
    counts, positives = kernels.cell_counts(
        scores, target, *_kernel_tables(interior), edges.size - 1
    )
    ids = np.searchsorted(interior, scores, side="left")
    ref_counts, ref_pos = bin_sums(ids, edges.size - 1, None, y.astype(bool))
    np.testing.assert_array_equal(counts, ref_counts)
    np.testing.assert_array_equal(positives, ref_pos)
    assert counts.sum() == scores.size


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("columns", [None, 2, 3])
def test_cell_lookup_equals_indexing(kernels, dtype, columns):
    rng = np.random.default_rng(1)
    edges = bin_edges(None, 15, "uniform")
    scores = _edge_heavy_scores(rng, edges, dtype)
    shape = (15,) if columns is None else (15, columns)
    table = rng.uniform(size=shape).astype(dtype)
    interior = np.ascontiguousarray(edges[1:-1], dtype=dtype)
    ref = table[np.searchsorted(interior, scores, side="left")]
    out = lookup_bins(scores, edges, table, in_range=True)
    np.testing.assert_array_equal(out, ref)
    assert out.dtype == table.dtype
    direct = kernels.cell_lookup(scores, *_kernel_tables(interior), table)
    if columns == 3:
        assert direct is None  # three columns: the numpy path
    else:
        np.testing.assert_array_equal(direct, ref)


@pytest.mark.parametrize("smoothing", [0.0, 2.0])
@pytest.mark.parametrize("multi_class", ["ovr", "top_label"])
def test_histogram_binning_is_the_same_with_and_without_kernels(
    monkeypatch, smoothing, multi_class
):
    # Real predictions: CIFAR-10 WideResNet softmax outputs (float32), binary
    # (class 3 against the rest) and ten-class.
    data = load_predictions("cifar10_wideresnet")
    probs, labels = data.probs, data.labels
    binary = np.column_stack((1 - probs[:, 3], probs[:, 3])), (labels == 3).astype(int)
    for X, y in [binary, (probs, labels)]:
        params = dict(n_bins=15, smoothing=smoothing, multi_class=multi_class)
        with monkeypatch.context() as m:
            m.setattr(_accel, "kernels_for", lambda size: None)
            ref = HistogramBinningCalibrator(**params).fit(X, y)
            ref_proba = ref.predict_proba(X)
        with monkeypatch.context() as m:
            m.setattr(_accel, "MIN_SIZE", 0)
            cal = HistogramBinningCalibrator(**params).fit(X, y)
            proba = cal.predict_proba(X)
        for a, b in zip(cal.bin_counts_, ref.bin_counts_, strict=True):
            np.testing.assert_array_equal(a, b)
        for a, b in zip(cal.bin_proba_, ref.bin_proba_, strict=True):
            np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(proba, ref_proba)
        assert proba.dtype == np.float32


def test_binary_fit_from_integer_labels_equals_boolean_target(numpy_only):
    # The binary fit hands the 0/1 encoded labels to the map; the numpy path
    # turns them into booleans, the kernels count the non-zero ones.
    rng = np.random.default_rng(3)
    p = rng.uniform(size=5000)
    y = (rng.uniform(size=5000) < p).astype(int)
    cal = HistogramBinningCalibrator(n_bins=7, smoothing=0, strategy="uniform").fit(
        p, y
    )
    ids = np.searchsorted(np.linspace(0, 1, 8)[1:-1], p, side="left")
    counts = np.bincount(ids, minlength=7)
    np.testing.assert_array_equal(cal.bin_counts_[0], counts)
    np.testing.assert_allclose(
        cal.bin_proba_[0], np.bincount(ids, weights=y, minlength=7) / counts
    )


def test_non_finite_scores_are_reported_through_the_kernel(kernels):
    p = np.random.default_rng(0).uniform(size=10_000)
    y = (p > 0.5).astype(int)
    p[7777] = np.nan
    with pytest.raises(ValueError, match="Input X contains NaN"):
        HistogramBinningCalibrator().fit(p, y)
    p[7777] = np.inf
    with pytest.raises(ValueError, match="Input X contains infinity"):
        HistogramBinningCalibrator().fit(p, y)


def test_small_inputs_and_the_environment_switch_use_numpy(monkeypatch):
    assert _accel.kernels_for(_accel.WARM_SIZE - 1) is None
    _accel._kernels.cache_clear()
    monkeypatch.setenv("SKCALIB_DISABLE_NUMBA", "1")
    try:
        assert _accel.kernels_for(10**9) is None
    finally:
        _accel._kernels.cache_clear()
    monkeypatch.delenv("SKCALIB_DISABLE_NUMBA")
    assert _accel.kernels_for(10**9) is not None


@pytest.mark.parametrize("k", [1, 2, 3, 10, 1000, 5000])
def test_venn_abers_sweep_compiled_equals_python(kernels, numpy_only, k):
    # numpy_only makes kernels_for return None: the Python sweep on lists is
    # the reference; kernels.compiled(...) is called directly on the arrays.
    from skcalib.calibration._venn_abers import _upper_fits, _upper_fits_sweep

    rng = np.random.default_rng(k)
    w = rng.integers(1, 4, k).astype(np.float64)
    u = np.minimum(rng.integers(0, 4, k), w)
    ref_num, ref_den = _upper_fits(w, u)  # Python
    cw = np.r_[0.0, np.cumsum(w)]
    cu = np.r_[0.0, np.cumsum(u)]
    num, den = np.empty(k), np.empty(k)
    kernels._compiled(_upper_fits_sweep)(
        cw, cu, np.empty(k + 1), np.empty(k + 1), num, den
    )
    np.testing.assert_array_equal(num, ref_num)
    np.testing.assert_array_equal(den, ref_den)
    # Isotonic fits with one extra positive: between the mean and 1.
    assert np.all((num / den >= 0) & (num / den <= 1))


def test_venn_abers_is_the_same_with_and_without_kernels(monkeypatch):
    from skcalib import VennAbersCalibrator

    data = load_predictions("cifar10_wideresnet")
    p, y = data.probs[:, 3], (data.labels == 3).astype(int)
    with monkeypatch.context() as m:
        m.setattr(_accel, "kernels_for", lambda size: None)
        ref = VennAbersCalibrator().fit(p, y).predict_interval(p)
    with monkeypatch.context() as m:
        m.setattr(_accel, "MIN_SIZE", 0)
        out = VennAbersCalibrator().fit(p, y).predict_interval(p)
    np.testing.assert_array_equal(out[0], ref[0])
    np.testing.assert_array_equal(out[1], ref[1])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_kernels_place_out_of_range_scores_as_assign_bins(kernels, dtype):
    # Callers promise scores in [0, 1]; a broken promise must not read past
    # the cell table: finite scores outside it land in the edge cells, in the
    # bin assign_bins gives them, and NaN stays in bounds.
    from skcalib._core.binning import assign_bins

    edges = bin_edges(None, 15, "uniform")
    scores = np.array(
        [-1e30, -1.0, -1e-300, 0.0, 0.5, 1.0, 1.0 + 1e-6, 3.0, 1e30, np.inf, -np.inf]
        * 10
    ).astype(dtype)
    interior = np.ascontiguousarray(edges[1:-1], dtype=dtype)
    ids = assign_bins(scores, edges)
    table = np.arange(15.0).astype(dtype)
    out = kernels.cell_lookup(scores, *_kernel_tables(interior), table)
    np.testing.assert_array_equal(out, table[ids])
    counts, _ = kernels.cell_counts(
        scores, np.ones(scores.size, bool), *_kernel_tables(interior), 15
    )
    np.testing.assert_array_equal(counts, np.bincount(ids, minlength=15))
    nan = kernels.cell_lookup(
        np.full(9, np.nan, dtype), *_kernel_tables(interior), table
    )
    assert np.isin(nan, table).all()


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.int8, np.uint8])
@pytest.mark.parametrize("case", ["all", "one_absent", "negative"])
def test_present_labels_stop_early_and_equal_bincount(monkeypatch, dtype, case):
    """The early-stopping scan of the labels (kernels) finds what the
    bincount finds: every label present, one absent, a negative range."""
    from skcalib._core import labels

    rng = np.random.default_rng(41)
    y = rng.integers(0, 9, 5000)
    if case == "one_absent":
        y[y == 4] = 5
    if case == "negative":
        y = y - 3 if np.issubdtype(dtype, np.signedinteger) else y
    y = y.astype(dtype)
    expected = np.unique(y)
    monkeypatch.setattr(_accel, "MIN_SIZE", 0)
    got = labels.present_labels(y)
    assert got.dtype == y.dtype
    np.testing.assert_array_equal(got, expected)
    classes, codes = labels.unique_inverse(y)
    ref_classes, ref_codes = np.unique(y, return_inverse=True)
    np.testing.assert_array_equal(classes, ref_classes)
    np.testing.assert_array_equal(codes, ref_codes)
    monkeypatch.setattr(_accel, "kernels_for", lambda size: None)
    np.testing.assert_array_equal(labels.present_labels(y), expected)


def test_encode_of_labels_that_are_their_codes():
    """Labels 0..K-1 against classes arange(K) (also when some are absent)
    are their own codes; a label outside still raises the usual error."""
    from skcalib._core.labels import encode, lookup

    y = np.array([2, 3, 2, 5])
    classes = np.arange(6)
    np.testing.assert_array_equal(encode(y, classes), y)
    codes, known = lookup(y, classes)
    np.testing.assert_array_equal(codes, y)
    assert known.dtype == bool and known.all()
    with pytest.raises(ValueError, match=r"label\(s\) \[6\] that are not in"):
        encode(np.array([0, 6]), classes)


# ------------------------------------------------------------- cold start
_FRESH_PROCESS = """
import sys
import numpy as np
from skcalib import HistogramBinningCalibrator, VennAbersCalibrator
from skcalib._core import accel
from skcalib.metrics import expected_calibration_error, reliability_curve

rng = np.random.default_rng(0)
p = rng.dirichlet(np.ones(10), 200_000)
y = rng.integers(0, 10, 200_000)
assert p.size < accel.MIN_SIZE
for kind in ("confidence", "top_label", "classwise"):
    expected_calibration_error(y, p, kind=kind)
reliability_curve(y, p, strategy="quantile")
HistogramBinningCalibrator().fit(p, y).predict_proba(p)
VennAbersCalibrator().fit(p[:50_000, 0], y[:50_000] == 0)
print("numba" in sys.modules)
"""


def test_a_fresh_process_never_loads_numba_below_min_size():
    # 2e5 x 10 probabilities: the numpy path takes milliseconds, importing
    # numba and loading the kernels takes about a second (seconds to
    # compile them): the metrics and calibrators must not touch numba.
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", _FRESH_PROCESS],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "False"


def test_run_declines_what_would_compile_below_min_size(monkeypatch):
    import numba

    monkeypatch.setattr(_accel, "_numpy_work", [0])
    fn = numba.njit(lambda x, t: x.sum() + t)
    x = np.arange(5.0)
    assert _accel._run(fn, _accel.MIN_SIZE - 1, x, 1.0) is _accel._DECLINED
    assert not fn.overloads  # declining compiled nothing
    assert _accel._run(fn, _accel.MIN_SIZE, x, 1.0) == 11.0  # compiles
    # Now compiled for (float64[::1], float64): a small call takes it, and
    # other argument types are declined again.
    assert _accel._run(fn, 1, x, 2.0) == 12.0
    assert _accel._run(fn, 1, x.astype(np.float32), 2.0) is _accel._DECLINED
    assert len(fn.overloads) == 1


def test_a_loop_of_mid_size_calls_loads_the_kernels_once_it_has_paid(monkeypatch):
    import numba

    monkeypatch.setattr(_accel, "_numpy_work", [0])
    fn = numba.njit(lambda x: x.sum())
    x = np.arange(7.0)
    size = _accel.WARM_SIZE
    runs = 0
    while _accel._run(fn, size, x) is _accel._DECLINED:
        runs += 1
    # The numpy path ran MIN_SIZE entries in place of the kernel: loading
    # it now costs at most what the numpy path has cost so far.
    assert runs == _accel.MIN_SIZE // size
    assert _accel._run(fn, size, x.astype(np.float32)) == 21.0  # compiles too
    assert _accel._run(fn, size - 1, x) == 21.0  # compiled: any size
    assert _accel.kernels_for(size - 1) is None  # but kernels_for is not asked


def test_loaded_kernels_serve_inputs_from_warm_size(kernels):
    # Once a kernel has run for some argument types (the fixture loads the
    # kernels; a call at MIN_SIZE = 0 compiles value_range for float64),
    # inputs from WARM_SIZE take it without a new compilation, and give the
    # numpy path's result.
    x = np.random.default_rng(0).normal(size=_accel.WARM_SIZE)
    assert kernels.value_range(x) == (x.min(), x.max(), False)
    kernels.MIN_SIZE = 1 << 26
    k = _accel.kernels_for(x.size)
    assert k is not None
    assert _accel._ready(k.value_range, (x,))
    assert _accel.value_range(x) == (x.min(), x.max(), False)
    assert _accel.kernels_for(_accel.WARM_SIZE - 1) is None


def test_python_loops_compile_after_the_loop_budget(monkeypatch):
    def loop(x):
        total = 0.0
        for v in x:
            total += v
        return total

    monkeypatch.setattr(_accel, "_loop_work", [0])
    monkeypatch.setattr(_accel, "_compiled_fns", set())
    size = _accel.WARM_SIZE
    assert _accel.compiled(loop, size - 1) is None  # small: never counts
    assert _accel._loop_work[0] == 0
    runs = 0
    while _accel.compiled(loop, size) is None:
        runs += 1
    # Python until LOOP_BUDGET entries have run that way, then compiled.
    assert runs == -(-_accel.LOOP_BUDGET // size)
    fn = _accel.compiled(loop, size)
    assert fn(np.arange(4.0)) == 6.0
    assert _accel.compiled(loop, size - 1) is None
    monkeypatch.setattr(_accel, "_compiled_fns", set())
    monkeypatch.setattr(_accel, "_loop_work", [0])
    assert _accel.compiled(loop, _accel.MIN_SIZE) is not None  # large: at once
