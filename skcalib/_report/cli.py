"""``skcalib report``: how miscalibrated is my model, and which calibrator fixes
it best? Also ``python -m skcalib`` (the report on built-in data), and
``skcalib monitor`` (:mod:`skcalib._report.monitor_cli`).

Exit status: 0 success; 1 a problem with the input data or with what they do
not decide (the message names the option that decides it); 2 a usage error
(unknown option, method or value); 3 an output that cannot be written safely
(``--out``, ``--html``). Errors are one line on stderr; ``--debug`` shows the
traceback.
"""

import argparse
import json
import pickle
import sys
import time
from pathlib import Path

import numpy as np

__all__ = ["main"]

EXIT_DATA, EXIT_USAGE, EXIT_OUTPUT = 1, 2, 3

_COLUMNS = [
    ("method", "method"),
    ("ece", "ECE"),
    ("ece_ci", "ECE 95% boot. CI"),
    ("mce", "MCE"),
    ("classwise_ece", "cw-ECE"),
    ("brier", "Brier"),
    ("nll", "NLL"),
    ("accuracy", "accuracy"),
    ("fit_seconds", "fit s"),
]

LEGEND = [
    "method: a skcalib calibrator by its --methods name (temperature: "
    "skcalib.TemperatureCalibrator, dirichlet_cv: skcalib.DirichletCalibratorCV); "
    "uncalibrated: the model's own probabilities; rows sorted by NLL, * the lowest",
    "ECE: confidence (top-1) expected calibration error, 15 equal-width bins "
    "(the plug-in value, biased upwards for small bins)",
    "ECE 95% boot. CI: 95% interval of the true binned ECE, by inversion of a "
    "bootstrap test (200 resamples); lower end 0 when calibration is not rejected",
    "MCE: largest gap of those bins; cw-ECE: classwise ECE (mean over classes)",
    "Brier: mean squared error of the probabilities (halved for two classes); "
    "NLL: mean negative log-likelihood",
    "accuracy: share of rows whose most probable class is the label; "
    "fit s: fit time summed over the folds",
    "every calibrated score is out of fold (cross-fitted)",
]

#: Progress lines start once a run has taken this long (seconds).
PROGRESS_AFTER_S = 1.0


class _Progress:
    """One line on stderr per method fitted, flushed (also when stdout or
    stderr is a file), once the run has taken :data:`PROGRESS_AFTER_S`
    seconds; none with ``--quiet``."""

    def __init__(self, methods, cv, enabled):
        self.total, self.cv, self.done, self.enabled = len(methods), cv, 0, enabled
        self.width = max(map(len, methods), default=0)
        self.start = time.perf_counter()

    def __call__(self, name, seconds):
        self.done += 1
        elapsed = time.perf_counter() - self.start
        if not self.enabled or elapsed < PROGRESS_AFTER_S:
            return
        count = f"{self.done}/{self.total}".rjust(2 * len(str(self.total)) + 1)
        sys.stderr.write(
            f"skcalib report: {count} {name.ljust(self.width)}  {self.cv} folds "
            f"fitted in {seconds:.1f} s ({elapsed:.0f} s so far)\n"
        )
        sys.stderr.flush()


def method_label(row):
    """``auto`` says what it chose: ``auto (temperature 5/5 folds)``."""
    from skcalib._report.run import describe_choice

    if row.get("chosen"):
        return f"{row['method']}: {describe_choice(row['chosen'])}"
    return row["method"]


def cells(row):
    """The table cells of one row, as strings."""
    out = []
    for key, _ in _COLUMNS:
        if key == "ece_ci":
            out.append(f"[{row['ece_low']:.4f}, {row['ece_high']:.4f}]")
        elif key == "method":
            out.append(method_label(row) + (" *" if row.get("best") else ""))
        elif key == "fit_seconds":
            out.append(f"{row[key]:.3f}")
        else:
            out.append(f"{row[key]:.4f}")
    return out


def format_table(rows, fmt, report=None):
    """The report table as text or markdown; ``"json"``: the whole report
    (``report``, the object written to report.json) or the rows."""
    if fmt == "json":
        return json.dumps(rows if report is None else report, indent=2)
    header = [title for _, title in _COLUMNS]
    body = [cells(r) for r in rows]
    if fmt == "markdown":
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(r) + " |" for r in body]
        return "\n".join(lines)
    widths = [max(len(h), *(len(r[i]) for r in body)) for i, h in enumerate(header)]

    def line(items):
        return "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(items, widths, strict=True))
        )

    head = line(header)
    return "\n".join([head, "-" * len(head), *map(line, body)])


