"""Score arithmetic shared by every calibrator and metric.

The only softmax / log-softmax / probability check of the package lives here.
"""

import numpy as np
from scipy.special import expit, log_expit
from sklearn.utils import assert_all_finite

from skcalib._accel import value_range

__all__ = []  # private module

#: Probabilities are floored at this value before their log is taken, so that a
#: probability of exactly 0 gives a finite log-probability (log(1e-12) ~ -27.6).
PROBA_FLOOR = 1e-12


def sum_tolerance(dtype):
    """Tolerance on ``|row sum - 1|`` for probabilities of ``dtype``.

    ``sqrt(eps)``: 3.5e-4 for float32, 1.5e-8 for float64; float32 softmax
    outputs of 1000 classes drift by up to a few 1e-5.
    """
    dtype = np.dtype(dtype) if np.dtype(dtype).kind == "f" else np.dtype(np.float64)
    return float(np.sqrt(np.finfo(dtype).eps))


def finite_range(X, *, input_name="X", estimator_name=None):
    """``(min, max)`` of a float array, raising scikit-learn's error on NaN/inf.

    An infinity shows in the minimum or maximum and NaN is flagged by
    :func:`~skcalib._accel.value_range`, so the range, which the probability
    checks need anyway, replaces ``check_array``'s own finiteness pass (pass
    ``ensure_all_finite=False`` to it). The error is the one
    ``check_array`` raises (``"Input X contains NaN."``).
    """
    lo, hi, nan = value_range(X)
    if nan or not (np.isfinite(lo) and np.isfinite(hi)):
        assert_all_finite(X, input_name=input_name, estimator_name=estimator_name)
    return lo, hi


def looks_like_probabilities(scores, value_range=None):
    """Whether raw scores are probabilities under the ``score_type="auto"`` rule.

    * 1-D (or one column): every value in ``[0, 1]``.
    * 2-D with ``K >= 2`` columns: every value in ``[0, 1]`` and every row sums
      to 1 within :func:`sum_tolerance`.

    ``value_range``: ``(min, max)`` of ``scores`` when the caller has it
    (from :func:`finite_range`).
    """
    if scores.size == 0:
        return False
    lo, hi = (scores.min(), scores.max()) if value_range is None else value_range
    in_range = bool(lo >= 0) and bool(hi <= 1)
    if not in_range:
        return False
    if scores.ndim == 1 or scores.shape[1] == 1:
        return True
    row_sums = scores.sum(axis=1, dtype=np.float64)
    return bool(np.all(np.abs(row_sums - 1.0) <= sum_tolerance(scores.dtype)))


def check_probabilities(proba, name="y_proba", value_range=None):
    """Raise ``ValueError`` unless ``proba`` holds valid probabilities.

    1-D: values in ``[0, 1]``. 2-D: values in ``[0, 1]`` and rows summing to 1
    within :func:`sum_tolerance` of the dtype. The message names the first
    offending row and value. ``value_range``: ``(min, max)`` of ``proba``
    when the caller has it.
    """
    if proba.size == 0:
        return
    lo, hi = (proba.min(), proba.max()) if value_range is None else value_range
    if lo < 0 or hi > 1:
        bad = np.flatnonzero(
            ((proba < 0) | (proba > 1)).reshape(proba.shape[0], -1).any(axis=1)
        )[0]
        raise ValueError(
            f"{name} must hold probabilities in [0, 1]; row {bad} has "
            f"{proba[bad].tolist()}."
        )
    if proba.ndim == 2 and proba.shape[1] > 1:
        off = _first_row_off_one(proba, sum_tolerance(proba.dtype))
        if off is not None:
            bad, row_sum = off
            raise ValueError(
                f"{name} rows must sum to 1 (tolerance "
                f"{sum_tolerance(proba.dtype):.1e} for {proba.dtype}); row {bad} "
                f"sums to {row_sum:.6g}. Pass logits with "
                "score_type='logit' or normalise the rows."
            )


def _first_row_off_one(proba, tol):
    """``(row, sum)`` of the first row of ``proba`` (values in [0, 1]) whose
    float64 sum is more than ``tol`` away from 1, or None.

    The same decision as ``proba.sum(axis=1, dtype=np.float64)``, faster for
    float32: row sums in float32 (no float64 conversion pass) are within
    ``k * eps`` of the float64 sums (for values in [0, 1]), so only the rows
    within twice that margin of the tolerance are summed again in float64.
    No BLAS call: its threads stall on a loaded machine.
    """
    k = proba.shape[1]
    rows = None
    eps = float(np.finfo(np.float32).eps)
    if proba.dtype == np.float32 and 2.0 * k * eps < tol / 4:
        suspect = np.abs(proba.sum(axis=1) - 1) > tol - 2.0 * k * eps
        if not suspect.any():
            return None
        rows = np.flatnonzero(suspect)
    sums = (proba if rows is None else proba[rows]).sum(axis=1, dtype=np.float64)
    off = np.flatnonzero(np.abs(sums - 1.0) > tol)
    if off.size == 0:
        return None
    i = int(off[0])
    return (int(rows[i]) if rows is not None else i), float(sums[i])


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


def softmax(z):
    """Row-wise softmax in the dtype of ``z``; rows sum to 1."""
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    return p


def to_log_proba(scores, score_type, n_classes):
    """Normalised log-probabilities of shape ``(n, n_classes)`` from raw scores.

    Parameters
    ----------
    scores : ndarray of shape (n,) or (n, k), floating
        Validated raw scores (finite). 1-D or one column only when
        ``n_classes == 2``: the score of the positive class (a log-odds for
        ``"logit"``, a probability for ``"probability"``).
    score_type : {"logit", "probability"}
    n_classes : int

    Returns
    -------
    log_proba : ndarray of shape (n, n_classes), dtype of ``scores``
        Rows are log-probabilities (``logsumexp == 0``). Probabilities are
        floored at :data:`PROBA_FLOOR` before the log; logits of any size
        (±1e4 included) stay finite.
    """
    if scores.ndim == 2 and scores.shape[1] == 1:
        scores = scores[:, 0]
    if scores.ndim == 1:
        if score_type == "logit":
            out = np.empty((scores.shape[0], 2), dtype=scores.dtype)
            out[:, 0] = log_expit(-scores)
            out[:, 1] = log_expit(scores)
            return out
        p = scores
        out = np.empty((p.shape[0], 2), dtype=p.dtype)
        out[:, 1] = np.log(np.maximum(p, PROBA_FLOOR))
        out[:, 0] = np.log(np.maximum(1.0 - p, PROBA_FLOOR))
        return log_softmax(out)
    if score_type == "logit":
        return log_softmax(scores)
    return log_softmax(np.log(np.maximum(scores, scores.dtype.type(PROBA_FLOOR))))


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

    @property
    def logits(self):
        """Log-probabilities up to a per-row constant, as cheaply as possible.

        Enough for anything invariant to adding a constant to a row of logits
        (temperature scaling; vector and matrix scaling are not invariant and
        treat these values as their features): 2-D logits are returned as
        given (no copy), 2-D probabilities as ``log(max(p, PROBA_FLOOR))``.
        """
        if self._log_proba is not None or self.raw.ndim == 1:
            return self.log_proba
        if self.score_type == "logit":
            return self.raw
        return np.log(np.maximum(self.raw, self.raw.dtype.type(PROBA_FLOOR)))

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
