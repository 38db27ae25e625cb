"""Calibration error of 1e8 predictions through Dask, generated chunk by chunk.

``python -m benchmarks.bench_large [--quick] [--out DIR] [--cluster]`` (from the
repository root) writes ``large.md``:

* **Dask, n = 1e8** (default ``--n``): float32 probabilities of ``K = 10``
  classes generated block by block (``--chunk`` rows per block, seeded by
  the block index, never all in memory), reduced by
  :func:`skcalib.metrics.expected_calibration_error` (confidence ECE, 15
  uniform bins) on Dask's threaded scheduler with two threads. Reported: wall
  time, the peak extra resident memory of this (the client) process, and
  the time of reading the same generated data with a trivial reduction
  (``proba.max(axis=1).sum()``), which isolates the generation cost.
* **Dask against in memory, n = 1e7** (``--n-memory``): the same numbers
  generated into one numpy array; the in-memory function against the Dask
  path on that array split into blocks of ``--chunk`` rows (median of
  ``--repeat`` runs each, alternating); the ratio is the overhead of the Dask
  path.
* ``--cluster``: the 1e8 case again on a ``distributed.LocalCluster`` of two
  worker processes (one thread each, loopback only): the client then holds
  only the per-block sums; the workers' peak memory is reported too.

Data: labels uniform on ``K`` classes; logits ``2 (N(0, 1) + 1.5 e_y)``;
probabilities their float32 softmax (as ``benchmarks/speed.py``).
"""

import argparse
import os
import sys
import time

import numpy as np

from benchmarks import (
    MemoryProbe,
    environment,
    fmt,
    markdown_table,
    output_dir,
    write_report,
)

SEED = 20240101
N_BINS = 15


# ----------------------------------------------------------------------- data
def labels_block(block_id, rows, k):
    """Labels of block ``block_id`` (uniform on ``k`` classes)."""
    return np.random.default_rng([SEED, block_id, 0]).integers(0, k, rows)


def logits_block(block_id, rows, k):
    """Float32 logits of block ``block_id``: ``2 (N(0, 1) + 1.5 e_y)``."""
    y = labels_block(block_id, rows, k)
    rng = np.random.default_rng([SEED, block_id, 1])
    z = rng.standard_normal((rows, k), dtype=np.float32)
    z[np.arange(rows), y] += np.float32(1.5)
    z *= np.float32(2.0)
    return z


def proba_block(block_id, rows, k):
    """Float32 probabilities of block ``block_id`` (rows sum to 1)."""
    z = logits_block(block_id, rows, k)
    z -= z.max(axis=1, keepdims=True)
    np.exp(z, out=z)
    z /= z.sum(axis=1, keepdims=True, dtype=np.float64).astype(np.float32)
    return z


def _labels(block_info=None, *, k):
    info = block_info[None]
    return labels_block(info["chunk-location"][0], info["chunk-shape"][0], k)


def _scores(block_info=None, *, k, make):
    info = block_info[None]
    return make(info["chunk-location"][0], info["chunk-shape"][0], k)


