"""Data generators and paths shared by the tests (plain functions; the
fixtures built on them are in conftest.py). Import as ``from _data import ...``."""

from pathlib import Path

import numpy as np
import pytest

#: ../shared/data beside the repository (laid out by the workplace and by CI).
SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def load_shared(relpath):
    """Load one prediction file of ../shared/data as (probs, labels), or skip."""
    path = SHARED_DATA / relpath
    if not path.exists():
        pytest.skip(f"{path} is not available")
    with np.load(path) as data:
        probs_key = "predictions" if "predictions" in data else "probs"
        labels_key = "ground_truth" if "ground_truth" in data else "labels"
        return data[probs_key], data[labels_key]


# ------------------------------------------------------------- shared data
# Plain functions (importable as ``from _data import binary_logits``, for
# module-level parametrisation) and fixtures returning them. Each keeps the
# exact arithmetic of the per-file generators it replaced, so the reference
# numbers of the tests that use them do not move.
def binary_logits(n=600, *, scale=3.0, seed=0):
    """Binary log-odds ``scale * (2y - 1) + N(0, scale^2)`` and labels 0/1."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    return scale * (2 * y - 1) + rng.normal(scale=scale, size=n), y


def multiclass_logits(n=900, k=3, *, scale=2.5, seed=0):
    """Logits ``scale * (N(0, I) + e_y)`` of shape ``(n, k)`` and labels."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    return scale * (rng.normal(size=(n, k)) + np.eye(k)[y]), y


def classification_split(n_fit=400, n_cal=800, *, n_classes=3, seed=0, **kwargs):
    """Features for a prefit classifier: ``make_classification`` split into
    ``(X_fit, y_fit, X_cal, y_cal)`` (8 features, 5 informative unless
    ``kwargs`` say otherwise)."""
    from sklearn.datasets import make_classification

    params = {"n_features": 8, "n_informative": 5, **kwargs}
    X, y = make_classification(
        n_samples=n_fit + n_cal, n_classes=n_classes, random_state=seed, **params
    )
    return X[:n_fit], y[:n_fit], X[n_fit:], y[n_fit:]


def calibrated_logits(n=6000, k=5, *, scale=1.5, seed=0):
    """Logits ``z ~ N(0, scale^2)`` with labels drawn from ``softmax(z)``:
    the identity (temperature 1) is their true calibration map."""
    rng = np.random.default_rng(seed)
    z = rng.normal(scale=scale, size=(n, k))
    e = np.exp(z - z.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    y = (rng.random(n)[:, None] > np.cumsum(p, axis=1)).sum(axis=1)
    return z, y
