"""The metrics and fits of Ray Datasets equal the in-memory ones.

The built-in CIFAR-10 predictions (10000 rows, 10 classes) as a Ray Dataset
of 8 blocks, and the same rows shuffled into other blocks
(``random_shuffle(seed=...)``); metrics to 1e-12, the temperature fit to the
solver's tolerance, the conformal thresholds exactly. Slow:
``ray.init(num_cpus=2)`` (``tests/_engines.py``).
"""

import numpy as np
import pytest

pytestmark = pytest.mark.slow

from skcalib import TemperatureCalibrator  # noqa: E402
from skcalib.cluster import accumulator_aggregation, ray_columns  # noqa: E402
from skcalib.conformal import ConformalClassifier  # noqa: E402
from skcalib.datasets import load_predictions  # noqa: E402
from skcalib.metrics import (  # noqa: E402
    CalibrationAccumulator,
    brier_score,
    expected_calibration_error,
    negative_log_likelihood,
    reliability_curve,
)

TOL = 1e-12
K = 10
P = [f"p{k}" for k in range(K)]
Z = [f"z{k}" for k in range(K)]


@pytest.fixture(scope="module")
def data():
    d = load_predictions("cifar10_wideresnet")
    p = d.probs.astype(np.float64)
    p /= p.sum(axis=1, keepdims=True)
    w = np.random.default_rng(3).integers(0, 4, p.shape[0]).astype(float)
    return d.labels, p, w, np.log(np.clip(p, 1e-12, None))


@pytest.fixture(scope="module", params=["8 blocks", "shuffled"])
def dataset(request, ray_session, data):
    import pandas as pd

    y, p, w, z = data
    pdf = pd.DataFrame({"y": y, "w": w})
    for k in range(K):
        pdf[P[k]], pdf[Z[k]] = p[:, k], z[:, k]
    ds = ray_session.data.from_pandas(pdf).repartition(8)
    if request.param == "shuffled":
        ds = ds.random_shuffle(seed=5).repartition(8)
    return ds.materialize()


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
@pytest.mark.parametrize("kind", ["confidence", "top_label", "classwise"])
def test_ece_equals_numpy(dataset, data, kind, strategy):
    y, p, w, _ = data
    yy, pp, ww = ray_columns(dataset, label="y", proba=P, weight="w")
    args = dict(kind=kind, strategy=strategy, n_bins=15)
    got = expected_calibration_error(yy, pp, sample_weight=ww, **args)
    ref = expected_calibration_error(y, p, sample_weight=w, **args)
    assert got == pytest.approx(ref, abs=TOL)


def test_losses_curve_and_accumulator_equal_numpy(dataset, data):
    y, p, w, _ = data
    yy, pp = ray_columns(dataset, label="y", proba=P)
    for f in (brier_score, negative_log_likelihood):
        assert f(yy, pp) == pytest.approx(f(y, p), abs=TOL)
    got = reliability_curve(yy, pp, strategy="quantile", n_bins=10)
    ref = reliability_curve(y, p, strategy="quantile", n_bins=10)
    np.testing.assert_allclose(got.accuracy, ref.accuracy, atol=TOL)
    np.testing.assert_allclose(got.edges, ref.edges, atol=0)
    acc = CalibrationAccumulator(n_bins=15).update(yy, pp)
    assert acc.expected_calibration_error() == pytest.approx(
        expected_calibration_error(y, p), abs=TOL
    )


def test_accumulator_as_a_ray_aggregation(dataset, data):
    y, p, w, _ = data
    agg = accumulator_aggregation(
        CalibrationAccumulator(n_bins=15, labels=np.arange(K)),
        label="y",
        proba=P,
        weight="w",
    )
    acc = dataset.aggregate(agg)["calibration"]
    assert acc.n_samples_ == y.size
    ref = CalibrationAccumulator(n_bins=15).update(y, p, w)
    for kind in ("confidence", "top_label"):
        assert acc.expected_calibration_error(kind=kind) == pytest.approx(
            ref.expected_calibration_error(kind=kind), abs=TOL
        )


def test_temperature_fit_and_predict(dataset, data):
    y, _, _, z = data
    yy, X = ray_columns(dataset, label="y", proba=Z)
    cal = TemperatureCalibrator().fit(X, yy)
    ref = TemperatureCalibrator().fit(z, y)
    assert cal.temperature_ == pytest.approx(ref.temperature_, rel=2e-8)
    out = cal.predict_proba(X)
    names = [f"proba_{c}" for c in cal.classes_]
    rows = out.select_columns(Z + names).take_batch(300, batch_format="pandas")
    np.testing.assert_allclose(
        rows[names].to_numpy(dtype=float),
        ref.predict_proba(rows[Z].to_numpy(dtype=float)),
        atol=1e-8,
    )


def test_bad_columns_named(ray_session):
    ds = ray_session.data.from_items([{"y": 0, "p": 0.2}, {"y": 1, "p": None}])
    with pytest.raises(ValueError, match=r"Column 'label' \(label=\) is not in"):
        ray_columns(ds, label="label", proba="p")
    yy, pp = ray_columns(ds, label="y", proba="p")
    with pytest.raises(ValueError, match=r"Column 'p' holds nulls"):
        brier_score(yy, pp)


def test_conformal_threshold_and_sets(dataset, data):
    """The distributed order statistic gives the in-memory threshold."""
    y, p, w, _ = data
    yy, pp, ww = ray_columns(dataset, label="y", proba=P, weight="w")
    for case in ({}, {"class_conditional": True, "alpha": 0.05}):
        got = ConformalClassifier(**case).fit(pp, yy, sample_weight=ww)
        ref = ConformalClassifier(**case).fit(p, y, sample_weight=w)
        np.testing.assert_array_equal(got.threshold_, ref.threshold_)
    names = [f"set_{c}" for c in got.classes_]
    rows = (
        got.predict_set(pp)
        .select_columns(P + names)
        .take_batch(300, batch_format="pandas")
    )
    np.testing.assert_array_equal(
        rows[names].to_numpy(dtype=bool),
        ref.predict_set(rows[P].to_numpy(dtype=float)),
    )
