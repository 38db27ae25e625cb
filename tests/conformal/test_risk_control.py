"""ConformalRiskController: lambda_hat against a slow scan of every
candidate, the equality with split-conformal LAC sets, wrapper mode on
multi-label classifiers, and refused input."""

import numpy as np
import pytest
from sklearn.datasets import make_multilabel_classification
from sklearn.linear_model import LogisticRegression
from sklearn.multiclass import OneVsRestClassifier
from sklearn.multioutput import MultiOutputClassifier
from sklearn.neighbors import KNeighborsClassifier

from skcalib import ConformalClassifier
from skcalib.conformal import ConformalRiskController


def _slow_lambda(P, Y, alpha, w=None):
    """The definition, looped: scan lambda over 0, 1 and every 1 - p of a
    true label in increasing order, recompute the weighted loss row by row
    and label by label, return the first lambda with
    ``(sum_i w_i L_i + 1) <= alpha (W + 1)`` (1 when none)."""
    n, n_labels = P.shape
    w = np.ones(n) if w is None else w
    cands = {0.0, 1.0}
    for i in range(n):
        for j in range(n_labels):
            if Y[i, j]:
                cands.add(float(1 - P[i, j]))
    W = float(sum(w))
    for lam in sorted(cands):
        total = 0.0
        for i in range(n):
            labels = [j for j in range(n_labels) if Y[i, j]]
            if not labels:
                continue  # no true label: loss 0
            missed = sum(1 for j in labels if not (1 - P[i, j] <= lam))
            total += w[i] * missed / len(labels)
        if total + 1.0 <= alpha * (W + 1.0) + 1e-10 * (W + 1.0):
            return lam
    return 1.0


def _tied_data(seed, n=30, n_labels=4):
    rng = np.random.default_rng(seed)
    P = np.round(rng.uniform(size=(n, n_labels)), 1)  # one decimal: many ties
    Y = (rng.uniform(size=(n, n_labels)) < 0.4).astype(int)
    Y[rng.uniform(size=n) < 0.15] = 0  # some rows without a true label
    return P, Y


@pytest.mark.parametrize("seed", range(12))
def test_lambda_matches_the_slow_scan(seed):
    P, Y = _tied_data(seed)
    n = len(P)
    # random levels and exact levels k / (n + 1), where the rule is an equality
    for alpha in (0.05, 0.1, 0.23, 0.4, 3 / (n + 1), 5 / (n + 1)):
        crc = ConformalRiskController(loss="fnr", alpha=alpha).fit(P, Y)
        assert crc.lambda_ == _slow_lambda(P, Y, alpha), alpha
        assert crc.threshold_ == 1 - crc.lambda_


@pytest.mark.parametrize("seed", range(6))
def test_weighted_lambda_matches_the_slow_scan_and_duplicates(seed):
    P, Y = _tied_data(seed, n=25)
    w = np.random.default_rng(seed).integers(0, 4, size=len(P)).astype(float)
    w[0] = 1.0
    rep = np.repeat(np.arange(len(P)), w.astype(int))
    for alpha in (0.08, 0.15, 0.3):
        crc = ConformalRiskController(alpha=alpha).fit(P, Y, sample_weight=w)
        assert crc.lambda_ == _slow_lambda(P, Y, alpha, w)
        dup = ConformalRiskController(alpha=alpha).fit(P[rep], Y[rep])
        assert crc.lambda_ == dup.lambda_  # weight 2 == a duplicated row


