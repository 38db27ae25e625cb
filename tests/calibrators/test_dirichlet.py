"""Vector scaling, matrix scaling and Dirichlet calibration.

Against finite differences, a plainly written reference solver, temperature
scaling, each other, and real CIFAR-100 predictions.
"""

import tracemalloc
import warnings

import numpy as np
import pytest
from scipy.optimize import check_grad, minimize
from scipy.special import log_softmax, softmax
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.utils._param_validation import InvalidParameterError

from skcalib import (
    DirichletCalibrator,
    MatrixScalingCalibrator,
    TemperatureCalibrator,
    VectorScalingCalibrator,
)
from skcalib._core.solvers import linear as _linear_solver
from skcalib._core.solvers.linear import PenalisedNLL, fit_matrix, fit_vector
from skcalib.metrics import expected_calibration_error

CLASSES = [VectorScalingCalibrator, MatrixScalingCalibrator, DirichletCalibrator]
ALL = pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
#: Tight solver settings for comparisons.
TIGHT = {"tol": 1e-8, "max_iter": 5000}


def _data(n=600, k=3, seed=0, scale=2.5):
    """Logits, too sharp and biased towards class 0, and labels."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k))
    p = softmax(z, axis=1)
    y = (rng.uniform(size=(n, 1)) > p.cumsum(axis=1)).sum(axis=1).clip(max=k - 1)
    return scale * z + np.r_[1.0, np.zeros(k - 1)], y


def _penalty_matrix(k, penalty, lam, mu):
    c = np.empty((k, k + 1))
    if penalty == "odir":
        c[:, :k] = lam / (k * (k - 1))
        c[np.arange(k), np.arange(k)] = 0
    else:  # l2_identity and l2_zero: the same coefficients, other centres
        c[:, :k] = lam / k**2
    c[:, k] = mu / k
    return c


# ------------------------------------------------------------ the objective
@pytest.mark.parametrize(
    "diagonal, penalty",
    [(True, None), (False, "odir"), (False, "l2_identity"), (False, "l2_zero")],
)
def test_gradient_matches_finite_differences(diagonal, penalty):
    X, y = _data(200, 4, seed=1)
    k = 4
    rng = np.random.default_rng(2)
    w = rng.uniform(0.1, 2.0, y.size)
    if diagonal:
        C = np.vstack((np.full(k, 0.3 / k), np.full(k, 0.2 / k)))
    else:
        C = _penalty_matrix(k, penalty, 0.3, 0.2)
    centre = "zero" if penalty == "l2_zero" else "identity"
    problem = PenalisedNLL(X, y, w, C, diagonal=diagonal, centre=centre)
    shape = problem.theta0.shape
    theta = problem.theta0 + 0.3 * rng.normal(size=shape)

    def f(t):
        return problem.loss_grad(t.reshape(shape))[0]

    def g(t):
        return problem.loss_grad(t.reshape(shape))[1].ravel()

    grad = g(theta.ravel())
    err = check_grad(f, g, theta.ravel(), epsilon=1e-6)
    assert err <= 1e-5 * np.linalg.norm(grad)  # forward differences: O(eps)
    if diagonal:  # the exact Newton Hessian, column by column
        hess = problem.loss_grad(theta, hessian=True)[2]
        eps = 1e-6
        for j in range(2 * k):
            e = np.zeros(2 * k)
            e[j] = eps
            col = (g(theta.ravel() + e) - g(theta.ravel() - e)) / (2 * eps)
            np.testing.assert_allclose(hess[:, j], col, atol=1e-6)


def _reference_fit(X, y, w, kind, penalty="odir", lam=0.0, mu=0.0):
    """The objective written plainly, minimised by scipy's BFGS."""
    n, k = X.shape
    w = np.ones(n) if w is None else w
    onehot = np.eye(k)[y]
    eye = np.eye(k)
    centre = 0.0 if penalty == "l2_zero" else eye

    def unpack(t):
        if kind == "vector":
            return np.diag(t[:k]), t[k:]
        return t[: k * k].reshape(k, k), t[k * k :]

    def fun(t):
        W, b = unpack(t)
        logp = log_softmax(X @ W.T + b, axis=1)
        nll = -(w * (onehot * logp).sum(axis=1)).sum() / w.sum()
        if kind == "vector":
            pen = lam / k * ((np.diag(W) - 1) ** 2).sum()
        elif penalty == "odir":
            pen = lam / (k * (k - 1)) * ((W * (1 - eye)) ** 2).sum()
        else:
            pen = lam / k**2 * ((W - centre) ** 2).sum()
        pen += mu / k * (b**2).sum()
        R = (softmax(X @ W.T + b, axis=1) - onehot) * (w / w.sum())[:, None]
        gW, gb = R.T @ X, R.sum(axis=0)
        if kind == "vector":
            gW = np.diag(gW) + 2 * lam / k * (np.diag(W) - 1)
        elif penalty == "odir":
            gW = (gW + 2 * lam / (k * (k - 1)) * W * (1 - eye)).ravel()
        else:
            gW = (gW + 2 * lam / k**2 * (W - centre)).ravel()
        return nll + pen, np.concatenate([gW, gb + 2 * mu / k * b])

    start = (
        np.r_[np.ones(k), np.zeros(k)]
        if kind == "vector"
        else np.r_[eye.ravel(), np.zeros(k)]
    )
    res = minimize(fun, start, jac=True, method="BFGS", options={"gtol": 1e-11})
    W, b = unpack(res.x)
    return W, b, res.fun


