"""The metrics of Dask collections equal the in-memory metrics.

Data split into 37 blocks of uneven sizes (some empty); every value is
compared with the in-memory function on the same numbers to 1e-10 (the
per-block float64 sums only change the order of the additions). Run on Dask's
default (threaded) scheduler and on a ``distributed.LocalCluster`` of two
worker processes on the loopback interface.
"""

import tracemalloc

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

from skcalib.metrics import (  # noqa: E402
    brier_score,
    calibration_error_interval,
    classwise_calibration_error,
    expected_calibration_error,
    maximum_calibration_error,
    negative_log_likelihood,
    reliability_curve,
)
from skcalib.metrics._accumulator import CalibrationAccumulator  # noqa: E402

TOL = 1e-10
N_BLOCKS = 37
CURVE_FIELDS = [
    "edges",
    "mean_confidence",
    "accuracy",
    "counts",
    "n_samples",
    "lower",
    "upper",
    "nonempty",
]


def _data(n=3000, k=4, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(k) * 0.7, size=n)
    p[: n // 4] = rng.multinomial(10, p[: n // 4]) / 10  # ties on bin edges
    p = p.astype(dtype)
    if dtype == np.float32:
        p /= p.sum(axis=1, keepdims=True)
    truth = p.astype(np.float64) ** 0.8
    truth /= truth.sum(axis=1, keepdims=True)
    y = (rng.random(n)[:, None] > np.cumsum(truth, axis=1)[:, :-1]).sum(axis=1)
    w = rng.integers(0, 4, n).astype(np.float64)
    return y, p, w


def _chunks(n, seed=0):
    """37 row blocks: 35 of uneven sizes and two empty ones."""
    rng = np.random.default_rng(seed)
    cuts = np.sort(rng.choice(np.arange(1, n), N_BLOCKS - 3, replace=False))
    sizes = np.insert(np.diff(np.r_[0, cuts, n]), [5, 20], 0)
    assert sizes.sum() == n and sizes.size == N_BLOCKS
    return (tuple(int(s) for s in sizes),)


def _dask(x, chunks):
    return da.from_array(x, chunks=chunks + x.shape[1:])


def _inputs(n=3000, k=4, dtype=np.float64, seed=0):
    y, p, w = _data(n, k, dtype, seed)
    c = _chunks(n, seed)
    return (y, p, w), (_dask(y, c), _dask(p, c), _dask(w, c))


# ------------------------------------------------------ equal to in-memory
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("weighted", [False, True])
def test_binned_errors_uniform(dtype, weighted):
    (y, p, w), (yd, pd_, wd) = _inputs(dtype=dtype, seed=1)
    w, wd = (w, wd) if weighted else (None, None)
    for kind in ["confidence", "top_label", "classwise"]:
        for norm, debias in [("l1", False), ("l2", True), ("max", False)]:
            got = expected_calibration_error(
                yd,
                pd_,
                n_bins=10,
                kind=kind,
                norm=norm,
                debias=debias,
                sample_weight=wd,
            )
            want = expected_calibration_error(
                y, p, n_bins=10, kind=kind, norm=norm, debias=debias, sample_weight=w
            )
            assert got == pytest.approx(want, abs=TOL), (kind, norm)
    assert maximum_calibration_error(yd, pd_, sample_weight=wd) == pytest.approx(
        maximum_calibration_error(y, p, sample_weight=w), abs=TOL
    )
    assert classwise_calibration_error(yd, pd_, sample_weight=wd) == pytest.approx(
        classwise_calibration_error(y, p, sample_weight=w), abs=TOL
    )


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("weighted", [False, True])
def test_binned_errors_quantile_are_exact(dtype, weighted):
    """Quantile edges from the exact multi-pass search: same edges, same
    errors as the in-memory quantile bins."""
    (y, p, w), (yd, pd_, wd) = _inputs(dtype=dtype, seed=2)
    w, wd = (w, wd) if weighted else (None, None)
    for kind, norm in [("confidence", "l1"), ("top_label", "l2"), ("classwise", "max")]:
        got = expected_calibration_error(
            yd,
            pd_,
            n_bins=12,
            strategy="quantile",
            kind=kind,
            norm=norm,
            sample_weight=wd,
        )
        want = expected_calibration_error(
            y, p, n_bins=12, strategy="quantile", kind=kind, norm=norm, sample_weight=w
        )
        assert got == pytest.approx(want, abs=TOL), kind
    got = reliability_curve(yd, pd_, n_bins=12, strategy="quantile", sample_weight=wd)
    want = reliability_curve(y, p, n_bins=12, strategy="quantile", sample_weight=w)
    np.testing.assert_array_equal(got.edges, want.edges)
    assert got.strategy == "quantile"


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_reliability_curves(strategy):
    (y, p, w), (yd, pd_, wd) = _inputs(k=3, seed=3)
    for kind, class_index in [
        ("confidence", None),
        ("top_label", None),
        ("top_label", 1),
        ("classwise", 2),
    ]:
        got = reliability_curve(
            yd, pd_, n_bins=8, strategy=strategy, kind=kind, class_index=class_index,
            sample_weight=wd,
        )  # fmt: skip
        want = reliability_curve(
            y, p, n_bins=8, strategy=strategy, kind=kind, class_index=class_index,
            sample_weight=w,
        )  # fmt: skip
        for field in CURVE_FIELDS:
            np.testing.assert_allclose(
                getattr(got, field), getattr(want, field), rtol=0, atol=TOL
            )
        assert (got.kind, got.class_index) == (want.kind, want.class_index)


@pytest.mark.parametrize("k", [2, 5])
@pytest.mark.parametrize("weighted", [False, True])
def test_proper_scores(k, weighted):
    (y, p, w), (yd, pd_, wd) = _inputs(k=k, seed=4)
    w, wd = (w, wd) if weighted else (None, None)
    assert negative_log_likelihood(yd, pd_, sample_weight=wd) == pytest.approx(
        negative_log_likelihood(y, p, sample_weight=w), abs=TOL
    )
    for scale in ["auto", True, False]:
        assert brier_score(
            yd, pd_, sample_weight=wd, scale_by_half=scale
        ) == pytest.approx(
            brier_score(y, p, sample_weight=w, scale_by_half=scale), abs=TOL
        )


def test_binary_1d_string_labels_and_labels_argument():
    (y, p, _), (yd, pd_, _) = _inputs(k=2, seed=5)
    names = np.array(["no", "yes"])
    yd_names = yd.map_blocks(lambda b: names[b], dtype=names.dtype)
    for labels in [None, ["yes", "no"]]:
        pos = p[:, 1] if labels is None else p[:, 0]
        pos_d = pd_[:, 1] if labels is None else pd_[:, 0]
        for kind in ["confidence", "classwise"]:
            assert expected_calibration_error(
                yd_names, pos_d, kind=kind, labels=labels
            ) == pytest.approx(
                expected_calibration_error(names[y], pos, kind=kind, labels=labels),
                abs=TOL,
            )
        assert negative_log_likelihood(yd_names, pos_d, labels=labels) == (
            pytest.approx(
                negative_log_likelihood(names[y], pos, labels=labels), abs=TOL
            )
        )


def test_mixed_inputs_and_chunk_layouts():
    """Numpy labels with Dask probabilities, probabilities chunked along the
    columns, labels chunked differently, unknown block sizes."""
    (y, p, w), (yd, pd_, wd) = _inputs(k=4, seed=6)
    want = expected_calibration_error(y, p, kind="top_label", sample_weight=w)
    cases = [
        (y, pd_, wd),
        (yd, p, w),
        (yd.rechunk(500), pd_.rechunk((300, 2)), wd.rechunk(1000)),
        (yd[yd >= 0], pd_, wd),  # unknown block sizes: computed, then aligned
    ]
    for args in cases:
        got = expected_calibration_error(
            *args[:2], kind="top_label", sample_weight=args[2]
        )
        assert got == pytest.approx(want, abs=TOL)


def test_dask_dataframe_columns():
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    y, p, w = _data(n=2000, k=3, seed=7)
    frame = pd.DataFrame(p, columns=["a", "b", "c"]).assign(y=y, w=w)
    ddf = dd.from_pandas(frame, npartitions=11)
    cols = ["a", "b", "c"]
    assert expected_calibration_error(
        ddf["y"], ddf[cols], sample_weight=ddf["w"], kind="classwise"
    ) == pytest.approx(
        expected_calibration_error(y, p, sample_weight=w, kind="classwise"), abs=TOL
    )
    assert brier_score(ddf["y"], ddf[cols]) == pytest.approx(brier_score(y, p), abs=TOL)
    # A DataFrame column with a Dask array of other (known) blocks, and with
    # a frame of other (unknown) partitions: block sizes are computed.
    assert negative_log_likelihood(
        ddf["y"], da.from_array(p, chunks=250)
    ) == pytest.approx(negative_log_likelihood(y, p), abs=TOL)
    other = dd.from_pandas(frame[cols], npartitions=4)
    assert brier_score(ddf["y"], other) == pytest.approx(brier_score(y, p), abs=TOL)
    # Unknown block sizes: the error names the row within its block.
    bad = frame.copy()
    bad.loc[1500, "b"] = np.nan
    bad_ddf = dd.from_pandas(bad, npartitions=11)
    with pytest.raises(ValueError, match=r"NaN; row \d+ is .* \(in block \d+ of"):
        expected_calibration_error(bad_ddf["y"], bad_ddf[cols])


def test_accumulator_update_with_dask():
    (y, p, w), (yd, pd_, wd) = _inputs(k=3, seed=8)
    acc = CalibrationAccumulator(n_bins=9).update(yd, pd_, wd)
    acc.update(y[:100], p[:100], w[:100])  # and in-memory chunks after
    yy, pp, ww = np.r_[y, y[:100]], np.r_[p, p[:100]], np.r_[w, w[:100]]
    assert acc.n_samples_ == yy.size
    for kind in ["confidence", "top_label", "classwise"]:
        assert acc.expected_calibration_error(kind=kind, norm="l2") == pytest.approx(
            expected_calibration_error(
                yy, pp, n_bins=9, kind=kind, norm="l2", sample_weight=ww
            ),
            abs=TOL,
        )
    assert acc.brier_score() == pytest.approx(
        brier_score(yy, pp, sample_weight=ww), abs=TOL
    )


# ------------------------------------------------------------------ errors
def _bad(p, row, col, value):
    out = p.copy()
    out[row, col] = value
    return out


@pytest.mark.parametrize(
    "metric",
    [
        expected_calibration_error,
        reliability_curve,
        brier_score,
        negative_log_likelihood,
    ],
)
@pytest.mark.parametrize(
    "row, value, match",
    [
        (2001, np.nan, r"y_proba contains NaN; row 2001 is \["),
        (1777, 1.5, r"probabilities in \[0, 1\]; row 1777 has \["),
        (2999, 0.9, r"rows must sum to 1 .*; row 2999 sums to"),
    ],
)
def test_bad_value_in_one_block_raises_as_in_memory(metric, row, value, match):
    (y, p, _), (yd, _, _) = _inputs(k=3, seed=9)
    bad = _bad(p, row, 1, value)
    with pytest.raises(ValueError, match=match) as in_memory:
        metric(y, bad)
    with pytest.raises(ValueError, match=match) as from_dask:
        metric(yd, _dask(bad, _chunks(y.size, 9)))
    assert str(from_dask.value) == str(in_memory.value)


def test_quantile_bins_check_values_in_the_first_pass():
    (y, p, _), (yd, _, _) = _inputs(k=3, seed=10)
    bad = _dask(_bad(p, 1234, 0, np.nan), _chunks(y.size, 10))
    with pytest.raises(ValueError, match="NaN; row 1234"):
        expected_calibration_error(yd, bad, strategy="quantile", kind="top_label")


def test_other_input_errors():
    (y, p, w), (yd, pd_, wd) = _inputs(k=3, seed=11)
    c = _chunks(y.size, 11)
    neg = w.copy()
    neg[2500] = -1.0
    with pytest.raises(ValueError, match=r"sample_weight\[2500\] = -1.0"):
        expected_calibration_error(yd, pd_, sample_weight=_dask(neg, c))
    with pytest.raises(ValueError, match="sample_weight sums to 0"):
        expected_calibration_error(yd, pd_, sample_weight=_dask(np.zeros(y.size), c))
    with pytest.raises(ValueError, match=r"y_true contains label\(s\) \[9\]"):
        expected_calibration_error(_dask(np.r_[y[:-1], 9], c), pd_, labels=[0, 1, 2])
    with pytest.raises(ValueError, match="has 3 columns but y_true has 4"):
        expected_calibration_error(_dask(np.r_[y[:-1], 9], c), pd_)
    with pytest.raises(ValueError, match="y_true is empty"):
        brier_score(yd[:0], pd_[:0])
    with pytest.raises(ValueError, match=r"y_true\[1500\] = 0.5"):
        expected_calibration_error(_dask(np.r_[y[:1500], 0.5, y[1501:]], c), pd_)
    with pytest.raises(TypeError, match="needs in-memory arrays"):
        calibration_error_interval(yd, pd_)


# ------------------------------------------------------------------ memory
def test_nothing_is_loaded_whole(monkeypatch):
    """Lazily generated float32 data of 80 MB: the metric never converts a
    Dask array to numpy, and traced memory stays far below the data size."""
    n, k, rows = 2_000_000, 10, 50_000

    def block(block_id=None):
        rng = np.random.default_rng(block_id[0])
        logits = rng.standard_normal((rows, k), dtype=np.float32) * 2
        p = np.exp(logits - logits.max(axis=1, keepdims=True))
        return p / p.sum(axis=1, keepdims=True)

    proba = da.map_blocks(block, chunks=((rows,) * (n // rows), (k,)), dtype=np.float32)
    y = proba.map_blocks(lambda p: (p.cumsum(axis=1) < 0.5).sum(axis=1), drop_axis=1)

    def refuse(*args, **kwargs):
        raise AssertionError("a Dask array was converted or computed whole")

    monkeypatch.setattr(da.Array, "__array__", refuse)
    monkeypatch.setattr(da.Array, "compute", refuse)
    tracemalloc.start()
    try:
        with dask.config.set(scheduler="threads", num_workers=2):
            ece = expected_calibration_error(y, proba, labels=np.arange(k))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert 0 <= ece <= 1
    assert peak < 40e6, f"peak traced memory {peak / 1e6:.0f} MB for 80 MB of data"


# -------------------------------------------------- distributed.LocalCluster
def test_local_cluster_gives_the_same_values(client):
    assert client.scheduler_info()["address"].startswith("tcp://127.0.0.1")
    assert len(client.scheduler_info()["workers"]) == 2
    (y, p, w), (yd, pd_, wd) = _inputs(k=4, dtype=np.float32, seed=12)
    for strategy in ["uniform", "quantile"]:
        got = expected_calibration_error(
            yd,
            pd_,
            strategy=strategy,
            kind="top_label",
            sample_weight=wd,
            labels=range(4),
        )
        want = expected_calibration_error(
            y, p, strategy=strategy, kind="top_label", sample_weight=w
        )
        assert got == pytest.approx(want, abs=TOL)
    acc = CalibrationAccumulator(n_bins=10, labels=range(4)).update(yd, pd_, wd)
    assert acc.classwise_calibration_error() == pytest.approx(
        classwise_calibration_error(y, p, n_bins=10, sample_weight=w), abs=TOL
    )
    assert negative_log_likelihood(yd, pd_) == pytest.approx(
        CalibrationAccumulator().update(y, p).negative_log_likelihood(), abs=TOL
    )


def test_local_cluster_raises_the_same_error(client):
    (y, p, _), (yd, _, _) = _inputs(k=3, seed=13)
    bad = _bad(p, 2222, 2, np.nan)
    with pytest.raises(ValueError) as in_memory:
        expected_calibration_error(y, bad)
    with pytest.raises(ValueError) as from_cluster:
        expected_calibration_error(yd, _dask(bad, _chunks(y.size, 13)))
    assert str(from_cluster.value) == str(in_memory.value)
