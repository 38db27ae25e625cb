"""A grid search over a wrapped prefit classifier, with and without the
score cache (issue 23, target 4).

:class:`~sklearn.model_selection.GridSearchCV` (5 stratified folds, the
ECE scorer) over 8 values of ``n_bins`` of
:class:`~skcalib.HistogramBinningCalibrator` wrapping a prefit
:class:`~sklearn.ensemble.HistGradientBoostingClassifier` (200 trees of
31 leaves, trained on 5000 rows of ``make_classification``: 20 features,
10 informative), on ``--n`` calibration rows (default 20000: the model's
``decision_function`` is most of the time, as in the issue's 21 s against
0.5 s). Four ways, timed in turn in
one process (medians of ``--repeat`` runs):

* ``precomputed``: raw-score mode on ``clf.decision_function(X)``,
  computed once outside the timing (the floor);
* ``wrapper``: wrapper mode, no cache (the model predicts every fold of
  every candidate: 8 x 5 x 2 calls + the refit);
* ``wrapper + ScoreCache()``: inside ``with ScoreCache():`` (a new, empty
  cache each run), each distinct array is predicted once: 5 train folds,
  5 test folds and the full X of the refit;
* ``wrapper + ScoreCache(reuse_rows=True)``: rows already predicted are
  found in the arrays of earlier calls, so the first fold's train and test
  parts are the only rows predicted.

All of it runs with one thread (``threadpool_limits(1)``: the OpenMP
threads of the trees thrash on a shared machine). Each way must give the
same ``cv_results_`` split scores, bit for bit (checked, printed). Also
printed: the time of one ``decision_function`` on 1e5 x 20 float64 and
of the two hashes of a lookup (that X, and the model's pickle).

Run ``python -m benchmarks.bench_wrapper_grid [--n N] [--repeat R]
[--quick] [--out DIR]``.
"""

import argparse
import sys
import time
import warnings

import numpy as np
from threadpoolctl import threadpool_limits

from benchmarks import (
    environment,
    fmt,
    markdown_table,
    measure,
    output_dir,
    write_report,
)

N_BINS = [5, 8, 10, 15, 20, 30, 40, 60]


def make_problem(n, seed=0):
    """The prefit model and the calibration set ``(clf, X, y)``."""
    from sklearn.datasets import make_classification
    from sklearn.ensemble import HistGradientBoostingClassifier

    X, y = make_classification(
        5000 + n, n_features=20, n_informative=10, random_state=seed
    )
    clf = HistGradientBoostingClassifier(
        max_iter=200, early_stopping=False, random_state=seed
    ).fit(X[:5000], y[:5000])
    return clf, X[5000:], y[5000:]


def grid_search(estimator, X, y):
    """The fitted search; split scores are what the ways must agree on."""
    from sklearn.model_selection import GridSearchCV

    from skcalib.metrics import ece_scorer

    search = GridSearchCV(estimator, {"n_bins": N_BINS}, scoring=ece_scorer, cv=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return search.fit(X, y)


def split_scores(search):
    """The (n_candidates, n_folds) test scores of a fitted search."""
    res = search.cv_results_
    return np.column_stack([res[f"split{i}_test_score"] for i in range(5)])


def ways(clf, X, y):
    """The timed callables, each returning its split scores and the number
    of rows the model predicted."""
    from skcalib import HistogramBinningCalibrator
    from skcalib._core.score_cache import ScoreCache

    scores = clf.decision_function(X)
    counter = _CountingModel(clf)

    def precomputed():
        return split_scores(grid_search(HistogramBinningCalibrator(), scores, y)), 0

    def wrapper():
        counter.rows = 0
        search = grid_search(HistogramBinningCalibrator(estimator=counter), X, y)
        return split_scores(search), counter.rows

    def cached(**options):
        def run():
            counter.rows = 0
            with ScoreCache(**options):
                search = grid_search(
                    HistogramBinningCalibrator(estimator=counter), X, y
                )
            return split_scores(search), counter.rows

        return run

    return {
        "precomputed": precomputed,
        "wrapper": wrapper,
        "wrapper + ScoreCache()": cached(),
        "wrapper + ScoreCache(reuse_rows=True)": cached(reuse_rows=True),
    }


class _CountingModel:
    """``clf`` with a count of the rows its ``decision_function`` is given
    (left out of its pickle, so that the count does not change the key)."""

    def __init__(self, clf):
        self.clf, self.rows = clf, 0

    def __getstate__(self):
        return {"clf": self.clf}

    def __sklearn_is_fitted__(self):
        return True

    def fit(self, X, y):
        raise AssertionError("a calibrator refit its prefit estimator")

    def __sklearn_tags__(self):
        return self.clf.__sklearn_tags__()

    @property
    def classes_(self):
        return self.clf.classes_

    def decision_function(self, X):
        self.rows += len(X)
        return self.clf.decision_function(X)


def hash_times(clf, repeat=5):
    """Seconds of one content hash of 1e5 x 20 float64 and of the model."""
    from skcalib._core.score_cache import content_hash, pickle_hash

    X = np.random.default_rng(0).normal(size=(100_000, 20))
    out = {}
    for name, fn in {
        "content_hash(X 1e5 x 20)": lambda: content_hash(X),
        "clf.decision_function(X 1e5 x 20)": lambda: clf.decision_function(X),
        "pickle_hash(clf)": lambda: pickle_hash(clf),
    }.items():
        runs = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            fn()
            runs.append(time.perf_counter() - t0)
        out[name] = float(np.median(runs))
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.bench_wrapper_grid", description=__doc__
    )
    parser.add_argument("--n", type=int, default=20_000, help="calibration rows")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="n=4000, 1 repeat")
    parser.add_argument("--out", default=None, help="output folder")
    args = parser.parse_args(argv)
    n, repeat = (4000, 1) if args.quick else (args.n, args.repeat)
    t0 = time.perf_counter()
    with threadpool_limits(1):  # OpenMP threads thrash on a shared machine
        clf, X, y = make_problem(n)
        hashes = hash_times(clf)
        fns = ways(clf, X, y)
        got = measure(fns, repeat, budget=240.0)
    ref = got["precomputed"].result[0]
    base = got["wrapper"].median
    rows = []
    for name, m in got.items():
        if not m.ok:
            rows.append([name, m.error, "-", "-", "-", "-"])
            print(rows[-1], flush=True)
            continue
        same = bool(np.array_equal(m.result[0], ref))
        rows.append(
            [
                name,
                fmt(m.median),
                str(len(m.runs)),
                fmt(base / m.median, 3),
                f"{m.result[1]:,}",
                "yes" if same else "NO",
            ]
        )
        print(rows[-1], flush=True)
    table = markdown_table(
        [
            "way",
            "median s",
            "runs",
            "speed-up vs wrapper",
            "rows predicted",
            "same split scores",
        ],
        rows,
        "lrrrrl",
    )
    hash_table = markdown_table(
        ["call", "median s"], [[k, fmt(v)] for k, v in hashes.items()], "lr"
    )
    parts = [
        "# Grid search in wrapper mode: the score cache",
        __doc__.split("\n\n", 1)[1].rsplit("\n\nRun", 1)[0],
        f"## {len(N_BINS)} x 5 grid, n = {n:,} calibration rows",
        table,
        "## Cost of a lookup",
        hash_table,
        f"Elapsed {time.perf_counter() - t0:.0f} s.",
        "\n".join(environment()),
    ]
    path = write_report(
        output_dir(args.out, args.quick) / "wrapper_grid.md", "\n\n".join(parts)
    )
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