def test_hand_computed_example():
    # four rows, two labels each: scores 1 - p of the true labels
    P = np.array([[0.9, 0.5], [0.8, 0.2], [0.6, 0.7], [0.3, 0.0]])
    Y = np.array([[1, 1], [1, 0], [0, 1], [1, 1]])
    # true-label scores: 0.1, 0.5 | 0.2 | 0.3 | 0.7, 1.0 with weights
    # 1/2, 1/2, 1, 1, 1/2, 1/2; alpha = 0.5: need sum L + 1 <= 2.5, so
    # sum L <= 1.5. At lambda = 0.3: row 1 misses 0.5 (1/2), row 4 misses
    # both (1): 1.5, passes; at 0.2 row 3 misses too: 2.5.
    crc = ConformalRiskController(alpha=0.5).fit(P, Y)
    assert crc.lambda_ == pytest.approx(1 - 0.7)
    assert crc.calibration_risk_ == pytest.approx(1.5 / 4)
    np.testing.assert_array_equal(
        crc.predict_set(P),
        [[True, False], [True, False], [False, True], [False, False]],
    )


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("weighted", [False, True])
def test_miscoverage_is_split_conformal_lac(seed, weighted):
    rng = np.random.default_rng(seed)
    n, k = 200, 5
    P = rng.dirichlet(np.ones(k) * 0.7, size=n)
    P = np.round(P, 2)
    P /= P.sum(axis=1, keepdims=True)
    y = np.array([rng.choice(k, p=p) for p in P])
    w = rng.integers(0, 3, size=n).astype(float) if weighted else None
    test = rng.dirichlet(np.ones(k), size=50)
    for alpha in (0.05, 0.1, 0.2):
        crc = ConformalRiskController(loss="miscoverage", alpha=alpha)
        crc.fit(P, y, sample_weight=w)
        lac = ConformalClassifier(method="lac", alpha=alpha)
        lac.fit(P, y, sample_weight=w)
        assert crc.lambda_ == lac.threshold_
        np.testing.assert_array_equal(crc.predict_set(test), lac.predict_set(test))
        np.testing.assert_array_equal(crc.classes_, lac.classes_)


def test_miscoverage_too_few_samples_gives_full_sets_like_lac():
    P = np.array([[0.7, 0.3], [0.4, 0.6], [0.8, 0.2]])
    y = np.array([0, 1, 1])
    with pytest.warns(UserWarning, match=r"below B / \(n \+ 1\) = 0.25"):
        crc = ConformalRiskController(alpha=0.2).fit(P, y)
    with pytest.warns(UserWarning, match="infinite"):
        lac = ConformalClassifier(alpha=0.2).fit(P, y)
    assert crc.lambda_ == 1.0 and np.isinf(lac.threshold_)
    assert crc.predict_set(P).all() and lac.predict_set(P).all()


def test_one_hot_fnr_equals_miscoverage():
    rng = np.random.default_rng(3)
    P = rng.dirichlet(np.ones(4), size=100)
    y = rng.integers(0, 4, size=100)
    onehot = np.eye(4, dtype=int)[y]
    a = ConformalRiskController(alpha=0.1).fit(P, onehot)
    b = ConformalRiskController(alpha=0.1).fit(P, y)
    assert (a.loss_, b.loss_) == ("fnr", "miscoverage")
    assert a.lambda_ == b.lambda_
    np.testing.assert_array_equal(a.predict_set(P), b.predict_set(P))


def test_infeasible_alpha_gives_full_sets():
    P, Y = _tied_data(0, n=8)
    with pytest.warns(UserWarning, match="every set holds every label") as rec:
        crc = ConformalRiskController(alpha=0.1).fit(P, Y)  # 0.1 < 1 / 9
    assert rec[0].filename == __file__  # points at the caller
    with pytest.warns(UserWarning, match="every set") as rec:
        ConformalRiskController(alpha=0.1).fit(P / P.sum(1)[:, None], np.arange(8) % 4)
    assert rec[0].filename == __file__
    with pytest.warns(UserWarning, match="alpha=0.05 is below") as rec:
        ConformalRiskController(alpha=0.2).fit(P, Y).predict_set(P, alpha=[0.05, 0.2])
    assert rec[0].filename == __file__
    assert crc.lambda_ == 1.0 and crc.predict_set(P).all()


