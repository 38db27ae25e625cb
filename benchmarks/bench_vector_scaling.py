"""Vector scaling fit on large float32 logits, beside temperature scaling.

``python -m benchmarks.bench_vector_scaling [--quick] [--out DIR]`` (from the
repository root) writes ``vector_scaling.md``: on ``--n`` rows of ``--k``
classes of float32 logits (those of :mod:`benchmarks.bench_large`,
``2 (N(0, 1) + 1.5 e_y)``), the medians over ``--repeat`` interleaved rounds
of

* ``TemperatureCalibrator().fit`` (for scale: it is also the start of the
  vector scaling fit);
* ``VectorScalingCalibrator().fit`` (the Newton method of
  :mod:`skcalib._core.solvers.vector`: subsampled Hessian while the gradient
  is large, one exact Hessian kept for the last steps and the polish);
* the same fit with the exact Hessian at every Newton step
  (:func:`~skcalib._core.solvers.newton.polished_newton`, the solver used
  before), the reference optimum;

with the passes over the data of each fit, the NLL reached (float64) and
the CPU time, the largest relative difference of ``coef_`` and absolute difference of
``intercept_`` from the reference.
"""

import argparse
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from benchmarks import environment, fmt, markdown_table, output_dir, write_report
from benchmarks.bench_large import labels_block, logits_block


@contextmanager
def _counting():
    """Counts the passes of ``PenalisedNLL`` (``loss_grad`` and ``loss``)."""
    from skcalib._core.solvers import linear

    counts = {"passes": 0}
    saved = linear.PenalisedNLL.loss_grad, linear.PenalisedNLL.loss

    def wrap(fn):
        def counted(self, *args, **kwargs):
            counts["passes"] += 1
            return fn(self, *args, **kwargs)

        return counted

    linear.PenalisedNLL.loss_grad = wrap(saved[0])
    linear.PenalisedNLL.loss = wrap(saved[1])
    try:
        yield counts
    finally:
        linear.PenalisedNLL.loss_grad, linear.PenalisedNLL.loss = saved


def _reference_solver(problem, *, max_iter, tol, n_jobs=1, start=None):
    """The previous vector scaling solver: the exact Hessian at every pass."""
    from skcalib._core.solvers import linear
    from skcalib._core.solvers.newton import polished_newton

    with linear._threads(problem, n_jobs):
        theta = linear._start(problem, start)
        return polished_newton(problem, theta, max_iter=max_iter, tol=tol)


@contextmanager
def _reference():
    from skcalib.calibration import _linear_map

    saved = _linear_map.fit_vector
    _linear_map.fit_vector = _reference_solver
    try:
        yield
    finally:
        _linear_map.fit_vector = saved


def _nll(z, y, coef, intercept):
    """Mean NLL of ``softmax(coef * z + intercept)`` in float64."""
    from skcalib._core.solvers.linear import PenalisedNLL

    k = z.shape[1]
    problem = PenalisedNLL(z, y, None, np.zeros((2, k)), diagonal=True)
    return problem.loss(problem.scaled(np.vstack((coef, intercept))))


def _fit(name, z, y):
    from skcalib import TemperatureCalibrator, VectorScalingCalibrator

    with _counting() as counts:
        t0, c0 = time.perf_counter(), time.process_time()
        if name == "temperature":
            model = TemperatureCalibrator().fit(z, y)
        elif name == "reference":
            with _reference():
                model = VectorScalingCalibrator().fit(z, y)
        else:
            model = VectorScalingCalibrator().fit(z, y)
        seconds = time.perf_counter() - t0, time.process_time() - c0
    return seconds, counts["passes"], model


def run(args):
    n, k = int(args.n), args.k
    z, y = logits_block(0, n, k), labels_block(0, n, k)
    names = ["temperature", "vector", "reference"]
    times = {name: [] for name in names}
    cpu = {name: [] for name in names}
    models, passes = {}, {}
    for _ in range(args.repeat):
        for name in names:
            (seconds, cpu_s), passes[name], models[name] = _fit(name, z, y)
            times[name].append(seconds)
            cpu[name].append(cpu_s)
    rows = []
    ref = models["reference"]
    t_temp = float(np.median(times["temperature"]))
    c_temp = float(np.median(cpu["temperature"]))
    for name in names:
        model, t = models[name], float(np.median(times[name]))
        c = float(np.median(cpu[name]))
        if name == "temperature":
            nll, coef_diff, int_diff = None, None, None
            label = "TemperatureCalibrator().fit"
        else:
            nll = _nll(z, y, model.coef_, model.intercept_)
            coef_diff = np.max(np.abs(model.coef_ / ref.coef_ - 1.0))
            int_diff = np.max(np.abs(model.intercept_ - ref.intercept_))
            label = "VectorScalingCalibrator().fit" + (
                " (exact Hessian every step, before)" if name == "reference" else ""
            )
        rows.append(
            [
                label,
                fmt(t),
                fmt(t / t_temp, 3),
                fmt(c),
                fmt(c / c_temp, 3),
                str(passes[name]) if name != "temperature" else "-",
                "-" if nll is None else f"{nll:.15f}",
                fmt(coef_diff, 3),
                fmt(int_diff, 3),
                " / ".join(fmt(v, 3) for v in times[name]),
            ]
        )
    return rows


def render(args, rows, elapsed):
    lines = [
        "# Vector scaling fit on float32 logits",
        "",
        f"n = {int(args.n):,}, K = {args.k}, float32 logits "
        "`2 (N(0, 1) + 1.5 e_y)`; medians of "
        f"{args.repeat} interleaved rounds; one thread (`n_jobs=None`). "
        "Passes: passes of the vector scaling objective over the data "
        "(not those of the temperature start). CPU s: the process's CPU time "
        "(steadier than wall time on a shared machine). Differences: from the "
        "reference fit (largest relative of `coef_`, absolute of "
        "`intercept_`).",
        "",
        markdown_table(
            [
                "fit",
                "seconds",
                "x temperature",
                "CPU s",
                "x temperature (CPU)",
                "passes",
                "NLL reached",
                "coef_ rel. diff",
                "intercept_ diff",
                "rounds (s)",
            ],
            rows,
            align="lrrrrrrrrr",
        ),
        "",
        *environment(),
        f"- total run time {elapsed:.0f} s",
    ]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n=1e5, one round")
    parser.add_argument("--out", default=None, help="output folder")
    parser.add_argument("--n", type=float, default=1e6, help="rows")
    parser.add_argument("--k", type=int, default=100, help="classes")
    parser.add_argument("--repeat", type=int, default=3, help="timed rounds")
    args = parser.parse_args(argv)
    if args.quick:
        args.n, args.repeat = 1e5, 1
    t0 = time.perf_counter()
    rows = run(args)
    text = render(args, rows, time.perf_counter() - t0)
    out = output_dir(args.out, args.quick)
    path = write_report(Path(out) / "vector_scaling.md", text)
    print(text)
    print(f"wrote {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
