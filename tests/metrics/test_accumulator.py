"""CalibrationAccumulator: chunked statistics equal the one-shot metrics.

Every comparison is against the metric functions on the concatenated data
(or, for fixed edges, the naive reference of ``_reference.py``), to 1e-12.
The exact quantile search is compared with ``bin_edges`` on all the data.
"""

import pickle
import subprocess
import sys

import numpy as np
import pytest

from skcalib._core.binning import bin_edges
from skcalib._core.quantile_search import (
    QuantileEdgeSearch,
    inverted_cdf_ranks,
    sortable_keys,
)
from skcalib.metrics import (
    brier_score,
    classwise_calibration_error,
    expected_calibration_error,
    maximum_calibration_error,
    negative_log_likelihood,
    reliability_curve,
)
from skcalib.metrics._accumulator import CalibrationAccumulator

from ._reference import _group_error, _top1, ref_bins

KINDS = ["confidence", "top_label", "classwise"]
VARIANTS = [("l1", False), ("l2", False), ("l2", True), ("max", False)]
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


def _data(n=2000, k=4, dtype=np.float64, seed=0, binary_1d=False):
    """Dirichlet probabilities (a third rounded to tenths, on bin edges) and
    labels drawn from a sharpened version."""
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(k), size=n)
    p[: n // 3] = rng.multinomial(10, p[: n // 3]) / 10
    p = p.astype(dtype)
    if dtype == np.float32:
        p[n // 3 :] /= p[n // 3 :].sum(axis=1, keepdims=True)
    truth = p.astype(np.float64) ** 0.7
    truth /= truth.sum(axis=1, keepdims=True)
    y = (rng.random(n)[:, None] > np.cumsum(truth, axis=1)[:, :-1]).sum(axis=1)
    if binary_1d:
        return y, p[:, 1].copy()
    return y, p


def _splits(n, n_chunks, rng):
    """Random cut points, with empty chunks."""
    cuts = np.sort(rng.integers(0, n + 1, n_chunks - 1))
    return list(zip(np.r_[0, cuts], np.r_[cuts, n], strict=True))


def _accumulate(y, p, w=None, n_chunks=9, seed=0, **params):
    acc = CalibrationAccumulator(**params)
    for a, b in _splits(y.size, n_chunks, np.random.default_rng(seed)):
        acc.update(y[a:b], p[a:b], None if w is None else w[a:b])
    return acc


def _assert_curves_equal(got, want):
    for field in CURVE_FIELDS:
        np.testing.assert_allclose(
            getattr(got, field), getattr(want, field), rtol=0, atol=1e-12
        )


# ------------------------------------------------------------ vs one-shot
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("shape", ["multiclass", "binary_2d", "binary_1d"])
def test_binned_metrics_equal_one_shot(dtype, weighted, shape):
    k = 4 if shape == "multiclass" else 2
    y, p = _data(k=k, dtype=dtype, seed=1, binary_1d=shape == "binary_1d")
    w = np.random.default_rng(2).uniform(0, 3, y.size) if weighted else None
    if weighted:
        w[::7] = 0.0
    acc = _accumulate(y, p, w, n_bins=10)
    for kind in KINDS:
        for norm, debias in VARIANTS:
            got = acc.expected_calibration_error(kind=kind, norm=norm, debias=debias)
            want = expected_calibration_error(
                y, p, n_bins=10, kind=kind, norm=norm, debias=debias, sample_weight=w
            )
            assert got == pytest.approx(want, abs=1e-12), (kind, norm, debias)
        assert acc.maximum_calibration_error(kind=kind) == pytest.approx(
            maximum_calibration_error(y, p, n_bins=10, kind=kind, sample_weight=w),
            abs=1e-12,
        )
    assert acc.classwise_calibration_error(norm="l2") == pytest.approx(
        classwise_calibration_error(y, p, n_bins=10, norm="l2", sample_weight=w),
        abs=1e-12,
    )


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("weighted", [False, True])
def test_reliability_curves_equal_one_shot(dtype, weighted):
    y, p = _data(k=3, dtype=dtype, seed=3)
    w = np.random.default_rng(4).uniform(0.5, 2, y.size) if weighted else None
    acc = _accumulate(y, p, w, n_bins=12)
    for kind, class_index in [
        ("confidence", None),
        ("top_label", None),
        ("top_label", 0),
        ("top_label", 2),
        ("classwise", 1),
    ]:
        got = acc.reliability_curve(
            kind=kind, class_index=class_index, confidence_level=0.9
        )
        want = reliability_curve(
            y,
            p,
            n_bins=12,
            kind=kind,
            class_index=class_index,
            sample_weight=w,
            confidence_level=0.9,
        )
        _assert_curves_equal(got, want)
        assert (got.kind, got.class_index, got.strategy) == (
            want.kind,
            want.class_index,
            "uniform",
        )


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("k", [2, 5])
def test_proper_scores_equal_one_shot_float64(weighted, k):
    y, p = _data(k=k, seed=5)
    w = np.random.default_rng(6).uniform(0, 2, y.size) if weighted else None
    acc = _accumulate(y, p, w)
    assert acc.negative_log_likelihood() == pytest.approx(
        negative_log_likelihood(y, p, sample_weight=w), abs=1e-12
    )
    for scale in ("auto", True, False):
        assert acc.brier_score(scale_by_half=scale) == pytest.approx(
            brier_score(y, p, sample_weight=w, scale_by_half=scale), abs=1e-12
        )


def test_proper_scores_float32_are_float64_sums():
    """Float32 input: the per-sample losses (the true-class probability in
    float64, floored at float64 eps for every dtype) summed in float64, the
    same rule and value as the metric functions."""
    y, p = _data(n=5000, k=3, dtype=np.float32, seed=7)
    p[0] = [1.0, 0.0, 0.0]  # floored at float64 eps: costs 36.04
    y[0] = 1
    acc = _accumulate(y, p)
    eps = np.finfo(np.float64).eps
    p_true = np.maximum(p[np.arange(y.size), y].astype(np.float64), eps)
    nll = -np.log(p_true).mean()
    onehot = np.eye(3)[y]
    brier = ((p.astype(np.float64) - onehot) ** 2).sum(axis=1).mean()
    assert acc.negative_log_likelihood() == pytest.approx(nll, abs=1e-12)
    assert acc.brier_score() == pytest.approx(brier, abs=1e-12)
    assert acc.negative_log_likelihood() == pytest.approx(
        negative_log_likelihood(y, p), abs=1e-12
    )
    assert acc.brier_score() == pytest.approx(brier_score(y, p), abs=1e-12)


def test_string_labels_and_label_order():
    y, p = _data(k=3, seed=8)
    names = np.array(["cat", "dog", "emu"])
    labels = ["emu", "cat", "dog"]  # columns in this order
    p = p[:, [2, 0, 1]]
    acc = _accumulate(names[y], p, labels=labels)
    np.testing.assert_array_equal(acc.classes_, labels)
    assert acc.expected_calibration_error(kind="top_label") == pytest.approx(
        expected_calibration_error(names[y], p, kind="top_label", labels=labels),
        abs=1e-12,
    )


# -------------------------------------------------------------- merging
def test_merge_is_associative_and_commutative():
    y, p = _data(k=3, seed=9)
    w = np.random.default_rng(10).uniform(0, 2, y.size)
    parts = [(0, 500), (500, 1300), (1300, 2000)]

    def part(i):
        a, b = parts[i]
        return CalibrationAccumulator(n_bins=8).update(y[a:b], p[a:b], w[a:b])

    orders = [
        part(0).merge(part(1)).merge(part(2)),
        part(0).merge(part(1).merge(part(2))),
        part(2).merge(part(0)).merge(part(1)),
        part(1).merge(part(2).merge(part(0))),
    ]
    want = expected_calibration_error(y, p, n_bins=8, kind="top_label", sample_weight=w)
    for acc in orders:
        assert acc.n_samples_ == y.size
        assert acc.total_weight_ == pytest.approx(w.sum(), rel=1e-14)
        assert acc.expected_calibration_error(kind="top_label") == pytest.approx(
            want, abs=1e-12
        )
        assert acc.classwise_calibration_error(norm="l2", debias=True) == (
            pytest.approx(
                classwise_calibration_error(
                    y, p, n_bins=8, norm="l2", debias=True, sample_weight=w
                ),
                abs=1e-12,
            )
        )
        assert acc.brier_score() == pytest.approx(
            brier_score(y, p, sample_weight=w), abs=1e-12
        )


def test_merge_leaves_other_unchanged_and_handles_empty():
    y, p = _data(n=300, k=3, seed=11)
    a = CalibrationAccumulator(n_bins=5).update(y[:100], p[:100])
    b = CalibrationAccumulator(n_bins=5).update(y[100:], p[100:])
    before = b.expected_calibration_error()
    empty = CalibrationAccumulator(n_bins=5)
    assert empty.merge(CalibrationAccumulator(n_bins=5)).classes_ is None
    merged = empty.merge(a).merge(b).merge(CalibrationAccumulator(n_bins=5))
    assert b.expected_calibration_error() == before
    assert b.n_samples_ == 200
    assert merged.expected_calibration_error() == pytest.approx(
        expected_calibration_error(y, p, n_bins=5), abs=1e-12
    )


def test_merge_rejects_incompatible_accumulators():
    y, p = _data(n=200, k=3, seed=12)
    a = CalibrationAccumulator(n_bins=5).update(y, p)
    with pytest.raises(ValueError, match="different bin edges"):
        a.merge(CalibrationAccumulator(n_bins=6).update(y, p))
    with pytest.raises(ValueError, match="classwise=False"):
        a.merge(CalibrationAccumulator(n_bins=5, classwise=False).update(y, p))
    with pytest.raises(ValueError, match="different classes"):
        a.merge(CalibrationAccumulator(n_bins=5).update(y + 1, p))
    with pytest.raises(TypeError, match="CalibrationAccumulator"):
        a.merge({"n_bins": 5})


def test_pickle_round_trip():
    y, p = _data(n=500, k=3, seed=13)
    acc = _accumulate(y, p, n_bins=7)
    back = pickle.loads(pickle.dumps(acc))
    assert back.expected_calibration_error(kind="classwise") == (
        acc.expected_calibration_error(kind="classwise")
    )
    back.merge(acc)
    assert back.n_samples_ == 2 * acc.n_samples_


# -------------------------------------------------- chunks and weights
def test_empty_chunks_anywhere():
    y, p = _data(n=400, k=3, seed=14)
    acc = CalibrationAccumulator(n_bins=6)
    acc.update(y[:0], p[:0])
    assert acc.classes_ is None
    acc.update(y[:150], p[:150]).update([], np.zeros((0, 3)), np.zeros(0))
    acc.update(y[150:], p[150:]).update(y[:0], p[:0])
    assert acc.expected_calibration_error(norm="l2") == pytest.approx(
        expected_calibration_error(y, p, n_bins=6, norm="l2"), abs=1e-12
    )


def test_empty_or_weightless_accumulator_raises():
    acc = CalibrationAccumulator()
    with pytest.raises(ValueError, match="y_true is empty"):
        acc.expected_calibration_error()
    acc.update([0, 1], [0.2, 0.7], sample_weight=[0.0, 0.0])  # allowed per chunk
    with pytest.raises(ValueError, match="sample_weight sums to 0"):
        acc.brier_score()
    acc.update([1], [0.9], sample_weight=[2.0])
    assert acc.negative_log_likelihood() == pytest.approx(-np.log(0.9))


def test_weight_two_is_a_duplicated_row_and_zero_a_dropped_row():
    y, p = _data(n=600, k=3, seed=15)
    w = np.ones(y.size)
    w[:50] = 2.0
    w[50:80] = 0.0
    weighted = _accumulate(y, p, w, n_bins=9)
    keep = np.r_[np.arange(50), np.arange(80, y.size), np.arange(50)]
    plain = _accumulate(y[keep], p[keep], n_bins=9, seed=3)
    for kind in KINDS:
        assert weighted.expected_calibration_error(kind=kind) == pytest.approx(
            plain.expected_calibration_error(kind=kind), abs=1e-12
        )
    assert weighted.negative_log_likelihood() == pytest.approx(
        plain.negative_log_likelihood(), abs=1e-12
    )


def test_float32_chunks_bin_in_float32():
    """0.3 in float32 sits on the float32 edge 0.3: lower bin, as one-shot."""
    p = np.array([0.3, 0.7, 0.3, 0.9, 0.1], dtype=np.float32)
    y = np.array([1, 1, 0, 1, 0])
    acc = CalibrationAccumulator(n_bins=10, labels=[0, 1])  # 1st chunk: only 1s
    acc.update(y[:2], p[:2]).update(y[2:], p[2:])
    _assert_curves_equal(
        acc.reliability_curve(kind="classwise"),
        reliability_curve(y, p, n_bins=10, kind="classwise"),
    )


# --------------------------------------------------------- fixed edges
def _ref_fixed(y, p, edges, kind, norm, debias=False, w=None):
    """Naive error with the same edges for every group."""
    n, k = p.shape
    w = np.ones(n) if w is None else w
    dtype = p.dtype.type
    total = float(w.sum())
    if kind == "classwise":
        errors = [
            _group_error(
                ref_bins(p[:, c], y == c, w, edges, dtype), total, norm, debias
            )
            for c in range(k)
        ]
        return float(np.mean(errors))
    pred = np.array([_top1(r) for r in p])
    conf = p[np.arange(n), pred]
    bins = []
    groups = [np.arange(n)] if kind == "confidence" else [pred == c for c in range(k)]
    for g in groups:
        bins += ref_bins(conf[g], (pred == y)[g], w[g], edges, dtype)
    return _group_error(bins, total, norm, debias)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("norm,debias", VARIANTS)
def test_fixed_edges_match_naive_reference(kind, norm, debias):
    y, p = _data(n=500, k=3, seed=16)
    w = np.random.default_rng(17).uniform(0.5, 2, y.size)
    edges = [0.0, 0.2, 0.35, 0.5, 0.6, 0.9, 1.0]
    acc = _accumulate(y, p, w, edges=edges)
    got = acc.expected_calibration_error(kind=kind, norm=norm, debias=debias)
    want = _ref_fixed(y, p, edges, kind, norm, debias, w)
    assert got == pytest.approx(want, abs=1e-12)
    assert acc.reliability_curve().strategy == "fixed"


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_quantile_edges_of_all_data_give_the_one_shot_quantile_metric(dtype):
    """Edges from a first pass (here: exact quantiles of the confidences)
    make the accumulator equal to strategy="quantile" (kind="confidence")."""
    y, p = _data(k=4, dtype=dtype, seed=18)
    edges = bin_edges(p.max(axis=1), 10, "quantile")
    acc = _accumulate(y, p, edges=edges)
    for norm, debias in VARIANTS:
        assert acc.expected_calibration_error(norm=norm, debias=debias) == (
            pytest.approx(
                expected_calibration_error(
                    y, p, n_bins=10, strategy="quantile", norm=norm, debias=debias
                ),
                abs=1e-12,
            )
        )
    got = acc.reliability_curve()
    want = reliability_curve(y, p, n_bins=10, strategy="quantile")
    for field in CURVE_FIELDS:
        np.testing.assert_allclose(getattr(got, field), getattr(want, field), atol=0)


# ---------------------------------------------------------- validation
def test_bad_chunk_raises_and_leaves_the_accumulator_unchanged():
    y, p = _data(n=100, k=3, seed=19)
    acc = CalibrationAccumulator(n_bins=5).update(y[:50], p[:50])
    bad = p[50:].copy()
    bad[7, 1] = np.nan
    with pytest.raises(ValueError, match=r"y_proba contains NaN; row 7 is"):
        acc.update(y[50:], bad)
    bad[7, 1] = 1.5
    with pytest.raises(ValueError, match=r"probabilities in \[0, 1\]; row 7"):
        acc.update(y[50:], bad)
    with pytest.raises(ValueError, match=r"sample_weight\[3\] = -1.0"):
        acc.update(y[50:], p[50:], np.r_[1, 1, 1, -1.0, np.ones(46)])
    with pytest.raises(ValueError, match=r"label\(s\) \[7\] that are not in"):
        acc.update(np.r_[y[50:99], 7], p[50:])
    with pytest.raises(ValueError, match="y_proba has 2 columns, but the classes"):
        acc.update(y[50:], p[50:, :2])
    with pytest.raises(ValueError, match="y_true has 50 samples but y_proba has 49"):
        acc.update(y[50:], p[51:])
    assert acc.n_samples_ == 50
    assert acc.expected_calibration_error() == pytest.approx(
        expected_calibration_error(y[:50], p[:50], n_bins=5), abs=1e-12
    )


def test_first_chunk_fixes_the_classes():
    p = np.array([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1]])
    with pytest.raises(ValueError, match="pass labels="):
        CalibrationAccumulator().update(["a", "b"], p)
    acc = CalibrationAccumulator(labels=["a", "b", "c"]).update(["a", "b"], p)
    np.testing.assert_array_equal(acc.classes_, ["a", "b", "c"])
    # Integer labels of a chunk missing classes: never guessed as 0..K-1.
    with pytest.raises(ValueError, match="pass labels="):
        CalibrationAccumulator().update([0, 1], p)
    acc = CalibrationAccumulator(labels=[0, 1, 2]).update([0, 1], p)
    np.testing.assert_array_equal(acc.classes_, [0, 1, 2])
    # A later label outside them is an error (never a silent mix-up).
    with pytest.raises(ValueError, match=r"label\(s\) \[3\]"):
        acc.update([3], p[:1])


@pytest.mark.parametrize(
    "params, match",
    [
        ({"edges": [0.0, 0.5]}, "from 0 to 1"),
        ({"edges": [0.0, 0.6, 0.4, 1.0]}, "increase strictly"),
        ({"edges": [[0.0, 1.0]]}, "1-D"),
        ({"n_bins": True}, "n_bins"),
        ({"n_bins": 0}, "n_bins"),
    ],
)
def test_bad_parameters(params, match):
    with pytest.raises(ValueError, match=match):
        CalibrationAccumulator(**params)


def test_bad_method_arguments():
    y, p = _data(n=100, k=3, seed=20)
    acc = CalibrationAccumulator(classwise=False).update(y, p)
    with pytest.raises(ValueError, match="classwise=False"):
        acc.expected_calibration_error(kind="classwise")
    with pytest.raises(ValueError, match="debias=True is defined for norm='l2'"):
        acc.expected_calibration_error(debias=True)
    with pytest.raises(ValueError, match="norm"):
        acc.expected_calibration_error(norm="l3")
    with pytest.raises(ValueError, match="needs class_index"):
        acc.reliability_curve(kind="classwise")
    with pytest.raises(ValueError, match="class_index must be in"):
        acc.reliability_curve(kind="top_label", class_index=3)
    assert acc.expected_calibration_error(kind="top_label") == pytest.approx(
        expected_calibration_error(y, p, kind="top_label"), abs=1e-12
    )


def test_metrics_do_not_import_dask():
    code = (
        "import sys, numpy as np\n"
        "from skcalib.metrics import expected_calibration_error\n"
        "from skcalib.metrics._accumulator import CalibrationAccumulator\n"
        "expected_calibration_error([0, 1], [0.3, 0.8])\n"
        "CalibrationAccumulator().update([0, 1], [0.3, 0.8])\n"
        "assert not any(m.partition('.')[0] == 'dask' for m in sys.modules), 'dask'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


# ------------------------------------------------ exact quantile search
def _search(chunks, n_groups, n_bins, dtype, weighted, seed=0, **kwargs):
    """Run the passes over ``chunks`` (lists of per-group (scores, weights)),
    merging the chunk counts in a shuffled tree."""
    rng = np.random.default_rng(seed)
    search = QuantileEdgeSearch(n_groups, n_bins, dtype, weighted, **kwargs)
    while not search.done:
        parts = [search.digit_counts(c) for c in chunks]
        rng.shuffle(parts)
        half = len(parts) // 2
        search.advance(
            QuantileEdgeSearch.merge(
                [QuantileEdgeSearch.merge(parts[:half] or parts), *parts[half:]]
                if half
                else parts
            )
        )
    return search.edges()


def _scores(kind, n, rng):
    if kind == "uniform":
        return rng.random(n)
    if kind == "tenths":  # heavy ties on values that are edges
        return rng.integers(0, 11, n) / 10
    if kind == "u-shaped":
        return rng.beta(0.2, 0.2, n)
    return np.where(rng.random(n) < 0.6, 1.0, rng.random(n))  # mass at 1


#: Rows a pass may bring back: histograms only, a mix, the default.
COLLECT_LIMITS = {"radix": 0, "mixed": 40, "default": None}


@pytest.mark.parametrize("collect", list(COLLECT_LIMITS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("weights", [None, "integer"])
@pytest.mark.parametrize("kind", ["uniform", "tenths", "u-shaped", "ones"])
def test_quantile_search_equals_bin_edges(dtype, weights, kind, collect):
    limit = COLLECT_LIMITS[collect]
    kwargs = {} if limit is None else {"collect_limit": limit}
    rng = np.random.default_rng(hash((kind, str(weights))) % 2**32)
    for n, n_bins in [(1, 5), (2, 3), (7, 15), (300, 10), (2001, 40)]:
        scores = _scores(kind, n, rng).astype(dtype)
        w = None if weights is None else rng.integers(0, 4, n).astype(float)
        if w is not None and w.sum() == 0:
            w[0] = 1.0
        chunks = [
            [(scores[a:b], None if w is None else w[a:b])]
            for a, b in _splits(n, 6, rng)
        ]
        (got,) = _search(chunks, 1, n_bins, dtype, w is not None, **kwargs)
        want = bin_edges(scores, n_bins, "quantile", w)
        np.testing.assert_array_equal(got, want)
        assert got.dtype == np.float64


def test_quantile_search_groups_and_float_weights():
    """Several groups at once; float weights (sums not exact) still agree."""
    rng = np.random.default_rng(21)
    a, b = rng.random(3000), rng.beta(2, 5, 1200)
    wa, wb = rng.uniform(0, 3, a.size), rng.uniform(0, 3, b.size)
    chunks = [
        [(a[i : i + 500], wa[i : i + 500]), (b[j : j + 200], wb[j : j + 200])]
        for i, j in zip(range(0, 3000, 500), range(0, 1200, 200), strict=True)
    ]
    for limit in (0, 500, 10**6):
        got = _search(chunks, 2, 17, np.float64, True, collect_limit=limit)
        np.testing.assert_array_equal(got[0], bin_edges(a, 17, "quantile", wa))
        np.testing.assert_array_equal(got[1], bin_edges(b, 17, "quantile", wb))


@pytest.mark.parametrize(
    ("dtype", "limit", "passes"),
    [(np.float32, 0, 2), (np.float64, 0, 4), (np.float64, None, 2)],
)
def test_quantile_search_passes(dtype, limit, passes):
    """A coarse histogram, then the scores of the bins holding the quantiles
    (2 passes) while those are few; histograms of 16 bits otherwise."""
    x = np.random.default_rng(3).random(5000).astype(dtype)
    kwargs = {} if limit is None else {"collect_limit": limit}
    search = QuantileEdgeSearch(1, 10, dtype, weighted=False, **kwargs)
    while not search.done:
        search.advance(search.digit_counts([(x, None)]))
    assert search.n_passes == passes
    np.testing.assert_array_equal(search.edges()[0], bin_edges(x, 10, "quantile"))


def test_quantile_search_empty_group_and_misuse():
    search = QuantileEdgeSearch(2, 4, np.float32, weighted=False)
    with pytest.raises(ValueError, match="not finished after 0 pass"):
        search.edges()
    x = np.array([0.25, 0.5, 0.75], dtype=np.float32)
    empty = np.zeros(0, dtype=np.float32)
    while not search.done:
        search.advance(
            QuantileEdgeSearch.merge([search.digit_counts([(x, None), (empty, None)])])
        )
    edges = search.edges()
    np.testing.assert_array_equal(edges[0], bin_edges(x, 4, "quantile"))
    np.testing.assert_array_equal(edges[1], [0.0, 1.0])
    with pytest.raises(ValueError, match="every pass"):
        search.digit_counts([(x, None), (empty, None)])


def test_quantile_search_detects_changed_data():
    search = QuantileEdgeSearch(1, 4, np.float64, weighted=False)
    x = np.linspace(0.1, 0.9, 100)
    search.advance(search.digit_counts([(x, None)]))
    with pytest.raises(ValueError, match="data changed between the passes"):
        search.advance(search.digit_counts([(x[:10], None)]))


def test_sortable_keys_and_ranks():
    x = np.array([0.0, -0.0, 1e-45, 0.3, 0.5, 1.0], dtype=np.float32)
    keys = sortable_keys(x)
    assert keys.dtype == np.uint32
    assert keys[0] == keys[1] == 0
    assert np.all(np.diff(keys[1:].astype(np.int64)) > 0)
    assert sortable_keys(x.astype(np.float64)).dtype == np.uint64
    for n in [1, 2, 3, 10, 99, 1000]:
        q = np.linspace(0, 1, 8)[1:-1]
        want = np.quantile(np.arange(n), q, method="inverted_cdf").astype(int)
        np.testing.assert_array_equal(inverted_cdf_ranks(n, q), want)
