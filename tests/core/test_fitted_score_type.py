"""Issue 30, item 4: a fitted calibrator notices scores of another type at
predict time (raw-score mode), by the rule of
:func:`skcalib._core.score_check.check_fitted_score_type`."""

import warnings

import numpy as np
import pytest
from _data import SHARED_DATA, calibrated_logits
from _discovery import FIT_ALONE_PARAMS
from _xp import CASES, case_id, namespace_for
from scipy.special import softmax
from sklearn import config_context

from skcalib import (
    ConformalClassifier,
    PlattCalibrator,
    TemperatureCalibrator,
)
from skcalib._base import _skcalib_calibrators
from skcalib.selection._auto import _ScorePassthrough

#: Every public calibrator (all share the base class's predict-time check).
CALIBRATORS = _skcalib_calibrators()


def _first_aigen_file():
    """aigen CIFAR-10 ResNet-50 logits: val (fit) and test splits."""
    path = SHARED_DATA / "aigen" / "cifar10_resnet50_val.npz"
    if not path.exists():
        pytest.skip(f"{path} is not available")
    with np.load(path) as d, np.load(str(path).replace("_val", "_test")) as t:
        return d["logits"].astype(np.float64), d["labels"], t["logits"].astype(float)


def test_logit_fit_then_probabilities_is_an_error_on_cifar():
    # The reproduction: temperature scaling fitted on the CIFAR-10 ResNet-50
    # logits, then given the softmax probabilities of the test logits. Read
    # as logits they gave softmax(p / T), off from softmax(z / T) by up to
    # 0.778 (computed here independently), with no warning.
    z_val, y_val, z_test = _first_aigen_file()
    ts = TemperatureCalibrator().fit(z_val, y_val)
    p_test = softmax(z_test, axis=1)
    silent = softmax(p_test / ts.temperature_, axis=1)
    right = softmax(z_test / ts.temperature_, axis=1)
    np.testing.assert_allclose(ts.predict_proba(z_test), right, atol=1e-6)
    assert np.abs(silent - right).max() > 0.75  # what predict_proba returned
    with pytest.raises(ValueError, match=r"score_type_='logit'.*10000 row\(s\)"):
        ts.predict_proba(p_test)
    # float32 softmax (rows off 1 by float32 rounding) is caught as well
    with pytest.raises(ValueError, match="looks like probabilities"):
        ts.predict_proba(p_test.astype(np.float32))
    with pytest.raises(ValueError, match="looks like probabilities"):
        ts.predict_proba(p_test.astype(np.float32).astype(np.float64))


def test_probability_fit_then_logits_names_score_type():
    z, y = calibrated_logits(n=2000, k=4)
    cal = TemperatureCalibrator().fit(softmax(z, axis=1), y)
    assert cal.score_type_ == "probability"
    lo, hi = z.min(), z.max()
    with pytest.raises(ValueError) as info:
        cal.predict_proba(z)
    msg = str(info.value)
    assert "score_type_='probability'" in msg
    assert f"min {lo:.4g}, max {hi:.4g}" in msg
    # 1-D binary: a value outside [0, 1] after a probability fit
    rng = np.random.default_rng(0)
    p = rng.random(500)
    yb = (rng.random(500) < p).astype(int)
    platt = PlattCalibrator().fit(p, yb)
    with pytest.raises(ValueError, match="score_type_='probability'"):
        platt.predict_proba(np.log(p / (1 - p)))


def _check_params(cls):
    params = dict(FIT_ALONE_PARAMS.get(cls.__name__, {}))
    if cls.__name__ == "ConformalClassifier":
        params["alpha"] = 0.2
    return params


