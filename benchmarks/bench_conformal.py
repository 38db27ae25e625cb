"""Coverage, set size and speed of skcalib's split-conformal prediction sets.

Run from the repository root::

    python -m benchmarks.bench_conformal [--quick] [--out DIR] [--splits N]

**Quality.** Every prediction set in ``shared/data`` (the files of
``python -m benchmarks quality``; a ``splinecalib`` calibration/test pair is
pooled) is split ``--splits`` times (default 20) at random into two halves, a
calibration half and a test half (seeded by the split index). On each split
:class:`~skcalib.conformal._classifier.ConformalClassifier` at
``alpha=0.1`` is fitted on the calibration half, on the stored probabilities
(float64, rows renormalised), with five settings: LAC, APS, randomised APS,
class-conditional (Mondrian) LAC, and APS on temperature-scaled
probabilities (``calibrator=TemperatureCalibrator()``, fitted on the same
half), randomised RAPS and RAPS without the last label (``k_reg`` and
``lam`` chosen on 20% of the calibration half, seeded by the split), and
top-k sets. Reported per data set and setting: the mean test coverage over the
splits (the guarantee is on this mean: >= 0.9, and <= 0.9 + 1/(n+1) for
randomised APS) with its standard deviation and minimum over the splits, the
worst class's coverage (mean over splits), the mean set size and the share
of empty sets.

**Speed.** On synthetic over-confident probabilities (n calibration rows and
n test rows, K classes), ``fit`` + ``predict_set`` against a plain numpy
implementation of the same definitions (one ``argsort`` per row, cumulative
sums, the order statistic by ``np.sort``), the way the method is usually
written (Angelopoulos & Bates 2021). Median of ``--repeat`` alternating runs
after a warm-up; the share of rows whose sets agree is shown (APS: the numpy
version orders tied probabilities by column, skcalib treats them alike, and
it forms the mass above a class as ``cumsum - p``, which rounds differently).
The plain numpy version is the speed reference; parity of thresholds and
sets with MAPIE 1.6 (LAC, top-k, APS, RAPS) is checked in the test suite
(``tests/conformal/test_mapie_parity.py``), not timed here.

**Several levels.** Randomised APS sets at ten levels from one fit and one
``predict_set(X, alpha=levels)`` call, against a fit and a call per level
(same sets; the ratio of times).

Writes ``benchmarks/results/conformal.md`` (a ``--quick`` run: a temporary
folder unless ``--out`` is given). A full run takes about 2-3 minutes.
"""

import argparse
import sys
import time
import warnings

import numpy as np

from benchmarks import environment, fmt, markdown_table, measure, output_dir
from benchmarks import write_report as _write
from benchmarks.quality import DATA_DIR, discover_datasets
from skcalib.calibration._temperature import TemperatureCalibrator
from skcalib.conformal._classifier import ConformalClassifier
from skcalib.conformal._metrics import (
    classwise_set_coverage,
    mean_set_size,
    set_coverage_score,
)

ALPHA = 0.1
SETTINGS = {
    "LAC": {"method": "lac"},
    "APS": {"method": "aps", "randomized": False},
    "APS randomised": {"method": "aps", "randomized": True},
    "LAC Mondrian": {"method": "lac", "class_conditional": True},
    "APS + temperature": {
        "method": "aps",
        "randomized": False,
        "calibrator": TemperatureCalibrator(),
    },
    "RAPS randomised": {"method": "raps", "randomized": True},
    "RAPS no last label": {"method": "raps", "include_last_label": False},
    "top-k": {"method": "top_k"},
}
#: Every set rule, randomised or not, on probabilities rounded to 2 decimals
#: (ties): the coverage section of issue 30.
TIED_SETTINGS = {
    "LAC": {"method": "lac"},
    "LAC Mondrian": {"method": "lac", "class_conditional": True},
    "APS": {"method": "aps", "randomized": False},
    "APS no last label": {"method": "aps", "include_last_label": False},
    "APS randomised (default)": {"method": "aps"},
    "APS randomised Mondrian": {"method": "aps", "class_conditional": True},
    "RAPS": {"method": "raps", "randomized": False},
    "RAPS randomised (default)": {"method": "raps"},
    "top-k": {"method": "top_k"},
}
TIED_DATASETS = (
    "wideresnet-16-4-cifar-100",
    "densenet-bc-100-cifar-100",
    "wideresnet-16-4-cifar-10",
)
#: Levels of the several-levels timing: one fit and one predict_set call
#: against one fit and one call per level.
LEVELS = np.linspace(0.01, 0.3, 10)
QUICK_DATASETS = ("netcal/wideresnet-16-4-cifar-10", "pycalib/kitti__random_forest")
SPEED_CASES = [(100_000, 10), (20_000, 100), (2_000, 1000)]
QUICK_SPEED_CASES = [(10_000, 10)]


