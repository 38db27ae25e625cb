"""The metrics and fits of Spark DataFrames equal the in-memory ones.

The built-in CIFAR-10 predictions (10000 rows, 10 classes) and the airlines
predictions (binary) as DataFrames of 8 partitions, and the same rows under
a random repartition (hash of a seeded ``rand()``: other partitions, other
row order); every metric is compared with the numpy function on the same
numbers to 1e-12 (only the order of the float64 additions changes), every
fit to its solver's tolerance. Slow: each pass is a Spark job on
``local[2,2]`` (the session of ``conftest.py``).
"""

import numpy as np
import pytest

pytestmark = pytest.mark.slow

from skcalib import (  # noqa: E402
    DirichletCalibrator,
    HistogramBinningCalibrator,
    IsotonicCalibrator,
    MatrixScalingCalibrator,
    PlattCalibrator,
    TemperatureCalibrator,
    VectorScalingCalibrator,
)
from skcalib.cluster import spark_columns  # noqa: E402
from skcalib.datasets import load_predictions  # noqa: E402
from skcalib.metrics import (  # noqa: E402
    CalibrationAccumulator,
    brier_score,
    classwise_calibration_error,
    expected_calibration_error,
    maximum_calibration_error,
    negative_log_likelihood,
    reliability_curve,
)

TOL = 1e-12
K = 10
P = [f"p{k}" for k in range(K)]
Z = [f"z{k}" for k in range(K)]


def _cifar():
    d = load_predictions("cifar10_wideresnet")
    p = d.probs.astype(np.float64)
    p /= p.sum(axis=1, keepdims=True)
    w = np.random.default_rng(3).integers(0, 4, p.shape[0]).astype(float)
    z = np.log(np.clip(p, 1e-12, None))
    return d.labels, p, w, z


@pytest.fixture(scope="module")
def data():
    return _cifar()


@pytest.fixture(scope="module", params=["8 partitions", "random repartition"])
def frame(request, spark, data):
    """The CIFAR-10 rows as a cached DataFrame of 8 partitions (round-robin,
    or by a hash of a seeded rand(): rows in other partitions and order)."""
    import pandas as pd
    from pyspark.sql import functions as F

    y, p, w, z = data
    pdf = pd.DataFrame({"y": y, "w": w})
    for k in range(K):
        pdf[P[k]], pdf[Z[k]] = p[:, k], z[:, k]
    pdf["arr"] = list(p)
    df = spark.createDataFrame(pdf)
    if request.param == "8 partitions":
        df = df.repartition(8)
    else:
        df = df.repartition(8, F.rand(seed=11))
    df = df.cache()
    assert df.rdd.getNumPartitions() == 8
    yield df
    df.unpersist()


ECE_CASES = [
    dict(kind=kind, norm=norm, strategy=strategy)
    for kind in ("confidence", "top_label", "classwise")
    for norm in ("l1", "l2", "max")
    for strategy in ("uniform", "quantile")
]


@pytest.mark.parametrize("case", ECE_CASES, ids=lambda c: "-".join(c.values()))
def test_ece_family_equals_numpy(frame, data, case):
    y, p, w, _ = data
    weighted = case["norm"] == "l2"  # weights on a third of the cases
    handles = spark_columns(frame, label="y", proba=P, weight="w" if weighted else None)
    args = dict(n_bins=15, sample_weight=handles[2] if weighted else None, **case)
    got = expected_calibration_error(handles[0], handles[1], **args)
    args["sample_weight"] = w if weighted else None
    assert got == pytest.approx(expected_calibration_error(y, p, **args), abs=TOL)


def test_mce_classwise_brier_nll_equal_numpy(frame, data):
    y, p, w, _ = data
    yy, pp, ww = spark_columns(frame, label="y", proba="arr", weight="w")
    for f, kw in [
        (maximum_calibration_error, dict(strategy="quantile", n_bins=10)),
        (classwise_calibration_error, dict(debias=True, norm="l2")),
        (expected_calibration_error, dict(debias=True, norm="l2")),
    ]:
        assert f(yy, pp, **kw) == pytest.approx(f(y, p, **kw), abs=TOL)
    for f in (brier_score, negative_log_likelihood):
        assert f(yy, pp) == pytest.approx(f(y, p), abs=TOL)
        got = f(yy, pp, sample_weight=ww)
        assert got == pytest.approx(f(y, p, sample_weight=w), abs=TOL)


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_reliability_curve_equals_numpy(frame, data, strategy):
    y, p, w, _ = data
    yy, pp, ww = spark_columns(frame, label="y", proba=P, weight="w")
    args = dict(n_bins=12, strategy=strategy, kind="top_label", class_index=3)
    got = reliability_curve(yy, pp, sample_weight=ww, **args)
    ref = reliability_curve(y, p, sample_weight=w, **args)
    for field in ("edges", "mean_confidence", "accuracy", "counts", "lower", "upper"):
        np.testing.assert_allclose(
            getattr(got, field), getattr(ref, field), atol=TOL, err_msg=field
        )


