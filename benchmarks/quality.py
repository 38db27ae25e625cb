"""Quality of every calibrator on real predictions, skcalib's and the peers'.

For every prediction set in ``shared/data`` (see its README): fit each
calibrator on a calibration split, score it on the test split.

* Splits: ``splinecalib`` pairs use their own ``calibset_*`` / ``testset_*``
  files (and ``mnist4_calib_set`` / ``mnist4_test_set``); every other file is
  split 50/50, stratified by label, with
  ``sklearn.model_selection.train_test_split(test_size=0.5, stratify=y,
  random_state=0)``.
* Inputs: the stored float32 probabilities, cast to float64 and divided by
  their row sums (they sum to 1 only within float32 rounding), given to
  every library: skcalib as probabilities (``score_type="probability"``),
  scikit-learn through a passthrough classifier whose decision values are the
  logits ``log(max(p, 1e-12))`` (temperature) or the per-class log-odds
  (sigmoid, isotonic) — the scores skcalib's maps see —, netcal, betacal,
  venn-abers and uncertainty-calibration as probabilities.
* Methods: the uncalibrated model; every skcalib calibrator found in
  ``skcalib.__all__`` with its default parameters (binary-only methods use
  their default one-vs-rest strategy on multiclass data); the peers'
  implementations (scikit-learn ``CalibratedClassifierCV`` with a frozen
  passthrough classifier; netcal; betacal and uncertainty-calibration
  one-vs-rest on multiclass data, rows renormalised; venn-abers).
* Scores on the test split: NLL, Brier (sum over classes, halved for two
  classes as sklearn's ``brier_score_loss``), confidence ECE and classwise ECE
  (15 uniform bins, L1), accuracy. Peers whose rows do not sum to 1 are
  renormalised first (noted).

Run ``python -m benchmarks quality [--quick] [--out DIR]``.
"""

import argparse
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from benchmarks import _peers as P
from benchmarks import environment, fmt, markdown_table, output_dir, write_report

DATA_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data"
SEED = 0
SEED_FAMILIES = {"temperature", "platt", "isotonic", "histogram"}
QUICK_DATASETS = ("splinecalib/mozilla4_1046_cb1", "pycalib/mnist__AdaBoost")
#: netcal's multiclass beta/Dirichlet fit uses finite-difference gradients
#: over K(K+1) weights: skipped above this many calibration rows.
SLOW_MAX_ROWS = 12_000
#: Methods with K^2 parameters (any library) run up to this many classes.
FULL_MATRIX_FAMILIES = {"dirichlet", "matrix_scaling"}
FULL_MATRIX_MAX_K = 10
#: A method whose fit + predict took longer than this on a data set is not
#: run on later data sets with at least as many classes and rows.
SLOW_FIT_S = 30.0
METRICS = ("NLL", "Brier", "ECE", "cwECE", "acc")


@dataclass
class Dataset:
    name: str
    y_cal: np.ndarray
    p_cal: np.ndarray
    y_test: np.ndarray
    p_test: np.ndarray
    split: str

    @property
    def k(self):
        return self.p_cal.shape[1]


@dataclass
class Result:
    label: str
    library: str
    family: str
    scores: dict = field(default_factory=dict)
    params: dict = field(default_factory=dict)
    seconds: float = float("nan")
    note: str = ""


# ----------------------------------------------------------------------- data
def _load(path):
    with np.load(path) as d:
        if "predictions" in d:
            p, y = d["predictions"], d["ground_truth"]
        else:
            p, y = d["probs"], d["labels"]
    p = np.asarray(p, dtype=np.float64)
    p /= p.sum(axis=1, keepdims=True)
    return p, np.asarray(y, dtype=np.int64)


