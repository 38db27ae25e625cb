"""Smooth ECE (Błasiok & Nakkiran 2023) and the smoothed reliability curve.

Reference values: with ``boundary="relplot"``, ``relplot.smECE`` /
``relplot.smECE_sigma`` and ``relplot.kernels.ReflectedGaussianKernel``
(relplot 0.1, the authors' package; imported when installed) on the real
predictions of ``../shared/data``, and, independent of relplot, a slow
dense-matrix evaluation of relplot's discretised formula
(``_slow_relplot_ece``), which also covers sample weights (relplot has
none); with the default ``boundary="reflect"``, the integrals of the
paper's reflected kernel by quadrature on a fine mesh (``_exact_ece``).
"""

import numpy as np
import pytest
from _data import load_shared
from scipy.integrate import trapezoid as _trapezoid
from sklearn.linear_model import LogisticRegression

from skcalib.metrics import (
    get_scorer,
    smooth_calibration_error,
    smooth_ece_scorer,
    smooth_reliability_curve,
)

BINARY_SETS = [
    "splinecalib/testset_airlines_42493_cb1.npz",
    "pycalib/kitti__random_forest.npz",
    "splinecalib/testset_mozilla4_1046_rf.npz",
]
MULTICLASS_SETS = [
    "netcal/wideresnet-16-4-cifar-10.npz",
    "verified_calibration/cifar10_vgg16.npz",
    "pycalib/mnist__AdaBoost.npz",
]


# --------------------------------------------------------------- references
def _slow_relplot_ece(f, y, sigma, w=None):
    """The discretised smooth ECE at ``sigma``, as dense matrices:
    ``O(n m + m^2)`` (spread matrix ``S``, reflected kernel matrix ``C``,
    reading matrix ``T``), with relplot's density regulariser 1e-4 per unit
    of mean weight."""
    f = np.asarray(f, dtype=float)
    w = np.ones_like(f) if w is None else np.asarray(w, float) / np.mean(w)
    m = max(2000, round(20 / sigma)) // 2 + 1
    h = 1 / (m - 1)
    node = np.clip(np.floor(f * (m - 1)).astype(int), 0, m - 2)
    frac = f * (m - 1) - node
    S = np.zeros((f.size, m))
    S[np.arange(f.size), node] += 1 - frac
    S[np.arange(f.size), node + 1] += frac
    # Node g receives from node g + m//2 - k with the Gaussian weight of
    # offset (k - (m - 1) / 2) h, node indices reflected about 0 and m - 1.
    C = np.zeros((m, m))
    g = np.arange(m)
    for k in range(m):
        src = g + m // 2 - k
        src = np.where(src < 0, -src, src)
        src = np.where(src > m - 1, 2 * (m - 1) - src, src)
        off = (k - (m - 1) / 2) * h
        weight = np.exp(-off * off / (2 * sigma**2)) / (np.sqrt(2 * np.pi) * sigma)
        np.add.at(C, (g, src), weight)
    t = np.linspace(0, 1, max(round(10 / sigma), 200))
    T = np.array([np.interp(t, np.linspace(0, 1, m), e) for e in np.eye(m)]).T
    dens = T @ C @ (S.T @ w)
    resid = T @ C @ (S.T @ (w * (f - y)))
    return np.abs(resid).sum() / (dens + 1e-4).sum()


def _exact_ece(f, a, sigma, w=None):
    """smECE_sigma of the reflected kernel phi(t - f) + phi(t + f) +
    phi(t - 2 + f), integrals by the trapezoidal rule with steps of at most
    sigma / 100."""
    f = np.asarray(f, dtype=float)
    w = np.ones_like(f) if w is None else np.asarray(w, dtype=float)
    u, inv = np.unique(f, return_inverse=True)
    mass = np.bincount(inv, weights=w)
    resid = np.bincount(inv, weights=w * (f - a))
    t = np.linspace(0, 1, max(4001, round(100 / sigma) + 1))

    def phi(d):
        return np.exp(-d * d / (2 * sigma**2)) / (np.sqrt(2 * np.pi) * sigma)

    dens, res = np.empty_like(t), np.empty_like(t)
    for start in range(0, t.size, 500):
        tb = t[start : start + 500, None]
        K = phi(tb - u) + phi(tb + u) + phi(tb - 2 + u)
        dens[start : start + 500], res[start : start + 500] = K @ mass, K @ resid
    return _trapezoid(np.abs(res), t) / _trapezoid(dens, t)


