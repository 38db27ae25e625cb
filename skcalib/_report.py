"""The work behind ``skcalib report``: read predictions, cross-fit calibrators,
score them out of fold. No printing here (see ``skcalib._cli``)."""

import csv
import inspect
import re
import time
from pathlib import Path

import numpy as np
from sklearn.base import clone
from sklearn.model_selection import StratifiedKFold

import skcalib
from skcalib._base import BaseCalibrator
from skcalib._scores import PROBA_FLOOR, looks_like_probabilities, to_log_proba
from skcalib.metrics import (
    brier_score,
    calibration_error_interval,
    classwise_calibration_error,
    expected_calibration_error,
    maximum_calibration_error,
    negative_log_likelihood,
)

__all__ = []

#: Label and score key names understood in NPZ files (ours first, then the
#: names used by netcal, pycalib and splinecalib files).
NPZ_LABEL_KEYS = ("labels", "y", "ground_truth", "y_true", "target")
NPZ_SCORE_KEYS = {
    "probs": "probability",
    "predictions": "probability",
    "proba": "probability",
    "y_proba": "probability",
    "logits": "logit",
    "scores": None,
}
LABEL_COLUMN_NAMES = ("label", "labels", "y", "target", "class", "y_true")


class DataError(ValueError):
    """A problem with the user's data: reported in one line, exit status 1."""


# ------------------------------------------------------------------ methods
def _method_name(cls):
    """``HistogramBinningCalibrator`` -> ``histogram_binning``."""
    stem = cls.__name__.removesuffix("Calibrator")
    return re.sub(r"(?<!^)(?=[A-Z])", "_", stem).lower()


def available_methods():
    """Every public calibrator of skcalib, by command-line name."""
    methods = {}
    for name in skcalib.__all__:
        obj = getattr(skcalib, name)
        if hasattr(obj, "predict_set"):
            continue  # prediction sets (ConformalClassifier), not a calibrator
        if inspect.isclass(obj) and issubclass(obj, BaseCalibrator):
            methods[_method_name(obj)] = obj
    return dict(sorted(methods.items()))


# --------------------------------------------------------------------- input
def _is_number(text):
    try:
        float(text)
    except ValueError:
        return False
    return True


def _resolve_column(spec, header, n_cols, path, what):
    if spec.lstrip("-").isdigit():
        idx = int(spec)
        if not -n_cols <= idx < n_cols:
            raise DataError(
                f"{path}: {what} column index {idx} out of range (0..{n_cols - 1})"
            )
        return idx % n_cols
    if header is None:
        raise DataError(
            f"{path}: {what} column {spec!r} given by name but the file has no header"
        )
    if spec not in header:
        raise DataError(f"{path}: no {what} column {spec!r}; columns are {header}")
    return header.index(spec)


def read_csv(path, label_col=None, score_cols=None):
    """Labels (as strings or ints) and float scores from a CSV file."""
    with open(path, newline="") as f:
        sample = f.read(65536)
        f.seek(0)
        try:
            dialect = csv.Sniffer().sniff(sample, delimiters=",;\t ")
        except csv.Error:
            dialect = csv.excel
        rows = [r for r in csv.reader(f, dialect) if r and any(c.strip() for c in r)]
    if not rows:
        raise DataError(f"{path}: the file is empty")
    n_cols = len(rows[0])
    # A header row has a non-numeric field where the data rows have numbers.
    has_header = len(rows) > 1 and any(
        not _is_number(a) and _is_number(b)
        for a, b in zip(rows[0], rows[1], strict=False)
    )
    header = [c.strip() for c in rows[0]] if has_header else None
    data = rows[1:] if has_header else rows
    first_line = 2 if has_header else 1
    if label_col is not None:
        label_idx = _resolve_column(label_col, header, n_cols, path, "label")
    elif header is not None and any(h.lower() in LABEL_COLUMN_NAMES for h in header):
        label_idx = next(
            i for i, h in enumerate(header) if h.lower() in LABEL_COLUMN_NAMES
        )
    else:
        label_idx = 0
    if score_cols:
        score_idx = [
            _resolve_column(s.strip(), header, n_cols, path, "score")
            for s in score_cols.split(",")
        ]
    else:
        score_idx = [i for i in range(n_cols) if i != label_idx]
    if not score_idx:
        raise DataError(f"{path}: no score column besides the label column")
    labels, scores = [], np.empty((len(data), len(score_idx)), dtype=np.float64)
    for r, row in enumerate(data):
        line = first_line + r
        if len(row) != n_cols:
            raise DataError(
                f"{path}, line {line}: {len(row)} fields, expected {n_cols}"
            )
        labels.append(row[label_idx].strip())
        for j, c in enumerate(score_idx):
            text = row[c].strip()
            try:
                value = float(text)
            except ValueError:
                name = header[c] if header else c
                raise DataError(
                    f"{path}, line {line}, column {name!r}: non-numeric score {text!r}"
                ) from None
            if not np.isfinite(value):
                name = header[c] if header else c
                raise DataError(
                    f"{path}, line {line}, column {name!r}: score is {text}"
                )
            scores[r, j] = value
    labels = np.asarray(labels)
    if all(s.lstrip("-").isdigit() for s in labels):
        labels = labels.astype(np.int64)
    return labels, scores, None


