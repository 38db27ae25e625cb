"""The opt-in cache of a wrapped classifier's scores (issue 23, target 4).

Reference for every result: the same call without the cache (``clf``'s own
``decision_function`` / ``predict_proba`` and an uncached search), compared
bit for bit.
"""

import pickle
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from _data import classification_split
from _discovery import calibrator_configs, outputs, takes_features
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from skcalib import HistogramBinningCalibrator, PlattCalibrator
from skcalib._core import score_rows
from skcalib._core.score_cache import ScoreCache, active_score_cache, content_hash
from skcalib.metrics import ece_scorer

BOTH = [{}, {"reuse_rows": True}]
IDS = ["whole arrays", "reuse_rows"]


class Counting:
    """A fitted classifier that counts the rows its methods are given (the
    count is left out of its pickle, so it does not change the key)."""

    def __init__(self, clf):
        self.clf, self.rows, self.calls = clf, 0, 0

    def __getstate__(self):
        return {"clf": self.clf}

    def __setstate__(self, state):
        self.__init__(state["clf"])

    def __sklearn_is_fitted__(self):
        return True

    def __sklearn_tags__(self):
        return self.clf.__sklearn_tags__()

    def fit(self, X, y):  # pragma: no cover - never called by a calibrator
        raise AssertionError("a calibrator refit its prefit estimator")

    @property
    def classes_(self):
        return self.clf.classes_

    def decision_function(self, X):
        self.rows += len(X)
        self.calls += 1
        return self.clf.decision_function(X)


@pytest.fixture(scope="module")
def problem():
    X, y = make_classification(1600, n_features=6, random_state=0)
    hgb = HistGradientBoostingClassifier(max_iter=15, random_state=0)
    return hgb.fit(X[:600], y[:600]), X[600:], y[600:]


def _search(estimator, X, y):
    search = GridSearchCV(
        HistogramBinningCalibrator(estimator=estimator),
        {"n_bins": [4, 8, 16]},
        scoring=ece_scorer,
        cv=5,
    )
    return search.fit(X, y)


def _split_scores(search):
    res = search.cv_results_
    return np.column_stack([res[f"split{i}_test_score"] for i in range(5)])


@pytest.mark.parametrize("options", BOTH, ids=IDS)
def test_grid_search_same_results_scores_computed_once(problem, options):
    clf, X, y = problem
    reference = _search(clf, X, y)
    counted = Counting(clf)
    with ScoreCache(**options) as cache:
        search = _search(counted, X, y)
    calls, rows = counted.calls, counted.rows
    np.testing.assert_array_equal(_split_scores(search), _split_scores(reference))
    assert search.best_params_ == reference.best_params_
    np.testing.assert_array_equal(
        search.predict_proba(X[:50]), reference.predict_proba(X[:50])
    )
    # 3 candidates x 5 folds x (fit on train, score on test) + the refit
    assert cache.hits + cache.misses == 31
    if options:  # the first fold's train and test parts hold every row
        assert (cache.misses, rows) == (2, len(X))
    else:  # 5 train + 5 test folds + the full X of the refit
        assert cache.misses == calls == 11
    assert active_score_cache() is None


@pytest.mark.parametrize("options", BOTH, ids=IDS)
def test_refit_model_gives_new_scores(options):
    X, y = make_classification(600, random_state=1)
    clf = LogisticRegression().fit(X[:200], y[:200])
    with ScoreCache(**options) as cache:
        cal = PlattCalibrator(estimator=clf).fit(X[200:400], y[200:400])
        before = cal.predict_proba(X[400:])
        clf.fit(X[200:400][::-1] * 3.0, y[200:400][::-1])  # same object, new state
        refit = PlattCalibrator(estimator=clf).fit(X[200:400], y[200:400])
        after = refit.predict_proba(X[400:])
    fresh = PlattCalibrator(estimator=clf).fit(X[200:400], y[200:400])
    np.testing.assert_array_equal(after, fresh.predict_proba(X[400:]))
    assert not np.allclose(before, after)
    assert cache.hits == 0