def _relplot():
    return pytest.importorskip("relplot")


def _binary(name):
    P, y = load_shared(name)
    return P[:, 1].astype(np.float64), y


def _confidence(P, y):
    return P.max(axis=1).astype(np.float64), (P.argmax(axis=1) == y).astype(float)


# ------------------------------------------------------------ relplot parity
@pytest.mark.parametrize("name", BINARY_SETS)
def test_binary_equals_relplot_smece(name):
    relplot = _relplot()
    p, y = _binary(name)
    expected = relplot.smECE(p, y.astype(float))
    P = np.column_stack([1 - p, p])
    # relplot's smECE(p, y) is the classwise kind of binary data (the
    # positive class's error).
    assert smooth_calibration_error(
        y, p, kind="classwise", boundary="relplot"
    ) == pytest.approx(expected, abs=1e-9)
    assert smooth_calibration_error(
        y, P, kind="classwise", boundary="relplot"
    ) == pytest.approx(expected, abs=1e-9)
    # The confidence kind of binary data: max(p, 1 - p) against correctness.
    conf, correct = _confidence(P, y)
    assert smooth_calibration_error(y, p, boundary="relplot") == pytest.approx(
        relplot.smECE(conf, correct), abs=1e-9
    )


@pytest.mark.parametrize("name", MULTICLASS_SETS)
def test_confidence_and_top_label_equal_relplot(name):
    relplot = _relplot()
    P, y = load_shared(name)
    conf, correct = relplot.multiclass_logits_to_confidences(P, y, probs=True)
    conf = conf.astype(np.float64)
    assert smooth_calibration_error(y, P, boundary="relplot") == pytest.approx(
        relplot.smECE(conf, correct), abs=1e-9
    )
    pred = P.argmax(axis=1)
    expected = sum(
        np.mean(pred == k) * relplot.smECE(conf[pred == k], correct[pred == k])
        for k in np.unique(pred)
    )
    assert smooth_calibration_error(
        y, P, kind="top_label", boundary="relplot"
    ) == pytest.approx(expected, abs=1e-9)


def test_classwise_multiclass_is_the_mean_of_relplot_per_class():
    relplot = _relplot()
    P, y = load_shared("splinecalib/mnist4_test_set.npz")
    expected = np.mean(
        [relplot.smECE(P[:, k].astype(float), (y == k) * 1.0) for k in range(5)]
    )
    assert smooth_calibration_error(
        y, P, kind="classwise", boundary="relplot"
    ) == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("sigma", [0.0049, 0.05, 0.5])
def test_fixed_bandwidth_equals_relplot_and_slow_reference(sigma):
    # 0.0049 gives a grid of an even number of nodes (2042).
    p, y = _binary(BINARY_SETS[2])
    value = smooth_calibration_error(
        y, p, kind="classwise", bandwidth=sigma, boundary="relplot"
    )
    assert value == pytest.approx(_slow_relplot_ece(p, y, sigma), rel=1e-10)
    relplot = _relplot()
    assert value == pytest.approx(relplot.smECE_sigma(p, y * 1.0, sigma), rel=1e-10)


