"""Fitting calibrators on Dask arrays (and on a ``distributed.LocalCluster``)
equals fitting them in memory; ``predict_proba``/``transform``/``predict`` of
Dask arrays stay lazy (``map_blocks``)."""

import numpy as np
import pytest
from test_chunked_fit import WEIGHTS, _binary, _multiclass, _split

from skcalib import (
    DirichletCalibrator,
    HistogramBinningCalibrator,
    IsotonicCalibrator,
    PlattCalibrator,
    TemperatureCalibrator,
    VectorScalingCalibrator,
)

# ------------------------------------------------------------------- Dask
da = pytest.importorskip("dask.array")


def _dask(*arrays, chunks=(700, 1, 1299, 1000)):
    return [da.from_array(a, chunks=(chunks,) + a.shape[1:]) for a in arrays]


@pytest.mark.parametrize(
    "make",
    [
        lambda: TemperatureCalibrator(),
        lambda: PlattCalibrator(),
        lambda: HistogramBinningCalibrator(n_bins=10),
        lambda: IsotonicCalibrator(),
        lambda: VectorScalingCalibrator(),
        lambda: DirichletCalibrator(reg_lambda=1.0),
    ],
)
def test_dask_fit_and_predict_equal_in_memory(make):
    z, y = _multiclass(k=3)
    dz, dy, dw = _dask(z, y, WEIGHTS)
    got = make().fit(dz, dy, sample_weight=dw)
    ref = make().fit_chunks(_split(z, y, WEIGHTS))
    proba = got.predict_proba(dz)
    assert isinstance(proba, da.Array)
    np.testing.assert_allclose(proba.compute(), ref.predict_proba(z), atol=1e-10)
    np.testing.assert_array_equal(got.predict(dz).compute(), ref.predict(z))
    np.testing.assert_allclose(
        got.transform(dz).compute(), ref.transform(z), atol=1e-10
    )


def test_dask_temperature_equals_fit_and_1d_binary_predict():
    z, y = _multiclass()
    dz, dy = _dask(z, y)
    got = TemperatureCalibrator().fit(dz, dy)
    assert got.temperature_ == pytest.approx(
        TemperatureCalibrator().fit(z, y).temperature_, rel=2e-8
    )
    s, yb = _binary()
    ds, dyb = _dask(s, yb)
    cal = PlattCalibrator().fit(ds, dyb)
    np.testing.assert_allclose(
        cal.predict_proba(ds).compute(), PlattCalibrator().fit(s, yb).predict_proba(s)
    )


def test_dask_local_cluster_fit(client):
    z, y = _multiclass(k=3)
    dz, dy = _dask(z, y, chunks=(300,) * 10)
    got = TemperatureCalibrator().fit(dz, dy)
    assert got.temperature_ == pytest.approx(
        TemperatureCalibrator().fit(z, y).temperature_, rel=2e-8
    )
    s, yb = _binary()
    ds, dyb = _dask(s, yb, chunks=(300,) * 10)
    hb = HistogramBinningCalibrator().fit(ds, dyb)
    ref = HistogramBinningCalibrator().fit(s, yb)
    np.testing.assert_allclose(hb.bin_proba_[0], ref.bin_proba_[0], rtol=1e-12)
    np.testing.assert_allclose(
        hb.predict_proba(ds).compute(), ref.predict_proba(s), atol=1e-12
    )
