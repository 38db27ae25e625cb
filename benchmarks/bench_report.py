"""``skcalib report`` on a real-sized CSV: reading time, whole run, peak memory.

* Data: ``--rows`` rows (default 1e6) of ``--classes`` classes (default 10),
  generated with ``numpy.random.default_rng(0)``: over-confident softmax
  probabilities (logits times 2) written with four decimals
  (``%.4f``, as ``pandas.to_csv(float_format="%.4f")`` writes them), a
  ``label`` column first, one ``p_<k>`` column per class. Written once to a
  temporary folder (not timed); the subprocesses run there, so that the
  repository on ``sys.path`` does not shadow ``--before``.
* Reading: the CSV reader of the report (``skcalib._report.io.read_csv``; under
  ``--before``, its older homes ``skcalib._report_io`` or ``skcalib._report``),
  in a fresh subprocess.
* Whole run: ``skcalib report FILE --methods temperature --cv 2 --quiet
  --format json`` through ``skcalib._report.cli.main`` in a fresh subprocess, timed
  after the imports (and, in brackets, with the interpreter start).
* Memory: the growth of the resident set size during the read (its peak,
  reset through ``/proc/self/clear_refs`` after the imports, minus the
  size after the imports; Linux), and the same growth over the whole run,
  against the numeric data size (``rows * (classes + 1) * 8`` bytes:
  float64 scores and int64 labels).
* Before/after: ``--before DIR`` runs the same measurements with ``DIR`` (a
  copy of an older ``skcalib`` package's parent folder, e.g. made with
  ``git archive HEAD~1 skcalib | tar -x -C DIR``) first on ``PYTHONPATH`` and
  prints the ratios.

Run ``python -m benchmarks report [--rows N] [--classes K] [--before DIR]``
from the repository root, best at low priority (``nice -n 19``).
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

READ_SCRIPT = """
import json, resource, sys, time
try:  # the report package (skcalib/_report/)
    from skcalib._report.io import read_csv
except ImportError:  # an older tree: skcalib/_report_io.py or skcalib/_report.py
    try:
        from skcalib._report_io import read_csv
    except ImportError:
        from skcalib._report import read_csv
import numpy as np

def rss(field):
    with open("/proc/self/status") as f:
        line = next(ln for ln in f if ln.startswith(field))
    return int(line.split()[1]) * 1024

with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # reset the peak (VmHWM) to the current RSS
base = rss("VmRSS")
t0 = time.perf_counter()
res = read_csv(sys.argv[1])
seconds = time.perf_counter() - t0
peak = rss("VmHWM")
labels, scores = (res.labels, res.scores) if new else res[:2]
print(json.dumps({"seconds": seconds, "read_peak": peak - base, "rss_peak": peak,
                  "shape": list(scores.shape), "n_labels": int(labels.shape[0])}))
"""


def generate(path, n_rows, n_classes, seed=0):
    """Write the benchmark CSV (label, p_0..p_{K-1}) to ``path``."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n_rows, n_classes)) * 1.5
    true = np.exp(logits - logits.max(axis=1, keepdims=True))
    true /= true.sum(axis=1, keepdims=True)
    cum = true.cumsum(axis=1)
    labels = (rng.uniform(size=(n_rows, 1)) > cum).sum(axis=1)
    labels = np.minimum(labels, n_classes - 1)
    over = np.exp(2 * (logits - logits.max(axis=1, keepdims=True)))
    over /= over.sum(axis=1, keepdims=True)
    header = "label," + ",".join(f"p_{k}" for k in range(n_classes))
    data = np.column_stack([labels, over])
    fmt = ["%d"] + ["%.4f"] * n_classes
    np.savetxt(path, data, fmt=fmt, delimiter=",", header=header, comments="")


def _env(pythonpath):
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(
            [str(pythonpath), env.get("PYTHONPATH", "")]
        )
    return env


def measure_read(path, pythonpath=None):
    """Seconds and memory peaks of reading ``path`` in a fresh subprocess."""
    res = subprocess.run(
        [sys.executable, "-c", READ_SCRIPT, str(path)],
        capture_output=True,
        text=True,
        env=_env(pythonpath),
        cwd=Path(path).parent,
        check=False,
    )
    if res.returncode:
        return {"error": res.stderr.strip().splitlines()[-1]}
    return json.loads(res.stdout.strip().splitlines()[-1])