@pytest.mark.parametrize(
    "cls, penalty, lam, mu",
    [
        (VectorScalingCalibrator, None, 0.0, 0.0),
        (VectorScalingCalibrator, None, 2.0, 0.5),
        (MatrixScalingCalibrator, "odir", 0.5, 0.1),
        (MatrixScalingCalibrator, "l2_identity", 1.0, 0.3),
        (MatrixScalingCalibrator, "l2_zero", 1.0, 0.3),
        (DirichletCalibrator, "odir", 0.2, 0.2),
        (DirichletCalibrator, "l2_identity", 3.0, 1.0),
        (DirichletCalibrator, "l2_zero", 0.05, 0.01),
    ],
)
def test_matches_plainly_written_reference_solver(cls, penalty, lam, mu):
    X, y = _data(500, 3, seed=3)
    w = np.random.default_rng(4).uniform(0.2, 3.0, y.size)
    params = {"reg_lambda": lam, "reg_mu": mu, **TIGHT}
    if penalty is not None:
        params["penalty"] = penalty
    cal = cls(**params).fit(X, y, sample_weight=w)
    feats = log_softmax(X, axis=1) if cls is DirichletCalibrator else X
    kind = "vector" if cls is VectorScalingCalibrator else "matrix"
    W, b, _ = _reference_fit(feats, y, w, kind, penalty, lam, mu)
    if mu == 0:  # the intercept is free up to a constant: compare centred
        b = b - b.mean()
    coef = np.diag(W) if kind == "vector" else W
    np.testing.assert_allclose(cal.coef_, coef, atol=2e-6)
    np.testing.assert_allclose(cal.intercept_, b, atol=2e-6)
    ref = softmax(feats @ W.T + b, axis=1)
    np.testing.assert_allclose(cal.predict_proba(X), ref, atol=1e-7)


def test_unregularised_matrix_scaling_is_fixed_to_one_representative():
    X, y = _data(800, 3, seed=5, scale=1.0)
    cal = MatrixScalingCalibrator(reg_lambda=0.0, reg_mu=0.0, **TIGHT).fit(X, y)
    W, b, fun = _reference_fit(X, y, None, "matrix")
    # the same probabilities; coef_ - I and intercept_ have zero column means
    np.testing.assert_allclose(
        cal.predict_proba(X), softmax(X @ W.T + b, axis=1), atol=1e-7
    )
    np.testing.assert_allclose((cal.coef_ - np.eye(3)).mean(axis=0), 0, atol=1e-12)
    assert abs(cal.intercept_.sum()) < 1e-12
    # with the ODIR penalty the columns are pinned: no such constraint
    odir = DirichletCalibrator(reg_lambda=1.0, reg_mu=1.0).fit(X, y)
    assert abs(odir.intercept_.sum()) < 1e-6  # the mu penalty centres b itself


