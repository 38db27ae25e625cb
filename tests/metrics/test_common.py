"""Common tests of every public metric, in the style of scikit-learn's
``sklearn/metrics/tests/test_common.py``: a registry of the metrics (with
the options that change what they compute) crossed with the invariances that
every one of them promises, and with the agreement of the backends that
each supports (numpy, Dask arrays, :class:`~skcalib.metrics.CalibrationAccumulator`,
and the array-API namespaces of ``tests/_xp.py``: array-api-strict and
torch, CPU and CUDA, float64 and float32, as scikit-learn's
``test_array_api_compliance`` crosses its metrics with
``yield_namespace_device_dtype_combinations``).

Support is read from the code, not listed: a metric supports Dask when it
does not raise the documented ``TypeError`` ("needs in-memory arrays") on
Dask input, and the accumulator when it has a method of the metric's name
taking the registry entry's options (uniform bins only: the accumulator
sums into fixed edges). Every entry takes array-API inputs (its result in
the input's namespace, as ``_xp.assert_result_follows`` says) but those of
:data:`ARRAY_API_UNSUPPORTED`, each listed with its reason. The randomised
versions of the permutation and weight invariances are in
``tests/test_properties.py``.
"""

import dataclasses
import inspect
import warnings
from functools import partial

import numpy as np
import pytest
from _discovery import (
    every_metric_function,
    member_metric_functions,
    public_functions,
)
from _xp import CASES, assert_result_follows, case_id, namespace_for, to_xp
from sklearn import config_context

import skcalib.metrics as M

