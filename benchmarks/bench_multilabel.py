"""Multi-label calibration: held-out quality and fit time against sklearn.

Run from the repository root::

    python -m benchmarks.bench_multilabel [--quick] [--seeds N] [--out DIR]

Quality: ``sklearn.datasets.make_multilabel_classification(n_samples=6000,
n_features=20, n_classes=5, random_state=seed)``, split in three equal
parts (train, calibration, test) for each seed. Two models are trained on
the first part: a ``RandomForestClassifier`` (100 trees) and a
``MultiOutputClassifier(GaussianNB())`` (over-confident: naive Bayes
double-counts correlated features). Their test probabilities are scored
uncalibrated and after :class:`MultiLabelCalibrator` fitted on the
calibration part with per-label Platt, isotonic and temperature scaling
and one shared temperature; for the MultiOutputClassifier also a loop of
``CalibratedClassifierCV(FrozenEstimator(estimators_[j]),
method="sigmoid")`` over the labels (scikit-learn refuses multi-label
``y`` itself; on ``predict_proba`` scores its sigmoid takes the
probability, not its log-odds, as input). Macro NLL and macro Brier: the
mean over labels of ``sklearn.metrics.log_loss`` (probabilities clipped to
float64's eps, as ``log_loss`` does) and ``brier_score_loss`` of each
column; means over the seeds.

Speed: the fit of per-label Platt in wrapper mode around a prefit
``MultiOutputClassifier(LogisticRegression())`` against the loop of
``CalibratedClassifierCV(FrozenEstimator(estimators_[j]),
method="sigmoid")`` on the same calibration rows (both call the per-label
``predict_proba``/``decision_function`` of the frozen models; sklearn's
sigmoid on decision values is the same Platt objective), medians of 5, at
1e5 rows x 5 and x 20 labels, with the largest difference of the two
calibrated probabilities.

Writes ``multilabel.md`` into ``--out`` (a full run without ``--out``:
``benchmarks/results/``). A full run takes about 2-3 minutes on the shared
2-core machine; ``--quick`` (1 seed, 2000 rows, 1e4 timing rows) seconds.
"""

import argparse
import sys
import time
import warnings

import numpy as np
from sklearn.calibration import CalibratedClassifierCV
from sklearn.datasets import make_multilabel_classification
from sklearn.ensemble import RandomForestClassifier
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import brier_score_loss, log_loss
from sklearn.multioutput import MultiOutputClassifier
from sklearn.naive_bayes import GaussianNB

from benchmarks import environment, fmt, markdown_table, measure, output_dir
from benchmarks import write_report as _write
from skcalib._core.multilabel import positive_proba
from skcalib.calibration._isotonic import IsotonicCalibrator
from skcalib.calibration._multilabel import MultiLabelCalibrator
from skcalib.calibration._platt import PlattCalibrator
from skcalib.calibration._temperature import TemperatureCalibrator

N_LABELS = 5
METHODS = {
    "per-label Platt": lambda: MultiLabelCalibrator(PlattCalibrator()),
    "per-label isotonic": lambda: MultiLabelCalibrator(IsotonicCalibrator()),
    "per-label temperature": lambda: MultiLabelCalibrator(TemperatureCalibrator()),
    "shared temperature": lambda: MultiLabelCalibrator(
        TemperatureCalibrator(), shared=True
    ),
}
MODELS = {
    "RandomForestClassifier": lambda n_trees: RandomForestClassifier(
        n_estimators=n_trees, random_state=0, n_jobs=1
    ),
    "MultiOutputClassifier(GaussianNB)": lambda n_trees: MultiOutputClassifier(
        GaussianNB()
    ),
}


def macro_scores(Y, proba):
    """Mean over labels of log_loss and brier_score_loss of each column."""
    nll = [log_loss(Y[:, j], proba[:, j], labels=[0, 1]) for j in range(Y.shape[1])]
    brier = [brier_score_loss(Y[:, j], proba[:, j]) for j in range(Y.shape[1])]
    return float(np.mean(nll)), float(np.mean(brier))


class _SklearnSigmoidLoop:
    """scikit-learn's sigmoid calibration of each frozen per-label model of a
    MultiOutputClassifier: the peer (CalibratedClassifierCV refuses a
    multi-label y)."""

    def __init__(self, moc):
        self.moc = moc

    def fit(self, X, Y):
        self.fitted_ = [
            CalibratedClassifierCV(FrozenEstimator(est), method="sigmoid").fit(
                X, Y[:, j]
            )
            for j, est in enumerate(self.moc.estimators_)
        ]
        return self

    def predict_proba(self, X):
        return np.column_stack([c.predict_proba(X)[:, 1] for c in self.fitted_])


