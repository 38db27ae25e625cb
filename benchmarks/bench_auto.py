"""AutoCalibrator on real predictions: never worse than no calibration?

For every prediction set in ``shared/data`` (the splits of
:mod:`benchmarks.quality`), :class:`skcalib.AutoCalibrator` with its default
candidates and rule chooses a calibrator by 5-fold cross-validated log-loss
on the calibration split; its test NLL is compared with the uncalibrated
model's and with the best single candidate's.

* Splits: those of ``python -m benchmarks quality``: the ``splinecalib``
  pairs and ``aigen``'s ResNet-50 use their own calibration / test files,
  every other file is split 50/50, stratified by label, with
  ``random_state=0``.
* Inputs: the stored float32 probabilities (``aigen``: the softmax of its
  logits), cast to float64 and divided by their row sums, given as
  probabilities (``score_type="probability"``).
* Candidates (AutoCalibrator's defaults): identity, temperature, ensemble
  temperature, Platt, beta, isotonic, histogram binning (15 uniform bins);
  spline calibration on two classes; vector scaling, Dirichlet (ODIR) and
  structured matrix scaling for more than two classes; default parameters,
  one-vs-rest for the binary-only methods on multiclass data.
* Rule (AutoCalibrator's default): a candidate beats the identity when its
  mean cross-validated gain in log-loss exceeds one standard error of the
  paired split differences, corrected for overlapping training parts
  (Nadeau & Bengio 2003); the best mean score among those is chosen, else
  the identity.
* Noise on the test split: the standard error of the mean per-sample
  difference of log-loss (AutoCalibrator minus uncalibrated, paired on the
  same test rows). "Worse beyond noise" means a difference above two of
  these standard errors.
* Best single: every candidate refitted on the whole calibration split and
  scored on the test split; the lowest test NLL. It looks at the test
  labels, so it is a bound that no selection rule can reach on average.

Run ``python -m benchmarks.bench_auto [--quick] [--out DIR] [--only NAMES]``
(from the repository root), best at low priority (``nice -n 19``).
"""

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from benchmarks import environment, fmt, markdown_table, output_dir, write_report
from benchmarks.quality import DATA_DIR, QUICK_DATASETS, discover_datasets

#: Per-sample log-loss floor, as sklearn's log_loss clips (float64 eps).
EPS = np.finfo(np.float64).eps
#: A difference above this many test standard errors is "beyond noise".
NOISE_SE = 2.0


def _per_sample_nll(y, proba):
    return -np.log(np.clip(proba[np.arange(y.size), y], EPS, 1.0))


def run_dataset(ds):
    """Fit AutoCalibrator and every candidate on one data set."""
    from sklearn.base import clone

    from skcalib.metrics import negative_log_likelihood
    from skcalib.selection._auto import AutoCalibrator, _default_candidates, _name

    labels = np.arange(ds.k)
    with warnings.catch_warnings():
        # candidates' convergence and separation notes, on every split
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        auto = AutoCalibrator(score_type="probability").fit(ds.p_cal, ds.y_cal)
        p_auto = auto.predict_proba(ds.p_test)
        seconds = time.perf_counter() - t0
        singles = {}
        for cand in _default_candidates(ds.k):  # AutoCalibrator's candidates
            name = _name(cand)
            try:
                fitted = clone(cand).set_params(score_type="probability")
                proba = fitted.fit(ds.p_cal, ds.y_cal).predict_proba(ds.p_test)
                singles[name] = negative_log_likelihood(ds.y_test, proba, labels=labels)
            except Exception as exc:  # noqa: BLE001 - a failure is a result
                singles[name] = float("nan")
                print(f"    {name} failed: {type(exc).__name__}: {exc}", flush=True)
    res = auto.cv_results_
    assert list(res["candidate"]) == list(singles)
    unc = negative_log_likelihood(ds.y_test, ds.p_test, labels=labels)
    nll_auto = negative_log_likelihood(ds.y_test, p_auto, labels=labels)
    diff = _per_sample_nll(ds.y_test, p_auto) - _per_sample_nll(ds.y_test, ds.p_test)
    se = diff.std(ddof=1) / np.sqrt(diff.size)
    best_name = min(
        (n for n in singles if np.isfinite(singles[n])), key=lambda n: singles[n]
    )
    return {
        "name": ds.name,
        "k": ds.k,
        "sizes": f"{ds.y_cal.size}/{ds.y_test.size}",
        "unc": unc,
        "auto": nll_auto,
        "delta": nll_auto - unc,
        "se": se,
        "chosen": str(res["candidate"][auto.best_index_]),
        "cv_gain": res["mean_test_gain"][auto.best_index_],
        "cv_se": res["se_test_gain"][auto.best_index_],
        "n_beat": int(res["beats_identity"].sum()),
        "n_cand": len(res["candidate"]),
        "best_name": best_name,
        "best": singles[best_name],
        "seconds": seconds,
    }


