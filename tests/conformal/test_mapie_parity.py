"""Parity with MAPIE 1.6 (``mapie.classification.SplitConformalClassifier``)
on the same probabilities: thresholds and sets of LAC, top-k, APS (with and
without the last label) and RAPS, at several levels.

Where MAPIE differs, the cause is reproduced:

* top-k: MAPIE's score is the 0-based rank, ours the 1-based one (its
  threshold is ours minus 1; the sets agree);
* APS / RAPS: MAPIE always computes its threshold from randomised scores
  ``cumsum_y - U p_y`` (``U`` from its ``random_state``), also for
  ``include_last_label=True`` or ``False``; given the same uniforms
  (``u = 1 - U``) the thresholds agree, and given its threshold the sets
  agree. skcalib's non-randomised sets use non-randomised scores, so that
  ``include_last_label=False`` keeps the guarantee (MAPIE's can under-cover);
* RAPS tuning: MAPIE sets ``size_raps`` aside but its ``SplitConformalClassifier``
  passes ``size_raps=None`` on, so sklearn's ``StratifiedShuffleSplit``
  default (10%) is used, not the documented 20%; its ``k_star`` is our
  ``choose_k_reg`` on the same rows; its search for ``lambda_star`` builds the
  sets with ``k_reg = lambda`` (``k_star = cast(int, lambda_)`` in
  ``RAPSConformityScore._add_regularization``), which we reproduce to get its
  value, while ``choose_lam`` uses the ``k_reg`` it was given.
"""

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.model_selection import StratifiedShuffleSplit

from skcalib import ConformalClassifier
from skcalib.conformal._quantile import conformal_quantile
from skcalib.conformal._raps_tuning import LAMBDA_GRID, choose_k_reg, choose_lam
from skcalib.conformal._scores import label_scores, prediction_sets

mapie_classification = pytest.importorskip("mapie.classification")

ALPHAS = np.array([0.05, 0.1, 0.2])
SEED = 3


class _Probabilities(ClassifierMixin, BaseEstimator):
    """A fitted 'classifier' whose ``predict_proba`` returns ``X``."""

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        return self

    def predict_proba(self, X):
        return np.asarray(X)

    def predict(self, X):
        return self.classes_[np.argmax(X, axis=1)]


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    k, n = 6, 1500
    y = rng.integers(0, k, n)
    logits = rng.normal(size=(n, k)) + 2.0 * np.eye(k)[y]
    p = np.exp(logits)
    p /= p.sum(axis=1, keepdims=True)
    return p[:1000], y[:1000], p[1000:]


def _mapie(data, score, include_last_label=True):
    p_cal, y_cal, p_test = data
    m = mapie_classification.SplitConformalClassifier(
        _Probabilities().fit(p_cal, y_cal),
        confidence_level=list(1 - ALPHAS),
        conformity_score=score,
        prefit=True,
        random_state=SEED,
    )
    m.conformalize(p_cal, y_cal)
    _, sets = m.predict_set(
        p_test, conformity_score_params={"include_last_label": include_last_label}
    )
    return m._mapie_classifier.conformity_score_function_, sets


def test_lac_and_top_k_equal_mapie(data):
    p_cal, y_cal, p_test = data
    for method, score, offset in (("lac", "lac", 0), ("top_k", "top_k", 1)):
        cs, sets = _mapie(data, score)
        cp = ConformalClassifier(method=method).fit(p_cal, y_cal)
        ours = cp.predict_set(p_test, alpha=ALPHAS)
        thresholds = np.array(
            [conformal_quantile(label_scores(p_cal, y_cal, method), a) for a in ALPHAS]
        )
        np.testing.assert_allclose(thresholds, cs.quantiles_ + offset, rtol=1e-12)
        np.testing.assert_array_equal(ours, sets)
    assert len(np.unique(ours.sum(axis=1))) <= len(ALPHAS)  # one size per level


@pytest.mark.parametrize("include_last_label", [True, False])
def test_aps_equals_mapie_given_its_uniforms(data, include_last_label):
    p_cal, y_cal, p_test = data
    cs, sets = _mapie(data, "aps", include_last_label)
    u = 1 - np.random.RandomState(SEED).uniform(size=y_cal.size)
    s = label_scores(p_cal, y_cal, "aps", u)
    thresholds = [conformal_quantile(s, a) for a in ALPHAS]
    np.testing.assert_allclose(thresholds, cs.quantiles_, rtol=1e-12)
    ours = np.stack(
        [
            prediction_sets(
                p_test,
                "aps",
                t,
                include_top=True,
                include_last_label=include_last_label,
            )
            for t in cs.quantiles_
        ],
        axis=-1,
    )
    np.testing.assert_array_equal(ours, sets)
    # our own non-randomised threshold is higher (MAPIE's scores are smaller)
    own = ConformalClassifier(method="aps", randomized=False).fit(p_cal, y_cal)
    assert (own._thresholds(ALPHAS) >= cs.quantiles_).all()


def _mapie_lambda(p, y, alpha, k_star):
    """MAPIE's search for lambda_star: the sets of the search use
    ``k_reg = lambda`` (its ``_add_regularization``), the threshold ``k_star``."""
    best, best_size = 0.0, np.inf
    for lam in LAMBDA_GRID:
        s = label_scores(p, y, "raps", k_reg=k_star, lam=lam)
        t = conformal_quantile(s, alpha)
        sets = prediction_sets(p, "raps", t, include_top=True, k_reg=lam, lam=lam)
        size = sets.sum(axis=1).mean()
        if size < best_size - 1e-8:
            best, best_size = lam, size
    return best


@pytest.mark.parametrize("include_last_label", [True, False])
def test_raps_equals_mapie_and_its_tuning_is_explained(data, include_last_label):
    p_cal, y_cal, p_test = data
    cs, sets = _mapie(data, "raps", include_last_label)
    # the rows MAPIE sets aside: 10% (size_raps=None reaches the splitter)
    cal, tune = next(
        StratifiedShuffleSplit(n_splits=1, random_state=SEED).split(p_cal, y_cal)
    )
    assert tune.size == 100 and len(cs.y_raps) == 100
    np.testing.assert_array_equal(cs.y_raps, y_cal[tune])
    k_reg = [choose_k_reg(p_cal[tune], y_cal[tune], a) for a in ALPHAS]
    np.testing.assert_array_equal(cs.k_star, k_reg)
    mapie_lam = [
        _mapie_lambda(p_cal[tune], y_cal[tune], a, k)
        for a, k in zip(ALPHAS, k_reg, strict=True)
    ]
    np.testing.assert_array_equal(cs.lambda_star, mapie_lam)
    ours_lam = [
        choose_lam(p_cal[tune], y_cal[tune], a, k)
        for a, k in zip(ALPHAS, k_reg, strict=True)
    ]
    assert ours_lam != mapie_lam  # the k_reg of the search is the difference
    # given its k_star, lambda_star and uniforms: the same thresholds and sets
    u = 1 - np.random.RandomState(SEED).uniform(size=cal.size)
    for a, alpha in enumerate(ALPHAS):
        params = {"k_reg": cs.k_star[a], "lam": cs.lambda_star[a]}
        s = label_scores(p_cal[cal], y_cal[cal], "raps", u, **params)
        assert conformal_quantile(s, alpha) == pytest.approx(
            cs.quantiles_[a], rel=1e-12
        )
        ours = prediction_sets(
            p_test,
            "raps",
            cs.quantiles_[a],
            include_top=True,
            include_last_label=include_last_label,
            **params,
        )
        np.testing.assert_array_equal(ours, sets[:, :, a])
