"""The AUGRC of Traub et al. against sample-by-sample sums, its identity
with the AUROC of correctness, and a hand computation."""

import itertools

import numpy as np
import pytest

from skcalib.metrics import augrc, aurc, correctness_auroc, risk_coverage_curve


def _slow(conf, loss):
    """The trapezoid over samples accepted one by one (distinct
    confidences): generalised risk (1/n) * (sum of the k most confident losses)."""
    order = sorted(range(len(conf)), key=lambda i: -conf[i])
    n = len(conf)
    area, prev = 0.0, 0.0
    for k in range(1, n + 1):
        gr = sum(loss[i] for i in order[:k]) / n
        area += (prev + gr) / (2 * n)
        prev = gr
    return area


def _data(n=200, k=4, seed=0):
    rng = np.random.default_rng(seed)
    z = 2.0 * rng.normal(size=(n, k))
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    y = np.where(rng.uniform(size=n) < 0.7, p.argmax(axis=1), rng.integers(0, k, n))
    return y, p


def test_hand_computed():
    # confidences 0.9, 0.9 (right), 0.7, 0.6 (wrong): L = 0, .25, .5 at
    # coverage .5, .75, 1: area .25 * .125 + .25 * .375 = 0.125 = pi^2 / 2
    assert augrc([0, 1, 1, 0], [0.1, 0.9, 0.4, 0.7]) == 0.125
    # ties {0.9: right, wrong}, {0.6: right, wrong}: .5 * .125 + .5 * .375
    assert augrc([0, 1, 1, 0], [0.1, 0.6, 0.4, 0.9]) == 0.25


@pytest.mark.parametrize("loss", ["error", "brier", "log_loss"])
def test_matches_the_sample_by_sample_sum(loss):
    y, p = _data()
    conf = p.max(axis=1)
    assert np.unique(conf).size == conf.size
    curve = risk_coverage_curve(y, p, loss=loss, confidence=conf)
    per_sample = {
        "error": (p.argmax(axis=1) != y).astype(float),
        "brier": ((p - np.eye(4)[y]) ** 2).sum(axis=1),
        "log_loss": -np.log(p[np.arange(y.size), y]),
    }[loss]
    expected = _slow(list(conf), list(per_sample))
    assert augrc(y, p, loss=loss) == pytest.approx(expected, rel=1e-12)
    assert curve.coverage[-1] == 1.0


def test_ties_are_the_mean_over_orderings():
    # every order of the tied samples, sample by sample, averaged
    y = np.array([0, 1, 1, 0, 1, 0])
    p = np.array([0.2, 0.8, 0.2, 0.8, 0.6, 0.1])  # confidences .8 x4, .6, .9
    conf = np.maximum(p, 1 - p)
    loss = ((p > 0.5).astype(int) != y).astype(float)
    tied = np.flatnonzero(conf == 0.8)
    values = []
    for perm in itertools.permutations(tied):
        c = conf.copy()
        c[list(perm)] = 0.8 + 1e-9 * np.arange(len(perm))  # break the tie
        values.append(_slow(list(c), list(loss)))
    assert augrc(y, p) == pytest.approx(np.mean(values), rel=1e-6)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_identity_with_the_auroc_of_correctness(seed):
    # Traub et al.: AUGRC = pi^2 / 2 + pi (1 - pi) (1 - AUROC) for the 0/1 error
    y, p = _data(seed=seed)
    p = np.round(p, 1)  # many ties
    p /= p.sum(axis=1, keepdims=True)
    w = np.random.default_rng(seed).uniform(0.2, 2.0, y.size)
    for weight in (None, w):
        wrong = (p.argmax(axis=1) != y).astype(float)
        pi = np.average(wrong, weights=weight)
        auroc = correctness_auroc(y, p, sample_weight=weight)
        expected = pi**2 / 2 + pi * (1 - pi) * (1 - auroc)
        assert augrc(y, p, sample_weight=weight) == pytest.approx(expected, rel=1e-10)


def test_bounded_by_aurc_and_weights_are_rows():
    y, p = _data(seed=3)
    assert augrc(y, p) < aurc(y, p)
    w = np.random.default_rng(3).integers(0, 4, y.size)
    a = augrc(y, p, sample_weight=w.astype(float))
    b = augrc(np.repeat(y, w), np.repeat(p, w, axis=0))
    assert a == pytest.approx(b, rel=1e-12)
