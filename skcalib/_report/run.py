"""The work behind ``skcalib report``: cross-fit calibrators on predictions
and score them out of fold. No printing here (see ``skcalib._report.cli``); reading
is in ``skcalib._report.io``, writing in ``skcalib._report.out``."""

import re
import time

import numpy as np
from sklearn.base import clone
from sklearn.model_selection import StratifiedKFold

from skcalib._base import _skcalib_calibrators
from skcalib._core.scores import resolve_score_type
from skcalib._report.io import DataError
from skcalib.calibration import IdentityCalibrator
from skcalib.conformal import ConformalClassifier
from skcalib.metrics import (
    brier_score,
    calibration_error_interval,
    classwise_calibration_error,
    expected_calibration_error,
    maximum_calibration_error,
    negative_log_likelihood,
)

__all__ = []

#: The ECE interval of the table: what it is, for the header, JSON and legend.
N_RESAMPLES = 200
INTERVAL = (
    f"95% interval of the binned ECE by inversion of a bootstrap test "
    f"({N_RESAMPLES} resamples; lower end 0 when calibration is not rejected)"
)
#: Rows per ``predict_proba`` call of the cross-fitting.
PREDICT_BLOCK = 1 << 16
#: Methods left out of the report, and why.
SKIPPED_METHODS = {
    "identity": "it is the 'uncalibrated' row",
    "prior_shift_adapter": "it adapts probabilities to the class priors of "
    "target data, and the report has none (without them it returns its input)",
}
#: Methods run only by ``--methods all`` (or by name), and why: each fit
#: cross-validates inside every fold of the report. Fit times of the 5-fold
#: report on the built-in CIFAR-10 predictions (10 000 rows, 10 classes; CPU
#: seconds, 2-core machine): auto 6.1, dirichlet_cv 13.5,
#: matrix_scaling_cv 14.4; every other method 0.8 or less (11 of them 3.0
#: together).
SLOW_METHODS = {
    "auto": "cross-validates each of its candidate calibrators",
    "dirichlet_cv": "cross-validates its regularisation grid",
    "matrix_scaling_cv": "cross-validates its regularisation grid",
}


