"""Selective prediction: risk-coverage curve, AURC, E-AURC, selective risk
at a coverage, AUROC of correctness, and the AURC scorer."""

import numpy as np
import pytest
from scipy.integrate import quad
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score

from skcalib.metrics import (
    aurc,
    aurc_scorer,
    brier_score,
    correctness_auroc,
    excess_aurc,
    get_scorer,
    get_scorer_names,
    negative_log_likelihood,
    risk_coverage_curve,
    selective_risk_at_coverage,
)

LOSSES = ("error", "brier", "log_loss")
CONFIDENCES = ("max_proba", "margin", "negative_entropy")


def _multiclass(n=300, k=4, seed=0, decimals=None):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(k) * 0.7, size=n)
    y = rng.random(n)[:, None] > np.cumsum(p**0.7 / (p**0.7).sum(1, keepdims=1), 1)
    y = np.minimum(y.sum(axis=1), k - 1)
    if decimals is not None:  # many ties in the confidence
        p = np.round(p, decimals)
        p[:, -1] = 1 - p[:, :-1].sum(axis=1)
        p = np.clip(p, 0, 1)
        p /= p.sum(axis=1, keepdims=True)
    return y, p


def _reference_curve(conf, loss, w):
    """One threshold at a time, with masks."""
    thresholds = np.unique(conf)[::-1]
    cov, risk = [], []
    for t in thresholds:
        m = conf >= t
        cov.append(w[m].sum() / w.sum())
        risk.append((w[m] * loss[m]).sum() / w[m].sum())
    return np.array(cov), np.array(risk), thresholds


def _reference_area(cov, risk):
    """Numerical integral of r(c) = L(c) / c, L linear between the points."""
    xs, ls = np.append(0.0, cov), np.append(0.0, cov * risk)
    total = risk[0] * cov[0]
    for j in range(1, cov.size):
        total += quad(
            lambda c: np.interp(c, xs, ls) / c,
            cov[j - 1],
            cov[j],
            epsabs=1e-14,
            epsrel=1e-13,
        )[0]
    return total


# ----------------------------------------------------------------- by hand
def test_curve_and_area_by_hand_on_five_samples():
    y = [0, 1, 1, 0, 1]
    p = [0.2, 0.9, 0.6, 0.6, 0.3]  # conf 0.8 0.9 0.6 0.6 0.7; losses 0 0 0 1 1
    coverage, risk, thresholds = risk_coverage_curve(y, p)
    np.testing.assert_allclose(thresholds, [0.9, 0.8, 0.7, 0.6])
    np.testing.assert_allclose(coverage, [0.2, 0.4, 0.6, 1.0])
    np.testing.assert_allclose(risk, [0, 0, 1 / 3, 2 / 5])
    # pieces [0, .4]: 0; [.4, .6]: .2 - .4 log 1.5; [.6, 1]: .2 - .1 log(5/3)
    expected = 0.4 - 0.4 * np.log(1.5) - 0.1 * np.log(5 / 3)
    assert aurc(y, p) == pytest.approx(expected, abs=1e-15)
    assert selective_risk_at_coverage(y, p, coverage=0.6) == pytest.approx(1 / 3)
    assert selective_risk_at_coverage(y, p, coverage=0.4) == 0.0
    # half of the tied pair at 0.6 accepted: (0.2 + 0.5 * 0.2) / 0.8
    assert selective_risk_at_coverage(y, p, coverage=0.8) == pytest.approx(0.375)
    # best ranking: 3 correct then 2 errors, r + (1 - r) log(1 - r), r = 0.4
    best = 0.4 + 0.6 * np.log(0.6)
    assert excess_aurc(y, p) == pytest.approx(expected - best, abs=1e-15)


# --------------------------------------------------------- slow reference
@pytest.mark.parametrize("decimals", [None, 1, 2])
@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("weighted", [False, True])
def test_matches_slow_reference(decimals, loss, weighted):
    y, p = _multiclass(n=120, seed=3, decimals=decimals)
    rng = np.random.default_rng(7)
    w = rng.uniform(0.1, 3, y.size) if weighted else np.ones(y.size)
    conf = p.max(axis=1)
    per_sample = {
        "error": (p.argmax(axis=1) != y).astype(float),
        "brier": ((p - np.eye(4)[y]) ** 2).sum(axis=1),
        "log_loss": -np.log(np.maximum(p[np.arange(y.size), y], 2.0**-52)),
    }[loss]
    sw = w if weighted else None
    curve = risk_coverage_curve(y, p, loss=loss, sample_weight=sw)
    ref = _reference_curve(conf, per_sample, w)
    for got, want in zip(curve, ref, strict=True):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    area = aurc(y, p, loss=loss, sample_weight=sw)
    assert area == pytest.approx(_reference_area(*ref[:2]), abs=1e-12)
    # the AURC is the integral of the selective risk over the coverage
    integral = quad(
        lambda c: selective_risk_at_coverage(
            y, p, coverage=c, loss=loss, sample_weight=sw
        ),
        0,
        1,
        points=ref[0],
        limit=400,
    )[0]
    assert area == pytest.approx(integral, abs=1e-8)


