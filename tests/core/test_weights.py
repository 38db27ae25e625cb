"""The two rules written once (issue 31, item 4): the power-of-two rescaling of
sample weights (:func:`skcalib._core.weights.unit_exponent`, used by every
numpy and array-API path) and the finishing of quantile edges
(:func:`skcalib._core.quantile_search.edges_from_quantiles`), against
references that share no code with them: exact rational arithmetic
(:class:`fractions.Fraction`) for the exponent, a loop over Python floats for
the edges, and :func:`~skcalib._core.binning.bin_edges` for the pass-by-pass
quantile search."""

from fractions import Fraction

import numpy as np
import pytest
from _xp import import_namespace
from sklearn import config_context

from skcalib._core.binning import bin_edges
from skcalib._core.inputs import weight_scale
from skcalib._core.quantile_search import QuantileEdgeSearch, edges_from_quantiles
from skcalib._core.weights import unit_exponent, unit_weights


def _floor_log2(x):
    """``floor(log2(x))`` of a positive float, exactly (integer bit lengths
    of its rational value, no floating point)."""
    q = Fraction(float(x))
    e = q.numerator.bit_length() - q.denominator.bit_length()
    # 2**e <= q < 2**(e + 1), up to one step of the bit lengths' rounding
    return e if Fraction(2) ** e <= q else e - 1


TOPS = [
    5e-324,  # the smallest subnormal, 2**-1074
    1e-310,  # subnormal
    2.0**-1022,  # the smallest normal
    0.75,
    1.0,
    np.nextafter(1.0, 0.0),
    1.5,
    np.nextafter(2.0, 0.0),
    2.0,
    1e300,
    np.finfo(np.float64).max,
]


@pytest.mark.parametrize("top", TOPS)
def test_unit_exponent_is_the_power_of_two_at_or_below(top):
    e = unit_exponent(top)
    assert e == _floor_log2(top)
    assert Fraction(2) ** e <= Fraction(float(top)) < Fraction(2) ** (e + 1)
    assert weight_scale(top) == 2.0**e  # the metrics' divisor: the same rule


def test_unit_exponent_of_every_exact_power_of_two():
    k = list(range(-1074, 1024))
    assert [unit_exponent(2.0**i) for i in k] == k
    # just below each power of two of a normal number: one less
    below = [np.nextafter(2.0**i, 0.0) for i in k if i > -1022]
    assert [unit_exponent(x) for x in below] == [i - 1 for i in k if i > -1022]


@pytest.mark.parametrize("top", [0.0, -1.0, np.nan, np.inf, -np.inf])
def test_no_exponent_without_a_positive_finite_top(top):
    assert unit_exponent(top) is None
    assert weight_scale(top) == 1.0
    w = np.array([top, 0.0])
    got, unit = unit_weights(w, top)
    assert got is w and unit == 1.0


@pytest.mark.parametrize(
    "scale", [1.0, 1e300, 1.7e308 / 2.0, 1e-300, 1e-310, 5e-324], ids=repr
)
def test_unit_weights_are_exact_and_in_one_to_two(scale):
    # below 1e-307 the weights themselves are subnormal (few bits)
    w = np.random.default_rng(0).uniform(0.0, 2.0, 50) * scale
    w[3] = 0.0
    got, unit = unit_weights(w)
    assert 1.0 <= got.max() < 2.0
    assert unit == 2.0 ** unit_exponent(w.max())
    # exact: multiplying back gives the weights bit for bit, and the sum of
    # 50 weights stays finite whatever the scale
    np.testing.assert_array_equal(got * unit, w)
    assert np.isfinite(got.sum()) and got.sum() < 100
    assert got[3] == 0.0


def test_unit_weights_keep_float32():
    w = np.array([3e38, 1.0, 0.0, 2.5e-45], dtype=np.float32)  # max, 1, 0, subnormal
    got, unit = unit_weights(w)
    assert got.dtype == np.float32
    assert unit == 2.0**127 and got.max() == np.float32(3e38 / 2.0**127)
    # exact except the subnormal float32 2.5e-45 (2**-148), which 2**-127
    # takes below the smallest float32 (2**-149): it rounds to 0
    np.testing.assert_array_equal(got[:3].astype(np.float64) * unit, w[:3])
    assert got[3] == 0.0


def test_array_api_weights_equal_numpy_bit_for_bit():
    xps = import_namespace("array_api_strict")
    from skcalib._core.xp import namespace, to_numpy
    from skcalib._core.xp.weights import xp_unit_weights

    for w in (
        np.array([5e-324, 1e-323, 0.0]),  # 2**1074: two factors on the device
        np.array([1.7e308, 1e308, 3.0]),
        np.array([0.75, 0.5, 0.0]),
        np.array([1.5, 1.0]),
    ):
        with config_context(array_api_dispatch=True):
            x = xps.asarray(w)
            ns = namespace(x)
            got, unit = xp_unit_weights(ns, x)
        want, want_unit = unit_weights(w)
        assert unit == want_unit
        np.testing.assert_array_equal(to_numpy(got), want)


def _slow_edges(values, top):
    """The finishing rule by a loop over Python floats."""
    ceiling = min(1.0, float(top))
    kept = set()
    for v in values:
        v = min(max(float(v), 0.0), 1.0)
        if v < ceiling:
            kept.add(v)
    return np.array([0.0, *sorted(kept), 1.0])


@pytest.mark.parametrize("seed", range(5))
def test_edges_from_quantiles_by_a_loop(seed):
    rng = np.random.default_rng(seed)
    values = rng.choice([0.0, 0.1, 0.25, 0.5, 0.9, 1.0, 1.2, -0.1], size=12)
    for top in (1.0, 0.9, 0.5, 0.0, 2.0):
        got = edges_from_quantiles(values, top)
        assert got.dtype == np.float64
        np.testing.assert_array_equal(got, _slow_edges(values, top))
    # float32 values: the edges are those float32 numbers exactly
    v32 = rng.random(9).astype(np.float32)
    got = edges_from_quantiles(v32, v32.max())
    np.testing.assert_array_equal(got[1:-1], np.sort(v32)[:-1].astype(np.float64))


def _search_edges(scores, weights, n_bins, chunk=37):
    search = QuantileEdgeSearch(1, n_bins, scores.dtype, weights is not None)
    while not search.done:
        parts = [
            search.digit_counts(
                [
                    (
                        scores[i : i + chunk],
                        None if weights is None else weights[i : i + chunk],
                    )
                ]
            )
            for i in range(0, scores.size, chunk)
        ]
        search.advance(QuantileEdgeSearch.merge(parts))
    return search.edges()[0]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("weighted", [False, True])
def test_quantile_search_finishes_as_bin_edges(dtype, weighted):
    # ties at the largest score (its edge is dropped), at 0 (its edge stays),
    # a largest score below 1, and rows of weight 0 above the others
    rng = np.random.default_rng(1)
    scores = np.concatenate(
        [np.zeros(60), np.full(80, 0.8), rng.uniform(0.0, 0.8, 160), np.full(40, 0.95)]
    ).astype(dtype)
    rng.shuffle(scores)
    w = rng.integers(1, 4, scores.size).astype(float) if weighted else None
    if weighted:
        w[scores == dtype(0.95)] = 0.0  # the largest score of positive weight is 0.8
    for n_bins in (1, 2, 3, 7, 40):
        want = bin_edges(scores, n_bins, "quantile", w)
        got = _search_edges(scores, w, n_bins)
        np.testing.assert_array_equal(got, want)
        top = np.float64(dtype(0.8 if weighted else 0.95))
        assert top not in got[1:-1]  # the largest score of positive weight
