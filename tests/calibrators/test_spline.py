"""SplineCalibrator: the basis, the penalised fit, the leave-one-out choice
of the penalty, and held-out quality against Platt and the splinecalib peer."""

import numpy as np
import pytest
from _data import load_shared
from scipy.interpolate import BSpline
from scipy.special import expit
from sklearn.metrics import log_loss

from skcalib import PlattCalibrator, SplineCalibrator
from skcalib.calibration._spline import (
    _penalised_terms,
    loo_log_loss,
    one_se_choice,
    penalty_coordinates,
    projected_newton,
)
from skcalib.calibration._spline_basis import (
    BandedDesign,
    SplineBasis,
    merge_close_knots,
)

#: numpy >= 2.0 names it trapezoid; 1.25 (the oldest supported) trapz
_trapezoid = getattr(np, "trapezoid", None) or np.trapz  # noqa: NPY201


def _bent(n=600, seed=0):
    """Log-odds whose true map is not a line: P(y=1|s) = sigmoid(s^3/4)."""
    rng = np.random.default_rng(seed)
    s = rng.normal(scale=2.0, size=n)
    y = (rng.random(n) < expit(s**3 / 4)).astype(int)
    return s, y


def test_design_and_roughness_match_a_slow_evaluation():
    knots = np.array([-3.0, -1.0, 0.5, 2.0, 4.0])
    basis = SplineBasis(knots)
    assert basis.n_basis == knots.size + 2
    x = np.array([-10.0, -3.0, -2.0, 0.0, 1.3, 4.0, 9.0])
    u = (x - knots[0]) / (knots[-1] - knots[0])
    out = basis.design(x)
    for j in range(basis.n_basis):  # one B-spline at a time, by hand
        c = np.zeros(basis.n_basis)
        c[j] = 1.0
        b = BSpline(basis.t, c, 3)
        inside = np.clip(u, 0, 1)
        want = b(inside) + (u - inside) * b.derivative()(inside)
        np.testing.assert_allclose(out[:, j], want, atol=1e-12)
    # the constant and the straight line are in the span, continued as such
    np.testing.assert_allclose(out.sum(axis=1), 1.0)
    # roughness: c^T Omega c against a fine trapezoid rule of f''^2
    rng = np.random.default_rng(1)
    c = rng.normal(size=basis.n_basis)
    grid = np.linspace(0, 1, 200_001)
    f2 = BSpline(basis.t, c, 3).derivative(2)(grid)
    np.testing.assert_allclose(
        c @ basis.roughness() @ c, _trapezoid(f2**2, grid), rtol=1e-6
    )


def test_huge_penalty_is_platt_scaling():
    s, y = _bent()
    spline = SplineCalibrator(penalty=1e8).fit(s, y)
    platt = PlattCalibrator().fit(s, y)
    np.testing.assert_allclose(
        spline.predict_proba(s), platt.predict_proba(s), atol=1e-8
    )


def test_loo_matches_exact_leave_one_out():
    s, y = _bent(n=300, seed=2)
    basis = SplineBasis(np.quantile(s, np.linspace(0, 1, 8)))
    band = BandedDesign(basis.design(s))
    n_pos = float(y.sum())
    t = np.where(y == 1, (n_pos + 1) / (n_pos + 2), 1 / (s.size - n_pos + 2))
    tr, pen, bounded = penalty_coordinates(basis.roughness(), False)
    xt = basis.design(s) @ tr
    for lam in (1e-1, 1e-3):
        lam_w = lam * s.size

        def fit(w, lam_w=lam_w):
            terms = lambda th: _penalised_terms(  # noqa: E731
                th, design=band, tr=tr, t=t, w=w, omega=pen, lam=lam_w
            )
            return projected_newton(
                terms, np.zeros(xt.shape[1]), bounded, max_iter=100, tol=1e-12
            )[0]

        theta = fit(np.ones(s.size))
        approx = loo_log_loss(band, tr, y, t, None, theta, pen, lam_w)
        z = np.empty(s.size)
        for i in range(s.size):  # the slow obvious leave-one-out
            w = np.ones(s.size)
            w[i] = 0.0
            z[i] = xt[i] @ fit(w)
        exact = log_loss(y, expit(z))
        assert approx == pytest.approx(exact, rel=5e-3)


