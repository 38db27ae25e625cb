"""Fitted in one array namespace, called in another (issue 30, item 5).

The rule, the same for every public estimator (discovered by
``tests/_discovery.py``): a call computes where its input is. With
``array_api_dispatch=True`` and ``X`` of another array-API library, the
result is in ``X``'s namespace (the fitted arrays are brought there for the
call); otherwise (numpy ``X``, or dispatch off) the result is numpy, computed
by a numpy copy of the estimator. Either way the numbers are those of the
numpy fit, and the estimator itself is unchanged.

Before, fitting on torch and predicting on numpy raised ``AttributeError:
'Tensor' object has no attribute 'astype'`` (vector, matrix, Dirichlet, the
CV forms, ``PriorShiftAdapter``), numpy's concatenation ``TypeError``
(bias-corrected temperature), ``TypeError`` (``CrossConformalClassifier``);
fitting on array-api-strict then predicting on numpy (or on torch without
dispatch) raised ``TypeError: object of type 'Array' has no len()`` in 17 of
20 estimators.
"""

import warnings

import numpy as np
import pytest
from _discovery import default_instance, single_label_estimator_classes
from _xp import dispatch_reason, to_np
from sklearn import config_context
from sklearn.base import clone

import skcalib

ESTIMATORS = [default_instance(cls) for cls in single_label_estimator_classes()]

#: (namespace of fit, namespace of the call)
PAIRS = [
    ("torch", "numpy"),
    ("numpy", "torch"),
    ("array_api_strict", "numpy"),
    ("numpy", "array_api_strict"),
    ("array_api_strict", "torch"),
    ("torch", "array_api_strict"),
]


def _module(name):
    reason = dispatch_reason()
    if reason:
        pytest.skip(reason)
    return pytest.importorskip(name)


def _to(name, array):
    if name == "numpy":
        return array
    xp = _module(name)
    if name == "array_api_strict":
        return xp.asarray(array, device=xp.Device("CPU_DEVICE"))
    return xp.asarray(array)


def _namespace_of(result):
    module = type(result).__module__.partition(".")[0]
    return {"numpy": "numpy", "torch": "torch"}.get(module, module)


def _data(n=300, k=3, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    return 2.0 * (rng.normal(size=(n, k)) + 1.5 * np.eye(k)[y]), y


def _outputs(est, X):
    out = {"predict_proba": est.predict_proba(X), "predict": est.predict(X)}
    if hasattr(est, "predict_set"):
        out["predict_set"] = est.predict_set(X)
    return out


def _name(est):
    return type(est).__name__


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_name)
def test_fitted_in_one_namespace_called_in_another(estimator):
    for name in {n for pair in PAIRS for n in pair} - {"numpy"}:
        _module(name)
    X, y = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = _outputs(clone(estimator).fit(X, y), X)
        for fit_ns, call_ns in PAIRS:
            with config_context(array_api_dispatch=True):
                est = clone(estimator).fit(_to(fit_ns, X), _to(fit_ns, y))
            for dispatch in (True, False):
                with config_context(array_api_dispatch=dispatch):
                    out = _outputs(est, _to(call_ns, X))
                expected_ns = call_ns if dispatch else "numpy"
                case = f"fit {fit_ns}, call {call_ns}, dispatch={dispatch}"
                for method, value in out.items():
                    what = f"{_name(estimator)}.{method}: {case}"
                    assert _namespace_of(value) == expected_ns, what
                    if method == "predict_proba":
                        np.testing.assert_allclose(
                            to_np(value), ref[method], rtol=1e-9, atol=1e-9,
                            err_msg=what,
                        )  # fmt: skip
                    else:
                        np.testing.assert_array_equal(
                            to_np(value), ref[method], err_msg=what
                        )


def test_the_estimator_is_not_changed_by_a_call_in_another_namespace():
    torch = _module("torch")
    X, y = _data()
    with config_context(array_api_dispatch=True):
        est = skcalib.VectorScalingCalibrator().fit(torch.asarray(X), y)
    before = est.coef_.clone()
    proba = est.predict_proba(X)
    assert isinstance(proba, np.ndarray)
    assert isinstance(est.coef_, torch.Tensor)
    assert torch.equal(est.coef_, before)
    np.testing.assert_allclose(
        proba, skcalib.move_estimator_to(est, np).predict_proba(X)
    )