# ----------------------------------------------------------------- registry
#: name -> (function, options). Each option that changes what is computed
#: (bins, kind, norm, averaging, debiasing, loss) has an entry of its own.
PROBA_METRICS = {
    "smooth_ece": (M.smooth_calibration_error, {}),
    "smooth_ece_top_label": (M.smooth_calibration_error, {"kind": "top_label"}),
    "smooth_ece_classwise": (M.smooth_calibration_error, {"kind": "classwise"}),
    "smooth_curve": (M.smooth_reliability_curve, {}),
    "smooth_curve_classwise": (
        M.smooth_reliability_curve,
        {"kind": "classwise", "class_index": 1},
    ),
    "corp_brier": (M.corp_decomposition, {}),
    "corp_log_classwise": (
        M.corp_decomposition,
        {"score": "log", "kind": "classwise", "class_index": 1},
    ),
    "reliability_curve_isotonic": (
        M.reliability_curve,
        {"strategy": "isotonic", "kind": "classwise", "class_index": 1},
    ),
    "spiegelhalter_test": (M.spiegelhalter_test, {}),
    "hosmer_lemeshow_test": (M.hosmer_lemeshow_test, {}),
    "cumulative_test_ks": (M.cumulative_calibration_test, {}),
    "cumulative_test_kuiper": (M.cumulative_calibration_test, {"statistic": "kuiper"}),
    "ks_ce": (M.ks_calibration_error, {}),
    "ks_ce_top_label": (M.ks_calibration_error, {"kind": "top_label"}),
    "ks_ce_classwise": (M.ks_calibration_error, {"kind": "classwise"}),
    "kce": (M.kernel_calibration_error, {}),
    "kce_linear": (M.kernel_calibration_error, {"estimator": "linear"}),
    "kce_test": (M.kernel_calibration_test, {}),
    "kce_test_quadratic": (
        M.kernel_calibration_test,
        {"estimator": "quadratic", "n_resamples": 50, "random_state": 0},
    ),
    "kce_tv_biased": (
        M.kernel_calibration_error,
        {"estimator": "SKCE_b", "kernel": "tv", "bandwidth": "median_all"},
    ),
    "kce_test_tv_asymptotic_uq": (
        M.kernel_calibration_test,
        {
            "estimator": "SKCE_uq",
            "method": "asymptotic",
            "kernel": "tv",
            "n_resamples": 50,
            "random_state": 0,
        },
    ),
    "kce_test_distribution_free": (
        M.kernel_calibration_test,
        {"estimator": "biased", "method": "distribution_free"},
    ),
    "risk_coverage_curve": (M.risk_coverage_curve, {}),
    "risk_coverage_curve_brier": (M.risk_coverage_curve, {"loss": "brier"}),
    "aurc": (M.aurc, {}),
    "aurc_log_loss": (M.aurc, {"loss": "log_loss", "confidence": "negative_entropy"}),
    "excess_aurc": (M.excess_aurc, {}),
    "augrc": (M.augrc, {}),
    "augrc_brier_margin": (M.augrc, {"loss": "brier", "confidence": "margin"}),
    "mmce": (M.maximum_mean_calibration_error, {}),
    "mmce_squared_narrow": (
        M.maximum_mean_calibration_error,
        {"squared": True, "bandwidth": 0.05},
    ),
    "selective_risk": (M.selective_risk_at_coverage, {"coverage": 0.7}),
    "correctness_auroc": (M.correctness_auroc, {"confidence": "margin"}),
    "ece": (M.expected_calibration_error, {}),
    "ece_quantile": (M.expected_calibration_error, {"strategy": "quantile"}),
    "ece_top_label": (M.expected_calibration_error, {"kind": "top_label"}),
    "ece_classwise": (M.expected_calibration_error, {"kind": "classwise"}),
    "ece_classwise_rms": (
        M.expected_calibration_error,
        {"kind": "classwise", "average": "rms"},
    ),
    "ece_l2": (M.expected_calibration_error, {"norm": "l2"}),
    "ece_max": (M.expected_calibration_error, {"norm": "max"}),
    "ece_debiased": (M.expected_calibration_error, {"norm": "l2", "debias": True}),
    "mce": (M.maximum_calibration_error, {}),
    "mce_quantile": (M.maximum_calibration_error, {"strategy": "quantile"}),
    "mce_classwise": (M.maximum_calibration_error, {"kind": "classwise"}),
    "classwise_ce": (M.classwise_calibration_error, {}),
    "classwise_ce_quantile": (
        M.classwise_calibration_error,
        {"strategy": "quantile"},
    ),
    "classwise_ce_l2_debiased": (
        M.classwise_calibration_error,
        {"norm": "l2", "debias": True},
    ),
    "reliability_curve": (M.reliability_curve, {}),
    "reliability_curve_quantile": (M.reliability_curve, {"strategy": "quantile"}),
    "reliability_curve_classwise": (
        M.reliability_curve,
        {"kind": "classwise", "class_index": 1},
    ),
    "brier": (M.brier_score, {}),
    "nll": (M.negative_log_likelihood, {}),
    "ece_interval": (
        M.calibration_error_interval,
        {"n_resamples": 200, "random_state": 0},
    ),
    "refinement": (M.calibration_refinement_decomposition, {}),
    "refinement_brier_isotonic": (
        M.calibration_refinement_decomposition,
        {"loss": "brier", "recalibration": "isotonic"},
    ),
}
#: Set metrics: ``f(y_true, y_sets)`` or ``f(y_sets)``.
SET_METRICS = {
    "set_coverage": (M.set_coverage_score, True),
    "classwise_set_coverage": (M.classwise_set_coverage, True),
    "mean_set_size": (M.mean_set_size, False),
    "size_stratified_coverage": (M.size_stratified_coverage, True),
    "size_stratified_coverage_score": (M.size_stratified_coverage_score, True),
}
#: Metrics of a stack of ensemble members: ``f(stack, **options)``.
MEMBER_METRICS = {
    "uncertainty_decomposition": (M.uncertainty_decomposition, {"member_axis": 0}),
    "ensemble_proba": (M.ensemble_proba, {"member_axis": 0}),
}
#: Multi-label metrics: ``f(Y, P, **options)`` of an ``(n, L)`` indicator.
MULTILABEL_METRICS = {
    "ml_ece": (M.multilabel_calibration_error, {}),
    "ml_ece_micro": (M.multilabel_calibration_error, {"average": "micro"}),
    "ml_ece_weighted": (M.multilabel_calibration_error, {"average": "weighted"}),
    "ml_ece_per_label": (M.multilabel_calibration_error, {"average": None}),
    "ml_ece_quantile": (M.multilabel_calibration_error, {"strategy": "quantile"}),
    "ml_mce": (M.multilabel_calibration_error, {"norm": "max"}),
    "ml_brier": (M.multilabel_brier_score, {}),
    "ml_brier_weighted": (M.multilabel_brier_score, {"average": "weighted"}),
    "ml_nll_per_label": (M.multilabel_log_loss, {"average": None}),
    "ml_nll_micro": (M.multilabel_log_loss, {"average": "micro"}),
    "ml_curves": (M.multilabel_reliability_curve, {}),
    "ml_curves_quantile": (M.multilabel_reliability_curve, {"strategy": "quantile"}),
}
#: Public functions of skcalib.metrics that are not metrics of arrays.
NOT_METRICS = {
    "get_scorer",
    "get_scorer_names",
    "make_multilabel_scorer",
    "make_proba_scorer",
    "register_scorers",
    "unregister_scorers",
}