def _dense_terms(theta, x, t, w, omega, lam):
    """The penalised loss, gradient and Hessian on a dense design ``x``."""
    z = x @ theta
    p = expit(z)
    loss = np.sum(w * (np.logaddexp(0.0, z) - t * z))
    grad = x.T @ (w * (p - t)) + lam * omega @ theta
    hess = (x * (w * p * (1 - p))[:, None]).T @ x + lam * omega
    return loss + 0.5 * lam * theta @ omega @ theta, grad, hess


def _dense_loo(x, y, t, w, theta, omega, lam, free):
    """Rad & Maleki's leave-one-out on a dense design, row by row."""
    z = x @ theta
    p = expit(z)
    xf, om = x[:, free], omega[np.ix_(free, free)]
    hinv = np.linalg.pinv((xf * (w * p * (1 - p))[:, None]).T @ xf + lam * om)
    a = np.array([row @ hinv @ row for row in xf])  # the slow obvious loop
    r = np.minimum(w, 1.0)
    z_loo = z + r * (p - t) * a / (1 - r * p * (1 - p) * a)
    q = expit(z_loo)
    return -np.sum(w * np.where(y, np.log(q), np.log1p(-q))) / w.sum()


@pytest.mark.parametrize("monotonic", [False, True])
def test_banded_terms_and_loo_equal_the_dense_computation(monotonic):
    rng = np.random.default_rng(7)
    s = np.r_[rng.normal(scale=2.0, size=500), -9.0, 11.0]  # rows beyond the ends
    y = rng.random(s.size) < expit(np.sin(s))
    w = rng.uniform(0.2, 3.0, s.size)
    t = np.where(y, 0.99, 0.01)
    basis = SplineBasis(np.quantile(s[:-2], np.linspace(0, 1, 9)))
    x = basis.design(s)
    band = BandedDesign(x)
    assert band.width == 4
    np.testing.assert_array_equal(band.dense(), x)
    tr, pen, bounded = penalty_coordinates(basis.roughness(), monotonic)
    theta = rng.normal(size=tr.shape[1])
    free = np.ones(theta.size, bool)
    if monotonic:  # some increments at their bound: inactive coordinates
        theta[[2, 5, 6]] = 0.0
        free[[2, 5, 6]] = False
    got = _penalised_terms(theta, design=band, tr=tr, t=t, w=w, omega=pen, lam=3.0)
    want = _dense_terms(theta, x @ tr, t, w, pen, 3.0)
    for g, e in zip(got, want, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-10 * np.max(np.abs(e)))
    loo = loo_log_loss(band, tr, y, t, w, theta, pen, 3.0, free=free)
    want = _dense_loo(x @ tr, y, t, w, theta, pen, 3.0, free)
    assert loo == pytest.approx(want, rel=1e-10)


def test_monotonic_constraint_holds_and_binds():
    rng = np.random.default_rng(3)
    s = rng.uniform(-4, 4, 3000)
    y = (rng.random(s.size) < expit(np.sin(2 * s))).astype(int)  # wiggly truth
    grid = np.linspace(-8, 8, 2001)
    free = SplineCalibrator(penalty=1e-6).fit(s, y).predict_proba(grid)[:, 1]
    mono = SplineCalibrator(penalty=1e-6, monotonic=True).fit(s, y)
    p = mono.predict_proba(grid)[:, 1]
    assert np.all(np.diff(p) >= -1e-12)
    assert np.any(np.diff(free) < -1e-3)  # without it the map is not monotone
    assert np.all(np.diff(mono.calibrators_[0]["coef"]) >= -1e-12)