# ------------------------------------------------------- relations between
def test_vector_scaling_recovers_a_temperature():
    # Scores that are calibrated logits times 3: the best vector scaling is
    # w = 1/3 for every class, b = 0, i.e. temperature scaling with T = 3.
    rng = np.random.default_rng(6)
    z = 1.5 * rng.normal(size=(20000, 4))
    y = (rng.uniform(size=(20000, 1)) > softmax(z, axis=1).cumsum(axis=1)).sum(axis=1)
    scores = 3.0 * z
    vs = VectorScalingCalibrator().fit(scores, y)
    ts = TemperatureCalibrator().fit(scores, y)
    np.testing.assert_allclose(vs.coef_, 1 / ts.temperature_, rtol=0.03)
    np.testing.assert_allclose(vs.intercept_, 0, atol=0.03)
    np.testing.assert_allclose(
        vs.predict_proba(scores), ts.predict_proba(scores), atol=0.02
    )
    # vector scaling nests temperature scaling: never a worse training NLL
    rows = np.arange(y.size)
    nll_vs = -np.log(vs.predict_proba(scores)[rows, y]).mean()
    nll_ts = -np.log(ts.predict_proba(scores)[rows, y]).mean()
    assert nll_vs <= nll_ts + 1e-12


def test_huge_off_diagonal_penalty_gives_vector_scaling():
    X, y = _data(600, 4, seed=7)
    vs = VectorScalingCalibrator(**TIGHT).fit(log_softmax(X, axis=1), y)
    dc = DirichletCalibrator(reg_lambda=1e7, reg_mu=0.0, **TIGHT).fit(X, y)
    assert np.abs(dc.coef_ - np.diag(np.diag(dc.coef_))).max() < 1e-6
    np.testing.assert_allclose(np.diag(dc.coef_), vs.coef_, atol=1e-5)
    np.testing.assert_allclose(dc.intercept_, vs.intercept_, atol=1e-5)


def test_huge_l2_penalty_gives_back_the_scores():
    X, y = _data(300, 3, seed=8)
    cal = MatrixScalingCalibrator(penalty="l2_identity", reg_lambda=1e9, reg_mu=1e9)
    cal.fit(X, y)
    np.testing.assert_allclose(cal.predict_proba(X), softmax(X, axis=1), atol=1e-6)
    vs = VectorScalingCalibrator(reg_lambda=1e9, reg_mu=1e9).fit(X, y)
    np.testing.assert_allclose(vs.predict_proba(X), softmax(X, axis=1), atol=1e-6)


def test_matrix_on_probabilities_equals_dirichlet_but_not_on_logits():
    X, y = _data(500, 3, seed=9)
    proba = softmax(X, axis=1)
    params = {"reg_lambda": 0.5, "reg_mu": 0.1, **TIGHT}
    ms = MatrixScalingCalibrator(**params).fit(proba, y)
    dc = DirichletCalibrator(**params).fit(proba, y)
    np.testing.assert_allclose(ms.coef_, dc.coef_, atol=1e-7)
    np.testing.assert_allclose(
        ms.predict_proba(proba), dc.predict_proba(proba), atol=1e-9
    )
    # Dirichlet calibration sees log-softmax: logits == their probabilities
    np.testing.assert_allclose(
        DirichletCalibrator(**params).fit(X, y).predict_proba(X),
        dc.predict_proba(proba),
        atol=1e-7,
    )
    # matrix scaling sees the logits as given (the row constant matters)
    shifted = X + np.random.default_rng(0).normal(scale=3.0, size=(500, 1))
    a = MatrixScalingCalibrator(**params).fit(shifted, y).predict_proba(shifted)
    assert np.abs(a - dc.predict_proba(proba)).max() > 1e-3


# -------------------------------------------------------------- real data
@pytest.mark.parametrize(
    "name, min_gain",
    [("densenet-bc-100-cifar-100", 0.3), ("wideresnet-16-4-cifar-100", 0.015)],
)
def test_cifar100_dirichlet_odir_lowers_test_nll(shared_loader, name, min_gain):
    probs, labels = shared_loader(f"netcal/{name}.npz")
    perm = np.random.default_rng(0).permutation(labels.size)
    fit, test = perm[:5000], perm[5000:]
    dc = DirichletCalibrator().fit(probs[fit], labels[fit])
    assert dc.score_type_ == "probability" and dc.coef_.shape == (100, 100)
    rows = np.arange(test.size)
    p_test = probs[test]
    before = -np.log(np.maximum(p_test[rows, labels[test]], 1e-12)).mean()
    q = dc.predict_proba(p_test)
    assert q.dtype == np.float32
    after = -np.log(q[rows, labels[test]].astype(np.float64)).mean()
    assert after < before - min_gain
    ece_before = expected_calibration_error(labels[test], p_test)
    assert expected_calibration_error(labels[test], q) < ece_before