# ------------------------------------------------------------------ methods
def _snake(stem):
    """``HistogramBinning`` -> ``histogram_binning``; ``DirichletCV`` ->
    ``dirichlet_cv`` (an acronym stays one word)."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", stem).lower()


def _method_name(cls):
    """The command-line name of a calibrator class: its name without
    ``Calibrator``, in snake case (``DirichletCalibratorCV`` ->
    ``dirichlet_cv``)."""
    return _snake(cls.__name__.replace("Calibrator", ""))


def _legacy_name(cls):
    """The name skcalib 0.x gave ``cls`` (``dirichlet_calibrator_c_v``), for
    the message that gives the new one."""
    stem = cls.__name__.removesuffix("Calibrator")
    return re.sub(r"(?<!^)(?=[A-Z])", "_", stem).lower()


def _reported_classes():
    """The calibrators of probabilities: not the makers of prediction sets
    (:class:`~skcalib.ConformalClassifier`, the shift conformal ones)."""
    return [
        cls
        for cls in _skcalib_calibrators()
        if not issubclass(cls, ConformalClassifier) and not hasattr(cls, "predict_set")
    ]


def available_methods():
    """Every public calibrator of skcalib by command-line name (what
    ``--methods all`` runs), except those of :data:`SKIPPED_METHODS` and
    :class:`~skcalib.ConformalClassifier` (prediction sets, not calibrated
    probabilities)."""
    methods = {_method_name(cls): cls for cls in _reported_classes()}
    return {k: v for k, v in sorted(methods.items()) if k not in SKIPPED_METHODS}


def default_methods():
    """The methods of a report without ``--methods``: every available one
    except those of :data:`SLOW_METHODS`."""
    return {k: v for k, v in available_methods().items() if k not in SLOW_METHODS}


def renamed_methods():
    """``{old name: new name}`` of the methods whose command-line name
    changed (``dirichlet_calibrator_c_v`` -> ``dirichlet_cv``)."""
    return {
        _legacy_name(cls): _method_name(cls)
        for cls in _reported_classes()
        if _legacy_name(cls) != _method_name(cls)
    }


def make_calibrator(method_cls, score_type, random_state):
    """The calibrator with every ``random_state`` it has (its own, nested
    ones) set to ``random_state``, so that a run is reproducible."""
    cal = method_cls(score_type=score_type)
    seeds = {
        k: random_state
        for k in cal.get_params(deep=True)
        if k == "random_state" or k.endswith("__random_state")
    }
    return cal.set_params(**seeds) if seeds else cal


# --------------------------------------------------------------- the data
_PY_SCORE_TYPE = re.compile(r"""score_type=(['"])(auto|logit|probability)\1""")


def cli_spelling(message):
    """A library message in the spelling of the command line:
    ``score_type='logit'`` -> ``--score-type logit``."""
    return _PY_SCORE_TYPE.sub(r"--score-type \2", str(message))


def prepare_scores(pred, score_type):
    """Resolve the score type (the "no silent guesses" rule) and orient a
    single binary column towards the greater label, as calibrators read it.

    Returns the scores to calibrate and the :class:`ScoreTypeDecision`.
    """
    try:
        decision = resolve_score_type(
            pred.scores, score_type, name="the scores", warn_logit=False
        )
    except ValueError as exc:
        raise DataError(f"{pred.source}: {cli_spelling(exc)}") from None
    scores = decision.scores
    if scores.ndim == 1 and pred.positive is not None:
        if pred.positive == pred.classes[0].item():
            # the column is P(smaller label): calibrators read 1-D binary
            # scores as the score of classes_[1]
            scores = 1.0 - scores if decision.score_type == "probability" else -scores
    return scores, decision


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
        raise DataError(f"{path}: only one class ({classes[0].item()!r}) in the labels")
    n_cols = 1 if scores.ndim == 1 else scores.shape[1]
    if not (n_cols == classes.size or (classes.size == 2 and n_cols == 1)):
        raise DataError(
            f"{path}: {n_cols} score columns but {classes.size} classes "
            f"{classes.tolist()}; give one column per class or, for two classes, "
            "one column for the positive class"
        )
    if counts.min() < cv:
        small = classes[np.argmin(counts)].item()
        raise DataError(
            f"{path}: class {small!r} has {counts.min()} rows, fewer than the "
            f"{cv} folds of --cv {cv}"
        )
    return classes


# --------------------------------------------------------------- evaluation
def uncalibrated_proba(scores, y, score_type):
    """The model's own probabilities as an (n, K) array: those of
    :class:`~skcalib.IdentityCalibrator` (the reference of every method).

    Logits are read in float64 (the softmax of float32 logits would carry
    float32 round-off into the metrics); probabilities keep their dtype, so
    that float32 values on bin edges stay in their bins (design notes,
    "Float32 scores are compared with float32 edges").
    """
    if score_type == "logit":
        scores = scores.astype(np.float64, copy=False)
    identity = IdentityCalibrator(score_type=score_type).fit(scores, y)
    return identity.predict_proba(scores)


def score_row(name, y, proba, classes, fit_seconds, random_state):
    """All metrics of one method from out-of-fold probabilities."""
    labels = classes
    # The default interval (test inversion) covers the true binned error at
    # the nominal level, also near 0 (tests/metrics/test_interval.py).
    interval = calibration_error_interval(
        y, proba, labels=labels, random_state=random_state, n_resamples=N_RESAMPLES
    )
    pred = np.argmax(proba, axis=1)
    correct = classes[pred] == y
    return {
        "method": name,
        "ece": expected_calibration_error(y, proba, labels=labels),
        "ece_low": max(0.0, float(interval.low)),
        "ece_high": float(interval.high),
        "mce": maximum_calibration_error(y, proba, labels=labels),
        "classwise_ece": classwise_calibration_error(y, proba, labels=labels),
        "brier": brier_score(y, proba, labels=labels),
        "nll": negative_log_likelihood(y, proba, labels=labels),
        "accuracy": float(np.mean(correct)),
        "fit_seconds": fit_seconds,
    }


def _chosen(cal):
    """The candidate an AutoCalibrator-like calibrator chose, or None."""
    results = getattr(cal, "cv_results_", None)
    if isinstance(results, dict) and "candidate" in results:
        return str(results["candidate"][cal.best_index_])
    return None


def cross_fit(method_cls, scores, y, score_type, cv, random_state):
    """Out-of-fold calibrated probabilities, the total fit time and what each
    fold's calibrator chose (for ``auto``; else an empty list).

    Every fold is fitted before any is predicted, so the out-of-fold array
    does not exist while a calibrator fits (lower peak memory); calibrators
    map each row on its own, so predicting in blocks of rows bounds their
    temporaries without changing a number.
    """
    folds = StratifiedKFold(n_splits=cv, shuffle=True, random_state=random_state)
    seconds = 0.0
    fitted = []
    base = make_calibrator(method_cls, score_type, random_state)
    for train, test in folds.split(np.zeros(y.shape[0]), y):
        cal = clone(base)
        t0 = time.perf_counter()
        cal.fit(scores[train], y[train])
        seconds += time.perf_counter() - t0
        fitted.append((cal, test))
        del train
    oof = None
    for cal, test in fitted:
        for start in range(0, test.size, PREDICT_BLOCK):
            rows = test[start : start + PREDICT_BLOCK]
            part = cal.predict_proba(scores[rows])
            if oof is None:
                oof = np.empty((scores.shape[0], part.shape[1]), dtype=part.dtype)
            oof[rows] = part
    chosen = [name for cal, _ in fitted if (name := _chosen(cal)) is not None]
    return oof, seconds, chosen


#: Out-of-fold probabilities kept for the diagrams: the best few methods.
N_KEPT = 2


def run_report(scores, y, *, methods, score_type, cv=5, random_state=0, progress=None):
    """Rows of the report (uncalibrated first, then sorted by NLL) and the
    out-of-fold probabilities of the :data:`N_KEPT` best methods (those of
    the model itself are :func:`uncalibrated_proba`'s, computed again where a
    diagram needs them: not held while the calibrators fit, for peak memory).
    ``score_type`` is resolved (``"logit"`` or ``"probability"``).

    ``progress(name, seconds)``, if given, is called after each method with
    its name and its fit time summed over the folds."""
    classes = np.unique(y)
    proba = uncalibrated_proba(scores, y, score_type)
    rows = [score_row("uncalibrated", y, proba, classes, 0.0, random_state)]
    rows[0]["calibrator"] = None
    del proba
    probas = {}
    for name, cls in methods.items():
        oof, seconds, chosen = cross_fit(cls, scores, y, score_type, cv, random_state)
        probas[name] = oof
        row = score_row(name, y, oof, classes, seconds, random_state)
        row["calibrator"] = cls.__name__
        if chosen:
            row["chosen"] = chosen
        rows.append(row)
        if progress is not None:
            progress(name, seconds)
        del oof
        # keep the probabilities of the N_KEPT best methods only (memory)
        kept = sorted(rows[1:], key=lambda r: r["nll"])[:N_KEPT]
        for r in rows[1:]:
            if r not in kept:
                probas.pop(r["method"], None)
    ranked = sorted(rows[1:], key=lambda r: r["nll"])
    best = min(rows, key=lambda r: r["nll"])
    for r in rows:
        r["best"] = r is best
    return [rows[0], *ranked], probas


def describe_choice(chosen):
    """``["temperature", "temperature"]`` -> ``"temperature (2/2 folds)"``."""
    names, counts = np.unique(np.asarray(chosen), return_counts=True)
    order = np.argsort(-counts, kind="stable")
    return ", ".join(f"{names[i]} ({counts[i]}/{len(chosen)} folds)" for i in order)


def fit_best(method_cls, scores, y, score_type, random_state):
    """The best method refitted on every row (the saved calibrator)."""
    return make_calibrator(method_cls, score_type, random_state).fit(scores, y)


def recommendation(rows):
    """The recommendation and why, in one sentence."""
    unc = rows[0]
    best = next(r for r in rows if r.get("best"))
    if best is unc:
        second = rows[1]["method"] if len(rows) > 1 else None
        tail = f" (the best calibrator, {second}, did worse)" if second else ""
        return (
            "Keep the model's own probabilities: no calibrator lowered the "
            f"out-of-fold NLL ({unc['nll']:.4f}){tail}."
        )
    name = best["method"]
    if best.get("chosen"):
        name += f" (chose {describe_choice(best['chosen'])})"
    return (
        f"Use {name}: lowest out-of-fold NLL, {best['nll']:.4f} against "
        f"{unc['nll']:.4f} uncalibrated; ECE {unc['ece']:.4f} -> "
        f"{best['ece']:.4f}, accuracy {unc['accuracy']:.4f} -> "
        f"{best['accuracy']:.4f}."
    )
