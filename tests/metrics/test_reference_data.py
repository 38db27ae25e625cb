"""Values on real predictions (../shared/data), pinned with provenance.

Pinned values: computed by the naive per-sample Python reference of
``tests/metrics/_reference.py`` (independent of skcalib's vectorised code) on
the files of ``../shared/data`` with numpy 2.4.6, scikit-learn 1.9.1,
2026-11-29; skcalib's values agreed to 1.2e-16. The 4-decimal figures come
from ``../shared/data/README.md`` ("top-label ECE, 15 equal-width bins,
right-closed"): they are what skcalib calls the *confidence* ECE (top-1
confidence against top-1 correctness, all samples pooled; Guo et al. 2017).
skcalib's ``kind="top_label"`` is Gupta & Ramdas' top-label ECE (bins per
predicted class), a different, larger number on the same data.
"""

from pathlib import Path

import numpy as np
import pytest
from sklearn.calibration import calibration_curve

from skcalib.metrics import expected_calibration_error, reliability_curve

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"


def _load(relpath):
    path = DATA / relpath
    if not path.exists():
        pytest.skip(f"{path} is not available")
    with np.load(path) as data:
        probs = data["predictions"] if "predictions" in data else data["probs"]
        labels = data["ground_truth"] if "ground_truth" in data else data["labels"]
    return probs, labels


# (file, readme accuracy, readme ECE, pinned confidence ECE)
README = [
    ("netcal/densenet-bc-100-cifar-100.npz", 0.7541, 0.1422, 0.1421528241381049),
    ("netcal/wideresnet-16-4-cifar-100.npz", 0.7543, 0.0581, 0.058060392411053194),
    ("netcal/wideresnet-16-4-cifar-10.npz", 0.9109, 0.0537, 0.05371629542112352),
    ("verified_calibration/cifar10_vgg16.npz", 0.9359, 0.0398, 0.03978006685674193),
    ("pycalib/mnist__AdaBoost.npz", 0.7306, 0.6124, 0.6124071858398618),
]


@pytest.mark.parametrize("relpath, accuracy, readme_ece, pinned", README)
def test_readme_reference_figures(relpath, accuracy, readme_ece, pinned):
    p, y = _load(relpath)
    assert np.mean(p.argmax(axis=1) == y) == pytest.approx(accuracy, abs=5e-5)
    got = expected_calibration_error(y, p)  # defaults: 15 uniform bins, confidence
    assert got == pytest.approx(readme_ece, abs=5e-5)
    assert got == pytest.approx(pinned, abs=1e-12)
    assert expected_calibration_error(y, p, kind="top_label") >= got - 1e-12


PINNED = [
    (
        "verified_calibration/cifar10_vgg16.npz",
        {"kind": "top_label"},
        0.04331596844494346,
    ),
    (
        "verified_calibration/cifar10_vgg16.npz",
        {"kind": "classwise"},
        0.008836746006085227,
    ),
    (
        "verified_calibration/cifar10_vgg16.npz",
        {"strategy": "quantile"},
        0.03971676295697687,
    ),
    (
        "verified_calibration/cifar10_vgg16.npz",
        {"norm": "l2", "debias": True},
        0.06309824810776085,
    ),
    ("verified_calibration/cifar10_vgg16.npz", {"norm": "max"}, 0.28568567803516487),
    # Random forests: probabilities are multiples of 1/n_trees, on bin edges.
    ("pycalib/mnist__random_forest.npz", {}, 0.14299199817329647),
    ("pycalib/mnist__random_forest.npz", {"kind": "classwise"}, 0.028581199677586554),
    (
        "pycalib/kitti__random_forest.npz",
        {"kind": "classwise", "n_bins": 10},
        0.07310461970937525,
    ),
    (
        "splinecalib/testset_mozilla4_1046_rf.npz",
        {"kind": "classwise", "n_bins": 10},
        0.014131552782837602,
    ),
]


@pytest.mark.parametrize("relpath, kwargs, pinned", PINNED)
def test_pinned_variants(relpath, kwargs, pinned):
    p, y = _load(relpath)
    assert expected_calibration_error(y, p, **kwargs) == pytest.approx(
        pinned, abs=1e-12
    )


@pytest.mark.parametrize(
    "relpath",
    ["pycalib/kitti__random_forest.npz", "splinecalib/testset_airlines_42493_rf.npz"],
)
def test_binary_curve_matches_sklearn_calibration_curve(relpath):
    p, y = _load(relpath)
    pos = p[:, 1].astype(np.float64)
    for n_bins in (5, 10, 20):
        prob_true, prob_pred = calibration_curve(y, pos, n_bins=n_bins)
        c = reliability_curve(y, pos, n_bins=n_bins, kind="classwise")
        np.testing.assert_allclose(c.accuracy[c.nonempty], prob_true, rtol=1e-12)
        np.testing.assert_allclose(c.mean_confidence[c.nonempty], prob_pred, rtol=1e-12)
        # float32 input (as stored): edges are compared in float32, so a
        # forest's k/n probability on a float32 edge lands in the lower bin.
        p32 = p[:, 1]
        assert p32.dtype == np.float32
        c32 = reliability_curve(y, p32, n_bins=n_bins, kind="classwise")
        edges32 = np.linspace(0, 1, n_bins + 1).astype(np.float32)
        ids = np.searchsorted(edges32[1:-1], p32, side="left")
        counts = np.bincount(ids, minlength=n_bins)
        np.testing.assert_array_equal(c32.n_samples, counts)
        filled = counts > 0
        hits = np.bincount(ids, weights=y, minlength=n_bins)
        np.testing.assert_allclose(
            c32.accuracy[filled], hits[filled] / counts[filled], rtol=1e-12
        )
        # Off the edges, float32 and sklearn's float64 binning agree.
        off = ~np.isin(p32, edges32[1:-1])
        prob_true, prob_pred = calibration_curve(
            y[off], p32[off].astype(np.float64), n_bins=n_bins
        )
        c_off = reliability_curve(y[off], p32[off], n_bins=n_bins, kind="classwise")
        np.testing.assert_allclose(c_off.accuracy[c_off.nonempty], prob_true)
        np.testing.assert_allclose(
            c_off.mean_confidence[c_off.nonempty], prob_pred, rtol=1e-6
        )


def test_forest_probabilities_sit_on_edges():
    p, y = _load("pycalib/mnist__random_forest.npz")
    edges = np.linspace(0, 1, 16).astype(np.float32)
    conf = p.max(axis=1)
    assert (
        np.isin(conf, edges).any()
        or np.isin(p, np.linspace(0, 1, 11).astype(np.float32)).any()
    )
    on = np.isin(p, np.linspace(0, 1, 11).astype(np.float32)[1:-1])
    assert on.sum() > 1000  # plenty of probabilities exactly on the 10-bin edges
    # And they land in the lower bin: compare with an explicit searchsorted.
    col = p[:, 0]
    c = reliability_curve(y, p, n_bins=10, kind="classwise", class_index=0)
    ids = np.searchsorted(
        np.linspace(0, 1, 11)[1:-1].astype(np.float32), col, side="left"
    )
    np.testing.assert_array_equal(c.n_samples, np.bincount(ids, minlength=10))
