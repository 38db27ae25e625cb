"""Speed of the seed calibrators against scikit-learn on identical data.

Run: ``python benchmarks/bench_calibrators.py [--quick]``. Every pair is timed
in this process on the same arrays, alternating runs, median of ``--repeat``
runs after one warm-up. Prints times, the ratio to the peer and whether the
target set by the foundation issue is met.
"""

import argparse
import platform
import time
import warnings

import numpy as np
import scipy
import sklearn
from scipy.special import log_softmax
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.calibration import CalibratedClassifierCV
from sklearn.frozen import FrozenEstimator
from sklearn.isotonic import IsotonicRegression

from skcalib import (
    HistogramBinningCalibrator,
    IsotonicCalibrator,
    PlattCalibrator,
    TemperatureCalibrator,
)
from skcalib._core import accel as _accel


class ScoreClassifier(ClassifierMixin, BaseEstimator):
    """Passes its input through as decision values (so sklearn calibrates the
    same scores as we do)."""

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        return self

    def decision_function(self, X):
        return X[:, 0] if X.shape[1] == 1 else X

    def predict(self, X):
        return self.classes_[np.argmax(X, axis=1)]


def median_times(fns, repeat):
    """Alternate the functions, one warm-up each, return median seconds."""
    for fn in fns:
        fn()
    times = [[] for _ in fns]
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            t0 = time.perf_counter()
            fn()
            times[i].append(time.perf_counter() - t0)
    return [float(np.median(t)) for t in times]


def nll(logits, y, T):
    return float(-log_softmax(logits / T, axis=1)[np.arange(len(y)), y].mean())


def bench_temperature(n, k, repeat, rng):
    y = rng.integers(0, k, n)
    logits = 2.0 * (rng.normal(size=(n, k)) + 1.5 * np.eye(k)[y])
    frozen = FrozenEstimator(
        ScoreClassifier().fit(logits[: k * 2], np.arange(k * 2) % k)
    )
    out = {}

    def ours():
        out["ours"] = TemperatureCalibrator().fit(logits, y)

    def theirs():
        out["sk"] = CalibratedClassifierCV(frozen, method="temperature").fit(logits, y)

    t_ours, t_sk = median_times([ours, theirs], repeat)
    T_ours = out["ours"].temperature_
    T_sk = 1.0 / float(out["sk"].calibrated_classifiers_[0].calibrators[0].beta_)
    return (
        f"temperature fit n={n:.0e} K={k}",
        t_ours,
        t_sk,
        "sklearn CalibratedClassifierCV(temperature)",
        f"T {T_ours:.6f} vs {T_sk:.6f}; NLL diff "
        f"{nll(logits, y, T_ours) - nll(logits, y, T_sk):+.2e}",
        ("speed-up >= 8x", t_sk / t_ours >= 8),
    )


def bench_platt(n, repeat, rng):
    y = rng.integers(0, 2, n)
    s = 3.0 * (2 * y - 1) + rng.normal(scale=3.0, size=n)
    X = s[:, None]
    frozen = FrozenEstimator(ScoreClassifier().fit(X[:4], [0, 1, 0, 1]))
    out = {}

    def ours():
        out["ours"] = PlattCalibrator().fit(s, y)

    def theirs():
        out["sk"] = CalibratedClassifierCV(frozen, method="sigmoid").fit(X, y)

    t_ours, t_sk = median_times([ours, theirs], repeat)
    a_sk = -out["sk"].calibrated_classifiers_[0].calibrators[0].a_
    return (
        f"Platt fit n={n:.0e}",
        t_ours,
        t_sk,
        "sklearn CalibratedClassifierCV(sigmoid)",
        f"slope {out['ours'].coef_[0]:.6f} vs {a_sk:.6f}",
        ("faster than sklearn", t_ours < t_sk),
    )


