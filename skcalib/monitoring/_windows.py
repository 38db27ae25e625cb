"""Windows of :class:`~skcalib.monitoring.CalibrationMonitor`: the window
length (rows or a duration), timestamps, and the summary of a window's
:class:`~skcalib.metrics.CalibrationAccumulator`."""

import datetime
import re
from numbers import Integral

import numpy as np

from skcalib._core.totals import ACC, CONF, COUNT, W2, W, reduce_totals
from skcalib.metrics._interval import _NullFamily, invert_test

#: Units of a window string, as in pandas offset aliases for fixed spans.
_UNITS = {"W": "W", "D": "D", "h": "h", "min": "m", "s": "s", "ms": "ms"}
_UNITS.update({"us": "us", "ns": "ns"})
_WINDOW_RE = re.compile(r"^\s*(\d+)\s*([A-Za-z]+)\s*$")


def check_window(window):
    """``("rows", n)`` or ``("time", nanoseconds)`` from the ``window`` parameter."""
    if isinstance(window, Integral) and not isinstance(window, bool):
        if window < 1:
            raise ValueError(f"window must be a positive number of rows, got {window}.")
        return "rows", int(window)
    if isinstance(window, str):
        match = _WINDOW_RE.match(window)
        if match is None or match.group(2) not in _UNITS:
            raise ValueError(
                f"window={window!r} is not a duration: use a number and one of "
                f"the units {sorted(_UNITS)} (e.g. '1D', '6h', '15min'), a "
                "numpy.timedelta64, a datetime.timedelta, or an int (rows)."
            )
        span = np.timedelta64(int(match.group(1)), _UNITS[match.group(2)])
    elif isinstance(window, datetime.timedelta | np.timedelta64):
        span = np.timedelta64(window)
    else:
        raise TypeError(
            "window must be an int (rows), a duration string such as '1D', a "
            f"numpy.timedelta64 or a datetime.timedelta; got {window!r}."
        )
    ns = int(span.astype("timedelta64[ns]").astype(np.int64))
    if ns < 1:
        raise ValueError(f"window must be a positive duration, got {window!r}.")
    return "time", ns


def check_timestamps(timestamps, n_rows, last):
    """Timestamps as int64 nanoseconds since the epoch, non-decreasing and
    not before ``last`` (the last timestamp seen, or None)."""
    ts = np.asarray(timestamps)
    if ts.dtype.kind != "M":
        if ts.dtype.kind in "iufb":
            raise TypeError(
                "timestamps must be datetimes (numpy datetime64, datetime, "
                f"pandas Timestamp), got numbers of dtype {ts.dtype}."
            )
        try:
            ts = ts.astype("datetime64[ns]")
        except (TypeError, ValueError) as exc:
            raise TypeError(
                f"timestamps cannot be read as datetimes (numpy datetime64): {exc}"
            ) from exc
    if ts.ndim != 1 or ts.size != n_rows:
        raise ValueError(
            f"timestamps must have shape ({n_rows},) (one per row), got {ts.shape}."
        )
    ts = ts.astype("datetime64[ns]")
    if np.isnat(ts).any():
        bad = int(np.flatnonzero(np.isnat(ts))[0])
        raise ValueError(f"timestamps contain NaT; row {bad} is NaT.")
    ns = ts.astype(np.int64)
    back = np.flatnonzero(np.diff(ns) < 0)
    if back.size:
        i = int(back[0])
        raise ValueError(
            f"timestamps must not decrease: row {i + 1} ({ts[i + 1]}) comes "
            f"before row {i} ({ts[i]}). Sort the batch by time first."
        )
    if last is not None and ns.size and ns[0] < last:
        raise ValueError(
            f"timestamps must not decrease across batches: row 0 of this batch "
            f"({ts[0]}) comes before the last timestamp seen "
            f"({np.datetime64(int(last), 'ns')})."
        )
    return ns


def totals_bootstrap(totals, n_resamples, rng):
    """Bootstrap per-bin totals ``(n_resamples, 5, 1, M)`` from totals alone.

    Resampling ``n`` rows with replacement draws the numbers of correct and
    wrong rows of every bin from a multinomial with their observed shares,
    exactly as the (cell, outcome) group bootstrap of
    :func:`~skcalib.metrics.calibration_error_interval`; the confidence sum
    of ``m`` rows of a bin is ``m`` times the bin's mean confidence (the
    totals keep no spread of the confidence within a bin: its share of a
    bin's variance is at most ``width**2 / 4`` against ``acc (1 - acc)``).
    """
    count = totals[COUNT, 0]
    correct = totals[ACC, 0]
    mean_conf = np.divide(
        totals[CONF, 0], count, out=np.zeros_like(count), where=count > 0
    )
    groups = np.stack([correct, count - correct], axis=1).ravel()
    n = int(round(groups.sum()))
    draws = rng.multinomial(n, groups / groups.sum(), size=n_resamples).astype(float)
    draws = draws.reshape(n_resamples, -1, 2)
    out = np.empty((n_resamples, 5, 1, count.size))
    m = draws.sum(axis=2)
    out[:, W, 0] = out[:, W2, 0] = out[:, COUNT, 0] = m
    out[:, ACC, 0] = draws[:, :, 0]
    out[:, CONF, 0] = m * mean_conf
    return out


def ece_interval(totals, confidence_level, n_resamples, rng):
    """``(low, high)`` of the confidence ECE of a window, from its totals.

    The test inversion of :func:`~skcalib.metrics.calibration_error_interval`
    (L1 norm) on the resamples of :func:`totals_bootstrap`.
    """
    statistic = float(reduce_totals(totals, "confidence", "l1", False))
    boot = totals_bootstrap(totals, n_resamples, rng)
    spread_of = reduce_totals(boot, "confidence", "l1", False)
    null = _NullFamily(totals, boot, "confidence", "l1", False)
    spread = abs(statistic) + 8 * float(np.std(spread_of)) + 1e-12
    low, _, high, _ = invert_test(statistic, null, 1 - confidence_level, spread)
    return float(low), float(high)


def summarise(acc, kind, interval, rng):
    """The metrics of one window's accumulator (None for an empty window).

    ``interval``: ``(confidence_level, n_resamples)``.
    """
    empty = dict.fromkeys(
        ("ece", "ece_low", "ece_high", "brier", "nll", "accuracy", "curve")
    )
    if kind == "classwise":
        empty["classwise_ece"] = None
    if acc.n_samples_ == 0:
        return empty
    curve = acc.reliability_curve()
    filled = curve.counts > 0
    totals = acc._totals("confidence")
    out = {
        "ece": acc.expected_calibration_error(),
        "ece_low": None,
        "ece_high": None,
        "brier": acc.brier_score(),
        "nll": acc.negative_log_likelihood(),
        "accuracy": float(
            (curve.accuracy[filled] * curve.counts[filled]).sum() / curve.counts.sum()
        ),
        "curve": curve,
    }
    out["ece_low"], out["ece_high"] = ece_interval(
        totals.copy(), interval[0], interval[1], rng
    )
    if kind == "classwise":
        out["classwise_ece"] = acc.classwise_calibration_error()
    return out
