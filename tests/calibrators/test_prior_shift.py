"""Prior-shift adaptation (EM, BBSE, given priors) against hand references."""

import warnings

import numpy as np
import pytest
from _data import classification_split
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.utils.estimator_checks import parametrize_with_checks
from test_common import N_ITER_XFAILS, RANGE_XFAILS, RAW_SCORE_XFAILS

from skcalib import TemperatureCalibrator
from skcalib.calibration._prior_shift import PriorShiftAdapter


def _label_shift(n_source, target_priors, *, k=3, seed=0, sep=1.5):
    """Calibrated source probabilities (uniform source priors) of Gaussian
    classes ``N(sep * e_y, I)``, and target rows drawn with ``target_priors``
    from the same ``p(x | y)``: the exact posteriors are softmax(sep * x)."""
    rng = np.random.default_rng(seed)

    def draw(priors, n):
        y = rng.choice(k, size=n, p=priors)
        x = rng.normal(size=(n, k)) + sep * np.eye(k)[y]
        z = sep * x
        p = np.exp(z - z.max(axis=1, keepdims=True))
        return p / p.sum(axis=1, keepdims=True), y

    ps, ys = draw(np.full(k, 1 / k), n_source)
    pt, yt = draw(np.asarray(target_priors), 20000)
    return ps, ys, pt, yt


def _em_reference(p, source, n_iter):
    """Saerens et al.'s EM written out row by row, ``n_iter`` steps."""
    pi = list(source)
    for _ in range(n_iter):
        total = [0.0] * len(pi)
        for row in p:
            num = [pi[k] / source[k] * row[k] for k in range(len(pi))]
            s = sum(num)
            for k in range(len(pi)):
                total[k] += num[k] / s
        pi = [t / len(p) for t in total]
    return np.array(pi)


def test_em_matches_the_row_by_row_reference():
    rng = np.random.default_rng(0)
    ps = rng.dirichlet([1.0, 1.0, 1.0], size=12)
    ys = np.array([0, 1, 2] * 4)
    pt = rng.dirichlet([3.0, 1.0, 0.5], size=9)
    for n_iter in (1, 2, 7):
        est = PriorShiftAdapter(max_iter=n_iter, tol=1e-300)
        with pytest.warns(ConvergenceWarning, match="EM did not converge"):
            est.fit(ps, ys).fit_target(pt)
        ref = _em_reference(pt, [1 / 3] * 3, n_iter)
        np.testing.assert_allclose(est.target_priors_, ref, rtol=1e-13)
        assert est.n_iter_ == n_iter


def test_em_fixed_point_and_maximum_likelihood():
    ps, ys, pt, _ = _label_shift(3000, [0.6, 0.3, 0.1])
    est = PriorShiftAdapter(tol=1e-12, max_iter=100000).fit(ps, ys).fit_target(pt)
    # fixed point: the mean adapted probability is the estimated prior
    np.testing.assert_allclose(
        est.predict_proba(pt).mean(axis=0), est.target_priors_, atol=1e-10
    )

    # maximum of the target log-likelihood on the simplex: no small move
    # along the simplex raises it
    def loglik(pi):
        return np.log((pt * (pi / est.source_priors_)).sum(axis=1)).sum()

    best = loglik(est.target_priors_)
    for d in ([1, -1, 0], [0, 1, -1], [1, 0, -1]):
        for eps in (1e-4, -1e-4):
            assert loglik(est.target_priors_ + eps * np.array(d)) <= best + 1e-9


@pytest.mark.parametrize("method", ["em", "bbse", "bbse_soft"])
def test_recovers_known_priors_within_sampling_error(method):
    truth = np.array([0.6, 0.3, 0.1])
    ps, ys, pt, yt = _label_shift(20000, truth, seed=1)
    est = PriorShiftAdapter(method=method).fit(ps, ys).fit_target(pt)
    # the realised target frequencies; the estimators' error is sampling
    # noise of 20000 target and 20000 source rows (~3 / sqrt(n) per entry)
    realised = np.bincount(yt, minlength=3) / len(yt)
    np.testing.assert_allclose(est.target_priors_, realised, atol=0.02)
    np.testing.assert_allclose(est.target_priors_, truth, atol=0.025)