def split3(n, seed):
    X, Y = make_multilabel_classification(
        n_samples=n, n_features=20, n_classes=N_LABELS, random_state=seed
    )
    order = np.random.default_rng(seed).permutation(n)
    parts = np.array_split(order, 3)
    return [(X[p], Y[p]) for p in parts]


def run_quality(n, seed, n_trees):
    """``{(model, method): (nll, brier, fit seconds)}`` of one seed."""
    (X_fit, Y_fit), (X_cal, Y_cal), (X_test, Y_test) = split3(n, seed)
    out = {}
    for model_name, make in MODELS.items():
        model = make(n_trees).fit(X_fit, Y_fit)
        raw = positive_proba(model.predict_proba(X_test), model)
        out[model_name, "uncalibrated"] = (*macro_scores(Y_test, raw), np.nan)
        contenders = {
            name: method().set_params(estimator=model)
            for name, method in METHODS.items()
        }
        if isinstance(model, MultiOutputClassifier):
            contenders["sklearn sigmoid loop"] = _SklearnSigmoidLoop(model)
        for name, cal in contenders.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t0 = time.perf_counter()
                cal.fit(X_cal, Y_cal)
                seconds = time.perf_counter() - t0
            proba = cal.predict_proba(X_test)
            out[model_name, name] = (*macro_scores(Y_test, proba), seconds)
    return out


def quality_table(results):
    headers = ["model", "calibration", "macro NLL", "macro Brier", "fit s"]
    rows = []
    for (model, method), values in results.items():
        nll, brier, seconds = np.mean(values, axis=0)
        rows.append([model, method, fmt(nll), fmt(brier), fmt(seconds, 3)])
    return markdown_table(headers, rows, align="llrrr")


def speed_rows(n, n_labels):
    """One row of the speed table: our fit, the peer loop's, their ratio."""
    X, Y = make_multilabel_classification(
        n_samples=2 * n, n_features=20, n_classes=n_labels, random_state=0
    )
    moc = MultiOutputClassifier(LogisticRegression(max_iter=1000)).fit(X[:n], Y[:n])
    X_cal, Y_cal = X[n:], Y[n:]
    # Platt on the log-odds of LR's probabilities = on its decision values,
    # which is what sklearn's sigmoid takes from a LogisticRegression.
    ours = MultiLabelCalibrator(PlattCalibrator(), estimator=moc)
    peer = _SklearnSigmoidLoop(moc)
    timed = measure(
        {
            "skcalib": lambda: ours.fit(X_cal, Y_cal).predict_proba(X_cal[:1000]),
            "sklearn": lambda: peer.fit(X_cal, Y_cal).predict_proba(X_cal[:1000]),
        },
        repeat=5,
    )
    a, b = timed["skcalib"], timed["sklearn"]
    diff = float(np.max(np.abs(a.result - b.result)))
    return [
        f"{n:,} x {n_labels}",
        fmt(a.median, 3),
        fmt(b.median, 3),
        fmt(b.median / a.median, 3),
        fmt(diff, 2),
    ]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 seed, small data")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    seeds = 1 if args.quick else args.seeds
    n, n_trees = (2000, 30) if args.quick else (6000, 100)
    n_speed = 10_000 if args.quick else 100_000
    start = time.perf_counter()
    results = {}
    for seed in range(seeds):
        for key, value in run_quality(n, seed, n_trees).items():
            results.setdefault(key, []).append(value)
    quality = quality_table(results)
    print(quality + "\n", flush=True)
    speed = markdown_table(
        [
            "calibration rows x labels",
            "skcalib s",
            "sklearn loop s",
            "ratio",
            "max |dp|",
        ],
        [speed_rows(n_speed, n_labels) for n_labels in (N_LABELS, 20)],
    )
    print(speed + "\n", flush=True)
    elapsed = time.perf_counter() - start
    parts = [
        "# Multi-label calibration",
        "",
        *environment(),
        "",
        f"## Held-out quality, make_multilabel_classification ({n} rows, "
        f"{N_LABELS} labels), {seeds} seed(s)",
        "",
        "Means over seeds; a third of the rows each to train, calibrate and "
        "test. fit s: the calibrator's fit (the model's predict_proba on the "
        "calibration rows included).",
        "",
        quality,
        "",
        "## Fit time: per-label Platt against a loop of CalibratedClassifierCV",
        "",
        "Wrapper mode around a prefit MultiOutputClassifier(LogisticRegression); "
        "fit + predict_proba of 1000 rows, medians of 5; ratio = sklearn / "
        "skcalib (above 1: skcalib faster); max |dp|: largest difference of "
        "the calibrated probabilities.",
        "",
        speed,
        "",
        f"Run time: {elapsed:.0f} s.",
    ]
    path = _write(output_dir(args.out, args.quick) / "multilabel.md", "\n".join(parts))
    print(f"wrote {path} ({elapsed:.0f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
