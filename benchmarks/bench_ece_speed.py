"""Binned calibration error against a plain read of the array (issue 23, target 1).

``python -m benchmarks.bench_ece_speed [--quick] [--repeat N] [--only CASES]``
(from the repository root) prints one markdown table per case:

* cases ``n x K`` and dtype: ``1e7 x 10`` and ``1e6 x 100``, float64 and
  float32 (``--quick``: ``1e6 x 10`` and ``1e5 x 100``);
* per case, medians of ``--repeat`` (default 5) rounds, the functions timed
  one after the other within each round (so that the load of the shared
  machine weighs on all of them alike): ``P.sum()`` (one plain read),
  ``P.max(axis=1)``, skcalib's confidence, top-label and classwise ECE (15
  uniform bins) with the compiled kernels of the ``fast`` extra (numba) and
  without them (``SKCALIB_DISABLE_NUMBA=1``: the numpy path, the code before
  the fused kernel), and torchmetrics' ``multiclass_calibration_error``
  (confidence ECE, 15 bins, ``norm="l1"``, on CPU torch tensors that share
  the numpy memory);
* the ratios of the targets: confidence ECE / ``P.sum()`` (target <= 2 at
  K = 10), torchmetrics / confidence ECE (>= 2.5), confidence ECE /
  ``P.max(axis=1)`` (<= 1 at K = 100), classwise / confidence ECE (<= 3),
  each with and without numba; and whether the two paths agree (they are
  bit for bit the same sums).

Data: labels uniform on ``K`` classes; logits ``2 (N(0, 1) + 1.5 e_y)``; the
probabilities their float32 softmax, cast to float64 for the float64 cases.
"""

import argparse
import contextlib
import os
import platform
import time

import numpy as np

SEED = 20240101
N_BINS = 15
CASES = {
    "1e7x10": (10**7, 10),
    "1e6x100": (10**6, 100),
}
QUICK = {"1e7x10": (10**6, 10), "1e6x100": (10**5, 100)}


def make_data(n, k, dtype, seed=SEED):
    """``(y, proba)``: float32 softmax of ``2 (N(0, 1) + 1.5 e_y)``, block by
    block (no float64 copy of the logits)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    proba = np.empty((n, k), dtype=dtype)
    for start in range(0, n, 1 << 18):
        stop = min(start + (1 << 18), n)
        z = rng.standard_normal((stop - start, k), dtype=np.float32)
        z[np.arange(stop - start), y[start:stop]] += np.float32(1.5)
        z *= np.float32(2.0)
        z -= z.max(axis=1, keepdims=True)
        np.exp(z, out=z)
        z /= z.sum(axis=1, keepdims=True)
        proba[start:stop] = z
    return y, proba


_LOADED = {}


@contextlib.contextmanager
def numba_enabled(on):
    """Switch skcalib's compiled kernels on or off. The kernels are loaded
    once and kept: the switch does not reload them from numba's disk cache
    (about 15 ms per switch), so that every timed call is a warm one, as a
    user's second call is."""
    from skcalib._core import accel

    if on not in _LOADED:
        old = os.environ.get("SKCALIB_DISABLE_NUMBA")
        os.environ["SKCALIB_DISABLE_NUMBA"] = "0" if on else "1"
        accel._kernels.cache_clear()
        _LOADED[on] = accel._kernels()
        if old is None:
            del os.environ["SKCALIB_DISABLE_NUMBA"]
        else:
            os.environ["SKCALIB_DISABLE_NUMBA"] = old
        accel._kernels.cache_clear()
    saved = accel._kernels
    accel._kernels = lambda: _LOADED[on]
    try:
        yield
    finally:
        accel._kernels = saved


