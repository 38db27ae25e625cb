"""CalibrationMonitor: false alarms under continuous monitoring, power and
detection delay, and peak memory on long streams.

* Streams: ``K = 10`` classes, batches of 500 rows; the truth is
  ``softmax(z)`` with ``z ~ N(0, 2**2 I)``, the forecast ``softmax(z / T)``
  (``T = 1``: calibrated; accuracy about 0.54). Seed 0.
* Type-I: ``--streams`` (1000) calibrated streams, a look after each of 50
  batches. The monitor's e-process (alpha = 0.05, 15 bins, the betting code
  of :mod:`skcalib.monitoring._eprocess`, run on all streams at once) alarms
  when it reaches 1/alpha; the naive procedure runs
  :func:`skcalib.metrics.hosmer_lemeshow_test` (10 groups, correctness
  against confidence) on all rows so far at every look and alarms at the
  first p-value below 0.05. The rate of ever alarming by look k, for k = 1
  .. 50, is printed and drawn (``monitor_false_alarms.png`` when matplotlib
  is installed).
* Power: 500 streams whose temperature jumps from 1 to 1.6 at batch 25:
  share flagged within 5 batches of the jump and the median delay.
* Memory: :class:`~skcalib.CalibrationMonitor` (window 10000 rows,
  ``max_windows=100``) fed 1e6 and 1e7 rows in chunks of 1e5 generated on
  the fly; tracemalloc peak (numpy allocations included), after a warm-up
  that loads and compiles skcalib's numba kernels (a one-time ~30 MiB).

Run ``python -m benchmarks monitor [--quick] [--streams N] [--out DIR]``.
"""

import argparse
import time
import tracemalloc

import numpy as np
from scipy.special import softmax

from benchmarks import environment, markdown_table, output_dir, write_report

K, ROWS, LOOKS, ALPHA = 10, 500, 50, 0.05


def _batch(rng, n_streams, n_rows, temperature):
    z = 2.0 * rng.standard_normal((n_streams, n_rows, K))
    p = softmax(z, axis=-1)
    y = (p.cumsum(axis=-1) < rng.uniform(size=(n_streams, n_rows, 1))).sum(axis=-1)
    return np.minimum(y, K - 1), softmax(z / temperature, axis=-1)


def simulate(n_streams, temperatures, naive=True, seed=0):
    """Per look: alarm flags of the monitor and of the repeated HL test."""
    from skcalib._core.binning import assign_bins
    from skcalib.metrics import hosmer_lemeshow_test
    from skcalib.monitoring._eprocess import (
        BettingState,
        bet_bounds,
        log_e_value,
        step,
    )

    rng = np.random.default_rng(seed)
    edges = np.linspace(0, 1, 16)
    state, bounds = BettingState.start(n_streams, 15), bet_bounds(edges, 1)
    e_alarm = np.zeros((len(temperatures), n_streams), bool)
    hl_alarm = np.zeros_like(e_alarm)
    correct, conf_all = [], []
    for t, temperature in enumerate(temperatures):
        y, q = _batch(rng, n_streams, ROWS, temperature)
        conf = q.max(axis=-1)
        hit = q.argmax(axis=-1) == y
        cells = assign_bins(conf.ravel(), edges).reshape(conf.shape)
        step(state, cells, hit - conf, ROWS, 1 - 1 / 1000, bounds)
        e_alarm[t] = log_e_value(state.log_wealth) >= np.log(1 / ALPHA)
        if naive:
            correct.append(hit)
            conf_all.append(conf)
            a, c = np.concatenate(correct, axis=1), np.concatenate(conf_all, axis=1)
            hl_alarm[t] = [
                hosmer_lemeshow_test(a[s].astype(int), c[s]).pvalue < ALPHA
                for s in range(n_streams)
            ]
    return np.logical_or.accumulate(e_alarm), np.logical_or.accumulate(hl_alarm)


