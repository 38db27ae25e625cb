"""Speed and quality benchmarks of skcalib against its peers.

Run from the repository root::

    python -m benchmarks speed   [--quick] [--out DIR] [--peers LIST]
    python -m benchmarks quality [--quick] [--out DIR] [--peers LIST]

``speed`` times every calibrator and metric of skcalib against each peer
library that has the same thing (:mod:`benchmarks.speed`); ``quality`` fits
every calibrator, skcalib's and the peers', on the real predictions in
``shared/data`` and scores them on held-out rows (:mod:`benchmarks.quality`).
Both write a markdown report (``speed.md``, ``quality.md``). Peers are
optional: a missing one is skipped with a one-line note (see
:mod:`benchmarks._peers` and ``benchmarks/README.md``).

This module holds the shared harness: timing, peak-memory probe, the
environment header and markdown tables.
"""

import ctypes
import ctypes.util
import gc
import os
import platform
import sys
import tempfile
import time
import tracemalloc
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = [
    "Measurement",
    "MemoryProbe",
    "environment",
    "fmt",
    "markdown_table",
    "measure",
    "output_dir",
    "write_report",
]

#: Committed full results live here; quick runs never write here by default.
RESULTS_DIR = Path(__file__).resolve().parent / "results"


# --------------------------------------------------------------------- memory
class MemoryProbe:
    """Peak extra resident memory of one call, in bytes.

    On Linux the kernel's high-water mark of the resident set (``VmHWM`` in
    ``/proc/self/status``) is reset before the call by writing ``5`` to
    ``/proc/self/clear_refs``, and read after it: the peak extra memory is
    ``VmHWM - VmRSS(before)``. This sees every allocator (numpy, torch's
    CPU allocator, C extensions), which :mod:`tracemalloc` does not (torch's
    allocations are invisible to it). Freed heap memory that the C library
    keeps for reuse would hide part of a peak, so ``malloc_trim(0)`` is
    called first. Where ``clear_refs`` cannot be written (not Linux, no
    permission) it falls back to :mod:`tracemalloc`, which sees numpy and
    Python allocations only; :attr:`method` says which one was used.
    """

    def __init__(self):
        self._trim = None
        libc_name = ctypes.util.find_library("c")
        if libc_name:
            try:
                libc = ctypes.CDLL(libc_name)
                self._trim = libc.malloc_trim
            except (OSError, AttributeError):
                self._trim = None
        self.method = "tracemalloc"
        try:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
            self._status()
            self.method = "rss"
        except OSError:
            pass

    @staticmethod
    def _status():
        out = {}
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(("VmHWM", "VmRSS")):
                    key, value = line.split(":")
                    out[key] = int(value.split()[0]) * 1024
        return out["VmHWM"], out["VmRSS"]

    def call(self, fn):
        """Run ``fn()``; return ``(result, peak extra bytes)``."""
        gc.collect()
        if self._trim is not None:
            self._trim(0)
        if self.method == "rss":
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
            _, rss0 = self._status()
            result = fn()
            hwm, _ = self._status()
            return result, max(0, hwm - rss0)
        tracemalloc.start()
        try:
            result = fn()
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        return result, peak

    @property
    def description(self):
        if self.method == "rss":
            return (
                "peak extra resident memory of the warm-up call (Linux VmHWM reset "
                "through /proc/self/clear_refs, after malloc_trim; sees numpy, torch "
                "and every C allocator)"
            )
        return (
            "peak traced memory of the warm-up call (tracemalloc: numpy and Python "
            "allocations only, torch's are not seen)"
        )


# --------------------------------------------------------------------- timing
@dataclass
class Measurement:
    """Timing of one contender in one case."""

    median: float = float("nan")
    runs: list = field(default_factory=list)
    warmup: float = float("nan")
    peak_bytes: float = float("nan")
    result: object = None
    error: str = ""

    @property
    def ok(self):
        return not self.error


