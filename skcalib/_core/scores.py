"""Score arithmetic shared by every calibrator and metric.

The only softmax / log-softmax / probability check of the package lives here,
and so does the ``score_type="auto"`` rule (:func:`resolve_score_type`).
"""

import warnings
from dataclasses import dataclass

import numpy as np
from scipy.special import expit
from sklearn.utils import assert_all_finite

from skcalib._core.accel import value_range
from skcalib._core.warn import user_stacklevel

__all__ = []  # private module

#: Probabilities are floored at this value before their log is taken, so that a
#: probability of exactly 0 gives a finite log-probability (log(1e-12) ~ -27.6).
PROBA_FLOOR = 1e-12

#: Largest error of one probability written with 4 decimals (half a unit of
#: the 4th decimal). :func:`rounding_tolerance` allows this much per column.
ROUNDING_UNIT = 5e-5


def sum_tolerance(dtype):
    """Tolerance on ``|row sum - 1|`` of *exact* probabilities of ``dtype``.

    ``sqrt(eps)``: 3.5e-4 for float32, 1.5e-8 for float64. Rows within it are
    used as given.
    """
    dtype = np.dtype(dtype) if np.dtype(dtype).kind == "f" else np.dtype(np.float64)
    return float(np.sqrt(np.finfo(dtype).eps))


def rounding_tolerance(n_columns, dtype):
    """Tolerance on ``|row sum - 1|`` of probabilities that were rounded.

    ``max(sum_tolerance(dtype), ROUNDING_UNIT * n_columns)``: each of the
    ``n_columns`` values of a row written with 4 decimals is off by at most
    ``5e-5``, so its row sum is off by at most ``5e-5 * n_columns`` (1e-4 for
    two columns, 5e-4 for ten). The same bound covers float32 softmax
    outputs cast to float64 (off by a few ``1e-8`` per row). Rows off by more
    than ``sum_tolerance`` but within this bound are probabilities that are
    renormalised; rows off by more are not probabilities.
    """
    return max(sum_tolerance(dtype), ROUNDING_UNIT * int(n_columns))


def finite_range(X, *, input_name="X", estimator_name=None):
    """``(min, max)`` of a float array, raising scikit-learn's error on NaN/inf.

    An infinity shows in the minimum or maximum and NaN propagates through
    both, so the range, which the probability checks need anyway, replaces
    ``check_array``'s own finiteness pass (pass ``ensure_all_finite=False``
    to it). The error is the one ``check_array`` raises (``"Input X
    contains NaN."``). numpy's vectorised ``min`` and ``max`` (two passes)
    are 1.5-4x faster than the one scalar pass of
    :func:`~skcalib._core.accel.value_range` (0.22 s against 0.81 s on
    1e6 x 100 float32 scores).
    """
    lo, hi = X.min(), X.max()
    if not _range_finite(lo, hi, bool(lo != lo)):
        assert_all_finite(X, input_name=input_name, estimator_name=estimator_name)
    return lo, hi


def all_finite(x):
    """Whether a float array holds no NaN or infinity (one pass, no copy)."""
    return _range_finite(*value_range(x))


def _range_finite(lo, hi, nan):
    return not nan and bool(np.isfinite(lo)) and bool(np.isfinite(hi))


@dataclass(frozen=True)
class RowSums:
    """How far the rows of 2-D probabilities are from summing to 1.

    ``rows``: indices of the rows whose float64 sum misses 1 by more than
    :func:`sum_tolerance`; ``sums``: those sums; ``tolerance``: the
    :func:`rounding_tolerance` of the array.
    """

    rows: np.ndarray
    sums: np.ndarray
    tolerance: float

    @property
    def exact(self):
        """Every row sums to 1 within :func:`sum_tolerance`."""
        return self.rows.size == 0

    @property
    def worst(self):
        """``(row, sum)`` of the row farthest from 1 (None when exact)."""
        if self.exact:
            return None
        i = int(np.argmax(np.abs(self.sums - 1.0)))
        return int(self.rows[i]), float(self.sums[i])

    @property
    def rounded(self):
        """Every row sums to 1 within the rounding tolerance."""
        return self.exact or abs(self.worst[1] - 1.0) <= self.tolerance


