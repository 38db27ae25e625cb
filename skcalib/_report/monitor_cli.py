"""``skcalib monitor FILE``: did the deployed model's calibration drift?

Reads a predictions log (CSV: labels, the model's scores, optionally a time
column) in file order, in chunks of ``--chunk-rows`` lines (never the whole
file: :mod:`skcalib._report.stream`), feeds a
:class:`~skcalib.monitoring.CalibrationMonitor` look by look (the looks of
:mod:`skcalib._report.windows`, which do not depend on the chunks) and
prints each window as it closes, the alarm when it is raised, and a last
line; one pass. The monitor keeps the last two windows only, so memory does
not grow with the file.

Output: ``text`` (a fixed-width table), ``markdown`` (a table; the alarm
after it) or ``json`` (JSON Lines: one object per line, ``"type"``
``header``, ``window``, ``empty_windows``, ``alarm`` or ``summary``).
Exit status as ``skcalib report``: 0 done (with or without an alarm), 1 the
data, 2 usage.
"""

import json
import sys

__all__ = []

DEFAULT_CHUNK_ROWS = 100_000
#: A run of more empty windows than this (a gap in the timestamps) is one
#: line (one ``empty_windows`` object), not one per window.
MAX_EMPTY_LINES = 5
#: Widths of the streamed text table (a wider value shifts its line only).
_WIDTHS = {
    "window": 12,
    "first_time": 19,
    "last_time": 19,
    "n": 7,
    "ece_ci": 16,
    "accuracy": 8,
    "e_value": 9,
}


def add_monitor_parser(sub):
    from skcalib._report.windows import _positive_int, add_window_options

    mon = sub.add_parser(
        "monitor",
        help="follow the calibration of a predictions log over time",
        description="Read a predictions log in order, in chunks, and follow "
        "the calibration of the model's own probabilities window by window "
        "with an anytime-valid sequential test (skcalib.CalibrationMonitor): "
        "one line per window as it closes, the alarm when it is raised.",
        epilog="Score columns are chosen as by 'skcalib report' (by class "
        "name, or --score-cols and --classes); the first 10000 rows decide the "
        "classes, the score type and the time format, and a later row that "
        "contradicts them is an error naming its line. Exit status: 0 ok "
        "(alarm or not), 1 data error, 2 usage error.",
    )
    mon.add_argument("path", help="CSV log: label column, score columns")
    mon.add_argument("--label-col", help="label column (name or 0-based index)")
    mon.add_argument(
        "--score-cols", help="comma-separated score columns (names or indices)"
    )
    mon.add_argument(
        "--classes",
        help="comma-separated class of each score column, in column order; "
        "also every class when the first rows miss one",
    )
    mon.add_argument(
        "--positive-label", help="one score column for two classes: its class"
    )
    mon.add_argument("--encoding", help="text encoding (default UTF-8)")
    mon.add_argument(
        "--score-type",
        choices=["auto", "logit", "probability"],
        default=None,
        help="what the scores are (default auto, on the first rows)",
    )
    add_window_options(mon, stream=True)
    mon.add_argument(
        "--chunk-rows",
        type=_positive_int,
        default=DEFAULT_CHUNK_ROWS,
        help=f"lines read at a time (default {DEFAULT_CHUNK_ROWS}); the output "
        "does not depend on it",
    )
    mon.add_argument(
        "--random-state",
        type=int,
        default=0,
        help="seed of the windows' bootstrap intervals (default 0)",
    )
    mon.add_argument("--format", choices=["text", "markdown", "json"], default="text")
    mon.add_argument("--debug", action="store_true", help="tracebacks on errors")


def monitor(args, parser):
    """Run ``skcalib monitor``; return the exit status."""
    from skcalib._report.windows import check_window_options

    window = check_window_options(args, parser)
    if args.debug:
        return _monitor(args, window)
    from skcalib._report.io import DataError

    try:
        return _monitor(args, window)
    except DataError as exc:
        return _fail(exc, 1)
    except ValueError as exc:  # the monitor's own input checks
        return _fail(f"{args.path}: {exc}", 1)
    except BrokenPipeError:  # `skcalib monitor log.csv | head`
        sys.stdout = None
        return 0
    except KeyboardInterrupt:
        return _fail("interrupted", 130)


def _fail(message, code):
    text = " ".join(str(message).split())
    print(f"skcalib monitor: error: {text}", file=sys.stderr)
    return code


def _reader(args):
    from pathlib import Path

    from skcalib._report.io import DataError, ReadOptions
    from skcalib._report.stream import LogReader

    path = Path(args.path)
    if not path.is_file():
        raise DataError(
            f"{path}: no such file" if not path.exists() else f"{path}: not a file"
        )
    with open(path, "rb") as f:
        if f.read(4) == b"PK\x03\x04" or path.suffix.lower() in (".npz", ".npy"):
            raise DataError(
                f"{path}: skcalib monitor reads CSV logs; for an NPZ file use "
                "skcalib report FILE --window SPEC"
            )
    opts = ReadOptions(
        label_col=args.label_col,
        score_cols=args.score_cols,
        classes=args.classes,
        positive_label=args.positive_label,
        encoding=args.encoding,
        extra={} if args.time_col is None else {"--time-col": args.time_col},
    )
    return LogReader(path, opts, args.score_type, args.time_unit)


