"""Cross-validated regularisation grids of Dirichlet calibration: the fast
path against the strict one, and Kull et al.'s full grid.

On netcal DenseNet-BC-100 CIFAR-100 (``K = 100``, 5000 calibration rows;
the splits of :mod:`benchmarks.quality`, seed 0), :class:`DirichletCalibratorCV`
with 5 folds on a reduced grid (6 ``lambda'`` x 2 ``mu'``), run twice in
turn: the *strict* path (every warm fit refreshes its preconditioner as a
cold fit does, no extrapolated starts: the solver before issue 16) and the
*fast* path (the default: warm fits keep the previous fit's preconditioner
and start from the extrapolation of the two previous fits). Reported: CPU
and wall seconds per grid point and fold, the chosen ``(lambda', mu')``,
the largest difference of the cross-validated scores, and the held-out NLL
of the refit. CPU seconds are the fairer measure on a loaded machine.

``--paper-grid`` also runs the full grid of Kull et al. (2019, their
``tune_cal_odir.py``): ``lambda'`` in ``{1, 0.25, 0.5} x 10**[s..6]`` and
``mu'`` in ``10**[s..6]``, ``s = -2`` for 100 classes (27 x 9 points) and
``s = -5`` otherwise (36 x 12), mapped as ``reg_lambda = lambda' K (K - 1)``,
``reg_mu = mu' K``, with the fast path only.

Run ``python -m benchmarks.bench_cv_grid [--paper-grid] [--out DIR]``.
"""

import argparse
import sys
import time
import warnings
from contextlib import contextmanager

import numpy as np

from benchmarks import environment, markdown_table, output_dir, write_report
from benchmarks.quality import discover_datasets

SET = "netcal/densenet-bc-100-cifar-100"
REDUCED_LAMBDAS = np.array([1e-2, 1e-1, 1.0, 10.0, 100.0, 1000.0])
REDUCED_MUS = np.array([1e-1, 10.0])


def paper_grid(k):
    """Kull et al.'s ``(lambda', mu')`` grid for ``k`` classes."""
    start = -2.0 if k >= 100 else -5.0
    powers = 10.0 ** np.arange(start, 7)
    lams = np.sort(np.concatenate([powers, 0.25 * powers, 0.5 * powers]))
    return lams, powers.copy()


@contextmanager
def strict_path():
    """The path of the solver before the fast path (see the module text)."""
    from skcalib._core.solvers import linear
    from skcalib.calibration import _linear_cv

    saved = linear.WARM_PASS_ITER, _linear_cv.EXTRAPOLATE
    linear.WARM_PASS_ITER, _linear_cv.EXTRAPOLATE = 0, False
    try:
        yield
    finally:
        linear.WARM_PASS_ITER, _linear_cv.EXTRAPOLATE = saved


def run_cv(ds, lams, mus, strict=False):
    """Fit the CV calibrator on the paper's ``(lambda', mu')``; returns the
    fit, wall and CPU seconds, and the held-out NLL of the refit."""
    from skcalib import DirichletCalibratorCV

    k = ds.k
    cal = DirichletCalibratorCV(
        score_type="probability",
        reg_lambdas=np.asarray(lams) * k * (k - 1),
        reg_mus=np.asarray(mus) * k,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wall, cpu = time.perf_counter(), time.process_time()
        if strict:
            with strict_path():
                cal.fit(ds.p_cal, ds.y_cal)
        else:
            cal.fit(ds.p_cal, ds.y_cal)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    q = np.asarray(cal.predict_proba(ds.p_test), dtype=np.float64)
    p = np.clip(q[np.arange(ds.y_test.size), ds.y_test], 1e-15, 1.0)
    return cal, wall, cpu, float(-np.log(p).mean())


def _row(label, ds, run, n_points):
    cal, wall, cpu, nll = run
    k = ds.k
    return [
        label,
        n_points,
        f"{wall:.1f}",
        f"{cpu:.1f}",
        f"{cpu / n_points:.3f}",
        f"{cal.reg_lambda_ / (k * (k - 1)):.3g}",
        f"{cal.reg_mu_ / k:.3g}",
        f"{nll:.6f}",
    ]


HEADERS = [
    "path",
    "fits (points x folds)",
    "wall s",
    "CPU s",
    "CPU s per fit",
    "chosen λ'",
    "chosen μ'",
    "held-out NLL",
]


def reduced_table(ds, repeats=1):
    """Strict and fast paths in turn on the reduced grid."""
    n_points = REDUCED_LAMBDAS.size * REDUCED_MUS.size * 5
    rows, runs = [], {}
    for _ in range(repeats):
        for label, strict in (("strict", True), ("fast", False)):
            runs[label] = run_cv(ds, REDUCED_LAMBDAS, REDUCED_MUS, strict=strict)
            rows.append(_row(label, ds, runs[label], n_points))
            print(rows[-1], flush=True)
    diff = np.abs(runs["strict"][0].cv_scores_ - runs["fast"][0].cv_scores_).max()
    coef = np.abs(runs["strict"][0].coef_ - runs["fast"][0].coef_).max()
    note = (
        f"Largest difference of the fold scores: {diff:.2e}; of the refit's "
        f"W entries: {coef:.2e}."
    )
    return markdown_table(HEADERS, rows, "lrrrrrrr"), note


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.bench_cv_grid", description=__doc__
    )
    parser.add_argument(
        "--paper-grid", action="store_true", help="also run Kull et al.'s full grid"
    )
    parser.add_argument("--repeats", type=int, default=1, help="strict/fast pairs")
    parser.add_argument("--out", default=None, help="output folder")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    ds = dict(discover_datasets())[SET](0)
    table, note = reduced_table(ds, args.repeats)
    parts = [
        "# Cross-validated Dirichlet grids",
        __doc__.split("\n\n", 1)[1],
        f"## Reduced grid on {SET}",
        table,
        note,
    ]
    if args.paper_grid:
        lams, mus = paper_grid(ds.k)
        run = run_cv(ds, lams, mus)
        row = _row("fast", ds, run, lams.size * mus.size * 5)
        print(row, flush=True)
        parts += [
            f"## Kull et al.'s grid ({lams.size} x {mus.size}) on {SET}",
            markdown_table(HEADERS, [row], "lrrrrrrr"),
        ]
    parts += [f"Elapsed {time.perf_counter() - t0:.0f} s.", "\n".join(environment())]
    path = write_report(output_dir(args.out, False) / "cv_grid.md", "\n\n".join(parts))
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
