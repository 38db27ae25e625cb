"""Data and artist look-ups shared by the tests of skcalib.plotting."""

import numpy as np

DIAGONAL_GID = "skcalib-reliability-diagonal"


def multiclass(n=3000, k=4, sharpen=2.0, seed=0):
    """Labels drawn from Dirichlet probabilities, then the probabilities are
    sharpened (power ``sharpen``) to make an over-confident model."""
    rng = np.random.default_rng(seed)
    proba = rng.dirichlet(np.ones(k), size=n)
    y = (rng.random(n)[:, None] > proba.cumsum(axis=1)).sum(axis=1)
    y = np.minimum(y, k - 1)
    sharp = proba**sharpen
    sharp /= sharp.sum(axis=1, keepdims=True)
    return y, sharp


def binary(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.beta(2, 2, size=n)
    y = (rng.random(n) < p**1.5).astype(int)
    return y, p


def diagonals(ax):
    return [line for line in ax.get_lines() if line.get_gid() == DIAGONAL_GID]


def legend_texts(ax):
    return [t.get_text() for t in ax.get_legend().get_texts()]
