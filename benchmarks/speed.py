"""Speed of every skcalib calibrator and metric against the peers that have it.

Every case builds one data set and times skcalib and each peer on it in this
process: one warm-up call each (peak memory measured there, result kept for
the agreement check), then ``--repeat`` rounds alternating the contenders in
a rotating order; the median is reported. Next to each timing is the value
the library computed (fitted temperature, NLL after calibration, ECE, ...)
and its difference from skcalib's, with a one-line reason when they differ.

Data (seeded by ``(n, K)``): labels uniform on ``K`` classes; logits
``2 (N(0, 1) + 1.5 e_y)`` (accurate but over-confident); probabilities their
softmax. Calibrators get float64 data in each library's natural form
(logits for skcalib's scaling methods and sklearn's passthrough classifier,
probabilities for binning, netcal, betacal, ...); metrics get float32
probabilities (what networks output, and torchmetrics' working precision).

Run ``python -m benchmarks speed [--quick] [--out DIR]``.
"""

import argparse
import sys
import time
from dataclasses import dataclass, field

import numpy as np
from scipy.special import softmax

from benchmarks import (
    MemoryProbe,
    environment,
    fmt,
    markdown_table,
    measure,
    output_dir,
    write_report,
)
from benchmarks import _peers as P

FULL_CAL_GRID = [
    (n, k)
    for n in (10_000, 100_000, 1_000_000)
    for k in (2, 10, 100, 1000)
    if not (k == 1000 and n > 100_000)
]
FULL_METRIC_GRID = [
    (n, k)
    for n in (10_000, 100_000, 1_000_000, 10_000_000)
    for k in (2, 10, 100, 1000)
    if not (k == 1000 and n > 100_000) and not (k == 100 and n > 1_000_000)
]
QUICK_GRID = [(10_000, 2), (10_000, 10)]
#: One-vs-rest methods fit K maps: cases with n * K above this are skipped
#: for every library (a K=100, n=1e6 Platt fit is 100 one-million-row fits).
OVR_MAX_CELLS = 10_000_000
OVR_MAX_CLASSES = 100
#: Methods with K^2 parameters run up to this many classes (any library).
FULL_MATRIX_TASKS = {"dirichlet", "matrix_scaling"}
FULL_MATRIX_MAX_K = 10
#: Calibrators beyond the four seed ones run where n*K <= this (skcalib's
#: VectorScalingCalibrator was killed for lack of memory, > 23 GB, at n=1e5,
#: K=1000).
NEW_MAX_CELLS = 10_000_000
#: A contender whose warm-up takes longer is not run again (its one run is
#: reported); a case whose rounds would take longer runs fewer (>= 3) rounds,
#: except the cases that check a target.
MAX_WARMUP_S = 60.0
CASE_BUDGET_S = 120.0

TARGET_CASES = {
    ("temperature", 1_000_000, 100),
    ("platt", 1_000_000, 2),
    ("isotonic", 1_000_000, 2),
    ("histogram", 1_000_000, 2),
    ("ece_confidence", 10_000_000, 10),
}

TASK_TITLES = {
    "temperature": "Temperature scaling: fit",
    "platt": "Platt scaling: fit",
    "isotonic": "Isotonic regression: fit + predict",
    "histogram": "Histogram binning (15 uniform bins): fit + predict",
    "histogram_quantile": "Histogram binning (15 equal-mass bins): fit + predict",
    "beta": "Beta calibration: fit + predict",
    "venn_abers": "Venn-ABERS: fit + predict",
    "scaling_binning": "Scaling-binning: fit + predict",
    "dirichlet": "Dirichlet calibration: fit + predict",
    "vector_scaling": "Vector scaling: fit + predict",
    "matrix_scaling": "Matrix scaling: fit + predict",
    "ece_confidence": "Confidence ECE (15 uniform bins, L1)",
    "ece_classwise": "Classwise ECE (15 uniform bins, L1, mean over classes)",
    "mce": "MCE (confidence, 15 uniform bins)",
    "ece_debiased_l2": "Debiased L2 confidence ECE (15 uniform bins)",
    "brier": "Brier score",
    "nll": "Negative log-likelihood",
    "reliability_curve": "Reliability curve (confidence, 15 bins)",
}
#: Two values agree when they differ by at most this (relative to max(1, |v|)):
#: float64 rounding, not float32 (about 1e-7) nor a solver's tolerance.
AGREE_RTOL = 1e-9
#: Largest difference of calibrated probabilities that still agrees (skcalib
#: floors one-vs-rest outputs at 1e-12).
PROBA_ATOL = 1e-9
#: Values that decide agreement (fitted parameters are shown, not judged: a
#: flat optimum leaves them loose while the NLL is the same).
JUDGED = ("NLL", "value")
#: Order of the calibrator tasks (others follow in ``skcalib.__all__`` order).
TASK_ORDER = ["temperature", "platt", "isotonic", "histogram", "histogram_quantile"]