#: Rows per block when suspect float32 rows are summed again in float64.
_BLOCK = 1 << 16


def row_sums(proba):
    """:class:`RowSums` of 2-D ``proba`` (values in [0, 1], ``K >= 2`` columns).

    The same decision as ``proba.sum(axis=1, dtype=np.float64)``, faster for
    float32: row sums in float32 (no float64 conversion pass) are within
    ``K * eps`` of the float64 sums (for values in [0, 1]), so only the rows
    within twice that margin of the tolerance are summed again in float64.
    No BLAS call: its threads stall on a loaded machine.
    """
    k = proba.shape[1]
    tol = sum_tolerance(proba.dtype)
    rows = None
    eps = float(np.finfo(np.float32).eps)
    if proba.dtype == np.float32 and 2.0 * k * eps < tol / 4:
        suspect = np.abs(proba.sum(axis=1) - 1) > tol - 2.0 * k * eps
        rows = np.flatnonzero(suspect)
        # by blocks of rows: no copy of all the suspect rows at once
        sums = np.concatenate(
            [
                proba[rows[i : i + _BLOCK]].sum(axis=1, dtype=np.float64)
                for i in range(0, rows.size, _BLOCK)
            ]
            or [np.empty(0)]
        )
    else:
        sums = proba.sum(axis=1, dtype=np.float64)
    off = np.flatnonzero(np.abs(sums - 1.0) > tol)
    if rows is not None:
        rows = rows[off]
    else:
        rows = off
    return RowSums(
        rows=rows, sums=sums[off], tolerance=rounding_tolerance(k, proba.dtype)
    )


def renormalize_rows(proba, sums):
    """A copy of ``proba`` whose rows ``sums.rows`` are divided by their sum.

    The division is the one of ``proba / proba.sum(axis=1, keepdims=True)``
    (float64 sums), so the renormalised rows are bit for bit what a user who
    normalised them would pass; the other rows stay as given. Done by blocks
    of rows: the copy is the only ``n x K`` allocation.
    """
    out = proba.copy()
    for i in range(0, sums.rows.size, _BLOCK):
        rows = sums.rows[i : i + _BLOCK]
        out[rows] = proba[rows] / sums.sums[i : i + _BLOCK, None]
    return out


def _range_error(proba, name):
    bad = np.flatnonzero(
        ((proba < 0) | (proba > 1)).reshape(proba.shape[0], -1).any(axis=1)
    )[0]
    return ValueError(
        f"{name} must hold probabilities in [0, 1]; row {int(bad)} has "
        f"{proba[bad].tolist()}."
    )


def check_probabilities(proba, name="y_proba", value_range=None, hint=None):
    """Raise ``ValueError`` unless ``proba`` holds valid probabilities.

    1-D: values in ``[0, 1]``. 2-D: values in ``[0, 1]`` and rows summing to 1
    within :func:`rounding_tolerance` (probabilities written with 4 decimals
    pass; they are used as given, not renormalised). The message names the
    row farthest from summing to 1 and its sum, then ``hint`` (what the
    caller can pass instead). ``value_range``: ``(min, max)`` of ``proba``
    when the caller has it.
    """
    if proba.size == 0:
        return
    lo, hi = (proba.min(), proba.max()) if value_range is None else value_range
    if lo < 0 or hi > 1:
        raise _range_error(proba, name)
    if proba.ndim == 2 and proba.shape[1] > 1:
        sums = row_sums(proba)
        if not sums.rounded:
            raise _sum_error(name, sums, proba.shape[1], hint)


