"""Issue 30 item 12: extreme scores (subnormal logits, +-1e300) never print
numpy's RuntimeWarnings from inside the solvers; a fit that float64 cannot
represent raises our error naming the value."""

import warnings

import numpy as np
import pytest

from skcalib import (
    BetaCalibrator,
    DirichletCalibrator,
    HistogramBinningCalibrator,
    IsotonicCalibrator,
    MatrixScalingCalibrator,
    PlattCalibrator,
    ScalingBinningCalibrator,
    TemperatureCalibrator,
    VectorScalingCalibrator,
    VennAbersCalibrator,
)

ALL = [
    PlattCalibrator,
    TemperatureCalibrator,
    HistogramBinningCalibrator,
    IsotonicCalibrator,
    BetaCalibrator,
    VectorScalingCalibrator,
    MatrixScalingCalibrator,
    DirichletCalibrator,
    ScalingBinningCalibrator,
    VennAbersCalibrator,
]
#: Their fits need 1 / T (or a slope) of about 1e322 > float64's max: on
#: main they printed "invalid value encountered in multiply" and returned
#: T = 2e-310 instead of 5e-323 (probabilities 0.5 from the right ones).
NEEDS_THE_SCALE = {
    TemperatureCalibrator,
    VectorScalingCalibrator,
    MatrixScalingCalibrator,
}


def _scores():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 200)
    return rng.normal(size=200) + (2 * y - 1), y


@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.__name__)
def test_subnormal_logits(cls):
    s, y = _scores()
    tiny = s * 1e-322
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        if cls in NEEDS_THE_SCALE:
            with pytest.raises(ValueError, match=r"is 2\.08e-322, below the smallest"):
                cls().fit(tiny, y)
            return
        proba = cls().fit(tiny, y).predict_proba(tiny)
    assert np.all(np.isfinite(proba))


@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.__name__)
@pytest.mark.parametrize("big", [1e300, -1e300])
def test_huge_logits_print_no_runtime_warning(cls, big):
    s, y = _scores()
    x = np.where(np.arange(y.size) % 3 == 0, big * np.sign(s), s)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        proba = cls().fit(x, y).predict_proba(x)
    assert np.all(np.isfinite(proba))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
