"""Calibration over time, for ``skcalib report --time-col/--window`` and
``skcalib monitor``.

A :class:`~skcalib.monitoring.CalibrationMonitor` runs on the model's own
(uncalibrated) probabilities, in file order: did the deployed model's
calibration drift? The rows are fed to it in *looks* (the batches of its
sequential test): a look ends after ``--look-rows`` rows or at the end of a
window, whichever comes first. The looks depend on the data only, never on
how the file is read, so ``skcalib monitor`` (in chunks) and ``skcalib
report`` (in memory) compute the same windows, e-values and alarm.

Timestamps (``--time-col``) are read by :mod:`skcalib._report.times`.
Nothing here prints (see :mod:`skcalib._report.cli` and
:mod:`skcalib._report.monitor_cli`).
"""

import argparse

import numpy as np

from skcalib._report.columns import DataError, _py
from skcalib._report.times import TIME_UNITS, check_order, format_time, parse_times

__all__ = []

#: Defaults of ``--window`` (rows, as CalibrationMonitor) and ``--look-rows``.
DEFAULT_WINDOW = 1000
DEFAULT_LOOK_ROWS = 500
#: The level of the per-window ECE intervals (the monitor's default).
CONFIDENCE = 0.95
OWN_PROBABILITIES = (
    "the monitor runs on the model's own (uncalibrated) probabilities, in file "
    "order: did the deployed model's calibration drift? (no calibrator is "
    "involved)"
)


# ------------------------------------------------------------------ options
def window_spec(text):
    """``--window``: a number of rows (``1000``) or a duration (``1D``,
    ``6h``, ``30min``), as :class:`~skcalib.monitoring.CalibrationMonitor`'s
    ``window=`` accepts them (an argparse ``type``: a bad one is exit 2)."""
    from skcalib.monitoring._windows import _UNITS, check_window

    text = text.strip()
    spec = int(text) if text.isdigit() else text
    try:
        check_window(spec)
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError(
            f"{text!r} is neither a number of rows (e.g. 1000) nor a duration: "
            f"a positive number and one of the units {', '.join(_UNITS)} "
            "(e.g. 1D, 6h, 30min)"
        ) from None
    return spec


def _positive_int(text):
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return value


def _alpha(text):
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number in (0, 1)")
    return value


def add_window_options(parser, stream=False):
    """The options of the windows and of their sequential test."""
    parser.add_argument(
        "--time-col",
        help="column of the time of each row (ISO 8601, or numbers in "
        "--time-unit since 1970-01-01 UTC); never a score column; rows must "
        "be in time order"
        + ("" if stream else "; adds the table of calibration over time"),
    )
    parser.add_argument(
        "--time-unit",
        choices=list(TIME_UNITS),
        default="s",
        help="unit of a numeric --time-col (default s: Unix seconds)",
    )
    parser.add_argument(
        "--window",
        type=window_spec,
        default=None,
        help="window length: rows (1000) or, with --time-col, a duration (1D, "
        f"6h, 30min; windows from the Unix epoch, UTC); default {DEFAULT_WINDOW} "
        "rows" + ("" if stream else "; adds the table of calibration over time"),
    )
    parser.add_argument(
        "--look-rows",
        type=_positive_int,
        default=DEFAULT_LOOK_ROWS,
        help="the sequential test looks after every N rows and at the end of "
        f"each window (default {DEFAULT_LOOK_ROWS})",
    )
    parser.add_argument(
        "--alpha",
        type=_alpha,
        default=0.05,
        help="level of the sequential test: the largest probability of ever "
        "raising a false alarm (default 0.05)",
    )
    parser.add_argument(
        "--kind",
        choices=["confidence", "classwise"],
        default="confidence",
        help="what the test bets on: confidence bins (default) or every "
        "(class, bin) cell",
    )