def _sum_error(name, sums, n_columns, hint):
    row, total = sums.worst
    hint = (
        " Normalise the rows (one-vs-rest sigmoid outputs do not sum to 1), or "
        "apply a softmax to logits first."
        if hint is None
        else " " + hint
    )
    return ValueError(
        f"{name} rows must sum to 1 (tolerance {sums.tolerance:.1e} for "
        f"{n_columns} columns, which covers probabilities rounded to 4 "
        f"decimals); row {row} sums to {total:.6g} (the farthest from 1 of "
        f"{sums.rows.size} row(s) that miss it).{hint}"
    )


@dataclass(frozen=True)
class ScoreTypeDecision:
    """What :func:`resolve_score_type` decided about raw scores.

    ``score_type``: ``"logit"`` or ``"probability"``; ``scores``: the scores
    to use (a renormalised copy when rounded rows were renormalised, else
    the input); ``n_renormalized``: how many rows were renormalised;
    ``reason``: the rule that decided, in words.
    """

    score_type: str
    scores: np.ndarray
    n_renormalized: int
    reason: str


def _check_normal_spread(lo, hi, name):
    """Refuse logits whose whole spread ``hi - lo`` is subnormal (nonzero,
    below the smallest normal float64): they keep a few significant bits,
    every sigmoid or softmax of them is exactly uniform and the slope or
    ``1 / T`` a map would need overflows, so every calibrator returned a
    constant or a wrong temperature without a word."""
    tiny = np.finfo(np.float64).tiny
    with np.errstate(over="ignore", invalid="ignore"):
        spread = float(hi) - float(lo)
    if 0 < spread < tiny:
        raise ValueError(
            f"{name} holds logits that differ by at most {spread:.3g}, below "
            f"the smallest normal float64 ({tiny:.3g}): subnormal differences "
            "keep only a few significant bits and every probability of them "
            "is uniform. Multiply X by a large constant (for example "
            "2.0**600; a temperature or slope is multiplied by it)."
        )