def discover_datasets(data_dir=DATA_DIR):
    """``[(name, loader)]`` for every prediction set, in a fixed order."""
    from sklearn.model_selection import train_test_split

    out = []
    if not data_dir.is_dir():
        return out
    for path in sorted(data_dir.glob("*/*.npz")):
        folder, stem = path.parent.name, path.stem
        if folder == "splinecalib":
            if stem.startswith("calibset_"):
                test = path.with_name(
                    "testset_" + stem.removeprefix("calibset_") + ".npz"
                )
                name = f"splinecalib/{stem.removeprefix('calibset_')}"
            elif stem.endswith("_calib_set"):
                test = path.with_name(stem.removesuffix("_calib_set") + "_test_set.npz")
                name = f"splinecalib/{stem.removesuffix('_calib_set')}"
            else:
                continue
            if not test.exists():
                continue

            def load(cal=path, test=test, name=name):
                p_cal, y_cal = _load(cal)
                p_test, y_test = _load(test)
                return Dataset(
                    name,
                    y_cal,
                    p_cal,
                    y_test,
                    p_test,
                    f"own files {cal.name} / {test.name}",
                )

            out.append((name, load))
            continue

        def load(path=path, name=f"{folder}/{stem}"):
            p, y = _load(path)
            idx = np.arange(y.size)
            try:
                i_cal, i_test = train_test_split(
                    idx, test_size=0.5, stratify=y, random_state=SEED
                )
                how = "50/50 stratified, seed 0"
            except ValueError:  # a class with a single member
                i_cal, i_test = train_test_split(idx, test_size=0.5, random_state=SEED)
                how = "50/50 random, seed 0"
            return Dataset(name, y[i_cal], p[i_cal], y[i_test], p[i_test], how)

        out.append((f"{folder}/{stem}", load))
    return out


# -------------------------------------------------------------------- methods
def methods(status, *, quick):
    """skcalib calibrators (discovered) followed by the peers'."""
    ours = [
        P.SkcalibCalibrator(cls, score_input="probability", label=f"skcalib {name}")
        for name, cls in P.discover_calibrators().items()
    ]
    peers = P.peer_calibrators(status)
    if quick:
        ours = [a for a in ours if a.method in SEED_FAMILIES]
        peers = [a for a in peers if a.library == "sklearn"]
    order = ["temperature", "platt", "isotonic", "histogram"]
    ours.sort(
        key=lambda a: (order.index(a.method) if a.method in order else 99, a.label)
    )
    return ours + peers


def score(y, proba):
    from skcalib import metrics as M

    k = proba.shape[1]
    labels = np.arange(k)
    out = {}
    for key, fn in (
        ("NLL", lambda: M.negative_log_likelihood(y, proba, labels=labels)),
        ("Brier", lambda: M.brier_score(y, proba, labels=labels)),
        ("ECE", lambda: M.expected_calibration_error(y, proba, labels=labels)),
        ("cwECE", lambda: M.classwise_calibration_error(y, proba, labels=labels)),
        ("acc", lambda: float(np.mean(np.argmax(proba, axis=1) == y))),
    ):
        try:
            out[key] = float(fn())
        except Exception as exc:  # noqa: BLE001 - a metric failure is reported
            out[key] = float("nan")
            out.setdefault("_errors", []).append(f"{key}: {type(exc).__name__}: {exc}")
    return out