@dataclass
class Row:
    task: str
    n: int
    k: int
    label: str
    library: str
    median: float = float("nan")
    runs: int = 0
    peak: float = float("nan")
    value: dict = field(default_factory=dict)
    diff: str = ""
    note: str = ""
    baseline: bool = False


# ----------------------------------------------------------------------- data
def calibration_data(n, k):
    rng = np.random.default_rng([n, k, 0])
    y = rng.integers(0, k, n)
    logits = rng.standard_normal((n, k))
    logits[np.arange(n), y] += 1.5
    logits *= 2.0
    return P.ScoreSet(y, logits=logits)


def metric_data(n, k, chunk=1 << 18):
    rng = np.random.default_rng([n, k, 1])
    y = rng.integers(0, k, n)
    proba = np.empty((n, k), dtype=np.float32)
    for start in range(0, n, chunk):
        z = rng.standard_normal((min(chunk, n - start), k))
        z[np.arange(z.shape[0]), y[start : start + chunk]] += 1.5
        proba[start : start + chunk] = softmax(2.0 * z, axis=1)
    # float32 rows must sum to 1 within float32 precision: renormalise once.
    proba /= proba.sum(axis=1, keepdims=True, dtype=np.float64).astype(np.float32)
    return y, proba


# ------------------------------------------------------------------ contenders
def calibrator_tasks(status):
    """``{task: (timed operation, [adapters], skcalib reference label)}``."""
    found = P.discover_calibrators()
    peers = P.peer_calibrators(status)
    tasks = {}
    for name, cls in found.items():
        family = P.FAMILIES.get(name, name)
        if family == "temperature":
            ours = [
                P.SkcalibCalibrator(cls, label="skcalib TemperatureCalibrator"),
                P.SkcalibCalibrator(
                    cls, label="skcalib TemperatureCalibrator(n_jobs=-1)", n_jobs=-1
                ),
            ]
        else:
            ours = [P.SkcalibCalibrator(cls)]
        op = "fit" if family in ("temperature", "platt") else "fit+predict"
        theirs = [p for p in peers if p.method == family]
        if family == "isotonic":
            theirs.insert(0, P.SklearnIsotonicAlone())
        tasks[family] = (op, ours + theirs)
        if family == "histogram":
            q = [P.SkcalibCalibrator(cls, strategy="quantile")]
            q += [p for p in peers if p.method == "histogram_quantile"]
            tasks["histogram_quantile"] = (op, q)
    order = {t: i for i, t in enumerate(TASK_ORDER)}
    return dict(sorted(tasks.items(), key=lambda kv: order.get(kv[0], len(order))))


#: Binary-map methods: K one-vs-rest maps on K > 2 classes.
OVR_TASKS = {
    "platt",
    "isotonic",
    "histogram",
    "histogram_quantile",
    "beta",
    "venn_abers",
    "scaling_binning",
}


def _is_ovr(task, k):
    return k > 2 and task in OVR_TASKS


def _ovr_skip(task, n, k):
    if not _is_ovr(task, k):
        return ""
    if k > OVR_MAX_CLASSES:
        return f"one-vs-rest with K > {OVR_MAX_CLASSES} not run"
    if n * k > OVR_MAX_CELLS:
        return f"one-vs-rest case n*K > {OVR_MAX_CELLS:.0e} not run"
    return ""