def _parser(methods, default):
    parser = argparse.ArgumentParser(
        prog="skcalib",
        description="Measure the calibration of a model's predictions and compare "
        "calibrators by cross-fitting them on those predictions.",
    )
    sub = parser.add_subparsers(dest="command")
    rep = sub.add_parser(
        "report",
        help="report on a predictions file (CSV or NPZ) or on built-in data",
        description="Cross-fit every calibrator on the predictions (each score is "
        "computed out of fold) and print ECE (with a bootstrap 95% interval), MCE, "
        "classwise ECE, Brier, NLL, accuracy and fit time, sorted by NLL.",
        epilog="CSV score columns are matched to classes by name: '<label>', "
        "'p_<label>', 'p<label>', 'proba_<label>', 'prob_<label>' (any order); "
        "other columns are ignored and listed. Exit status: 0 ok, 1 data error, "
        "2 usage error, 3 output error.",
    )
    rep.add_argument(
        "path",
        nargs="?",
        help="CSV (label column + score columns) or "
        "NPZ (labels + probs/logits). Default: built-in data.",
    )
    rep.add_argument(
        "--dataset",
        default="cifar10_wideresnet",
        help="built-in set used when no PATH is given "
        "(see skcalib.datasets.list_datasets())",
    )
    rep.add_argument("--label-col", help="CSV: label column (name or 0-based index)")
    rep.add_argument(
        "--score-cols",
        help="CSV: comma-separated score columns (names or indices); default: "
        "the columns named after the classes",
    )
    rep.add_argument(
        "--classes",
        help="CSV: comma-separated class of each score column, in column order "
        "(when the column names do not say)",
    )
    rep.add_argument(
        "--positive-label",
        help="CSV with one score column for two classes: the class it scores "
        "(default: its name if it names a class, else the greater label)",
    )
    rep.add_argument("--encoding", help="CSV text encoding (default UTF-8)")
    rep.add_argument(
        "--score-type",
        choices=["auto", "logit", "probability"],
        default=None,
        help="what the scores are (default: from the NPZ key name, else auto)",
    )
    slow = [m for m in methods if m not in default]
    rep.add_argument(
        "--methods",
        default=None,
        help=f"comma-separated calibrators, or 'all' for every one; default: "
        f"{','.join(default)}; 'all' adds the slower {','.join(slow)} (each "
        "cross-validates inside every fold)",
    )
    rep.add_argument("--cv", type=int, default=5, help="folds (default 5)")
    rep.add_argument(
        "--random-state",
        type=int,
        default=0,
        help="seed of the folds, the bootstrap and the calibrators (default 0)",
    )
    from skcalib._report.extras import add_options
    from skcalib._report.monitor_cli import add_monitor_parser

    add_options(rep)
    _add_output_options(rep)
    add_monitor_parser(sub)
    return parser


def _add_output_options(rep):
    """What the report writes and prints, and where."""
    rep.add_argument("--format", choices=["text", "markdown", "json"], default="text")
    rep.add_argument(
        "--out",
        help="folder for report.json, reliability.png, best_calibrator.pkl and "
        "manifest.json (this run's files and their SHA-256)",
    )
    rep.add_argument("--html", help="write a self-contained HTML report to this file")
    rep.add_argument(
        "--force",
        action="store_true",
        help="replace the outputs of an earlier run (never through a symlink)",
    )
    rep.add_argument(
        "--quiet",
        action="store_true",
        help="no progress lines on stderr (one per method, once a run takes "
        f"{PROGRESS_AFTER_S:g} s)",
    )
    rep.add_argument("--debug", action="store_true", help="tracebacks on errors")


def _load(args):
    from skcalib._report.extras import read_extra
    from skcalib._report.io import DataError, Predictions, ReadOptions, read_predictions

    extra = read_extra(args)
    if args.path is None:
        from skcalib.datasets import list_datasets, load_predictions

        if args.dataset not in list_datasets():
            raise DataError(
                f"--dataset: unknown built-in data set {args.dataset!r}; choose "
                f"one of {list_datasets()}"
            )
        data = load_predictions(args.dataset)
        classes = np.unique(data.labels)
        return Predictions(
            data.labels,
            data.probs,
            classes,
            f"built-in:{args.dataset}",
            "probability",
            notes=["columns in sorted class order"],
            kind_reason="built-in probabilities",
        )
    options = ReadOptions(
        label_col=args.label_col,
        score_cols=args.score_cols,
        classes=args.classes,
        positive_label=args.positive_label,
        encoding=args.encoding,
        extra=extra,
    )
    return read_predictions(Path(args.path), options)