def check_window_options(args, parser):
    """Usage errors of the window options (exit 2); the resolved window."""
    from skcalib.monitoring._windows import check_window

    window = DEFAULT_WINDOW if args.window is None else args.window
    if check_window(window)[0] == "time" and args.time_col is None:
        parser.error(f"--window {window} is a duration: pass --time-col")
    return window


def wants_windows(args):
    """Whether the report adds the table of calibration over time."""
    return args.time_col is not None or args.window is not None


# ---------------------------------------------------------------- the looks
def window_keys(window, n_before, n_rows, ns):
    """The window of each row: ``row // window`` or ``time // window``."""
    from skcalib.monitoring._windows import check_window

    unit, size = check_window(window)
    if unit == "rows":
        return (n_before + np.arange(n_rows, dtype=np.int64)) // size
    return ns // size


def look_starts(keys, look_rows):
    """First row of every look: a look ends after ``look_rows`` rows or where
    the window changes, whichever comes first."""
    n = keys.size
    if n == 0:
        return np.empty(0, dtype=np.int64)
    runs = np.concatenate([[0], np.flatnonzero(np.diff(keys)) + 1])
    lengths = np.diff(np.append(runs, n))
    pos = np.arange(n) - np.repeat(runs, lengths)
    return np.flatnonzero(pos % look_rows == 0)


def own_proba(scores, score_type, n_classes):
    """The model's own probabilities ``(n, K)``: those of
    :class:`~skcalib.IdentityCalibrator` (the report's ``uncalibrated`` row):
    the softmax of logits (float64), or the probabilities with each row
    divided by its sum (a 1-D column ``p`` of a binary problem is ``[1 - p,
    p]``)."""
    from skcalib._core.scores import to_log_proba

    if score_type == "logit":
        return np.exp(to_log_proba(scores.astype(np.float64), "logit", n_classes))
    p = scores if scores.ndim == 2 else np.column_stack([1.0 - scores, scores])
    return p / p.sum(axis=1, keepdims=True)


def new_monitor(args, window, classes, max_windows=None):
    from skcalib.monitoring import CalibrationMonitor

    return CalibrationMonitor(
        alpha=args.alpha,
        window=window,
        kind=args.kind,
        labels=classes,
        max_windows=max_windows,
        confidence_level=CONFIDENCE,
        random_state=args.random_state,
    )


def alarm_json(monitor, key, window):
    """The alarm of ``monitor``, just raised by a look in window ``key``."""
    from skcalib.monitoring._windows import check_window

    unit, size = check_window(window)
    start, end = key * size, (key + 1) * size
    drivers = [
        {**d, "class": _py(d["class"]) if d["class"] is not None else None}
        for d in monitor.drivers_
    ]
    time = monitor.alarm_time_
    return {
        "alpha": monitor.alpha,
        "threshold": 1.0 / monitor.alpha,
        "e_value": monitor.e_value_,
        "look": int(monitor.alarm_) + 1,
        "rows": int(monitor.alarm_sample_),
        "time": None if time is None else format_time(time.astype(np.int64)),
        "window": int(key),
        "window_start": int(start) if unit == "rows" else format_time(start),
        "window_end": int(end) if unit == "rows" else format_time(end),
        "drivers": drivers,
    }


def window_json(rec, span=None):
    """A window of :meth:`CalibrationMonitor.windows` as JSON values.

    ``span``: ``(first, last)`` timestamps (ns) of the rows of a row window.
    """
    out = {"window": int(rec["window"])}
    for key in ("start", "end"):
        value = rec[key]
        out[key] = (
            format_time(value.astype(np.int64))
            if isinstance(value, np.datetime64)
            else int(value)
        )
    if span is not None:
        out["first_time"], out["last_time"] = map(format_time, span)
    out["n"] = int(rec["n"])
    for key in ("ece", "ece_low", "ece_high", "brier", "nll", "accuracy"):
        out[key] = None if rec[key] is None else float(rec[key])
    if "classwise_ece" in rec:
        value = rec["classwise_ece"]
        out["classwise_ece"] = None if value is None else float(value)
    out["e_value"] = float(rec["e_value"])
    out["complete"] = bool(rec["complete"])
    return out


