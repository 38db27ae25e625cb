"""CV+ prediction sets: skcalib's CrossConformalClassifier against MAPIE's
(``agg_scores="crossval"``), the same data, folds and classifier.

* Data: ``make_classification`` (10 classes, 20 features, 10 informative,
  ``random_state=0``); ``n`` training rows, ``n`` test rows.
* Classifier: ``LinearDiscriminantAnalysis`` (closed form: the fits cost
  little next to the sets), ``KFold(5, shuffle=True, random_state=0)``.
* Timed: ``predict_set`` at three levels (0.05, 0.1, 0.2), once each, after
  the fit; best of ``--repeat`` runs. skcalib counts the calibration
  scores below each test score with one binary search per fold
  (``O(n_test K log n)``), MAPIE compares every test score with every
  calibration score (``O(n_test K n)``).
* Also printed: the fraction of (sample, class, level) cells where the two
  LAC sets differ (MAPIE's level ``alpha (n - 1)`` against ``alpha (n + 1)
  - 1``, see ``tests/conformal/test_cross_parity.py``).

Run ``python -m benchmarks.bench_cross_conformal [--n 2000 4000] [--repeat 3]``
from the repository root; MAPIE 1.6 must be installed.
"""

import argparse
import time
import warnings

import numpy as np
from sklearn.datasets import make_classification
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.model_selection import KFold

from skcalib.conformal._cross import CrossConformalClassifier

ALPHAS = [0.05, 0.1, 0.2]


def _best(func, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        out = func()
        times.append(time.perf_counter() - start)
    return min(times), out


def run(n, method, repeat):
    from mapie.classification import CrossConformalClassifier as MapieCross

    X, y = make_classification(
        2 * n, n_features=20, n_informative=10, n_classes=10, random_state=0
    )
    X_fit, y_fit, X_test = X[:n], y[:n], X[n:]
    cv = KFold(5, shuffle=True, random_state=0)
    ours = CrossConformalClassifier(LinearDiscriminantAnalysis(), cv=cv, method=method)
    ours.fit(X_fit, y_fit)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = MapieCross(
            LinearDiscriminantAnalysis(),
            confidence_level=[1 - a for a in ALPHAS],
            conformity_score=method,
            cv=cv,
            random_state=0,
        ).fit_conformalize(X_fit, y_fit)
        t_ours, s_ours = _best(lambda: ours.predict_set(X_test, alpha=ALPHAS), repeat)
        t_theirs, (_, s_theirs) = _best(
            lambda: theirs.predict_set(X_test, agg_scores="crossval"), repeat
        )
    differ = float(np.mean(s_ours != s_theirs))
    print(
        f"n={n:<6} {method:<4} skcalib {t_ours:8.3f} s   MAPIE {t_theirs:8.3f} s   "
        f"ratio {t_theirs / t_ours:7.1f}   cells that differ {differ:.4f}"
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[1000, 4000])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    for n in args.n:
        for method in ("lac", "aps"):
            run(n, method, args.repeat)


if __name__ == "__main__":
    main()
