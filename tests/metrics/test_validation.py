"""Bad input gives a ValueError that names the problem."""

import numpy as np
import pytest

from skcalib.metrics import (
    brier_score,
    calibration_error_interval,
    calibration_refinement_decomposition,
    classwise_calibration_error,
    expected_calibration_error,
    maximum_calibration_error,
    negative_log_likelihood,
    reliability_curve,
)

Y = np.array([0, 1, 2, 1])
P = np.array([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.2, 0.2, 0.6], [0.3, 0.4, 0.3]])

METRICS = [
    expected_calibration_error,
    maximum_calibration_error,
    classwise_calibration_error,
    reliability_curve,
    brier_score,
    negative_log_likelihood,
    calibration_refinement_decomposition,
    calibration_error_interval,
]


def _with(row, col, value, proba=P):
    out = proba.copy()
    out[row, col] = value
    return out


BAD_PROBA = [
    (_with(2, 1, np.nan), r"NaN; row 2"),
    (_with(1, 0, np.inf), r"probabilities in \[0, 1\]; row 1"),
    (_with(3, 2, -np.inf), r"probabilities in \[0, 1\]; row 3"),
    (_with(0, 0, 1.5), r"probabilities in \[0, 1\]; row 0"),
    (_with(0, 0, -0.1), r"probabilities in \[0, 1\]; row 0"),
    (_with(3, 2, 0.4), r"rows must sum to 1.*row 3 sums to 1.1"),
    (P[:, :2], r"2 columns but y_true has 3 distinct label"),
    (P[:3], r"y_true has 4 samples but y_proba has 3"),
    (P[:, :, None], r"dim 3"),
    (np.array([["a", "b", "c"]] * 4), r"could not convert|[Ss]tring"),
]


@pytest.mark.parametrize("metric", METRICS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("proba, match", BAD_PROBA)
def test_bad_proba(metric, proba, match):
    with pytest.raises(ValueError, match=match):
        metric(Y, proba)


@pytest.mark.parametrize("metric", METRICS, ids=lambda f: f.__name__)
def test_bad_labels(metric):
    with pytest.raises(ValueError, match=r"label\(s\) \[2\] that are not in labels"):
        metric(Y, P, labels=[0, 1, 5])
    with pytest.raises(ValueError, match=r"y_proba has 3 columns, but labels has 2"):
        metric(Y, P, labels=[0, 1])
    with pytest.raises(ValueError, match=r"labels must be unique"):
        metric(Y, P, labels=[0, 1, 1])
    with pytest.raises(
        ValueError, match=r"continuous values such as y_true\[1\] = 0.5"
    ):
        metric(np.array([0.0, 0.5, 1.0, 2.0]), P)
    with pytest.raises(ValueError, match=r"y_true\[1\] is nan"):
        metric(np.array([0.0, np.nan, 1.0, 2.0]), P)
    with pytest.raises(
        ValueError, match=r"1-D array of class labels, got shape \(2, 2\)"
    ):
        metric(Y.reshape(2, 2), P)
    with pytest.raises(
        ValueError, match=r"1-D y_proba is for binary problems.*3 distinct"
    ):
        metric(Y, P[:, 0])
    with pytest.raises(
        ValueError, match=r"3 columns but y_true has 2 distinct.*labels="
    ):
        metric(np.array(["a", "b", "a", "b"]), P)
    with pytest.raises(ValueError, match=r"3 columns but y_true has 2 distinct"):
        metric(np.array([1, 3, 1, 3]), P)  # integers, but not all in [0, 3)


@pytest.mark.parametrize("metric", METRICS, ids=lambda f: f.__name__)
def test_bad_weights(metric):
    with pytest.raises(ValueError, match=r"sample_weight must have shape \(4,\)"):
        metric(Y, P, sample_weight=[1, 1, 1])
    with pytest.raises(ValueError, match=r"sample_weight\[2\] = -1"):
        metric(Y, P, sample_weight=[1, 1, -1, 1])
    with pytest.raises(ValueError, match=r"sample_weight sums to 0"):
        metric(Y, P, sample_weight=[0, 0, 0, 0])
    with pytest.raises(ValueError, match=r"sample_weight"):
        metric(Y, P, sample_weight=[1, np.nan, 1, 1])


BINNED = [
    expected_calibration_error,
    maximum_calibration_error,
    classwise_calibration_error,
    reliability_curve,
    calibration_error_interval,
]


@pytest.mark.parametrize("metric", BINNED, ids=lambda f: f.__name__)
@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"n_bins": 0}, r"'n_bins' parameter .* Got 0"),
        ({"n_bins": 2.5}, r"'n_bins' parameter .* Got 2.5"),
        ({"n_bins": "10"}, r"'n_bins' parameter"),
        ({"n_bins": True}, r"n_bins must be an integer"),
        ({"strategy": "kmeans"}, r"'strategy' parameter .* Got 'kmeans'"),
    ],
)
def test_bad_binning(metric, kwargs, match):
    with pytest.raises(ValueError, match=match):
        metric(Y, P, **kwargs)


