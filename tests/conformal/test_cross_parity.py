"""CrossConformalClassifier against MAPIE 1.6's CrossConformalClassifier
(``agg_scores="crossval"``, Romano et al.'s CV+) on the same data and folds.

LAC: the out-of-fold scores are the same, and so are the sets whenever the
two level conventions give the same integer cut. They differ in the level
only: a class is kept when the number ``c`` of calibration scores at least
as large as its own satisfies ``c > alpha (n + 1) - 1`` here (Romano et
al.'s ``sum_i [s_i < s] < (1 - alpha)(n + 1)``, i.e. Vovk's p-value ``(1 +
c) / (n + 1) > alpha``), ``c >= alpha (n - 1)`` in MAPIE; with ``alpha <
1/2`` MAPIE's cut is the same or one higher (smaller sets).

APS: MAPIE always randomises the calibration scores (``m_y + u p_y``, also
with ``include_last_label=True``); ours are the non-randomised ``m_y +
p_y`` unless ``randomized=True``.
"""

import warnings

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import KFold

from skcalib.conformal._cross import CrossConformalClassifier

mapie_classification = pytest.importorskip("mapie.classification")

ALPHAS = np.array([0.05, 0.1, 0.2])
EPSILON = 1e-8  # mapie._machine_precision.EPSILON, for its comparisons


def _fit_both(n, method):
    X, y = make_classification(1200, n_classes=4, n_informative=6, random_state=1)
    X_test = X[700:]
    X, y = X[:n], y[:n]
    cv = KFold(5, shuffle=True, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # MAPIE's deprecation notes
        theirs = mapie_classification.CrossConformalClassifier(
            LogisticRegression(),
            confidence_level=list(1 - ALPHAS),
            conformity_score=method,
            cv=cv,
            random_state=0,
        ).fit_conformalize(X, y)
        _, their_sets = theirs.predict_set(X_test, agg_scores="crossval")
    # ours non-randomised (explicitly: APS is randomised by default), MAPIE's
    # calibration scores randomised
    ours = CrossConformalClassifier(
        LogisticRegression(), cv=cv, method=method, randomized=False
    )
    ours.fit(X, y)
    return ours, theirs, X_test, their_sets


def _at_least_as_large(cp, X_test):
    """``c[j, k]``: calibration scores >= the LAC score of (x_j, k), each
    under its own fold's model."""
    counts = np.zeros((len(X_test), cp.classes_.size))
    for f, model in enumerate(cp.estimators_):
        s_test = 1 - model.predict_proba(X_test)
        s_cal = cp.conformity_scores_[cp.fold_of_sample_ == f]
        counts += (s_cal[None, None, :] >= s_test[:, :, None]).sum(axis=2)
    return counts


@pytest.mark.parametrize("n", [700, 105, 205])
def test_lac_sets_differ_from_mapie_by_the_level_only(n):
    ours, theirs, X_test, their_sets = _fit_both(n, "lac")
    np.testing.assert_allclose(  # in sample order
        ours.conformity_scores_, theirs.conformity_scores.ravel()
    )
    c = _at_least_as_large(ours, X_test)[:, :, None]
    np.testing.assert_array_equal(their_sets, c - ALPHAS * (n - 1) >= -EPSILON)
    our_sets = ours.predict_set(X_test, alpha=ALPHAS)
    np.testing.assert_array_equal(our_sets, c > ALPHAS * (n + 1) - 1)
    same_cut = np.floor(ALPHAS * (n + 1) - 1) + 1 == np.ceil(ALPHAS * (n - 1))
    for j in range(ALPHAS.size):
        if same_cut[j]:
            np.testing.assert_array_equal(our_sets[:, :, j], their_sets[:, :, j])
        else:  # MAPIE's cut is one higher: its sets are inside ours
            assert (their_sets[:, :, j] <= our_sets[:, :, j]).all()
            assert (their_sets[:, :, j] != our_sets[:, :, j]).any()
    assert same_cut.all() == (n == 700)


def test_aps_calibration_scores_are_randomised_in_mapie():
    ours, theirs, _, _ = _fit_both(700, "aps")
    X, y = make_classification(1200, n_classes=4, n_informative=6, random_state=1)
    X, y = X[:700], y[:700]
    # p_y of each sample under its fold's model: ours minus MAPIE's score is
    # (1 - u) p_y with u in [0, 1]
    p_y = np.empty(700)
    for f, (_, test) in enumerate(ours.folds_):
        p = ours.estimators_[f].predict_proba(X[test])
        p_y[test] = p[np.arange(test.size), y[test]]
    # both store the scores in sample order (the LAC test checks it)
    diff = ours.conformity_scores_ - theirs.conformity_scores.ravel()
    frac = diff / p_y
    assert (frac >= -1e-9).all() and (frac <= 1 + 1e-9).all()
    assert 0.3 < frac.mean() < 0.7  # uniform, not a fixed shift
