"""Speed and memory of skcalib.metrics.

The target (issue 3): the confidence ECE of ``n = 1e7`` rows and ``K = 10``
classes, float32 and float64, within 1.2x of the time of
``proba.max(axis=1)`` alone, equal to a float64 reference to 1e-12, without an
``n x K`` float64 copy of float32 input (peak extra memory O(n)).

Timings are medians of ``--repeats`` runs after one warm-up. The baseline and
the metric are timed in alternation (paired), so load from other processes
hits both; the ratio printed is the median of the per-pair ratios.
``--quick`` runs in a few seconds on small arrays.

    python benchmarks/bench_metrics.py            # full (about 2-3 minutes)
    python benchmarks/bench_metrics.py --quick

torchmetrics' ``multiclass_calibration_error`` (CPU, one thread) is timed
too when torch and torchmetrics are installed; it bins left-closed
(``[lo, hi)``), so its value differs on probabilities that sit on an edge.
"""

import argparse
import math
import time
import tracemalloc

import numpy as np

from skcalib.metrics import (
    brier_score,
    calibration_error_interval,
    expected_calibration_error,
    negative_log_likelihood,
    reliability_curve,
)


def make_data(n, k, dtype, seed=0, block=1 << 18):
    """Softmax of random logits (normalised in ``dtype``) and random labels."""
    rng = np.random.default_rng(seed)
    proba = np.empty((n, k), dtype=dtype)
    for start in range(0, n, block):
        z = rng.standard_normal((min(block, n - start), k)).astype(dtype) * dtype(3)
        z -= z.max(axis=1, keepdims=True)
        np.exp(z, out=z)
        z /= z.sum(axis=1, keepdims=True)
        proba[start : start + z.shape[0]] = z
    y = rng.integers(0, k, n)
    return y, proba


def reference_ece(y, proba, n_bins=15, block=1 << 18):
    """Confidence ECE in float64 with correctly rounded sums (math.fsum).

    Arg-max and maximum by numpy, bins by ``np.searchsorted`` on the edges
    rounded to the dtype of ``proba`` (the rule of skcalib._core.binning).
    """
    interior = np.linspace(0, 1, n_bins + 1)[1:-1].astype(proba.dtype)
    conf_parts = {b: [] for b in range(n_bins)}
    correct = np.zeros(n_bins)
    for start in range(0, y.size, block):
        p = proba[start : start + block]
        conf = p.max(axis=1)
        hit = p.argmax(axis=1) == y[start : start + block]
        ids = np.searchsorted(interior, conf, side="left")
        correct += np.bincount(ids, weights=hit, minlength=n_bins)
        order = np.argsort(ids, kind="stable")
        bounds = np.searchsorted(ids[order], np.arange(n_bins + 1))
        for b in range(n_bins):
            conf_parts[b].append(
                conf[order[bounds[b] : bounds[b + 1]]].astype(np.float64)
            )
    total = math.fsum(
        abs(correct[b] - math.fsum(np.concatenate(conf_parts[b])))
        for b in range(n_bins)
    )
    return total / y.size


def paired_times(funcs, repeats):
    """Median seconds of each function, timed in alternation after a warm-up."""
    for f in funcs:
        f()
    times = [[] for _ in funcs]
    for _ in range(repeats):
        for t, f in zip(times, funcs, strict=True):
            start = time.perf_counter()
            f()
            t.append(time.perf_counter() - start)
    return [np.array(t) for t in times]


def peak_bytes(func):
    """Peak memory numpy allocates while ``func`` runs (tracemalloc)."""
    tracemalloc.start()
    try:
        func()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def torch_ece():
    """torchmetrics' multiclass ECE, or None when unavailable."""
    try:
        import torch
        from torchmetrics.functional.classification import multiclass_calibration_error
    except ImportError:
        return None
    torch.set_num_threads(1)

    def run(y, proba):
        preds, target = torch.from_numpy(proba), torch.from_numpy(y)
        return float(
            multiclass_calibration_error(
                preds, target, num_classes=proba.shape[1], n_bins=15
            )
        )

    return run