def _warm_up(chunk, n_chunks=50):
    """Load and compile skcalib's numba kernels before measuring: a process
    compiles the kernel for mid-size chunks once the numpy path has run
    enough of them (``skcalib._core.accel``; about 30 MiB of allocations
    once, whatever the stream's length)."""
    from skcalib import CalibrationMonitor
    from skcalib._core.accel import _kernels

    _kernels()
    rng = np.random.default_rng(2)
    mon = CalibrationMonitor(window=10_000, max_windows=100, labels=np.arange(K))
    for _ in range(n_chunks):
        y, q = _batch(rng, 1, chunk, 1.0)
        mon.update(y[0], q[0])
    mon.windows()


def _memory(n_rows, chunk=100_000):
    from skcalib import CalibrationMonitor

    rng = np.random.default_rng(1)
    mon = CalibrationMonitor(window=10_000, max_windows=100, labels=np.arange(K))
    tracemalloc.start()
    start = time.perf_counter()
    for _ in range(n_rows // chunk):
        y, q = _batch(rng, 1, chunk, 1.0)
        mon.update(y[0], q[0])
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 2**20, seconds, mon


def _figure(e_rate, hl_rate, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    looks = np.arange(1, e_rate.size + 1)
    fig, ax = plt.subplots(figsize=(6, 3.6))
    ax.plot(looks, hl_rate, label="Hosmer-Lemeshow test repeated at every look")
    ax.plot(looks, e_rate, label="CalibrationMonitor (e-process)")
    ax.axhline(ALPHA, color="grey", ls="--", lw=1, label="alpha = 0.05")
    ax.set_xlabel("number of looks (batches of 500 rows)")
    ax.set_ylabel("false-alarm rate (calibrated streams)")
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks monitor")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--streams", type=int, default=None)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    out = output_dir(args.out, args.quick)
    n_null = args.streams or (50 if args.quick else 1000)
    n_power = 50 if args.quick else 500
    looks = 10 if args.quick else LOOKS
    start = time.perf_counter()
    e_any, hl_any = simulate(n_null, [1.0] * looks)
    e_rate, hl_rate = e_any.mean(axis=1), hl_any.mean(axis=1)
    null_s = time.perf_counter() - start
    rows = [
        [k, f"{e_rate[k - 1]:.3f}", f"{hl_rate[k - 1]:.3f}"]
        for k in sorted({1, 2, 5, 10, 20, 30, 40, 50} & set(range(1, looks + 1)))
    ]
    change = 5 if args.quick else 25
    e_pow, _ = simulate(n_power, [1.0] * change + [1.6] * 10, naive=False, seed=1)
    first = np.where(e_pow.any(axis=0), e_pow.argmax(axis=0), -1)
    delay = np.where(first >= change, first - change + 1, 10**6)
    early = float(((first >= 0) & (first < change)).mean())
    sizes = [10**5, 10**6] if args.quick else [10**6, 10**7]
    _warm_up(100_000, 5 if args.quick else 50)
    mem = [(n, *_memory(n)) for n in sizes]
    figure = _figure(e_rate, hl_rate, out / "monitor_false_alarms.png")
    text = "\n".join(
        [
            "# CalibrationMonitor",
            "",
            *environment(),
            "",
            f"## False alarms on {n_null} calibrated streams (alpha = {ALPHA})",
            "",
            "Share of streams with an alarm by look k (the monitor's bound: "
            f"{ALPHA} at every k); {null_s:.0f} s.",
            "",
            markdown_table(["looks", "monitor", "repeated Hosmer-Lemeshow"], rows),
            "",
            f"## Power: temperature 1 -> 1.6 at batch {change}, {n_power} streams",
            "",
            f"- flagged within 5 batches: {(delay <= 5).mean():.3f}",
            f"- median delay (batches): {np.median(delay):.0f}",
            f"- alarms before the jump: {early:.3f}",
            "",
            "## Peak memory (tracemalloc), chunks of 1e5 rows",
            "",
            markdown_table(
                ["rows", "peak MiB", "seconds", "windows kept", "dropped"],
                [
                    [
                        f"{n:.0e}",
                        f"{m:.1f}",
                        f"{s:.1f}",
                        len(mon.windows()),
                        mon.n_windows_dropped_,
                    ]
                    for n, m, s, mon in mem
                ],
            ),
            "",
            f"Figure: {figure.name if figure else '(matplotlib not installed)'}",
        ]
    )
    print(text)
    write_report(out / "monitor.md", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
