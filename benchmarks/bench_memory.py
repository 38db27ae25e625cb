"""Peak memory and time of temperature scaling and of the NLL (issue 23).

On ``n`` rows of ``K`` float32 logits (default 1e6 x 100, one copy: 400 MB)
and their softmax probabilities, each operation is run against the
whole-array form it had before issue 23 (the same formula on whole arrays:
``softmax(logits / T)``, ``fit_temperature(log(max(p, 1e-12)), y)``): the
results must be equal bit for bit. Reported per operation: the peak extra
memory of one call as multiples of one ``n x K`` copy (:mod:`tracemalloc`,
which traces numpy's allocations; the output counts as one copy), and the
median time of ``--repeat`` calls, the two forms called in turn (ratios
within this run: timings on a loaded machine are noisy). The temperature
fit on logits is also run against scikit-learn's
``CalibratedClassifierCV(method="temperature")`` on the same logits when the
installed scikit-learn has it (``--sklearn-repeat`` calls: about 30 s each
at the default size), with the ratio, both temperatures and their NLL.

Run ``python -m benchmarks.bench_memory [--n N] [--k K] [--repeat R]``.
"""

import argparse
import gc
import sys
import time
import tracemalloc
import warnings

import numpy as np

from benchmarks._peers import frozen_passthrough, nll_at_temperature
from skcalib import TemperatureCalibrator
from skcalib._core.scores import PROBA_FLOOR, softmax
from skcalib._core.solvers.temperature import fit_temperature
from skcalib.metrics import negative_log_likelihood


def peak_bytes(fn):
    """``(result, peak traced bytes)`` of one call of ``fn``."""
    gc.collect()
    tracemalloc.start()
    try:
        result = fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, peak


def median_times(fns, repeat):
    """Median wall time (seconds) of ``repeat`` calls of each of ``fns``,
    called in turn (so that a change of the machine's load hits all alike).
    """
    runs = [[] for _ in fns]
    for _ in range(repeat):
        for fn, times in zip(fns, runs, strict=True):
            gc.collect()
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
    return [float(np.median(times)) for times in runs]


def make_data(n, k, seed=0):
    """float32 logits (the true class raised by 2), labels, probabilities."""
    rng = np.random.default_rng(seed)
    logits = rng.standard_normal((n, k), dtype=np.float32)
    logits *= 3
    y = rng.integers(0, k, n)
    logits[np.arange(n), y] += 2
    return logits, y, softmax(logits)


def _same(a, b):
    if isinstance(a, TemperatureCalibrator):
        a = a.temperature_
    if isinstance(b, TemperatureCalibrator):
        b = b.temperature_
    if isinstance(a, tuple):
        a = a[0]
    if isinstance(b, tuple):
        b = b[0]
    return bool(np.array_equal(a, b))


def whole_array_predict(x, temperature, floor):
    """``predict_proba`` before issue 23: the logits (``log(max(p, floor))``
    of probabilities) held whole while ``softmax(logits / T)`` runs."""
    logits = x if floor is None else np.log(np.maximum(x, floor))
    return softmax(logits / temperature)


def cases(logits, y, proba):
    """``[(operation, now, before or None)]`` (callables)."""
    on_logits = TemperatureCalibrator().fit(logits, y)
    on_proba = TemperatureCalibrator().fit(proba, y)
    t_logits = np.float32(on_logits.temperature_)
    t_proba = np.float32(on_proba.temperature_)
    floor = np.float32(PROBA_FLOOR)
    return [
        (
            "TemperatureCalibrator.predict_proba(logits)",
            lambda: on_logits.predict_proba(logits),
            lambda: whole_array_predict(logits, t_logits, None),
        ),
        (
            "TemperatureCalibrator.predict_proba(probabilities)",
            lambda: on_proba.predict_proba(proba),
            lambda: whole_array_predict(proba, t_proba, floor),
        ),
        (
            "fit_temperature on probabilities (solver of fit)",
            lambda: fit_temperature(proba, y, probabilities=True),
            lambda: fit_temperature(np.log(np.maximum(proba, floor)), y),
        ),
        (
            "TemperatureCalibrator.fit(probabilities)",
            lambda: TemperatureCalibrator().fit(proba, y),
            None,
        ),
        (
            "TemperatureCalibrator.fit(logits)",
            lambda: TemperatureCalibrator().fit(logits, y),
            None,
        ),
        (
            "negative_log_likelihood(y, probabilities)",
            lambda: negative_log_likelihood(y, proba),
            None,
        ),
    ]


def sklearn_temperature(logits, y, repeat):
    """``(median seconds, T)`` of scikit-learn's temperature fit, or None."""
    try:
        from sklearn.calibration import CalibratedClassifierCV
    except ImportError:
        return None
    k = logits.shape[1]

    def fit():
        return CalibratedClassifierCV(frozen_passthrough(k), method="temperature").fit(
            logits, y
        )

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            start = time.perf_counter()
            state = fit()
            runs = [time.perf_counter() - start]
            for _ in range(repeat - 1):
                start = time.perf_counter()
                fit()
                runs.append(time.perf_counter() - start)
    except (ValueError, TypeError) as exc:  # no method="temperature"
        print(f"sklearn temperature skipped: {exc}")
        return None
    beta = float(state.calibrated_classifiers_[0].calibrators[0].beta_)
    return float(np.median(runs)), 1.0 / beta


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=float, default=1e6)
    parser.add_argument("--k", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--sklearn-repeat", type=int, default=1)
    args = parser.parse_args(argv)
    logits, y, proba = make_data(int(args.n), args.k)
    copy = float(logits.nbytes)
    print(
        f"n = {int(args.n):.0e}, K = {args.k}, float32: one copy = {copy / 1e6:.0f} MB"
    )
    print(
        f"{'operation':52s} {'peak now':>9s} {'before':>7s} "
        f"{'time now':>9s} {'before':>8s} {'ratio':>6s} same"
    )
    times = {}
    for name, now, before in cases(logits, y, proba):
        result, peak = peak_bytes(now)
        if before is None:
            t_now = times[name] = median_times([now], args.repeat)[0]
            print(f"{name:52s} {peak / copy:8.2f}x {'':>7s} {t_now:8.3f}s")
            continue
        ref, peak_before = peak_bytes(before)
        t_now, t_before = median_times([now, before], args.repeat)
        print(
            f"{name:52s} {peak / copy:8.2f}x {peak_before / copy:6.2f}x "
            f"{t_now:8.3f}s {t_before:7.3f}s {t_now / t_before:6.2f} "
            f"{_same(result, ref)}"
        )
    t_ours = times["TemperatureCalibrator.fit(logits)"]
    t = TemperatureCalibrator().fit(logits, y).temperature_
    sk = sklearn_temperature(logits, y, args.sklearn_repeat)
    if sk is not None:
        print(
            f"temperature fit on logits: skcalib {t_ours:.3f}s (T {t:.10f}, NLL "
            f"{nll_at_temperature(logits, y, t):.12f}), sklearn "
            f"CalibratedClassifierCV(method='temperature') {sk[0]:.3f}s (T "
            f"{sk[1]:.10f}, NLL {nll_at_temperature(logits, y, sk[1]):.12f}): "
            f"{sk[0] / t_ours:.1f}x faster"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
