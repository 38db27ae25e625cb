import logging
import os

# scikit-learn's array_api_dispatch needs SciPy's array-API mode, which is read
# when SciPy is first imported (tests/test_array_api.py and the array-API
# tests of each family); numpy inputs compute as without it.
os.environ.setdefault("SCIPY_ARRAY_API", "1")

import pytest  # noqa: E402
from _data import (  # noqa: E402, F401 (fixtures below use them)
    SHARED_DATA,
    binary_logits,
    calibrated_logits,
    classification_split,
    load_shared,
    multiclass_logits,
)
from _engines import ray_session, spark  # noqa: E402, F401 (engine fixtures)


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


@pytest.fixture
def binary_data():
    """600 binary log-odds and labels (:func:`binary_logits`)."""
    return binary_logits()


@pytest.fixture
def multiclass_data():
    """900 three-class logits and labels (:func:`multiclass_logits`)."""
    return multiclass_logits()


@pytest.fixture
def prefit_data():
    """``(clf, X_cal, y_cal)``: a GaussianNB fitted on 400 rows of three-class
    features and 800 held-out rows to calibrate it on."""
    from sklearn.naive_bayes import GaussianNB

    X_fit, y_fit, X_cal, y_cal = classification_split()
    return GaussianNB().fit(X_fit, y_fit), X_cal, y_cal