def run_calibrator_case(task, op, adapters, data, repeat, probe):
    n, k = data.n, data.k
    rows, fns, live = [], {}, {}
    for a in adapters:
        row = Row(task, n, k, a.label, a.library)
        reason = a.applies(n, k)
        if not reason and a.max_cells is not None and n * k > a.max_cells:
            reason = f"skipped for n*K > {a.max_cells:.0e} (too slow)"
        if not reason:
            reason = _ovr_skip(task, n, k)
        if not reason and task in FULL_MATRIX_TASKS and k > FULL_MATRIX_MAX_K:
            reason = f"skipped for K > {FULL_MATRIX_MAX_K} (K^2 parameters)"
        if not reason and task not in TASK_ORDER and n * k > NEW_MAX_CELLS:
            reason = f"skipped for n*K > {NEW_MAX_CELLS:.0e} (not a seed method)"
        if (
            not reason
            and a.max_cells_multiclass is not None
            and k > 2
            and n * k > a.max_cells_multiclass
        ):
            reason = f"skipped for K > 2 and n*K > {a.max_cells_multiclass:.0e} (slow)"
        if reason:
            row.note = reason
        else:
            if op == "fit":
                fns[a.label] = lambda a=a: a.fit(data)
            else:
                fns[a.label] = lambda a=a: a.predict(a.fit(data), data)
            live[a.label] = a
        rows.append(row)
    if not fns:
        return rows
    target = (task, n, k) in TARGET_CASES
    res = measure(
        fns,
        repeat,
        probe=probe,
        max_warmup=None if target else MAX_WARMUP_S,
        budget=None if target else CASE_BUDGET_S,
    )
    ref_proba = None
    for row in rows:
        if row.label not in res:
            continue
        m, a = res[row.label], live[row.label]
        if not m.ok:
            row.note = f"failed: {m.error}"
            continue
        row.median, row.runs, row.peak = m.median, len(m.runs), m.peak_bytes
        try:
            row.value, proba = _calibrator_value(a, m.result, op, data)
        except Exception as exc:  # noqa: BLE001
            row.note = f"value failed: {type(exc).__name__}: {exc}"[:160]
            continue
        if a.library == "skcalib" and ref_proba is None:
            ref_proba = proba
        elif ref_proba is not None and proba is not None:
            row.value["max|dp|"] = float(np.max(np.abs(proba - ref_proba)))
        row.note = a.explain(k)
    _compare(rows)
    return rows


def _calibrator_value(adapter, result, op, data):
    """Values to compare: fitted parameters and the NLL on the same data."""
    value = {}
    if op == "fit":
        state = result
        value.update(adapter.params(state))
        if "T" in value:
            logits = (
                data.logits
                if data.k > 2
                else np.column_stack((np.zeros(data.n), data.s))
            )
            value["NLL"] = P.nll_at_temperature(logits, data.y, value["T"])
            return value, None
        proba = adapter.predict(state, data)
    else:
        proba = result
    proba = np.asarray(proba, dtype=np.float64)
    value["NLL"] = _nll(data.y, proba)
    return value, proba


def _nll(y, proba):
    p = np.clip(proba[np.arange(y.size), y], 1e-300, None)
    return float(-np.mean(np.log(p)))


def _compare(rows):
    """Fill ``diff`` relative to the first skcalib row; keep ``why`` only
    where values differ."""
    ref = next((r for r in rows if r.library == "skcalib" and r.value), None)
    for row in rows:
        if not row.value or row is ref:
            if row is ref:
                row.note = ""
            continue
        if ref is None:
            continue
        parts, differs = [], False
        for key, v in row.value.items():
            if key == "max|dp|":
                parts.append(f"max|dp| {v:.1e}")
                differs |= v > PROBA_ATOL
                continue
            r = ref.value.get(key)
            if r is None or v is None:
                continue
            d = v - r
            parts.append(f"{key} {d:+.1e}")
            if key in JUDGED:  # fitted parameters are shown, the NLL decides
                differs |= not abs(d) <= AGREE_RTOL * max(1.0, abs(r))
        row.diff = "; ".join(parts)
        if not differs:
            row.note = "agrees" if row.library != "skcalib" else ""
        elif row.library == "skcalib":
            row.note = "differs from the first skcalib row"