# -------------------------------------------------------------------- quality
def pooled(load):
    """All rows of one data set: float64 probabilities (rows sum to 1), labels."""
    d = load()
    p = np.concatenate([d.p_cal, d.p_test])
    y = np.concatenate([d.y_cal, d.y_test])
    return p, y


def coverage_runs(proba, y, n_splits, params, *, alpha=ALPHA):
    """Per-split coverage, worst-class coverage, mean size, empty share."""
    rows = []
    n_cal = y.size // 2
    for split in range(n_splits):
        rng = np.random.default_rng(split)
        perm = rng.permutation(y.size)
        cal, test = perm[:n_cal], perm[n_cal:]
        cp = ConformalClassifier(
            alpha=alpha, score_type="probability", random_state=split, **params
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # a threshold at inf
            cp.fit(proba[cal], y[cal])
        sets = cp.predict_set(proba[test])
        labels = cp.classes_
        classwise = classwise_set_coverage(y[test], sets, labels=labels)
        rows.append(
            (
                set_coverage_score(y[test], sets, labels=labels),
                float(np.nanmin(classwise)),
                mean_set_size(sets),
                float(np.mean(~sets.any(axis=1))),
            )
        )
    return np.array(rows), n_cal


def rounded(name, decimals=2):
    """netcal probabilities rounded to ``decimals`` (then renormalised; a row
    rounded to all zeros keeps its top class), labels; None if absent."""
    path = DATA_DIR / "netcal" / f"{name}.npz"
    if not path.exists():
        return None
    d = np.load(path)
    p = d["predictions"].astype(np.float64)
    r = np.maximum(p.round(decimals), 0.0)
    zero = r.sum(axis=1) == 0
    r[zero, np.argmax(p[zero], axis=1)] = 1.0
    return r / r.sum(axis=1, keepdims=True), d["ground_truth"]


def tied_coverage(n_splits, quick):
    """Coverage of every set rule over ``n_splits`` 50/50 splits of the
    netcal CIFAR predictions rounded to 2 decimals."""
    rows = []
    for name in TIED_DATASETS[:1] if quick else TIED_DATASETS:
        data = rounded(name)
        if data is None:
            continue
        proba, y = data
        distinct = np.unique(proba, axis=0).shape[0]
        for setting, params in TIED_SETTINGS.items():
            runs, n_cal = coverage_runs(proba, y, n_splits, params)
            cov = runs[:, 0]
            se = cov.std(ddof=1) / np.sqrt(cov.size) if cov.size > 1 else 0.0
            flag = " (!)" if cov.mean() < 1 - ALPHA - 3 * se else ""
            rows.append(
                [
                    f"{name} ({distinct} distinct rows)",
                    setting,
                    f"{cov.mean():.4f}{flag}",
                    f"{se:.4f}",
                    f"{cov.min():.3f}",
                    f"{runs[:, 2].mean():.2f}",
                    f"{100 * runs[:, 3].mean():.1f}",
                ]
            )
    return rows


def quality(n_splits, quick):
    datasets = discover_datasets(DATA_DIR)
    if quick:
        datasets = [(n, f) for n, f in datasets if n in QUICK_DATASETS]
    table = []
    summary = {name: [] for name in SETTINGS}
    for name, load in datasets:
        proba, y = pooled(load)
        k = proba.shape[1]
        for setting, params in SETTINGS.items():
            runs, n_cal = coverage_runs(proba, y, n_splits, params)
            cov = runs[:, 0]
            upper = 1 - ALPHA + 1 / (n_cal + 1)
            ok = cov.mean() >= 1 - ALPHA - 3 * cov.std(ddof=1) / np.sqrt(cov.size)
            summary[setting].append((cov.mean(), runs[:, 2].mean(), ok))
            table.append(
                [
                    name,
                    str(k),
                    f"{n_cal}/{y.size - n_cal}",
                    setting,
                    f"{cov.mean():.4f}" + ("" if ok else " (!)"),
                    f"{cov.std(ddof=1):.4f}",
                    f"{cov.min():.4f}",
                    f"{upper:.4f}",
                    f"{runs[:, 1].mean():.3f}",
                    fmt(runs[:, 2].mean(), 4),
                    f"{100 * runs[:, 3].mean():.1f}",
                ]
            )
        print(f"  {name}: done", file=sys.stderr)
    return table, summary


# ---------------------------------------------------------------------- speed
def numpy_sets(p_cal, y_cal, p_test, alpha, method):
    """LAC / non-randomised APS sets, written plainly with numpy."""
    n = y_cal.size
    k = int(np.ceil((n + 1) * (1 - alpha)))
    rows = np.arange(n)
    if method == "lac":
        scores = 1 - p_cal[rows, y_cal]
    else:
        order = np.argsort(p_cal, axis=1)[:, ::-1]
        cum = np.take_along_axis(p_cal, order, axis=1).cumsum(axis=1)
        rank = np.argsort(order, axis=1)
        scores = np.take_along_axis(cum, rank, axis=1)[rows, y_cal]
    q = np.inf if k > n else np.sort(scores)[k - 1]
    if method == "lac":
        return 1 - p_test <= q
    order = np.argsort(p_test, axis=1)[:, ::-1]
    srt = np.take_along_axis(p_test, order, axis=1)
    above = srt.cumsum(axis=1) - srt
    return np.take_along_axis(above < q, np.argsort(order, axis=1), axis=1)


def synthetic(n, k, seed):
    rng = np.random.default_rng(seed)
    y = rng.permutation(np.arange(n) % k)  # every class present
    z = rng.standard_normal((n, k))
    z[np.arange(n), y] += 2.0
    z *= 2.0  # over-confident
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    return p, y


def speed(cases, repeat):
    table = []
    for n, k in cases:
        p_cal, y_cal = synthetic(n, k, seed=k)
        p_test, _ = synthetic(n, k, seed=k + 1)
        for method in ("lac", "aps"):

            def ours(method=method, p_cal=p_cal, y_cal=y_cal, p_test=p_test):
                cp = ConformalClassifier(method=method, score_type="probability")
                return cp.fit(p_cal, y_cal).predict_set(p_test)

            def plain(method=method, p_cal=p_cal, y_cal=y_cal, p_test=p_test):
                return numpy_sets(p_cal, y_cal, p_test, ALPHA, method)

            res = measure({"skcalib": ours, "numpy": plain}, repeat, budget=60)
            a, b = res["skcalib"], res["numpy"]
            if not (a.ok and b.ok):
                table.append(
                    [f"{n:,}", str(k), method.upper(), a.error or "-", b.error or "-"]
                    + ["-"] * 3
                )
                continue
            agree = float(np.mean((a.result == b.result).all(axis=1)))
            table.append(
                [
                    f"{n:,}",
                    str(k),
                    method.upper(),
                    fmt(a.median * 1e3, 4),
                    fmt(b.median * 1e3, 4),
                    f"{b.median / a.median:.2f}",
                    f"{100 * agree:.2f}",
                    str(len(a.runs)),
                ]
            )
            print(f"  speed n={n} K={k} {method}: done", file=sys.stderr)
    return table


_LEVEL_PARAMS = {"method": "aps", "randomized": True, "random_state": 0}


def levels_speed(cases, repeat):
    """Sets at ``LEVELS``: one fit and one call against a fit per level."""
    table = []
    for n, k in cases:
        p_cal, y_cal = synthetic(n, k, seed=k)
        p_test, _ = synthetic(n, k, seed=k + 1)

        def one_call(p_cal=p_cal, y_cal=y_cal, p_test=p_test):
            cp = ConformalClassifier(score_type="probability", **_LEVEL_PARAMS)
            return cp.fit(p_cal, y_cal).predict_set(p_test, alpha=LEVELS)

        def refits(p_cal=p_cal, y_cal=y_cal, p_test=p_test):
            sets = []
            for a in LEVELS:
                cp = ConformalClassifier(
                    score_type="probability", alpha=a, **_LEVEL_PARAMS
                )
                sets.append(cp.fit(p_cal, y_cal).predict_set(p_test))
            return np.stack(sets, axis=-1)

        res = measure({"one": one_call, "refit": refits}, repeat, budget=60)
        a, b = res["one"], res["refit"]
        same = bool(a.ok and b.ok and np.array_equal(a.result, b.result))
        table.append(
            [
                f"{n:,}",
                str(k),
                fmt(a.median * 1e3, 4) if a.ok else a.error,
                fmt(b.median * 1e3, 4) if b.ok else b.error,
                f"{b.median / a.median:.2f}" if a.ok and b.ok else "-",
                "yes" if same else "no",
            ]
        )
        print(f"  levels n={n} K={k}: done", file=sys.stderr)
    return table


# --------------------------------------------------------------------- report
def report(
    quality_rows,
    summary,
    speed_rows,
    n_splits,
    seconds,
    command,
    levels=(),
    tied=(),
    tie_splits=0,
):
    lines = [
        "# skcalib conformal prediction sets: coverage, size and speed",
        "",
        f"Command: `{command}`; {seconds / 60:.1f} min in all.",
        "",
        *environment(),
        "",
        "How to read this: a split-conformal predictor at `alpha=0.1` promises "
        "that the set holds the true class for at least 90% of test samples on "
        "average over calibration sets (and at most 90% + 1/(n+1) for randomised "
        "APS). **coverage** is the mean over "
        f"{n_splits} random 50/50 calibration/test splits (seeds 0..{n_splits - 1})"
        ", with its standard deviation and minimum over the splits (single "
        "splits scatter around the mean: the guarantee is on the mean); "
        "**upper** is 0.9 + 1/(n+1); **worst class** is the lowest class-wise "
        "coverage (mean over splits; Mondrian targets it); **size** the mean "
        "number of classes per set (lower is better at equal coverage); "
        "**empty %** the share of empty sets. `(!)` marks a mean coverage more "
        "than 3 standard errors below 0.9.",
        "",
        "Settings: `ConformalClassifier(alpha=0.1, score_type='probability', "
        "...)` on the stored probabilities (float64, rows renormalised): "
        "`method='lac'`; `method='aps'`; `method='aps', randomized=True`; "
        "`method='lac', class_conditional=True`; `method='aps', "
        "calibrator=TemperatureCalibrator()` (temperature fitted on the "
        "calibration half itself, so its guarantee is approximate); "
        "`method='raps', randomized=True` and `method='raps', "
        "include_last_label=False` (`k_reg`, `lam` chosen on 20% of the "
        "calibration half, the threshold on the rest; **upper** uses the whole "
        "half, so it is a little low for RAPS); `method='top_k'`.",
        "",
        "## Summary over all data sets",
        "",
    ]
    rows = []
    for setting, values in summary.items():
        if not values:
            continue
        cov = np.array([v[0] for v in values])
        size = np.array([v[1] for v in values])
        ok = sum(v[2] for v in values)
        rows.append(
            [
                setting,
                f"{cov.mean():.4f}",
                f"{cov.min():.4f}",
                f"{ok}/{len(values)}",
                fmt(np.median(size), 4),
            ]
        )
    lines += [
        markdown_table(
            [
                "setting",
                "mean coverage",
                "lowest data-set coverage",
                "data sets >= 0.9 (3 s.e.)",
                "median mean size",
            ],
            rows,
        ),
        "",
        "## Per data set",
        "",
        markdown_table(
            [
                "data set",
                "K",
                "cal/test",
                "setting",
                "coverage",
                "sd",
                "min",
                "upper",
                "worst class",
                "size",
                "empty %",
            ],
            quality_rows,
            align="lrrlrrrrrrr",
        ),
        "",
        "## Speed: fit + predict_set against plain numpy",
        "",
        "n calibration rows and n test rows of synthetic over-confident "
        "probabilities; times in ms (median); **x** is numpy's time over "
        "skcalib's (above 1: skcalib is faster); **same sets %** the share of "
        "rows with identical sets. skcalib validates its input on `fit` and on "
        "`predict_set` (finite values, probabilities in [0, 1], rows summing to "
        "1, in the shared base class); the plain version checks nothing. For "
        "LAC, whose own work is one subtraction and one comparison, those "
        "checks are most of skcalib's time. APS needs one sort per row (no "
        "`argsort` for one threshold: the sets are the classes at least as "
        "probable as the last sorted class that passes), where the plain "
        "version needs two `argsort`s per row.",
        "",
    ]
    if speed_rows:
        lines.append(
            markdown_table(
                [
                    "n",
                    "K",
                    "method",
                    "skcalib ms",
                    "numpy ms",
                    "x",
                    "same sets %",
                    "runs",
                ],
                speed_rows,
            )
        )
    if levels:
        lines += [
            "",
            f"## Speed: sets at {len(LEVELS)} levels in one call",
            "",
            "Randomised APS at `alpha` in "
            f"{np.round(LEVELS, 3).tolist()}: one fit and one "
            "`predict_set(X, alpha=levels)` (each row sorted once) against one "
            "fit and one `predict_set` per level; times in ms (median), **x** "
            "the refit time over the one-call time; **same sets** whether the "
            "two give identical arrays.",
            "",
            markdown_table(
                ["n", "K", "one call ms", "refit per level ms", "x", "same sets"],
                list(levels),
            ),
        ]
    if tied:
        lines += [
            "",
            "## Coverage with tied probabilities (issue 30)",
            "",
            f"The netcal CIFAR probabilities rounded to 2 decimals (many tied "
            f"rows and classes), {tie_splits} random 50/50 splits (seeds "
            f"0..{tie_splits - 1}), `alpha=0.1`, every set rule; **coverage** "
            "is the mean over the splits, **se** its standard error, `(!)` a "
            "mean more than 3 se below 0.9. RAPS tunes `k_reg`, `lam` on 20% "
            "of the calibration half (a permutation by position).",
            "",
            markdown_table(
                ["data", "setting", "coverage", "se", "min", "size", "empty %"],
                list(tied),
            ),
        ]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.bench_conformal", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--quick", action="store_true", help="2 data sets, 3 splits")
    parser.add_argument("--out", default=None, help="output folder")
    parser.add_argument("--splits", type=int, default=None, help="random splits")
    parser.add_argument("--repeat", type=int, default=5, help="speed repeats")
    parser.add_argument(
        "--tie-splits", type=int, default=None, help="splits of the ties section"
    )
    args = parser.parse_args(argv)
    n_splits = args.splits or (3 if args.quick else 20)
    start = time.perf_counter()
    if not DATA_DIR.is_dir():
        print(f"no data in {DATA_DIR}: quality part skipped", file=sys.stderr)
    quality_rows, summary = quality(n_splits, args.quick)
    tie_splits = args.tie_splits or (3 if args.quick else 200)
    tied = tied_coverage(tie_splits, args.quick)
    cases = QUICK_SPEED_CASES if args.quick else SPEED_CASES
    speed_rows = speed(cases, 2 if args.quick else args.repeat)
    levels = levels_speed(cases, 2 if args.quick else args.repeat)
    command = (
        "python -m benchmarks.bench_conformal"
        + (" " + " ".join(argv if argv is not None else sys.argv[1:])).rstrip()
    )
    text = report(
        quality_rows,
        summary,
        speed_rows,
        n_splits,
        time.perf_counter() - start,
        command,
        levels,
        tied,
        tie_splits,
    )
    path = _write(output_dir(args.out, args.quick) / "conformal.md", text)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