def run_dataset(ds, adapters, log, slow=None):
    from benchmarks._peers import ScoreSet

    tr = ScoreSet(ds.y_cal, proba=ds.p_cal)
    te = ScoreSet(ds.y_test, proba=ds.p_test)
    results = [Result("uncalibrated", "-", "none", score(te.y, te.proba))]
    for a in adapters:
        res = Result(a.label, a.library, a.method)
        reason = a.applies(tr.n, tr.k)
        if (
            not reason
            and a.library == "netcal"
            and a.method in ("dirichlet", "beta")
            and tr.k > 2
            and tr.n > SLOW_MAX_ROWS
        ):
            reason = f"skipped for more than {SLOW_MAX_ROWS} calibration rows (slow)"
        if not reason and a.method in FULL_MATRIX_FAMILIES and tr.k > FULL_MATRIX_MAX_K:
            reason = f"skipped for K > {FULL_MATRIX_MAX_K} (K^2 parameters, slow)"
        if not reason and slow is not None and a.label in slow:
            secs, k0, n0, where = slow[a.label]
            if tr.k >= k0 and tr.n >= n0:
                reason = f"skipped: took {secs:.0f} s on {where}"
        if reason:
            res.note = reason
            results.append(res)
            continue
        t0 = time.perf_counter()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                state = a.fit(tr)
                proba = np.asarray(a.predict(state, te), dtype=np.float64)
            res.seconds = time.perf_counter() - t0
            res.params = a.params(state)
        except Exception as exc:  # noqa: BLE001 - a failing method is a result
            res.note = f"failed: {type(exc).__name__}: {str(exc).splitlines()[0][:120]}"
            results.append(res)
            log(f"    {a.label}: {res.note}")
            continue
        if proba.ndim == 1:
            proba = P.renormalise(proba)
        rowsum = np.abs(proba.sum(axis=1) - 1.0).max()
        if not np.isfinite(proba).all():
            res.note = "non-finite probabilities"
            proba = np.nan_to_num(proba, nan=1.0 / tr.k)
        if rowsum > 1e-8:
            res.note = (res.note + "; " if res.note else "") + (
                f"rows off by {rowsum:.1e}: renormalised"
            )
            proba = P.renormalise(proba)
        if slow is not None and res.seconds > SLOW_FIT_S and a.label not in slow:
            slow[a.label] = (res.seconds, tr.k, tr.n, ds.name)
        res.scores = score(te.y, proba)
        if "_errors" in res.scores:
            res.note = (res.note + "; " if res.note else "") + "; ".join(
                res.scores.pop("_errors")
            )
        results.append(res)
        log(
            f"    {a.label:58s} NLL {res.scores.get('NLL', np.nan):.5f} "
            f"({res.seconds:.2f} s)"
        )
    return results


# -------------------------------------------------------------------- report
def _param_str(params):
    return ", ".join(f"{k}={fmt(v, 6)}" for k, v in params.items())


def _ranked(results):
    ok = [r for r in results if np.isfinite(r.scores.get("NLL", np.nan))]
    return sorted(ok, key=lambda r: r.scores["NLL"])


def agreement(results):
    """Same method in skcalib and a peer: same fitted parameter / test NLL?"""
    rows = []
    ours = {r.family: r for r in results if r.library == "skcalib" and r.scores}
    for r in results:
        if r.library in ("skcalib", "-") or not r.scores or r.family not in ours:
            continue
        ref = ours[r.family]
        d = r.scores["NLL"] - ref.scores["NLL"]
        shared = [k for k in ref.params if k in r.params]
        pdiff = "; ".join(
            f"{k} {fmt(ref.params[k], 7)} vs {fmt(r.params[k], 7)}" for k in shared
        )
        same = abs(d) <= 1e-6 * max(1.0, abs(ref.scores["NLL"]))
        rows.append(
            (
                ref.label.removeprefix("skcalib "),
                r.label,
                pdiff,
                d,
                "same optimum" if same else "differs",
            )
        )
    return rows