@pytest.mark.parametrize("name", BINARY_SETS[1:] + MULTICLASS_SETS[:1])
def test_automatic_bandwidth_is_the_bisected_fixed_point(name):
    P, y = load_shared(name)
    curve = smooth_reliability_curve(y, P)
    sigma = curve.bandwidth
    assert sigma * 1024 == int(sigma * 1024)  # a point of the bisection
    # smECE at sigma is below sigma, one step left of it above: the bracket.
    f, a = _confidence(P, y)
    assert _exact_ece(f, a, sigma) <= sigma
    assert _exact_ece(f, a, sigma - 2**-10) > sigma - 2**-10
    assert curve.smooth_ece == pytest.approx(_exact_ece(f, a, sigma), rel=1e-4)


@pytest.mark.parametrize("name", [BINARY_SETS[1], MULTICLASS_SETS[0]])
@pytest.mark.parametrize("sigma", [0.01, 0.03, 0.1])
def test_reflected_kernel_equals_the_exact_integrals(name, sigma):
    # Both sets hold confidences of exactly 1.0 (and 0.0 for the forest),
    # which relplot's grid counts half.
    P, y = load_shared(name)
    f, a = _confidence(P, y)
    assert np.mean(f == 1.0) > 0.03
    value = smooth_calibration_error(y, P, bandwidth=sigma)
    assert value == pytest.approx(_exact_ece(f, a, sigma), rel=1e-4)


def test_relplot_counts_the_end_points_half():
    # CIFAR-10 WideResNet: 25 % of the float32 confidences are 1.0.
    P, y = load_shared(MULTICLASS_SETS[0])
    f, a = _confidence(P, y)
    assert smooth_calibration_error(y, P) == pytest.approx(0.0537, abs=1e-4)
    assert smooth_calibration_error(y, P, boundary="relplot") == pytest.approx(
        0.0757, abs=1e-4
    )
    # One-signed residuals: every bandwidth gives about |mean(f - a)|.
    assert abs(np.mean(f - a)) == pytest.approx(0.0537, abs=1e-4)
    # Without predictions near 0 and 1 the two agree (but for relplot's
    # density regulariser, 1e-4 / n).
    p, y2 = _binary(BINARY_SETS[0])
    assert min(p.min(), 1 - p.max()) > 1e-3
    assert smooth_calibration_error(y2, p) == pytest.approx(
        smooth_calibration_error(y2, p, boundary="relplot"), rel=1e-6
    )


# ------------------------------------------------------------- hand checks
def test_calibrated_large_sample_is_small_and_miscalibration_is_seen():
    rng = np.random.default_rng(0)
    p = rng.uniform(size=200_000)
    y = (rng.uniform(size=p.size) < p).astype(int)
    assert smooth_calibration_error(y, p, kind="classwise") < 0.01
    # Over-confident by a factor 2 around 0.5: true rate 0.5 + (p - 0.5) / 2,
    # a mean gap E|p - 0.5| / 2 = 0.125 that smoothing shrinks a little.
    y_over = (rng.uniform(size=p.size) < 0.5 + (p - 0.5) / 2).astype(int)
    value = smooth_calibration_error(y_over, p, kind="classwise")
    assert 0.11 < value < 0.125


def test_constant_predictions_give_the_gap():
    # Every prediction 0.7 and 60 % positives: the smoothed residual is 0.1
    # everywhere the density is, so the error is 0.1 (up to the 1e-4 density
    # regulariser, relative 1e-4 / n).
    y = np.array([1] * 60 + [0] * 40)
    p = np.full(100, 0.7)
    assert smooth_calibration_error(y, p, kind="classwise") == pytest.approx(
        0.1, rel=1e-5
    )
    P = np.tile([0.1, 0.7, 0.2], (100, 1))
    y3 = np.array([1] * 60 + [0] * 30 + [2] * 10)
    for kind in ("confidence", "top_label"):
        assert smooth_calibration_error(y3, P, kind=kind) == pytest.approx(
            0.1, rel=1e-5
        )
    # classwise: |0.1 - 0.3|, |0.7 - 0.6|, |0.2 - 0.1|, mean 0.4 / 3.
    assert smooth_calibration_error(y3, P, kind="classwise") == pytest.approx(
        0.4 / 3, rel=1e-5
    )


