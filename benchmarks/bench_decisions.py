"""Expected cost of Bayes decisions before and after calibration, on real sets.

Run from the repository root::

    python -m benchmarks.bench_decisions [--quick] [--out DIR] [--seeds N]

Each prediction set of :data:`DATASETS` (files of ``shared/data``, loaded as
``python -m benchmarks quality`` loads them: float64 probabilities, rows
renormalised) is split ``--seeds`` times (default 5) into a calibration half
and a test half (50/50 stratified, seeded; a ``splinecalib`` set has its own
split). On each split a calibrator (``IdentityCalibrator``: the model's own
probabilities; ``TemperatureCalibrator``; ``IsotonicCalibrator``, one-vs-rest
then renormalised for K > 2), in raw-score mode with
``score_type="probability"``, is fitted on the calibration half inside
:class:`~skcalib.BayesDecisionClassifier`, and the test half is scored with
:func:`~skcalib.decision.expected_cost`.

Cost matrices (rows: true class, columns: action):

* **multiclass, Chow's reject option**: 0-1 costs and a last column "abstain"
  at cost 0.3: ``C = [1 - I | 0.3]``, shape (K, K + 1). The Bayes rule
  predicts the most probable class when its probability is >= 0.7 and
  abstains otherwise, so an over-confident model abstains too rarely.
* **binary, asymmetric**: ``C = [[0, 1], [5, 0]]`` (a missed positive costs
  five false alarms), Bayes threshold ``p* = 1/6``, against scikit-learn's
  :class:`~sklearn.model_selection.TunedThresholdClassifierCV` that searches
  the threshold minimising the same cost on the calibration half
  (``cv="prefit"``, ``refit=False``, 200 thresholds) on the uncalibrated
  probabilities.

Reported per data set and method: mean (and standard deviation over the
splits) of the test expected cost, the abstain rate, the error rate on the
samples not abstained on, and (binary) the tuned threshold.

Writes ``benchmarks/results/decisions.md`` (a ``--quick`` run: a temporary
folder unless ``--out`` is given). A full run takes about a minute.
"""

import argparse
import sys
import time
import warnings

import numpy as np
from sklearn.frozen import FrozenEstimator
from sklearn.metrics import make_scorer
from sklearn.model_selection import TunedThresholdClassifierCV

from benchmarks import environment, fmt, markdown_table, output_dir
from benchmarks import write_report as _write
from benchmarks.quality import DATA_DIR, discover_datasets
from skcalib import (
    BayesDecisionClassifier,
    IdentityCalibrator,
    IsotonicCalibrator,
    TemperatureCalibrator,
)
from skcalib.decision import expected_cost

ABSTAIN_COST = 0.3
BINARY_COST = np.array([[0.0, 1.0], [5.0, 0.0]])
DATASETS = (
    "netcal/densenet-bc-100-cifar-100",
    "netcal/wideresnet-16-4-cifar-10",
    "pycalib/mnist__AdaBoost",
    "pycalib/kitti__random_forest",
    "splinecalib/airlines_42493_cb1",
)
QUICK_DATASETS = ("netcal/wideresnet-16-4-cifar-10", "pycalib/kitti__random_forest")
METHODS = {
    "uncalibrated": IdentityCalibrator,
    "temperature": TemperatureCalibrator,
    "isotonic": IsotonicCalibrator,
}


def cost_matrices(k):
    """``{name: cost matrix}`` for a data set with ``k`` classes."""
    chow = np.column_stack([1 - np.eye(k), np.full(k, ABSTAIN_COST)])
    out = {f"0-1, abstain {ABSTAIN_COST}": chow}
    if k == 2:
        out["binary [[0, 1], [5, 0]]"] = BINARY_COST
    return out


def _scores(y, decisions, cost, k):
    abstained = np.array([d is not None and d == -1 for d in decisions.tolist()])
    kept = ~abstained
    error = float(np.mean(decisions[kept] != y[kept])) if kept.any() else np.nan
    return {
        "cost": expected_cost(y, decisions, cost, labels=np.arange(k)),
        "abstain": float(abstained.mean()),
        "error": error,
    }