def _monitor(args, window):
    from skcalib._report.windows import own_proba

    reader = _reader(args)
    run = None
    for chunk in reader.chunks(args.chunk_rows):
        if run is None:
            run = _Run(args, window, reader)
        proba = own_proba(chunk.scores, reader.score_type, reader.classes.size)
        labels, ns = chunk.labels, chunk.ns
        del chunk  # the scores: only the probabilities are needed now
        run.add(labels, proba, ns)
        del labels, proba, ns  # before the next chunk is read
    run.finish()
    return 0


class _Looks:
    """Rows regrouped into the looks of :func:`~skcalib._report.windows.look_starts`;
    the unfinished last look waits for the next chunk."""

    def __init__(self, window, look_rows):
        self.window, self.look_rows = window, look_rows
        self.pending = None
        self.n_done = 0  # rows handed out in looks

    def add(self, y, proba, ns):
        import numpy as np

        from skcalib._report.windows import look_starts, window_keys

        if self.pending is not None:
            py, pp, pn = self.pending
            y, proba = np.concatenate([py, y]), np.concatenate([pp, proba])
            ns = None if ns is None else np.concatenate([pn, ns])
        n = y.shape[0]
        keys = window_keys(self.window, self.n_done, n, ns)
        starts = look_starts(keys, self.look_rows)
        ends = np.append(starts[1:], n)
        self.pending = None
        for a, b in zip(starts, ends, strict=True):
            if b == n and b - a < self.look_rows:
                # copies: the chunk's arrays are not kept for its last rows
                part = None if ns is None else ns[a:].copy()
                self.pending = (y[a:].copy(), proba[a:].copy(), part)
                break
            self.n_done += b - a
            yield y[a:b], proba[a:b], None if ns is None else ns[a:b], int(keys[a])

    def flush(self):
        """The last look of the file (shorter than ``look_rows``)."""
        from skcalib._report.windows import window_keys

        if self.pending is None:
            return
        y, proba, ns = self.pending
        self.pending = None
        first = None if ns is None else ns[:1]
        key = int(window_keys(self.window, self.n_done, 1, first)[0])
        self.n_done += y.shape[0]
        yield y, proba, ns, key


class _Run:
    """The monitor, its looks and the printer of one run."""

    def __init__(self, args, window, reader):
        from skcalib._report.windows import new_monitor
        from skcalib.monitoring._windows import check_window

        self.args, self.window = args, window
        self.unit, self.size = check_window(window)
        self.monitor = new_monitor(args, window, reader.classes, max_windows=2)
        self.looks = _Looks(window, args.look_rows)
        self.open_key = None
        self.alarm = None
        self.spans = {} if (self.unit == "rows" and args.time_col) else None
        spec = {
            "window_unit": self.unit,
            "time_column": args.time_col,
            "kind": args.kind,
        }
        self.out = _Printer(args.format, spec)
        self.out.header(_header(args, window, reader))

    def add(self, y, proba, ns):
        for look in self.looks.add(y, proba, ns):
            self._look(*look)

    def _look(self, y, proba, ns, key):
        from skcalib._report.windows import alarm_json

        m = self.monitor
        closing = self.unit == "time" and self.open_key not in (None, key)
        before = m.windows()[-1] if closing else None
        m.update(y, proba, None if ns is None else ns.view("datetime64[ns]"))
        if self.spans is not None:
            self.spans.setdefault(key, [ns[0], ns[-1]])[1] = ns[-1]
        if closing:
            # its e-value: after its own last look (the one before this)
            self._emit({**before, "complete": True})
            self._empty(self.open_key + 1, key - 1, before["e_value"])
        elif self.unit == "rows" and m.n_samples_ % self.size == 0:
            self._emit(m.windows()[-1])
        self.open_key = key
        if self.alarm is None and m.alarm_ is not None:
            self.alarm = alarm_json(m, key, self.window)
            self.out.alarm(self.alarm)

    def _emit(self, rec):
        from skcalib._report.windows import window_json

        span = None if self.spans is None else self.spans.pop(int(rec["window"]), None)
        self.out.window(window_json(rec, span))

    def _empty(self, first, last, e_value):
        from skcalib._report.times import format_time

        count = last - first + 1
        if count <= 0:
            return
        if count > MAX_EMPTY_LINES:
            self.out.gap(
                {
                    "first": first,
                    "last": last,
                    "count": count,
                    "start": format_time(first * self.size),
                    "end": format_time((last + 1) * self.size),
                    "e_value": e_value,
                }
            )
            return
        for key in range(first, last + 1):
            row = {"window": key, "start": format_time(key * self.size)}
            row["end"] = format_time((key + 1) * self.size)
            row["n"] = 0
            row.update(
                dict.fromkeys(
                    ("ece", "ece_low", "ece_high", "brier", "nll", "accuracy")
                )
            )
            if self.args.kind == "classwise":
                row["classwise_ece"] = None
            self.out.window({**row, "e_value": e_value, "complete": True})

    def finish(self):
        from skcalib._report.windows import summary_json

        for look in self.looks.flush():
            self._look(*look)
        rows = self.monitor.windows()
        if rows and not rows[-1]["complete"]:
            self._emit(rows[-1])
        summary = summary_json(
            self.args, self.window, self.monitor, self.args.time_col, self.alarm
        )
        self.out.finish(summary)


