"""``skcalib report``: how miscalibrated is my model, and which calibrator fixes
it best? Also ``python -m skcalib`` (the report on built-in data)."""

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

__all__ = ["main"]

_COLUMNS = [
    ("method", "method", "{}"),
    ("ece", "ECE", "{:.4f}"),
    ("ece_ci", "ECE 95% CI", "{}"),
    ("mce", "MCE", "{:.4f}"),
    ("classwise_ece", "cw-ECE", "{:.4f}"),
    ("brier", "Brier", "{:.4f}"),
    ("nll", "NLL", "{:.4f}"),
    ("accuracy", "accuracy", "{:.4f}"),
    ("fit_seconds", "fit s", "{:.3f}"),
]


class _Progress:
    """A one-line progress bar on stderr, drawn only after one second and only
    on a terminal."""

    def __init__(self, total, enabled):
        self.total, self.done, self.enabled = total, 0, enabled
        self.start = time.perf_counter()
        self.drawn = False

    def __call__(self):
        self.done += 1
        if not self.enabled or time.perf_counter() - self.start < 1.0:
            return
        width = 30
        filled = int(width * self.done / max(self.total, 1))
        sys.stderr.write(
            f"\r[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} folds"
        )
        sys.stderr.flush()
        self.drawn = True

    def close(self):
        if self.drawn:
            sys.stderr.write("\n")
            sys.stderr.flush()


def _cells(row):
    out = []
    for key, _, fmt in _COLUMNS:
        if key == "ece_ci":
            out.append(f"[{row['ece_low']:.4f}, {row['ece_high']:.4f}]")
        elif key == "method":
            out.append(row["method"] + (" *" if row.get("best") else ""))
        else:
            out.append(fmt.format(row[key]))
    return out


def format_table(rows, fmt):
    """The report table as text, markdown or JSON."""
    if fmt == "json":
        return json.dumps(rows, indent=2)
    header = [title for _, title, _ in _COLUMNS]
    body = [_cells(r) for r in rows]
    if fmt == "markdown":
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(r) + " |" for r in body]
        return "\n".join(lines)
    widths = [max(len(h), *(len(r[i]) for r in body)) for i, h in enumerate(header)]
    line = "  ".join(
        h.ljust(w) if i == 0 else h.rjust(w)
        for i, (h, w) in enumerate(zip(header, widths, strict=True))
    )
    lines = [line, "-" * len(line)]
    for r in body:
        lines.append(
            "  ".join(
                c.ljust(w) if i == 0 else c.rjust(w)
                for i, (c, w) in enumerate(zip(r, widths, strict=True))
            )
        )
    lines.append("* lowest out-of-fold NLL")
    return "\n".join(lines)


def _parser(methods):
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
        help="CSV: comma-separated score columns "
        "(names or indices); default: all but the label column",
    )
    rep.add_argument(
        "--score-type",
        choices=["auto", "logit", "probability"],
        default=None,
        help="what the scores are (default: from the NPZ key name, else auto)",
    )
    rep.add_argument(
        "--methods",
        default=",".join(methods),
        help=f"comma-separated subset of {','.join(methods)}",
    )
    rep.add_argument("--cv", type=int, default=5, help="folds (default 5)")
    rep.add_argument("--random-state", type=int, default=0)
    rep.add_argument("--format", choices=["text", "markdown", "json"], default="text")
    rep.add_argument(
        "--out",
        help="directory for reliability.png, report.json and best_calibrator.pkl",
    )
    rep.add_argument("--quiet", action="store_true", help="no progress bar")
    return parser


def _load(args):
    from skcalib._report import DataError, read_csv, read_npz

    if args.path is None:
        from skcalib.datasets import load_predictions

        data = load_predictions(args.dataset)
        return data.labels, data.probs, "probability", f"built-in:{args.dataset}"
    path = Path(args.path)
    if not path.exists():
        raise DataError(f"{path}: no such file")
    if path.suffix.lower() == ".npz":
        labels, scores, kind = read_npz(path)
    else:
        labels, scores, kind = read_csv(path, args.label_col, args.score_cols)
        if scores.shape[1] == 1:
            scores = scores[:, 0]
    return labels, scores, kind, str(path)


def report(args, parser):
    from skcalib._report import (
        DataError,
        available_methods,
        check_data,
        run_report,
    )

    methods = available_methods()
    chosen = [m.strip() for m in args.methods.split(",") if m.strip()]
    unknown = [m for m in chosen if m not in methods]
    if unknown or not chosen:
        parser.error(f"--methods: unknown {unknown}; choose from {list(methods)}")
    if args.cv < 2:
        parser.error("--cv must be at least 2")
    try:
        labels, scores, kind, source = _load(args)
        score_type = args.score_type or kind or "auto"
        check_data(labels, scores, source, args.cv)
        progress = _Progress(
            args.cv * len(chosen), enabled=not args.quiet and sys.stderr.isatty()
        )
        try:
            rows, probas = run_report(
                scores,
                labels,
                methods={m: methods[m] for m in chosen},
                score_type=score_type,
                cv=args.cv,
                random_state=args.random_state,
                progress=progress,
            )
        finally:
            progress.close()
        _print_report(
            args,
            rows,
            probas,
            scores,
            labels,
            score_type,
            source,
            {m: methods[m] for m in chosen},
        )
    except DataError as exc:
        print(f"skcalib report: error: {exc}", file=sys.stderr)
        return 1
    except ValueError as exc:  # raised by the calibrators' own input checks
        print(f"skcalib report: error: {source}: {exc}", file=sys.stderr)
        return 1
    return 0


def _print_report(args, rows, probas, scores, labels, score_type, source, methods):
    from skcalib._report import write_outputs

    meta = {
        "source": source,
        "n_samples": int(labels.shape[0]),
        "n_classes": int(np.unique(labels).size),
        "score_type": score_type,
        "cv": args.cv,
        "random_state": args.random_state,
    }
    if args.format == "text":
        print(
            f"{source}: {meta['n_samples']} rows, {meta['n_classes']} classes, "
            f"{args.cv}-fold cross-fitted calibrators (score type {score_type})"
        )
    print(format_table(rows, args.format))
    if args.out:
        written, note = write_outputs(
            args.out,
            rows,
            probas,
            scores,
            labels,
            score_type,
            methods,
            meta,
        )
        if note:
            print(f"skcalib report: note: {note}", file=sys.stderr)
        if args.format != "json":
            for path in written:
                print(f"wrote {path}")


def main(argv=None):
    """Entry point of the ``skcalib`` command and of ``python -m skcalib``."""
    from skcalib._report import available_methods

    parser = _parser(available_methods())
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0].startswith("-") and argv[0] not in ("-h", "--help"):
        argv = ["report", *argv]
    args = parser.parse_args(argv)
    if args.command != "report":
        parser.print_help()
        return 2
    return report(args, parser)