def resolve_score_type(
    scores, score_type, *, value_range=None, name="X", warn_logit=True
):
    """Decide what raw scores hold, and renormalise rounded probabilities.

    The rule of ``score_type="auto"`` (documented in the design notes):

    * A score array with a value outside ``[0, 1]`` holds logits (decision
      values count as logits). Logits (read or given) whose whole spread
      ``max - min`` is nonzero but below the smallest normal float64 are a
      ``ValueError``: no probability of them differs from uniform.
    * 1-D scores (or one column) entirely inside ``[0, 1]`` are the
      probability of the positive class.
    * 2-D scores entirely inside ``[0, 1]`` are probabilities, never silently
      logits. Rows that sum to 1 within :func:`sum_tolerance` are used as
      given; rows that miss 1 by at most :func:`rounding_tolerance` (4-decimal
      rounding, float32 round-off) are renormalised (counted in
      ``n_renormalized``); a row that misses by more is a ``ValueError``
      naming the worst row, its sum and the ``score_type`` to pass.

    ``score_type="probability"`` applies the same checks (rounded rows are
    renormalised; values outside ``[0, 1]`` or rows off by more are errors).
    ``score_type="logit"`` uses the scores as given; when they look exactly
    like probabilities (as ``"auto"`` would read them, rows summing to 1
    within :func:`sum_tolerance`) a ``UserWarning`` says so, if
    ``warn_logit``.

    Parameters
    ----------
    scores : ndarray of shape (n,) or (n, k)
        Finite float scores.
    score_type : {"auto", "logit", "probability"}
    value_range : tuple or None
        ``(min, max)`` of ``scores`` when the caller has it.
    name : str
        The name of the scores in messages.
    warn_logit : bool
        Warn when ``score_type="logit"`` scores look like probabilities.

    Returns
    -------
    decision : ScoreTypeDecision
    """
    if scores.size == 0:
        kind = "logit" if score_type == "auto" else score_type
        return ScoreTypeDecision(kind, scores, 0, "no scores")
    lo, hi = (scores.min(), scores.max()) if value_range is None else value_range
    in_range = bool(lo >= 0) and bool(hi <= 1)
    if score_type == "logit" or not in_range:
        _check_normal_spread(lo, hi, name)
    one_column = scores.ndim == 1 or scores.shape[1] == 1
    if score_type == "logit":
        if warn_logit and in_range and (one_column or row_sums(scores).exact):
            shape = "1-D scores" if one_column else "rows summing to 1"
            warnings.warn(
                f"score_type='logit', but {name} looks like probabilities (every "
                f"value in [0, 1], {shape}); they are used as logits. Pass "
                "score_type='probability' (or 'auto') if they are probabilities.",
                UserWarning,
                stacklevel=user_stacklevel(),
            )
        return ScoreTypeDecision("logit", scores, 0, "score_type='logit' was given")
    given = score_type == "probability"
    if not in_range:
        if given:
            raise _range_error(scores, name)
        return ScoreTypeDecision(
            "logit",
            scores,
            0,
            f"values outside [0, 1] (min {float(lo):.4g}, max {float(hi):.4g}): "
            "logits or decision values",
        )
    why = "score_type='probability' was given" if given else None
    if one_column:
        return ScoreTypeDecision(
            "probability",
            scores,
            0,
            why or "1-D scores all in [0, 1]: the probability of the positive class",
        )
    sums = row_sums(scores)
    k = scores.shape[1]
    if sums.exact:
        return ScoreTypeDecision(
            "probability",
            scores,
            0,
            why
            or f"every value in [0, 1] and every row sums to 1 (within "
            f"{sum_tolerance(scores.dtype):.1e})",
        )
    if sums.rounded:
        return ScoreTypeDecision(
            "probability",
            renormalize_rows(scores, sums),
            int(sums.rows.size),
            (why or "every value in [0, 1] and every row sums to 1")
            + f"; {sums.rows.size} row(s) within the rounding tolerance "
            f"{sums.tolerance:.1e} for {k} columns were renormalised",
        )
    hint = (
        None
        if given
        else (
            f"Every value of {name} is in [0, 1], so score_type='auto' does not "
            "read it as logits: pass score_type='logit' if these are logits or "
            "decision values, or normalise the rows if they are probabilities "
            "(one-vs-rest sigmoid outputs do not sum to 1)."
        )
    )
    raise _sum_error(name, sums, k, hint)


def looks_like_probabilities(scores, value_range=None):
    """Whether ``score_type="auto"`` reads ``scores`` as probabilities.

    False for scores with a value outside ``[0, 1]``; raises the error of
    :func:`resolve_score_type` for 2-D scores inside ``[0, 1]`` whose rows
    miss 1 by more than the rounding tolerance.
    """
    decision = resolve_score_type(scores, "auto", value_range=value_range)
    return decision.score_type == "probability"


def centre_rows(z):
    """``z`` minus its row maxima (a new array; every row's maximum becomes 0)."""
    return z - z.max(axis=1, keepdims=True)


def log_softmax(z):
    """Row-wise log-softmax in the dtype of ``z`` (float32 stays float32).

    Two passes over ``z`` plus one ``exp``; no ``n x K`` float64 copy of
    float32 input.
    """
    out = centre_rows(z)
    lse = np.log(np.exp(out).sum(axis=1, keepdims=True))
    out -= lse.astype(out.dtype, copy=False)
    return out


def softmax(z, out=None):
    """Row-wise softmax in the dtype of ``z``; rows sum to 1.

    ``out``: an array of the shape and dtype of ``z`` (``z`` itself: in
    place) that receives the result; the values are the same bit for bit.
    """
    if out is None:
        p = np.exp(z - z.max(axis=1, keepdims=True))
    else:
        p = np.subtract(z, z.max(axis=1, keepdims=True), out=out)
        np.exp(p, out=p)
    p /= p.sum(axis=1, keepdims=True)
    return p


