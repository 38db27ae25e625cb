"""The vector kernel of the confidence and top-label sums below 32 columns
(skcalib._core.accel.simd, called by accel_kernels.top1_vector): 16 rows
at a time in vector lanes, the sums bit for bit those of the numpy path, no
load outside the arrays, and its binning rule checked against
``np.searchsorted`` on the edges."""

import os
import platform
import subprocess
import sys
import tempfile
import textwrap

import numpy as np
import pytest

from skcalib._core import accel as _accel
from skcalib._core.inputs import check_metric_inputs
from skcalib._core.totals import statistics

pytest.importorskip("numba")

from skcalib._core.accel import simd as accel_simd  # noqa: E402  (imports numba)


def _rows(rng, n, k, dtype):
    """Softmax rows, with rows of a few kinds every few groups: on the grid
    of 1/10 (scores on the edges of 10 and 5 bins, ties of the maximum),
    and rows of a single 1.0, every other one with a -0.0 entry (the vector
    check sends its group to the scalar code, which accepts it)."""
    z = rng.standard_normal((n, k)) * 2
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    grid = np.arange(0, n, 37)
    q = np.round(p[grid] * 10)
    q[:, 0] += 10 - q.sum(axis=1)
    ok = q.min(axis=1) >= 0
    p[grid[ok]] = q[ok] / 10
    hot = np.arange(5, n, 53)
    cols = rng.integers(0, k, hot.size)
    p[hot] = np.eye(k)[cols]
    p = p.astype(dtype)
    p[hot[::2], (cols[::2] + 1) % k] = dtype(-0.0)  # in a row of one 1.0
    return p


def _both(f):
    with pytest.MonkeyPatch.context() as m:
        m.setattr(_accel, "MIN_SIZE", 0)
        a = f()
    with pytest.MonkeyPatch.context() as m:
        m.setattr(_accel, "kernels_for", lambda size: None)
        b = f()
    return a, b


@pytest.fixture
def calls(monkeypatch):
    """The number of calls of the vector kernel (it must be the one that
    runs, not a silent fall back to another path)."""
    monkeypatch.setattr(_accel, "MIN_SIZE", 0)
    kernels = _accel._kernels()
    count = [0]
    inner = kernels.top1_vector

    def spy(*args):
        count[0] += 1
        return inner(*args)

    monkeypatch.setattr(kernels, "top1_vector", spy)
    return count


# widths around the lanes of a register (8 float64, 16 float32); the suite
# of test_ece_kernels.py adds 2, 3, 4, 10, 30 and 31
@pytest.mark.parametrize("k", [8, 9, 16, 17, 24])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_every_width_equal_numpy_path(calls, dtype, k):
    rng = np.random.default_rng(k)
    n = 16 * 40 + 7  # whole groups and a tail
    p = _rows(rng, n, k, dtype)
    y = rng.integers(0, k, n)
    for w in (None, rng.random(n) * 3):
        inp = check_metric_inputs(y, p, sample_weight=w, check_values=False)
        for kind in ("confidence", "top_label"):
            for n_bins in (1, 5, 10, 15):
                before = calls[0]
                a, b = _both(
                    lambda i=inp, kd=kind, m=n_bins: statistics(i, kd, m, "uniform")[0]
                )
                assert calls[0] == before + 1
                np.testing.assert_array_equal(a, b)