@pytest.mark.parametrize("options", BOTH, ids=IDS)
def test_set_params_on_model_gives_new_key(options):
    X, y = make_classification(300, random_state=2)
    clf = LogisticRegression().fit(X, y)
    with ScoreCache(**options) as cache:
        cache.scores(clf, "decision_function", X)
        clf.set_params(C=0.5)  # a parameter is state too: conservative
        cache.scores(clf, "decision_function", X)
        cache.scores(clf, "predict_proba", X)  # another method, another key
    assert (cache.hits, cache.misses) == (0, 3)


@pytest.mark.parametrize("options", BOTH, ids=IDS)
def test_in_place_change_of_X_gives_new_scores(problem, options):
    clf, X, _ = problem
    X = X.copy()
    with ScoreCache(**options) as cache:
        first = cache.scores(clf, "decision_function", X)
        X[7, 2] += 1.0
        X[-1] = 0.0
        second = cache.scores(clf, "decision_function", X)
    np.testing.assert_array_equal(second, clf.decision_function(X))
    assert first[7] != second[7]
    assert cache.hits == 0


def test_reuse_rows_predicts_only_new_rows(problem):
    clf, X, _ = problem
    counted = Counting(clf)
    with ScoreCache(reuse_rows=True) as cache:
        cache.scores(counted, "decision_function", X[:300])
        cache.scores(counted, "decision_function", X[200:500])
        mixed = X[[450, 3, 3, 499, 120]]  # repeated and out-of-order rows
        got = cache.scores(counted, "decision_function", mixed)
        X_f = np.asfortranarray(X[100:400])
        got_f = cache.scores(counted, "decision_function", X_f)
    assert counted.rows == 500  # rows 300..499 once, the rest found
    np.testing.assert_array_equal(got, clf.decision_function(mixed))
    np.testing.assert_array_equal(got_f, clf.decision_function(X_f))
    assert (cache.hits, cache.misses) == (2, 2)


def test_reuse_rows_hash_collision_is_caught(problem, monkeypatch):
    clf, X, _ = problem
    monkeypatch.setattr(
        "skcalib._core.score_cache.row_hashes",
        lambda rows: np.zeros(len(rows), dtype=np.uint64),
    )
    counted = Counting(clf)
    with ScoreCache(reuse_rows=True) as cache:
        cache.scores(counted, "decision_function", X[:100])
        got = cache.scores(counted, "decision_function", X[50:150])
    np.testing.assert_array_equal(got, clf.decision_function(X[50:150]))
    # every hash collides: only the byte check tells rows apart
    assert counted.rows > 100


def test_row_hashes_of_equal_rows_are_equal():
    rng = np.random.default_rng(0)
    for X in (rng.normal(size=(50, 3)), rng.normal(size=(50, 3)).astype(np.float32)):
        rows = score_rows.row_bytes(X)
        h = score_rows.row_hashes(rows)
        again = score_rows.row_hashes(score_rows.row_bytes(X[::-1].copy()))
        np.testing.assert_array_equal(h, again[::-1])
        assert np.unique(h).size == 50
    assert score_rows.row_bytes(np.zeros((0, 3))) is None
    assert score_rows.row_bytes(np.zeros(3)) is None


def test_content_hash_sees_layout_dtype_shape_and_columns():
    pd = pytest.importorskip("pandas")
    a = np.arange(12.0).reshape(3, 4)
    keys = {
        content_hash(a),
        content_hash(np.asfortranarray(a)),
        content_hash(a[:, ::2]),  # strided
        content_hash(np.ascontiguousarray(a[:, ::2])),
        content_hash(a.astype(np.float32)),
        content_hash(a.reshape(4, 3)),
        content_hash(pd.DataFrame(a, columns=list("abcd"))),
        content_hash(pd.DataFrame(a, columns=list("abce"))),
    }
    assert len(keys) == 8
    assert content_hash(a) == content_hash(a.copy())
    frame = pd.DataFrame(a, columns=list("abcd"))
    assert content_hash(frame) == content_hash(frame.copy())