# ----------------------------------------------------------- equivalences
@ALL
def test_weight_two_equals_duplicated_row_and_zero_equals_dropped(cls):
    X, y = _data(300, 3, seed=10)
    w = np.random.default_rng(1).integers(0, 3, y.size).astype(float)
    w[:2] = [1, 2]
    params = {"reg_lambda": 0.3, "reg_mu": 0.1, **TIGHT}
    weighted = cls(**params).fit(X, y, sample_weight=w)
    reps = w.astype(int)
    repeated = cls(**params).fit(np.repeat(X, reps, axis=0), np.repeat(y, reps))
    np.testing.assert_allclose(weighted.coef_, repeated.coef_, atol=1e-7)
    np.testing.assert_allclose(
        weighted.predict_proba(X), repeated.predict_proba(X), atol=1e-8
    )
    # scaling all weights changes nothing (the NLL is a weighted mean)
    scaled = cls(**params).fit(X, y, sample_weight=7.0 * w)
    np.testing.assert_allclose(weighted.coef_, scaled.coef_, atol=1e-7)


@ALL
def test_row_permutation_invariance(cls):
    X, y = _data(300, 3, seed=11)
    perm = np.random.default_rng(2).permutation(y.size)
    a = cls(**TIGHT).fit(X, y).predict_proba(X)
    b = cls(**TIGHT).fit(X[perm], y[perm]).predict_proba(X)
    np.testing.assert_allclose(a, b, atol=1e-8)


@ALL
def test_float32_input_gives_float32_output_close_to_float64(cls):
    X, y = _data(400, 4, seed=12)
    a = cls().fit(X, y)
    b = cls().fit(X.astype(np.float32), y)
    assert b.coef_.dtype == np.float64
    pa, pb = a.predict_proba(X), b.predict_proba(X.astype(np.float32))
    assert pa.dtype == np.float64 and pb.dtype == np.float32
    np.testing.assert_allclose(pa, pb, atol=1e-4)


@ALL
def test_binary_1d_equals_2d_scores(cls):
    rng = np.random.default_rng(13)
    y = rng.integers(0, 2, 500)
    s = 3.0 * (2 * y - 1) + rng.normal(scale=3.0, size=500) + 0.5
    params = {"reg_lambda": 0.1, "reg_mu": 0.0, **TIGHT}
    a = cls(**params).fit(s, y).predict_proba(s)
    # (n, 2) logits [0, s]: the features the base builds for a 1-D logit
    two = np.column_stack([np.zeros_like(s), s])
    np.testing.assert_allclose(
        a, cls(**params).fit(two, y).predict_proba(two), atol=1e-8
    )
    p = 1 / (1 + np.exp(-s))
    d = cls(**params).fit(p, y).predict_proba(p)
    pp = np.column_stack([1 - p, p])
    np.testing.assert_allclose(d, cls(**params).fit(pp, y).predict_proba(pp), atol=1e-8)
    if cls is DirichletCalibrator:  # vector, matrix: [0, s] != log([1 - p, p])
        np.testing.assert_allclose(a, d, atol=1e-6)
    if cls is DirichletCalibrator:  # log-softmax: (0, s) is the same as s
        zero_s = np.column_stack([np.zeros_like(s), s])
        np.testing.assert_allclose(
            a, cls(**params).fit(zero_s, y).predict_proba(zero_s), atol=1e-8
        )


def test_dirichlet_binary_is_beta_calibration_family():
    # For K = 2 the calibrated log-odds are a log p + c log(1 - p) + d.
    rng = np.random.default_rng(14)
    y = rng.integers(0, 2, 400)
    p = np.clip(rng.beta(2 + 3 * y, 5 - 3 * y), 1e-6, 1 - 1e-6)
    dc = DirichletCalibrator(reg_lambda=0.0, reg_mu=0.0, **TIGHT).fit(p, y)
    q = dc.predict_proba(p)[:, 1]
    design = np.column_stack([np.log(p), np.log1p(-p), np.ones_like(p)])
    coef = np.linalg.lstsq(design, np.log(q) - np.log1p(-q), rcond=None)[0]
    np.testing.assert_allclose(design @ coef, np.log(q) - np.log1p(-q), atol=1e-8)


