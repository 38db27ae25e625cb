"""Time kernel_calibration_error against n (issue 31): SKCE_uq (the
default) against SKCE_ul, Euclidean and total variation kernels,
K = 10 classes, calibrated Dirichlet(1) predictions. Prints the best of
``--repeats`` runs per cell (one run at the largest n), in wall seconds and
in CPU seconds of the process (all its threads): on a shared machine the
wall time grows with the load, the CPU time much less.

    python -m benchmarks.bench_kernel_cost [--sizes 1000 10000 30000]
"""

import argparse
import os
import platform
import time

import numpy as np

from skcalib.metrics import kernel_calibration_error


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 30000])
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    k = args.classes
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs")
    rng = np.random.default_rng(0)
    cells = [
        ("quadratic", "euclidean"),
        ("quadratic", "tv"),
        ("linear", "euclidean"),
        ("linear", "tv"),
    ]
    for n in args.sizes:
        p = rng.dirichlet(np.ones(k), size=n)
        y = np.minimum((rng.random((n, 1)) > p.cumsum(axis=1)).sum(axis=1), k - 1)
        repeats = args.repeats if n < max(args.sizes) else 1
        for estimator, kernel in cells:
            wall = cpu = np.inf
            for _ in range(repeats):
                start, start_cpu = time.perf_counter(), time.process_time()
                kernel_calibration_error(
                    y, p, estimator=estimator, kernel=kernel, labels=np.arange(k)
                )
                wall = min(wall, time.perf_counter() - start)
                cpu = min(cpu, time.process_time() - start_cpu)
            print(
                f"n={n:>7} {estimator:>9} {kernel:>9} wall {wall:9.3f} s  "
                f"CPU {cpu:9.3f} s  (load {os.getloadavg()[0]:.1f})",
                flush=True,
            )


if __name__ == "__main__":
    main()
