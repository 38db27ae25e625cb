"""Loaders for the real prediction sets shipped with skcalib."""

from importlib import resources

import numpy as np
from sklearn.utils import Bunch

__all__ = ["list_datasets", "load_predictions"]

_DATASETS = {
    "cifar10_wideresnet": {
        "files": {"all": "cifar10_wideresnet.npz"},
        "description": (
            "WideResNet-16-4 softmax probabilities on the 10000 CIFAR-10 test "
            "images (10 classes, float32); over-confident."
        ),
        "source": "netcal (EFS-OpenSource/calibration-framework), commit 2a3db8d",
        "license": "Apache-2.0 (LICENSE.netcal)",
    },
    "kitti_random_forest": {
        "files": {"all": "kitti_random_forest.npz"},
        "description": (
            "Random-forest predict_proba on KITTI (binary, 9090 rows, float32); "
            "probabilities are multiples of 1/n_trees and sit on bin edges."
        ),
        "source": "pycalib (JonathanWenger/pycalib), Wenger et al., AISTATS 2020",
        "license": "MIT (LICENSE.pycalib)",
    },
    "airlines_catboost": {
        "files": {
            "calibration": "airlines_catboost_calibration.npz",
            "test": "airlines_catboost_test.npz",
        },
        "description": (
            "CatBoost predict_proba on OpenML 42493 (airlines delay, binary), "
            "disjoint calibration and test sets of 5394 rows each (float32)."
        ),
        "source": "splinecalib package test data (calibset/testset_airlines_42493_cb1)",
        "license": "MIT (LICENSE.splinecalib)",
    },
}


def list_datasets():
    """Return the names of the built-in prediction sets.

    Returns
    -------
    names : list of str

    Examples
    --------
    >>> from skcalib.datasets import list_datasets
    >>> list_datasets()
    ['airlines_catboost', 'cifar10_wideresnet', 'kitti_random_forest']
    """
    return sorted(_DATASETS)


def _read(filename):
    with resources.files("skcalib.datasets").joinpath("data", filename).open("rb") as f:
        with np.load(f) as data:
            probs_key = "predictions" if "predictions" in data else "probs"
            labels_key = "ground_truth" if "ground_truth" in data else "labels"
            return data[probs_key], data[labels_key]


def load_predictions(name="cifar10_wideresnet", *, subset="all"):
    """Load a built-in set of real model predictions.

    Parameters
    ----------
    name : str, default="cifar10_wideresnet"
        One of :func:`list_datasets`.
    subset : {"all", "calibration", "test"}, default="all"
        ``"calibration"`` and ``"test"`` exist for sets that come with a fixed
        split (``"airlines_catboost"``); ``"all"`` concatenates them.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        ``probs`` (float32, shape (n, n_classes), rows sum to 1), ``labels``
        (int64, shape (n,)), ``name``, ``description``, ``source``,
        ``license``.

    Examples
    --------
    >>> from skcalib.datasets import load_predictions
    >>> data = load_predictions("cifar10_wideresnet")
    >>> data.probs.shape, data.labels.shape
    ((10000, 10), (10000,))
    >>> load_predictions("airlines_catboost", subset="test").probs.shape
    (5394, 2)
    """
    if name not in _DATASETS:
        raise ValueError(f"Unknown dataset {name!r}; choose one of {list_datasets()}.")
    info = _DATASETS[name]
    files = info["files"]
    if subset == "all":
        parts = [_read(files[key]) for key in sorted(files)]
    elif subset in files:
        parts = [_read(files[subset])]
    else:
        raise ValueError(
            f"Dataset {name!r} has subsets {sorted({'all', *files})}, got {subset!r}."
        )
    probs = np.concatenate([p for p, _ in parts])
    labels = np.concatenate([y for _, y in parts])
    return Bunch(
        probs=probs,
        labels=labels,
        name=name,
        description=info["description"],
        source=info["source"],
        license=info["license"],
    )