def summary_json(args, window, monitor, time_col, alarm):
    """What every output says about the monitor besides its windows."""
    from skcalib.monitoring._windows import check_window

    unit, _ = check_window(window)
    return {
        "window": window,
        "window_unit": unit,
        "time_column": time_col,
        "look_rows": args.look_rows,
        "alpha": args.alpha,
        "kind": args.kind,
        "n_samples": int(monitor.n_samples_),
        "n_looks": int(monitor.n_batches_),
        "e_value": monitor.e_value_,
        "p_value": monitor.p_value_,
        "alarm": alarm,
    }


# ------------------------------------------------------- the report's windows
def report_windows(args, window, pred, scores, score_type):
    """The ``monitor`` object of report.json: the monitor fed every row of
    the file in memory, in looks (see the module docstring)."""
    ns = None
    where = _where(pred)
    if args.time_col is not None:
        ns, _ = parse_times(pred.extra["--time-col"], args.time_unit, where)
        check_order(ns, None, where, args.time_col)
    classes = pred.classes
    proba = own_proba(scores, score_type, classes.size)
    monitor = new_monitor(args, window, classes)
    keys = window_keys(window, 0, proba.shape[0], ns)
    starts = np.append(look_starts(keys, args.look_rows), proba.shape[0])
    alarm = None
    e_at_end = {}  # window -> the e-process after its last look
    try:
        for a, b in zip(starts[:-1], starts[1:], strict=True):
            times = None if ns is None else ns[a:b].view("datetime64[ns]")
            monitor.update(pred.labels[a:b], proba[a:b], times)
            e_at_end[int(keys[a])] = monitor.e_value_
            if alarm is None and monitor.alarm_ is not None:
                alarm = alarm_json(monitor, int(keys[a]), window)
    except ValueError as exc:  # a gap of too many empty windows
        raise DataError(f"{pred.source}: {exc}") from None
    del proba
    rows, e_value = [], 1.0
    for rec in monitor.windows():
        span = None
        if ns is not None and not isinstance(rec["start"], np.datetime64) and rec["n"]:
            span = (ns[rec["start"]], ns[rec["end"] - 1])
        # an empty window: the e-process has not moved since the window before
        e_value = e_at_end.get(int(rec["window"]), e_value)
        rows.append(window_json({**rec, "e_value": e_value}, span))
    out = summary_json(args, window, monitor, args.time_col, alarm)
    out["rows"] = rows
    out["legend"] = legend(out)
    return out


def _where(pred):
    if pred.first_line is None:  # an NPZ file: rows, not lines
        return lambda row: f"{pred.source}, row {row}"
    return lambda row: f"{pred.source}, line {row + pred.first_line}"


# ------------------------------------------------------------------- output
def columns(summary):
    """``[(key, title)]`` of the windows table."""
    cols = [("window", "window"), ("start", "start"), ("end", "end")]
    if summary["window_unit"] == "rows" and summary["time_column"] is not None:
        cols += [("first_time", "first time"), ("last_time", "last time")]
    cols += [("n", "n"), ("ece", "ECE"), ("ece_ci", f"ECE {CONFIDENCE:.0%} CI")]
    if summary["kind"] == "classwise":
        cols.append(("classwise_ece", "cw-ECE"))
    cols += [("brier", "Brier"), ("nll", "NLL"), ("accuracy", "accuracy")]
    return [*cols, ("e_value", "e-value")]


def _number(value, digits=4):
    return "-" if value is None else f"{value:.{digits}f}"