# ------------------------------------------------------------ equivalences
def test_weights_are_repetitions_and_scale_free():
    rng = np.random.default_rng(1)
    P = rng.dirichlet(np.ones(3), size=400)
    y = rng.integers(0, 3, 400)
    w = rng.integers(0, 4, 400)
    for kind in ("confidence", "top_label", "classwise"):
        weighted = smooth_calibration_error(y, P, kind=kind, sample_weight=w)
        repeated = smooth_calibration_error(
            np.repeat(y, w), np.repeat(P, w, axis=0), kind=kind
        )
        assert weighted == pytest.approx(repeated, rel=1e-10)
        scaled = smooth_calibration_error(y, P, kind=kind, sample_weight=w * 1e-3)
        assert scaled == pytest.approx(weighted, rel=1e-12)


def test_weighted_value_equals_slow_reference():
    rng = np.random.default_rng(2)
    p = rng.uniform(size=300)
    y = (rng.uniform(size=300) < p**1.5).astype(int)
    w = rng.exponential(size=300)
    value = smooth_calibration_error(
        y, p, kind="classwise", bandwidth=0.03, sample_weight=w, boundary="relplot"
    )
    assert value == pytest.approx(_slow_relplot_ece(p, y, 0.03, w), rel=1e-10)
    value = smooth_calibration_error(
        y, p, kind="classwise", bandwidth=0.03, sample_weight=w
    )
    assert value == pytest.approx(_exact_ece(p, y, 0.03, w), rel=1e-4)


@pytest.mark.parametrize("kind", ["confidence", "top_label", "classwise"])
def test_permutation_invariance(kind):
    P, y = load_shared(MULTICLASS_SETS[0])
    order = np.random.default_rng(0).permutation(y.size)
    assert smooth_calibration_error(y, P, kind=kind) == pytest.approx(
        smooth_calibration_error(y[order], P[order], kind=kind), rel=1e-12
    )


def test_string_labels_and_labels_argument():
    rng = np.random.default_rng(3)
    p = rng.uniform(size=500)
    y = (rng.uniform(size=500) < p).astype(int)
    names = np.array(["no", "yes"])[y]
    assert smooth_calibration_error(names, p) == smooth_calibration_error(y, p)
    # labels= names the columns: reversed labels flip the positive class.
    assert smooth_calibration_error(
        names, 1 - p, labels=["yes", "no"], kind="classwise"
    ) == pytest.approx(smooth_calibration_error(y, p, kind="classwise"))


def test_invalid_inputs_raise():
    with pytest.raises(ValueError, match="bandwidth"):
        smooth_calibration_error([0, 1], [0.2, 0.8], bandwidth=0.0)
    with pytest.raises(ValueError, match="labels="):
        smooth_calibration_error([1, 1], [0.2, 0.8])
    with pytest.raises(ValueError, match="sum"):
        smooth_calibration_error([0, 1], [[0.2, 0.2], [0.5, 0.5]])
    with pytest.raises(ValueError, match="class_index"):
        smooth_reliability_curve([0, 1, 2], np.eye(3), kind="classwise")
    with pytest.raises(ValueError, match="predicted as class 2"):
        smooth_reliability_curve(
            [0, 1, 2], np.eye(3)[[0, 1, 1]], kind="top_label", class_index=2
        )


