"""The report's sections beyond the calibrators: calibration over time
(``--time-col``, ``--window``; :mod:`skcalib._report.windows`) and the
subgroup audit (``--group-col``; :mod:`skcalib._report.groups`).

The command line (:mod:`skcalib._report.cli`) calls these functions at
fixed points: options, reading, before the calibrators are fitted (a bad
time column fails in seconds, not after the fits), printing and writing.
Nothing here prints.
"""

from skcalib._report.columns import DataError

__all__ = []

#: The file of ``--out`` that holds the figure of calibration over time.
OVER_TIME_PNG = "calibration_over_time.png"


def add_options(rep):
    from skcalib._report.windows import add_window_options

    add_window_options(rep)
    rep.add_argument(
        "--group-col",
        help="column of a subgroup of each row (text or numbers; never a score "
        "column): adds a table of calibration by group",
    )


def check_options(args, parser):
    """Usage errors (exit 2), before any reading."""
    from skcalib._report.windows import check_window_options, wants_windows

    args.resolved_window = None
    if wants_windows(args):
        args.resolved_window = check_window_options(args, parser)


def read_extra(args):
    """``{option: column}`` of the columns to read besides labels and scores."""
    extra = {"--time-col": args.time_col, "--group-col": args.group_col}
    extra = {k: v for k, v in extra.items() if v is not None}
    if extra and args.path is None:
        raise DataError(
            f"{next(iter(extra))}: the built-in data have no such column; give a "
            "predictions FILE"
        )
    return extra


def compute(args, pred, scores, score_type):
    """``{"monitor": ..., "groups": ...}`` (the keys that apply) for the
    report's JSON."""
    out = {}
    if args.resolved_window is not None:
        from skcalib._report.windows import report_windows

        out["monitor"] = report_windows(
            args, args.resolved_window, pred, scores, score_type
        )
    if args.group_col is not None:
        from skcalib._report.groups import group_audit
        from skcalib._report.windows import own_proba

        proba = own_proba(scores, score_type, pred.classes.size)
        rows = group_audit(pred.labels, proba, pred.extra["--group-col"], pred.classes)
        out["groups"] = {"column": args.group_col, "rows": rows}
    return out


def print_lines(meta, fmt):
    """The sections, as lines printed after the report's own."""
    lines = []
    if "monitor" in meta:
        from skcalib._report.windows import print_lines as windows_lines

        lines += ["", *windows_lines(meta["monitor"], fmt)]
    if "groups" in meta:
        from skcalib._report.groups import print_lines as groups_lines

        lines += ["", *groups_lines(meta["groups"], fmt)]
    return lines


def over_time_png(meta, **kwargs):
    from skcalib._report.html import over_time_png as draw

    summary = meta["monitor"]
    title = f"{meta['source']}: calibration over time (window {summary['window']})"
    return draw(summary, title, **kwargs)


def files(meta):
    """``{name: bytes}`` of the files these sections add to ``--out``."""
    if "monitor" not in meta:
        return {}
    png = over_time_png(meta)
    return {} if png is None else {OVER_TIME_PNG: png}


def html_sections(meta):
    """HTML of the sections, for ``--html``."""
    from skcalib._report.html import section

    out = []
    if "monitor" in meta:
        from skcalib._report import windows

        summary = meta["monitor"]
        cols = windows.columns(summary)
        png = over_time_png(meta, figsize=(9, 6), dpi=90)
        images = [] if png is None else [("calibration over time", png)]
        out.append(
            section(
                "Calibration over time",
                summary["rows"],
                cols,
                lambda r: windows.cells(r, cols),
                [windows.alarm_line(summary), *summary["legend"]],
                images,
            )
        )
    if "groups" in meta:
        from skcalib._report import groups

        rows = meta["groups"]["rows"]
        cols = groups.columns(rows)
        out.append(
            section(
                f"Calibration by group ({meta['groups']['column']})",
                rows,
                cols,
                lambda r: groups.cells(r, cols),
                ["the model's own (uncalibrated) probabilities"],
            )
        )
    return out