def dask_data(n, k, chunk, make=proba_block):
    """Lazy ``(y, scores)``: every block is generated when (and where) it is
    needed, from its index (``make``: :func:`proba_block` or
    :func:`logits_block`)."""
    import dask.array as da

    rows = (chunk,) * (n // chunk) + ((n % chunk,) if n % chunk else ())
    y = da.map_blocks(_labels, chunks=(rows,), dtype=np.int64, k=k)
    scores = da.map_blocks(
        _scores, chunks=(rows, (k,)), dtype=np.float32, k=k, make=make
    )
    return y, scores


def memory_data(n, k, chunk, make=proba_block):
    """The same numbers as :func:`dask_data`, in memory."""
    y = np.empty(n, dtype=np.int64)
    scores = np.empty((n, k), dtype=np.float32)
    for b, start in enumerate(range(0, n, chunk)):
        rows = min(chunk, n - start)
        y[start : start + rows] = labels_block(b, rows, k)
        scores[start : start + rows] = make(b, rows, k)
    return y, scores


# ------------------------------------------------------------------ timings
def _timed(probe, fn):
    t0 = time.perf_counter()
    value, peak = probe.call(fn)
    return value, time.perf_counter() - t0, peak


def run_large(n, k, chunk, probe):
    """ECE of ``n`` generated rows through Dask (threads), and the time of
    reading the same data."""
    import dask

    from skcalib.metrics import expected_calibration_error

    y, proba = dask_data(n, k, chunk)
    with dask.config.set(scheduler="threads", num_workers=2):
        ece, t_ece, peak = _timed(
            probe, lambda: expected_calibration_error(y, proba, n_bins=N_BINS)
        )
        _, t_read, peak_read = _timed(
            probe, lambda: dask.compute(proba.max(axis=1).sum(), y.sum())
        )
    return {
        "ece": ece,
        "time": t_ece,
        "peak": peak,
        "read_time": t_read,
        "read_peak": peak_read,
    }


def run_cluster(n, k, chunk, probe):
    """The same on a LocalCluster of two worker processes."""
    import logging
    import resource

    from distributed import Client, LocalCluster

    from skcalib.metrics import expected_calibration_error

    y, proba = dask_data(n, k, chunk)
    with (
        LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
            silence_logs=logging.ERROR,
        ) as cluster,
        Client(cluster) as client,
    ):
        # Workers import skcalib before the clock starts.
        client.run(lambda: __import__("skcalib.metrics"))
        ece, t_ece, peak = _timed(
            probe, lambda: expected_calibration_error(y, proba, n_bins=N_BINS)
        )
        workers = client.run(
            lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        )
    return {"ece": ece, "time": t_ece, "peak": peak, "workers": workers}


def run_memory(n, k, chunk, repeat, probe):
    """In-memory function against the Dask path on the same in-memory data."""
    import dask
    import dask.array as da

    from skcalib.metrics import expected_calibration_error

    y, proba = memory_data(n, k, chunk)
    yd = da.from_array(y, chunks=chunk)
    pd_ = da.from_array(proba, chunks=(chunk, k))

    def in_memory():
        return expected_calibration_error(y, proba, n_bins=N_BINS)

    def through_dask():
        return expected_calibration_error(yd, pd_, n_bins=N_BINS)

    out = {}
    with dask.config.set(scheduler="threads", num_workers=2):
        for name, fn in [("memory", in_memory), ("dask", through_dask)]:
            value, _, peak = _timed(probe, fn)  # warm-up, peak memory
            out[name] = {"ece": value, "peak": peak, "runs": []}
        for r in range(repeat):
            order = ["memory", "dask"] if r % 2 == 0 else ["dask", "memory"]
            for name in order:
                fn = in_memory if name == "memory" else through_dask
                t0 = time.perf_counter()
                fn()
                out[name]["runs"].append(time.perf_counter() - t0)
    for v in out.values():
        v["time"] = float(np.median(v["runs"]))
    out["data_bytes"] = proba.nbytes + y.nbytes
    return out


# ------------------------------------------------------------------- report
def _mb(x):
    return f"{x / 1e6:.0f}"


