"""Temperature scaling fitted on 1e8 logits through Dask, generated chunk by
chunk.

``python -m benchmarks.bench_large_fit [--quick] [--out DIR]`` (from the
repository root) writes ``large_fit.md``:

* **Dask, n = 1e8** (``--n``): float32 logits of ``K = 10`` classes generated
  block by block (the data of :mod:`benchmarks.bench_large`, before the
  softmax), never all in memory; ``TemperatureCalibrator().fit`` on the Dask
  arrays (one pass per Newton step, each a sum of per-block statistics) on
  the threaded scheduler with two threads. Reported: wall time, number of
  passes, the client's peak extra resident memory, and the time of one
  pass that only reads the generated data (the generation cost per pass).
* **Dask against in memory, n = 1e7** (``--n-memory``): the same numbers
  generated into one numpy array; ``fit`` in memory against ``fit`` on the
  array split into Dask blocks (median of ``--repeat`` runs each).
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks import (
    MemoryProbe,
    environment,
    fmt,
    markdown_table,
    output_dir,
    write_report,
)
from benchmarks.bench_large import dask_data, logits_block, memory_data


class _CountingChunks:
    """Counts the passes of a fit over all blocks (``ChunkedData._run``)."""

    def __enter__(self):
        from skcalib._backends import chunks as _chunks

        self.module, self.passes = _chunks, 0
        self.original = _chunks.ChunkedData.__init__

        def init(data, run, _self=self):
            def counted(fn, first=False):
                _self.passes += not first  # a look at the first block only
                return run(fn, first=first)

            _self.original(data, counted)

        _chunks.ChunkedData.__init__ = init
        return self

    def __exit__(self, *exc):
        self.module.ChunkedData.__init__ = self.original


def _timed(probe, fn):
    t0 = time.perf_counter()
    value, peak = probe.call(fn)
    return value, time.perf_counter() - t0, peak


def run(args, probe):
    import dask

    from skcalib import TemperatureCalibrator

    n, k, chunk = int(args.n), args.k, args.chunk
    y, z = dask_data(n, k, chunk, make=logits_block)
    with dask.config.set(scheduler="threads", num_workers=2):
        with _CountingChunks() as counter:
            cal, t_fit, peak = _timed(probe, lambda: TemperatureCalibrator().fit(z, y))
        _, t_read, _ = _timed(probe, lambda: dask.compute(z.max(axis=1).sum(), y.sum()))
    large = {
        "T": cal.temperature_,
        "n_iter": cal.n_iter_,
        "passes": counter.passes,
        "time": t_fit,
        "peak": peak,
        "read": t_read,
    }
    nm = int(args.n_memory)
    y_mem, z_mem = memory_data(nm, k, chunk, make=logits_block)
    import dask.array as da

    dz = da.from_array(z_mem, chunks=(chunk, k))
    dy = da.from_array(y_mem, chunks=chunk)
    times = {"memory": [], "dask": []}
    with dask.config.set(scheduler="threads", num_workers=2):
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            t_mem = TemperatureCalibrator().fit(z_mem, y_mem).temperature_
            times["memory"].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            t_dask = TemperatureCalibrator().fit(dz, dy).temperature_
            times["dask"].append(time.perf_counter() - t0)
    memory = {
        "memory": float(np.median(times["memory"])),
        "dask": float(np.median(times["dask"])),
        "T_memory": t_mem,
        "T_dask": t_dask,
    }
    return large, memory


def render(args, large, memory, elapsed, probe):
    n, nm = int(args.n), int(args.n_memory)
    lines = [
        "# Temperature scaling of large data through Dask",
        "",
        f"`python -m benchmarks.bench_large_fit{' --quick' if args.quick else ''}` "
        f"({elapsed:.0f} s in all).",
        "",
        *environment(),
        "",
        f"K = {args.k}, float32 logits `2 (N(0, 1) + 1.5 e_y)`, {args.chunk:,} rows "
        "per block, generated block by block from the block index (the data of "
        "`bench_large.py` before the softmax); `TemperatureCalibrator().fit` on "
        "the Dask arrays, threaded scheduler with 2 threads. Memory: peak extra "
        f"resident memory of the client process ({probe.method}).",
        "",
        f"## Dask, n = {n:.0e} (generated block by block)",
        "",
        markdown_table(
            ["run", "wall time (s)", "passes", "client peak extra memory (MB)", "T"],
            [
                [
                    "fit through Dask",
                    fmt(large["time"], 4),
                    str(large["passes"]),
                    f"{large['peak'] / 1e6:.0f}",
                    f"{large['T']:.9f}",
                ],
                [
                    "one pass reading the same data only",
                    fmt(large["read"], 4),
                    "1",
                    "-",
                    "-",
                ],
            ],
        ),
        "",
        f"The logits alone would take {n * args.k * 4 / 1e9:.2f} GB. The fit "
        f"read the data {large['passes']} times (a survey of the classes and "
        f"score type, then {large['n_iter']} Newton steps from the temperature "
        "of the first block, the first of them in float32); generating the "
        "blocks costs about the second row at every pass.",
        "",
        f"## Dask against in memory, n = {nm:.0e} (same data in memory)",
        "",
        markdown_table(
            ["path", "median time (s)", "runs", "T"],
            [
                [
                    "in memory: `fit(logits, y)`",
                    fmt(memory["memory"], 4),
                    str(args.repeat),
                    f"{memory['T_memory']:.12f}",
                ],
                [
                    f"Dask: the same arrays in blocks of {args.chunk:,} rows",
                    fmt(memory["dask"], 4),
                    str(args.repeat),
                    f"{memory['T_dask']:.12f}",
                ],
            ],
        ),
        "",
        f"- ratio Dask / in memory at n = {nm:.0e}: "
        f"**{memory['dask'] / memory['memory']:.2f}** (the in-memory fit runs "
        "on one thread (`n_jobs=None`) and starts from a subsample of every 16th "
        "row; the Dask fit runs its blocks on 2 threads, starts from its first "
        "block and also makes a survey pass)",
        f"- |T difference|: {abs(memory['T_dask'] - memory['T_memory']):.1e}",
        "",
    ]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n=1e6 vs 1e5")
    parser.add_argument("--out", default=None, help="output folder")
    parser.add_argument("--n", type=float, default=1e8, help="rows through Dask")
    parser.add_argument("--n-memory", type=float, default=1e7, help="rows in memory")
    parser.add_argument("--k", type=int, default=10, help="classes")
    parser.add_argument("--chunk", type=int, default=1_000_000, help="rows per block")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs in memory")
    args = parser.parse_args(argv)
    if args.quick:
        args.n, args.n_memory, args.chunk, args.repeat = 1e6, 1e5, 100_000, 1
    t0 = time.perf_counter()
    probe = MemoryProbe()
    large, memory = run(args, probe)
    text = render(args, large, memory, time.perf_counter() - t0, probe)
    out = output_dir(args.out, args.quick)
    path = write_report(Path(out) / "large_fit.md", text)
    print(text)
    print(f"wrote {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
