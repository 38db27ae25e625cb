"""TemperatureCalibrator fitted and predicted on array-API inputs (torch CPU,
array-api-strict; CUDA where present), against the numpy path.

The namespace solver repeats the numpy iteration step for step, so its
temperature equals numpy's to 1e-10 (relative) on float64 scores, and to
1e-5 on float32 scores (computed in float32 on the device, in float64 by
numpy).
"""

import warnings

import numpy as np
import pytest
from _xp import CASES, assert_close, case_id, namespace_for, to_np, to_xp
from sklearn import config_context
from sklearn.exceptions import ConvergenceWarning

import skcalib._core.xp.solvers_temperature as xp_temperature
import skcalib._core.xp.weights as xp_weights
from skcalib import TemperatureCalibrator

#: Relative agreement of the temperatures, by the input dtype.
T_RTOL = {"float64": 1e-10, "float32": 1e-5}


def _logits(n=600, k=4, scale=3.0, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    return scale * (rng.normal(size=(n, k)) + np.eye(k)[y]), y


def _problem(kind):
    """``(X, y, sample_weight)`` of one kind of input, float64."""
    rng = np.random.default_rng(1)
    if kind == "binary_1d":
        y = rng.integers(0, 2, 500)
        return 4.0 * (rng.normal(size=500) + y - 0.5), y, None
    X, y = _logits()
    if kind == "probability":
        p = np.exp(X / 3.0)
        return p / p.sum(axis=1, keepdims=True), y, None
    if kind == "weighted":
        return X, y, rng.uniform(0.0, 3.0, y.size)
    if kind == "extreme":  # logits of +-1e4: the gaps are 2e4 or 0
        X = np.where(rng.random(X.shape) < 0.3, 1e4, -1e4)
        X[np.arange(y.size), y] = np.where(rng.random(y.size) < 0.7, 1e4, -1e4)
        return X, y, None
    if kind == "huge":  # gaps of 1e31: float32 logits computed in float64
        return 1e30 * X, y, None
    return X, y, None


def _fit_both(X, y, w, case, **params):
    xp, device, dtype = namespace_for(case)
    X = X.astype(case[2])
    ref = TemperatureCalibrator(**params).fit(X, y, sample_weight=w)
    with config_context(array_api_dispatch=True):
        est = TemperatureCalibrator(**params).fit(
            to_xp(X, xp, device, dtype),
            to_xp(y, xp, device),
            sample_weight=None if w is None else to_xp(w, xp, device),
        )
    return ref, est, X


@pytest.mark.parametrize("case", CASES, ids=case_id)
@pytest.mark.parametrize(
    "kind",
    ["multiclass", "binary_1d", "probability", "weighted", "extreme", "huge"],
)
def test_temperature_matches_numpy(kind, case):
    X, y, w = _problem(kind)
    ref, est, X = _fit_both(X, y, w, case)
    assert isinstance(est.temperature_, float) and isinstance(est.n_iter_, int)
    np.testing.assert_allclose(est.temperature_, ref.temperature_, rtol=T_RTOL[case[2]])
    assert est.score_type_ == ref.score_type_
    if case[2] == "float64":
        assert est.n_iter_ == ref.n_iter_
    xp, device, dtype = namespace_for(case)
    with config_context(array_api_dispatch=True):
        proba = est.predict_proba(to_xp(X, xp, device, dtype))
    assert proba.dtype == dtype
    assert_close(proba, ref.predict_proba(X), case[2], kind)


def test_probability_scores_are_read_as_probabilities():
    X, y, _ = _problem("probability")
    _, est, _ = _fit_both(X, y, None, CASES[0])
    assert est.score_type_ == "probability"
    # p = softmax(z / 3) of calibrated-times-3 logits: T is near 1.
    assert 0.8 < est.temperature_ < 1.25


@pytest.mark.parametrize("case", CASES[:4], ids=case_id)
def test_large_data_path_matches_numpy(case):
    # Beyond 200 000 rows: a first run on every 16th row, then a float32
    # first pass, as in numpy.
    X, y = _logits(n=210_000, k=3, seed=2)
    ref, est, _ = _fit_both(X, y, None, case)
    np.testing.assert_allclose(est.temperature_, ref.temperature_, rtol=T_RTOL[case[2]])
    if case[2] == "float64":
        assert est.n_iter_ == ref.n_iter_


@pytest.mark.parametrize("dtype_name", ["float16", "bfloat16"])
def test_half_precision_is_computed_in_float32(dtype_name):
    torch = namespace_for(("torch", "cpu", "float32"))[0]
    X, y = _logits(scale=2.0)
    X_half = torch.asarray(X, dtype=getattr(torch, dtype_name))
    X32 = X_half.to(torch.float32).numpy()  # the values the device computes with
    ref = TemperatureCalibrator().fit(X32, y)
    with config_context(array_api_dispatch=True):
        est = TemperatureCalibrator().fit(X_half, torch.asarray(y))
        proba = est.predict_proba(X_half)
    np.testing.assert_allclose(est.temperature_, ref.temperature_, rtol=1e-5)
    assert proba.dtype == torch.float32
    assert_close(proba, ref.predict_proba(X32), "float32")


@pytest.mark.parametrize("case", CASES[:4], ids=case_id)
def test_weight_scale_does_not_matter(case):
    X, y = _logits()
    _, plain, _ = _fit_both(X, y, None, case)
    for top in (1e308, 5e-324 * 2**10):
        _, est, _ = _fit_both(X, y, np.full(y.size, top), case)
        np.testing.assert_allclose(est.temperature_, plain.temperature_, rtol=1e-12)


@pytest.mark.parametrize("case", CASES[:4], ids=case_id)
def test_every_sample_right_stops_at_the_lower_bound(case):
    X = np.array([[3.0, 0.0, -1.0], [0.0, 2.0, 1.0], [0.0, 0.5, 4.0]] * 5)
    y = np.array([0, 1, 2] * 5)
    with pytest.warns(UserWarning, match="lower bound") as record:
        ref, est, _ = _fit_both(X, y, None, case)
    assert len(record) == 2  # numpy's fit and the namespace's
    np.testing.assert_allclose(est.temperature_, ref.temperature_, rtol=1e-6)
    assert est.temperature_ == pytest.approx(1e-4 * 4.0, rel=1e-6)  # widest row: 4


@pytest.mark.parametrize("case", CASES[:4], ids=case_id)
def test_constant_rows_give_temperature_one(case):
    X = np.full((20, 3), 5.0)
    y = np.arange(20) % 3
    ref, est, _ = _fit_both(X, y, None, case)
    assert (
        (est.temperature_, est.n_iter_) == (ref.temperature_, ref.n_iter_) == (1.0, 0)
    )


@pytest.mark.parametrize("case", CASES[:4:2], ids=case_id)
def test_max_iter_warns_as_numpy(case):
    X, y = _logits()
    with pytest.warns(ConvergenceWarning, match="max_iter=1"):
        ref, est, _ = _fit_both(X, y, None, case, max_iter=1)
    assert est.n_iter_ == ref.n_iter_ == 1
    np.testing.assert_allclose(est.temperature_, ref.temperature_, rtol=1e-10)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_numpy_fit_predicts_on_the_namespace(case):
    xp, device, dtype = namespace_for(case)
    X, y = _logits()
    X = X.astype(case[2])
    ref = TemperatureCalibrator().fit(X, y)
    with config_context(array_api_dispatch=True):
        proba = ref.predict_proba(to_xp(X, xp, device, dtype))
        labels = ref.predict(to_xp(X, xp, device, dtype))
    assert proba.dtype == dtype
    assert_close(proba, ref.predict_proba(X), case[2])
    np.testing.assert_array_equal(to_np(labels), ref.predict(X))


def test_only_scalars_cross_to_the_host(monkeypatch):
    xp, device, dtype = namespace_for(("torch", "cpu", "float64"))
    sizes = []
    to_numpy = xp_temperature.to_numpy

    def recording(array):
        sizes.append(int(np.prod(array.shape)))
        return to_numpy(array)

    monkeypatch.setattr(xp_temperature, "to_numpy", recording)
    monkeypatch.setattr(xp_weights, "to_numpy", recording)  # the weights' maximum
    X, y = _logits(n=5000)
    w = np.random.default_rng(3).uniform(0.5, 2.0, y.size)
    with config_context(array_api_dispatch=True):
        est = TemperatureCalibrator().fit(
            to_xp(X, xp, device),
            to_xp(y, xp, device),
            sample_weight=to_xp(w, xp, device),
        )
    assert max(sizes) <= 6
    # The weights' maximum, one summary, then one per pass.
    assert len(sizes) == 2 + est.n_iter_


def test_no_warning_on_a_regular_fit():
    xp, device, dtype = namespace_for(("array_api_strict", None, "float32"))
    X, y = _logits()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with config_context(array_api_dispatch=True):
            TemperatureCalibrator().fit(
                to_xp(X, xp, device, dtype), to_xp(y, xp, device)
            )