# -------------------------------------------------- solver paths and memory
def test_block_size_and_preconditioner_paths_give_the_same_fit(monkeypatch):
    X, y = _data(500, 5, seed=15)
    w = np.random.default_rng(3).uniform(0.5, 2.0, y.size)
    params = {"reg_lambda": 0.5, "reg_mu": 0.2, **TIGHT}
    ref = DirichletCalibrator(**params).fit(X, y, sample_weight=w)
    ref_vs = VectorScalingCalibrator(**TIGHT).fit(X, y, sample_weight=w)
    monkeypatch.setattr(_linear_solver, "BLOCK_ENTRIES", 64)  # 12 rows a block
    monkeypatch.setattr(_linear_solver, "CURVATURE_ROWS", 100)  # every 5th row
    # Matrix: L-BFGS with the diagonal preconditioner only (instead of
    # Newton); vector: L-BFGS instead of Newton.
    monkeypatch.setattr(_linear_solver, "MAX_BLOCK_CLASSES", 2)
    monkeypatch.setattr(_linear_solver, "MAX_NEWTON_CLASSES", 2)
    other = DirichletCalibrator(**params).fit(X, y, sample_weight=w)
    other_vs = VectorScalingCalibrator(**TIGHT).fit(X, y, sample_weight=w)
    assert other_vs.n_iter_ > ref_vs.n_iter_  # really another solver
    assert other.n_iter_ > ref.n_iter_
    # gradient <= 1e-8 on curvature >= 2 * 0.5 / 20: coefficients to ~2e-7
    np.testing.assert_allclose(other.coef_, ref.coef_, atol=2e-6)
    np.testing.assert_allclose(other_vs.coef_, ref_vs.coef_, atol=1e-6)
    np.testing.assert_allclose(other_vs.intercept_, ref_vs.intercept_, atol=1e-6)


def test_vector_scaling_many_classes_memory_and_solution():
    # K = 300 > MAX_BLOCK_CLASSES: L-BFGS; the same optimum as Newton run
    # directly on the problem (whose dense Hessian is 600 x 600 here).
    X, y = _data(3000, 300, seed=21)
    vs = VectorScalingCalibrator(**TIGHT).fit(X, y)
    problem = _linear_solver.PenalisedNLL(
        X, y, None, np.zeros((2, 300)), diagonal=True, x_scale=1.0
    )
    theta, _, status, _ = _linear_solver._newton(
        problem, problem.theta0.copy(), max_iter=100, tol=1e-10
    )
    assert status == "converged"
    # Rare classes (10 samples each) have curvature ~1e-3: a gradient of
    # 1e-8 leaves ~1e-5 in their parameters; the objective agrees to 1e-10.
    np.testing.assert_allclose(vs.coef_, theta[0], atol=1e-4)
    a = X * theta[0] + theta[1]
    np.testing.assert_allclose(vs.predict_proba(X), softmax(a, axis=1), atol=1e-5)
    ours = np.vstack((vs.coef_, vs.intercept_))
    assert problem.loss_grad(ours)[0] - problem.loss_grad(theta)[0] < 1e-10


@ALL
def test_n_jobs_does_not_change_the_result(cls, monkeypatch):
    monkeypatch.setattr(_linear_solver, "BLOCK_ENTRIES", 256)  # 64 rows a block
    X, y = _data(700, 4, seed=21)
    one = cls(n_jobs=1).fit(X, y)
    two = cls(n_jobs=2).fit(X, y)
    np.testing.assert_array_equal(one.coef_, two.coef_)
    np.testing.assert_array_equal(one.intercept_, two.intercept_)


@pytest.mark.parametrize("diagonal", [True, False])
def test_float32_features_are_not_copied_whole_in_float64(diagonal, monkeypatch):
    monkeypatch.setattr(_linear_solver, "BLOCK_ENTRIES", 2**12)  # 1024 rows
    rng = np.random.default_rng(16)
    k = 4
    X = rng.normal(size=(200_000, k)).astype(np.float32)
    y = rng.integers(0, k, X.shape[0])
    C = np.zeros((2, k)) if diagonal else _penalty_matrix(k, "odir", 1.0, 1.0)
    tracemalloc.start()
    try:
        problem = PenalisedNLL(X, y, None, C, diagonal=diagonal)
        solver = fit_vector if diagonal else fit_matrix
        solver(problem, max_iter=2, tol=1e-12)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < X.nbytes / 2  # a float64 copy would take 2 * X.nbytes


