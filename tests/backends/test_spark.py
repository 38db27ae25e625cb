"""The metrics and fits of Spark DataFrames equal the in-memory ones.

The built-in CIFAR-10 predictions (10000 rows, 10 classes) and the airlines
predictions (binary) as DataFrames of 8 partitions, and the same rows under
a random repartition (hash of a seeded ``rand()``: other partitions, other
row order); every metric is compared with the numpy function on the same
numbers to 1e-12 (only the order of the float64 additions changes), every
fit to its solver's tolerance, the conformal thresholds exactly. Slow:
each pass is a Spark job on ``local[2,2]`` (the session of
``tests/_engines.py``).
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
from skcalib.conformal import ConformalClassifier  # noqa: E402
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
    (HistogramBinningCalibrator, {"n_bins": 10, "strategy": "quantile"}, 1e-10),
    (IsotonicCalibrator, {}, 1e-10),
]


@pytest.mark.parametrize(
    "make, params, atol",
    FITS,
    ids=[m.__name__ + ("-quantile" if "strategy" in p else "") for m, p, _ in FITS],
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


# -------------------------------------------------------------- conformal
CONFORMAL = [
    {},
    {"class_conditional": True, "alpha": 0.05},
    {"method": "raps", "k_reg": 2, "lam": 0.02, "randomized": False},
    {"method": "top_k", "alpha": 0.02},
]


@pytest.mark.parametrize(
    "case", CONFORMAL, ids=["lac", "class-conditional", "raps", "top-k"]
)
def test_conformal_threshold_equals_in_memory(frame, data, case):
    """An exact distributed order statistic: the threshold of the sorted
    in-memory scores, bit for bit, and the same sets."""
    y, p, w, _ = data
    yy, pp, ww = spark_columns(frame, label="y", proba=P, weight="w")
    got = ConformalClassifier(**case).fit(pp, yy, sample_weight=ww)
    ref = ConformalClassifier(**case).fit(p, y, sample_weight=w)
    np.testing.assert_array_equal(got.threshold_, ref.threshold_)
    sets = got.predict_set(pp)
    names = [f"set_{c}" for c in got.classes_]
    assert sets.columns == frame.columns + names
    rows = sets.select(*P, *names).limit(400).toPandas()
    np.testing.assert_array_equal(
        rows[names].to_numpy(), ref.predict_set(rows[P].to_numpy())
    )


def test_conformal_from_an_array_column_of_float32(spark, data):
    y, p, _, _ = data
    import pandas as pd
    from pyspark.sql import functions as F

    p32 = p.astype(np.float32)
    df = spark.createDataFrame(pd.DataFrame({"y": y, "arr": list(p32)}))
    df = df.withColumn("arr", F.col("arr").cast("array<float>")).repartition(8)
    yy, pp = spark_columns(df, label="y", proba="arr")
    got = ConformalClassifier(method="aps", randomized=False).fit(pp, yy)
    ref = ConformalClassifier(method="aps", randomized=False).fit(p32, y)
    assert got.threshold_ == ref.threshold_


# -------------------------------------------------------------- bad input
@pytest.fixture(scope="module")
def small(spark):
    import pandas as pd

    pdf = pd.DataFrame(
        {
            "y": [0, 1, 1, 0, 1, 0],
            "p": [0.1, 0.8, 0.6, 0.3, 0.9, None],
            "q": [0.1, 0.8, 0.6, 0.3, 0.9, 0.2],
            "yf": [0.5, 1.0, 1.0, 0.0, 1.0, 0.0],
            "when": pd.to_datetime(["2024-01-01"] * 6),
        }
    )
    return spark.createDataFrame(pdf).repartition(3)


def test_missing_and_misnamed_columns_named_before_any_job(small):
    with pytest.raises(ValueError, match=r"Column 'label' \(label=\) is not in"):
        spark_columns(small, label="label", proba="q")
    with pytest.raises(ValueError, match=r"'P'.*Did you mean 'p'\?"):
        spark_columns(small, label="y", proba="P")
    with pytest.raises(TypeError, match=r"Column 'when' \(label=\) has type timestamp"):
        spark_columns(small, label="when", proba="q")
    with pytest.raises(TypeError, match=r"Column 'when' \(proba=\) has type"):
        spark_columns(small, label="y", proba=["q", "when"])
    with pytest.raises(TypeError, match="Spark DataFrame"):
        spark_columns(np.zeros(3), label="y")


def test_nulls_named_by_the_first_pass(small):
    yy, pp = spark_columns(small, label="y", proba="p")
    with pytest.raises(ValueError, match=r"Column 'p' holds nulls.*in partition"):
        expected_calibration_error(yy, pp)


def test_label_of_the_wrong_values(small):
    yy, pp = spark_columns(small, label="yf", proba="q")
    with pytest.raises(ValueError, match=r"continuous values.*in partition"):
        brier_score(yy, pp)


def test_empty_dataframe(small):
    yy, pp = spark_columns(small.limit(0), label="y", proba="q")
    with pytest.raises(ValueError, match=r"The table is empty \(columns \['y'\]\)"):
        expected_calibration_error(yy, pp)
    with pytest.raises(ValueError, match="empty"):
        TemperatureCalibrator().fit(pp, yy)


def test_inputs_of_two_tables_or_mixed_with_numpy(small):
    yy, pp = spark_columns(small, label="y", proba="q")
    (other,) = spark_columns(small.select("q"), proba="q")
    with pytest.raises(ValueError, match="another table"):
        brier_score(yy, other)
    with pytest.raises(TypeError, match="y_true is a ndarray, not Spark columns"):
        brier_score(np.zeros(6, int), pp)
    with pytest.raises(TypeError, match="cannot be converted to an in-memory"):
        np.asarray(pp)


# ------------------------------------------------------------ task retry
def test_task_failure_mid_pass_is_retried(spark, frame, data, tmp_path):
    """An upstream UDF fails once on partition 3 in the middle of the
    quantile search; Spark reruns the task (local[2,2]) and the result is
    the in-memory one."""
    y, p, _, _ = data
    marker = str(tmp_path / "failed-once")

    def fail_once(batches):
        import os

        from pyspark import TaskContext

        ctx = TaskContext.get()
        for batch in batches:
            if ctx.partitionId() == 3 and not os.path.exists(marker):
                open(marker, "w").close()
                raise RuntimeError("injected failure")
            yield batch

    flaky = frame.mapInArrow(fail_once, frame.schema)
    yy, pp = spark_columns(flaky, label="y", proba=P)
    got = expected_calibration_error(yy, pp, strategy="quantile", kind="top_label")
    ref = expected_calibration_error(y, p, strategy="quantile", kind="top_label")
    assert got == pytest.approx(ref, abs=TOL)
    import os

    assert os.path.exists(marker)
