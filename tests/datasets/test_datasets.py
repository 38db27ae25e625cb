import numpy as np
import pytest

from skcalib import TemperatureCalibrator
from skcalib.datasets import list_datasets, load_predictions, make_miscalibrated_scores


@pytest.mark.parametrize("name", list_datasets())
def test_builtin_sets_are_valid_predictions(name):
    data = load_predictions(name)
    assert data.probs.dtype == np.float32 and data.labels.dtype == np.int64
    assert data.probs.shape[0] == data.labels.shape[0] > 5000
    np.testing.assert_allclose(data.probs.sum(axis=1), 1.0, atol=1e-5)
    assert set(np.unique(data.labels)) == set(range(data.probs.shape[1]))
    assert data.license and data.source


def test_cifar10_builtin_matches_the_data_readme_reference():
    # ../shared/data/README.md: wideresnet-16-4-cifar-10 accuracy 0.9109
    data = load_predictions("cifar10_wideresnet")
    assert np.mean(data.probs.argmax(axis=1) == data.labels) == pytest.approx(0.9109)


def test_subsets_and_errors():
    cal = load_predictions("airlines_catboost", subset="calibration")
    test = load_predictions("airlines_catboost", subset="test")
    both = load_predictions("airlines_catboost")
    assert both.labels.size == cal.labels.size + test.labels.size
    with pytest.raises(ValueError, match="Unknown dataset 'mnist'"):
        load_predictions("mnist")
    with pytest.raises(ValueError, match="subsets"):
        load_predictions("kitti_random_forest", subset="test")


def test_synthetic_scores_have_the_stated_calibration_map():
    logits, y, true_proba = make_miscalibrated_scores(
        60000, 4, temperature=2.5, random_state=0
    )
    np.testing.assert_allclose(
        true_proba,
        np.exp(logits / 2.5) / np.exp(logits / 2.5).sum(axis=1, keepdims=True),
        rtol=1e-12,
    )
    # labels are drawn from true_proba: class frequencies match within noise
    freq = np.bincount(y, minlength=4) / y.size
    np.testing.assert_allclose(freq, true_proba.mean(axis=0), atol=0.01)
    # the maximum-likelihood temperature recovers the true one
    assert TemperatureCalibrator().fit(logits, y).temperature_ == pytest.approx(
        2.5, rel=0.03
    )
    # deterministic given random_state
    again = make_miscalibrated_scores(60000, 4, temperature=2.5, random_state=0)
    np.testing.assert_array_equal(again[1], y)