def render(done, env, notes, args, elapsed, adapters, skipped_data):
    lines = [
        "# skcalib calibration quality on real predictions",
        "",
        f"Command: `python -m benchmarks quality{' --quick' if args.quick else ''}`; "
        f"{elapsed / 60:.1f} min in all.",
        "",
        *env,
        "",
        "How to read this: each prediction set (a trained model's probabilities on "
        "a test set) is split into a calibration part, on which every calibrator "
        "is fitted, and a test part, on which it is scored. Lower is better for "
        "every score but accuracy. **NLL** is the mean negative log-likelihood "
        "(log loss); **Brier** the squared error summed over classes (halved for "
        "two classes, as `sklearn.metrics.brier_score_loss`); **ECE** the "
        "confidence (top-1) expected calibration error and **cwECE** the classwise "
        "ECE (mean over classes), both with 15 equal-width bins (L1). Methods are "
        "ranked by test NLL, the proper score that rewards both calibration and "
        "sharpness; ECE alone can be gamed (a constant prediction has ECE near 0).",
        "",
        "Protocol:",
        "",
        *_protocol(),
        "",
    ]
    if notes:
        lines += ["Peers skipped: " + "; ".join(notes) + ".", ""]
    if skipped_data:
        lines += skipped_data + [""]
    lines += ["## Summary: best method per data set (by test NLL)", ""]
    summary = []
    for ds, results in done:
        ranked = _ranked(results)
        unc = results[0].scores
        best = ranked[0] if ranked else None
        best_ours = next((r for r in ranked if r.library == "skcalib"), None)
        summary.append(
            [
                ds.name,
                str(ds.k),
                f"{ds.y_cal.size}/{ds.y_test.size}",
                fmt(unc.get("NLL")),
                fmt(unc.get("ECE")),
                best.label if best else "-",
                fmt(best.scores["NLL"]) if best else "-",
                fmt(best.scores["ECE"]) if best else "-",
                best_ours.label.removeprefix("skcalib ") if best_ours else "-",
                fmt(best_ours.scores["NLL"]) if best_ours else "-",
            ]
        )
    lines.append(
        markdown_table(
            [
                "data set",
                "K",
                "cal/test",
                "NLL uncal.",
                "ECE uncal.",
                "best (NLL)",
                "NLL",
                "ECE",
                "best skcalib",
                "its NLL",
            ],
            summary,
            align="lrrrrlrrlr",
        )
    )
    lines += [
        "",
        "## Mean rank by test NLL",
        "",
        "Rank 1 is the lowest test NLL of a data set; a method that did not "
        "run on a data set is left out of that data set's ranks.",
        "",
    ]
    lines.append(_mean_ranks(done))
    lines += [
        "",
        "## Same method, same optimum?",
        "",
        "A peer's implementation of a method skcalib has, fitted on the same "
        "calibration data: the fitted parameters and the difference of test "
        "NLL (peer minus skcalib). Same optimum: |dNLL| <= 1e-6.",
        "",
    ]
    agree_rows = []
    for ds, results in done:
        for ours, peer, pdiff, d, verdict in agreement(results):
            agree_rows.append([ds.name, ours, peer, pdiff or "-", f"{d:+.1e}", verdict])
    lines.append(
        markdown_table(
            [
                "data set",
                "skcalib",
                "peer",
                "parameters (skcalib vs peer)",
                "dNLL",
                "verdict",
            ],
            agree_rows,
            align="llllrl",
        )
    )
    why = {}
    for a in adapters:
        if a.library != "skcalib" and a.why:
            why.setdefault(a.label, a.why)
    if why:
        lines += ["", "Why a peer can differ:", ""]
        lines += [f"- {label}: {text}" for label, text in why.items()]
    lines += ["", "## Per data set", ""]
    for ds, results in done:
        lines += [
            f"### {ds.name}",
            "",
            f"K={ds.k}; {ds.y_cal.size} calibration rows, {ds.y_test.size} "
            f"test rows ({ds.split}).",
            "",
        ]
        ranked = _ranked(results)
        rank = {id(r): i + 1 for i, r in enumerate(ranked)}
        table = []
        for r in ranked + [r for r in results if id(r) not in rank]:
            s = r.scores
            table.append(
                [
                    str(rank.get(id(r), "-")),
                    r.label,
                    *(fmt(s.get(m)) if s else "-" for m in METRICS),
                    _param_str(r.params),
                    "-" if not np.isfinite(r.seconds) else f"{r.seconds:.2f}",
                    r.note,
                ]
            )
        lines.append(
            markdown_table(
                ["rank", "method", *METRICS, "fitted", "fit+predict s", "note"],
                table,
                align="rlrrrrrlrl",
            )
        )
        unc = results[0].scores.get("NLL")
        if ranked:
            best = ranked[0]
            lines += [
                "",
                "Ranking by test NLL: "
                + " < ".join(r.label.removeprefix("skcalib ") for r in ranked[:5])
                + (" < ..." if len(ranked) > 5 else "")
                + f". Best: {best.label} (NLL {fmt(unc)} -> "
                f"{fmt(best.scores['NLL'])}).",
                "",
            ]
    return "\n".join(lines)


