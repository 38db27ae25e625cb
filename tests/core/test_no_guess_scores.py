"""Issue 14, item 1 and the base-class items: what raw scores hold is never
guessed silently, weights of any scale give the same fit, bad labels give a
clear error before any numpy warning."""

import warnings

import numpy as np
import pytest
from _data import calibrated_logits
from scipy.special import softmax

from skcalib import (
    HistogramBinningCalibrator,
    IsotonicCalibrator,
    PlattCalibrator,
    TemperatureCalibrator,
)
from skcalib._core.scores import resolve_score_type, rounding_tolerance
from skcalib.metrics import negative_log_likelihood


def test_rounded_softmax_is_read_as_probabilities():
    # The reproduction of the issue: softmax(3 z) rounded to 4 decimals was
    # read as logits (T 0.416 instead of ~3, test NLL 0.877 instead of 0.768).
    # (scale 0.5: no probability rounds to 0, whose log-floor is another
    # matter; with it, T 2.9655 for 2.9657 on the exact probabilities and
    # 0.627 when the rounded probabilities are read as logits)
    z, y = calibrated_logits(scale=0.5)
    exact = softmax(3 * z, axis=1)
    rounded = exact.round(4)
    fit, test = slice(0, 3000), slice(3000, None)
    ts = TemperatureCalibrator().fit(rounded[fit], y[fit])
    ref = TemperatureCalibrator().fit(exact[fit], y[fit])
    on_logits = TemperatureCalibrator().fit(3 * z[fit], y[fit])
    assert ts.score_type_ == "probability"
    assert ts.n_renormalized_rows_ > 0
    # the true temperature is 3; rounding moves it by far less than that
    assert abs(on_logits.temperature_ - 3) < 0.3
    assert abs(ts.temperature_ - ref.temperature_) < 0.01 * ref.temperature_
    nll = negative_log_likelihood(y[test], ts.predict_proba(rounded[test]))
    nll_ref = negative_log_likelihood(y[test], ref.predict_proba(exact[test]))
    assert abs(nll - nll_ref) < 2e-3
    as_logits = TemperatureCalibrator(score_type="logit").fit(rounded[fit], y[fit])
    assert as_logits.temperature_ < 1  # what "auto" silently did before
    nll_wrong = negative_log_likelihood(y[test], as_logits.predict_proba(rounded[test]))
    assert nll_wrong > nll + 1e-2


def test_float32_softmax_cast_to_float64_is_probabilities():
    z, y = calibrated_logits(n=2000)
    p = softmax(z, axis=1).astype(np.float32).astype(np.float64)
    assert np.abs(p.sum(axis=1) - 1).max() > 1.5e-8  # beyond float64 sqrt(eps)
    ts = TemperatureCalibrator().fit(p, y)
    assert ts.score_type_ == "probability"
    np.testing.assert_allclose(
        ts.temperature_, TemperatureCalibrator().fit(z, y).temperature_, rtol=1e-4
    )


def test_one_vs_rest_sigmoids_are_an_error_naming_the_worst_row():
    z, y = calibrated_logits(n=500)
    s = 1 / (1 + np.exp(-z))
    worst = int(np.argmax(np.abs(s.sum(axis=1) - 1)))
    total = s[worst].sum()
    with pytest.raises(ValueError) as info:
        TemperatureCalibrator().fit(s, y)
    msg = str(info.value)
    assert f"row {worst} sums to {total:.6g}" in msg
    assert "score_type='logit'" in msg
    # declared logits are taken as given
    assert TemperatureCalibrator(score_type="logit").fit(s, y).score_type_ == "logit"


def test_rounding_tolerance_covers_four_decimals_for_every_k():
    rng = np.random.default_rng(1)
    for k in (2, 3, 10, 100):
        p = rng.dirichlet(np.full(k, 0.3), size=5000).round(4)
        sums = p.sum(axis=1)
        assert np.abs(sums - 1).max() <= rounding_tolerance(k, np.float64)
        decision = resolve_score_type(p, "auto")
        assert decision.score_type == "probability"
        n_off = int((np.abs(sums - 1) > np.sqrt(np.finfo(float).eps)).sum())
        assert decision.n_renormalized == n_off
        np.testing.assert_allclose(decision.scores.sum(axis=1), 1.0, atol=1e-12)
        # the input is not modified
        np.testing.assert_array_equal(p.sum(axis=1), sums)