def _header(args, window, reader):
    from skcalib._report.windows import OWN_PROBABILITIES

    mapping = ", ".join(f"{k} <- {v}" for k, v in reader.columns.items())
    return {
        "source": str(args.path),
        "classes": [c.item() if hasattr(c, "item") else c for c in reader.classes],
        "class_columns": {str(k): v for k, v in reader.columns.items()},
        "score_type": reader.score_type,
        "score_type_reason": f"{reader.reason} (the first rows)",
        "window": window,
        "look_rows": args.look_rows,
        "alpha": args.alpha,
        "kind": args.kind,
        "notes": reader.notes,
        "lines": [
            f"{args.path}: {reader.classes.size} classes, score type "
            f"{reader.score_type} ({reader.reason}; decided on the first rows)",
            f"classes <- columns: {mapping}",
            *(f"note: {n}" for n in reader.notes),
            f"window {window}{' rows' if isinstance(window, int) else ''}; a look "
            f"every {args.look_rows} rows and at each window's end; alarm when the "
            f"e-value reaches 1/alpha = {1 / args.alpha:g} ({args.kind} test)",
            OWN_PROBABILITIES,
        ],
    }


class _Printer:
    """Prints as the run goes (flushed: a pipe sees each window at once)."""

    def __init__(self, fmt, spec):
        from skcalib._report.windows import columns

        self.fmt, self.cols = fmt, columns(spec)
        self.started = False
        self.alarm_row = None
        wide = 19 if spec["window_unit"] == "time" else 9
        self.widths = [
            max(len(title), _WIDTHS.get(k, wide if k in ("start", "end") else 6))
            for k, title in self.cols
        ]

    def _print(self, text):
        print(text, flush=True)

    def header(self, info):
        if self.fmt == "json":
            lines = {k: v for k, v in info.items() if k != "lines"}
            self._print(json.dumps({"type": "header", **lines}))
            return
        for line in info["lines"]:
            self._print(line)
        self._print("")

    def _line(self, items):
        from skcalib._report.windows import fixed_line

        if self.fmt == "markdown":
            return "| " + " | ".join(items) + " |"
        return fixed_line(items, self.widths)

    def _table_head(self):
        if self.started:
            return
        self.started = True
        titles = [t for _, t in self.cols]
        self._print(self._line(titles))
        if self.fmt == "markdown":
            self._print("|" + "---|" * len(titles))
        else:
            self._print("-" * len(self._line(titles)))

    def window(self, row):
        from skcalib._report.windows import cells

        if self.fmt == "json":
            self._print(json.dumps({"type": "window", **row}))
            return
        self._table_head()
        self._print(self._line(cells(row, self.cols)))

    def gap(self, gap):
        if self.fmt == "json":
            self._print(json.dumps({"type": "empty_windows", **gap}))
            return
        self._table_head()
        text = (
            f"windows {gap['first']}..{gap['last']}: no rows ({gap['count']} empty "
            f"windows, {gap['start']} to {gap['end']}; e-value {gap['e_value']:.3g})"
        )
        self._print(text if self.fmt == "text" else f"| {text} |")

    def alarm(self, alarm):
        from skcalib._report.windows import alarm_line

        if self.fmt == "json":
            self._print(json.dumps({"type": "alarm", **alarm}))
        elif self.fmt == "markdown":  # after the table
            self.alarm_row = alarm
        else:
            self._print(alarm_line({"alarm": alarm}))

    def finish(self, summary):
        from skcalib._report.windows import alarm_line

        if self.fmt == "json":
            self._print(json.dumps({"type": "summary", **summary}))
            return
        self._print("")
        if summary["alarm"] is None or self.fmt == "markdown":
            self._print(alarm_line(summary))
        self._print(
            f"end: {summary['n_samples']} rows in {summary['n_looks']} looks; "
            f"e-value {summary['e_value']:.3g}, anytime-valid p-value "
            f"{summary['p_value']:.3g}"
        )