def _chosen_methods(args, parser, methods):
    from skcalib._report.run import SKIPPED_METHODS, default_methods, renamed_methods

    if args.methods is None:
        chosen = list(default_methods())
    else:
        chosen = [m.strip() for m in args.methods.split(",") if m.strip()]
    if "all" in chosen:
        chosen = list(methods)
    skipped = [m for m in chosen if m in SKIPPED_METHODS]
    if skipped:
        parser.error(
            f"--methods: {skipped[0]!r} is not reported: {SKIPPED_METHODS[skipped[0]]}"
        )
    renamed = {m: new for m in chosen if (new := renamed_methods().get(m))}
    if renamed:
        old, new = next(iter(renamed.items()))
        parser.error(f"--methods: {old!r} is now called {new!r}")
    unknown = [m for m in chosen if m not in methods]
    if unknown or not chosen:
        parser.error(
            f"--methods: unknown {unknown}; choose from {list(methods)} or 'all'"
        )
    if args.cv < 2:
        parser.error("--cv must be at least 2")
    return {m: methods[m] for m in chosen}


def report(args, parser):
    """Run the report; return the exit status."""
    from skcalib._report.extras import check_options
    from skcalib._report.run import available_methods

    methods = _chosen_methods(args, parser, available_methods())
    check_options(args, parser)
    if args.debug:
        return _report(args, methods)
    from skcalib._report.io import DataError
    from skcalib._report.out import OutputError

    try:
        return _report(args, methods)
    except DataError as exc:
        return _fail(exc, EXIT_DATA)
    except OutputError as exc:
        return _fail(exc, EXIT_OUTPUT)
    except ValueError as exc:  # raised by the calibrators' own input checks
        from skcalib._report.run import cli_spelling

        source = args.path or f"built-in:{args.dataset}"
        return _fail(f"{source}: {cli_spelling(exc)}", EXIT_DATA)
    except KeyboardInterrupt:
        return _fail("interrupted", 130)


def _fail(message, code):
    text = " ".join(str(message).split())  # one line
    print(f"skcalib report: error: {text}", file=sys.stderr)
    return code


def _report(args, methods):
    from skcalib._report.out import check_outputs
    from skcalib._report.run import check_data, prepare_scores, run_report

    # every output is checked before the work (a clash found after minutes
    # of fitting loses them); writing checks again
    check_outputs(args.out, args.html, args.force)
    pred = _load(args)
    scores, decision = prepare_scores(pred, args.score_type or pred.kind or "auto")
    pred.scores = scores  # the file's copy can go (renormalised rows: a copy)
    check_data(pred.labels, scores, pred.source, args.cv)
    from skcalib._report.extras import compute

    sections = compute(args, pred, scores, decision.score_type)  # before the fits
    progress = _Progress(list(methods), args.cv, enabled=not args.quiet)
    rows, probas = run_report(
        scores,
        pred.labels,
        methods=methods,
        score_type=decision.score_type,
        cv=args.cv,
        random_state=args.random_state,
        progress=progress,
    )
    meta = {**_meta(args, pred, decision, methods), **sections}
    _print_report(args, rows, meta)
    _write(args, rows, probas, scores, pred, decision, methods, meta)
    return 0


def _meta(args, pred, decision, methods):
    from skcalib._report.run import INTERVAL, SLOW_METHODS
    from skcalib._version import __version__

    not_run = [m for m in SLOW_METHODS if m not in methods]

    return {
        "source": pred.source,
        "n_samples": int(pred.labels.shape[0]),
        "n_classes": int(pred.classes.size),
        "classes": pred.classes.tolist(),
        "class_columns": {str(k): v for k, v in pred.columns.items()},
        "positive_label": pred.positive,
        "score_type": decision.score_type,
        "score_type_reason": _reason(args, pred, decision),
        "n_renormalized_rows": int(decision.n_renormalized),
        "cv": args.cv,
        "random_state": args.random_state,
        "methods": list(methods),
        "slow_methods_not_run": not_run if args.methods is None else [],
        "ece_interval": INTERVAL,
        "notes": list(pred.notes),
        "legend": LEGEND,
        "skcalib_version": __version__,
    }


def _reason(args, pred, decision):
    if args.score_type is None and pred.kind is not None and pred.kind_reason:
        reason = decision.reason.replace(
            "score_type='probability' was given", "checked"
        ).replace("score_type='logit' was given", "used as given")
        return f"{pred.kind_reason}; {reason}"
    return decision.reason