#: Result fields that count rows, not weight, by their documentation
#: (``n_samples`` ignores weights; ``lower``/``upper`` use Kish's effective
#: sample size): not compared between weights and repeated rows.
#: The CORP consistency band draws one outcome per row: a weight of 2 is not
#: two draws.
ROW_COUNT_FIELDS = {"n_samples", "lower", "upper", "band_lower", "band_upper"}
#: Result fields that are weight totals: they scale with the weights.
WEIGHT_TOTAL_FIELDS = {"counts"}
#: Debiased errors subtract a variance estimate with the effective sample
#: size ``(sum w)^2 / sum w^2``; repeated rows raise the row count instead.
COUNTS_ROWS = {"ece_debiased", "classwise_ce_l2_debiased"}
#: The bootstrap interval: unweighted, it resamples the counts of (bin,
#: outcome) groups (free of the row order: tested); weighted, it resamples
#: rows by position (a seed gives other draws to permuted rows), and a weight
#: of 2 is not a row that can be drawn twice.
RESAMPLES = {"ece_interval"}
#: Calibration tests read weights as relative (scaling them changes
#: nothing; variances use sum w^2), so an integer weight is not a repeated
#: row for their statistics and p-values.
RELATIVE_WEIGHTS = {
    "spiegelhalter_test",
    "hosmer_lemeshow_test",
    "cumulative_test_ks",
    "cumulative_test_kuiper",
}
#: The kernel calibration error refuses sample weights (a weighted pair mean
#: is not the metric of repeated rows, which pair with themselves).
NO_WEIGHTS = {
    "kce",
    "kce_linear",
    "kce_test",
    "kce_test_quadratic",
    "kce_tv_biased",
    "kce_test_tv_asymptotic_uq",
    "kce_test_distribution_free",
}
#: The linear kernel estimator pairs rows (2i, 2i+1) and the resampling test
#: draws labels row by row: both depend on the row order by design.
ORDER_DEPENDENT = {"kce_linear", "kce_test", "kce_test_quadratic"}
#: The isotonic (CORP) decomposition is binary: its entries get two classes.
BINARY_ONLY = {"refinement_brier_isotonic"}


# --------------------------------------------------------------------- data
def _data(k=3, n=300, seed=0):
    """Probabilities exactly representable in float32 (so that float32 and
    float64 input are the same numbers), labels drawn from them."""
    rng = np.random.default_rng(seed)
    Z = 2.0 * rng.normal(size=(n, k))
    P = np.exp(Z - Z.max(axis=1, keepdims=True))
    P = (P / P.sum(axis=1, keepdims=True)).astype(np.float32).astype(np.float64)
    y = (rng.uniform(size=(n, 1)) > np.cumsum(P, axis=1)).sum(axis=1)
    y = np.minimum(y, k - 1)
    y[:k] = np.arange(k)
    return y, P


def _data_for(name, n=300, seed=0):
    return _data(k=2 if name in BINARY_ONLY else 3, n=n, seed=seed)


