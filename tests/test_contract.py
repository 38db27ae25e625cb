"""The calibrator contract: one test over every discovered calibrator.

Every public calibrator (``tests/_discovery.py``: the classes of
``skcalib.__all__``, with one configuration per option of ``strategy`` and
``method``) must keep each promise below on fixed data. A promise that does
not apply to a configuration is skipped with the name of the
``_discovery`` rule that says why (rows split by ``cv``, weights that are
counts by design, scores that are features of a plain classifier, a
scikit-learn that cannot fit float32). The randomised versions of the
weight, permutation and 1-D/2-D promises are in ``test_properties.py``;
this test is their deterministic floor and adds what they do not cover:
pickle, Pipeline, clone/get_params/set_params and wrapper mode.
"""

import pickle
import warnings

import numpy as np
import pytest
from _data import classification_split, multiclass_logits
from _discovery import (
    calibrator_configs,
    fit_jumps_with_the_data,
    inner_model_refuses_float32,
    iterative,
    order_dependent,
    outputs,
    piecewise_constant,
    score_calibrator_classes,
    scores_as_features,
    takes_features,
    uses_randomness,
    weight_scale_dependent,
    weights_are_counts,
)
from sklearn.base import BaseEstimator, clone
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer
from sklearn.utils.validation import check_is_fitted

CONFIGS = calibrator_configs()

#: Two fits of the same problem by an exact method (closed form, sorting):
#: float64 round-off of sums taken in another order.
EXACT_ATOL = 1e-9
#: Two fits of the same problem by a solver stopped at a tolerance.
ITER_ATOL = 1e-5
#: float32 against float64 scores: float32 round-off (eps 1.2e-7) of scores
#: of size ~10, through a smooth map.
FLOAT32_ATOL = 1e-5
#: For maps that are steps in their input or in the training scores, a
#: float32 score may cross a step: most rows, not all, must agree.
FLOAT32_ROWS = 0.95


def _atol(est):
    return ITER_ATOL if iterative(est) else EXACT_ATOL


def _data(k=3, n=150, seed=3):
    """Logits, labels with every class >= 5 times in the first rows (3-fold
    ``cv`` keeps every class in each split), and test logits."""
    Z, y = multiclass_logits(n + 40, k, scale=1.5, seed=seed)
    y[: 5 * k] = np.arange(5 * k) % k
    return Z[:n], y[:n], Z[n:]


def _fit(est, X, y, sample_weight=None):
    kw = {} if sample_weight is None else {"sample_weight": sample_weight}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(X, y, **kw)


def _assert_same(a, b, atol, what):
    assert a.keys() == b.keys()
    np.testing.assert_allclose(b["proba"], a["proba"], rtol=0, atol=atol, err_msg=what)
    if "set" in a and atol <= EXACT_ATOL:
        np.testing.assert_array_equal(b["set"], a["set"], err_msg=what)


def _skip_unless(ok, config, rule):
    if not ok:
        pytest.skip(f"{config.id}: does not apply ({rule})")


# ----------------------------------------------------------------- promises
def integer_weights(config):
    """Integer weights (0 included) == rows repeated that many times."""
    _skip_unless(not order_dependent(config), config, "order_dependent")
    Z, y, T = _data()
    w = np.random.default_rng(1).integers(0, 4, y.size)
    w[:15] = np.maximum(w[:15], 1)
    weighted = _fit(config.build(), Z, y, w.astype(float))
    repeated = _fit(config.build(), np.repeat(Z, w, axis=0), np.repeat(y, w))
    _assert_same(outputs(repeated, T), outputs(weighted, T), _atol(weighted), "weights")


def weight_scale(config):
    """Weights times a constant == the weights, where fit rescales them."""
    est = config.build()
    _skip_unless(not weights_are_counts(est), config, "weights_are_counts")
    _skip_unless(not weight_scale_dependent(est), config, "weight_scale_dependent")
    Z, y, T = _data()
    w = np.random.default_rng(2).uniform(0.5, 2.0, y.size)
    a = outputs(_fit(config.build(), Z, y, w), T)
    for factor in (7.0, 1e-3):
        b = outputs(_fit(config.build(), Z, y, w * factor), T)
        _assert_same(a, b, _atol(est), f"weights x {factor}")


def row_permutation(config):
    """Rows permuted before fit: the same fitted map."""
    _skip_unless(not order_dependent(config), config, "order_dependent")
    Z, y, T = _data()
    perm = np.random.default_rng(4).permutation(y.size)
    a = _fit(config.build(), Z, y)
    b = _fit(config.build(), Z[perm], y[perm])
    _assert_same(outputs(a, T), outputs(b, T), _atol(a), "rows permuted")


def _binary(config, kind):
    _skip_unless(not scores_as_features(config.build()), config, "scores_as_features")
    Z, y, T = _data(k=2)
    s, t = Z[:, 1] - Z[:, 0], T[:, 1] - T[:, 0]
    if kind == "probability":
        s, t = 1 / (1 + np.exp(-s)), 1 / (1 + np.exp(-t))
        two = lambda x: np.column_stack([1 - x, x])  # noqa: E731
    else:
        two = lambda x: np.column_stack([np.zeros_like(x), x])  # noqa: E731
    a = _fit(config.build(), s, y)
    b = _fit(config.build(), two(s), y)
    _assert_same(outputs(a, t), outputs(b, two(t)), _atol(a), f"1-D vs 2-D {kind}")
    if kind == "logit":  # one column is the 1-D array, bit for bit
        c = _fit(config.build(), s[:, None], y)
        _assert_same(outputs(a, t), outputs(c, t[:, None]), 0.0, "1-D vs 1 column")