def test_bad_kind_and_norm():
    for f in (
        expected_calibration_error,
        reliability_curve,
        calibration_error_interval,
    ):
        with pytest.raises(ValueError, match=r"'kind' parameter .* Got 'topk'"):
            f(Y, P, kind="topk")
    for f in (expected_calibration_error, classwise_calibration_error):
        with pytest.raises(ValueError, match=r"'norm' parameter .* Got 'l3'"):
            f(Y, P, norm="l3")
    with pytest.raises(ValueError, match=r"debias=True is defined for norm='l2'"):
        classwise_calibration_error(Y, P, debias=True)
    with pytest.raises(ValueError, match=r"'loss' parameter"):
        calibration_refinement_decomposition(Y, P, loss="hinge")
    with pytest.raises(ValueError, match=r"'method' parameter"):
        calibration_error_interval(Y, P, method="bca")
    with pytest.raises(ValueError, match=r"'confidence_level' parameter"):
        reliability_curve(Y, P, confidence_level=1.0)


def test_bad_class_index():
    with pytest.raises(ValueError, match=r"class_index must be in \[0, 2\].*got 3"):
        reliability_curve(Y, P, kind="classwise", class_index=3)
    with pytest.raises(ValueError, match=r"kind='classwise' needs class_index"):
        reliability_curve(Y, P, kind="classwise")
    with pytest.raises(ValueError, match=r"kind='confidence' pools all classes"):
        reliability_curve(Y, P, class_index=1)


def test_single_class_needs_labels_for_1d():
    with pytest.raises(ValueError, match=r"1-D y_proba is for binary.*\['a'\]"):
        expected_calibration_error(["a", "a"], [0.2, 0.3])
    # Integer 0/1 labels are not guessed either (as sklearn's log_loss).
    with pytest.raises(ValueError, match=r"1-D y_proba is for binary.*labels="):
        expected_calibration_error([1, 1], [0.75, 1.0], n_bins=4)
    assert expected_calibration_error(
        [1, 1], [0.75, 1.0], n_bins=4, labels=[0, 1]
    ) == pytest.approx(0.125)
    assert expected_calibration_error(["a", "a"], [0.2, 0.3], labels=["a", "b"]) == (
        pytest.approx(0.25)
    )


def test_row_named_in_later_block():
    # The fast scan checks block by block; the message names the global row.
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(10), size=100_000).astype(np.float32)
    y = rng.integers(0, 10, 100_000)
    bad = p.copy()
    bad[77_777, 3] += 0.01
    with pytest.raises(ValueError, match=r"row 77777 sums to"):
        expected_calibration_error(y, bad)
    bad = p.copy()
    bad[88_888, 0] = np.nan
    with pytest.raises(ValueError, match=r"NaN; row 88888"):
        expected_calibration_error(y, bad)
    bad = p.copy()
    bad[99_999, 9] = -0.5
    with pytest.raises(ValueError, match=r"\[0, 1\]; row 99999"):
        expected_calibration_error(y, bad)


def test_float32_rows_within_tolerance_accepted():
    rng = np.random.default_rng(1)
    z = rng.normal(size=(50, 1000)).astype(np.float32)
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)  # float32 drift ~1e-6
    y = rng.integers(0, 1000, 50)
    assert 0 <= expected_calibration_error(y, p, labels=np.arange(1000)) <= 1


def test_empty_input():
    with pytest.raises(ValueError, match="0 sample"):
        expected_calibration_error([], np.zeros((0, 2)))