@pytest.mark.parametrize("cls", CALIBRATORS, ids=lambda c: c.__name__)
def test_every_calibrator_refuses_the_other_score_type(cls):
    z, y = calibrated_logits(n=600, k=3, seed=4)
    p = softmax(z, axis=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # some methods warn on small data
        on_logits = cls(**_check_params(cls)).fit(z, y)
        on_proba = cls(**_check_params(cls)).fit(p, y)
    assert on_logits.score_type_ == "logit"
    assert on_proba.score_type_ == "probability"
    with pytest.raises(ValueError, match="score_type_='logit'"):
        on_logits.predict_proba(p)
    with pytest.raises(ValueError, match="score_type_='probability'"):
        on_proba.predict_proba(z)
    # the scores of the fitted type still go through, float32 included
    on_logits.predict_proba(z)
    on_proba.predict_proba(p.astype(np.float32))
    on_proba.predict_proba(p.round(4))


def test_explicit_logit_only_warns_at_the_users_line():
    z, y = calibrated_logits(n=1000, k=3)
    p = softmax(z, axis=1)
    cal = TemperatureCalibrator(score_type="logit").fit(z, y)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = cal.predict_proba(p)
    ours = [w for w in caught if "fitted on logits" in str(w.message)]
    assert len(ours) == 1 and ours[0].filename == __file__
    # used as logits, as declared
    np.testing.assert_allclose(out, softmax(p / cal.temperature_, axis=1))
    # fitted on scores that already looked like probabilities: the fit
    # warned; predict on scores like them does not warn again
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        TemperatureCalibrator(score_type="logit").fit(p, y).predict_proba(p)
    assert len([w for w in caught if "probabilities" in str(w.message)]) == 1


def test_binary_1d_logits_inside_the_unit_interval_are_not_checked():
    # Every real number is a log-odds: 1-D decision values in [0, 1] after a
    # logit fit are valid (a weak model, a single row), so they pass.
    rng = np.random.default_rng(1)
    s = rng.normal(scale=3, size=800)
    y = (rng.random(800) < 1 / (1 + np.exp(-s))).astype(int)
    cal = PlattCalibrator().fit(s, y)
    assert cal.score_type_ == "logit"
    x = np.array([0.2, 0.5, 0.9])
    a, b = float(np.ravel(cal.coef_)[0]), float(np.ravel(cal.intercept_)[0])
    expected = 1 / (1 + np.exp(-(a * x + b)))
    np.testing.assert_allclose(cal.predict_proba(x)[:, 1], expected, rtol=1e-10)


def test_wrapper_mode_is_not_checked_against_the_fit():
    # the scores come from the same method of the same estimator at fit and
    # at predict: what its decision_function gives is used as logits
    z, y = calibrated_logits(n=800, k=3)
    est = _ScorePassthrough(np.arange(3)).fit()
    cal = TemperatureCalibrator(estimator=est, response_method="decision_function")
    cal.fit(z, y)
    p = softmax(z, axis=1)
    np.testing.assert_allclose(
        cal.predict_proba(p), softmax(p / cal.temperature_, axis=1), atol=1e-12
    )


def test_a_single_logit_row_summing_to_one_is_refused_with_the_way_out():
    # the rare logit matrix that looks like probabilities: the error names
    # score_type='logit', which turns it into a warning
    z, y = calibrated_logits(n=500, k=2)
    row = np.array([[0.25, 0.75]])
    with pytest.raises(ValueError, match="fit with score_type='logit'"):
        TemperatureCalibrator().fit(z, y).predict_proba(row)
    cal = TemperatureCalibrator(score_type="logit").fit(z, y)
    with pytest.warns(UserWarning, match="fitted on logits"):
        out = cal.predict_proba(row)
    np.testing.assert_allclose(out, softmax(row / cal.temperature_, axis=1))


def test_conformal_classifier_checks_too():
    z, y = calibrated_logits(n=800, k=3)
    conf = ConformalClassifier(alpha=0.2).fit(z, y)
    with pytest.raises(ValueError, match="score_type_='logit'"):
        conf.predict(softmax(z, axis=1))


def test_chunked_fit_and_dask_predict_check():
    z, y = calibrated_logits(n=1200, k=3)
    chunks = [(z[:600], y[:600]), (z[600:], y[600:])]
    cal = TemperatureCalibrator().fit_chunks(chunks)
    with pytest.raises(ValueError, match="score_type_='logit'"):
        cal.predict_proba(softmax(z, axis=1))


@pytest.mark.parametrize("case", CASES[:2], ids=case_id)
def test_array_api_path_checks_on_the_device(case):
    xp, device, dtype = namespace_for(case)
    z, y = calibrated_logits(n=600, k=3)
    p = softmax(z, axis=1)
    with config_context(array_api_dispatch=True):
        zx = xp.asarray(z, dtype=dtype, device=device)
        px = xp.asarray(p, dtype=dtype, device=device)
        yx = xp.asarray(y, device=device)
        ts = TemperatureCalibrator().fit(zx, yx)
        with pytest.raises(ValueError, match="score_type_='logit'"):
            ts.predict_proba(px)
        tp = TemperatureCalibrator().fit(px, yx)
        with pytest.raises(ValueError, match="score_type_='probability'"):
            tp.predict_proba(zx)
        explicit = TemperatureCalibrator(score_type="logit").fit(zx, yx)
        with pytest.warns(UserWarning, match="fitted on logits"):
            explicit.predict_proba(px)