def binary_1d_logit(config):
    """1-D binary logits ``s`` == two columns ``[0, s]`` == one column ``s``."""
    _binary(config, "logit")


def binary_1d_probability(config):
    """1-D binary probabilities ``p`` == two columns ``[1 - p, p]``."""
    _binary(config, "probability")


def float32_input(config):
    """float32 scores: float32 probabilities close to the float64 ones."""
    est = config.build()
    _skip_unless(
        not inner_model_refuses_float32(est), config, "inner_model_refuses_float32"
    )
    Z, y, T = _data()
    a = outputs(_fit(config.build(), Z, y), T)["proba"]
    b = outputs(_fit(config.build(), Z.astype(np.float32), y), T.astype(np.float32))
    assert b["proba"].dtype == np.float32
    close = np.isclose(b["proba"], a, rtol=0, atol=FLOAT32_ATOL).all(axis=1)
    if piecewise_constant(config) or fit_jumps_with_the_data(config):
        assert close.mean() >= FLOAT32_ROWS, f"{close.mean():.1%} rows agree"
    else:
        np.testing.assert_allclose(b["proba"], a, rtol=0, atol=FLOAT32_ATOL)


def pickle_round_trip(config):
    """A fitted calibrator survives pickle with bit-identical outputs."""
    Z, y, T = _data()
    est = _fit(config.build(), Z, y)
    again = pickle.loads(pickle.dumps(est))
    a, b = outputs(est, T), outputs(again, T)
    for key in a:
        np.testing.assert_array_equal(b[key], a[key])


def in_pipeline(config):
    """Last step of a Pipeline: the same outputs as on its own."""
    Z, y, T = _data()
    pipe = _fit(make_pipeline(FunctionTransformer(), config.build()), Z, y)
    alone = _fit(config.build(), Z, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_array_equal(pipe.predict_proba(T), alone.predict_proba(T))
        np.testing.assert_array_equal(pipe.predict(T), alone.predict(T))
    assert list(pipe.classes_) == list(alone.classes_)


def _same_params(a, b):
    assert a.keys() == b.keys()
    for key, value in a.items():
        if isinstance(value, BaseEstimator):
            assert type(b[key]) is type(value)
            assert b[key].get_params() == value.get_params()
        else:
            assert b[key] == value or (b[key] is None and value is None), key


def clone_and_params(config):
    """clone: same parameters, not fitted, fits to the same outputs;
    ``set_params(**get_params())`` is a no-op that returns the estimator."""
    Z, y, T = _data()
    est = _fit(config.build(), Z, y)
    twin = clone(est)
    _same_params(est.get_params(deep=False), twin.get_params(deep=False))
    with pytest.raises(NotFittedError):
        check_is_fitted(twin)
    assert twin.set_params(**twin.get_params(deep=False)) is twin
    _same_params(est.get_params(deep=False), twin.get_params(deep=False))
    exact = 0.0 if not uses_randomness(config) else EXACT_ATOL
    _assert_same(outputs(est, T), outputs(_fit(twin, Z, y), T), exact, "clone")


def wrapper_mode(config):
    """``estimator=clf`` (prefit) == scores mode on the scores of ``clf``,
    with the score type that wrapper mode resolved; clone keeps ``clf``."""
    _skip_unless(not takes_features(config.cls), config, "takes_features")
    X_fit, y_fit, X_cal, y_cal = classification_split(200, 190, seed=1)
    y_cal[:15] = np.arange(15) % 3
    clf = LogisticRegression().fit(X_fit, y_fit)
    wrapped = _fit(config.build(estimator=clf), X_cal[:150], y_cal[:150])
    method = getattr(clf, wrapped._response_method())
    extra = {}
    if "score_type" in wrapped.get_params():
        extra["score_type"] = wrapped.score_type_
    raw = _fit(config.build(**extra), method(X_cal[:150]), y_cal[:150])
    assert clone(wrapped).estimator is clf  # the prefit model is kept, not refit
    _assert_same(
        outputs(raw, method(X_cal[150:])), outputs(wrapped, X_cal[150:]), 1e-12, "wrap"
    )


PROMISES = [
    integer_weights,
    weight_scale,
    row_permutation,
    binary_1d_logit,
    binary_1d_probability,
    float32_input,
    pickle_round_trip,
    in_pipeline,
    clone_and_params,
    wrapper_mode,
]


@pytest.mark.parametrize("promise", PROMISES, ids=lambda f: f.__name__)
@pytest.mark.parametrize("config", CONFIGS, ids=[c.id for c in CONFIGS])
def test_calibrator_contract(config, promise):
    promise(config)


def test_discovery_finds_every_public_calibrator():
    public = {cls.__name__ for cls in score_calibrator_classes()}
    assert public <= {c.cls.__name__ for c in CONFIGS}