# --------------------------------------------------------------- ties
def test_ties_enter_together_and_rows_can_be_permuted():
    y, p = _multiclass(n=400, seed=1, decimals=1)
    conf = p.max(axis=1)
    curve = risk_coverage_curve(y, p)
    assert curve.thresholds.size == np.unique(conf).size < y.size
    perm = np.random.default_rng(0).permutation(y.size)
    w = np.random.default_rng(1).uniform(0, 2, y.size)
    for func in (aurc, excess_aurc, selective_risk_at_coverage):
        assert func(y[perm], p[perm]) == pytest.approx(func(y, p), abs=1e-15)
        assert func(y[perm], p[perm], sample_weight=w[perm]) == pytest.approx(
            func(y, p, sample_weight=w), abs=1e-15
        )
    permuted = risk_coverage_curve(y[perm], p[perm])
    for got, want in zip(permuted, curve, strict=True):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-15)


# ------------------------------------------------------------- weights
@pytest.mark.parametrize("loss", LOSSES)
def test_integer_weights_equal_repeated_rows(loss):
    y, p = _multiclass(n=150, seed=2)
    reps = np.random.default_rng(3).integers(0, 4, y.size)
    yr, pr = np.repeat(y, reps), np.repeat(p, reps, axis=0)
    for func in (aurc, excess_aurc, selective_risk_at_coverage):
        assert func(y, p, loss=loss, sample_weight=reps) == pytest.approx(
            func(yr, pr, loss=loss), abs=1e-12
        )
    got = risk_coverage_curve(y, p, loss=loss, sample_weight=reps)
    want = risk_coverage_curve(yr, pr, loss=loss)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)
    assert correctness_auroc(y, p, sample_weight=reps) == pytest.approx(
        correctness_auroc(yr, pr), abs=1e-12
    )


def test_weights_are_relative():
    y, p = _multiclass(n=200, seed=4)
    w = np.random.default_rng(0).uniform(0.5, 2, y.size)
    assert aurc(y, p, sample_weight=w * 1e-200) == pytest.approx(
        aurc(y, p, sample_weight=w), abs=1e-14
    )
    assert aurc(y, p, sample_weight=np.full(y.size, 7.0)) == aurc(y, p)


# ---------------------------------------------------------------- E-AURC
@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("confidence", CONFIDENCES)
def test_excess_aurc_is_non_negative(seed, loss, confidence):
    y, p = _multiclass(n=200, seed=seed, decimals=1 if seed % 2 else None)
    w = np.random.default_rng(seed).uniform(0, 2, y.size) if seed > 2 else None
    e = excess_aurc(y, p, loss=loss, confidence=confidence, sample_weight=w)
    assert e >= -1e-15
    random = np.random.default_rng(seed).random(y.size)
    assert excess_aurc(y, p, loss=loss, confidence=random) > 0


def test_excess_aurc_is_zero_for_a_perfect_ranking():
    y, p = _multiclass(n=300, seed=5)
    wrong = (p.argmax(axis=1) != y).astype(float)
    rng = np.random.default_rng(0)
    # ties among the errors (and among the correct ones) do not matter
    assert excess_aurc(y, p, confidence=-wrong) == pytest.approx(0, abs=1e-15)
    assert excess_aurc(y, p, confidence=rng.random(y.size) - 2 * wrong) == (
        pytest.approx(0, abs=1e-15)
    )
    nll = -np.log(p[np.arange(y.size), y])
    assert excess_aurc(y, p, loss="log_loss", confidence=-nll) == pytest.approx(
        0, abs=1e-15
    )
    # the best AURC of the 0/1 error: Geifman et al.'s closed form
    r = wrong.mean()
    best = aurc(y, p, confidence=-wrong)
    assert best == pytest.approx(r + (1 - r) * np.log(1 - r), abs=1e-15)
    assert aurc(y, p) - excess_aurc(y, p) == pytest.approx(best, abs=1e-15)