def measure(fns, repeat, *, probe=None, max_warmup=None, budget=None):
    """Time several functions on the same data in this process.

    Each function runs once as a warm-up (its peak memory measured with
    ``probe`` and its return value kept for the agreement check), then the
    functions run ``repeat`` times each, alternating and in a rotating
    order, and the median of those runs is reported. A function that raises
    is reported with its error and not timed again. A function whose warm-up
    took more than ``max_warmup`` seconds is not run again: its warm-up time
    is its only run (reported as ``runs=1``). When ``budget`` (seconds) is
    given and ``repeat`` rounds would take longer than it (judged from the
    warm-ups), fewer rounds are run, but never fewer than 3.

    Parameters
    ----------
    fns : dict of str to callable
    repeat : int
    probe : MemoryProbe or None
    max_warmup : float or None
    budget : float or None

    Returns
    -------
    dict of str to Measurement
    """
    out = {name: Measurement() for name in fns}
    with warnings.catch_warnings():
        # Peers warn a lot (and betacal sets a global "ignore" filter on each
        # fit): catch_warnings restores the filters afterwards.
        warnings.simplefilter("ignore")
        for name, fn in fns.items():
            m = out[name]
            try:
                t0 = time.perf_counter()
                if probe is None:
                    m.result = fn()
                else:
                    m.result, m.peak_bytes = probe.call(fn)
                m.warmup = time.perf_counter() - t0
            except Exception as exc:  # a peer's failure is a result, not a crash
                m.error = f"{type(exc).__name__}: {_first_line(exc)}"
        timed = [
            name
            for name in fns
            if out[name].ok and (max_warmup is None or out[name].warmup <= max_warmup)
        ]
        if budget is not None and timed:
            per_round = sum(out[name].warmup for name in timed)
            if per_round * repeat > budget:
                repeat = max(min(3, repeat), int(budget // max(per_round, 1e-9)))
        for r in range(repeat):
            order = timed[r % len(timed) :] + timed[: r % len(timed)] if timed else []
            for name in order:
                t0 = time.perf_counter()
                fns[name]()
                out[name].runs.append(time.perf_counter() - t0)
        for m in out.values():
            if not m.ok:
                continue
            if not m.runs:
                m.runs = [m.warmup]
            m.median = float(np.median(m.runs))
    return out


def _first_line(exc):
    text = str(exc).strip().splitlines()
    line = text[0] if text else ""
    return line[:160]


# ---------------------------------------------------------------- environment
def _version(dist):
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def environment(peer_status=None):
    """Lines describing the machine, the date and the library versions."""
    import scipy
    import sklearn

    import skcalib

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        n_cpu = len(os.sched_getaffinity(0))
    except AttributeError:
        n_cpu = os.cpu_count()
    lines = [
        f"- date: {time.strftime('%Y-%m-%d %H:%M %Z')}",
        f"- machine: {platform.platform()}, {platform.machine()}, {cpu}, "
        f"{n_cpu} CPUs usable (os.cpu_count()={os.cpu_count()}), shared with "
        "other work: timings are noisy, compare ratios measured in the same run",
        f"- python {platform.python_version()} ({sys.implementation.name}); "
        f"skcalib {skcalib.__version__}, numpy {np.__version__}, scipy "
        f"{scipy.__version__}, scikit-learn {sklearn.__version__}",
    ]
    if peer_status:
        lines.append(
            "- peers: "
            + "; ".join(
                f"{name} {st.version}" if st.ok else f"{name}: skipped ({st.note})"
                for name, st in peer_status.items()
            )
        )
    blas = _blas_info()
    if blas:
        lines.append(f"- BLAS: {blas}")
    return lines


def _blas_info():
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return ""
    parts = []
    for info in threadpool_info():
        parts.append(
            f"{info.get('internal_api')} {info.get('version')} "
            f"({info.get('architecture')}, {info.get('num_threads')} threads)"
        )
    return "; ".join(parts)


# ------------------------------------------------------------------- markdown
def fmt(x, digits=4):
    """Compact number formatting for tables (``-`` for missing values)."""
    if x is None:
        return "-"
    if isinstance(x, str):
        return x
    x = float(x)
    if not np.isfinite(x):
        return "-" if np.isnan(x) else ("inf" if x > 0 else "-inf")
    if x == 0:
        return "0"
    if abs(x) >= 1e5 or abs(x) < 10 ** (-digits):
        return f"{x:.{max(1, digits - 2)}e}"
    return f"{x:.{digits}g}"


def markdown_table(headers, rows, align=None):
    """A GitHub markdown table; ``align`` is a string of ``l``/``r`` per column."""
    align = align or "l" + "r" * (len(headers) - 1)
    sep = ["---:" if a == "r" else ":---" for a in align]
    cell = [[str(c).replace("|", "\\|").replace("\n", " ") for c in r] for r in rows]
    lines = ["| " + " | ".join(headers) + " |", "| " + " | ".join(sep) + " |"]
    lines += ["| " + " | ".join(r) + " |" for r in cell]
    return "\n".join(lines)


def output_dir(out, quick):
    """Where a run writes: ``--out``, else a temporary folder (quick) or the
    committed ``benchmarks/results`` (full run)."""
    if out is not None:
        path = Path(out)
    elif quick:
        path = Path(tempfile.mkdtemp(prefix="skcalib-bench-"))
    else:
        path = RESULTS_DIR
    path.mkdir(parents=True, exist_ok=True)
    return path


def write_report(path, text):
    path = Path(path)
    path.write_text(text.rstrip() + "\n", encoding="utf-8")
    return path
