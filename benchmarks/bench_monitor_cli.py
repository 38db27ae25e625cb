"""``skcalib monitor`` on long predictions logs: wall time and peak memory
against the number of rows.

* Logs: ``rows`` rows of ``K = 10`` classes, written block by block (1e5
  rows at a time, ``numpy.random.default_rng([0, block])``) to a temporary
  folder: ``t`` (Unix seconds, one row per second from 2023-11-14T22:13:20
  UTC), ``label`` and ``p_0 .. p_9``, probabilities of ``softmax(z)``,
  ``z ~ N(0, 2**2 I)``, written with four decimals (``%.4f``); the labels
  are drawn from the probabilities (a calibrated model). 1e7 rows is a
  CSV of about 790 MiB.
* Run: ``skcalib monitor LOG --time-col t --window 1h --format json``
  (``--chunk-rows`` 1e5, one look every 500 rows; the output goes to
  ``/dev/null``) through ``skcalib._report.cli.main`` in a fresh
  subprocess per size.
* Memory: the kernel's high-water mark of the resident set (``VmHWM``,
  reset through ``/proc/self/clear_refs`` after the imports; Linux), minus
  the resident set after the imports: the memory the run itself adds; and
  the process's whole peak (``ru_maxrss``). With the log read in chunks and
  the monitor keeping two windows, it should not grow with the rows.

Run ``python -m benchmarks monitor-cli [--max-rows N] [--sizes LIST]
[--out DIR]`` from the repository root (default sizes 1e5 and 1e6;
``--max-rows 1e7`` adds 1e7, which takes several minutes, most of them
writing the file).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

K = 10
SIZES = (100_000, 1_000_000, 10_000_000)
BLOCK = 100_000
T0 = 1_700_000_000

RUN_SCRIPT = """
import json, os, resource, sys, time
from skcalib._report.cli import main
import skcalib._report.monitor_cli, skcalib._report.stream, skcalib._report.windows
import skcalib.monitoring, skcalib._report.run

def rss(field):
    with open("/proc/self/status") as f:
        line = next(ln for ln in f if ln.startswith(field))
    return int(line.split()[1]) * 1024

try:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # reset the peak (VmHWM) to the current RSS
    reset = True
except OSError:
    reset = False
base = rss("VmRSS")
t0 = time.perf_counter()
sys.stdout = open(os.devnull, "w")
code = main(sys.argv[1:])
seconds = time.perf_counter() - t0
sys.stdout = sys.__stdout__
peak = rss("VmHWM")
print(json.dumps({"rc": code, "seconds": seconds, "growth": peak - base,
                  "reset": reset,
                  "maxrss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))
"""


def generate(path, n_rows, seed=0):
    """Write the benchmark log (``t,label,p_0..p_9``) to ``path``."""
    header = "t,label," + ",".join(f"p_{k}" for k in range(K))
    fmt = ["%d", "%d"] + ["%.4f"] * K
    with open(path, "w") as f:
        f.write(header + "\n")
        for b, start in enumerate(range(0, n_rows, BLOCK)):
            n = min(BLOCK, n_rows - start)
            rng = np.random.default_rng([seed, b])
            z = 2.0 * rng.standard_normal((n, K))
            p = np.exp(z - z.max(axis=1, keepdims=True))
            p /= p.sum(axis=1, keepdims=True)
            u = rng.uniform(size=(n, 1))
            y = np.minimum((p.cumsum(axis=1) < u).sum(axis=1), K - 1)
            t = T0 + start + np.arange(n)
            np.savetxt(f, np.column_stack([t, y, p]), fmt=fmt, delimiter=",")


def measure(path, chunk_rows=BLOCK):
    """Seconds and memory of ``skcalib monitor`` on ``path``, in a fresh
    subprocess (the repository first on its path)."""
    args = ["monitor", str(path), "--time-col", "t", "--window", "1h"]
    args += ["--chunk-rows", str(chunk_rows), "--format", "json"]
    root = Path(__file__).resolve().parent.parent
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(root), env.get("PYTHONPATH", "")])
    t0 = time.perf_counter()
    res = subprocess.run(
        [sys.executable, "-c", RUN_SCRIPT, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=Path(path).parent,
        check=False,
    )
    wall = time.perf_counter() - t0
    if res.returncode or not res.stdout.strip():
        raise RuntimeError(f"skcalib monitor failed: {res.stderr[-500:]}")
    out = json.loads(res.stdout.strip().splitlines()[-1])
    out["wall"] = wall
    return out


def _mib(n):
    return n / 2**20


def table(results):
    """The markdown table of ``[(rows, file bytes, measurement)]``."""
    lines = [
        "| rows | file MiB | run s | wall s (with start) | peak growth MiB | "
        "peak RSS MiB |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for rows, size, m in results:
        lines.append(
            f"| {rows:.0e} | {_mib(size):.0f} | {m['seconds']:.1f} | "
            f"{m['wall']:.1f} | {_mib(m['growth']):.1f} | {_mib(m['maxrss']):.0f} |"
        )
    return "\n".join(lines)


def _sizes(text, max_rows):
    if text:
        return [int(float(s)) for s in text.split(",") if s.strip()]
    return [n for n in SIZES if n <= max_rows]


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks monitor-cli")
    parser.add_argument(
        "--max-rows",
        type=float,
        default=1e6,
        help="largest log of 1e5, 1e6, 1e7 rows (default 1e6; 1e7 writes ~790 MiB)",
    )
    parser.add_argument("--sizes", help="comma-separated row counts instead")
    parser.add_argument("--out", help="also write monitor_cli.md into this folder")
    args = parser.parse_args(argv)
    sizes = _sizes(args.sizes, args.max_rows)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for rows in sizes:
            path = Path(tmp) / f"log_{rows}.csv"
            t0 = time.perf_counter()
            generate(path, rows)
            size = path.stat().st_size
            written = time.perf_counter() - t0
            m = measure(path)
            path.unlink()
            results.append((rows, size, m))
            print(
                f"{rows:.0e} rows ({_mib(size):.0f} MiB, written in {written:.0f} s): "
                f"run {m['seconds']:.1f} s, peak growth {_mib(m['growth']):.1f} "
                f"MiB, peak RSS {_mib(m['maxrss']):.0f} MiB",
                flush=True,
            )
    text = table(results)
    first, last = results[0][2]["growth"], results[-1][2]["growth"]
    verdict = (
        f"peak growth at {sizes[-1]:.0e} rows / at {sizes[0]:.0e} rows: "
        f"{last / max(first, 1):.2f}x for {sizes[-1] / sizes[0]:.0f}x the rows"
    )
    if not results[0][2]["reset"]:
        verdict += " (VmHWM could not be reset: growth includes the imports)"
    print()
    print(text)
    print()
    print(verdict)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "monitor_cli.md").write_text(
            "# `skcalib monitor` on long logs\n\n" + text + "\n\n" + verdict + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