def test_bbse_solves_the_confusion_equation_exactly():
    ps, ys, pt, _ = _label_shift(5000, [0.5, 0.3, 0.2], seed=2)
    est = PriorShiftAdapter(method="bbse").fit(ps, ys).fit_target(pt)
    C = est.confusion_matrix_
    mu = np.bincount(pt.argmax(axis=1), minlength=3) / len(pt)
    assert est.n_clipped_ == 0
    np.testing.assert_allclose(C.T @ est.weights_, mu, atol=1e-12)
    # C is the joint confusion of the source: rows true, columns predicted
    ref = np.zeros((3, 3))
    np.add.at(ref, (ys, ps.argmax(axis=1)), 1 / len(ys))
    np.testing.assert_allclose(C, ref, atol=1e-15)


def test_bbse_clips_negative_priors():
    ps, ys, _, _ = _label_shift(3000, [1 / 3] * 3, seed=3)
    # target predictions all of class 0: C^-1 mu has negative entries
    pt = np.tile([0.9, 0.05, 0.05], (50, 1))
    est = PriorShiftAdapter(method="bbse").fit(ps, ys).fit_target(pt)
    assert est.n_clipped_ >= 1
    assert np.all(est.target_priors_ >= 0)
    assert est.target_priors_.sum() == pytest.approx(1.0, abs=1e-15)


def test_given_priors_are_the_closed_form_reweighting():
    rng = np.random.default_rng(4)
    p = rng.dirichlet([1, 2, 3], size=50)
    y = rng.choice(3, size=50, p=[0.5, 0.3, 0.2])
    target = np.array([0.1, 0.2, 0.7])
    est = PriorShiftAdapter(target_priors=target).fit(p, y)
    source = np.bincount(y, minlength=3) / 50
    ref = p * (target / source)
    ref /= ref.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(est.predict_proba(p), ref, rtol=1e-12)
    np.testing.assert_array_equal(est.predict(p), ref.argmax(axis=1))


def test_source_priors_give_the_identity():
    rng = np.random.default_rng(5)
    p = rng.dirichlet([1, 1, 1, 1], size=40)
    y = np.arange(40) % 4
    source = np.bincount(y) / 40
    for est in (PriorShiftAdapter(), PriorShiftAdapter(target_priors=source)):
        np.testing.assert_allclose(est.fit(p, y).transform(p), p, rtol=1e-12)


def test_sample_weight():
    rng = np.random.default_rng(6)
    p = rng.dirichlet([1, 1, 1], size=60)
    y = np.arange(60) % 3
    w = rng.integers(0, 3, 60).astype(float)
    pt = rng.dirichlet([2, 1, 1], size=30)
    wt = rng.integers(0, 3, 30).astype(float)
    for method in ("em", "bbse", "bbse_soft"):
        a = PriorShiftAdapter(method=method).fit(p, y, sample_weight=w)
        a.fit_target(pt, sample_weight=wt)
        rep, rept = (
            np.repeat(np.arange(60), w.astype(int)),
            np.repeat(np.arange(30), wt.astype(int)),
        )
        b = PriorShiftAdapter(method=method).fit(p[rep], y[rep]).fit_target(pt[rept])
        np.testing.assert_allclose(a.source_priors_, b.source_priors_, rtol=1e-12)
        np.testing.assert_allclose(a.target_priors_, b.target_priors_, atol=1e-10)


def test_pipeline_after_temperature_scaling_and_wrapper_mode():
    X_fit, y_fit, X_cal, y_cal = classification_split(n_classes=3, n_cal=900)
    clf = LogisticRegression().fit(X_fit, y_fit)
    logits = clf.decision_function(X_cal)
    pipe = make_pipeline(TemperatureCalibrator(), PriorShiftAdapter())
    pipe.fit(logits, y_cal)
    target_rows = logits[y_cal != 2]  # a shift: class 2 removed
    pipe[-1].fit_target(pipe[:-1].transform(target_rows))
    assert pipe[-1].target_priors_[2] < 0.1
    ts = TemperatureCalibrator().fit(logits, y_cal)
    by_hand = PriorShiftAdapter().fit(ts.predict_proba(logits), y_cal)
    by_hand.fit_target(ts.predict_proba(target_rows))
    np.testing.assert_allclose(
        pipe.predict_proba(logits), by_hand.predict_proba(ts.predict_proba(logits))
    )
    # wrapper mode: the calibrated model gives the probabilities from features
    cal = TemperatureCalibrator(estimator=clf).fit(X_cal, y_cal)
    wrap = PriorShiftAdapter(estimator=cal).fit(X_cal, y_cal)
    wrap.fit_target(X_cal[y_cal != 2])
    np.testing.assert_allclose(wrap.target_priors_, pipe[-1].target_priors_, atol=1e-8)


