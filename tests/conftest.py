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


@pytest.fixture
def shared_loader():
    return load_shared
