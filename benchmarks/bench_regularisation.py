"""Regularised matrix scaling and Dirichlet calibration: defaults and paths.

1. Defaults, on every prediction set of ``shared/data`` (the splits of
   :mod:`benchmarks.quality`, seed 0): held-out NLL minus the uncalibrated
   model's, with the standard error of the mean per-sample difference
   (paired on the test rows), for the old defaults (Dirichlet
   ``reg_lambda=1e4, reg_mu=1``; matrix scaling unregularised, run only up
   to ``--ms-max-k`` classes: 90 s at ``K = 100``) and the new
   ``reg_lambda="auto"``. "Worse beyond noise": a difference above two
   standard errors.
2. Paths, on netcal DenseNet-BC-100 CIFAR-100 (``K = 100``) and WideResNet
   CIFAR-10 (``K = 10``): a ``reg_lambda`` grid of 9 points fitted cold
   (each from temperature scaling) and warm-started (``warm_start=True``,
   strongest first), and :class:`DirichletCalibratorCV` (5 folds, the same
   9 points): seconds and held-out NLL.

Inputs: the stored float32 probabilities as probabilities. Run
``python -m benchmarks.bench_regularisation [--quick] [--paper-grid]
[--out DIR]`` from the repository root (writes ``regularisation.md``;
``--paper-grid`` first runs :mod:`benchmarks.bench_cv_grid` with Kull et
al.'s full grid, writing ``cv_grid.md``).
"""

import argparse
import sys
import time
import warnings

import numpy as np

from benchmarks import environment, fmt, markdown_table, output_dir, write_report
from benchmarks.quality import QUICK_DATASETS, discover_datasets

EPS = 1e-15
PATH_SETS = ("netcal/densenet-bc-100-cifar-100", "netcal/wideresnet-16-4-cifar-10")


def _nll(y, q):
    q = np.asarray(q, dtype=np.float64)
    return -np.log(np.clip(q[np.arange(y.size), y], EPS, 1.0))


def _diff(ds, cal, base):
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        q = cal.fit(ds.p_cal, ds.y_cal).predict_proba(ds.p_test)
    seconds = time.perf_counter() - t0
    d = _nll(ds.y_test, q) - base
    return d.mean(), d.std(ddof=1) / np.sqrt(d.size), seconds


def defaults_table(datasets, ms_max_k):
    from skcalib import DirichletCalibrator, MatrixScalingCalibrator

    rows, worse = [], 0
    for name, load in datasets:
        ds = load(0)
        base = _nll(ds.y_test, ds.p_test)
        kw = {"score_type": "probability"}
        old_dir = _diff(ds, DirichletCalibrator(reg_lambda=1e4, reg_mu=1.0, **kw), base)
        new_dir = _diff(ds, DirichletCalibrator(**kw), base)
        new_ms = _diff(ds, MatrixScalingCalibrator(**kw), base)
        old_ms = (
            _diff(ds, MatrixScalingCalibrator(reg_lambda=0.0, reg_mu=0.0, **kw), base)
            if ds.k <= ms_max_k
            else None
        )
        worse += sum(d > 2 * se for d, se, _ in (new_dir, new_ms))

        def cell(r):
            return "-" if r is None else f"{r[0]:+.4f} ± {r[1]:.4f}"

        rows.append(
            [
                name,
                ds.k,
                ds.y_cal.size,
                fmt(base.mean()),
                cell(old_ms),
                cell(new_ms),
                cell(old_dir),
                cell(new_dir),
                fmt(new_dir[2], 2),
            ]
        )
        print(name, rows[-1][3:], flush=True)
    headers = [
        "set",
        "K",
        "n cal",
        "NLL uncal",
        "MS old (0, 0)",
        "MS auto",
        "Dir old (1e4, 1)",
        "Dir auto",
        "Dir auto s",
    ]
    return markdown_table(headers, rows, "lrrrrrrrr"), worse, len(rows)


def path_table(datasets):
    from skcalib import DirichletCalibrator
    from skcalib.calibration._linear_cv import DirichletCalibratorCV

    lookup = dict(datasets)
    rows = []
    for name in PATH_SETS:
        if name not in lookup:
            continue
        ds = lookup[name](0)
        base = _nll(ds.y_test, ds.p_test).mean()
        auto = DirichletCalibrator().fit(ds.p_cal, ds.y_cal).reg_lambda_
        grid = np.sort(auto * np.logspace(-2, 2, 9))[::-1]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cold = []
            for lam in grid:
                t0 = time.perf_counter()
                DirichletCalibrator(reg_lambda=lam).fit(ds.p_cal, ds.y_cal)
                cold.append(time.perf_counter() - t0)
            warm, cal = [], DirichletCalibrator(warm_start=True)
            for lam in grid:
                t0 = time.perf_counter()
                cal.set_params(reg_lambda=lam).fit(ds.p_cal, ds.y_cal)
                warm.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            cv = DirichletCalibratorCV().fit(ds.p_cal, ds.y_cal)
            cv_s = time.perf_counter() - t0
        cv_nll = _nll(ds.y_test, cv.predict_proba(ds.p_test)).mean()
        rows.append(
            [
                name,
                ds.k,
                fmt(np.mean(cold), 2),
                fmt(np.max(cold), 2),
                fmt(np.mean(warm), 2),
                fmt(np.max(warm), 2),
                fmt(cv_s, 1),
                f"{cv.reg_lambda_:.3g}",
                fmt(base),
                fmt(cv_nll),
            ]
        )
        print(name, rows[-1][2:], flush=True)
    headers = [
        "set",
        "K",
        "cold fit s (mean)",
        "cold max",
        "warm fit s (mean)",
        "warm max",
        "DirichletCalibratorCV s (5 folds x 9)",
        "chosen λ",
        "NLL uncal",
        "NLL CV",
    ]
    return markdown_table(headers, rows, "lrrrrrrrrr")


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.bench_regularisation", description=__doc__
    )
    parser.add_argument("--quick", action="store_true", help="two small sets, no paths")
    parser.add_argument("--out", default=None, help="output folder")
    parser.add_argument(
        "--ms-max-k",
        type=int,
        default=10,
        help="run unregularised matrix scaling up to this many classes",
    )
    parser.add_argument(
        "--paper-grid",
        action="store_true",
        help="also run benchmarks.bench_cv_grid with Kull et al.'s full grid",
    )
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    if args.paper_grid:
        from benchmarks.bench_cv_grid import main as grid_main

        grid_main(["--paper-grid"] + ([] if args.out is None else ["--out", args.out]))
    datasets = discover_datasets()
    if args.quick:
        datasets = [d for d in datasets if d[0] in QUICK_DATASETS]
    table, worse, n = defaults_table(datasets, args.ms_max_k)
    paths = "" if args.quick else path_table(datasets)
    text = "\n\n".join(
        [
            "# Regularised matrix scaling and Dirichlet calibration",
            __doc__.split("\n\n", 1)[1],
            "## Defaults: held-out NLL minus uncalibrated (± standard error)",
            table,
            f"New defaults worse than uncalibrated beyond two standard errors: "
            f"{worse} of {2 * n} fits.",
            "## Paths" if paths else "",
            paths,
            f"Elapsed {time.perf_counter() - t0:.0f} s.",
            "\n".join(environment()),
        ]
    )
    path = write_report(output_dir(args.out, args.quick) / "regularisation.md", text)
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