def test_memory_bound_evicts_least_recently_used(problem):
    clf, X, _ = problem
    one = clf.predict_proba(X[:100]).nbytes
    with ScoreCache(max_bytes=2 * one) as cache:
        for start in (0, 100, 0, 200):  # 0 is used again, so 100 goes
            cache.scores(clf, "predict_proba", X[start : start + 100])
        assert cache.nbytes <= 2 * one and len(cache) == 2
        cache.scores(clf, "predict_proba", X[:100])
        assert (cache.hits, cache.misses) == (2, 3)
        cache.scores(clf, "predict_proba", X)  # larger than the bound: not kept
        assert len(cache) == 2
        cache.clear()
        assert (len(cache), cache.nbytes, cache.hits, cache.misses) == (0, 0, 0, 0)


@pytest.mark.parametrize("options", BOTH, ids=IDS)
def test_cached_arrays_are_read_only_copies(problem, options):
    clf, X, _ = problem
    with ScoreCache(**options) as cache:
        first = cache.scores(clf, "decision_function", X)
        first[:] = 0.0  # the caller's own array: the cache kept a copy
        second = cache.scores(clf, "decision_function", X)
    np.testing.assert_array_equal(second, clf.decision_function(X))
    if not options:
        assert not second.flags.writeable


def test_off_unpicklable_and_nested(problem):
    clf, X, y = problem
    lam = make_pipeline(FunctionTransformer(lambda Z: Z), LogisticRegression())
    lam.fit(X, y)
    with ScoreCache() as outer:
        np.testing.assert_array_equal(
            outer.scores(lam, "predict_proba", X), lam.predict_proba(X)
        )
        outer.scores(lam, "predict_proba", X)
        assert (outer.hits, outer.misses, len(outer)) == (0, 0, 0)  # not hashed
        with ScoreCache(max_bytes=0) as off:  # switched off inside
            assert active_score_cache() is off
            PlattCalibrator(estimator=clf).fit(X, y)
            assert (off.hits, off.misses, len(off)) == (0, 0, 0)
        assert active_score_cache() is outer
    assert active_score_cache() is None
    with pytest.raises(ValueError, match="max_bytes"):
        with ScoreCache(max_bytes=-1):
            pass  # pragma: no cover


def test_cache_is_not_state_of_the_calibrator(problem):
    clf, X, y = problem
    cal = HistogramBinningCalibrator(estimator=clf, n_bins=8)
    params = cal.get_params()
    with ScoreCache() as cache:
        cal.fit(X, y)
        twin = clone(cal)
        assert twin.get_params() == params and twin.estimator is clf
        twin.set_params(n_bins=8).fit(X, y)
        restored = pickle.loads(pickle.dumps(cal))
        cache_copy = pickle.loads(pickle.dumps(cache))
    assert cal.get_params() == params
    assert "cache" not in " ".join(cal.get_params())
    assert not any("cache" in name for name in vars(cal))
    np.testing.assert_array_equal(restored.predict_proba(X), cal.predict_proba(X))
    assert cache.hits >= 1 and len(cache_copy) == 0
    assert cache_copy.max_bytes == cache.max_bytes


@pytest.mark.parametrize("options", BOTH, ids=IDS)
def test_threads_share_one_cache(problem, options):
    clf, X, _ = problem
    parts = [X[i % 4 * 200 : i % 4 * 200 + 300] for i in range(16)]
    with ScoreCache(**options) as cache:
        with ThreadPoolExecutor(4) as pool:
            got = list(pool.map(lambda Z: cache.scores(clf, "predict_proba", Z), parts))
    for Z, p in zip(parts, got, strict=True):
        np.testing.assert_array_equal(p, clf.predict_proba(Z))
    assert cache.hits + cache.misses == 16 and cache.hits >= 1