RUN_SCRIPT = """
import json, sys, time
import numpy, scipy, sklearn, skcalib, skcalib.metrics
try:  # the report package (skcalib/_report/)
    from skcalib._report.cli import main
    from skcalib._report.run import available_methods
except ImportError:  # an older tree: skcalib/_cli.py and skcalib/_report.py
    from skcalib._cli import main
    from skcalib._report import available_methods
available_methods()

def rss(field):
    with open("/proc/self/status") as f:
        line = next(ln for ln in f if ln.startswith(field))
    return int(line.split()[1]) * 1024

with open("/proc/self/clear_refs", "w") as f:
    f.write("5")
base = rss("VmRSS")
t0 = time.perf_counter()
sys.stdout = open("/dev/null", "w")
code = main(sys.argv[1:])
seconds = time.perf_counter() - t0
sys.stdout = sys.__stdout__
print(json.dumps({"seconds": seconds, "run_peak": rss("VmHWM") - base,
                  "rss_peak": rss("VmHWM"), "rc": code, "err": ""}))
"""


def measure_run(path, pythonpath=None, methods="temperature", cv=2):
    """Seconds (imports excluded) and memory growth of the whole report
    command, run by its ``main`` in a fresh subprocess."""
    args = ["report", str(path), "--methods", methods, "--cv", str(cv)]
    args += ["--quiet", "--format", "json"]
    t0 = time.perf_counter()
    res = subprocess.run(
        [sys.executable, "-c", RUN_SCRIPT, *args],
        capture_output=True,
        text=True,
        env=_env(pythonpath),
        cwd=Path(path).parent,
        check=False,
    )
    wall = time.perf_counter() - t0
    if res.returncode or not res.stdout.strip():
        return {
            "seconds": wall,
            "run_peak": 0,
            "rss_peak": 0,
            "rc": res.returncode,
            "err": res.stderr[-300:],
            "wall": wall,
        }
    out = json.loads(res.stdout.strip().splitlines()[-1])
    out["wall"] = wall
    return out


def _mb(n):
    return f"{n / 1e6:.0f} MB"


def _print(name, read, run, numeric):
    if "error" in read:
        print(f"{name}: read failed: {read['error']}")
    else:
        print(
            f"{name}: read {read['seconds']:.2f} s, memory of the read "
            f"{_mb(read['read_peak'])} ({read['read_peak'] / numeric:.2f}x data; "
            f"RSS peak {_mb(read['rss_peak'])} with the interpreter)"
        )
    if run is not None:
        status = "" if run["rc"] == 0 else f" (exit {run['rc']}: {run['err']!r})"
        print(
            f"{name}: whole run {run['seconds']:.2f} s ({run['wall']:.2f} s with "
            f"the interpreter and imports), memory of the run "
            f"{_mb(run['run_peak'])} ({run['run_peak'] / numeric:.2f}x data; RSS "
            f"peak {_mb(run['rss_peak'])} with the interpreter){status}"
        )


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks report")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--before", help="folder holding an older skcalib package")
    parser.add_argument("--no-run", action="store_true", help="time the read only")
    parser.add_argument("--quick", action="store_true", help="1e5 rows")
    args = parser.parse_args(argv)
    n_rows = 100_000 if args.quick else args.rows
    numeric = n_rows * (args.classes + 1) * 8
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "preds.csv"
        t0 = time.perf_counter()
        generate(path, n_rows, args.classes)
        print(
            f"{path.name}: {n_rows} rows, {args.classes} classes, "
            f"{path.stat().st_size / 1e6:.0f} MB on disk, numeric data "
            f"{_mb(numeric)} (generated in {time.perf_counter() - t0:.1f} s)"
        )
        results = {}
        for name, pp in [("before", args.before), ("after", None)]:
            if name == "before" and not args.before:
                continue
            read = measure_read(path, pp)
            run = None if args.no_run else measure_run(path, pp)
            results[name] = (read, run)
            _print(name, read, run, numeric)
        if "before" in results and "error" not in results["before"][0]:
            (rb, ub), (ra, ua) = results["before"], results["after"]
            line = f"ratio before/after: read {rb['seconds'] / ra['seconds']:.1f}x"
            if ub is not None:
                line += f", whole run {ub['seconds'] / ua['seconds']:.1f}x"
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