def _tuned(data, cost):
    """TunedThresholdClassifierCV on the uncalibrated probabilities."""
    base = IdentityCalibrator(score_type="probability").fit(data.p_cal, data.y_cal)
    scorer = make_scorer(
        expected_cost, greater_is_better=False, cost_matrix=cost, labels=[0, 1]
    )
    tuned = TunedThresholdClassifierCV(
        FrozenEstimator(base), scoring=scorer, cv="prefit", refit=False, thresholds=200
    ).fit(data.p_cal, data.y_cal)
    out = _scores(data.y_test, tuned.predict(data.p_test), cost, 2)
    out["threshold"] = float(tuned.best_threshold_)
    return out


def run_split(data):
    """``{(cost name, method): scores}`` of one split."""
    out = {}
    for cost_name, cost in cost_matrices(data.k).items():
        for method, cls in METHODS.items():
            model = BayesDecisionClassifier(cls(score_type="probability"), cost)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model.fit(data.p_cal, data.y_cal)
            out[cost_name, method] = _scores(
                data.y_test, model.predict(data.p_test), cost, data.k
            )
        if cost.shape[1] == 2:
            out[cost_name, "TunedThresholdClassifierCV"] = _tuned(data, cost)
    return out


def _finite_mean(x):
    """Mean of the finite values (NaN when a method abstained on every sample
    of every split)."""
    x = x[np.isfinite(x)]
    return float(x.mean()) if x.size else np.nan


def benchmark(sets, n_seeds):
    """Rows of the table, and a line per data set on the split used."""
    rows, notes = [], []
    for name, load in sets:
        runs, splits = [], []
        for seed in range(n_seeds):
            data = load(seed)
            runs.append(run_split(data))
            splits.append(data.split)
            if data.own_split:
                break
        notes.append(f"- {name}: {'; '.join(dict.fromkeys(splits))}")
        for key in runs[0]:
            values = {m: np.array([r[key][m] for r in runs]) for m in runs[0][key]}
            row = [name, data.k, f"{data.y_cal.size}/{data.y_test.size}", *key]
            row += [
                f"{fmt(values['cost'].mean())} ± {fmt(values['cost'].std(), 2)}",
                fmt(values["abstain"].mean(), 3),
                fmt(_finite_mean(values["error"]), 3),
                fmt(values["threshold"].mean(), 3) if "threshold" in values else "-",
            ]
            rows.append(row)
            print(" | ".join(str(c) for c in row), flush=True)
    return rows, notes


def report(rows, notes, n_seeds, seconds, command):
    headers = [
        "data set",
        "K",
        "cal/test",
        "cost matrix",
        "method",
        "expected cost (mean ± sd)",
        "abstain rate",
        "error when deciding",
        "tuned threshold",
    ]
    return "\n\n".join(
        [
            "# Bayes decisions before and after calibration",
            f"Command: `{command}`; {seconds:.0f} s in all.",
            "\n".join(environment()),
            "Each prediction set"
            + __doc__.split("Each prediction set", 1)[1].split("Writes ``")[0].rstrip(),
            "Splits:\n\n" + "\n".join(notes),
            f"Mean over up to {n_seeds} split seeds (0..{n_seeds - 1}).",
            markdown_table(headers, rows, align="lrrllrrrr"),
        ]
    )


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.bench_decisions", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--quick", action="store_true", help="2 data sets, 1 split")
    parser.add_argument("--out", default=None, help="output folder")
    parser.add_argument("--seeds", type=int, default=None, help="split seeds")
    args = parser.parse_args(argv)
    n_seeds = args.seeds or (1 if args.quick else 5)
    wanted = QUICK_DATASETS if args.quick else DATASETS
    sets = [s for s in discover_datasets(DATA_DIR) if s[0] in wanted]
    if not sets:
        print(f"no prediction sets under {DATA_DIR}: nothing to do", file=sys.stderr)
        return 0
    start = time.perf_counter()
    rows, notes = benchmark(sets, n_seeds)
    command = (
        "python -m benchmarks.bench_decisions"
        + (" " + " ".join(argv if argv is not None else sys.argv[1:])).rstrip()
    )
    text = report(rows, notes, n_seeds, time.perf_counter() - start, command)
    path = _write(output_dir(args.out, args.quick) / "decisions.md", text)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