WRAPPED = [c for c in calibrator_configs() if not takes_features(c.cls)]


@pytest.mark.parametrize("config", WRAPPED, ids=[c.id for c in WRAPPED])
def test_every_calibrator_same_outputs_from_cached_scores(config):
    """Scores from the cache (read-only arrays) give every calibrator the
    outputs it gives on freshly computed ones."""
    X_fit, y_fit, X_cal, y_cal = classification_split(200, 190, seed=1)
    y_cal[:15] = np.arange(15) % 3
    clf = LogisticRegression().fit(X_fit, y_fit)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = config.build(estimator=clf).fit(X_cal[:150], y_cal[:150])
        expected = outputs(plain, X_cal[150:])
        with ScoreCache() as cache:
            for _ in range(2):  # the second round reads only cached scores
                cal = config.build(estimator=clf).fit(X_cal[:150], y_cal[:150])
                got = [outputs(cal, X_cal[150:]) for _ in range(2)]
    assert cache.hits >= 3
    for out in got:
        for key, value in expected.items():
            np.testing.assert_array_equal(out[key], value)


# ------------------------------------------- the model's key, once per state
def _count_pickle_hashes(monkeypatch):
    from skcalib._core import score_cache

    calls = []
    real = score_cache.pickle_hash

    def counted(obj):
        calls.append(type(obj).__name__)
        return real(obj)

    monkeypatch.setattr(score_cache, "pickle_hash", counted)
    return calls


def test_model_pickle_is_hashed_once_per_state(problem, monkeypatch):
    # The 3 x 5 search makes 31 lookups; the boosted model's pickle (a few
    # ms to hash, more than predicting a small fold) is hashed once.
    clf, X, y = problem
    calls = _count_pickle_hashes(monkeypatch)
    with ScoreCache() as cache:
        _search(clf, X, y)
    assert cache.hits + cache.misses == 31
    assert calls == ["HistGradientBoostingClassifier"]
    calls.clear()
    with ScoreCache(model_check="pickle") as cache:
        _search(clf, X, y)
    assert len(calls) == 31  # the old behaviour, on request


@pytest.mark.parametrize("model_check", ["attributes", "pickle"])
def test_in_place_change_of_a_fitted_array_gives_new_scores(model_check):
    X, y = make_classification(300, random_state=3)
    clf = LogisticRegression().fit(X, y)
    with ScoreCache(model_check=model_check) as cache:
        before = cache.scores(clf, "decision_function", X)
        clf.coef_ *= 2.0  # the same array object, new content
        after = cache.scores(clf, "decision_function", X)
    np.testing.assert_array_equal(after, clf.decision_function(X))
    np.testing.assert_allclose(after - clf.intercept_, 2 * (before - clf.intercept_))
    assert (cache.hits, cache.misses) == (0, 2)


def test_nested_step_refit_and_set_params_give_new_scores():
    # A Pipeline refits its steps in place (the same step objects): the
    # snapshot walks into them.
    X, y = make_classification(400, random_state=4)
    pipe = make_pipeline(FunctionTransformer(), LogisticRegression()).fit(
        X[:200], y[:200]
    )
    with ScoreCache() as cache:
        a = cache.scores(pipe, "decision_function", X)
        cache.scores(pipe, "decision_function", X)
        assert cache.hits == 1  # unchanged: found
        pipe.fit(X[200:], y[200:])
        b = cache.scores(pipe, "decision_function", X)
        pipe.set_params(logisticregression__C=0.01).fit(X[200:], y[200:])
        c = cache.scores(pipe, "decision_function", X)
    np.testing.assert_array_equal(c, pipe.decision_function(X))
    assert not np.array_equal(a, b) and not np.array_equal(b, c)
    assert (cache.hits, cache.misses) == (1, 3)


def test_model_check_is_validated():
    with pytest.raises(ValueError, match="model_check must be"):
        with ScoreCache(model_check="id"):
            pass