def test_accumulator_equals_numpy(frame, data):
    y, p, w, _ = data
    yy, pp, ww = spark_columns(frame, label="y", proba=P, weight="w")
    got = CalibrationAccumulator(n_bins=15, classwise=True).update(yy, pp, ww)
    ref = CalibrationAccumulator(n_bins=15, classwise=True).update(y, p, w)
    assert got.n_samples_ == ref.n_samples_ == y.size
    for kind in ("confidence", "top_label", "classwise"):
        assert got.expected_calibration_error(kind=kind) == pytest.approx(
            ref.expected_calibration_error(kind=kind), abs=TOL
        )
    assert got.brier_score() == pytest.approx(ref.brier_score(), abs=TOL)


def test_binary_float32_column(spark):
    """One column of float32 positive-class probabilities (airlines): the
    float32 radix search of the quantile edges, and 1-D binary input."""
    d = load_predictions("airlines_catboost")
    p1, y = d.probs[:, 1], d.labels
    import pandas as pd

    df = spark.createDataFrame(pd.DataFrame({"label": y, "p": p1})).repartition(8)
    yy, pp = spark_columns(df, label="label", proba="p")
    assert pp.dtype == np.float32
    for strategy in ("uniform", "quantile"):
        got = expected_calibration_error(yy, pp, strategy=strategy, n_bins=20)
        ref = expected_calibration_error(y, p1, strategy=strategy, n_bins=20)
        assert got == pytest.approx(ref, abs=TOL)
    assert brier_score(yy, pp) == pytest.approx(brier_score(y, p1), abs=TOL)


# ------------------------------------------------------------------- fits
FITS = [
    (TemperatureCalibrator, {}, 1e-8),
    (VectorScalingCalibrator, {}, 1e-6),
    (MatrixScalingCalibrator, {"reg_lambda": 1.0}, 1e-6),
    (DirichletCalibrator, {"reg_lambda": 1.0}, 1e-6),
    (HistogramBinningCalibrator, {"n_bins": 10}, 1e-10),
    (IsotonicCalibrator, {}, 1e-10),
]


@pytest.mark.parametrize(
    "make, params, atol", FITS, ids=lambda v: getattr(v, "__name__", "")
)
def test_fit_equals_in_memory_and_predict_is_a_dataframe(
    frame, data, make, params, atol
):
    y, _, w, z = data
    yy, X, ww = spark_columns(frame, label="y", proba=Z, weight="w")
    got = make(**params).fit(X, yy, sample_weight=ww)
    ref = make(**params).fit_chunks(
        [(z[:5000], y[:5000], w[:5000]), (z[5000:], y[5000:], w[5000:])]
    )
    out = got.predict_proba(X)
    assert type(out).__name__ == "DataFrame"
    names = [f"proba_{c}" for c in got.classes_]
    assert out.columns == frame.columns + names
    rows = out.select(*Z, *names).limit(500).toPandas()
    zz = rows[Z].to_numpy()
    np.testing.assert_allclose(rows[names].to_numpy(), ref.predict_proba(zz), atol=atol)
    pred = got.predict(X).select(*Z, "prediction").limit(200).toPandas()
    np.testing.assert_array_equal(pred["prediction"], ref.predict(pred[Z].to_numpy()))


def test_temperature_equals_fit(frame, data):
    y, _, _, z = data
    yy, X = spark_columns(frame, label="y", proba=Z)
    got = TemperatureCalibrator().fit(X, yy).temperature_
    assert got == pytest.approx(
        TemperatureCalibrator().fit(z, y).temperature_, rel=2e-8
    )


def test_platt_binary(spark):
    d = load_predictions("airlines_catboost")
    s = np.log(d.probs[:, 1].astype(float)) - np.log(d.probs[:, 0].astype(float))
    import pandas as pd

    df = spark.createDataFrame(pd.DataFrame({"y": d.labels, "s": s})).repartition(8)
    yy, X = spark_columns(df, label="y", proba="s")
    got = PlattCalibrator().fit(X, yy)
    ref = PlattCalibrator().fit(s, d.labels)
    np.testing.assert_allclose(got.coef_, ref.coef_, rtol=1e-6)
    np.testing.assert_allclose(got.intercept_, ref.intercept_, rtol=1e-6, atol=1e-8)