def _protocol():
    """The protocol bullets of the module docstring, as markdown."""
    text = __doc__.split("\n\n")[2]
    items = [" ".join(part.split()) for part in text.split("\n* ")]
    return ["- " + item.removeprefix("* ").replace("``", "`") for item in items]


def _mean_ranks(done):
    ranks = {}
    for group in ("binary", "multiclass"):
        for ds, results in done:
            if (ds.k == 2) != (group == "binary"):
                continue
            for i, r in enumerate(_ranked(results)):
                ranks.setdefault(r.label, {}).setdefault(group, []).append(i + 1)
    rows = []
    for label, g in ranks.items():
        b, m = g.get("binary", []), g.get("multiclass", [])
        rows.append(
            [
                label,
                f"{np.mean(b):.1f}" if b else "-",
                str(len(b)),
                f"{np.mean(m):.1f}" if m else "-",
                str(len(m)),
            ]
        )
    rows.sort(
        key=lambda r: (
            float(r[1]) if r[1] != "-" else (float(r[3]) + 100 if r[3] != "-" else 1e9)
        )
    )
    return markdown_table(
        [
            "method",
            "mean rank, binary",
            "data sets",
            "mean rank, multiclass",
            "data sets",
        ],
        rows,
        align="lrrrr",
    )


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks quality", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"2 data sets ({', '.join(QUICK_DATASETS)}), seed "
        "methods of skcalib and sklearn; writes to a temp dir",
    )
    parser.add_argument("--out", default=None, help="output folder for quality.md")
    parser.add_argument(
        "--peers",
        default="all",
        help="all (default), none, or a comma list of " + ", ".join(P.PEERS),
    )
    parser.add_argument(
        "--data", default=None, help=f"data folder (default {DATA_DIR})"
    )
    parser.add_argument(
        "--only", default=None, help="comma list of data set names (substring match)"
    )
    args = parser.parse_args(argv)
    t_start = time.perf_counter()
    out = output_dir(args.out, args.quick)
    status = P.load_peers(["sklearn"] if args.quick else P.parse_peers(args.peers))
    notes = [] if args.quick else P.skip_notes(status)
    for note in notes:
        print(f"skip {note}", flush=True)
    data_dir = Path(args.data) if args.data else DATA_DIR
    sets = discover_datasets(data_dir)
    if args.quick:
        sets = [s for s in sets if s[0] in QUICK_DATASETS]
    if args.only:
        keys = args.only.split(",")
        sets = [s for s in sets if any(k in s[0] for k in keys)]
    skipped_data = []
    if not sets:
        msg = f"No prediction sets found under {data_dir}: quality benchmark skipped."
        print(msg)
        skipped_data.append(msg)
    adapters = methods(status, quick=args.quick)
    done, slow = [], {}
    for name, load in sets:
        ds = load()
        print(f"{name} (K={ds.k}, {ds.y_cal.size}/{ds.y_test.size})", flush=True)
        done.append(
            (ds, run_dataset(ds, adapters, lambda s: print(s, flush=True), slow))
        )
    elapsed = time.perf_counter() - t_start
    report = render(
        done, environment(status), notes, args, elapsed, adapters, skipped_data
    )
    path = write_report(out / "quality.md", report)
    print(f"\nwrote {path} ({elapsed:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
