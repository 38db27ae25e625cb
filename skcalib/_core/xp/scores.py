"""Raw scores of an array-API namespace, validated and derived on the device.

The counterpart of :mod:`skcalib._core.scores` for calibrators that compute
in the input's namespace (:attr:`BaseCalibrator._array_api_native`). The
rules are the same and so are the messages: whenever the input is invalid
(NaN, a row that is not a probability, ...), the scores are moved to the
host once and the numpy check raises its own error, so every message names
the offending row and value exactly as for numpy input. Valid input is only
summarised on the device (its range, its worst row sum): a handful of
scalars cross to the host.
"""

import math

import numpy as np

from skcalib._core.score_check import check_fitted_score_type
from skcalib._core.scores import (
    PROBA_FLOOR,
    finite_range,
    resolve_score_type,
    rounding_tolerance,
    sum_tolerance,
)
from skcalib._core.xp import to_numpy

__all__ = []  # private module


def _np_dtype(ns, dtype):
    return np.float64 if dtype == ns.xp.float64 else np.float32


def as_compute_scores(ns, X, *, name="X"):
    """``X`` as finite 1-D or 2-D floats in their compute dtype, with their
    ``(min, max)``; NaN/inf raise the numpy check's error."""
    xp = ns.xp
    if X.ndim not in (1, 2):
        raise ValueError(
            f"{name} must be 1-D or 2-D scores in raw-score mode, got ndim={X.ndim}."
        )
    if X.shape[0] == 0:
        raise ValueError(f"Found array with 0 sample(s) (shape={tuple(X.shape)}).")
    dtype = ns.compute_dtype(X.dtype)
    if X.dtype != dtype:
        X = xp.astype(X, dtype)
    # NaN propagates through min and max (the standard's rule) and an
    # infinity shows in one of them: no separate isfinite pass over X
    lo, hi = (float(v) for v in to_numpy(xp.stack([xp.min(X), xp.max(X)])))
    if not (math.isfinite(lo) and math.isfinite(hi)):
        finite_range(to_numpy(X), input_name=name)  # raises numpy's message
    return X, (lo, hi)


def resolve(ns, X, requested, *, value_range, name="X", warn_logit=True):
    """``(score_type, scores, n_renormalized)`` by the rule of
    :func:`~skcalib._core.scores.resolve_score_type`, decided on the device.

    Valid probabilities and logits are decided from scalars; rounded rows
    are renormalised on the device (the rows off by more than
    :func:`sum_tolerance`, divided by their sum, as numpy does). Invalid
    rows, and ``score_type="logit"`` scores that look like probabilities
    (the warning case), go to the host once for the numpy rule's message.
    """
    xp = ns.xp
    lo, hi = value_range
    in_range = lo >= 0 and hi <= 1
    one_column = X.ndim == 1 or X.shape[1] == 1
    if requested == "logit" and not (warn_logit and in_range):
        return "logit", X, 0
    if requested != "logit" and not in_range:
        if requested == "probability":
            _host_rule(X, requested, value_range, name, warn_logit)
        return "logit", X, 0
    if one_column and requested != "logit":
        return "probability", X, 0
    if one_column:
        _host_rule(X, requested, value_range, name, warn_logit)  # warns
        return "logit", X, 0
    sums = xp.sum(xp.astype(X, ns.accumulate_dtype), axis=1)
    off = xp.abs(sums - 1.0)
    worst = float(to_numpy(xp.max(off)))
    np_dtype = _np_dtype(ns, X.dtype)
    tol = sum_tolerance(np_dtype)
    if requested == "logit":
        if worst <= tol:
            _host_rule(X, requested, value_range, name, warn_logit)  # warns
        return "logit", X, 0
    if worst <= tol:
        return "probability", X, 0
    if worst <= rounding_tolerance(X.shape[1], np_dtype):
        bad = off > tol
        n_bad = int(to_numpy(xp.sum(xp.astype(bad, xp.int64))))
        scaled = xp.astype(X / xp.astype(sums, X.dtype)[:, None], X.dtype)
        return "probability", xp.where(bad[:, None], scaled, X), n_bad
    _host_rule(X, requested, value_range, name, warn_logit)  # raises
    raise AssertionError("unreachable: the numpy rule raises")  # pragma: no cover


def reads_as_probability_rows(ns, X, value_range):
    """:func:`~skcalib._core.score_check.reads_as_probability_rows`, decided on the
    device (the range, then the worst row sum: one scalar to the host)."""
    xp = ns.xp
    lo, hi = value_range
    if X.ndim != 2 or X.shape[1] < 2 or not (lo >= 0 and hi <= 1):
        return False
    sums = xp.sum(xp.astype(X, ns.accumulate_dtype), axis=1)
    worst = float(to_numpy(xp.max(xp.abs(sums - 1.0))))
    return worst <= rounding_tolerance(X.shape[1], _np_dtype(ns, X.dtype))