@pytest.mark.parametrize("penalty", [1e-3, "auto"])
@pytest.mark.parametrize("monotonic", [False, True])
def test_weight_two_is_a_duplicated_row(penalty, monotonic):
    s, y = _bent(n=300, seed=4)
    w = np.ones(s.size)
    w[:50] = 2.0
    w[50:60] = 0.0
    keep = w > 0
    dup_s = np.r_[s[keep], s[:50]]
    dup_y = np.r_[y[keep], y[:50]]
    kw = {"penalty": penalty, "monotonic": monotonic, "tol": 1e-12}
    a = SplineCalibrator(**kw).fit(s, y, sample_weight=w)
    b = SplineCalibrator(**kw).fit(dup_s, dup_y)
    np.testing.assert_array_equal(a.penalty_, b.penalty_)
    grid = np.linspace(-8, 8, 101)
    np.testing.assert_allclose(a.predict_proba(grid), b.predict_proba(grid), atol=1e-7)


def test_few_distinct_and_constant_scores():
    rng = np.random.default_rng(5)
    s = rng.choice([-2.0, -1.0, 0.0, 1.0, 2.0], 400)
    y = (rng.random(400) < expit(s)).astype(int)
    cal = SplineCalibrator(n_knots=16).fit(s, y)
    assert cal.n_knots_.tolist() == [5]  # every distinct score is a knot
    np.testing.assert_array_equal(cal.knots_[0], [-2.0, -1.0, 0.0, 1.0, 2.0])
    # constant scores: the mean of Platt's targets t+ = 6/7, t- = 1/4
    y = np.array([0, 1, 1, 0, 1, 1, 1])
    cal = SplineCalibrator().fit(np.full(7, 0.3), y)
    assert cal.n_knots_.tolist() == [1]
    p = cal.predict_proba([0.1, 0.3, 0.9])[:, 1]
    np.testing.assert_allclose(p, (5 * 6 / 7 + 2 * 1 / 4) / 7)
    platt = PlattCalibrator().fit(np.full(7, 0.3), y)
    np.testing.assert_allclose(p[1], platt.predict_proba([0.3])[0, 1])


def test_extreme_logits_and_float32():
    s, y = _bent(n=400, seed=6)
    cal = SplineCalibrator().fit(s, y)
    p = cal.predict_proba(np.array([-1e4, -5.0, 0.0, 5.0, 1e4]))[:, 1]
    assert np.all(np.diff(p) > 0)  # straight-line continuation beyond the knots
    assert p[0] == pytest.approx(1e-12) and p[-1] == pytest.approx(1 - 1e-12)
    # two rows at +-1e4 among the calibration scores: finite; the penalty,
    # in units of the whole knot range, then smooths the bulk more (a
    # limitation the docstring states): its log-loss rises 0.02 here
    wide = SplineCalibrator().fit(np.r_[s, -1e4, 1e4], np.r_[y, 0, 1])
    q = wide.predict_proba(np.r_[s, -1e4, 1e4])
    assert np.all(np.isfinite(q))
    clean = log_loss(y, cal.predict_proba(s))
    assert clean < log_loss(y, q[:-2]) < clean + 0.03
    s, y = np.r_[s, -1e4, 1e4], np.r_[y, 0, 1]
    s32 = s[:-2].astype(np.float32)
    a = SplineCalibrator().fit(s32, y[:-2])
    b = SplineCalibrator().fit(s32.astype(np.float64), y[:-2])
    assert a.predict_proba(s32).dtype == np.float32
    np.testing.assert_allclose(a.predict_proba(s32), b.predict_proba(s32), atol=1e-6)
    with pytest.raises(ValueError, match="NaN"):
        SplineCalibrator().fit(np.r_[s[:-2], np.nan], np.r_[y[:-2], 1])


def test_one_class_and_bad_parameters():
    s, y = _bent(n=100, seed=7)
    with pytest.raises(ValueError):
        SplineCalibrator().fit(s, np.zeros_like(y))
    with pytest.raises(ValueError, match="n_knots"):
        SplineCalibrator(n_knots=1).fit(s, y)
    with pytest.raises(ValueError, match="penalty"):
        SplineCalibrator(penalty=0.0).fit(s, y)