def cells(row, cols):
    """The cells of one window, as strings (``-``: no rows)."""
    out = []
    for key, _ in cols:
        if key == "window":
            out.append(str(row["window"]) + ("" if row["complete"] else " (open)"))
        elif key == "ece_ci":
            low, high = row["ece_low"], row["ece_high"]
            out.append("-" if low is None else f"[{low:.4f}, {high:.4f}]")
        elif key == "e_value":
            out.append(f"{row['e_value']:.3g}")
        elif key in ("start", "end", "n", "first_time", "last_time"):
            out.append(str(row.get(key, "-")))
        else:
            out.append(_number(row.get(key)))
    return out


def format_windows(summary, fmt):
    """The windows table as text or markdown."""
    cols = columns(summary)
    header = [title for _, title in cols]
    body = [cells(r, cols) for r in summary["rows"]]
    if fmt == "markdown":
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in body])
    widths = [max(len(h), *(len(r[i]) for r in body)) for i, h in enumerate(header)]
    lines = [fixed_line(header, widths)]
    lines.append("-" * len(lines[0]))
    return "\n".join(lines + [fixed_line(r, widths) for r in body])


def fixed_line(items, widths):
    """One text line: the first column left-aligned, the others right."""
    return "  ".join(
        c.ljust(w) if i == 0 else c.rjust(w)
        for i, (c, w) in enumerate(zip(items, widths, strict=True))
    )


def _window_place(alarm):
    return f"window {alarm['window']}: {alarm['window_start']} to {alarm['window_end']}"


def _driver(d):
    cls = "" if d["class"] is None else f"class {d['class']!r} "
    return (
        f"{cls}bin ({d['low']:.3f}, {d['high']:.3f}] {d['direction']} (e-value "
        f"{d['e_value']:.3g}, {d['n']} rows, accuracy - probability "
        f"{d['mean_residual']:+.3f})"
    )


def alarm_line(summary):
    """The alarm (when, where, which cells drove it) or its absence."""
    alarm = summary["alarm"]
    if alarm is None:
        return (
            f"no alarm at alpha={summary['alpha']:g} (e-value "
            f"{summary['e_value']:.3g} < {1 / summary['alpha']:g}; anytime-valid "
            f"p-value {summary['p_value']:.3g} after {summary['n_samples']} rows, "
            f"{summary['n_looks']} looks)"
        )
    when = f"after {alarm['rows']} rows (look {alarm['look']}"
    when += f", time {alarm['time']})" if alarm["time"] else ")"
    return (
        f"ALARM at alpha={alarm['alpha']:g}: e-value {alarm['e_value']:.3g} >= "
        f"{alarm['threshold']:g} {when}, in {_window_place(alarm)}; driven by "
        + "; ".join(_driver(d) for d in alarm["drivers"])
    )


def legend(summary):
    """Lines that say what the windows table holds."""
    unit = summary["window_unit"]
    span = (
        f"{summary['window']} consecutive rows; start, end: rows [start, end) "
        "counted from 0"
        if unit == "rows"
        else f"the time span [start, end) of {summary['window']}, counted from "
        "1970-01-01 UTC (days start at midnight UTC)"
    )
    return [
        OWN_PROBABILITIES,
        f"window: {span}; n: its rows (0: none, metrics -); (open): the last, "
        "unfinished window",
        "ECE: confidence ECE, 15 equal-width bins; ECE 95% CI: bootstrap test "
        "inversion from the window's per-bin totals (200 resamples); Brier, "
        "NLL, accuracy: of the window's rows",
        "e-value: the anytime-valid e-process of the whole stream at the end of "
        f"the window (after its last look; a look every {summary['look_rows']} "
        "rows and at each window's end); "
        f"the alarm is raised when it reaches 1/alpha = {1 / summary['alpha']:g}: "
        "on a calibrated stream the chance of ever raising it is at most alpha, "
        "however often it is looked at",
    ]


def print_lines(summary, fmt):
    """The report's section on calibration over time, as lines."""
    lines = ["calibration over time:", format_windows(summary, fmt), ""]
    lines.append(alarm_line(summary))
    bullet = "  " if fmt == "text" else "- "
    return [*lines, "", *(bullet + line for line in summary["legend"])]
