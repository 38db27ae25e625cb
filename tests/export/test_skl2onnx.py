"""Wrapper-mode calibrators and pipelines through skl2onnx: the classifier is
converted by skl2onnx, the calibrator by skcalib's registered converter."""

import warnings

import numpy as np
import pytest

pytest.importorskip(
    "onnx", reason="the onnx extra is not installed (pip install '.[onnx]')"
)
skl2onnx = pytest.importorskip(
    "skl2onnx", reason="the onnx extra is not installed (pip install '.[onnx]')"
)

from sklearn.ensemble import HistGradientBoostingClassifier  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.pipeline import Pipeline, make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from skcalib import (  # noqa: E402
    BetaCalibrator,
    HistogramBinningCalibrator,
    IsotonicCalibrator,
    PlattCalibrator,
    ScalingBinningCalibrator,
    TemperatureCalibrator,
    VectorScalingCalibrator,
)
from skcalib.export import register_skl2onnx, to_onnx  # noqa: E402

TOLERANCE = {np.float64: 1e-6, np.float32: 1e-5}
WRAPPED = [
    TemperatureCalibrator,
    PlattCalibrator,
    VectorScalingCalibrator,
    BetaCalibrator,
    IsotonicCalibrator,
    HistogramBinningCalibrator,
    ScalingBinningCalibrator,
]


@pytest.fixture(scope="module", params=[2, 3], ids=["binary", "three"])
def features(request):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 5)) * 3.0 + 1.0
    noise = 0.5 * rng.normal(size=3000)
    if request.param == 2:
        y = (X[:, 0] + noise > 1.0).astype(int)
    else:
        y = np.digitize(X[:, 1] + noise, [0.0, 2.0])
    return X, y


def _compare(run_onnx, model, cal, X, dtype):
    X = X.astype(dtype)
    out = run_onnx(model, X)
    error = np.abs(out["probabilities"] - cal.predict_proba(X)).max()
    assert error <= TOLERANCE[dtype], error
    np.testing.assert_array_equal(out["label"], cal.predict(X))


def test_register_names_every_exportable_class():
    names = register_skl2onnx()
    assert {"TemperatureCalibrator", "IsotonicCalibrator"} <= set(names)
    assert register_skl2onnx() == names  # again: nothing changes


@pytest.mark.parametrize("response_method", ["auto", "predict_proba"])
@pytest.mark.parametrize("cls", WRAPPED, ids=lambda c: c.__name__)
def test_wrapper_mode_around_logistic_regression(
    run_onnx, features, cls, response_method
):
    X, y = features
    lr = LogisticRegression().fit(X[:1000], y[:1000])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cal = cls(estimator=lr, response_method=response_method).fit(
            X[1000:2000], y[1000:2000]
        )
    for dtype in (np.float64, np.float32):
        _compare(run_onnx, to_onnx(cal, dtype=dtype), cal, X[2000:], dtype)


def test_skl2onnx_converts_a_wrapper_and_a_pipeline_ending_in_one(run_onnx, features):
    X, y = features
    register_skl2onnx()
    scaler = StandardScaler().fit(X[:1000])
    lr = LogisticRegression().fit(scaler.transform(X[:1000]), y[:1000])
    cal = IsotonicCalibrator(estimator=lr).fit(
        scaler.transform(X[1000:2000]), y[1000:2000]
    )
    model = skl2onnx.to_onnx(cal, scaler.transform(X[:1]).astype(np.float32))
    _compare(run_onnx, model, cal, scaler.transform(X[2000:]), np.float32)
    pipe = make_pipeline(scaler, PlattCalibrator(estimator=lr))
    pipe.fit(X[1000:2000], y[1000:2000])
    for dtype in (np.float32, np.float64):
        model = skl2onnx.to_onnx(pipe, X[:1].astype(dtype))
        _compare(run_onnx, model, pipe, X[2000:], dtype)


def test_a_pipeline_of_raw_score_calibrators(run_onnx):
    # the second reads the probabilities of the first
    rng = np.random.default_rng(1)
    y = rng.integers(0, 3, 2000)
    z = 3.0 * (rng.normal(size=(2000, 3)) + np.eye(3)[y])
    register_skl2onnx()
    pipe = Pipeline(
        [
            ("temperature", TemperatureCalibrator()),
            ("bins", HistogramBinningCalibrator()),
        ]
    ).fit(z[:1000], y[:1000])
    for dtype in (np.float32, np.float64):
        model = skl2onnx.to_onnx(pipe, z[:1].astype(dtype))
        _compare(run_onnx, model, pipe, z[1000:], dtype)


def test_wrapper_mode_around_hist_gradient_boosting(run_onnx, features):
    X, y = features
    hgb = HistGradientBoostingClassifier(max_iter=20, random_state=0)
    hgb.fit(X[:1000], y[:1000])
    try:  # skl2onnx's own converter of the classifier, alone
        skl2onnx.to_onnx(hgb, X[:1].astype(np.float32))
    except Exception as exc:  # noqa: BLE001 - any failure of skl2onnx itself
        pytest.skip(
            f"skl2onnx {skl2onnx.__version__} cannot convert this "
            f"HistGradientBoostingClassifier itself: {type(exc).__name__}"
        )
    for cls in (TemperatureCalibrator, IsotonicCalibrator):
        cal = cls(estimator=hgb).fit(X[1000:2000], y[1000:2000])
        for dtype in (np.float64, np.float32):
            _compare(run_onnx, to_onnx(cal, dtype=dtype), cal, X[2000:], dtype)


def test_a_wrapper_around_a_pipeline_is_refused_with_the_way_round(features):
    # skl2onnx 1.20 cannot nest a Pipeline's graph in the calibrator's (it
    # failed deep inside skl2onnx with "Empty inputs"); the error says how
    # to restructure, and the restructured pipeline converts.
    X, y = features
    model = make_pipeline(StandardScaler(), LogisticRegression())
    model.fit(X[:1000], y[:1000])
    cal = PlattCalibrator(estimator=model).fit(X[1000:2000], y[1000:2000])
    with pytest.raises(TypeError, match=r"wraps a Pipeline.*last step"):
        to_onnx(cal)
    register_skl2onnx()
    with pytest.raises(TypeError, match="wraps a Pipeline"):
        skl2onnx.to_onnx(cal, X[:1].astype(np.float32))
    inner = PlattCalibrator(estimator=model[-1]).fit(
        model[:-1].transform(X[1000:2000]), y[1000:2000]
    )
    pipe = make_pipeline(model[:-1], inner)
    np.testing.assert_allclose(
        pipe.predict_proba(X[2000:]), cal.predict_proba(X[2000:]), atol=1e-12
    )
    assert skl2onnx.to_onnx(pipe, X[:1].astype(np.float32)) is not None