# --------------------------------------------------------------- MAPIE
def test_mapie_auarc_is_one_minus_the_right_riemann_sum():
    """MAPIE 1.6's ``auarc(correct, conf)`` is ``mean_k accuracy(top k)``
    of the rows sorted one by one (ties in row order): with distinct
    confidences, ``1 - risk.mean()`` of our curve, exactly, and within
    ``log(n) / n`` of our AURC (the exact integral)."""
    uncertainty = pytest.importorskip("mapie.metrics.uncertainty")
    y, p = _multiclass(n=500, seed=6)
    conf = p.max(axis=1)
    assert np.unique(conf).size == y.size
    correct = (p.argmax(axis=1) == y).astype(int)
    theirs = uncertainty.auarc(correct, conf)
    curve = risk_coverage_curve(y, p)
    assert theirs == pytest.approx(1 - curve.risk.mean(), abs=1e-12)
    gap = abs((1 - theirs) - aurc(y, p))
    assert 0 < gap <= np.log(y.size) / y.size
    # with ties MAPIE depends on the row order, ours does not
    yt, pt = _multiclass(n=500, seed=6, decimals=1)
    ct = (pt.argmax(axis=1) == yt).astype(int)
    order = np.argsort(ct, kind="stable")  # wrong rows first among ties
    flipped = order[::-1]
    conf_t = pt.max(axis=1)
    a = uncertainty.auarc(ct[order], conf_t[order])
    b = uncertainty.auarc(ct[flipped], conf_t[flipped])
    assert a != pytest.approx(b, abs=1e-6)
    assert aurc(yt[order], pt[order]) == pytest.approx(
        aurc(yt[flipped], pt[flipped]), abs=1e-15
    )


# ----------------------------------------------------- correctness AUROC
def test_correctness_auroc_matches_roc_auc_score_and_pair_count():
    y, p = _multiclass(n=200, seed=8, decimals=1)
    w = np.random.default_rng(2).uniform(0, 2, y.size)
    correct = p.argmax(axis=1) == y
    for confidence in CONFIDENCES:
        got = correctness_auroc(y, p, confidence=confidence, sample_weight=w)
        conf = {
            "max_proba": p.max(axis=1),
            "margin": np.sort(p, axis=1)[:, -1] - np.sort(p, axis=1)[:, -2],
            "negative_entropy": (p * np.log(np.where(p > 0, p, 1))).sum(axis=1),
        }[confidence]
        assert got == pytest.approx(roc_auc_score(correct, conf, sample_weight=w))
    conf = p.max(axis=1)
    pos, neg = conf[correct], conf[~correct]
    wins = (pos[:, None] > neg[None, :]) + 0.5 * (pos[:, None] == neg[None, :])
    assert correctness_auroc(y, p) == pytest.approx(wins.mean(), abs=1e-12)


def test_correctness_auroc_needs_both_outcomes():
    with pytest.raises(ValueError, match="all 3 .* are correct"):
        correctness_auroc([0, 1, 1], [0.2, 0.8, 0.9])


# ---------------------------------------------------------- options
def test_binary_1d_equals_2d_and_confidences():
    rng = np.random.default_rng(0)
    p = rng.random(300)
    y = (rng.random(300) < p).astype(int)
    p2 = np.column_stack([1 - p, p])
    for confidence in CONFIDENCES:
        for loss in LOSSES:
            kw = dict(confidence=confidence, loss=loss)
            assert aurc(y, p, **kw) == pytest.approx(aurc(y, p2, **kw), abs=1e-14)
    # the margin of two classes is |2p - 1|: the same ranking as max_proba
    assert aurc(y, p, confidence="margin") == pytest.approx(aurc(y, p), abs=1e-14)
    assert aurc(y, p, confidence=np.abs(2 * p - 1)) == pytest.approx(aurc(y, p))


def test_losses_at_full_coverage_are_the_metrics():
    y, p = _multiclass(n=200, seed=9)
    w = np.random.default_rng(0).uniform(0, 2, y.size)
    at1 = {
        loss: selective_risk_at_coverage(y, p, coverage=1.0, loss=loss, sample_weight=w)
        for loss in LOSSES
    }
    assert at1["brier"] == pytest.approx(brier_score(y, p, sample_weight=w))
    assert at1["log_loss"] == pytest.approx(
        negative_log_likelihood(y, p, sample_weight=w)
    )
    err = np.average(p.argmax(axis=1) != y, weights=w)
    assert at1["error"] == pytest.approx(err)
    yb, pb = (y == 1).astype(int), p[:, 1] / p[:, :2].sum(axis=1)
    assert selective_risk_at_coverage(
        yb, pb, coverage=1, loss="brier"
    ) == pytest.approx(brier_score(yb, pb))


