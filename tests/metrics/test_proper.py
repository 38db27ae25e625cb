"""Brier score, negative log-likelihood and their decomposition."""

import numpy as np
import pytest
import sklearn
from sklearn.metrics import brier_score_loss, log_loss
from sklearn.utils.fixes import parse_version

from skcalib.metrics import (
    brier_score,
    calibration_refinement_decomposition,
    negative_log_likelihood,
)

#: Multiclass brier_score_loss (labels=, the [0, 2] range) came in 1.7.
SKLEARN_MULTICLASS_BRIER = parse_version(sklearn.__version__) >= parse_version("1.7")


def _multiclass(n=400, k=4, seed=0, power=1.0):
    rng = np.random.default_rng(seed)
    truth = rng.dirichlet(np.ones(k), size=n)
    y = np.array([rng.choice(k, p=q) for q in truth])
    p = truth**power
    return y, p / p.sum(axis=1, keepdims=True)


def _binary(n=400, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.uniform(size=n)
    return (rng.uniform(size=n) < p).astype(int), p


def test_brier_binary_matches_sklearn():
    y, p = _binary()
    w = np.random.default_rng(1).uniform(0, 2, y.size)
    assert brier_score(y, p) == pytest.approx(brier_score_loss(y, p))
    assert brier_score(y, p, sample_weight=w) == pytest.approx(
        brier_score_loss(y, p, sample_weight=w)
    )
    assert brier_score(y, np.column_stack([1 - p, p])) == pytest.approx(
        brier_score(y, p)
    )
    # Two classes summed over both columns: twice the customary value.
    assert brier_score(y, p, scale_by_half=False) == pytest.approx(
        np.mean(np.sum((np.eye(2)[y] - np.column_stack([1 - p, p])) ** 2, axis=1))
    )
    # String labels: the larger label is the positive class.
    s = np.where(y == 1, "pos", "neg")
    assert brier_score(s, p, labels=["neg", "pos"]) == pytest.approx(brier_score(y, p))
    assert brier_score(np.where(y == 1, "yes", "no"), p) == pytest.approx(
        brier_score(y, p)
    )


def test_brier_multiclass_matches_sklearn_and_definition():
    y, p = _multiclass()
    w = np.random.default_rng(2).uniform(0, 2, y.size)
    onehot = np.eye(4)[y]
    want = np.average(np.sum((onehot - p) ** 2, axis=1), weights=w)
    got = brier_score(y, p, sample_weight=w)
    assert got == pytest.approx(want, rel=1e-12)
    if SKLEARN_MULTICLASS_BRIER:  # multiclass keeps the [0, 2] range
        assert got == pytest.approx(
            brier_score_loss(y, p, sample_weight=w, labels=[0, 1, 2, 3])
        )
    assert brier_score(y, p, scale_by_half=True) == pytest.approx(brier_score(y, p) / 2)
    assert 0 <= brier_score(y, p) <= 2
    assert brier_score([0, 1, 2], np.eye(3)[[1, 2, 0]]) == pytest.approx(2.0)
    # float32 input, columns in the order of labels=.
    order = [3, 1, 0, 2]
    assert brier_score(
        y, p[:, order].astype(np.float32), labels=order
    ) == pytest.approx(brier_score(y, p), rel=1e-6)


def test_nll_matches_sklearn():
    y, p = _multiclass(seed=3)
    w = np.random.default_rng(4).uniform(0, 2, y.size)
    assert negative_log_likelihood(y, p) == pytest.approx(log_loss(y, p))
    assert negative_log_likelihood(y, p, sample_weight=w) == pytest.approx(
        log_loss(y, p, sample_weight=w)
    )
    yb, pb = _binary(seed=5)
    assert negative_log_likelihood(yb, pb) == pytest.approx(log_loss(yb, pb))
    assert negative_log_likelihood(yb, np.column_stack([1 - pb, pb])) == pytest.approx(
        log_loss(yb, pb)
    )
    # labels in any order (sklearn's log_loss assumes sorted columns).
    names = np.array(["b", "a", "d", "c"])  # column j is the class names[j]
    assert negative_log_likelihood(names[y], p, labels=names) == pytest.approx(
        log_loss(y, p)
    )
    # Zero probability of the true class: clipped, finite.
    assert np.isfinite(negative_log_likelihood([0, 1], [[0.0, 1.0], [0.0, 1.0]]))


def test_decomposition_log_loss():
    y, p = _multiclass(n=2000, seed=6)
    res = calibration_refinement_decomposition(y, p)
    assert res.loss == pytest.approx(negative_log_likelihood(y, p))
    assert res.calibration >= 0
    assert res.calibration == pytest.approx(res.loss - res.refinement)
    assert res.calibration < 2e-3  # calibrated: temperature ~ 1 gains little
    assert res.temperature == pytest.approx(1.0, abs=0.1)
    sharp = p**2.5 / (p**2.5).sum(axis=1, keepdims=True)  # over-confident
    res = calibration_refinement_decomposition(y, sharp)
    assert res.temperature == pytest.approx(2.5, rel=0.1)
    assert res.calibration > 0.05
    # Refinement is the loss of the temperature-scaled predictions.
    scaled = np.exp(np.log(sharp) / res.temperature)
    scaled /= scaled.sum(axis=1, keepdims=True)
    assert res.refinement == pytest.approx(negative_log_likelihood(y, scaled), rel=1e-9)


def test_decomposition_brier():
    y, p = _multiclass(n=2000, seed=7)
    soft = p**0.5 / (p**0.5).sum(axis=1, keepdims=True)  # under-confident
    res = calibration_refinement_decomposition(y, soft, loss="brier")
    assert res.loss == pytest.approx(brier_score(y, soft))
    assert res.temperature < 1
    assert res.calibration > 0
    assert res.refinement <= res.loss

    # Brier-optimal temperature: no neighbour is better.
    def brier_at(t):
        q = np.exp(np.log(soft) / t)
        return brier_score(y, q / q.sum(axis=1, keepdims=True))

    assert res.refinement <= brier_at(res.temperature * 1.01) + 1e-12
    assert res.refinement <= brier_at(res.temperature / 1.01) + 1e-12


def test_decomposition_never_negative():
    # One-hot correct predictions: nothing to gain from a temperature.
    y = np.array([0, 1, 2, 1])
    for loss in ("log_loss", "brier"):
        res = calibration_refinement_decomposition(y, np.eye(3)[y], loss=loss)
        assert res.calibration == 0.0 and res.temperature == 1.0
    yb, pb = _binary(seed=8)
    for loss in ("log_loss", "brier"):
        res = calibration_refinement_decomposition(yb, pb, loss=loss)
        assert res.calibration >= 0
