"""Issue 30, item 11: ``classes=`` names the class of each score column, so
that a calibration set that misses a class still calibrates every column."""

import warnings

import numpy as np
import pytest
from _data import calibrated_logits, load_shared
from _discovery import FIT_ALONE_PARAMS
from scipy.special import softmax
from sklearn.base import clone

from skcalib import (
    ConformalClassifier,
    PriorShiftAdapter,
    TemperatureCalibrator,
    VectorScalingCalibrator,
)
from skcalib._base import _skcalib_calibrators
from skcalib.selection._auto import _ScorePassthrough

#: Every public calibrator but the prior-shift adapter and the label-shift
#: conformal classifier, whose source prior of an absent class is 0 (a
#: shift to or from it is undefined: an error, tested in their own tests).
CALIBRATORS = [
    c
    for c in _skcalib_calibrators()
    if c is not PriorShiftAdapter and c.__name__ != "LabelShiftConformalClassifier"
]
#: Slow on K = 100 (cross-validated paths, model selection): covered on a
#: small K below.
SLOW_ON_CIFAR = {"AutoCalibrator", "DirichletCalibratorCV", "MatrixScalingCalibratorCV"}
ABSENT = np.array([3, 17, 42, 99])


def _params(cls):
    if cls.__name__ == "ConformalClassifier":
        return {"alpha": 0.2}
    return dict(FIT_ALONE_PARAMS.get(cls.__name__, {}))