def _group_runner():
    import numba

    @numba.njit
    def run(p, y, start, tol, n_bins, tau, per_class, width):
        conf = np.empty(16, p.dtype)
        cell = np.empty(16, np.int32)
        slot = np.empty(16, np.int32)
        status = accel_simd.top1_group(
            p, y, start, conf, cell, slot, tol, n_bins, tau, per_class, width
        )
        return status, conf, cell, slot

    return run


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_group_outputs_and_status(dtype):
    """One group: maxima, first columns at them, cells and slots as numpy
    computes them; status 1 for a row that fails the check or holds -0.0,
    2 for a score on an edge, 0 otherwise."""
    run = _group_runner()
    rng = np.random.default_rng(0)
    k, n_bins = 10, 15
    p = rng.dirichlet(np.ones(k), 40).astype(dtype)
    p[3] = 0
    p[3, [2, 7]] = 0.5  # a tie: the first column
    y = rng.integers(0, k, 40)
    interior = np.linspace(0, 1, n_bins + 1)[1:-1].astype(dtype)
    tol, tau = _accel._vector_args(p, interior, n_bins, 1e-4)
    for per_class in (False, True):
        status, conf, cell, slot = run(p, y, 2, tol, n_bins, tau, per_class, (0,) * k)
        rows = p[2:18]
        assert status == 0
        np.testing.assert_array_equal(conf, rows.max(axis=1))
        pred = rows.argmax(axis=1)
        bins = np.searchsorted(interior, rows.max(axis=1))
        cells = bins + pred * n_bins if per_class else bins
        np.testing.assert_array_equal(cell, cells)
        np.testing.assert_array_equal(slot, 2 * cells + (pred == y[2:18]))
    for row, status in [
        (np.r_[0.5, 0.5 + 1e-3, np.zeros(k - 2)], 1),  # the sum
        (np.r_[1.1, -0.1, np.zeros(k - 2)], 1),  # above 1, negative
        (np.r_[0.9, 0.1, -0.0, np.zeros(k - 3)], 1),  # -0.0
        (np.r_[0.2, 0.8, np.zeros(k - 2)], 2),  # 0.2 * 15 = 3: an edge
        (np.r_[np.nan, 1.0, np.zeros(k - 2)], 1),
    ]:
        q = p.copy()
        q[9] = row.astype(dtype)
        assert run(q, y, 0, tol, n_bins, tau, False, (0,) * k)[0] == status


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n_bins", [1, 2, 3, 7, 10, 15, 100, 1000])
def test_binning_rule_equals_searchsorted(dtype, n_bins):
    """The rule of step 3 of accel_simd on scores at and around every edge
    (within 64 units in the last place) and at random: where it does not
    call a score ambiguous, its bin is that of ``np.searchsorted`` on the
    edges in the scores' dtype (right-closed bins)."""
    ftype = np.dtype(dtype).type
    interior = np.linspace(0, 1, n_bins + 1)[1:-1].astype(dtype)
    tau = ftype(_accel._vector_args(np.empty((1, 2), dtype), interior, n_bins, 0.0)[1])
    steps = np.arange(-64, 65)
    m = [np.random.default_rng(n_bins).random(20000).astype(dtype)]
    for e in np.r_[interior, dtype(0), dtype(1)].astype(dtype):
        v = np.full(steps.size, e, dtype=dtype)
        up = v.copy()
        for _ in range(64):
            up = np.where(steps > 0, np.nextafter(up, ftype(2)), up)
            v = np.where(steps < 0, np.nextafter(v, ftype(-1)), v)
        m.append(np.r_[v, up])
    m = np.clip(np.concatenate(m), 0, 1).astype(dtype)
    x = m * ftype(n_bins)  # in the dtype, as the kernel
    b = np.minimum(np.floor(x), n_bins - 1)
    low, high = np.floor(x), np.floor(x) + 1
    top = n_bins - 1

    def near_edge(edge, gap):
        return (edge >= 1) & (edge <= top) & (gap < tau)

    ambiguous = near_edge(low, x - low) | near_edge(high, high - x)
    expected = np.searchsorted(interior, m)
    assert np.array_equal(b[~ambiguous], expected[~ambiguous])
    # the margin is small: few random scores are ambiguous
    assert ambiguous[:20000].mean() < 50 * n_bins * float(np.finfo(dtype).eps) + 1e-3


def test_vector_args_are_exact_in_the_dtype():
    """The float32 row-sum bound is rounded down and the margin up."""
    interior = np.linspace(0, 1, 16)[1:-1].astype(np.float32)
    tol = 1e-4 + 1e-12
    t32, tau32 = _accel._vector_args(np.empty((1, 2), np.float32), interior, 15, tol)
    assert np.float32(t32) == t32 and t32 <= tol
    assert np.nextafter(np.float32(t32), np.float32(1)) > tol
    tau = accel_simd.uniform_tau(interior, 15, np.float32)
    assert np.float32(tau32) == tau32 and tau32 >= tau
    assert _accel._vector_args(np.empty((1, 2)), np.array([0.1, 0.9]), 3, tol) is None
    assert _accel._vector_args(np.empty((1, 2)), interior, 15, 0.5) is None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mmap guard pages")