def _call(name, y, P, **kw):
    func, options = PROBA_METRICS[name]
    if "class_index" in options and P.ndim == 1:
        options = {k: v for k, v in options.items() if k != "class_index"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return func(y, P, **options, **kw)


def _values(result, skip=(), per_weight=1.0):
    """A result as ``{field: value}`` (a float, an array, or the fields of
    a result dataclass but ``skip``; weight totals divided by ``per_weight``)."""
    if not dataclasses.is_dataclass(result):
        return {"value": result}
    out = {}
    for f in dataclasses.fields(result):
        if f.name not in skip:
            v = getattr(result, f.name)
            out[f.name] = (
                np.asarray(v) / per_weight if f.name in WEIGHT_TOTAL_FIELDS else v
            )
    return out


def assert_same_result(a, b, what, rtol=1e-10, atol=1e-12, skip=(), per_weight=1.0):
    va, vb = _values(a, skip), _values(b, skip, per_weight)
    assert va.keys() == vb.keys(), what
    for key, x in va.items():
        if isinstance(x, str) or x is None:
            assert vb[key] == x, f"{what}: {key}"
        else:
            np.testing.assert_allclose(
                np.asarray(vb[key], float),
                np.asarray(x, float),
                rtol=rtol,
                atol=atol,
                equal_nan=True,
                err_msg=f"{what}: {key}",
            )


def _tolerance(name):
    """Refinement fits a temperature by a solver: rtol 1e-7."""
    return {"rtol": 1e-7} if name.startswith("refinement") else {}


PROBA = pytest.mark.parametrize("name", sorted(PROBA_METRICS))


# -------------------------------------------------------------- invariances
def _permutation_cases():
    for name in sorted(PROBA_METRICS):
        for weighted in (False, True):
            wid = "weighted" if weighted else "unweighted"
            yield pytest.param(name, weighted, id=f"{name}-{wid}")


@pytest.mark.parametrize(("name", "weighted"), list(_permutation_cases()))
def test_row_permutation(name, weighted):
    if weighted and name in RESAMPLES:
        pytest.skip(f"{name}: weighted, the bootstrap draws rows by position")
    if name in ORDER_DEPENDENT or (weighted and name in NO_WEIGHTS):
        pytest.skip(f"{name}: depends on the row order, or takes no weights")
    y, P = _data_for(name)
    perm = np.random.default_rng(1).permutation(y.size)
    w = np.random.default_rng(2).uniform(0.5, 2.0, y.size) if weighted else None
    a = _call(name, y, P, sample_weight=w)
    b = _call(name, y[perm], P[perm], sample_weight=None if w is None else w[perm])
    assert_same_result(a, b, "rows permuted", **_tolerance(name))


@PROBA
def test_unit_weights_are_no_weights(name):
    if name in NO_WEIGHTS:
        pytest.skip(f"{name} refuses sample weights")
    y, P = _data_for(name)
    a = _call(name, y, P)
    b = _call(name, y, P, sample_weight=np.ones(y.size))
    assert_same_result(a, b, "sample_weight=ones", **_tolerance(name))


@PROBA
def test_integer_weights_are_repeated_rows(name):
    if name in RESAMPLES | COUNTS_ROWS | RELATIVE_WEIGHTS | NO_WEIGHTS:
        pytest.skip(f"{name}: the result counts rows by design")
    y, P = _data_for(name)
    w = np.random.default_rng(3).integers(0, 4, y.size)
    w[:3] = np.maximum(w[:3], 1)  # every class keeps a row
    a = _call(name, y, P, sample_weight=w.astype(float))
    b = _call(name, np.repeat(y, w), np.repeat(P, w, axis=0))
    assert_same_result(
        a, b, "weights vs rows", skip=ROW_COUNT_FIELDS, **_tolerance(name)
    )


@PROBA
@pytest.mark.parametrize("factor", [7.0, 1e-3])
def test_weight_scale(name, factor):
    if name in NO_WEIGHTS:
        pytest.skip(f"{name} refuses sample weights")
    y, P = _data_for(name)
    w = np.random.default_rng(4).uniform(0.5, 2.0, y.size)
    a = _call(name, y, P, sample_weight=w)
    b = _call(name, y, P, sample_weight=w * factor)
    assert_same_result(
        a, b, f"weights x {factor}", per_weight=factor, **_tolerance(name)
    )


@PROBA
def test_labels_given_equal_labels_inferred(name):
    y, P = _data_for(name)
    names = np.array(["ant", "bee", "cat"])[: P.shape[1]]
    a = _call(name, y, P)
    labels = np.arange(P.shape[1])
    assert_same_result(a, _call(name, y, P, labels=labels), "labels=[0, 1, ...]")
    b = _call(name, names[y], P, labels=names)
    assert_same_result(a, b, "string labels", **_tolerance(name))


@PROBA
def test_binary_1d_equals_2d(name):
    y, P = _data(k=2)
    p = P[:, 1]
    a = _call(name, y, p)
    b = _call(name, y, np.column_stack([1 - p, p]))
    assert_same_result(a, b, "1-D vs [1 - p, p]", **_tolerance(name))


@PROBA
def test_float32_close_to_float64(name):
    y, P = _data_for(name)
    a = _call(name, y, P)
    b = _call(name, y, P.astype(np.float32))
    assert_same_result(a, b, "float32", rtol=1e-5, atol=1e-6)


# ----------------------------------------------------------------- backends
def _dask_supported(name):
    """False when the metric raises the documented TypeError on Dask input."""
    da = pytest.importorskip("dask.array")
    y, P = _data_for(name, n=30)
    try:
        _call(name, da.from_array(y, chunks=10), da.from_array(P, chunks=(10, -1)))
    except TypeError as exc:
        assert "in-memory arrays" in str(exc), exc  # the documented refusal
        return False
    return True


@PROBA
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
def test_dask_agrees_with_numpy(name, weighted):
    if not _dask_supported(name):
        pytest.skip(f"{name} refuses Dask input (documented TypeError)")
    da = pytest.importorskip("dask.array")
    y, P = _data_for(name)
    w = np.random.default_rng(5).uniform(0.5, 2.0, y.size) if weighted else None
    kw = {} if w is None else {"sample_weight": da.from_array(w, chunks=100)}
    a = _call(name, y, P, **({} if w is None else {"sample_weight": w}))
    b = _call(
        name, da.from_array(y, chunks=100), da.from_array(P, chunks=(100, -1)), **kw
    )
    assert_same_result(a, b, "dask", rtol=1e-9, atol=1e-12)


def _accumulator_method(name):
    """The accumulator method computing this registry entry, or None."""
    return _accumulator_support(name)[0]


def _accumulator_support(name):
    """``(method, None)`` or ``(None, why not)``."""
    func, options = PROBA_METRICS[name]
    method = getattr(M.CalibrationAccumulator, func.__name__, None)
    if method is None:
        return None, f"CalibrationAccumulator has no {func.__name__}"
    if options.get("strategy", "uniform") != "uniform":
        return None, "CalibrationAccumulator sums into uniform bins"
    accepted = set(inspect.signature(method).parameters) - {"self"}
    if not set(options) <= accepted:
        return None, f"CalibrationAccumulator.{func.__name__} takes no {options}"
    return partial(method, **options), None


@PROBA
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
def test_accumulator_agrees_with_numpy(name, weighted):
    method, why_not = _accumulator_support(name)
    if method is None:
        pytest.skip(f"{name}: {why_not}")
    y, P = _data_for(name)
    w = np.random.default_rng(6).uniform(0.5, 2.0, y.size) if weighted else None
    acc = M.CalibrationAccumulator(labels=np.arange(P.shape[1]))
    for rows in np.array_split(np.arange(y.size), 3):
        acc.update(y[rows], P[rows], sample_weight=None if w is None else w[rows])
    a = _call(name, y, P, sample_weight=w)
    assert_same_result(a, method(acc), "accumulator, 3 chunks", rtol=1e-9, atol=1e-12)


def test_accumulator_and_dask_cover_the_uniform_binned_metrics():
    """Support read from the code is not empty: a backend that lost a
    metric must be noticed, not skipped."""
    assert {n for n in PROBA_METRICS if _accumulator_method(n)} >= {
        "ece",
        "mce",
        "classwise_ce",
        "reliability_curve",
        "brier",
        "nll",
    }
    assert {n for n in PROBA_METRICS if _dask_supported(n)} >= {
        "ece",
        "ece_quantile",
        "mce",
        "reliability_curve",
        "brier",
        "nll",
    }


# ------------------------------------------------------- multi-label metrics
def _multilabel_data(n=300, n_labels=4, seed=0):
    """Probabilities exactly representable in float32, labels drawn from
    them (every label present and absent)."""
    rng = np.random.default_rng(seed)
    P = rng.uniform(size=(n, n_labels)).astype(np.float32).astype(np.float64)
    Y = (rng.uniform(size=(n, n_labels)) < P).astype(int)
    Y[0], Y[1] = 1, 0
    return Y, P


def _same_multilabel(a, b, what, **kw):
    if isinstance(a, list):
        assert len(a) == len(b), what
        for j, (ca, cb) in enumerate(zip(a, b, strict=True)):
            assert_same_result(ca, cb, f"{what}, label {j}", **kw)
    else:
        assert_same_result(a, b, what, **kw)


MULTILABEL = pytest.mark.parametrize("name", sorted(MULTILABEL_METRICS))


@MULTILABEL
def test_multilabel_metric_invariances(name):
    func, options = MULTILABEL_METRICS[name]
    Y, P = _multilabel_data()
    w = np.random.default_rng(7).integers(0, 4, Y.shape[0])
    w[:2] = np.maximum(w[:2], 1)
    perm = np.random.default_rng(8).permutation(Y.shape[0])
    a = func(Y, P, **options)
    _same_multilabel(a, func(Y[perm], P[perm], **options), "rows permuted")
    ones = func(Y, P, sample_weight=np.ones(Y.shape[0]), **options)
    _same_multilabel(a, ones, "sample_weight=ones")
    b = func(Y, P, sample_weight=w.astype(float), **options)
    c = func(np.repeat(Y, w, axis=0), np.repeat(P, w, axis=0), **options)
    _same_multilabel(b, c, "weights vs rows", skip=ROW_COUNT_FIELDS)
    d = func(Y, P, sample_weight=7.0 * w, **options)
    _same_multilabel(b, d, "weights x 7", per_weight=7.0)
    e = func(Y, P.astype(np.float32), **options)
    _same_multilabel(a, e, "float32", rtol=1e-6, atol=1e-7)


@MULTILABEL
def test_multilabel_label_permutation(name):
    """Permuting the labels permutes the per-label results and leaves the
    averages as they are."""
    func, options = MULTILABEL_METRICS[name]
    Y, P = _multilabel_data(seed=1)
    cols = np.array([2, 0, 3, 1])
    a = func(Y, P, **options)
    b = func(Y[:, cols], P[:, cols], **options)
    if isinstance(a, list):
        a = [a[j] for j in cols]
    elif np.ndim(a):
        a = np.asarray(a)[cols]
    _same_multilabel(a, b, "labels permuted")


# -------------------------------------------------------------- set metrics
def _sets(k=3, n=300, seed=0):
    y, P = _data(k, n, seed)
    return y, P > 0.2


def _call_set(name, y, S, **kw):
    func, takes_y = SET_METRICS[name]
    return func(y, S, **kw) if takes_y else func(S, **kw)


SETS = pytest.mark.parametrize("name", sorted(SET_METRICS))


@SETS
def test_set_metric_invariances(name):
    y, S = _sets()
    w = np.random.default_rng(7).integers(0, 4, y.size)
    w[:3] = np.maximum(w[:3], 1)
    perm = np.random.default_rng(8).permutation(y.size)
    a = _call_set(name, y, S)
    assert_same_result(a, _call_set(name, y[perm], S[perm]), "rows permuted")
    assert_same_result(a, _call_set(name, y, S, sample_weight=np.ones(y.size)), "ones")
    b = _call_set(name, y, S, sample_weight=w.astype(float))
    c = _call_set(name, np.repeat(y, w), np.repeat(S, w, axis=0))
    assert_same_result(b, c, "weights vs rows")
    d = _call_set(name, y, S, sample_weight=7.0 * w)
    assert_same_result(b, d, "weights x 7", per_weight=7.0)
    if SET_METRICS[name][1]:
        assert_same_result(a, _call_set(name, y, S, labels=[0, 1, 2]), "labels")


@SETS
def test_set_metric_dask_agrees_with_numpy(name):
    da = pytest.importorskip("dask.array")
    y, S = _sets()
    a = _call_set(name, y, S)
    b = _call_set(
        name, da.from_array(y, chunks=100), da.from_array(S, chunks=(100, -1))
    )
    assert_same_result(a, b, "dask")


# ---------------------------------------------------------------- array API
#: Registry entries that take no array-API input, with the reason. None:
#: every metric either computes its totals on the device
#: (:mod:`skcalib.metrics._xp_metrics`) or moves its inputs to the host once
#: (``skcalib._core.xp.host_array_api``), and gives its result back in the
#: input's namespace.
ARRAY_API_UNSUPPORTED = {}

ARRAY_API_ENTRIES = sorted(PROBA_METRICS) + sorted(SET_METRICS) + sorted(MEMBER_METRICS)


def _registry_func(name):
    for registry in (PROBA_METRICS, SET_METRICS, MEMBER_METRICS):
        if name in registry:
            return registry[name][0]
    raise KeyError(name)


def _array_api_args(name, y, P):
    """The positional arrays of entry ``name`` on the data ``(y, P)``."""
    if name in SET_METRICS:
        return y, P > 0.2  # _call_set drops y where the metric takes none
    if name in MEMBER_METRICS:
        return (np.stack([P, P[::-1]]),)  # two members: P and its rows reversed
    return y, P


def _call_entry(name, *args, **kw):
    if name in SET_METRICS:
        return _call_set(name, *args, **kw)
    if name in MEMBER_METRICS:
        func, options = MEMBER_METRICS[name]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return func(*args, **options, **kw)
    return _call(name, *args, **kw)


def _takes_weights(name):
    params = inspect.signature(_registry_func(name)).parameters
    return "sample_weight" in params and name not in NO_WEIGHTS


@pytest.mark.parametrize("case", CASES, ids=case_id)
@pytest.mark.parametrize("name", ARRAY_API_ENTRIES)
def test_array_api_agrees_with_numpy(name, case):
    """Namespace inputs give numpy's result (``_xp.TOLERANCE`` by dtype) in
    the input's namespace, unweighted and, where the metric takes weights,
    weighted (the weights in the dtype of the probabilities)."""
    if name in ARRAY_API_UNSUPPORTED:
        pytest.skip(f"{name}: {ARRAY_API_UNSUPPORTED[name]}")
    xp, device, dtype = namespace_for(case)
    y, P = _data_for(name)
    args = _array_api_args(name, y, P.astype(case[2]))
    w = np.random.default_rng(9).uniform(0.5, 2.0, y.size).astype(case[2])
    for weights in (None, w) if _takes_weights(name) else (None,):
        kw = {} if weights is None else {"sample_weight": weights}
        expected = _call_entry(name, *args, **kw)
        xp_args = [to_xp(a, xp, device, dtype) for a in args]
        xp_kw = {k: to_xp(v, xp, device, dtype) for k, v in kw.items()}
        with config_context(array_api_dispatch=True):
            actual = _call_entry(name, *xp_args, **xp_kw)
        what = f"{name}, {'weighted' if kw else 'unweighted'}"
        assert_result_follows(actual, expected, xp, case[2], what)


# ------------------------------------------------------------- completeness
def test_registry_covers_every_public_metric():
    registered = {f for f, _ in PROBA_METRICS.values()}
    registered |= {f for f, _ in SET_METRICS.values()}
    registered |= {f for f, _ in MEMBER_METRICS.values()}
    registered |= {f for f, _ in MULTILABEL_METRICS.values()}
    discovered = set(every_metric_function())
    assert discovered - registered == set()
    assert {M.set_coverage_score, M.classwise_set_coverage} <= discovered
    members = {M.uncertainty_decomposition, M.ensemble_proba}
    assert set(member_metric_functions()) == members


def test_every_public_function_is_a_discovered_metric_or_a_scorer_tool():
    """A new metric whose arguments are none of the three kinds would be
    missed by the discovery: it must be seen here, not skipped."""
    metrics = {f.__name__ for f in every_metric_function()}
    public = {f.__name__ for f in public_functions(M)}
    assert public - metrics == NOT_METRICS