def read_npz(path):
    """Labels, scores and the score type implied by the key names of an NPZ file."""
    try:
        data = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise DataError(f"{path}: not a readable NPZ file ({exc})") from None
    with data:
        keys = list(data.keys())
        label_key = next((k for k in NPZ_LABEL_KEYS if k in keys), None)
        score_key = next((k for k in NPZ_SCORE_KEYS if k in keys), None)
        if label_key is None or score_key is None:
            raise DataError(
                f"{path}: needs a label array ({'/'.join(NPZ_LABEL_KEYS)}) and a score "
                f"array ({'/'.join(NPZ_SCORE_KEYS)}); found {keys}"
            )
        labels, scores = data[label_key], data[score_key]
    if scores.dtype.kind not in "fiu":
        raise DataError(f"{path}: array {score_key!r} is not numeric ({scores.dtype})")
    bad = ~np.isfinite(scores.reshape(scores.shape[0], -1)).all(axis=1)
    if bad.any():
        raise DataError(
            f"{path}: array {score_key!r} row {int(np.flatnonzero(bad)[0])} "
            "is not finite"
        )
    return labels, scores, NPZ_SCORE_KEYS[score_key]


def check_data(labels, scores, path, cv):
    """Shape and class-count checks, with messages naming the file."""
    if scores.ndim not in (1, 2):
        raise DataError(f"{path}: scores must be 1-D or 2-D, got shape {scores.shape}")
    if labels.shape[0] != scores.shape[0]:
        raise DataError(
            f"{path}: {labels.shape[0]} labels but {scores.shape[0]} score rows"
        )
    classes, counts = np.unique(labels, return_counts=True)
    if classes.size < 2:
        raise DataError(f"{path}: only one class ({classes[0]!r}) in the labels")
    n_cols = 1 if scores.ndim == 1 else scores.shape[1]
    if not (n_cols == classes.size or (classes.size == 2 and n_cols == 1)):
        raise DataError(
            f"{path}: {n_cols} score columns but {classes.size} classes "
            f"{classes.tolist()}; give one column per class (sorted labels) or, "
            "for two classes, one column for the positive class"
        )
    if counts.min() < cv:
        small = classes[np.argmin(counts)]
        raise DataError(
            f"{path}: class {small!r} has {counts.min()} rows, fewer than the "
            f"{cv} folds of --cv {cv}"
        )
    return classes


# --------------------------------------------------------------- evaluation
def uncalibrated_proba(scores, score_type, n_classes):
    """The model's own probabilities as an (n, K) array."""
    if score_type == "auto":
        score_type = "probability" if looks_like_probabilities(scores) else "logit"
    if score_type == "probability" and scores.ndim == 2 and scores.shape[1] > 1:
        return scores  # as given: float32 rows are checked at float32 tolerance
    return np.exp(to_log_proba(scores.astype(np.float64), score_type, n_classes))