#: splinecalib 0.0.13 (SplineCalib() defaults, binary on column 1), fitted on
#: calibset_mozilla4_1046_cb1 and scored on testset_mozilla4_1046_cb1 of
#: ../shared/data/splinecalib, in a separate virtual environment.
PEER_MOZILLA_NLL = 0.1371417094028763


def test_held_out_nll_against_peer_and_platt_on_mozilla():
    pc, yc = load_shared("splinecalib/calibset_mozilla4_1046_cb1.npz")
    pt, yt = load_shared("splinecalib/testset_mozilla4_1046_cb1.npz")
    q = SplineCalibrator().fit(pc[:, 1], yc).predict_proba(pt[:, 1])
    ours = log_loss(yt, q)
    platt = log_loss(yt, PlattCalibrator().fit(pc[:, 1], yc).predict_proba(pt[:, 1]))
    assert ours <= PEER_MOZILLA_NLL + 5e-4
    assert ours <= platt + 5e-4
    assert ours < log_loss(yt, np.clip(pt.astype(np.float64), 1e-12, 1))


@pytest.mark.parametrize("multi_class", ["ovr", "top_label"])
def test_cifar10_held_out_nll_better_than_uncalibrated(multi_class):
    probs, labels = load_shared("netcal/wideresnet-16-4-cifar-10.npz")
    idx = np.random.default_rng(0).permutation(labels.size)
    fit, test = idx[:5000], idx[5000:]
    cal = SplineCalibrator(multi_class=multi_class).fit(probs[fit], labels[fit])
    q = cal.predict_proba(probs[test])
    base = log_loss(labels[test], np.clip(probs[test].astype(np.float64), 1e-12, 1))
    assert log_loss(labels[test], q) < base - 0.02
    if multi_class == "top_label":  # the predicted class is kept
        np.testing.assert_array_equal(q.argmax(1), probs[test].argmax(1))


def test_nearly_tied_knots_are_merged():
    # median interval 1.0: gaps below 1e-3 are closed, the end knots stay
    knots = np.array([0.0, 1.0, 1.0 + 1e-8, 2.0, 3.0, 4.0 - 5e-4, 4.0])
    np.testing.assert_array_equal(merge_close_knots(knots), [0.0, 1.0, 2.0, 3.0, 4.0])
    wide = np.array([-1e4, -2.0, -1.0, 0.0, 1.0, 2.0, 1e4])  # median gap 1: kept
    np.testing.assert_array_equal(merge_close_knots(wide), wide)


@pytest.mark.filterwarnings("error")
def test_cifar10_probabilities_monotonic_matches_free_fit():
    # float64 probabilities floored at 1e-12 by the score handling: about a
    # tenth of each class's log-odds agree to 1e-8 near -27.63, which once
    # put two knots 1.4e-8 apart; the monotone fit then diverged (held-out
    # log-loss 1.598, RuntimeWarnings) and the free one lost its penalty
    # (0.2404). Measured after merging such knots: 0.23803 both.
    probs, labels = load_shared("netcal/wideresnet-16-4-cifar-10.npz")
    probs = probs.astype(np.float64)
    idx = np.random.default_rng(0).permutation(labels.size)
    fit, test = idx[:5000], idx[5000:]
    nll = {}
    for mono in (False, True):
        cal = SplineCalibrator(monotonic=mono, score_type="probability")
        cal.fit(probs[fit], labels[fit])
        q = cal.predict_proba(probs[test])
        q /= q.sum(axis=1, keepdims=True)
        nll[mono] = log_loss(labels[test], q)
        assert cal.n_knots_.min() >= 14
    clipped = np.clip(probs[test], 1e-12, 1)
    base = log_loss(labels[test], clipped / clipped.sum(axis=1, keepdims=True))
    assert nll[True] < base - 0.1  # uncalibrated: 0.357
    assert abs(nll[True] - nll[False]) < 1e-3
    assert nll[False] < 0.239


