"""uncertainty_decomposition and ensemble_proba: hand-computed values, a slow
loop reference, degenerate cases, invariances and every input error."""

import math

import numpy as np
import pytest
from scipy.stats import entropy
from sklearn.utils._param_validation import InvalidParameterError

from skcalib.metrics import (
    UncertaintyDecomposition,
    ensemble_proba,
    uncertainty_decomposition,
)

FIELDS = (
    "total",
    "aleatoric",
    "epistemic",
    "total_variance",
    "aleatoric_variance",
    "epistemic_variance",
)


def _members(rng, n_members=4, n_samples=50, n_classes=3, dtype=np.float64):
    return rng.dirichlet(np.ones(n_classes), size=(n_members, n_samples)).astype(dtype)


def _slow(members):
    """The definitions, written out with a loop over samples and members."""
    members = np.asarray(members, dtype=np.float64)
    n_members, n_samples, n_classes = members.shape
    out = {key: [] for key in FIELDS}
    for i in range(n_samples):
        rows = [list(members[m, i]) for m in range(n_members)]
        mean = [sum(r[k] for r in rows) / n_members for k in range(n_classes)]

        def h(p):
            return -sum(q * math.log(q) for q in p if q > 0)

        total = h(mean)
        aleatoric = sum(h(r) for r in rows) / n_members
        out["total"].append(total)
        out["aleatoric"].append(aleatoric)
        out["epistemic"].append(total - aleatoric)
        out["total_variance"].append(sum(q * (1 - q) for q in mean))
        out["aleatoric_variance"].append(
            sum(sum(q * (1 - q) for q in r) for r in rows) / n_members
        )
        out["epistemic_variance"].append(
            sum(
                sum((r[k] - mean[k]) ** 2 for r in rows) / n_members
                for k in range(n_classes)
            )
        )
    return {key: np.array(value) for key, value in out.items()}


def test_hand_computed_two_members_two_samples():
    # sample 0: the members disagree; sample 1: they agree on (0.5, 0.5)
    members = [[[1.0, 0.0], [0.5, 0.5]], [[0.5, 0.5], [0.5, 0.5]]]
    d = uncertainty_decomposition(members, member_axis=0)
    assert isinstance(d, UncertaintyDecomposition)
    total0 = -(0.75 * math.log(0.75) + 0.25 * math.log(0.25))
    aleatoric0 = math.log(2) / 2
    np.testing.assert_allclose(d.total, [total0, math.log(2)], rtol=1e-15)
    np.testing.assert_allclose(d.aleatoric, [aleatoric0, math.log(2)], rtol=1e-15)
    np.testing.assert_allclose(d.epistemic, [total0 - aleatoric0, 0.0], atol=1e-16)
    assert d.epistemic[1] == 0.0
    # variance: sum_k pbar_k (1 - pbar_k) = 2 * 0.75 * 0.25; members' mean of
    # sum_k p(1-p) = (0 + 0.5) / 2; sum_k var_m(p_mk) = 2 * 0.25**2
    np.testing.assert_allclose(d.total_variance, [0.375, 0.5], rtol=1e-15)
    np.testing.assert_allclose(d.aleatoric_variance, [0.25, 0.5], rtol=1e-15)
    np.testing.assert_allclose(d.epistemic_variance, [0.125, 0.0], rtol=1e-15)
    np.testing.assert_allclose(d.mean_proba, [[0.75, 0.25], [0.5, 0.5]])
    assert d.mean_epistemic == pytest.approx((total0 - aleatoric0) / 2, rel=1e-15)
    assert d.mean_total_variance == pytest.approx(0.4375, rel=1e-15)
    assert d.base is None