def bench_confidence(n, k, dtype, repeats, tm):
    y, proba = make_data(n, k, dtype)
    funcs = [lambda: proba.max(axis=1), lambda: expected_calibration_error(y, proba)]
    if tm is not None:
        funcs.append(lambda: tm(y, proba))
    times = paired_times(funcs, repeats)
    base, ours = times[0], times[1]
    ratio = float(np.median(ours / base))
    value = expected_calibration_error(y, proba)
    err = abs(value - reference_ece(y, proba))
    peak = peak_bytes(lambda: expected_calibration_error(y, proba))
    line = (
        f"n={n:>10,} K={k:<5} {np.dtype(dtype).name:7} max(axis=1) "
        f"{np.median(base):7.3f} s  ECE {np.median(ours):7.3f} s  ratio {ratio:5.2f}  "
        f"|ECE - fsum ref| {err:.1e}  peak extra {peak / 2**20:6.1f} MiB "
        f"(input {proba.nbytes / 2**20:.0f} MiB)"
    )
    if tm is not None:
        tmt = times[2]
        line += (
            f"  torchmetrics {np.median(tmt):7.3f} s (ours/torch "
            f"{float(np.median(ours / tmt)):4.2f})"
        )
    print(line, flush=True)
    return ratio, err


def bench_variants(n, k, repeats):
    y, proba = make_data(n, k, np.float32, seed=1)
    cases = {
        "max(axis=1) (baseline)": lambda: proba.max(axis=1),
        "confidence ECE": lambda: expected_calibration_error(y, proba),
        "top-label ECE": lambda: expected_calibration_error(y, proba, kind="top_label"),
        "classwise ECE": lambda: expected_calibration_error(y, proba, kind="classwise"),
        "adaptive ECE (quantile)": lambda: expected_calibration_error(
            y, proba, strategy="quantile"
        ),
        "debiased L2 ECE": lambda: expected_calibration_error(
            y, proba, norm="l2", debias=True
        ),
        "weighted ECE": lambda: expected_calibration_error(
            y, proba, sample_weight=np.ones(n)
        ),
        "reliability_curve": lambda: reliability_curve(y, proba),
        "brier_score": lambda: brier_score(y, proba),
        "negative_log_likelihood": lambda: negative_log_likelihood(y, proba),
    }
    times = paired_times(list(cases.values()), repeats)
    print(f"\nOther metrics, n={n:,} K={k} float32 (median s):")
    for name, t in zip(cases, times, strict=True):
        print(f"  {name:26} {np.median(t):8.4f}")
    m = min(n, 10_000)
    start = time.perf_counter()
    calibration_error_interval(y[:m], proba[:m], n_resamples=1000, random_state=0)
    print(
        f"  {'bootstrap n=' + format(m, ',') + ', 1000 res.':26} "
        f"{time.perf_counter() - start:8.4f}"
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small arrays, seconds")
    parser.add_argument("--repeats", type=int, default=None, help="timed runs (>= 5)")
    args = parser.parse_args()
    repeats = args.repeats or 5
    tm = torch_ece()
    if tm is None:
        print("torchmetrics not installed: skipping the comparison.")
    scale = 50 if args.quick else 1
    sizes = [
        (10_000_000 // scale, 10),
        (1_000_000 // scale, 100),
        (100_000 // scale, 1000),
    ]
    print(f"Confidence ECE (15 uniform bins), medians of {repeats} paired runs:")
    results = {}
    for n, k in sizes:
        for dtype in (np.float32, np.float64):
            results[(n, k, dtype)] = bench_confidence(n, k, dtype, repeats, tm)
    n0 = sizes[0][0]
    worst = max(results[(n0, 10, d)][0] for d in (np.float32, np.float64))
    exact = max(err for _, err in results.values())
    print(
        f"\nTarget at K=10: ratio <= 1.2 -> worst {worst:.2f}; "
        f"exact to 1e-12 -> worst error {exact:.1e}"
    )
    bench_variants(n0 // 10, 10, repeats)


if __name__ == "__main__":
    main()
