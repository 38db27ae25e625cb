"""The cell-table bin assignment, the fused lookup and per-bin sums, and the
boolean per-bin sums of skcalib._core.binning give exactly what the
generic code (a binary search, then ``np.bincount``) gives."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from skcalib._core.binning import (
    assign_bins,
    bin_edges,
    bin_sums,
    binned_sums,
    lookup_bins,
)


def _searchsorted(scores, edges):
    dtype = scores.dtype if scores.dtype.kind == "f" else np.float64
    return np.searchsorted(np.asarray(edges[1:-1], dtype=dtype), scores, side="left")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "n_bins", [1, 2, 3, 7, 10, 15, 20, 33, 100, 997, 4096, 1 << 16]
)
def test_uniform_fast_path_equals_searchsorted(dtype, n_bins):
    rng = np.random.default_rng(n_bins)
    k = rng.integers(0, n_bins + 1, 5000)
    base = np.concatenate(
        [
            rng.uniform(size=5000),
            k / n_bins,
            rng.integers(0, 101, 500) / 100,
            [0.0, 1.0, -0.0, -1.0, 2.0, np.inf, -np.inf, np.nan, 1e30, -1e30, 5e-324],
        ]
    ).astype(dtype)
    scores = np.concatenate(
        [base, np.nextafter(base, dtype(2)), np.nextafter(base, dtype(-1))]
    )
    edges = bin_edges(None, n_bins)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(
            assign_bins(scores, edges), _searchsorted(scores, edges)
        )


@settings(max_examples=100, deadline=None)
@given(
    arrays(np.float32, st.integers(1, 200), elements=st.floats(0, 1, width=32)),
    st.integers(2, 200),
)
def test_uniform_fast_path_property(scores, n_bins):
    edges = bin_edges(None, n_bins)
    np.testing.assert_array_equal(
        assign_bins(scores, edges), _searchsorted(scores, edges)
    )
    s64 = scores.astype(np.float64)
    np.testing.assert_array_equal(assign_bins(s64, edges), _searchsorted(s64, edges))


def test_non_uniform_or_other_dtypes_use_searchsorted():
    rng = np.random.default_rng(0)
    s = rng.uniform(size=100)
    quantile = bin_edges(s, 5, "quantile")
    np.testing.assert_array_equal(assign_bins(s, quantile), _searchsorted(s, quantile))
    ints = np.array([0, 1, 1, 0])
    np.testing.assert_array_equal(assign_bins(ints, bin_edges(None, 4)), [0, 3, 3, 0])
    half = np.array([0.25, 0.5, 0.75], dtype=np.float16)
    np.testing.assert_array_equal(assign_bins(half, bin_edges(None, 4)), [0, 1, 2])


def test_bin_sums_boolean_values_exact():
    rng = np.random.default_rng(1)
    ids = rng.integers(0, 9, 1000)
    v = rng.uniform(size=1000)
    b1, b2 = rng.uniform(size=1000) < 0.3, rng.uniform(size=1000) < 0.6
    got = bin_sums(ids, 9, None, v, b1, b2)
    want = (
        np.bincount(ids, minlength=9).astype(float),
        np.bincount(ids, weights=v, minlength=9),
        np.bincount(ids, weights=b1.astype(float), minlength=9),
        np.bincount(ids, weights=b2.astype(float), minlength=9),
    )
    for g, w in zip(got, want, strict=True):
        assert g.dtype == np.float64
        np.testing.assert_array_equal(g, w)
    counts, s = bin_sums(ids, 12, None, b1)  # minlength beyond the ids
    assert counts.shape == s.shape == (12,)
    w = rng.uniform(size=1000)
    counts, s = bin_sums(ids, 9, w, b1)
    np.testing.assert_allclose(s, np.bincount(ids, weights=w * b1, minlength=9))


def _edge_heavy_scores(rng, edges, dtype, n=4000):
    """Uniform scores plus every edge and its float neighbours (the scores
    that land in the cells an edge cuts)."""
    e = np.asarray(edges, dtype=dtype)
    base = np.concatenate([rng.uniform(size=n).astype(dtype), e, [np.nan, -1, 2]])
    base = base.astype(dtype)
    return np.concatenate(
        [base, np.nextafter(base, dtype(2)), np.nextafter(base, dtype(-1))]
    )


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["quantile", "random", "clustered"])
def test_table_path_any_edges(dtype, kind):
    rng = np.random.default_rng(7)
    if kind == "quantile":
        edges = bin_edges(rng.beta(0.3, 3.0, 1000), 40, "quantile")
    elif kind == "random":
        edges = np.r_[0.0, np.sort(rng.uniform(size=300)), 1.0]
    else:  # several edges inside one cell of the table
        edges = np.r_[0.0, 0.5, 0.5 + 1e-9, 0.5 + 2e-9, np.nextafter(0.5, 0), 1.0]
        edges = np.unique(edges)
    scores = _edge_heavy_scores(rng, edges, dtype)
    want = _searchsorted(scores, edges)
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(assign_bins(scores, edges), want)
        table = rng.uniform(size=edges.size - 1)
        np.testing.assert_array_equal(lookup_bins(scores, edges, table), table[want])
    finite = np.isfinite(scores)
    s, ids = scores[finite], want[finite]
    v = rng.uniform(size=s.size)
    w = rng.uniform(size=s.size)
    for weight in (None, w):
        got = binned_sums(s, edges, weight, v, s)
        ref = bin_sums(ids, edges.size - 1, weight, v, s)
        for g, r in zip(got, ref, strict=True):
            np.testing.assert_allclose(g, r, rtol=1e-12, atol=1e-9)


@settings(max_examples=60, deadline=None)
@given(
    arrays(np.float64, st.integers(1, 100), elements=st.floats(0, 1)),
    st.lists(st.floats(0, 1, exclude_min=True, exclude_max=True), max_size=30),
)
def test_table_path_property(scores, interior):
    edges = np.r_[0.0, np.unique(interior), 1.0]
    want = _searchsorted(scores, edges)
    np.testing.assert_array_equal(assign_bins(scores, edges), want)
    table = np.arange(edges.size - 1) * 1.5
    np.testing.assert_array_equal(lookup_bins(scores, edges, table), table[want])
    counts, sums = binned_sums(scores, edges, None, scores)
    np.testing.assert_array_equal(counts, np.bincount(want, minlength=edges.size - 1))
    np.testing.assert_allclose(
        sums, np.bincount(want, weights=scores, minlength=edges.size - 1)
    )


def test_assign_bins_keeps_2d_shape():
    rng = np.random.default_rng(3)
    s = rng.uniform(size=(4, 50))
    edges = bin_edges(None, 10)
    np.testing.assert_array_equal(assign_bins(s, edges), _searchsorted(s, edges))


def test_weighted_quantile_edges_of_a_group_without_weight():
    # Every weight 0: no quantile exists, so no interior edge (one bin).
    s = np.array([0.2, 0.4, 0.9])
    np.testing.assert_array_equal(bin_edges(s, 4, "quantile", np.zeros(3)), [0.0, 1.0])
    from skcalib.metrics import expected_calibration_error

    proba = [[0.7, 0.3], [0.6, 0.4], [0.2, 0.8], [0.1, 0.9]]
    ece = expected_calibration_error(
        [0, 1, 1, 1],
        proba,
        strategy="quantile",
        kind="top_label",
        n_bins=2,
        sample_weight=[1, 1, 0, 0],
    )
    # Class 1 (predicted for the rows of weight 0) has no weight. Class 0 is
    # predicted for rows 0 and 1: 2 equal-mass bins, {0.6} (wrong, gap 0.6)
    # and {0.7} (right, gap 0.3): ECE (0.6 + 0.3) / 2.
    assert ece == pytest.approx(0.45)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_in_range_path_and_two_column_tables(dtype):
    # in_range=True (scores known to lie in [0, 1]) skips the clipping and
    # writes the cells in one pass; 1.0 itself and every edge included.
    rng = np.random.default_rng(11)
    edges = bin_edges(rng.beta(2, 5, 500), 12, "quantile")
    scores = _edge_heavy_scores(rng, edges, dtype)
    scores = scores[(scores >= 0) & (scores <= 1)]
    scores = np.r_[scores, dtype(0), dtype(1)].astype(dtype)
    want = _searchsorted(scores, edges)
    table = np.column_stack((np.arange(edges.size - 1), -np.arange(edges.size - 1)))
    np.testing.assert_array_equal(
        lookup_bins(scores, edges, table, in_range=True), table[want]
    )
    target = rng.uniform(size=scores.size) < 0.4
    counts, positives = binned_sums(scores, edges, None, target, in_range=True)
    ref = bin_sums(want, edges.size - 1, None, target)
    np.testing.assert_array_equal(counts, ref[0])
    np.testing.assert_array_equal(positives, ref[1])
