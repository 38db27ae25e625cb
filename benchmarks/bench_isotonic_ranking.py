"""Plain against centered isotonic regression on the binary sets of shared/data.

``python -m benchmarks.bench_isotonic_ranking`` (from the repo root): for
every binary prediction set that :func:`benchmarks.quality.discover_datasets`
finds (pycalib kitti/pcam with a 50/50 stratified split, seed 0; splinecalib
with its own calibration and test files), fit
``IsotonicCalibrator(method="pav")`` and ``IsotonicCalibrator(method=
"centered")`` on the calibration rows and report, on the test rows, the
ROC-AUC of the uncalibrated scores and of both maps, and the held-out NLL
(and Brier score) of both. Prints a markdown table and the means.
"""

import sys
import time

import numpy as np
from sklearn.metrics import roc_auc_score

from benchmarks.quality import discover_datasets
from skcalib import IsotonicCalibrator
from skcalib.metrics import brier_score, negative_log_likelihood


def run():
    rows = []
    for name, load in discover_datasets():
        data = load()
        if data.p_cal.shape[1] != 2:
            continue
        row = {"name": name, "auc_raw": roc_auc_score(data.y_test, data.p_test[:, 1])}
        for method in ("pav", "centered"):
            t0 = time.perf_counter()
            cal = IsotonicCalibrator(method=method, score_type="probability")
            cal.fit(data.p_cal, data.y_cal)
            q = cal.predict_proba(data.p_test)
            row[f"sec_{method}"] = time.perf_counter() - t0
            row[f"auc_{method}"] = roc_auc_score(data.y_test, q[:, 1])
            row[f"nll_{method}"] = negative_log_likelihood(data.y_test, q)
            row[f"brier_{method}"] = brier_score(data.y_test, q)
            row[f"distinct_{method}"] = np.unique(q[:, 1]).size
        rows.append(row)
    return rows


def main(argv=None):
    rows = run()
    cols = [
        "auc_raw",
        "auc_pav",
        "auc_centered",
        "nll_pav",
        "nll_centered",
        "brier_pav",
        "brier_centered",
        "distinct_pav",
        "distinct_centered",
    ]
    print("| set | " + " | ".join(cols) + " |")
    print("|---" * (len(cols) + 1) + "|")
    for r in rows:
        cells = [f"{r[c]:.5f}" if isinstance(r[c], float) else str(r[c]) for c in cols]
        print(f"| {r['name']} | " + " | ".join(cells) + " |")
    d_auc = np.array([r["auc_centered"] - r["auc_pav"] for r in rows])
    d_raw = np.array([r["auc_pav"] - r["auc_raw"] for r in rows])
    d_nll = np.array([r["nll_centered"] - r["nll_pav"] for r in rows])
    print(
        f"\n{len(rows)} sets. AUC pav - raw: mean {d_raw.mean():+.5f} "
        f"(min {d_raw.min():+.5f}); AUC centered - pav: mean {d_auc.mean():+.5f} "
        f"(min {d_auc.min():+.5f}, max {d_auc.max():+.5f}, centered higher on "
        f"{(d_auc > 0).sum()}); NLL centered - pav: mean {d_nll.mean():+.5f} "
        f"(centered lower on {(d_nll < 0).sum()} of {len(rows)}, "
        f"max {d_nll.max():+.5f}, min {d_nll.min():+.5f})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