def test_rows_without_labels_count_with_loss_zero():
    P, Y = _tied_data(1)
    empty = np.zeros((10, Y.shape[1]), dtype=int)
    crc = ConformalRiskController(alpha=0.2).fit(P, Y)
    more = ConformalRiskController(alpha=0.2).fit(
        np.vstack([P, np.full((10, Y.shape[1]), 0.5)]), np.vstack([Y, empty])
    )
    # more rows of loss 0 allow a larger risk on the others: smaller lambda
    assert more.lambda_ <= crc.lambda_
    assert more.lambda_ == _slow_lambda(
        np.vstack([P, np.full((10, Y.shape[1]), 0.5)]), np.vstack([Y, empty]), 0.2
    )


def test_several_levels_are_nested_and_match_refits():
    P, Y = _tied_data(4, n=60)
    alphas = [0.05, 0.1, 0.2, 0.4]
    crc = ConformalRiskController(alpha=0.1).fit(P, Y)
    sets = crc.predict_set(P, alpha=alphas)
    assert sets.shape == (60, 4, 4)
    for a, alpha in enumerate(alphas):
        ref = ConformalRiskController(alpha=alpha).fit(P, Y).predict_set(P)
        np.testing.assert_array_equal(sets[:, :, a], ref)
    assert (sets[:, :, 1:] <= sets[:, :, :-1]).all()
    np.testing.assert_array_equal(crc.predict_set(P, alpha=0.1), crc.predict_set(P))


@pytest.fixture(scope="module")
def multilabel():
    X, Y = make_multilabel_classification(
        n_samples=400, n_features=8, n_classes=4, n_labels=2, random_state=0
    )
    return X[:200], Y[:200], X[200:], Y[200:]


@pytest.mark.parametrize(
    "model",
    [
        OneVsRestClassifier(LogisticRegression(max_iter=500)),  # (n, L) matrix
        MultiOutputClassifier(LogisticRegression(max_iter=500)),  # list of (n, 2)
        KNeighborsClassifier(n_neighbors=7),  # list, classes_ per label
    ],
    ids=["ovr", "multioutput", "knn"],
)
def test_wrapper_mode_equals_raw_mode(multilabel, model):
    X_tr, Y_tr, X_cal, Y_cal = multilabel
    model.fit(X_tr, Y_tr)
    before = model.predict_proba(X_cal)
    crc = ConformalRiskController(model, alpha=0.1).fit(X_cal, Y_cal)
    proba = crc.predict_proba(X_cal)
    raw = ConformalRiskController(alpha=0.1).fit(proba, Y_cal)
    assert crc.loss_ == "fnr" and crc.lambda_ == raw.lambda_
    np.testing.assert_array_equal(crc.classes_, np.arange(4))
    np.testing.assert_array_equal(crc.predict_set(X_cal), raw.predict_set(proba))
    np.testing.assert_array_equal(crc.predict(X_cal), (proba >= 0.5).astype(int))
    after = model.predict_proba(X_cal)  # never refit
    np.testing.assert_array_equal(np.asarray(before), np.asarray(after))
    assert crc.n_features_in_ == 8


def test_raw_logits_and_label_names():
    P, Y = _tied_data(2)
    P = np.clip(P, 0.05, 0.95)
    logits = np.log(P / (1 - P))
    a = ConformalRiskController(alpha=0.2, score_type="logit").fit(logits, Y)
    b = ConformalRiskController(alpha=0.2).fit(P, Y)
    assert a.lambda_ == pytest.approx(b.lambda_, abs=1e-12)
    c = ConformalRiskController(alpha=0.2, classes=["a", "b", "c", "d"]).fit(P, Y)
    assert c.classes_.tolist() == ["a", "b", "c", "d"]
    np.testing.assert_array_equal(c.predict_proba(P), P)