# --------------------------------------------------------- robustness, API
@ALL
def test_extreme_logits_give_valid_probabilities(cls):
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 200)
    X = rng.choice([-1e4, 0.0, 1e4], size=(200, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        cal = cls().fit(X, y)
    p = cal.predict_proba(X)
    assert np.isfinite(p).all() and (p >= 0).all()
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    assert np.isfinite(cal.coef_).all() and np.isfinite(cal.intercept_).all()


@ALL
def test_constant_scores_give_the_class_frequencies(cls):
    y = np.array([0, 0, 1, 2] * 15)
    cal = cls(reg_lambda=0.0, reg_mu=0.0, score_type="logit", **TIGHT)
    cal.fit(np.zeros((60, 3)), y)
    p = cal.predict_proba(np.zeros((2, 3)))
    np.testing.assert_allclose(p, [[0.5, 0.25, 0.25]] * 2, atol=1e-6)


@ALL
def test_not_converged_warns_and_reports_n_iter(cls):
    X, y = _data(300, 4, seed=17)
    with pytest.warns(ConvergenceWarning, match="max_iter=1 "):
        cal = cls(max_iter=1, tol=1e-12).fit(X, y)
    assert cal.n_iter_ == 1
    fitted = cls().fit(X, y)
    assert isinstance(fitted.n_iter_, int) and 1 <= fitted.n_iter_ < fitted.max_iter


@ALL
def test_fitted_attributes_and_identity_start(cls):
    X, y = _data(300, 3, seed=18)
    cal = cls().fit(X, y)
    assert cal.coef_.shape == ((3,) if cls is VectorScalingCalibrator else (3, 3))
    assert cal.intercept_.shape == (3,)
    assert cal.score_type_ == "logit" and list(cal.classes_) == [0, 1, 2]
    # predict is the argmax of predict_proba; transform is predict_proba
    np.testing.assert_array_equal(cal.predict(X), cal.predict_proba(X).argmax(axis=1))
    np.testing.assert_array_equal(cal.transform(X), cal.predict_proba(X))


@ALL
def test_wrapper_mode_equals_raw_scores(cls):
    rng = np.random.default_rng(19)
    Xf = rng.normal(size=(900, 5))
    yf = (Xf[:, 0] + Xf[:, 1] > 0).astype(int) + (Xf[:, 2] > 0.5)
    clf = LogisticRegression().fit(Xf[:300], yf[:300])
    wrapped = cls(estimator=clf).fit(Xf[300:], yf[300:])
    raw = cls().fit(clf.decision_function(Xf[300:]), yf[300:])
    np.testing.assert_allclose(
        wrapped.predict_proba(Xf[300:]),
        raw.predict_proba(clf.decision_function(Xf[300:])),
    )


def test_grid_search_tunes_the_regularisation():
    X, y = _data(600, 4, seed=20)
    search = GridSearchCV(
        DirichletCalibrator(),
        {"reg_lambda": [1e-3, 1e2], "reg_mu": [1e-3, 1e2]},
        scoring="neg_log_loss",
        cv=3,
    ).fit(X, y)
    assert search.best_params_["reg_lambda"] in (1e-3, 1e2)
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()


# Bad X / y: tests/test_base.py::test_bad_input_errors runs on every calibrator.


@ALL
def test_bad_weights_and_predict_shape(cls):
    good = np.array([[0.2, 0.8], [0.5, 0.5], [0.9, 0.1]])
    y = np.array([0, 1, 0])
    with pytest.raises(ValueError, match="(?i)negative"):
        cls().fit(good, y, sample_weight=[1, -1, 1])
    with pytest.raises(ValueError, match="(?i)zero"):
        cls().fit(good, y, sample_weight=[0, 0, 0])
    with pytest.raises(ValueError, match="X has 3 features.* expecting 2"):
        cls().fit(good, y).predict_proba(np.ones((2, 3)) / 3)


@ALL
@pytest.mark.parametrize(
    "param, value",
    [("reg_lambda", -1.0), ("reg_mu", -0.1), ("max_iter", 0), ("tol", 0.0)],
)
def test_invalid_parameters(cls, param, value):
    with pytest.raises(InvalidParameterError, match=param):
        cls(**{param: value}).fit(np.array([0.2, 0.8]), [0, 1])


def test_invalid_penalty():
    with pytest.raises(InvalidParameterError, match="penalty"):
        DirichletCalibrator(penalty="l1").fit(np.array([0.2, 0.8]), [0, 1])
    assert "penalty" not in VectorScalingCalibrator().get_params()