def test_no_load_past_the_arrays():
    """Arrays that end just before an unreadable page: a load past the end
    of ``y_proba`` or ``y`` would kill the process (run in a child). Top-1
    kernel below 32 columns, classwise chunks of 16 columns above."""
    script = textwrap.dedent(
        """
        import ctypes, mmap
        import numpy as np
        from skcalib._core import accel
        from skcalib.metrics import classwise_calibration_error
        from skcalib.metrics import expected_calibration_error
        accel.MIN_SIZE = 0
        libc = ctypes.CDLL(None)
        libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        keep = []
        def guarded(a):
            page = mmap.PAGESIZE
            size = -(-a.nbytes // page) * page
            buf = mmap.mmap(-1, size + page)
            base = ctypes.addressof(ctypes.c_char.from_buffer(buf))
            assert libc.mprotect(base + size, page, 0) == 0
            at = size - a.nbytes
            view = np.frombuffer(buf, dtype=a.dtype, count=a.size, offset=at)
            view[:] = a.ravel()
            keep.append(buf)
            return view.reshape(a.shape)
        rng = np.random.default_rng(0)
        for dtype in (np.float32, np.float64):
            for k in (2, 3, 5, 8, 10, 16, 17, 31):
                for n in (16, 17, 40, 16 * 9 + 3):
                    p = rng.dirichlet(np.ones(k), n).astype(dtype)
                    y = rng.integers(0, k, n)
                    gp, gy = guarded(p), guarded(y)
                    for kind in ("confidence", "top_label"):
                        kw = dict(kind=kind, labels=np.arange(k))
                        a = expected_calibration_error(gy, gp, **kw)
                        assert a == expected_calibration_error(y, p, **kw)
            for k in (32, 40, 48):  # the chunks of the classwise kernel
                p = rng.dirichlet(np.ones(k) * 0.1, 40).astype(dtype)
                y = rng.integers(0, k, 40)
                gp, gy = guarded(p), guarded(y)
                kw = dict(labels=np.arange(k))
                a = classwise_calibration_error(gy, gp, **kw)
                assert a == classwise_calibration_error(y, p, **kw)
        print("ok")
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, (out.returncode, out.stderr[-2000:])
    assert out.stdout.strip() == "ok"


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("k", [32, 40, 47, 64])
def test_high_entries(dtype, k):
    """The columns above the first bin (by the vector compress where the
    target has it): numpy's columns, an entry on the edge not among them."""
    import numba

    from skcalib._core.accel import kernels as accel_kernels

    @numba.njit
    def run(p, e1, idx):
        return [accel_kernels.high_entries(p, i, e1, idx[i]) for i in range(len(p))]

    rng = np.random.default_rng(k)
    p = rng.dirichlet(np.ones(k) * 0.2, 50).astype(dtype)
    e1 = dtype(1 / 15)
    p[0, ::3] = e1
    idx = np.zeros((50, k), dtype=np.intp)
    counts = run(p, e1, idx)
    for i in range(50):
        expected = np.flatnonzero(p[i] > e1)
        assert counts[i] == expected.size
        np.testing.assert_array_equal(idx[i, : expected.size], expected)


@pytest.mark.skipif(
    platform.machine().lower() not in ("x86_64", "amd64"), reason="x86 features"
)
def test_without_avx512_equal_numpy_path():
    """Compiled for AVX2 (no vector compress: the scalar loop picks the
    columns; the top-1 groups lowered to 256-bit vectors), in a child
    process: the classwise and confidence sums of the numpy path."""
    features = (
        "+64bit,+sse,+sse2,+sse3,+ssse3,+sse4.1,+sse4.2,+popcnt,+avx,+avx2,"
        "+fma,+bmi,+bmi2,+f16c,+lzcnt,+movbe,+cx16,+fxsr,+xsave,+mmx"
    )
    script = textwrap.dedent(
        """
        import numpy as np
        from skcalib._core import accel
        from skcalib._core.accel import kernels as accel_kernels
        from skcalib._core.inputs import check_metric_inputs
        from skcalib._core.totals import statistics
        assert not accel_kernels.VECTOR_COMPRESS
        rng = np.random.default_rng(0)
        for k in (10, 40):
            p = rng.dirichlet(np.ones(k) * 0.3, 700)
            y = rng.integers(0, k, 700)
            inp = check_metric_inputs(y, p, labels=np.arange(k), check_values=False)
            for kind in ("confidence", "classwise"):
                accel.MIN_SIZE = 0
                a = statistics(inp, kind, 15, "uniform")[0]
                accel.MIN_SIZE = 1 << 62
                b = statistics(inp, kind, 15, "uniform")[0]
                assert np.array_equal(a, b), (k, kind)
        print("ok")
        """
    )
    env = dict(os.environ, NUMBA_CPU_NAME="haswell", NUMBA_CPU_FEATURES=features)
    env["NUMBA_CACHE_DIR"] = tempfile.mkdtemp()
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert out.returncode == 0, (out.returncode, out.stderr[-2000:])
    assert out.stdout.strip() == "ok"