# ------------------------------------------------------------- bad input
_P = np.array([[0.2, 0.9], [0.6, 0.4], [0.7, 0.1]])
_Y = np.array([[0, 1], [1, 1], [1, 0]])
_PM = np.array([[0.2, 0.8], [0.6, 0.4], [0.7, 0.3]])  # rows sum to 1


@pytest.mark.parametrize("alpha", [0.0, 1.0, -0.1, 1.5])
def test_alpha_out_of_range(alpha):
    with pytest.raises(ValueError, match="alpha"):
        ConformalRiskController(alpha=alpha).fit(_P, _Y)


def test_wrong_form_of_y_for_the_loss():
    with pytest.raises(
        ValueError, match="loss='fnr' needs a label-indicator.*loss='miscoverage'"
    ):
        ConformalRiskController(loss="fnr").fit(_P, np.array([0, 1, 1]))
    with pytest.raises(
        ValueError, match="loss='miscoverage' needs one class.*loss='fnr'"
    ):
        ConformalRiskController(loss="miscoverage").fit(_P, _Y)
    with pytest.raises(ValueError, match=r"y\[0, 1\] = 2"):
        ConformalRiskController(loss="fnr").fit(_P, np.array([[0, 2], [1, 1], [1, 0]]))
    with pytest.raises(ValueError, match="has 3 labels .* 2 expected"):
        ConformalRiskController(loss="fnr").fit(_P, np.ones((3, 3), dtype=int))


@pytest.mark.parametrize(
    "value, match",
    [
        (np.nan, "non-finite value nan at row 1, label 0"),
        (np.inf, "non-finite value inf"),
        (1.2, r"X\[1, 0\] = 1.2: loss='fnr' needs per-label probabilities in \[0, 1\]"),
        (-0.1, r"X\[1, 0\] = -0.1"),
    ],
)
def test_bad_probabilities(value, match):
    P = _P.copy()
    P[1, 0] = value
    with pytest.raises(ValueError, match=match):
        ConformalRiskController(alpha=0.3).fit(P, _Y)
    crc = ConformalRiskController(alpha=0.3).fit(_P, _Y)
    with pytest.raises(ValueError, match=match):
        crc.predict_set(P)


def test_bad_probabilities_miscoverage():
    P = np.array([[0.2, 0.8], [np.nan, 0.5], [0.5, 0.5]])
    with pytest.raises(ValueError, match="NaN"):
        ConformalRiskController().fit(P, [0, 1, 1])
    P = np.array([[0.2, 0.9], [1.3, 0.5], [0.5, 0.5]])
    with pytest.raises(ValueError, match="probabilit"):
        ConformalRiskController(score_type="probability").fit(P, [0, 1, 1])


@pytest.mark.parametrize(
    "w, match",
    [
        ([1.0, -1.0, 1.0], "Negative values"),
        ([1.0, np.nan, 1.0], "NaN"),
        ([0.0, 0.0, 0.0], "zero"),
    ],
)
@pytest.mark.parametrize("y", [_Y, np.array([0, 1, 1])], ids=["fnr", "miscoverage"])
def test_bad_sample_weight(w, match, y):
    with pytest.raises(ValueError, match=match):
        X = _P if y.ndim == 2 else _PM
        ConformalRiskController().fit(X, y, sample_weight=np.array(w))


def test_decision_function_refused_for_fnr(multilabel):
    X_tr, Y_tr, X_cal, Y_cal = multilabel
    model = OneVsRestClassifier(LogisticRegression(max_iter=500)).fit(X_tr, Y_tr)
    crc = ConformalRiskController(model, response_method="decision_function")
    with pytest.raises(ValueError, match="response_method='decision_function'"):
        crc.fit(X_cal, Y_cal)


def test_predict_checks_columns(multilabel):
    crc = ConformalRiskController(alpha=0.3).fit(_P, _Y)
    with pytest.raises(ValueError, match="features"):
        crc.predict_set(np.full((2, 3), 0.5))
