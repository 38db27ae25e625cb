"""Predictions logs for the tests of ``skcalib report --window`` and
``skcalib monitor``: generated, written as CSV, read back as the commands
read them."""

import numpy as np

from skcalib.monitoring import CalibrationMonitor

T0 = np.datetime64("2024-01-01T00:00:00", "s")


def make_log(n, k=10, *, drift_at=None, temperature=1.6, seed=0):
    """Labels and probabilities: truth softmax(z), z ~ N(0, 2^2 I); the
    forecast softmax(z / T) with T = 1 (calibrated) before row ``drift_at``
    and ``temperature`` from it on."""
    rng = np.random.default_rng(seed)
    z = 2.0 * rng.standard_normal((n, k))
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    y = np.minimum((p.cumsum(axis=1) < rng.uniform(size=(n, 1))).sum(axis=1), k - 1)
    t = np.ones((n, 1))
    if drift_at is not None:
        t[drift_at:] = temperature
    q = np.exp((z - z.max(axis=1, keepdims=True)) / t)
    q /= q.sum(axis=1, keepdims=True)
    return y, q


def write_log(path, y, proba, times=None, *, header=True, time_first=True):
    """Write ``time,label,p_0..`` (17 significant digits: rows sum to 1 to
    float64 round-off, so the commands use them as given)."""
    k = proba.shape[1]
    names = ["label", *(f"p_{j}" for j in range(k))]
    cols = [
        [str(v) for v in y],
        *([f"{v:.17g}" for v in proba[:, j]] for j in range(k)),
    ]
    if times is not None:
        tcol = [str(t) for t in times]
        names = ["time", *names] if time_first else [*names, "time"]
        cols = [tcol, *cols] if time_first else [*cols, tcol]
    with open(path, "w") as f:
        if header:
            f.write(",".join(names) + "\n")
        for row in zip(*cols, strict=True):
            f.write(",".join(row) + "\n")
    return path


def minutes(n, step=60, start=T0):
    """``n`` timestamps ``step`` seconds apart, as ISO text."""
    return start + np.arange(n) * np.timedelta64(step, "s")


def read_back(path, k, time_first=True):
    """The labels and probabilities as the file holds them."""
    data = np.loadtxt(path, delimiter=",", skiprows=1, usecols=None, dtype=str)
    off = 1 if time_first else 0
    y = data[:, off].astype(np.int64)
    p = data[:, off + 1 : off + 1 + k].astype(np.float64)
    return y, p / p.sum(axis=1, keepdims=True)


def direct(y, p, looks, window, times=None, **params):
    """CalibrationMonitor fed the looks ``[(a, b), ...]`` directly: its
    windows, the e-value after each look, and its alarm attributes."""
    mon = CalibrationMonitor(
        window=window, labels=np.arange(p.shape[1]), random_state=0, **params
    )
    after = []
    for a, b in looks:
        ts = None if times is None else times[a:b].astype("datetime64[ns]")
        mon.update(y[a:b], p[a:b], ts)
        after.append(mon.e_value_)
    return mon, after


def looks_of(keys, look_rows):
    """Looks written out plainly: a new look where the window changes or
    after ``look_rows`` rows of one window."""
    looks, start = [], 0
    for i in range(1, len(keys) + 1):
        if i == len(keys) or keys[i] != keys[i - 1] or i - start == look_rows:
            looks.append((start, i))
            start = i
    return looks