def run_metric_case(metric, contenders, y, proba, repeat, probe):
    n, k = proba.shape
    rows, fns, live = [], {}, {}
    for c in contenders:
        row = Row(metric, n, k, c.label, c.library, baseline=c.baseline)
        reason = c.applies(n, k)
        if reason:
            row.note = reason
        else:
            fns[c.label] = lambda c=c: c.fn(y, proba)
            live[c.label] = c
        rows.append(row)
    target = (metric, n, k) in TARGET_CASES
    res = measure(
        fns,
        repeat,
        probe=probe,
        max_warmup=None if target else MAX_WARMUP_S,
        budget=None if target else CASE_BUDGET_S,
    )
    for row in rows:
        if row.label not in res:
            continue
        m, c = res[row.label], live[row.label]
        if not m.ok:
            row.note = f"failed: {m.error}"
            continue
        row.median, row.runs, row.peak = m.median, len(m.runs), m.peak_bytes
        if not c.baseline:
            row.value = {"value": float(m.result)}
            row.note = c.explain(k)
    _compare(rows)
    return rows


# --------------------------------------------------------------------- targets
def _find(rows, task, n, k, label_start):
    for r in rows:
        if (r.task, r.n, r.k) == (task, n, k) and r.label.startswith(label_start):
            return r
    return None


def targets(rows, status):
    """``[(target, measured, verdict)]`` of the targets set by the issues."""
    out = []

    def ok(r):
        return r is not None and np.isfinite(r.median)

    sk = _find(rows, "temperature", 1_000_000, 100, "sklearn")
    for lab in (
        "skcalib TemperatureCalibrator",
        "skcalib TemperatureCalibrator(n_jobs=-1)",
    ):
        ours = next(
            (
                r
                for r in rows
                if (r.task, r.n, r.k) == ("temperature", 1_000_000, 100)
                and r.label == lab
            ),
            None,
        )
        name = (
            "temperature fit n=1e6 K=100 >= 8x faster than CalibratedClassifierCV("
            f"temperature), same NLL [{lab.removeprefix('skcalib ')}]"
        )
        if ok(ours) and ok(sk):
            speedup = sk.median / ours.median
            dnll = abs(sk.value.get("NLL", np.nan) - ours.value.get("NLL", np.nan))
            same = dnll <= 1e-8 * max(1.0, ours.value.get("NLL", 1.0))
            out.append(
                (
                    name,
                    f"{speedup:.2f}x ({fmt(ours.median * 1e3)} ms vs "
                    f"{fmt(sk.median * 1e3)} ms), |dNLL| {dnll:.1e}",
                    "met" if speedup >= 8 and same else "not met",
                )
            )
        else:
            out.append((name, "not measured", "not run"))

    ours = _find(rows, "platt", 1_000_000, 2, "skcalib")
    sk = _find(rows, "platt", 1_000_000, 2, "sklearn")
    name = "Platt fit (n=1e6, binary) faster than CalibratedClassifierCV(sigmoid)"
    if ok(ours) and ok(sk):
        out.append(
            (
                name,
                f"{sk.median / ours.median:.2f}x ({fmt(ours.median * 1e3)} ms"
                f" vs {fmt(sk.median * 1e3)} ms)",
                "met" if ours.median < sk.median else "not met",
            )
        )
    else:
        out.append((name, "not measured", "not run"))

    ours = _find(rows, "isotonic", 1_000_000, 2, "skcalib")
    sk = _find(rows, "isotonic", 1_000_000, 2, "sklearn IsotonicRegression alone")
    name = (
        "isotonic fit+predict (n=1e6, binary) no slower than IsotonicRegression alone"
    )
    if ok(ours) and ok(sk):
        out.append(
            (
                name,
                f"{sk.median / ours.median:.2f}x ({fmt(ours.median * 1e3)} ms"
                f" vs {fmt(sk.median * 1e3)} ms)",
                "met" if ours.median <= sk.median else "not met",
            )
        )
    else:
        out.append((name, "not measured", "not run"))

    ours = _find(rows, "histogram", 1_000_000, 2, "skcalib")
    name = "uniform histogram binning fit+predict, 15 bins, 1e6 binary scores < 10 ms"
    if ok(ours):
        out.append(
            (
                name,
                f"{fmt(ours.median * 1e3)} ms",
                "met" if ours.median < 0.010 else "not met",
            )
        )
    else:
        out.append((name, "not measured", "not run"))

    ours = _find(rows, "ece_confidence", 10_000_000, 10, "skcalib")
    base = _find(rows, "ece_confidence", 10_000_000, 10, "proba.max")
    tm = _find(rows, "ece_confidence", 10_000_000, 10, "torchmetrics")
    name = "confidence ECE n=1e7 K=10 within 1.2x of proba.max(axis=1) alone"
    if ok(ours) and ok(base):
        ratio = ours.median / base.median
        out.append(
            (
                name,
                f"{ratio:.2f}x ({fmt(ours.median * 1e3)} ms vs "
                f"{fmt(base.median * 1e3)} ms)",
                "met" if ratio <= 1.2 else "not met",
            )
        )
    else:
        out.append((name, "not measured", "not run"))
    name = "confidence ECE n=1e7 K=10 no slower than torchmetrics (CPU)"
    if ok(ours) and ok(tm):
        out.append(
            (
                name,
                f"{tm.median / ours.median:.2f}x faster ("
                f"{fmt(ours.median * 1e3)} ms vs {fmt(tm.median * 1e3)} ms)",
                "met" if ours.median <= tm.median else "not met",
            )
        )
    elif ok(ours):
        why = status["torchmetrics"].note if "torchmetrics" in status else "not loaded"
        out.append((name, f"torchmetrics unavailable ({why})", "not checked"))
    else:
        out.append((name, "not measured", "not run"))
    return out