def render(args, large, mem, cluster, probe, elapsed):
    import dask

    data_gb = args.n * args.k * 4 / 1e9
    lines = [
        "# Calibration error of large data through Dask",
        "",
        f"`python -m benchmarks.bench_large{' --quick' if args.quick else ''}"
        f"{' --cluster' if cluster else ''}` ({elapsed:.0f} s in all).",
        "",
        *environment(),
        f"- dask {dask.__version__}; threaded scheduler, 2 threads",
        "- load average (1 min) at the start and the end: "
        f"{args.load[0]:.1f}, {os.getloadavg()[0]:.1f}",
        f"- memory: {probe.description}",
        "",
        "Metric: `expected_calibration_error(y, proba, n_bins=15)` (confidence "
        f"ECE, uniform bins); K = {args.k}, float32 probabilities, "
        f"{args.chunk:,} rows per block, labels resolved by the function (one "
        "pass over `y_true`).",
        "",
        f"## Dask, n = {args.n:.0e} (generated block by block)",
        "",
        markdown_table(
            ["run", "wall time (s)", "client peak extra memory (MB)", "ECE"],
            [
                [
                    "ECE through Dask (threads)",
                    fmt(large["time"]),
                    _mb(large["peak"]),
                    fmt(large["ece"], 8),
                ],
                [
                    "reading the same data only (`proba.max(axis=1).sum()`)",
                    fmt(large["read_time"]),
                    _mb(large["read_peak"]),
                    "-",
                ],
            ]
            + (
                [
                    [
                        "ECE through Dask (LocalCluster, 2 worker processes)",
                        fmt(cluster["time"]),
                        _mb(cluster["peak"]),
                        fmt(cluster["ece"], 8),
                    ]
                ]
                if cluster
                else []
            ),
        ),
        "",
        f"The probabilities alone would take {data_gb:.2f} GB in memory. With "
        "the threaded scheduler the client process also runs the blocks, so "
        "its peak is that of a few blocks being generated and reduced at "
        "once. The second row generates the same blocks and reduces them "
        "trivially: the difference between the two times is the cost of the "
        "ECE itself (noisy on a shared machine).",
    ]
    if cluster:
        peaks = ", ".join(_mb(v) for v in cluster["workers"].values())
        lines += [
            f"On the LocalCluster the client receives only the per-block sums; "
            f"the workers' peak resident memory (whole process) was {peaks} MB.",
        ]
    ratio = mem["dask"]["time"] / mem["memory"]["time"]
    lines += [
        "",
        f"## Dask against in memory, n = {args.n_memory:.0e} (same data in memory)",
        "",
        markdown_table(
            ["path", "median time (s)", "runs", "peak extra memory (MB)", "ECE"],
            [
                [
                    "in memory: `expected_calibration_error(y, proba)`",
                    fmt(mem["memory"]["time"]),
                    len(mem["memory"]["runs"]),
                    _mb(mem["memory"]["peak"]),
                    fmt(mem["memory"]["ece"], 8),
                ],
                [
                    f"Dask: the same arrays in blocks of {args.chunk:,} rows",
                    fmt(mem["dask"]["time"]),
                    len(mem["dask"]["runs"]),
                    _mb(mem["dask"]["peak"]),
                    fmt(mem["dask"]["ece"], 8),
                ],
            ],
        ),
        "",
        f"- ratio Dask / in memory at n = {args.n_memory:.0e}: **{ratio:.2f}**",
        f"- |ECE difference| Dask - in memory: "
        f"{abs(mem['dask']['ece'] - mem['memory']['ece']):.1e}",
        f"- n = {args.n:.0e} through Dask took "
        f"{large['time'] / mem['memory']['time']:.1f}x the in-memory time at "
        f"n = {args.n_memory:.0e} (the data is {args.n / args.n_memory:.0f}x "
        "larger and generated on the fly)",
    ]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.bench_large", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--quick", action="store_true", help="n=1e6, n-memory=1e5; temp dir"
    )
    parser.add_argument("--out", default=None, help="output folder for large.md")
    parser.add_argument("--n", type=float, default=1e8, help="rows through Dask")
    parser.add_argument(
        "--n-memory", type=float, default=1e7, help="rows of the in-memory comparison"
    )
    parser.add_argument("--k", type=int, default=10, help="classes")
    parser.add_argument("--chunk", type=int, default=1_000_000, help="rows per block")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs (n-memory)")
    parser.add_argument(
        "--cluster", action="store_true", help="also run on a LocalCluster"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.n, args.n_memory, args.chunk, args.repeat = 1e6, 1e5, 50_000, 2
    args.n, args.n_memory = int(args.n), int(args.n_memory)
    args.load = os.getloadavg()
    out = output_dir(args.out, args.quick)
    probe = MemoryProbe()
    t_start = time.perf_counter()
    print(f"in memory vs Dask, n={args.n_memory:.0e} ...", flush=True)
    mem = run_memory(args.n_memory, args.k, args.chunk, args.repeat, probe)
    print(
        f"  in memory {mem['memory']['time']:.2f} s, dask {mem['dask']['time']:.2f} s",
        flush=True,
    )
    print(f"Dask, n={args.n:.0e} ...", flush=True)
    large = run_large(args.n, args.k, args.chunk, probe)
    print(
        f"  {large['time']:.1f} s, peak {_mb(large['peak'])} MB; "
        f"reading only {large['read_time']:.1f} s",
        flush=True,
    )
    cluster = None
    if args.cluster:
        print(f"LocalCluster, n={args.n:.0e} ...", flush=True)
        cluster = run_cluster(args.n, args.k, args.chunk, probe)
        print(
            f"  {cluster['time']:.1f} s, client peak {_mb(cluster['peak'])} MB",
            flush=True,
        )
    elapsed = time.perf_counter() - t_start
    path = write_report(
        out / "large.md", render(args, large, mem, cluster, probe, elapsed)
    )
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
