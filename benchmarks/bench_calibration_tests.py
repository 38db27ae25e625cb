"""Speed of the calibration tests on 1e6 binary predictions, against MAPIE.

* Data: ``p = sigmoid(z)``, ``z ~ N(0, 1.5**2)``, labels drawn from ``p``
  (calibrated; ``--n`` rows, default 1e6, seed 0), float64.
* skcalib: :func:`~skcalib.metrics.cumulative_calibration_test` (KS and
  Kuiper), :func:`~skcalib.metrics.spiegelhalter_test`,
  :func:`~skcalib.metrics.hosmer_lemeshow_test` and
  :func:`~skcalib.metrics.ks_calibration_error`, with input validation.
* MAPIE 1.6: ``kolmogorov_smirnov_p_value``, ``kuiper_p_value``,
  ``spiegelhalter_p_value`` on the same arrays (their statistic is computed
  once more inside each p-value function, as a user calls them).
* Timing: :func:`benchmarks.measure` (a warm-up, then the median of
  ``--repeat`` alternating runs), in one process, so the ratios compare
  like with like on a loaded machine. The p-values are printed beside the
  times (MAPIE's Spiegelhalter p-value is one-sided; its KS/Kuiper jitter
  the scores, a relative 1e-8).

Run ``python -m benchmarks.bench_calibration_tests [--n N] [--repeat R]``
from the repository root.
"""

import argparse

import numpy as np

from benchmarks import environment, fmt, markdown_table, measure


def _data(n, seed=0):
    rng = np.random.default_rng(seed)
    z = rng.normal(scale=1.5, size=n)
    p = 1.0 / (1.0 + np.exp(-z))
    y = (rng.uniform(size=n) < p).astype(np.int64)
    return y, p


def _functions(y, p):
    from skcalib.metrics import (
        cumulative_calibration_test,
        hosmer_lemeshow_test,
        ks_calibration_error,
        spiegelhalter_test,
    )

    ours = {
        "ks": lambda: cumulative_calibration_test(y, p, statistic="ks").pvalue,
        "kuiper": lambda: cumulative_calibration_test(y, p, statistic="kuiper").pvalue,
        "spiegelhalter": lambda: spiegelhalter_test(y, p).pvalue,
        "hosmer_lemeshow": lambda: hosmer_lemeshow_test(y, p).pvalue,
        "ks_calibration_error": lambda: ks_calibration_error(y, p),
    }
    peers = {}
    try:
        import mapie.metrics.calibration as mc
    except ImportError:  # pragma: no cover - MAPIE not installed
        mc = None
    if mc is not None:
        peers = {
            "ks": lambda: mc.kolmogorov_smirnov_p_value(y, p),
            "kuiper": lambda: mc.kuiper_p_value(y, p),
            "spiegelhalter": lambda: mc.spiegelhalter_p_value(y, p),
        }
    return ours, peers


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    y, p = _data(args.n)
    ours, peers = _functions(y, p)
    fns = {f"skcalib {k}": f for k, f in ours.items()}
    fns.update({f"mapie {k}": f for k, f in peers.items()})
    result = measure(fns, args.repeat, budget=120)
    rows = []
    for name in ours:
        m = result[f"skcalib {name}"]
        peer = result.get(f"mapie {name}")
        ratio = (
            fmt(peer.median / m.median, 3)
            if peer is not None and peer.ok and m.ok
            else "-"
        )
        rows.append(
            [
                name,
                fmt(m.median, 3) if m.ok else m.error,
                fmt(m.result, 6) if m.ok else "-",
                fmt(peer.median, 3) if peer is not None and peer.ok else "-",
                fmt(peer.result, 6) if peer is not None and peer.ok else "-",
                ratio,
            ]
        )
    print("\n".join(environment()))
    print(f"\nn = {args.n}, median of {args.repeat} runs (seconds)\n")
    headers = ["test", "skcalib s", "skcalib value", "MAPIE s", "MAPIE value"]
    print(markdown_table([*headers, "MAPIE / skcalib"], rows))


if __name__ == "__main__":
    main()