def _header(meta):
    n = len(meta["methods"])
    lines = [
        f"{meta['source']}: {meta['n_samples']} rows, {meta['n_classes']} classes",
        f"score type: {meta['score_type']} ({meta['score_type_reason']})",
    ]
    mapping = [f"{k} <- {v}" for k, v in meta["class_columns"].items()]
    if mapping:
        more = f", ... ({len(mapping)} classes)" if len(mapping) > 6 else ""
        lines.append("classes <- columns: " + ", ".join(mapping[:6]) + more)
    lines += [f"note: {note}" for note in meta["notes"]]
    lines.append(
        f"fitted: {n} calibrator{'s' * (n != 1)}, cross-fitted in {meta['cv']} "
        "folds (each row is scored by a calibrator fitted on the other folds; "
        f"random state {meta['random_state']})"
    )
    if meta["slow_methods_not_run"]:
        lines.append(
            "not run (slower; --methods all runs them): "
            + ", ".join(meta["slow_methods_not_run"])
        )
    return "\n".join(lines)


def _print_report(args, rows, meta):
    from skcalib._report.run import recommendation

    meta["recommendation"] = recommendation(rows)
    if args.format == "json":
        print(format_table(rows, "json", report={**meta, "rows": rows}))
        return
    if args.format == "text":
        print(_header(meta))
        print()
    print(format_table(rows, args.format))
    print()
    print(f"recommendation: {meta['recommendation']}")
    print()
    print("columns:")
    bullet = "  " if args.format == "text" else "- "
    print("\n".join(bullet + line for line in LEGEND))
    from skcalib._report.extras import print_lines

    for line in print_lines(meta, args.format):
        print(line)


def _write(args, rows, probas, scores, pred, decision, methods, meta):
    if not (args.out or args.html):
        return
    from skcalib._report.extras import files as extra_files
    from skcalib._report.html import MATPLOTLIB_HINT, reliability_png
    from skcalib._report.out import write_run, write_single
    from skcalib._report.run import fit_best, uncalibrated_proba

    report_obj = {**meta, "rows": rows}
    best = next(r for r in rows if r.get("best"))
    calibrated = [r["method"] for r in rows[1:]]
    names = ["uncalibrated"] + ([best["method"]] if best is not rows[0] else [])
    # the model's own probabilities, for the diagrams only: dropped before the
    # best method is refitted (peak memory)
    own = uncalibrated_proba(scores, pred.labels, decision.score_type)
    probas = {"uncalibrated": own, **probas}
    del own
    png = reliability_png(
        pred.labels,
        probas,
        names,
        f"{meta['source']}\nuncalibrated vs {best['method']}",
    )
    if png is None:
        print(f"skcalib report: note: {MATPLOTLIB_HINT}", file=sys.stderr)
    page = _html(meta, rows, probas, pred, calibrated) if args.html else None
    del probas
    written = []
    if args.out:
        files = {"report.json": json.dumps(report_obj, indent=2).encode()}
        if png is not None:
            files["reliability.png"] = png
        files.update(extra_files(meta))
        if best is not rows[0]:
            cal = fit_best(
                methods[best["method"]],
                scores,
                pred.labels,
                decision.score_type,
                args.random_state,
            )
            files["best_calibrator.pkl"] = pickle.dumps(cal)
        run_meta = {
            "source": meta["source"],
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "argv": sys.argv[1:],
        }
        written += write_run(args.out, files, args.force, run_meta)
    if args.html:
        written.append(write_single(args.html, page.encode("utf-8"), args.force))
    if args.format != "json":
        for path in written:
            print(f"wrote {path}")


def _html(meta, rows, probas, pred, calibrated):
    from skcalib._report.extras import html_sections
    from skcalib._report.html import html_page, reliability_png

    ranked = [r["method"] for r in rows[1:]][:2]  # sorted by NLL
    images = []
    for name in ["uncalibrated", *ranked]:
        png = reliability_png(
            pred.labels, probas, [name], f"{name}", figsize=(5, 6), dpi=90
        )
        if png is not None:
            images.append((f"reliability: {name}", png))
    return html_page(
        meta,
        rows,
        _COLUMNS,
        lambda r: cells(r),
        LEGEND,
        meta["recommendation"],
        images,
        html_sections(meta),
    )


def main(argv=None):
    """Entry point of the ``skcalib`` command and of ``python -m skcalib``."""
    from skcalib._report.run import available_methods, default_methods

    parser = _parser(available_methods(), default_methods())
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0].startswith("-") and argv[0] not in ("-h", "--help"):
        argv = ["report", *argv]
    args = parser.parse_args(argv)
    if args.command == "monitor":
        from skcalib._report.monitor_cli import monitor

        return monitor(args, parser)
    if args.command != "report":
        parser.print_help()
        return EXIT_USAGE
    return report(args, parser)