def score_row(name, y, proba, classes, fit_seconds, random_state):
    """All metrics of one method from out-of-fold probabilities."""
    labels = classes
    # The plug-in ECE is biased upward, so the percentile bootstrap interval
    # misses well-calibrated models; the basic (reflected) interval corrects
    # for that bias (coverage measured in tests/metrics/test_interval.py).
    interval = calibration_error_interval(
        y,
        proba,
        labels=labels,
        random_state=random_state,
        n_resamples=200,
        method="basic",
    )
    return {
        "method": name,
        "ece": expected_calibration_error(y, proba, labels=labels),
        "ece_low": max(0.0, float(interval.low)),
        "ece_high": float(interval.high),
        "mce": maximum_calibration_error(y, proba, labels=labels),
        "classwise_ece": classwise_calibration_error(y, proba, labels=labels),
        "brier": brier_score(y, proba, labels=labels),
        "nll": negative_log_likelihood(
            y, np.maximum(proba, PROBA_FLOOR), labels=labels
        ),
        "accuracy": float(np.mean(classes[np.argmax(proba, axis=1)] == y)),
        "fit_seconds": fit_seconds,
    }


def cross_fit(method_cls, scores, y, score_type, cv, random_state, progress=None):
    """Out-of-fold calibrated probabilities and the total fit time."""
    folds = StratifiedKFold(n_splits=cv, shuffle=True, random_state=random_state)
    oof = None
    seconds = 0.0
    base = method_cls(score_type=score_type)
    for train, test in folds.split(scores, y):
        cal = clone(base)
        t0 = time.perf_counter()
        cal.fit(scores[train], y[train])
        seconds += time.perf_counter() - t0
        part = cal.predict_proba(scores[test])
        if oof is None:
            oof = np.empty((scores.shape[0], part.shape[1]), dtype=part.dtype)
        oof[test] = part
        if progress is not None:
            progress()
    return oof, seconds


def run_report(
    scores, y, *, methods, score_type="auto", cv=5, random_state=0, progress=None
):
    """Rows of the report (uncalibrated first, then sorted by NLL) and the
    out-of-fold probabilities of every method."""
    classes = np.unique(y)
    probas = {"uncalibrated": uncalibrated_proba(scores, score_type, classes.size)}
    rows = [
        score_row("uncalibrated", y, probas["uncalibrated"], classes, 0.0, random_state)
    ]
    for name, cls in methods.items():
        oof, seconds = cross_fit(cls, scores, y, score_type, cv, random_state, progress)
        probas[name] = oof
        rows.append(score_row(name, y, oof, classes, seconds, random_state))
    ranked = sorted(rows[1:], key=lambda r: r["nll"])
    if ranked:
        best = min(rows, key=lambda r: r["nll"])
        for r in rows:
            r["best"] = r is best
    return [rows[0], *ranked], probas


def write_outputs(out_dir, rows, probas, scores, y, score_type, methods, meta):
    """Reliability diagram, JSON table and the best calibrator refit on all rows."""
    import json
    import pickle

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    (out / "report.json").write_text(json.dumps({**meta, "rows": rows}, indent=2))
    written.append(out / "report.json")
    best = next(r for r in rows if r.get("best"))
    if best["method"] != "uncalibrated":
        cal = methods[best["method"]](score_type=score_type).fit(scores, y)
        with open(out / "best_calibrator.pkl", "wb") as f:
            pickle.dump(cal, f)
        written.append(out / "best_calibrator.pkl")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        from skcalib.plotting import ReliabilityDisplay
    except ImportError:
        return (
            written,
            "matplotlib is not installed: no reliability diagram "
            "(pip install skcalib[plot])",
        )
    fig, ax = plt.subplots(figsize=(6, 7))
    classes = np.unique(y)
    disp = ReliabilityDisplay.from_predictions(
        y,
        probas["uncalibrated"],
        labels=classes,
        ax=ax,
        name="uncalibrated",
        show_histogram=True,
    )
    if best["method"] != "uncalibrated":
        ReliabilityDisplay.from_predictions(
            y,
            probas[best["method"]],
            labels=classes,
            ax=disp.ax_,
            name=f"{best['method']} (out of fold)",
            show_histogram=True,
        )
    disp.ax_.set_title(f"{meta['source']}: uncalibrated vs {best['method']}")
    disp.figure_.savefig(out / "reliability.png", dpi=120, bbox_inches="tight")
    plt.close(disp.figure_)
    written.append(out / "reliability.png")
    return written, None