def check_fitted(
    ns, X, score_type_, *, declared, fit_rows_were_probabilities, value_range, name="X"
):
    """:func:`~skcalib._core.score_check.check_fitted_score_type` for scores of a
    namespace: decided on the device; only a contradiction (the error or
    warning case) moves the scores to the host, for the numpy message."""
    lo, hi = value_range
    if score_type_ == "probability":
        contradiction = not (lo >= 0 and hi <= 1)
    else:
        contradiction = not fit_rows_were_probabilities and (
            reads_as_probability_rows(ns, X, value_range)
        )
    if contradiction:
        check_fitted_score_type(
            to_numpy(X),
            score_type_,
            declared=declared,
            fit_rows_were_probabilities=fit_rows_were_probabilities,
            value_range=value_range,
            name=name,
        )


def _host_rule(X, requested, value_range, name, warn_logit):
    resolve_score_type(
        to_numpy(X),
        requested,
        value_range=value_range,
        name=name,
        warn_logit=warn_logit,
    )


def log_softmax(xp, z):
    """Row-wise log-softmax in the dtype of ``z``."""
    out = z - xp.max(z, axis=1, keepdims=True)
    return out - xp.log(xp.sum(xp.exp(out), axis=1, keepdims=True))


def softmax(xp, z):
    """Row-wise softmax in the dtype of ``z``; rows sum to 1."""
    p = xp.exp(z - xp.max(z, axis=1, keepdims=True))
    return p / xp.sum(p, axis=1, keepdims=True)


class XpScores:
    """Validated raw scores of a namespace and what calibrators derive from
    them: the interface of :class:`~skcalib._core.scores.Scores`."""

    def __init__(self, ns, raw, score_type, n_classes):
        if raw.ndim == 2 and raw.shape[1] == 1:
            raw = raw[:, 0]
        self.ns = ns
        self.xp = ns.xp
        self.raw = raw
        self.score_type = score_type
        self.n_classes = n_classes

    @property
    def n_samples(self):
        return self.raw.shape[0]

    @property
    def dtype(self):
        return self.raw.dtype

    def _floored_log(self, p, floor=PROBA_FLOOR):
        xp = self.xp
        return xp.log(xp.clip(p, floor, None))

    def _logits(self, floor):
        xp, raw = self.xp, self.raw
        if raw.ndim == 1:
            if self.score_type == "logit":
                return xp.stack([xp.zeros_like(raw), raw], axis=1)
            return self._floored_log(xp.stack([1 - raw, raw], axis=1), floor)
        if self.score_type == "logit":
            return raw
        return self._floored_log(raw, floor)

    @property
    def logits(self):
        """As :attr:`Scores.logits <skcalib._core.scores.Scores.logits>`."""
        return self._logits(PROBA_FLOOR)

    def log_proba_floored(self, floor):
        """As :meth:`Scores.log_proba_floored
        <skcalib._core.scores.Scores.log_proba_floored>`."""
        return log_softmax(self.xp, self._logits(floor))

    @property
    def log_proba(self):
        """Normalised log-probabilities ``(n, n_classes)``."""
        return log_softmax(self.xp, self.logits)

    @property
    def proba(self):
        """Probabilities ``(n, n_classes)`` (the input itself for 2-D
        probability scores)."""
        xp, raw = self.xp, self.raw
        if self.score_type != "probability":
            return softmax(xp, self.logits)
        if raw.ndim == 1:
            return xp.stack([1 - raw, raw], axis=1)
        return raw

    @property
    def positive_log_odds(self):
        """Binary problems: log-odds of the positive class, shape (n,), in
        the accumulation dtype (float64 where the device has it)."""
        xp, raw = self.xp, self.raw
        raw = xp.astype(raw, self.ns.accumulate_dtype)
        if self.score_type == "logit":
            return raw if raw.ndim == 1 else raw[:, 1] - raw[:, 0]
        p0, p1 = (1 - raw, raw) if raw.ndim == 1 else (raw[:, 0], raw[:, 1])
        return self._floored_log(p1) - self._floored_log(p0)

    @property
    def positive_proba(self):
        """Binary problems: probability of the positive class, shape (n,)."""
        xp = self.xp
        if self.score_type == "probability":
            return self.raw if self.raw.ndim == 1 else self.raw[:, 1]
        return 1.0 / (1.0 + xp.exp(-self.positive_log_odds))
