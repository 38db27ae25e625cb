import logging
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


@pytest.fixture(scope="module")
def client():
    """A ``dask.distributed`` client of a 2-process LocalCluster on the
    loopback interface (no dashboard, 1 GiB a worker), closed after the
    module's tests; while it lives it is Dask's default scheduler."""
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
        memory_limit="1GiB",
        silence_logs=logging.CRITICAL,
    )
    client = distributed.Client(cluster, timeout="60s")
    try:
        yield client
    finally:
        client.close(timeout=30)
        cluster.close(timeout=30)