def _fit_quiet(cal, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. Beta: one-vs-rest of no positive
        return cal.fit(X, y)


@pytest.fixture(scope="module")
def cifar100():
    """WideResNet-16-4 CIFAR-100 probabilities; a 3000-row calibration
    subset without the classes ABSENT, and 7000 test rows."""
    p, y = load_shared("netcal/wideresnet-16-4-cifar-100.npz")
    order = np.random.default_rng(0).permutation(y.size)
    fit, test = order[:3000], order[3000:]
    fit = fit[~np.isin(y[fit], ABSENT)]
    return p, y, fit, test


@pytest.mark.parametrize(
    "cls",
    [
        # about 45 s on K = 100 (its bias correction is a K x K pass per step)
        pytest.param(c, marks=pytest.mark.slow)
        if c.__name__ == "BiasCorrectedTemperatureCalibrator"
        else c
        for c in CALIBRATORS
        if c.__name__ not in SLOW_ON_CIFAR
    ],
    ids=lambda c: c.__name__,
)
def test_cifar100_with_absent_classes(cls, cifar100):
    p, y, fit, test = cifar100
    classes = np.arange(100)
    assert np.setdiff1d(classes, y[fit]).tolist() == ABSENT.tolist()
    # before: "X has 100 column(s) but there are 96 classes [...]"
    with pytest.raises(ValueError, match="100 column"):
        _fit_quiet(cls(**_params(cls)), p[fit], y[fit])
    cal = _fit_quiet(cls(classes=classes, **_params(cls)), p[fit], y[fit])
    np.testing.assert_array_equal(cal.classes_, classes)
    out = cal.predict_proba(p[test])
    assert out.shape == (test.size, 100)
    assert np.isfinite(out).all()
    np.testing.assert_allclose(out.sum(axis=1), 1.0, atol=1e-6)
    # the same as wrapper mode on a classifier whose classes_ are the columns
    # (the path AutoCalibrator's folds already took)
    est = _ScorePassthrough(classes).fit()
    wrapped = _fit_quiet(
        cls(estimator=est, response_method="predict_proba", **_params(cls)),
        p[fit],
        y[fit],
    )
    np.testing.assert_allclose(out, wrapped.predict_proba(p[test]), atol=1e-12)
    # an absent class gets a low probability where it is not the label:
    # below the uniform 1/K, and never above what the model gave it by far
    others = ~np.isin(y[test], ABSENT)
    mean_absent = out[np.ix_(others, ABSENT)].mean()
    assert mean_absent < 1 / 100
    assert mean_absent < 2 * p[test][np.ix_(others, ABSENT)].mean()


@pytest.mark.parametrize("cls", CALIBRATORS, ids=lambda c: c.__name__)
def test_every_calibrator_keeps_an_absent_column(cls):
    z, y = calibrated_logits(n=900, k=4, seed=2)
    keep = y != 2  # class 2 absent from the calibration rows
    cal = _fit_quiet(cls(classes=[0, 1, 2, 3], **_params(cls)), z[keep], y[keep])
    np.testing.assert_array_equal(cal.classes_, [0, 1, 2, 3])
    out = cal.predict_proba(z)
    assert np.isfinite(out).all()
    np.testing.assert_allclose(out.sum(axis=1), 1.0, atol=1e-6)
    assert out[y != 2, 2].mean() < 0.25  # below uniform
    assert cal.get_params()["classes"] == [0, 1, 2, 3]
    twin = clone(cal)
    assert twin.get_params()["classes"] == [0, 1, 2, 3]


def test_the_issue_case_nine_columns_six_classes():
    # "X has 9 column(s) but there are 6 classes [1, 2, 3, 5, 6, 7]"
    rng = np.random.default_rng(3)
    y = rng.choice([1, 2, 3, 5, 6, 7], size=600)
    z = rng.normal(size=(600, 9))
    z[np.arange(600), y] += 3
    with pytest.raises(ValueError, match=r"9 column\(s\) but there are 6 classes"):
        TemperatureCalibrator().fit(z, y)
    cal = TemperatureCalibrator(classes=np.arange(9)).fit(z, y)
    ref = TemperatureCalibrator().fit(z[:, [1, 2, 3, 5, 6, 7]], y)
    # temperature scaling has no per-class parameter: the same T (the NLL
    # of the 6 columns differs by the terms of the other 3, so only close)
    assert abs(cal.temperature_ - ref.temperature_) < 0.2 * ref.temperature_
    np.testing.assert_allclose(
        cal.predict_proba(z), softmax(z / cal.temperature_, axis=1), atol=1e-12
    )


def test_classes_in_any_order_follow_the_columns():
    z, y = calibrated_logits(n=800, k=3, seed=5)
    names = np.array(["a", "b", "c"])
    perm = [2, 0, 1]
    ref = VectorScalingCalibrator().fit(z, names[y])
    cal = VectorScalingCalibrator(classes=names[perm]).fit(z[:, perm], names[y])
    np.testing.assert_array_equal(cal.classes_, names[perm])
    np.testing.assert_allclose(
        cal.predict_proba(z[:, perm]), ref.predict_proba(z)[:, perm], atol=1e-8
    )
    np.testing.assert_array_equal(cal.predict(z[:, perm]), ref.predict(z))


@pytest.mark.parametrize(
    "classes, match",
    [
        ([0, 1, 1, 2], r"unique, but \[1\] occur"),
        ([0, 1, 2], "4 column"),
        ([0, 1, 2, 3, 4], "4 column"),
        ([[0, 1], [2, 3]], "1-D"),
        ([0], "at least two"),
        ([0, 1, 2, 5], r"label\(s\) \[3\] that are not in classes="),
    ],
)
def test_bad_classes(classes, match):
    z, y = calibrated_logits(n=300, k=4)
    if len(classes) == 3:  # y within classes: the column count decides
        z, y = z[y < 3], y[y < 3]
    with pytest.raises(ValueError, match=match):
        TemperatureCalibrator(classes=classes).fit(z, y)


def test_one_present_class_is_still_an_error():
    z, _ = calibrated_logits(n=50, k=3)
    with pytest.raises(ValueError, match="one class only"):
        TemperatureCalibrator(classes=[0, 1, 2]).fit(z, np.zeros(50, dtype=int))


def test_wrapper_mode_classes_must_agree_with_the_estimator():
    z, y = calibrated_logits(n=300, k=3)
    est = _ScorePassthrough(np.arange(3)).fit()
    cal = TemperatureCalibrator(estimator=est, classes=[0, 1, 2]).fit(z, y)
    np.testing.assert_array_equal(cal.classes_, [0, 1, 2])
    with pytest.raises(ValueError, match=r"classes=\[2, 1, 0\] disagrees"):
        TemperatureCalibrator(estimator=est, classes=[2, 1, 0]).fit(z, y)


def test_chunked_fit_with_classes_equals_fit():
    z, y = calibrated_logits(n=1500, k=4, seed=6)
    keep = y != 1
    z, y = z[keep], y[keep]
    chunks = [(z[:500], y[:500]), (z[500:], y[500:])]
    a = TemperatureCalibrator(classes=[0, 1, 2, 3]).fit_chunks(chunks)
    b = TemperatureCalibrator(classes=[0, 1, 2, 3]).fit(z, y)
    np.testing.assert_array_equal(a.classes_, [0, 1, 2, 3])
    np.testing.assert_allclose(a.temperature_, b.temperature_, rtol=1e-8)
    with pytest.raises(ValueError, match=r"label\(s\) \[3\] that are not in"):
        TemperatureCalibrator(classes=[0, 1, 2]).fit_chunks(chunks)


def test_conformal_with_a_calibrator_and_an_absent_class():
    # the inner calibrator used to need every class; it now gets classes=
    z, y = calibrated_logits(n=1500, k=4, seed=7)
    keep = y != 3
    conf = ConformalClassifier(
        calibrator=TemperatureCalibrator(), alpha=0.1, classes=[0, 1, 2, 3]
    ).fit(z[keep], y[keep])
    sets = conf.predict_sets(z) if hasattr(conf, "predict_sets") else None
    out = conf.predict_proba(z)
    np.testing.assert_allclose(out.sum(axis=1), 1.0, atol=1e-9)
    assert sets is None or sets.shape == (z.shape[0], 4)


def test_prior_shift_with_an_absent_class_is_an_error():
    z, y = calibrated_logits(n=600, k=3)
    keep = y != 2
    with pytest.raises(ValueError, match="zero total weight in the source labels"):
        PriorShiftAdapter(classes=[0, 1, 2]).fit(z[keep], y[keep])
