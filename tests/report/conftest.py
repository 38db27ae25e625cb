"""Fixtures of the report tests: a small predictions file."""

import numpy as np
import pytest


@pytest.fixture
def npz(tmp_path):
    """A small 3-class predictions file (labels and logits)."""
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 300)
    logits = rng.normal(size=(300, 3))
    logits[np.arange(300), y] += 1.5
    path = tmp_path / "preds.npz"
    np.savez(path, labels=y, logits=2 * logits)
    return path
