"""Array-API inputs (torch, array-api-strict; CUDA where present) through
every public estimator and every scorer, with ``array_api_dispatch=True``.

Every public estimator and skcalib scorer is discovered
(``tests/_discovery.py``), not hand-listed: a new one is tested as soon as
it is public. Each gives, from namespace inputs, results in the input's
namespace (and device) equal to its numpy results within
``_xp.TOLERANCE``, and its fitted array attributes live in the input's
namespace. scikit-learn's own ``check_array_api_input`` runs on every
calibrator that wraps a classifier. The metrics follow the same rule
(``_xp.assert_result_follows``) as an axis of the metric registry:
``test_array_api_agrees_with_numpy`` in ``tests/metrics/test_common.py``.
"""

import warnings

import numpy as np
import pytest
from _discovery import default_instance, scorer_names, single_label_estimator_classes
from _xp import (
    CASES,
    assert_close,
    case_id,
    import_namespace,
    namespace_for,
    same_namespace,
    to_np,
    to_xp,
)
from sklearn import config_context
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression

import skcalib
import skcalib.metrics

ESTIMATORS = [default_instance(cls) for cls in single_label_estimator_classes()]


def _name(obj):
    return type(obj).__name__


def _logits(n=300, k=3, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    return 2.0 * (rng.normal(size=(n, k)) + 1.5 * np.eye(k)[y]), y


def _quiet(func, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return func(*args, **kwargs)


@pytest.mark.parametrize("case", CASES, ids=case_id)
@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_name)
def test_estimator_follows_the_input_namespace(estimator, case):
    xp, device, dtype = namespace_for(case)
    logits, y = _logits()
    X = logits.astype(case[2])
    ref = _quiet(clone(estimator).fit, X, y)
    X_xp, y_xp = to_xp(X, xp, device, dtype), to_xp(y, xp, device)
    with config_context(array_api_dispatch=True):
        est = _quiet(clone(estimator).fit, X_xp, y_xp)
        proba = est.predict_proba(X_xp)
        labels = est.predict(X_xp)
        if hasattr(est, "predict_log_proba"):
            log_proba = est.predict_log_proba(X_xp)
            assert_close(xp.exp(log_proba), ref.predict_proba(X), case[2], "log")
    assert same_namespace(proba, xp) and same_namespace(labels, xp)
    assert proba.dtype == dtype
    assert_close(proba, ref.predict_proba(X), case[2], "predict_proba")
    agree = np.mean(to_np(labels) == ref.predict(X))
    assert agree == 1.0 or (case[2] == "float32" and agree > 0.99)
    for key, value in vars(ref).items():
        if isinstance(value, np.ndarray) and key.endswith("_") and key != "classes_":
            if value.dtype.kind in "biuf":
                assert same_namespace(getattr(est, key), xp), key


@pytest.mark.parametrize("case", CASES[:3], ids=case_id)
def test_conformal_sets_follow_the_input_namespace(case):
    xp, device, dtype = namespace_for(case)
    logits, y = _logits(n=400)
    ref = skcalib.ConformalClassifier().fit(logits, y)
    with config_context(array_api_dispatch=True):
        est = skcalib.ConformalClassifier().fit(to_xp(logits, xp, device, dtype), y)
        sets = est.predict_set(to_xp(logits, xp, device, dtype))
    assert same_namespace(sets, xp)
    np.testing.assert_array_equal(to_np(sets), ref.predict_set(logits))


def test_move_estimator_to_numpy_and_back():
    xp, device, dtype = namespace_for(("torch", "cpu", "float64"))
    logits, y = _logits()
    with config_context(array_api_dispatch=True):
        est = skcalib.VectorScalingCalibrator().fit(to_xp(logits, xp, device), y)
        on_device = est.predict_proba(to_xp(logits, xp, device))
    host = skcalib.move_estimator_to(est, np)
    assert isinstance(host.coef_, np.ndarray)
    assert not isinstance(est.coef_, np.ndarray)  # the original is unchanged
    np.testing.assert_allclose(host.predict_proba(logits), to_np(on_device))
    back = skcalib.move_estimator_to(host, xp, device)
    assert same_namespace(back.coef_, xp)


def test_without_dispatch_nothing_changes():
    torch = import_namespace("torch")
    logits, y = _logits()
    est = skcalib.TemperatureCalibrator().fit(torch.asarray(logits), torch.asarray(y))
    proba = est.predict_proba(torch.asarray(logits))
    assert isinstance(proba, np.ndarray)
    np.testing.assert_array_equal(
        proba, skcalib.TemperatureCalibrator().fit(logits, y).predict_proba(logits)
    )


# ---------------------------------------------------------------- scorers
#: skcalib's own scorers (get_scorer_names also lists scikit-learn's)
SCORERS = scorer_names()


@pytest.mark.parametrize("case", CASES[:4], ids=case_id)
@pytest.mark.parametrize("scorer", SCORERS)
def test_scorers_follow_the_input_namespace(scorer, case):
    xp, device, dtype = namespace_for(case)
    logits, y = _logits(n=400)
    X = logits.astype(case[2])
    est = skcalib.TemperatureCalibrator().fit(X, y)
    score = skcalib.metrics.get_scorer(scorer)
    expected = score(est, X, y)
    with config_context(array_api_dispatch=True):
        X_xp = to_xp(X, xp, device, dtype)
        est_xp = skcalib.TemperatureCalibrator().fit(X_xp, to_xp(y, xp, device))
        actual = score(est_xp, X_xp, to_xp(y, xp, device))
    assert isinstance(actual, float)
    assert_close(actual, expected, case[2], scorer)


# --------------------------------------------- scikit-learn's common check
def _wrapping_estimators():
    X, y = make_classification(n_samples=30, n_features=10, random_state=42)
    clf = LogisticRegression().fit(X, y)
    found = []
    for est in ESTIMATORS:
        if "estimator" in est.get_params() and "cv" not in est.get_params():
            found.append(clone(est).set_params(estimator=clf))
    return found


def _sklearn_cases():
    from sklearn.utils._array_api import yield_namespace_device_dtype_combinations

    return list(
        yield_namespace_device_dtype_combinations(include_numpy_namespaces=False)
    )


@pytest.mark.parametrize("case", _sklearn_cases(), ids=case_id)
@pytest.mark.parametrize("estimator", _wrapping_estimators(), ids=_name)
def test_sklearn_check_array_api_input(estimator, case):
    from sklearn.utils.estimator_checks import check_array_api_input

    namespace_for((case[0], None, "float64"))  # skips where dispatch cannot run
    check_array_api_input(
        _name(estimator),
        estimator,
        array_namespace=case[0],
        device_name=case[1],
        dtype_name=case[2],
        check_values=True,
    )