def bench_isotonic(n, repeat, rng):
    y = rng.integers(0, 2, n)
    s = 3.0 * (2 * y - 1) + rng.normal(scale=3.0, size=n)

    def ours():
        IsotonicCalibrator(score_type="logit").fit(s, y).predict_proba(s)

    def theirs():
        IsotonicRegression(out_of_bounds="clip").fit(s, y).predict(s)

    t_ours, t_sk = median_times([ours, theirs], repeat)
    return (
        f"isotonic fit+predict n={n:.0e}",
        t_ours,
        t_sk,
        "sklearn IsotonicRegression alone",
        "same PAVA solution (tests check equality)",
        ("no slower than IsotonicRegression", t_ours <= t_sk * 1.0),
    )


def bench_binning(n, repeat, rng):
    y = rng.integers(0, 2, n)
    p = rng.beta(2, 2, n)

    out = {}

    def ours():
        out["ours"] = (
            HistogramBinningCalibrator(n_bins=15, strategy="uniform")
            .fit(p, y)
            .predict_proba(p)
        )

    def ours_numpy():
        # The same calibrator without the compiled kernels of the `fast` extra.
        kernels_for = _accel.kernels_for
        _accel.kernels_for = lambda size: None
        try:
            cal = HistogramBinningCalibrator(n_bins=15, strategy="uniform").fit(p, y)
            out["numpy"] = cal.predict_proba(p)
        finally:
            _accel.kernels_for = kernels_for

    def plain():
        # What a hand-written version does: searchsorted, bincount, lookup.
        interior = np.linspace(0.0, 1.0, 16)[1:-1]
        ids = np.searchsorted(interior, p)
        counts = np.bincount(ids, minlength=15)
        pos = np.bincount(ids, weights=y, minlength=15)
        table = np.where(counts > 0, pos / np.maximum(counts, 1), 0.5)
        q = table[np.searchsorted(interior, p)]
        out["plain"] = np.column_stack((1.0 - q, q))

    t_ours, t_numpy, t_plain = median_times([ours, ours_numpy, plain], repeat)
    diff = np.abs(
        out["ours"][:, 1] - np.clip(out["plain"][:, 1], 1e-12, 1 - 1e-12)
    ).max()
    same = np.array_equal(out["ours"], out["numpy"])
    path = "numba kernels" if _accel.kernels_for(n) is not None else "numpy only"
    return (
        f"histogram binning fit+predict n={n:.0e}",
        t_ours,
        t_plain,
        "plain numpy (searchsorted + bincount)",
        f"max |diff| {diff:.1e}; ours runs {path}; without kernels "
        f"{t_numpy * 1e3:.1f} ms (same output: {same})",
        ("< 10 ms", t_ours < 0.010),
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="n=1e4, 2 repeats")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    n = 10_000 if args.quick else 1_000_000
    repeat = 2 if args.quick else args.repeat
    rng = np.random.default_rng(0)
    print(
        f"# seed calibrators vs scikit-learn ({time.strftime('%Y-%m-%d')}, "
        f"{platform.machine()}, python {platform.python_version()}, numpy "
        f"{np.__version__}, scipy {scipy.__version__}, sklearn {sklearn.__version__}; "
        f"median of {repeat})"
    )
    print(f"{'case':42s} {'skcalib':>10s} {'peer':>10s} {'peer/ours':>10s}  target")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = [
            bench_temperature(n, 100, repeat, rng),
            bench_platt(n, repeat, rng),
            bench_isotonic(n, repeat, rng),
            bench_binning(n, repeat, rng),
        ]
    for case, t_ours, t_peer, peer, agree, (target, met) in rows:
        ratio = t_peer / t_ours if np.isfinite(t_peer) else float("nan")
        peer_s = f"{t_peer * 1e3:8.1f}ms" if np.isfinite(t_peer) else f"{'-':>10s}"
        print(
            f"{case:42s} {t_ours * 1e3:8.1f}ms {peer_s} {ratio:9.2f}x  "
            f"{target}: {'met' if met else 'NOT met'}"
        )
        print(f"{'':42s} peer: {peer}; {agree}")


if __name__ == "__main__":
    main()