def test_matches_slow_loop_and_scipy_entropy():
    rng = np.random.default_rng(0)
    members = _members(rng, n_members=5, n_samples=40, n_classes=4)
    d = uncertainty_decomposition(members, member_axis=0)
    ref = _slow(members)
    for key in FIELDS:
        np.testing.assert_allclose(getattr(d, key), ref[key], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(d.total, entropy(members.mean(axis=0), axis=1))
    np.testing.assert_allclose(d.aleatoric, entropy(members, axis=2).mean(axis=0))
    np.testing.assert_allclose(d.total, d.aleatoric + d.epistemic, rtol=1e-12)
    np.testing.assert_allclose(
        d.total_variance, d.aleatoric_variance + d.epistemic_variance, rtol=1e-12
    )
    assert d.mean_total == pytest.approx(ref["total"].mean(), rel=1e-12)
    assert np.all(d.epistemic >= 0)


@pytest.mark.parametrize("n_members", [2, 3, 7])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_identical_members_have_exactly_zero_epistemic(n_members, dtype):
    rng = np.random.default_rng(1)
    p = rng.dirichlet(np.ones(10), size=200).astype(dtype)
    d = uncertainty_decomposition(np.stack([p] * n_members), member_axis=0)
    assert np.all(d.epistemic == 0)
    assert np.all(d.epistemic_variance == 0)
    np.testing.assert_array_equal(d.aleatoric, d.total)
    np.testing.assert_array_equal(d.aleatoric_variance, d.total_variance)
    np.testing.assert_array_equal(d.mean_proba, p)


def test_one_hot_members_are_exact():
    eye = np.eye(3)
    members = np.stack([eye, eye[[1, 2, 0]]])  # always disagree
    d = uncertainty_decomposition(members, member_axis=0, base=2)
    np.testing.assert_array_equal(d.aleatoric, 0.0)
    np.testing.assert_allclose(d.total, 1.0, rtol=1e-15)
    np.testing.assert_allclose(d.epistemic, 1.0, rtol=1e-15)
    np.testing.assert_array_equal(d.aleatoric_variance, 0.0)
    np.testing.assert_allclose(d.epistemic_variance, 0.5, rtol=1e-15)
    same = uncertainty_decomposition(np.stack([eye, eye]), member_axis=0)
    for key in FIELDS:
        np.testing.assert_array_equal(getattr(same, key), 0.0)


def test_member_order_and_sample_order():
    rng = np.random.default_rng(2)
    members = _members(rng)
    d = uncertainty_decomposition(members, member_axis=0)
    shuffled = uncertainty_decomposition(members[[3, 1, 0, 2]], member_axis=0)
    rows = rng.permutation(members.shape[1])
    by_row = uncertainty_decomposition(members[:, rows], member_axis=0)
    for key in FIELDS:
        np.testing.assert_allclose(getattr(shuffled, key), getattr(d, key), rtol=1e-12)
        np.testing.assert_allclose(getattr(by_row, key), getattr(d, key)[rows])


def test_list_of_members_equals_stack():
    rng = np.random.default_rng(3)
    members = _members(rng, n_members=3)
    d = uncertainty_decomposition(list(members))  # a list: no member_axis
    np.testing.assert_array_equal(
        d.total, uncertainty_decomposition(members, member_axis=0).total
    )


def test_base():
    rng = np.random.default_rng(4)
    members = _members(rng)
    nats = uncertainty_decomposition(members, member_axis=0)
    bits = uncertainty_decomposition(members, member_axis=0, base=2)
    for key in ("total", "aleatoric", "epistemic"):
        np.testing.assert_allclose(getattr(bits, key), getattr(nats, key) / np.log(2))
    np.testing.assert_array_equal(bits.epistemic_variance, nats.epistemic_variance)
    assert bits.base == 2


def test_sample_weight_in_means():
    rng = np.random.default_rng(5)
    members = _members(rng, n_samples=6)
    w = np.array([2.0, 1.0, 0.0, 1.0, 1.0, 1.0])
    weighted = uncertainty_decomposition(members, member_axis=0, sample_weight=w)
    expanded = uncertainty_decomposition(members[:, [0, 0, 1, 3, 4, 5]], member_axis=0)
    for key in FIELDS:
        assert getattr(weighted, f"mean_{key}") == pytest.approx(
            getattr(expanded, f"mean_{key}"), rel=1e-12
        )
    np.testing.assert_array_equal(
        weighted.total, uncertainty_decomposition(members, member_axis=0).total
    )


def test_logits_are_softmaxed_member_by_member():
    rng = np.random.default_rng(6)
    logits = rng.normal(scale=3, size=(4, 30, 5))
    proba = np.exp(logits) / np.exp(logits).sum(axis=2, keepdims=True)
    from_logits = uncertainty_decomposition(logits, member_axis=0, score_type="logit")
    from_proba = uncertainty_decomposition(proba, member_axis=0)
    shifted = uncertainty_decomposition(
        logits + 100.0, member_axis=0, score_type="logit"
    )
    for key in FIELDS:
        np.testing.assert_allclose(
            getattr(from_logits, key), getattr(from_proba, key), rtol=1e-10
        )
        np.testing.assert_allclose(
            getattr(shifted, key), getattr(from_proba, key), rtol=1e-9, atol=1e-15
        )


def test_float32_stays_float32_and_is_close():
    rng = np.random.default_rng(7)
    members = _members(rng, n_members=5, n_samples=300, n_classes=10)
    d64 = uncertainty_decomposition(members, member_axis=0)
    d32 = uncertainty_decomposition(members.astype(np.float32), member_axis=0)
    for key in FIELDS:
        assert getattr(d32, key).dtype == np.float32
        np.testing.assert_allclose(getattr(d32, key), getattr(d64, key), atol=1e-5)
    assert d32.mean_proba.dtype == np.float32
    assert isinstance(d32.mean_total, float)


def test_rounded_probabilities_pass():
    rng = np.random.default_rng(8)
    members = np.round(_members(rng, n_classes=10), 4)
    assert np.abs(members.sum(axis=2) - 1).max() > 1e-8  # really rounded
    d = uncertainty_decomposition(members, member_axis=0)
    for key in FIELDS:
        assert np.all(getattr(d, key) >= 0)
    ref = _slow(members)
    for key in FIELDS:
        np.testing.assert_allclose(getattr(d, key), ref[key], rtol=1e-12, atol=1e-14)


def test_ensemble_proba():
    rng = np.random.default_rng(9)
    proba = _members(rng)
    np.testing.assert_allclose(
        ensemble_proba(proba, member_axis=0), proba.mean(axis=0), rtol=1e-14
    )
    geo = np.exp(np.log(proba).mean(axis=0))
    np.testing.assert_allclose(
        ensemble_proba(proba, member_axis=0, average="logit"),
        geo / geo.sum(axis=1, keepdims=True),
        rtol=1e-12,
    )
    logits = rng.normal(size=(3, 20, 4))
    z = logits.mean(axis=0)
    np.testing.assert_allclose(
        ensemble_proba(logits, member_axis=0, score_type="logit", average="logit"),
        np.exp(z) / np.exp(z).sum(axis=1, keepdims=True),
        rtol=1e-12,
    )
    np.testing.assert_allclose(
        ensemble_proba(logits, member_axis=0, score_type="logit"),
        uncertainty_decomposition(logits, member_axis=0, score_type="logit").mean_proba,
    )
    same = np.stack([proba[0]] * 3)
    np.testing.assert_array_equal(ensemble_proba(same, member_axis=0), proba[0])
    assert ensemble_proba(proba.astype(np.float32), member_axis=0).dtype == np.float32


def test_averaging_logits_is_more_confident_where_members_disagree():
    members = np.array([[[0.9, 0.1]], [[0.2, 0.8]]])
    mixture = ensemble_proba(members, member_axis=0)
    geometric = ensemble_proba(members, member_axis=0, average="logit")
    np.testing.assert_allclose(mixture, [[0.55, 0.45]])
    # sqrt(0.18) / (sqrt(0.18) + sqrt(0.08)) = 0.6
    np.testing.assert_allclose(geometric, [[0.6, 0.4]], rtol=1e-14)


@pytest.mark.parametrize(
    "members, match",
    [
        (
            np.full((4, 3), 1 / 3),
            r"must be 3-D of shape \(n_members, n_samples, n_classes\) "
            r"\(member_axis=0\) or \(n_samples, n_members, n_classes\) "
            r"\(member_axis=1\), got an array of shape \(4, 3\)\. One model's "
            "predictions",
        ),
        (np.full((2, 2, 2, 2), 0.5), r"got an array of shape \(2, 2, 2, 2\)"),
        (
            np.full((1, 5, 2), 0.5),
            r"has 1 member\(s\) \(shape \(1, 5, 2\) in the order \(n_members, "
            r"n_samples, n_classes\)\); the epistemic part needs at least 2 "
            "members",
        ),
        (np.ones((2, 5, 1)), r"at least 1 sample and 2 classes, got shape \(2, 5, 1\)"),
        (np.full((2, 0, 2), 0.5), r"at least 1 sample and 2 classes"),
        (
            [np.full((2, 2), 0.5), np.full((3, 2), 0.5)],
            r"entry 0 has shape \(2, 2\), entry 1 has shape \(3, 2\)",
        ),
        (
            [np.full((2, 2), 0.5), np.full((2, 3), 1 / 3)],
            r"entry 0 has shape \(2, 2\), entry 1 has shape \(2, 3\)",
        ),
    ],
)
def test_shape_errors(members, match):
    with pytest.raises(ValueError, match=match):
        uncertainty_decomposition(members, member_axis=0)
    with pytest.raises(ValueError, match=match):
        ensemble_proba(members, member_axis=0)


def test_rows_not_summing_to_one_name_member_row_and_sum():
    members = np.full((3, 4, 2), 0.5)
    members[1, 2] = [0.5, 0.4]
    with pytest.raises(
        ValueError, match=r"member 1, row 2 sums to 0\.9 .*score_type='logit'"
    ):
        uncertainty_decomposition(members, member_axis=0)
    with pytest.raises(ValueError, match=r"member 1, row 2 sums to 0\.9"):
        ensemble_proba(members, member_axis=0, average="logit")


def test_values_outside_unit_interval():
    members = np.full((2, 3, 2), 0.5)
    members[0, 1] = [1.5, -0.5]
    with pytest.raises(
        ValueError,
        match=r"probabilities in \[0, 1\] \(pass score_type='logit'.*"
        r"member 0, row 1 has \[1\.5, -0\.5\]",
    ):
        uncertainty_decomposition(members, member_axis=0)
    # the same numbers are valid logits
    uncertainty_decomposition(members, member_axis=0, score_type="logit")


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("score_type", ["probability", "logit"])
def test_non_finite(bad, score_type):
    members = np.full((2, 3, 2), 0.5)
    members[1, 0, 1] = bad
    with pytest.raises(ValueError, match=rf"member 1, row 0, column 1 is {bad}"):
        uncertainty_decomposition(members, member_axis=0, score_type=score_type)


def test_parameter_errors():
    members = np.full((2, 3, 2), 0.5)
    with pytest.raises(InvalidParameterError, match="score_type"):
        uncertainty_decomposition(members, member_axis=0, score_type="auto")
    with pytest.raises(InvalidParameterError, match="base"):
        uncertainty_decomposition(members, member_axis=0, base=1)
    with pytest.raises(InvalidParameterError, match="average"):
        ensemble_proba(members, member_axis=0, average="median")
    with pytest.raises(ValueError, match=r"sample_weight must have shape \(3,\)"):
        uncertainty_decomposition(members, member_axis=0, sample_weight=[1.0, 2.0])
    with pytest.raises(ValueError, match="sample_weight must be >= 0"):
        uncertainty_decomposition(
            members, member_axis=0, sample_weight=[1.0, -1.0, 1.0]
        )
    with pytest.raises(TypeError, match="must hold numbers"):
        uncertainty_decomposition(np.full((2, 3, 2), "a"), member_axis=0)


def test_array_api_input_returns_its_namespace():
    from _xp import namespace_for
    from sklearn import config_context

    xps, _, _ = namespace_for(("array_api_strict", None, "float64"))

    rng = np.random.default_rng(10)
    members = _members(rng)
    expected = uncertainty_decomposition(members, member_axis=0)
    with config_context(array_api_dispatch=True):
        d = uncertainty_decomposition(xps.asarray(members), member_axis=0)
        p = ensemble_proba(xps.asarray(members), member_axis=0)
    assert hasattr(d.total, "__array_namespace__")
    assert d.total.__array_namespace__() is xps
    np.testing.assert_allclose(np.asarray(d.epistemic), expected.epistemic)
    np.testing.assert_allclose(np.asarray(p), expected.mean_proba)
    assert d.mean_total == expected.mean_total


# ------------------------------------------------------ the member axis
# Issue 30, item 3: a samples-first stack (n_samples, n_members, K) was read
# as members-first and gave the decomposition of other "members" without a
# word (5 members of 200 samples: mean epistemic 0.4357 over 5 "samples"
# instead of 0.3541 over 200). The values cannot decide the order, so an
# array must say it.
def _five_members_200_samples():
    rng = np.random.default_rng(0)
    return rng.dirichlet(np.full(3, 0.5), size=(5, 200))


@pytest.mark.parametrize("score_type", ["probability", "logit"])
@pytest.mark.parametrize("order", ["members_first", "samples_first"])
def test_array_without_member_axis_is_an_error(score_type, order):
    members = _five_members_200_samples()
    if score_type == "logit":
        members = np.log(members)
    stack = members if order == "members_first" else members.swapaxes(0, 1)
    a, b, _ = stack.shape
    match = (
        rf"member_(proba|scores) is an array of shape \({a}, {b}, 3\).*cannot tell.*"
        rf"member_axis=0 for {a} members of {b} samples, member_axis=1 for "
        rf"{b} members of {a} samples"
    )
    with pytest.raises(ValueError, match=match):
        uncertainty_decomposition(stack, score_type=score_type)
    for average in ("probability", "logit"):
        with pytest.raises(ValueError, match=match):
            ensemble_proba(stack, score_type=score_type, average=average)


@pytest.mark.parametrize("score_type", ["probability", "logit"])
def test_member_axis_1_reads_samples_first(score_type):
    members = _five_members_200_samples()  # (5, 200, 3)
    ref = _slow(members)  # the definitions, members first
    scores = members if score_type == "probability" else 3.0 * np.log(members) + 1.0
    # the logits 3 log p + 1 are the probabilities p^3 / sum p^3
    if score_type == "logit":
        cubed = members**3 / (members**3).sum(axis=2, keepdims=True)
        ref = _slow(cubed)
    samples_first = scores.swapaxes(0, 1)  # (200, 5, 3)
    for stack, axis in [(scores, 0), (samples_first, 1), (list(samples_first), 1)]:
        d = uncertainty_decomposition(stack, member_axis=axis, score_type=score_type)
        assert d.epistemic.shape == (200,)
        for key in FIELDS:
            np.testing.assert_allclose(
                getattr(d, key), ref[key], rtol=1e-10, atol=1e-14
            )
        assert d.mean_epistemic == pytest.approx(ref["epistemic"].mean(), rel=1e-10)
        for average in ("probability", "logit"):
            np.testing.assert_allclose(
                ensemble_proba(
                    stack, member_axis=axis, score_type=score_type, average=average
                ),
                ensemble_proba(list(scores), score_type=score_type, average=average),
                rtol=1e-12,
            )


def test_member_axis_errors_name_the_axis():
    members = _five_members_200_samples()
    with pytest.raises(ValueError, match=r"has 1 member\(s\).*member_axis=1"):
        uncertainty_decomposition(members[:, :1], member_axis=1)
    with pytest.raises(InvalidParameterError, match="member_axis"):
        uncertainty_decomposition(members, member_axis=2)
    with pytest.raises(InvalidParameterError, match="member_axis"):
        ensemble_proba(members, member_axis=-1)