def test_huge_and_tiny_weight_totals_fit_without_overflow():
    # Weights are counts for the spline (Platt's targets), but its fit runs
    # in units where the largest weight is about 1: the targets computed
    # there equal (n + 1) / (n + 2) and 1 / (n + 2) computed directly, and
    # totals near the float64 range (rows at logits +-1e4) give no overflow.
    import warnings

    from skcalib.calibration._spline import _counts_and_targets

    rng = np.random.default_rng(0)
    pos = rng.uniform(size=50) < 0.4
    w = rng.uniform(0.5, 2.0, size=50) * 2.0**70
    w_fit, unit, t, total, _ = _counts_and_targets(pos, w)
    n_pos, n_neg = w[pos].sum(), w[~pos].sum()
    want = np.where(pos, (n_pos + 1) / (n_pos + 2), 1 / (n_neg + 2))
    np.testing.assert_allclose(t, want, rtol=1e-15)
    np.testing.assert_allclose(w_fit / unit, w, rtol=0)  # exact: powers of two
    assert total == pytest.approx(w.sum() * unit, rel=1e-15)
    z = np.r_[rng.normal(size=48), -1e4, 1e4]
    y = (rng.uniform(size=50) < expit(z)).astype(int)
    for scale in (1e300, 5e307 / 50, 1e-300, 5e-324):
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            cal = SplineCalibrator().fit(z, y, sample_weight=np.full(50, scale))
        assert np.isfinite(cal.predict_proba(z)).all()


def test_one_standard_error_rule_by_hand():
    # Three penalties, largest first; per-row left-out losses. The smallest
    # mean is the third; the second is within one standard error of the
    # row-wise differences with it, the first is not: the second is chosen.
    rows = np.array(
        [
            [0.9, 0.8, 1.0, 0.9],
            [0.52, 0.48, 0.61, 0.43],
            [0.5, 0.5, 0.5, 0.5],
        ]
    )
    means = rows.mean(axis=1)
    d = rows[1] - rows[2]
    se = d.std() / np.sqrt(4)  # population variance, n = 4 rows
    assert means[1] - means[2] <= se
    assert means[0] - means[2] > (rows[0] - rows[2]).std() / 2
    assert one_se_choice(means, list(rows), None, 4.0) == 1
    # weights are counts: weight 2 on every row is n = 8, a smaller error
    w = np.full(4, 2.0)
    assert one_se_choice(means, list(rows), w, 8.0) == 1
    assert one_se_choice(means, list(rows), w, 1e6) == 2  # SE ~ 0: the minimum


def test_forest_probabilities_need_small_penalties():
    # pycalib's KITTI Mondrian forest: probabilities with point masses at 0
    # and 1. The grid down to 1e-10 reaches the penalties these need (a grid
    # stopping at 1e-6 gave a held-out log-loss of 0.1514 on this split);
    # the unpenalised B-spline logistic regression on the same knots
    # (scikit-learn, a different solver) bounds what the spline can reach.
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split

    from skcalib.calibration._spline import weighted_knots

    p, y = load_shared("pycalib/kitti__mondrian_forest.npz")
    p = p.astype(np.float64) / p.astype(np.float64).sum(axis=1, keepdims=True)
    pc, pt, yc, yt = train_test_split(p, y, test_size=0.5, stratify=y, random_state=0)
    cal = SplineCalibrator(score_type="probability").fit(pc, yc)
    ours = log_loss(yt, cal.predict_proba(pt))
    assert cal.penalty_[0] <= 1e-8

    def logit(q):
        return np.log(np.clip(q[:, 1], 1e-12, 1)) - np.log(np.clip(q[:, 0], 1e-12, 1))

    basis = SplineBasis(weighted_knots(logit(pc), None, 16))
    lr = LogisticRegression(C=1e6, fit_intercept=False, max_iter=5000)
    lr.fit(basis.design(logit(pc)), yc)
    free = log_loss(yt, lr.predict_proba(basis.design(logit(pt))))
    assert ours < 0.135  # splinecalib's default: 0.1353 (2 seeds, the benchmark)
    assert ours < free + 0.005