def test_callable_loss_gets_labels_and_proba():
    y = np.array(["a", "b", "b", "c", "a"])
    p = np.array(
        [
            [0.7, 0.2, 0.1],
            [0.1, 0.8, 0.1],
            [0.5, 0.4, 0.1],
            [0.2, 0.2, 0.6],
            [0.3, 0.3, 0.4],
        ]
    )
    seen = {}

    def absolute(y_true, y_proba):
        seen["y"], seen["p"] = y_true, y_proba
        onehot = y_true[:, None] == np.array(["a", "b", "c"])
        return np.abs(y_proba - onehot).sum(axis=1)

    curve = risk_coverage_curve(y, p, loss=absolute)
    np.testing.assert_array_equal(seen["y"], y)
    np.testing.assert_array_equal(seen["p"], p)
    # the 0/1 error is a callable like any other
    error = risk_coverage_curve(
        y, p, loss=lambda t, q: np.array(["a", "b", "c"])[q.argmax(1)] != t
    )
    np.testing.assert_allclose(error.risk, risk_coverage_curve(y, p).risk)
    assert curve.risk[-1] == pytest.approx(np.mean(absolute(y, p)))


def test_zero_weight_drops_the_row():
    y, p = _multiclass(n=100, seed=10)
    w = np.ones(y.size)
    w[::3] = 0
    keep = w > 0
    for func in (aurc, excess_aurc, correctness_auroc):
        assert func(y, p, sample_weight=w) == pytest.approx(
            func(y[keep], p[keep]), abs=1e-14
        )


# ----------------------------------------------------------- scorer
def test_aurc_scorer():
    y, p = _multiclass(n=300, seed=11)
    X = np.log(p)
    clf = LogisticRegression(max_iter=500).fit(X, y)
    assert "neg_aurc" in get_scorer_names()
    scorer = get_scorer("neg_aurc")
    assert repr(scorer) == repr(aurc_scorer)
    value = scorer(clf, X[:40], y[:40])
    ref = aurc(y[:40], clf.predict_proba(X[:40]), labels=clf.classes_)
    assert value == pytest.approx(-ref)
    w = np.arange(40.0)
    assert aurc_scorer(clf, X[:40], y[:40], sample_weight=w) == pytest.approx(
        -aurc(y[:40], clf.predict_proba(X[:40]), sample_weight=w)
    )


# ------------------------------------------------------------ errors
@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(y_proba=[[0.5, 0.5], [np.nan, 0.5]]), "NaN; row 1"),
        (dict(y_proba=[[0.5, 0.5], [0.7, 0.5]]), "sum"),
        (dict(confidence=[0.1, np.inf]), r"confidence must be finite; value 1 is inf"),
        (dict(confidence=[0.1, 0.2, 0.3]), r"confidence must have shape \(2,\)"),
        (dict(confidence=[[0.1, 0.2]]), r"confidence must have shape \(2,\)"),
        (dict(confidence="entropy"), "confidence"),
        (dict(loss="hinge"), "loss"),
        (dict(loss=lambda t, p: np.zeros(3)), r"loss= must have shape \(2,\)"),
        (dict(loss=lambda t, p: [0.0, np.nan]), "loss= must be finite; value 1 is nan"),
        (dict(y_true=[0, 0]), "labels="),
        (dict(y_true=[], y_proba=np.empty((0, 2))), "0 sample"),
        (dict(sample_weight=[0.0, 0.0]), "sums to 0"),
        (dict(sample_weight=[1.0, -1.0]), "sample_weight"),
    ],
)
def test_errors_name_the_value(kwargs, match):
    args = dict(y_true=[0, 1], y_proba=[[0.4, 0.6], [0.7, 0.3]])
    args.update(kwargs)
    for func in (risk_coverage_curve, aurc, excess_aurc, selective_risk_at_coverage):
        with pytest.raises(ValueError, match=match):
            func(**args)


@pytest.mark.parametrize("coverage", [0.0, 1.5, -0.1])
def test_coverage_must_be_in_0_1(coverage):
    with pytest.raises(ValueError, match="coverage"):
        selective_risk_at_coverage([0, 1], [0.2, 0.9], coverage=coverage)