def log_floored(proba):
    """``log(max(p, PROBA_FLOOR))`` in the dtype of ``proba``: the logits of
    probabilities (:attr:`Scores.logits`), one new array."""
    out = np.maximum(proba, proba.dtype.type(PROBA_FLOOR))
    return np.log(out, out=out)


def to_log_proba(scores, score_type, n_classes, floor=PROBA_FLOOR):
    """Normalised log-probabilities of shape ``(n, n_classes)`` from raw scores.

    Parameters
    ----------
    scores : ndarray of shape (n,) or (n, k), floating
        Validated raw scores (finite). 1-D or one column only when
        ``n_classes == 2``: the score of the positive class (a log-odds for
        ``"logit"``, a probability for ``"probability"``).
    score_type : {"logit", "probability"}
    n_classes : int
    floor : float, default=PROBA_FLOOR
        Probabilities below ``floor`` are raised to it before the log.

    Returns
    -------
    log_proba : ndarray of shape (n, n_classes), dtype of ``scores``
        Rows are log-probabilities (``logsumexp == 0``). Probabilities are
        floored at ``floor`` (:data:`PROBA_FLOOR` by default) before the log;
        logits of any size (±1e4 included) stay finite.
    """
    if scores.ndim == 2 and scores.shape[1] == 1:
        scores = scores[:, 0]
    if scores.ndim == 1:
        if score_type == "logit":
            # the log-softmax of [0, s]: bit for bit what the two-column
            # logits [0, s] give (log_expit rounds differently on some numpy)
            out = np.zeros((scores.shape[0], 2), dtype=scores.dtype)
            out[:, 1] = scores
            return log_softmax(out)
        p = scores
        out = np.empty((p.shape[0], 2), dtype=p.dtype)
        out[:, 1] = np.log(np.maximum(p, floor))
        out[:, 0] = np.log(np.maximum(1.0 - p, floor))
        return log_softmax(out)
    if score_type == "logit":
        return log_softmax(scores)
    return log_softmax(np.log(np.maximum(scores, scores.dtype.type(floor))))


def log_odds(log_proba):
    """Per-class log-odds ``log p_k - log(1 - p_k)`` from log-probabilities.

    Accurate for extreme values: no ``1 - p`` is formed for the top class; for
    two classes it is the difference of the two columns.
    """
    if log_proba.shape[1] == 2:
        d = log_proba[:, 1] - log_proba[:, 0]
        return np.column_stack((-d, d))
    # Only the most probable class can have p_k > 1/2; for the others
    # log1p(-p_k) is accurate. For the top class, log(1 - p_top) is the
    # logsumexp of the other classes, which never cancels.
    with np.errstate(divide="ignore"):
        log_rest = np.log1p(-np.exp(log_proba))
    rows = np.arange(log_proba.shape[0])
    top = np.argmax(log_proba, axis=1)
    others = log_proba.copy()
    others[rows, top] = -np.inf
    m = others.max(axis=1)
    log_rest[rows, top] = m + np.log(np.exp(others - m[:, None]).sum(axis=1))
    return log_proba - log_rest


def _logits_of(raw, score_type):
    """:attr:`Scores.logits` of validated raw scores (1-D or 2-D)."""
    if raw.ndim == 1:
        out = np.empty((raw.shape[0], 2), dtype=raw.dtype)
        if score_type == "logit":
            out[:, 0] = 0
            out[:, 1] = raw
            return out
        out[:, 0] = 1 - raw
        out[:, 1] = raw
        return np.log(np.maximum(out, raw.dtype.type(PROBA_FLOOR)), out=out)
    if score_type == "logit":
        return raw
    return log_floored(raw)