# --------------------------------------------------------------------- report
def _mb(x):
    return "-" if not np.isfinite(x) else f"{x / 2**20:.1f}"


def _value_str(value):
    return "; ".join(
        f"{k} {fmt(v, 8) if k in ('T', 'NLL', 'value', 'slope') else fmt(v)}"
        for k, v in value.items()
        if k != "max|dp|"
    )


def render(rows, tgt, env, probe, args, elapsed, notes):
    lines = [
        "# skcalib speed benchmark",
        "",
        f"Command: `python -m benchmarks speed{' --quick' if args.quick else ''}"
        f"{f' --repeat {args.repeat}' if args.repeat != 5 else ''}"
        f"{f' --only {args.only}' if args.only else ''}"
        f"{f' --max-n {args.max_n:.0e}' if args.max_n else ''}`; "
        f"{elapsed / 60:.1f} min in all.",
        "",
        *env,
        f"- timing: median of the timed runs (column `runs`) after one warm-up, "
        "all contenders of a case alternating in this process on the same arrays; "
        f"cases slower than {CASE_BUDGET_S:.0f} s a round run at least 3 rounds, a "
        f"call slower than {MAX_WARMUP_S:.0f} s runs once (target cases always run "
        "in full)",
        f"- memory (`peak MB`): {probe.description}",
        "- `t/t_skcalib`: the contender's time over skcalib's (above 1: skcalib is "
        "faster); throughput in million rows per second",
        "- one-vs-rest methods (Platt, isotonic, binning on K > 2) are run where "
        f"n*K <= {OVR_MAX_CELLS:.0e} and K <= {OVR_MAX_CLASSES}; methods with K^2 "
        f"parameters (Dirichlet, matrix scaling) where K <= {FULL_MATRIX_MAX_K}; "
        f"calibrators beyond the four seed ones where n*K <= {NEW_MAX_CELLS:.0e}; "
        "n=1e7 metric cases "
        "use K <= 10 (K=100 would be "
        "4 GB of float32 and sklearn's multiclass Brier an 8 GB one-hot)",
    ]
    if notes:
        lines += ["", "Skipped peers:", ""] + [f"- {n}" for n in notes]
    lines += ["", "## Targets", ""]
    if all(t[2] == "not run" for t in tgt):
        lines.append("None of the cases that decide a target is in this run.")
    else:
        lines.append(
            markdown_table(
                ["target", "measured", "verdict"], [list(t) for t in tgt], align="lll"
            )
        )
    tasks = []
    for r in rows:
        if r.task not in tasks:
            tasks.append(r.task)
    for task in tasks:
        lines += ["", f"## {TASK_TITLES.get(task, task)}", ""]
        table = []
        trs = [r for r in rows if r.task == task]
        for n, k in sorted({(r.n, r.k) for r in trs}):
            case = [r for r in trs if (r.n, r.k) == (n, k)]
            ref = next(
                (r for r in case if r.library == "skcalib" and np.isfinite(r.median)),
                None,
            )
            for r in case:
                t = r.median
                rel = (
                    (t / ref.median) if (ref is not None and np.isfinite(t)) else np.nan
                )
                table.append(
                    [
                        f"{n:.0e}",
                        str(k),
                        r.label,
                        "-" if not np.isfinite(t) else fmt(t * 1e3, 4),
                        str(r.runs or "-"),
                        "-" if not np.isfinite(t) else fmt(n / t / 1e6, 3),
                        "-" if (r is ref or not np.isfinite(rel)) else f"{rel:.2f}",
                        _mb(r.peak),
                        _value_str(r.value),
                        r.diff,
                        r.note,
                    ]
                )
        lines.append(
            markdown_table(
                [
                    "n",
                    "K",
                    "library",
                    "ms",
                    "runs",
                    "Mrows/s",
                    "t/t_skcalib",
                    "peak MB",
                    "value",
                    "diff vs skcalib",
                    "note",
                ],
                table,
                align="rrlrrrrrlll",
            )
        )
    return "\n".join(lines)