# ------------------------------------------------------------------- curve
def test_curve_equals_relplot_kernel_smoother_and_kde():
    relplot = _relplot()
    from relplot.kernels import ReflectedGaussianKernel

    p, y = _binary(BINARY_SETS[1])
    curve = smooth_reliability_curve(y, p, kind="classwise", boundary="relplot")
    kernel = ReflectedGaussianKernel(curve.bandwidth)
    acc, _ = kernel.smooth(p, y * 1.0, curve.x)
    np.testing.assert_allclose(curve.accuracy, np.clip(acc, 0, 1), atol=1e-9)
    np.testing.assert_allclose(curve.density, kernel.kde(p, curve.x), atol=1e-9)
    _, width = relplot.smECE(p, y * 1.0, return_width=True)
    assert curve.bandwidth == width
    assert curve.smooth_ece == pytest.approx(
        smooth_calibration_error(y, p, kind="classwise", boundary="relplot")
    )
    # relplot's density misses half the mass of the samples at 0 and 1.
    at_ends = np.mean((p == 0) | (p == 1))
    assert at_ends > 0.05
    mass = _trapezoid(curve.density, curve.x)
    assert mass == pytest.approx(1 - at_ends / 2, abs=2e-3)
    reflected = smooth_reliability_curve(y, p, kind="classwise")
    assert _trapezoid(reflected.density, reflected.x) == pytest.approx(1, abs=2e-3)


def test_top_label_curve_is_the_curve_of_the_predicted_class():
    P, y = load_shared(MULTICLASS_SETS[0])
    pred = P.argmax(axis=1)
    curve = smooth_reliability_curve(y, P, kind="top_label", class_index=3)
    mask = pred == 3
    conf = P[mask].max(axis=1)
    binary = (pred[mask] == y[mask]).astype(int)
    ref = smooth_reliability_curve(
        binary, np.column_stack([1 - conf, conf]), kind="classwise", labels=[0, 1]
    )
    np.testing.assert_allclose(curve.accuracy, ref.accuracy, atol=1e-9)
    assert curve.bandwidth == ref.bandwidth
    assert (curve.kind, curve.class_index) == ("top_label", 3)
    pooled = smooth_reliability_curve(y, P, kind="top_label")
    assert pooled.class_index is None
    assert pooled.smooth_ece == pytest.approx(smooth_calibration_error(y, P))


# ------------------------------------------------------------------ scorer
def test_scorer_passes_the_classes():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(600, 3))
    y = (X[:, 0] + rng.normal(size=600) > 0).astype(int) + (X[:, 1] > 1)
    clf = LogisticRegression().fit(X, y)
    scorer = get_scorer("neg_smooth_calibration_error")
    expected = smooth_calibration_error(
        y[:200], clf.predict_proba(X[:200]), labels=clf.classes_
    )
    assert scorer(clf, X[:200], y[:200]) == pytest.approx(-expected)
    assert smooth_ece_scorer(clf, X, y) <= 0


def test_curve_is_nan_far_from_the_predictions():
    rng = np.random.default_rng(5)
    p = rng.uniform(0.4, 0.6, size=2000)
    y = (rng.uniform(size=p.size) < p).astype(int)
    curve = smooth_reliability_curve(y, p, kind="classwise", bandwidth=0.01)
    far = (curve.x < 0.2) | (curve.x > 0.8)
    assert np.isnan(curve.accuracy[far]).all()
    assert np.isfinite(curve.accuracy[(curve.x > 0.42) & (curve.x < 0.58)]).all()
    assert (curve.density[far] < 1e-9 * curve.density.max()).all()
    # relplot's regularised ratio is 0 there instead.
    old = smooth_reliability_curve(
        y, p, kind="classwise", bandwidth=0.01, boundary="relplot"
    )
    np.testing.assert_allclose(old.accuracy[far], 0.0, atol=1e-6)


def test_relplot_grid_weights_are_repetitions_to_its_regulariser():
    rng = np.random.default_rng(6)
    p = rng.uniform(size=400)
    y = (rng.uniform(size=400) < p).astype(int)
    w = rng.integers(1, 4, 400)
    weighted = smooth_calibration_error(y, p, sample_weight=w, boundary="relplot")
    repeated = smooth_calibration_error(
        np.repeat(y, w), np.repeat(p, w), boundary="relplot"
    )
    assert weighted == pytest.approx(repeated, rel=1e-6)