class Scores:
    """Validated raw scores and what calibrators derive from them.

    ``log_proba`` (normalised log-probabilities, shape ``(n, n_classes)``) and
    ``proba`` are computed on first use. For probability scores ``proba`` is
    the input itself (a 1-D positive-class probability ``p`` becomes
    ``[1 - p, p]``), not ``exp(log(p))``, so values that sit exactly on a bin
    edge stay there.
    """

    def __init__(self, raw, score_type, n_classes):
        if raw.ndim == 2 and raw.shape[1] == 1:
            raw = raw[:, 0]
        self.raw = raw
        self.score_type = score_type
        self.n_classes = n_classes
        self._log_proba = None
        self._proba = None

    @property
    def n_samples(self):
        return self.raw.shape[0]

    @property
    def dtype(self):
        return self.raw.dtype

    @property
    def log_proba(self):
        if self._log_proba is None:
            self._log_proba = to_log_proba(self.raw, self.score_type, self.n_classes)
        return self._log_proba

    def log_proba_floored(self, floor):
        """:attr:`log_proba` with probabilities floored at ``floor`` instead
        of :data:`PROBA_FLOOR` (logits: :attr:`log_proba` itself)."""
        if self.score_type != "probability" or floor == PROBA_FLOOR:
            return self.log_proba
        return to_log_proba(self.raw, self.score_type, self.n_classes, floor=floor)

    @property
    def logits(self):
        """The scores as logits, as cheaply as possible, shape ``(n, K)``.

        2-D logits are returned as given (no copy), 2-D probabilities as
        ``log(max(p, PROBA_FLOOR))``. A 1-D binary score is read as its
        two-column equivalent: a logit ``s`` as ``[0, s]``, a probability
        ``p`` as ``log(max([1 - p, p], PROBA_FLOOR))``, so that 1-D and 2-D
        binary scores give the same features to the methods that are not
        invariant to adding a constant to a row (vector and matrix scaling);
        temperature scaling is invariant to it.
        """
        return _logits_of(self.raw, self.score_type)

    def logit_rows(self, start, stop):
        """Rows ``start:stop`` of :attr:`logits`, computed for those rows only
        (the same values bit for bit: every step is element by element)."""
        return _logits_of(self.raw[start:stop], self.score_type)

    @property
    def positive_log_odds(self):
        """Binary problems: float64 log-odds of the positive class, shape (n,).

        Read straight from the raw scores (no ``(n, 2)`` log-probabilities):
        a 1-D logit as given, ``z1 - z0`` for two logits, ``log p1 - log p0``
        for probabilities (each floored at :data:`PROBA_FLOOR`), equal to
        ``log_proba[:, 1] - log_proba[:, 0]``.
        """
        raw = self.raw
        if self._log_proba is not None:
            return self._log_proba[:, 1] - self._log_proba[:, 0].astype(np.float64)
        if self.score_type == "logit":
            if raw.ndim == 1:
                return raw.astype(np.float64, copy=False)
            return raw[:, 1].astype(np.float64) - raw[:, 0]
        if raw.ndim == 1:
            p1 = raw.astype(np.float64)
            p0 = 1.0 - p1
        else:
            p0, p1 = raw[:, 0].astype(np.float64), raw[:, 1].astype(np.float64)
        return np.log(np.maximum(p1, PROBA_FLOOR)) - np.log(np.maximum(p0, PROBA_FLOOR))

    @property
    def positive_proba(self):
        """Binary problems: probability of the positive class, shape (n,).

        For probability scores it is the input itself (dtype kept)."""
        if self.score_type == "probability":
            return self.raw if self.raw.ndim == 1 else self.raw[:, 1]
        return expit(self.positive_log_odds)

    @property
    def proba(self):
        if self._proba is None:
            if self.score_type != "probability":
                self._proba = np.exp(self.log_proba)
            elif self.raw.ndim == 1:
                self._proba = np.column_stack((1 - self.raw, self.raw))
            else:
                self._proba = self.raw
        return self._proba