def functions(y, proba, with_torch):
    """name -> callable returning the value (None for the plain reads)."""
    from skcalib.metrics import classwise_calibration_error as cce
    from skcalib.metrics import expected_calibration_error as ece

    fns = {
        "P.sum()": lambda: proba.sum(),
        "P.max(axis=1)": lambda: proba.max(axis=1),
    }
    for on in (True, False):
        tag = "numba" if on else "numpy"

        def run(f, on=on, **kw):
            with numba_enabled(on):
                return f(y, proba, n_bins=N_BINS, **kw)

        fns[f"confidence ({tag})"] = lambda run=run: run(ece)
        fns[f"top_label ({tag})"] = lambda run=run: run(ece, kind="top_label")
        fns[f"classwise ({tag})"] = lambda run=run: run(cce)
    if with_torch:
        import torch
        from torchmetrics.functional.classification import (
            multiclass_calibration_error,
        )

        tp, ty = torch.from_numpy(proba), torch.from_numpy(y)
        k = proba.shape[1]
        fns["torchmetrics"] = lambda: float(
            multiclass_calibration_error(tp, ty, k, n_bins=N_BINS, norm="l1")
        )
    return fns


def measure(fns, repeat):
    """Medians of ``repeat`` rounds (each function once per round, after one
    warm-up call that also compiles the kernels) and the last values."""
    times = {name: [] for name in fns}
    values = {name: f() for name, f in fns.items()}
    for _ in range(repeat):
        for name, f in fns.items():
            t0 = time.perf_counter()
            f()
            times[name].append(time.perf_counter() - t0)
    return {name: float(np.median(t)) for name, t in times.items()}, values


def report(case, dtype, med, values):
    """Print the table of one case."""
    n, k = case
    print(f"\n### n = {n:.0e}, K = {k}, {np.dtype(dtype).name}\n")
    print("| function | median s | value |")
    print("| --- | ---: | ---: |")
    for name, t in med.items():
        v = values[name]
        shown = f"{v:.10f}" if isinstance(v, float) else ""
        print(f"| {name} | {t:.4f} | {shown} |")
    print("\n| ratio | numba | numpy | target |")
    print("| --- | ---: | ---: | --- |")
    rows = [
        ("confidence / P.sum()", "P.sum()", False, "<= 2 (K = 10)"),
        ("torchmetrics / confidence", "torchmetrics", True, ">= 2.5"),
        ("confidence / P.max(axis=1)", "P.max(axis=1)", False, "<= 1 (K = 100)"),
    ]
    for label, other, inverse, target in rows:
        if other not in med:
            continue
        cells = []
        for tag in ("numba", "numpy"):
            c = med[f"confidence ({tag})"]
            cells.append(med[other] / c if inverse else c / med[other])
        print(f"| {label} | {cells[0]:.2f} | {cells[1]:.2f} | {target} |")
    cells = [
        med[f"classwise ({t})"] / med[f"confidence ({t})"] for t in ("numba", "numpy")
    ]
    print(f"| classwise / confidence | {cells[0]:.2f} | {cells[1]:.2f} | <= 3 |")
    same = all(
        values[f"{kind} (numba)"] == values[f"{kind} (numpy)"]
        for kind in ("confidence", "top_label", "classwise")
    )
    print(f"\nnumba and numpy paths equal (bit for bit): {same}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--only", default=",".join(CASES))
    parser.add_argument("--dtypes", default="float64,float32")
    parser.add_argument("--no-torch", action="store_true")
    args = parser.parse_args(argv)
    import numba

    print(f"numpy {np.__version__}, numba {numba.__version__}, {platform.machine()}")
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()}")
    with_torch = not args.no_torch
    if with_torch:
        import torch
        import torchmetrics

        torch.set_num_threads(1)
        print(
            f"torch {torch.__version__} (1 thread), torchmetrics "
            f"{torchmetrics.__version__}"
        )
    sizes = QUICK if args.quick else CASES
    for name in args.only.split(","):
        for dtype in args.dtypes.split(","):
            y, proba = make_data(*sizes[name], np.dtype(dtype))
            med, values = measure(functions(y, proba, with_torch), args.repeat)
            report(sizes[name], dtype, med, values)
            del y, proba


if __name__ == "__main__":
    main()
