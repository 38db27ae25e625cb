"""Array-API inputs (torch, array-api-strict; CUDA where present) through
every public estimator and every metric, with ``array_api_dispatch=True``.

Every estimator of ``skcalib.__all__`` and every metric of
``skcalib.metrics.__all__`` is discovered, not hand-listed: a new one is
tested as soon as it is public. Each gives, from namespace inputs, results in
the input's namespace (and device) equal to its numpy results within
``_xp.TOLERANCE``, and its fitted array attributes live in the input's
namespace. scikit-learn's own ``check_array_api_input`` runs on every
calibrator that wraps a classifier.
"""

import dataclasses
import inspect
import warnings

import numpy as np
import pytest
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
from sklearn.base import BaseEstimator, clone
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression

import skcalib
import skcalib.metrics

ESTIMATORS = [
    getattr(skcalib, name)()
    for name in skcalib.__all__
    if inspect.isclass(getattr(skcalib, name))
    and issubclass(getattr(skcalib, name), BaseEstimator)
]


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


# ---------------------------------------------------------------- metrics
def _sets(y_proba):
    return y_proba >= 0.2


def _member_stack(y_proba):
    """Two ensemble members: the probabilities and their rows reversed."""
    from sklearn.externals import array_api_compat

    xp = array_api_compat.array_namespace(y_proba)
    return xp.stack([y_proba, xp.flip(y_proba, axis=0)])


#: Metrics whose arguments are not ``(y_true, y_proba)``: name -> a function
#: of ``(y, proba)`` giving ``(args, kwargs)``; a new metric with other
#: arguments must be registered here (the test says so).
CALLS = {
    "set_coverage_score": lambda y, p: ((y, _sets(p)), {}),
    "mean_set_size": lambda y, p: ((_sets(p),), {}),
    "classwise_set_coverage": lambda y, p: ((y, _sets(p)), {}),
    "size_stratified_coverage": lambda y, p: ((y, _sets(p)), {}),
    "size_stratified_coverage_score": lambda y, p: ((y, _sets(p)), {}),
    "calibration_error_interval": lambda y, p: ((y, p), {"random_state": 0}),
    "uncertainty_decomposition": lambda y, p: ((_member_stack(p),), {"member_axis": 0}),
    "ensemble_proba": lambda y, p: ((_member_stack(p),), {"member_axis": 0}),
}

#: Public callables of skcalib.metrics that are not metrics of arrays.
NOT_METRICS = {
    "get_scorer",
    "get_scorer_names",
    "make_proba_scorer",
    "register_scorers",
    "unregister_scorers",
}


def _metric_names():
    names = []
    for name in skcalib.metrics.__all__:
        obj = getattr(skcalib.metrics, name)
        if name in NOT_METRICS or inspect.isclass(obj) or not callable(obj):
            continue
        if not inspect.isfunction(inspect.unwrap(obj)):
            continue  # ready-made scorer objects: test_scorers_...
        names.append(name)
    return names


def _call(name, y, proba):
    func = getattr(skcalib.metrics, name)
    if name in CALLS:
        args, kwargs = CALLS[name](y, proba)
    else:
        params = list(inspect.signature(func).parameters)
        assert params[:2] == ["y_true", "y_proba"], (
            f"{name} takes {params[:2]}: register how to call it in CALLS"
        )
        args, kwargs = (y, proba), {}
    return _quiet(func, *args, **kwargs)


def _compare(actual, expected, xp, dtype_name, what):
    if isinstance(expected, np.ndarray):
        if expected.dtype.kind in "OUS":
            return
        assert same_namespace(actual, xp), what
        assert_close(actual, expected, dtype_name, what)
    elif isinstance(expected, (float, np.floating)):
        assert isinstance(actual, float), f"{what}: {type(actual)}"
        assert_close(actual, expected, dtype_name, what)
    elif dataclasses.is_dataclass(expected):
        for field in dataclasses.fields(expected):
            _compare(
                getattr(actual, field.name),
                getattr(expected, field.name),
                xp,
                dtype_name,
                f"{what}.{field.name}",
            )
    elif isinstance(expected, tuple):
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            _compare(a, e, xp, dtype_name, f"{what}[{i}]")


@pytest.mark.parametrize("case", CASES, ids=case_id)
@pytest.mark.parametrize("name", _metric_names())
def test_metric_follows_the_input_namespace(name, case):
    xp, device, dtype = namespace_for(case)
    logits, y = _logits(n=500)
    proba = skcalib.TemperatureCalibrator().fit(logits, y).predict_proba(logits)
    proba = proba.astype(case[2])
    expected = _call(name, y, proba)
    with config_context(array_api_dispatch=True):
        actual = _call(name, to_xp(y, xp, device), to_xp(proba, xp, device, dtype))
    _compare(actual, expected, xp, case[2], name)


#: skcalib's own scorers (get_scorer_names also lists scikit-learn's)
SCORERS = [
    name
    for name in skcalib.metrics.get_scorer_names()
    if isinstance(skcalib.metrics.get_scorer(name), skcalib.metrics.ProbaScorer)
]


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