def test_logits_are_softmaxed():
    rng = np.random.default_rng(7)
    z = rng.normal(size=(30, 3)) * 3
    y = np.arange(30) % 3
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    a = PriorShiftAdapter(target_priors=[0.2, 0.3, 0.5]).fit(z, y)
    b = PriorShiftAdapter(target_priors=[0.2, 0.3, 0.5]).fit(p, y)
    np.testing.assert_allclose(a.predict_proba(z), b.predict_proba(p), rtol=1e-10)


@pytest.mark.parametrize(
    ("priors", "match"),
    [
        ([0.5, 0.5], r"one entry per class \(3"),
        ([0.5, 0.6, -0.1], r"non-negative; the prior of class 2 is -0.1"),
        ([0.2, 0.2, 0.2], r"sum to 1 .*sums to 0.6"),
        ([0.5, np.nan, 0.5], "finite"),
        ([[0.2, 0.3, 0.5]], "one entry per class"),
    ],
)
def test_bad_priors(priors, match):
    p = np.tile([0.2, 0.3, 0.5], (6, 1))
    with pytest.raises(ValueError, match=match):
        PriorShiftAdapter(target_priors=priors).fit(p, [0, 1, 2] * 2)


def test_bad_target_data():
    p = np.tile([0.2, 0.3, 0.5], (6, 1))
    est = PriorShiftAdapter().fit(p, [0, 1, 2] * 2)
    with pytest.raises(ValueError, match="2 features, but .* expecting 3"):
        est.fit_target(p[:, :2])
    with pytest.raises(ValueError, match="sum"):
        est.fit_target(np.tile([0.2, 0.3, 0.3], (4, 1)))
    with pytest.raises(ValueError, match="target_priors"):
        PriorShiftAdapter(target_priors=[0.2, 0.3, 0.5]).fit(
            p, [0, 1, 2] * 2
        ).fit_target(p)
    with pytest.raises(ValueError, match="zero total weight"):
        PriorShiftAdapter().fit(p, [0, 1, 2] * 2, sample_weight=[1, 1, 0, 1, 1, 0])
    # scikit-learn >= 1.7 refuses all-zero weights itself, older ones reach ours
    with pytest.raises(ValueError, match="non-zero|All sample weights are zero"):
        est.fit_target(p, sample_weight=np.zeros(6))


def test_unfitted_fit_target_raises():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        PriorShiftAdapter().fit_target(np.tile([0.2, 0.8], (3, 1)))


def _expected_failed_checks(estimator):
    return {**RAW_SCORE_XFAILS, **RANGE_XFAILS, **N_ITER_XFAILS}


@parametrize_with_checks(
    [PriorShiftAdapter(), PriorShiftAdapter(method="bbse")],
    expected_failed_checks=_expected_failed_checks,
)
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        check(estimator)


def test_bbse_soft_solves_the_soft_confusion_equation():
    ps, ys, pt, _ = _label_shift(5000, [0.5, 0.3, 0.2], seed=8)
    est = PriorShiftAdapter(method="bbse_soft").fit(ps, ys).fit_target(pt)
    ref = np.zeros((3, 3))
    for i in range(3):
        ref[i] = ps[ys == i].sum(axis=0) / len(ys)  # P(y = i, soft yhat = j)
    np.testing.assert_allclose(est.confusion_matrix_, ref, atol=1e-14)
    np.testing.assert_allclose(ref.T @ est.weights_, pt.mean(axis=0), atol=1e-12)


def test_binary_1d_scores():
    rng = np.random.default_rng(9)
    p1 = rng.uniform(0.05, 0.95, 40)
    y = np.arange(40) % 2
    a = PriorShiftAdapter(target_priors=[0.25, 0.75]).fit(p1, y)
    b = PriorShiftAdapter(target_priors=[0.25, 0.75]).fit(
        np.column_stack((1 - p1, p1)), y
    )
    np.testing.assert_allclose(
        a.predict_proba(p1), b.predict_proba(np.column_stack((1 - p1, p1)))
    )
    odds = p1 / (1 - p1) * 3.0  # w_1 / w_0 = (0.75 / 0.5) / (0.25 / 0.5)
    np.testing.assert_allclose(a.predict_proba(p1)[:, 1], odds / (1 + odds), rtol=1e-10)