def render(rows, env, elapsed, quick):
    worse = [r for r in rows if r["delta"] > NOISE_SE * r["se"]]
    better = [r for r in rows if r["delta"] < -NOISE_SE * r["se"]]
    kept = [r for r in rows if r["chosen"] == "identity"]
    regret = np.array([r["auto"] - r["best"] for r in rows])
    lines = [
        "# AutoCalibrator on real predictions",
        "",
        f"Command: `python -m benchmarks.bench_auto{' --quick' if quick else ''}`; "
        f"{elapsed / 60:.1f} min in all.",
        "",
        *env,
        "",
        "Protocol:",
        "",
        *_protocol(),
        "",
        "## Summary",
        "",
        f"- Data sets: {len(rows)}. Test NLL of AutoCalibrator **worse than "
        f"uncalibrated beyond noise** (by more than {NOISE_SE:g} test standard "
        f"errors): **{len(worse)}**"
        + (" (" + ", ".join(r["name"] for r in worse) + ")" if worse else "")
        + f"; better beyond noise: {len(better)}; within noise: "
        f"{len(rows) - len(worse) - len(better)}.",
        f"- The identity (no calibration) was kept on {len(kept)} data set(s)"
        + (": " + ", ".join(r["name"] for r in kept) if kept else "")
        + ".",
        f"- AutoCalibrator minus the best single candidate (chosen on the test "
        f"labels, a bound): median {np.median(regret):+.4f}, largest "
        f"{regret.max():+.4f} NLL; the same method on "
        f"{sum(r['chosen'] == r['best_name'] for r in rows)} of {len(rows)} "
        "data sets.",
        "",
        "## Per data set",
        "",
        "NLL: mean test log-loss (lower is better). Delta: AutoCalibrator minus "
        "uncalibrated, +- one standard error of the paired per-sample "
        "difference. CV gain: the chosen candidate's mean cross-validated gain "
        "in log-loss over the identity, +- its corrected standard error (0 for "
        "the identity). Beat: candidates that beat the identity under the rule.",
        "",
    ]
    table = [
        [
            r["name"],
            str(r["k"]),
            r["sizes"],
            fmt(r["unc"]),
            fmt(r["auto"]),
            f"{r['delta']:+.4f} +- {r['se']:.4f}",
            r["chosen"],
            f"{r['cv_gain']:.4f} +- {r['cv_se']:.4f}",
            f"{r['n_beat']}/{r['n_cand'] - 1}",
            r["best_name"],
            fmt(r["best"]),
            f"{r['seconds']:.1f}",
        ]
        for r in rows
    ]
    lines.append(
        markdown_table(
            [
                "data set",
                "K",
                "cal/test",
                "NLL uncal.",
                "NLL auto",
                "delta",
                "auto's choice",
                "CV gain",
                "beat",
                "best single (test)",
                "its NLL",
                "fit s",
            ],
            table,
            align="lrrrrrlrrlrr",
        )
    )
    return "\n".join(lines)


def _protocol():
    text = __doc__.split("\n\n")[2]
    items = [" ".join(part.split()) for part in text.split("\n* ")]
    return ["- " + item.removeprefix("* ").replace("``", "`") for item in items]


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.bench_auto", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"2 data sets ({', '.join(QUICK_DATASETS)}); writes to a temp dir",
    )
    parser.add_argument("--out", default=None, help="output folder for auto.md")
    parser.add_argument(
        "--data", default=None, help=f"data folder (default {DATA_DIR})"
    )
    parser.add_argument(
        "--only", default=None, help="comma list of data set names (substring match)"
    )
    args = parser.parse_args(argv)
    t_start = time.perf_counter()
    out = output_dir(args.out, args.quick)
    sets = discover_datasets(Path(args.data) if args.data else DATA_DIR)
    if args.quick:
        sets = [s for s in sets if s[0] in QUICK_DATASETS]
    if args.only:
        keys = args.only.split(",")
        sets = [s for s in sets if any(k in s[0] for k in keys)]
    if not sets:
        print("No prediction sets found: nothing to do.")
        return 1
    rows = []
    for name, load in sets:
        ds = load()
        print(f"{name} (K={ds.k}, {ds.y_cal.size}/{ds.y_test.size})", flush=True)
        row = run_dataset(ds)
        print(
            f"    uncalibrated {row['unc']:.5f} -> auto ({row['chosen']}) "
            f"{row['auto']:.5f} [{row['delta']:+.5f} +- {row['se']:.5f}]; best "
            f"single {row['best_name']} {row['best']:.5f} ({row['seconds']:.1f} s)",
            flush=True,
        )
        rows.append(row)
    elapsed = time.perf_counter() - t_start
    path = write_report(
        out / "auto.md", render(rows, environment(), elapsed, args.quick)
    )
    print(f"\nwrote {path} ({elapsed:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
