"""``to_onnx``'s contract around the graphs: what it refuses and why, the
opset, dtype and input layout, the ``label`` output, conformal sets."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

pytest.importorskip(
    "onnx", reason="the onnx extra is not installed (pip install '.[onnx]')"
)

import onnx  # noqa: E402

from skcalib import (  # noqa: E402
    AutoCalibrator,
    CalibratedClassifier,
    ConformalClassifier,
    CrossConformalClassifier,
    EnsembleTemperatureCalibrator,
    HistogramBinningCalibrator,
    IsotonicCalibrator,
    PlattCalibrator,
    TemperatureCalibrator,
    VennAbersCalibrator,
)
from skcalib.export import to_onnx  # noqa: E402


@pytest.fixture(scope="module")
def logits3():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 1200)
    return 2.5 * (rng.normal(size=(1200, 3)) + np.eye(3)[y]), y


# -------------------------------------------------------------- refusals
def test_auto_calibrator_is_refused_naming_best_calibrator(logits3, run_onnx):
    z, y = logits3
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        auto = AutoCalibrator(cv=2).fit(z, y)
    with pytest.raises(TypeError, match=r"AutoCalibrator.*best_calibrator_"):
        to_onnx(auto)
    # the alternative the message names works and computes the same
    out = run_onnx(to_onnx(auto.best_calibrator_, dtype=np.float64), z)
    assert np.abs(out["probabilities"] - auto.predict_proba(z)).max() <= 1e-12


@pytest.mark.parametrize(
    "make, pattern",
    [
        (lambda: VennAbersCalibrator(), r"VennAbersCalibrator.*interval"),
        (
            lambda: CalibratedClassifier(),
            r"CalibratedClassifier.*calibrated_classifiers_",
        ),
        (lambda: EnsembleTemperatureCalibrator(), r"no graph is written"),
        (lambda: CrossConformalClassifier(), r"no graph is written"),
    ],
)
def test_classes_without_a_graph_are_refused(logits3, make, pattern):
    z, y = logits3
    est = make()
    if not isinstance(est, CalibratedClassifier):
        est.fit(z, y)
    with pytest.raises(TypeError, match=pattern):
        to_onnx(est)


def test_a_subclass_is_refused_until_its_graph_is_written(logits3):
    class MyTemperature(TemperatureCalibrator):
        pass

    z, y = logits3
    with pytest.raises(TypeError, match="MyTemperature.*no graph"):
        to_onnx(MyTemperature().fit(z, y))


def test_unfitted_calibrator_raises_not_fitted():
    with pytest.raises(NotFittedError):
        to_onnx(TemperatureCalibrator())


@pytest.mark.parametrize(
    "params, pattern",
    [
        ({"method": "aps"}, r"randomised sets.*hash"),  # randomized="auto"
        ({"method": "raps", "k_reg": 1, "lam": 0.1}, r"randomised"),
        ({"method": "aps", "randomized": False}, r"only the LAC and top-k"),
        ({"calibrator": VennAbersCalibrator()}, r"calibrator=VennAbersCalibrator"),
    ],
)
def test_conformal_set_rules_without_a_graph_are_refused(logits3, params, pattern):
    z, y = logits3
    cp = ConformalClassifier(random_state=0, **params).fit(z, y)
    with pytest.raises(TypeError, match=pattern):
        to_onnx(cp)


def test_conformal_wrapper_mode_is_refused(logits3):
    from sklearn.linear_model import LogisticRegression

    z, y = logits3
    lr = LogisticRegression().fit(z[:600], y[:600])
    cp = ConformalClassifier(estimator=lr).fit(z[600:], y[600:])
    with pytest.raises(TypeError, match="wrapper mode.*raw-score mode"):
        to_onnx(cp)


def test_opset_too_old_names_the_operator(logits3):
    z, y = logits3
    ts = TemperatureCalibrator().fit(z, y)
    with pytest.raises(ValueError, match=r"target_opset=12 .*operator (\w+).*>= 13"):
        to_onnx(ts, target_opset=12)
    newest = onnx.defs.onnx_opset_version()
    with pytest.raises(ValueError, match="newer than the newest"):
        to_onnx(ts, target_opset=newest + 1)
    with pytest.raises(TypeError, match="target_opset must be an int"):
        to_onnx(ts, target_opset=18.0)


@pytest.mark.parametrize("opset", [13, 17, 18, 21])
def test_every_supported_opset_runs(logits3, run_onnx, opset):
    z, y = logits3
    for cal in (TemperatureCalibrator(), IsotonicCalibrator(multi_class="top_label")):
        cal.fit(z, y)
        model = to_onnx(cal, dtype=np.float64, target_opset=opset)
        assert model.opset_import[0].version == opset
        out = run_onnx(model, z)["probabilities"]
        assert np.abs(out - cal.predict_proba(z)).max() <= 1e-12


def test_float32_export_of_a_bin_too_narrow_for_float32_is_refused(run_onnx):
    # two bins 1e-12 apart: float32 scores cannot tell them apart
    p = np.r_[np.full(100, 0.3), np.full(100, 0.3 + 1e-12), np.full(100, 0.9)]
    y = np.r_[np.zeros(100), np.ones(100), np.ones(100)].astype(int)
    cal = HistogramBinningCalibrator(strategy="quantile", n_bins=3).fit(p, y)
    with pytest.raises(ValueError, match=r"too narrow for float32.*dtype=np.float64"):
        to_onnx(cal, dtype=np.float32)
    # what the rule says: float32 rounding moves the bin's middle elsewhere
    middle = 0.3 + 0.5e-12
    exact = cal.predict_proba(np.array([middle]))[0, 1]
    rounded = cal.predict_proba(np.array([middle], dtype=np.float32))[0, 1]
    assert abs(exact - rounded) > 1e-5
    out = run_onnx(to_onnx(cal, dtype=np.float64), np.array([middle]))
    assert out["probabilities"][0, 1] == exact


def test_dtype_must_be_a_float_type(logits3):
    z, y = logits3
    with pytest.raises(ValueError, match="dtype must be np.float32 or np.float64"):
        to_onnx(TemperatureCalibrator().fit(z, y), dtype=np.int64)


# ------------------------------------------------------------------ layout
def test_input_layout_follows_the_fit(run_onnx):
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 500)
    s = 2.0 * rng.normal(size=500) + 2.0 * y
    one_d = PlattCalibrator().fit(s, y)
    model = to_onnx(one_d, dtype=np.float64)
    dims = model.graph.input[0].type.tensor_type.shape.dim
    assert len(dims) == 1
    expected = one_d.predict_proba(s)
    for n_features, X in ((1, s[:, None]), (2, np.column_stack((-s, s)))):
        out = run_onnx(to_onnx(one_d, dtype=np.float64, n_features=n_features), X)
        assert np.abs(out["probabilities"] - one_d.predict_proba(X)).max() <= 1e-12
    assert np.abs(run_onnx(model, s)["probabilities"] - expected).max() <= 1e-12
    with pytest.raises(
        ValueError, match=r"n_features=3 does not match PlattCalibrator"
    ):
        to_onnx(one_d, n_features=3)
    two_d = PlattCalibrator().fit(np.column_stack((-s, s)), y)
    with pytest.raises(ValueError, match=r"2 column\(s\).*fitted on 2-D"):
        to_onnx(two_d, n_features=1)


def test_labels_follow_classes_strings_included(logits3, run_onnx):
    z, y = logits3
    names = np.array(["cat", "dog", "eel"])
    for labels in (y, y + 10, names[y]):
        cal = TemperatureCalibrator().fit(z, labels)
        out = run_onnx(to_onnx(cal, dtype=np.float64), z)
        np.testing.assert_array_equal(out["label"], cal.predict(z))


def test_the_model_is_checked_and_says_who_made_it(logits3):
    z, y = logits3
    model = to_onnx(TemperatureCalibrator().fit(z, y))
    onnx.checker.check_model(model, full_check=True)
    assert model.producer_name == "skcalib"
    assert [i.name for i in model.graph.input] == ["X"]
    assert [o.name for o in model.graph.output] == ["label", "probabilities"]


# --------------------------------------------------------------- conformal
@pytest.mark.parametrize(
    "params",
    [
        {"method": "lac"},
        {"method": "lac", "class_conditional": True},
        {"method": "lac", "include_top": True, "alpha": 0.02},
        {"method": "top_k"},
        {"method": "top_k", "alpha": 0.01},
        {"method": "top_k", "class_conditional": True},
        {"method": "lac", "calibrator": TemperatureCalibrator()},
        {"method": "top_k", "calibrator": IsotonicCalibrator()},
    ],
)
@pytest.mark.parametrize("kind", ["logit", "proba"])
def test_conformal_sets_are_predict_set(logits3, run_onnx, params, kind):
    z, y = logits3
    X = z if kind == "logit" else np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    cp = ConformalClassifier(**params).fit(X[:600], y[:600])
    # given probabilities: the fit rows too (their scores are the thresholds)
    rows = (
        slice(None)
        if kind == "proba" and "calibrator" not in params
        else slice(600, None)
    )
    for dtype in (np.float64, np.float32):
        Xd = X[rows].astype(dtype)
        out = run_onnx(to_onnx(cp, dtype=dtype), Xd)
        assert out["sets"].dtype == bool
        np.testing.assert_array_equal(out["sets"], cp.predict_set(Xd))
        tol = 1e-6 if dtype == np.float64 else 1e-5
        assert np.abs(out["probabilities"] - cp.predict_proba(Xd)).max() <= tol


def test_conformal_sets_of_binary_1d_scores(run_onnx):
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 800)
    p = 1 / (1 + np.exp(-(2.0 * rng.normal(size=800) + 2.0 * y)))
    for method in ("lac", "top_k"):
        cp = ConformalClassifier(method=method, alpha=0.2).fit(p[:400], y[:400])
        out = run_onnx(to_onnx(cp, dtype=np.float64), p)
        np.testing.assert_array_equal(out["sets"], cp.predict_set(p))
