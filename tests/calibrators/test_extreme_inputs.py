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


def _scores():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 200)
    return rng.normal(size=200) + (2 * y - 1), y


@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.__name__)
def test_subnormal_logits(cls):
    """Logits that differ by subnormal amounts: every sigmoid or softmax of
    them is exactly uniform (Platt was 0.55 off, isotonic and binning a
    constant 0.5, without a word), so every calibrator refuses them."""
    s, y = _scores()
    tiny = s * 1e-322
    spread = float(tiny.max() - tiny.min())
    assert 0 < spread < np.finfo(np.float64).tiny
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(
            ValueError, match=rf"at most {spread:.3g}, below the smallest normal"
        ):
            cls().fit(tiny, y)
        with pytest.raises(ValueError, match="below the smallest normal"):
            cls(score_type="logit").fit(tiny, y)


def test_subnormal_logits_at_predict_time():
    s, y = _scores()
    cal = PlattCalibrator().fit(s, y)
    with pytest.raises(ValueError, match="below the smallest normal"):
        cal.predict_proba(s * 1e-322)


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
