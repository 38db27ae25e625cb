"""Binned calibration errors: reference values, invariances, properties."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from skcalib.metrics import (
    classwise_calibration_error,
    expected_calibration_error,
    maximum_calibration_error,
    reliability_curve,
)

from ._reference import ref_ece, vec_ece_l1

KINDS = ["confidence", "top_label", "classwise"]
NORMS = ["l1", "l2", "max"]


def _data(n=240, k=4, dtype=np.float64, seed=0, edgy=True):
    """Random probabilities, a third of them multiples of 1/10 (forest-like,
    sitting on bin edges), labels drawn from a sharpened version."""
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(k), size=n)
    if edgy:
        votes = rng.multinomial(10, p[: n // 3])
        p[: n // 3] = votes / 10
    p = p.astype(dtype)
    if dtype == np.float32:
        p[n // 3 :] /= p[n // 3 :].sum(axis=1, keepdims=True)
    truth = p.astype(np.float64) ** 0.7
    truth /= truth.sum(axis=1, keepdims=True)
    y = np.array([rng.choice(k, p=q) for q in truth])
    return y, p


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matches_naive_reference_multiclass(kind, norm, strategy, dtype):
    y, p = _data(dtype=dtype)
    for n_bins in (10, 15):
        got = expected_calibration_error(
            y, p, n_bins=n_bins, strategy=strategy, kind=kind, norm=norm
        )
        want = ref_ece(y, p, n_bins=n_bins, strategy=strategy, kind=kind, norm=norm)
        assert got == pytest.approx(want, abs=1e-12)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_matches_naive_reference_weighted(kind, norm, strategy):
    y, p = _data(seed=1)
    w = np.random.default_rng(2).uniform(0, 3, size=y.size)
    w[::7] = 0.0
    got = expected_calibration_error(
        y, p, n_bins=8, strategy=strategy, kind=kind, norm=norm, sample_weight=w
    )
    want = ref_ece(y, p, n_bins=8, strategy=strategy, kind=kind, norm=norm, weights=w)
    assert got == pytest.approx(want, abs=1e-12)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
@pytest.mark.parametrize("weighted", [False, True])
def test_debiased_matches_naive_reference(kind, strategy, weighted):
    y, p = _data(n=300, k=3, seed=3)
    w = np.random.default_rng(4).uniform(0.5, 2, y.size) if weighted else None
    got = expected_calibration_error(
        y,
        p,
        n_bins=12,
        strategy=strategy,
        kind=kind,
        norm="l2",
        debias=True,
        sample_weight=w,
    )
    want = ref_ece(
        y, p, n_bins=12, strategy=strategy, kind=kind, norm="l2", debias=True, weights=w
    )
    assert got == pytest.approx(want, abs=1e-12)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matches_naive_reference_binary_1d(kind, norm, dtype):
    rng = np.random.default_rng(5)
    p = np.concatenate([rng.uniform(size=150), rng.integers(0, 11, 90) / 10]).astype(
        dtype
    )
    y = (rng.uniform(size=p.size) < p**1.5).astype(int)
    got = expected_calibration_error(y, p, n_bins=10, kind=kind, norm=norm)
    want = ref_ece(y, p, n_bins=10, kind=kind, norm=norm)
    assert got == pytest.approx(want, abs=1e-12)


# ---------------------------------------------------------------- by hand
def test_hand_computed_binary():
    # 4 bins (0, .25], ... ; p = P(y=1); confidence = max(p, 1-p).
    y = [1, 0, 1, 1]
    p = [0.9, 0.2, 0.6, 0.75]
    # confidences 0.9 (right), 0.8 (right), 0.6 (right), 0.75 (right):
    # bins (0.5, 0.75]: {0.6, 0.75} acc 1, conf 0.675; (0.75, 1]: {0.9, 0.8}
    # acc 1 conf 0.85 -> ECE = 0.5 * 0.325 + 0.5 * 0.15
    assert expected_calibration_error(y, p, n_bins=4) == pytest.approx(0.2375)
    assert maximum_calibration_error(y, p, n_bins=4) == pytest.approx(0.325)
    l2 = np.sqrt(0.5 * 0.325**2 + 0.5 * 0.15**2)
    assert expected_calibration_error(y, p, n_bins=4, norm="l2") == pytest.approx(l2)
    # classwise, class 1: p in bins (0,.25]:{0.2, y=0}, (.5,.75]:{0.6, 0.75 y=1,1},
    # (.75,1]:{0.9, y=1}: gaps 0.2, 0.325, 0.1 -> 0.25*0.2 + 0.5*0.325 + 0.25*0.1
    # class 0: 1-p = 0.1 (y!=0), 0.8 (y=0), 0.4, 0.25 -> bins (0,.25]: {0.1, 0.25}
    # acc 0 conf 0.175; (.25,.5]: {0.4} acc 0; (.75,1]: {0.8} acc 1 -> 0.5*0.175
    # + 0.25*0.4 + 0.25*0.2
    cw = ((0.05 + 0.1625 + 0.025) + (0.0875 + 0.1 + 0.05)) / 2
    assert classwise_calibration_error(y, p, n_bins=4) == pytest.approx(cw)


def test_hand_computed_top_label_differs_from_confidence():
    # Two samples predicted class 0 at 0.7 (one right), two predicted class 1
    # at 0.7 (both right). Confidence ECE pools the four in one bin: acc 0.75,
    # conf 0.7 -> 0.05. Top-label keeps the classes apart: |0.5-0.7| and
    # |1-0.7|, each with share 1/2 -> 0.25.
    y = [0, 1, 1, 1]
    proba = [[0.7, 0.3], [0.7, 0.3], [0.3, 0.7], [0.3, 0.7]]
    assert expected_calibration_error(y, proba, n_bins=5) == pytest.approx(0.05)
    assert expected_calibration_error(y, proba, n_bins=5, kind="top_label") == (
        pytest.approx(0.25)
    )
    # Classwise (mean over the two classes): class 0 probabilities 0.7, 0.7,
    # 0.3, 0.3 with frequencies 0.5 and 0 -> 0.5*0.2 + 0.5*0.3; class 1 the same.
    assert classwise_calibration_error(y, proba, n_bins=5) == pytest.approx(0.25)
    assert expected_calibration_error(y, proba, n_bins=5, kind="classwise") == (
        pytest.approx(0.25)
    )


def _hand_ece(conf, hit, n_bins=15):
    """sum_B |B|/n |mean(hit) - mean(conf)| over right-closed uniform bins,
    and the per-bin sample counts (a loop over the bins)."""
    edges = np.linspace(0, 1, n_bins + 1)
    total, counts = 0.0, []
    for j in range(n_bins):
        lo, hi = edges[j], edges[j + 1]
        inside = (conf > lo) & (conf <= hi) if j else (conf >= lo) & (conf <= hi)
        counts.append(int(inside.sum()))
        if inside.any():
            total += inside.sum() * abs(hit[inside].mean() - conf[inside].mean())
    return total / conf.size, counts


def test_kinds_against_a_hand_computation():
    y, p = _data(n=600, seed=7)
    n, k = p.shape
    pred, conf = p.argmax(axis=1), p.max(axis=1)
    confidence, _ = _hand_ece(conf, pred == y)
    # Top-label: the cells of each predicted class, weighted by their size.
    top_label = sum(
        _hand_ece(conf[pred == c], (pred == y)[pred == c])[0] * (pred == c).mean()
        for c in range(k)
    )
    # Classwise: the mean over classes of the one-vs-rest errors.
    classwise = np.mean([_hand_ece(p[:, c], y == c)[0] for c in range(k)])
    want = {"confidence": confidence, "top_label": top_label, "classwise": classwise}
    for kind in KINDS:
        got = expected_calibration_error(y, p, kind=kind)
        assert got == pytest.approx(want[kind], rel=1e-12, abs=1e-15)
    # The three are different numbers on these data (the kinds are not aliases).
    assert len({round(v, 12) for v in want.values()}) == 3
    # The curve's counts are those of the loop.
    curve = reliability_curve(y, p)
    np.testing.assert_array_equal(curve.n_samples, _hand_ece(conf, pred == y)[1])


def test_values_on_bin_edges_land_in_lower_bin():
    # float32 forest probabilities k/10 sit exactly on the float32 edges of
    # 10 bins; 0.3 belongs to (0.2, 0.3], 0.1 and 0 to [0, 0.1].
    p = np.array([0.3, 0.3, 0.7, 0.1, 1.0, 0.0], dtype=np.float32)
    y = np.array([1, 0, 1, 0, 1, 0])
    curve = reliability_curve(y, p, n_bins=10, kind="classwise")
    np.testing.assert_array_equal(curve.n_samples, [2, 0, 2, 0, 0, 0, 1, 0, 0, 1])
    assert curve.mean_confidence[2] == pytest.approx(0.3)
    # Same for float64 0.3 etc. (on the float64 edges)...
    p64 = np.array([0.3, 0.3, 0.7, 0.1, 1.0, 0.0])
    curve64 = reliability_curve(y, p64, n_bins=10, kind="classwise")
    np.testing.assert_array_equal(curve64.n_samples, curve.n_samples)
    # ... but float32(0.3) cast to float64 is 0.30000001192..., above the
    # float64 edge (float32(0.7) = 0.69999998 stays below its edge): edges are
    # compared in the dtype of the scores.
    cast = reliability_curve(y, p.astype(np.float64), n_bins=10, kind="classwise")
    np.testing.assert_array_equal(cast.n_samples, [1, 1, 0, 2, 0, 0, 1, 0, 0, 1])
    for dtype in (np.float32, np.float64):
        q = p.astype(dtype)
        assert expected_calibration_error(y, q, n_bins=10) == pytest.approx(
            ref_ece(y, q, n_bins=10), abs=1e-12
        )


def test_forest_like_probabilities_match_reference():
    rng = np.random.default_rng(11)
    votes = rng.multinomial(20, rng.dirichlet(np.ones(5), size=400))
    p = (votes / 20).astype(np.float32)
    y = rng.integers(0, 5, size=400)
    for kind in KINDS:
        for n_bins in (4, 5, 10, 20):
            assert expected_calibration_error(y, p, n_bins=n_bins, kind=kind) == (
                pytest.approx(ref_ece(y, p, n_bins=n_bins, kind=kind), abs=1e-12)
            )


# ------------------------------------------------------------- invariances
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("norm", NORMS)
def test_permutation_invariance(kind, norm):
    y, p = _data(seed=8, edgy=False)
    perm = np.random.default_rng(0).permutation(y.size)
    a = expected_calibration_error(y, p, kind=kind, norm=norm)
    b = expected_calibration_error(y[perm], p[perm], kind=kind, norm=norm)
    assert a == pytest.approx(b, abs=1e-14)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_weight_two_equals_duplicated_row(kind, strategy):
    y, p = _data(seed=9)
    w = np.ones(y.size)
    w[:30] = 2.0
    dup = np.concatenate([np.arange(y.size), np.arange(30)])
    for norm in NORMS:
        a = expected_calibration_error(
            y, p, kind=kind, norm=norm, strategy=strategy, sample_weight=w
        )
        # Quantile edges: the weighted rule on both sides (unit weights).
        b = expected_calibration_error(
            y[dup],
            p[dup],
            kind=kind,
            norm=norm,
            strategy=strategy,
            sample_weight=np.ones(dup.size),
        )
        assert a == pytest.approx(b, abs=1e-13)


@pytest.mark.parametrize("kind", KINDS)
def test_weight_zero_equals_dropped_row(kind):
    y, p = _data(seed=10)
    w = np.ones(y.size)
    w[::5] = 0.0
    keep = w > 0
    for norm in NORMS:
        for strategy in ("uniform", "quantile"):
            a = expected_calibration_error(
                y, p, kind=kind, norm=norm, strategy=strategy, sample_weight=w
            )
            b = expected_calibration_error(
                y[keep],
                p[keep],
                kind=kind,
                norm=norm,
                strategy=strategy,
                sample_weight=w[keep],
                labels=np.arange(p.shape[1]),
            )
            assert a == pytest.approx(b, abs=1e-13)


def test_unit_weights_equal_no_weights():
    y, p = _data(seed=12)
    for kind in KINDS:
        for norm in NORMS:
            a = expected_calibration_error(y, p, kind=kind, norm=norm)
            b = expected_calibration_error(
                y, p, kind=kind, norm=norm, sample_weight=np.full(y.size, 3.0)
            )
            assert a == pytest.approx(b, abs=1e-13)
        a = expected_calibration_error(y, p, kind=kind, norm="l2", debias=True)
        b = expected_calibration_error(
            y, p, kind=kind, norm="l2", debias=True, sample_weight=np.ones(y.size)
        )
        assert a == pytest.approx(b, abs=1e-13)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_binary_1d_equals_2d(kind, dtype):
    rng = np.random.default_rng(13)
    p = np.concatenate([rng.uniform(size=300), rng.integers(0, 11, 100) / 10]).astype(
        dtype
    )
    y = (rng.uniform(size=p.size) < p).astype(int)
    p2 = np.column_stack([1 - p, p])
    for norm in NORMS:
        for strategy in ("uniform", "quantile"):
            a = expected_calibration_error(
                y, p, kind=kind, norm=norm, strategy=strategy
            )
            b = expected_calibration_error(
                y, p2, kind=kind, norm=norm, strategy=strategy
            )
            assert a == pytest.approx(b, abs=1e-13)


def test_string_labels_and_labels_argument():
    y, p = _data(seed=14, k=3, edgy=False)
    names = np.array(["cat", "dog", "emu"])
    ref = expected_calibration_error(y, p)
    assert expected_calibration_error(names[y], p) == pytest.approx(ref, abs=1e-15)
    # Columns in another order, named by labels=.
    order = [2, 0, 1]
    for kind in KINDS:
        a = expected_calibration_error(y, p, kind=kind)
        b = expected_calibration_error(
            names[y], p[:, order], kind=kind, labels=names[order]
        )
        assert a == pytest.approx(b, abs=1e-14)


def test_binary_positive_class_is_larger_label_or_labels_1():
    rng = np.random.default_rng(15)
    p = rng.uniform(size=200)
    y = (rng.uniform(size=200) < p).astype(int)
    s = np.where(y == 1, "yes", "no")  # "yes" > "no": the positive class
    for kind in KINDS:
        ref = expected_calibration_error(y, p, kind=kind)
        assert expected_calibration_error(s, p, kind=kind) == pytest.approx(ref)
        flipped = expected_calibration_error(s, 1 - p, kind=kind, labels=["yes", "no"])
        assert flipped == pytest.approx(ref, abs=1e-12)


def test_more_columns_than_classes_present():
    y, p = _data(seed=16, k=5)
    keep = y != 4
    # y_true does not say which column is which class: never guessed.
    with pytest.raises(ValueError, match="5 columns but y_true has 4 distinct"):
        expected_calibration_error(y[keep], p[keep])
    got = expected_calibration_error(y[keep], p[keep], labels=[0, 1, 2, 3, 4])
    assert got == pytest.approx(ref_ece(y[keep], p[keep]), abs=1e-12)


# ------------------------------------------------------------------ debias
def test_debiased_near_zero_on_calibrated_data_plugin_biased_up():
    rng = np.random.default_rng(17)
    plug, deb = [], []
    for _ in range(20):
        p = rng.uniform(size=1000)
        y = (rng.uniform(size=1000) < p).astype(int)  # perfectly calibrated
        plug.append(expected_calibration_error(y, p, norm="l2"))
        deb.append(expected_calibration_error(y, p, norm="l2", debias=True))
    # Plug-in: sqrt(sum_b P_b var_b) ~ sqrt(8 bins * 0.15 / 1000) ~ 0.035 > 0
    # (confidences fill the 8 bins above 0.5).
    assert np.mean(plug) > 0.025
    # Debiased squared error is unbiased for 0: its mean is near 0 and some
    # draws are negative.
    assert abs(np.mean(np.sign(deb) * np.square(deb))) < 3e-4
    assert min(deb) < 0 < max(deb)


def test_debiased_close_to_truth_when_miscalibrated():
    rng = np.random.default_rng(18)
    p = rng.uniform(size=200_000)
    y = (rng.uniform(size=p.size) < 0.5 + (p - 0.5) / 2).astype(int)
    big = expected_calibration_error(y, p, norm="l2")
    # A small sample: debiasing moves the estimate towards the large-n value.
    sub = slice(0, 2000)
    plug = expected_calibration_error(y[sub], p[sub], norm="l2")
    deb = expected_calibration_error(y[sub], p[sub], norm="l2", debias=True)
    assert deb < plug
    assert abs(deb - big) < 0.02


def test_debias_needs_l2():
    with pytest.raises(ValueError, match="debias=True is defined for norm='l2'"):
        expected_calibration_error([0, 1], [0.2, 0.7], norm="l1", debias=True)


# -------------------------------------------------------------- properties
@st.composite
def _problems(draw):
    n = draw(st.integers(1, 40))
    k = draw(st.integers(2, 5))
    raw = draw(
        arrays(np.float64, (n, k), elements=st.floats(0.0, 1.0, allow_subnormal=False))
    )
    raw += 1e-3
    proba = raw / raw.sum(axis=1, keepdims=True)
    y = draw(arrays(np.int64, n, elements=st.integers(0, k - 1)))
    n_bins = draw(st.integers(1, 20))
    return y, proba, n_bins


@settings(max_examples=60, deadline=None)
@given(_problems(), st.sampled_from(KINDS), st.sampled_from(["uniform", "quantile"]))
def test_property_bounds_and_mce_dominates(problem, kind, strategy):
    y, proba, n_bins = problem
    kw = dict(
        n_bins=n_bins, kind=kind, strategy=strategy, labels=np.arange(proba.shape[1])
    )
    l1 = expected_calibration_error(y, proba, **kw)
    l2 = expected_calibration_error(y, proba, norm="l2", **kw)
    mce = maximum_calibration_error(y, proba, **kw)
    for v in (l1, l2, mce):
        assert 0.0 <= v <= 1.0
    assert mce >= l2 - 1e-12
    assert l2 >= l1 - 1e-12
    assert mce >= l1 - 1e-12


@settings(max_examples=40, deadline=None)
@given(
    arrays(np.int64, st.integers(1, 50), elements=st.integers(0, 3)),
    st.integers(1, 30),
    st.sampled_from(KINDS),
    st.sampled_from(["uniform", "quantile"]),
)
def test_property_one_hot_correct_is_calibrated(y, n_bins, kind, strategy):
    proba = np.eye(4)[y]
    for norm in NORMS:
        assert (
            expected_calibration_error(
                y,
                proba,
                n_bins=n_bins,
                kind=kind,
                norm=norm,
                strategy=strategy,
                labels=np.arange(4),
            )
            == 0.0
        )


# ---------------------------------------------------------------- exactness
def test_large_float32_input_exact_against_float64_reference():
    rng = np.random.default_rng(19)
    n, k = 300_000, 10
    z = rng.standard_normal((n, k)).astype(np.float32) * 3
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    y = rng.integers(0, k, n)
    got = expected_calibration_error(y, p)
    # float64 reference: argmax / max of the same float32 numbers, the
    # searchsorted rule on float32 edges, sums in float64 with math.fsum.
    pred, conf = p.argmax(axis=1), p.max(axis=1)
    ids = np.searchsorted(np.linspace(0, 1, 16)[1:-1].astype(np.float32), conf)
    correct = pred == y
    total = 0.0
    import math

    for b in range(15):
        sel = ids == b
        total += abs(
            math.fsum(correct[sel].astype(float)) - math.fsum(conf[sel].astype(float))
        )
    assert got == pytest.approx(total / n, abs=1e-12)
    # K > 24 classes take the argmax path.
    p100 = rng.dirichlet(np.ones(40) * 0.3, size=5000)
    y100 = rng.integers(0, 40, 5000)
    assert expected_calibration_error(y100, p100, kind="top_label") == pytest.approx(
        ref_ece(y100, p100, kind="top_label"), abs=1e-12
    )


def test_ties_resolved_like_argmax():
    # Exact ties at the maximum: the first column is the prediction.
    p = np.array([[0.5, 0.5], [0.25, 0.25, 0.5][:2] + [0.5]][:1] * 3 + [[0.4, 0.6]])
    y = np.array([1, 0, 1, 1])
    got = expected_calibration_error(y, p, n_bins=5, kind="top_label")
    assert got == pytest.approx(ref_ece(y, p, n_bins=5, kind="top_label"))
    p3 = np.array([[0.4, 0.4, 0.2], [0.2, 0.4, 0.4], [1 / 3, 1 / 3, 1 / 3]])
    for y3 in ([0, 1, 0], [1, 2, 2]):
        for kind in KINDS:
            got = expected_calibration_error(
                y3, p3, n_bins=5, kind=kind, labels=[0, 1, 2]
            )
            want = ref_ece(np.array(y3), p3, n_bins=5, kind=kind)
            assert got == pytest.approx(want, abs=1e-15)


@pytest.mark.parametrize("weighted", [False, True])
def test_blocked_paths_across_block_boundaries(weighted):
    # 100 000 rows of 3 columns span several blocks of the one-pass scans
    # (float64: 43 690 rows per block, float32: 87 381).
    rng = np.random.default_rng(20)
    n = 100_000
    p = rng.dirichlet(np.ones(3), size=n)
    p[::3] = rng.multinomial(10, p[::3]) / 10  # values on edges
    y = rng.integers(0, 3, n)
    w = rng.uniform(0, 2, n) if weighted else None
    for q in (p, p.astype(np.float32)):
        for kind in KINDS:
            assert expected_calibration_error(y, q, kind=kind, sample_weight=w) == (
                pytest.approx(vec_ece_l1(y, q, kind=kind, weights=w), abs=1e-12)
            )
    # The vectorised reference agrees with the naive one on a slice.
    s = slice(0, 3000)
    for kind in KINDS:
        assert vec_ece_l1(y[s], p[s], kind=kind) == pytest.approx(
            ref_ece(y[s], p[s], kind=kind), abs=1e-12
        )
