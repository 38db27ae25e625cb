"""Speed of the smooth ECE on 1e6 binary predictions, against relplot.

* Data: ``p = sigmoid(z)``, ``z ~ N(0, 1.5**2)``, labels drawn from
  ``sigmoid(1.3 z)`` (a slightly under-confident model; ``--n`` rows,
  default 1e6, seed 0), float64.
* skcalib: :func:`~skcalib.metrics.smooth_calibration_error` with input
  validation and the automatic bandwidth: ``kind="classwise"`` (for binary
  input the smooth ECE of ``p`` against ``y``, what ``relplot.smECE(p, y)``
  computes) with ``boundary="relplot"`` (relplot's discretisation: the same
  number) and with the default ``boundary="reflect"``; and the default
  ``kind="confidence"`` (``max(p, 1 - p)`` against correctness).
* relplot 0.1: ``relplot.smECE(p, y)`` on the same arrays.
* Timing: :func:`benchmarks.measure` (a warm-up, then the median of
  ``--repeat`` alternating runs), in one process, so the ratios compare
  like with like on a loaded machine; the values are printed beside the
  times (the first two rows agree with relplot to rounding).

Run ``python -m benchmarks.bench_smooth_ece [--n N] [--repeat R]`` from the
repository root.
"""

import argparse

import numpy as np

from benchmarks import environment, fmt, markdown_table, measure


def _data(n, seed=0):
    rng = np.random.default_rng(seed)
    z = rng.normal(scale=1.5, size=n)
    p = 1.0 / (1.0 + np.exp(-z))
    y = (rng.uniform(size=n) < 1.0 / (1.0 + np.exp(-1.3 * z))).astype(np.int64)
    return y, p


def _functions(y, p):
    from skcalib.metrics import smooth_calibration_error as smece

    fns = {
        "skcalib classwise, relplot grid": lambda: smece(
            y, p, kind="classwise", boundary="relplot"
        ),
        "skcalib classwise, reflect": lambda: smece(y, p, kind="classwise"),
        "skcalib confidence, reflect": lambda: smece(y, p),
    }
    try:
        import relplot
    except ImportError:  # pragma: no cover - relplot not installed
        return fns
    yf = y.astype(np.float64)
    fns["relplot smECE"] = lambda: relplot.smECE(p, yf)
    return fns


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    y, p = _data(args.n)
    fns = _functions(y, p)
    result = measure(fns, args.repeat, budget=120)
    peer = result.get("relplot smECE")
    rows = []
    for name, m in result.items():
        ratio = (
            fmt(peer.median / m.median, 3)
            if peer is not None and peer.ok and m.ok
            else "-"
        )
        rows.append(
            [
                name,
                fmt(m.median, 3) if m.ok else m.error,
                fmt(m.result, 8) if m.ok else "-",
                ratio,
            ]
        )
    print("\n".join(environment()))
    print(f"\nn = {args.n}, median of {args.repeat} runs (seconds)\n")
    print(markdown_table(["function", "seconds", "value", "relplot / this"], rows))


if __name__ == "__main__":
    main()