def test_explicit_probability_accepts_rounding_and_renormalises_at_predict():
    z, y = calibrated_logits(n=2000, k=3)
    p = softmax(z, axis=1)
    cal = HistogramBinningCalibrator(score_type="probability").fit(p.round(4), y)
    assert cal.n_renormalized_rows_ > 0
    a = cal.predict_proba(p.round(4))
    b = cal.predict_proba(p.round(4) / p.round(4).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(a, b)
    with pytest.raises(ValueError, match="row 0 sums to 0.9"):
        cal.predict_proba(np.array([[0.5, 0.3, 0.1]]))


def test_logit_on_exact_probabilities_warns_once_at_the_users_line():
    z, y = calibrated_logits(n=500, k=3)
    p = softmax(z, axis=1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cal = TemperatureCalibrator(score_type="logit").fit(p, y)
        cal.predict_proba(p)
    ours = [w for w in caught if "looks like probabilities" in str(w.message)]
    assert len(ours) == 1
    assert ours[0].filename == __file__


def test_one_column_in_unit_interval_is_positive_class_probability():
    rng = np.random.default_rng(2)
    p = rng.random(300)
    y = (rng.random(300) < p).astype(int)
    assert PlattCalibrator().fit(p, y).score_type_ == "probability"
    assert PlattCalibrator().fit(p[:, None], y).score_type_ == "probability"


def test_chunked_fit_follows_the_same_rule():
    z, y = calibrated_logits(n=3000, k=4)
    rounded = softmax(2 * z, axis=1).round(4)
    chunks = [(rounded[i : i + 1000], y[i : i + 1000]) for i in range(0, 3000, 1000)]
    a = TemperatureCalibrator().fit_chunks(chunks)
    b = TemperatureCalibrator().fit(rounded, y)
    assert a.score_type_ == b.score_type_ == "probability"
    assert a.n_renormalized_rows_ == b.n_renormalized_rows_ > 0
    np.testing.assert_allclose(a.temperature_, b.temperature_, rtol=1e-8)
    sig = 1 / (1 + np.exp(-z))
    bad = [(sig[:1500], y[:1500]), (sig[1500:], y[1500:])]
    with pytest.raises(ValueError, match=r"Chunk 0: .*score_type='logit'"):
        TemperatureCalibrator().fit_chunks(bad)


@pytest.mark.parametrize("scale", [1e308 / 4000, 1e308, 5e-324, 1e-300, 3.7])
@pytest.mark.parametrize(
    "make",
    [
        TemperatureCalibrator,
        # the default histogram binning (auto bins, a prior in samples)
        # reads weights as counts; fixed bins without prior do not
        lambda: HistogramBinningCalibrator(n_bins=15, smoothing=0),
        IsotonicCalibrator,
    ],
)
def test_weight_scale_does_not_change_the_fit(make, scale):
    # uniform weights 1e308 gave NaN; 5e-324 gave T 1.756 instead of 1.945
    z, y = calibrated_logits(n=1500, k=3, seed=3)
    w = np.ones(y.size)
    ref = make().fit(2 * z, y, sample_weight=w).predict_proba(2 * z)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = make().fit(2 * z, y, sample_weight=w * scale).predict_proba(2 * z)
    np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-12)


def test_nan_in_y_is_a_clear_error_without_numpy_warnings():
    z, y = calibrated_logits(n=100, k=3)
    y = y.astype(float)
    y[7] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=r"y\[7\] is nan"):
            TemperatureCalibrator().fit(z, y)


def test_one_class_message_shows_plain_values():
    z = np.random.default_rng(0).normal(size=(10, 2))
    with pytest.raises(ValueError, match=r"one class only \(1\)"):
        TemperatureCalibrator().fit(z, np.ones(10, dtype=np.int64))