def _print_row(r):
    t = "-" if not np.isfinite(r.median) else f"{r.median * 1e3:10.2f} ms"
    print(
        f"  {r.task:18s} n={r.n:<9.0e} K={r.k:<5d} {r.label[:58]:58s} {t:>14s}  "
        f"{_value_str(r.value)[:40]:40s} {r.diff[:30]:30s} {r.note[:60]}",
        flush=True,
    )


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks speed", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="n=1e4, K in {2, 10}, 2 repeats, seed calibrators and all metrics; "
        "writes to a temp dir",
    )
    parser.add_argument("--out", default=None, help="output folder for speed.md")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs (default 5)")
    parser.add_argument(
        "--peers",
        default="all",
        help="all (default), none, or a comma list of " + ", ".join(P.PEERS),
    )
    parser.add_argument(
        "--only",
        default=None,
        help="comma list of tasks to run (e.g. temperature,ece_confidence)",
    )
    parser.add_argument(
        "--max-n", type=float, default=None, help="largest n of the grid to run"
    )
    args = parser.parse_args(argv)
    repeat = 2 if args.quick else args.repeat
    t_start = time.perf_counter()
    out = output_dir(args.out, args.quick)

    status = P.load_peers(P.parse_peers(args.peers))
    notes = P.skip_notes(status)
    for note in notes:
        print(f"skip {note}", flush=True)
    probe = MemoryProbe()
    only = set(args.only.split(",")) if args.only else None

    cal_tasks = calibrator_tasks(status)
    if args.quick:  # the seed methods only: a few seconds in all
        cal_tasks = {t: v for t, v in cal_tasks.items() if t in TASK_ORDER}
    metric_contenders = P.skcalib_metrics() + P.peer_metrics(status)
    metric_names = []
    for c in metric_contenders:
        if c.metric not in metric_names:
            metric_names.append(c.metric)
    if only:
        cal_tasks = {t: v for t, v in cal_tasks.items() if t in only}
        metric_names = [m for m in metric_names if m in only]

    rows = []
    cal_grid = QUICK_GRID if args.quick else FULL_CAL_GRID
    if args.max_n is not None:
        cal_grid = [(n, k) for n, k in cal_grid if n <= args.max_n]
    if cal_tasks:
        for n, k in cal_grid:
            data = calibration_data(n, k)
            for task, (op, adapters) in cal_tasks.items():
                for r in run_calibrator_case(task, op, adapters, data, repeat, probe):
                    _print_row(r)
                    rows.append(r)
            del data
    metric_grid = QUICK_GRID if args.quick else FULL_METRIC_GRID
    if args.max_n is not None:
        metric_grid = [(n, k) for n, k in metric_grid if n <= args.max_n]
    if metric_names:
        for n, k in metric_grid:
            y, proba = metric_data(n, k)
            for metric in metric_names:
                cs = [c for c in metric_contenders if c.metric == metric]
                for r in run_metric_case(metric, cs, y, proba, repeat, probe):
                    _print_row(r)
                    rows.append(r)
            del y, proba

    tgt = targets(rows, status)
    print("\nTargets:")
    for name, measured, verdict in tgt:
        print(f"  [{verdict}] {name}: {measured}")
    elapsed = time.perf_counter() - t_start
    report = render(rows, tgt, environment(status), probe, args, elapsed, notes)
    path = write_report(out / "speed.md", report)
    print(f"\nwrote {path} ({elapsed:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
