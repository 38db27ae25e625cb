"""Multiclass strategies for calibrators that learn a map of one score.

Platt scaling, histogram binning and isotonic regression calibrate a single
score against a 0/1 target. This module turns such a one-score map into a
calibrator for any number of classes, once for all of them:

* two classes: one map on the positive class;
* ``multi_class="ovr"``: one map per class on that class's score against
  "this class or not", then each row is divided by its sum. Every map's
  output is kept in ``[OUTPUT_EPS, 1 - OUTPUT_EPS]``, so a row sums to at
  least ``n_classes * OUTPUT_EPS > 0`` and the division is always defined: a
  row whose maps all give the floor becomes uniform because its entries are
  equal, not by a fallback;
* ``multi_class="top_label"`` (Gupta & Ramdas 2022): one map per class ``k``,
  fitted on the samples whose predicted class is ``k``, on the confidence
  (top probability) against "the prediction is correct". At predict time the
  top class gets the calibrated confidence ``c`` and the other classes share
  ``1 - c`` in proportion to their uncalibrated probabilities, computed from
  the log-probabilities (so shares of probabilities below the float range,
  as with logits of +-1e4, are still in proportion), evenly only when those
  probabilities are all exactly 0. A class never predicted on the
  calibration data keeps its confidence unchanged.

  **The predicted class is kept** (``argmax`` of the output is the
  ``argmax`` of the input, first index on ties, as :func:`numpy.argmax`):
  top-label calibration calibrates the confidence *of the predicted label*,
  it does not re-rank the classes. When a proportional share would exceed
  ``c``, the other classes' shares are **capped at** ``c`` and the mass above
  the cap goes to the uncapped classes, still in proportion to their
  probabilities (water-filling: shares ``min(c, lambda * p_j)`` with
  ``lambda`` such that they sum to ``1 - c``). ``c`` itself is kept, so a
  binning calibrator's confidence still takes one of its bin values. Only
  when ``c < 1 / K`` can no share be capped low enough: ``c`` is then raised
  to ``1 / K`` and the row is uniform. Ties are broken towards the predicted
  class: after rounding to the output dtype, another class whose share
  would still win ``argmax`` (above ``c``, or equal to it at a lower index)
  is lowered to the next float below ``c`` (one unit in the last place, so
  rows still sum to 1 within rounding).

  Before this rule, top-label isotonic regression changed the predicted
  class of 17.5% of the rows of a CIFAR-100 DenseNet (error 26.1% -> 29.3%);
  histogram binning 10.6%, scaling-binning 13.6%.
"""

from abc import abstractmethod
from functools import partial

import numpy as np

from skcalib._base import BaseCalibrator, _implements_after
from skcalib._core.compat import StrOptions
from skcalib._core.scores import Scores, log_odds
from skcalib._core.xp import to_numpy
from skcalib._core.xp.estimator import host_view, move_fitted_attributes

__all__ = []

#: Calibrated probabilities of one-score maps are kept in
#: ``[OUTPUT_EPS, 1 - OUTPUT_EPS]`` so that log-loss stays finite.
OUTPUT_EPS = 1e-12


def share_rest(log_proba, top, calibrated, dtype=np.float64):
    """Top-label probabilities: ``calibrated`` for the class ``top`` of each
    row, ``1 - calibrated`` shared by the other classes in proportion to
    ``exp(log_proba)``, capped so that ``top`` stays the most probable class
    (see the module docstring). Returns an array of ``dtype``.

    The shares are a softmax of the other classes' log-probabilities, so
    they stay in proportion when those probabilities underflow in float64
    (logits of +-1e4); they are even only when every other probability is
    exactly 0 (``log_proba`` of ``-inf``).
    """
    n, n_classes = log_proba.shape
    rows = np.arange(n)
    # c < 1/K: no share can be capped at c; the row becomes uniform.
    calibrated = np.maximum(np.asarray(calibrated, dtype=np.float64), 1.0 / n_classes)
    rest = np.array(log_proba, dtype=np.float64)
    rest[rows, top] = -np.inf
    peak = rest.max(axis=1)
    none = ~np.isfinite(peak)  # every other probability is exactly 0
    rest -= np.where(none, 0.0, peak)[:, None]
    share = np.exp(rest)
    share[none] = 1.0
    share[rows, top] = 0.0
    # The largest unnormalised share is 1 (exp(0)) in every row.
    total = share.sum(axis=1)
    remaining = 1.0 - calibrated
    over = remaining > calibrated * total  # the largest share would exceed c
    share *= (remaining / total)[:, None]
    if over.any():
        share[over] = _cap_shares(share[over], top[over], calibrated[over])
    share[rows, top] = calibrated
    return _break_ties(share.astype(dtype, copy=False), top)


def _cap_shares(share, top, cap):
    """Water-filling: shares ``min(cap, lambda * share)`` of the same total.

    ``share`` has a 0 in column ``top`` (excluded); every row needs
    ``(K - 1) * cap >= total``, which ``cap >= 1 / K`` guarantees. Classes of
    share exactly 0 get an even part of what the capped classes cannot take
    only when every positive share is capped.
    """
    m, n_classes = share.shape
    rows = np.arange(m)
    total = share.sum(axis=1)
    others = np.ones(share.shape, dtype=bool)
    others[rows, top] = False
    q = share[others].reshape(m, n_classes - 1)
    s = -np.sort(-q, axis=1)  # descending
    # tail[:, i]: the sum of the shares left uncapped when the i largest are.
    tail = np.cumsum(s[:, ::-1], axis=1)[:, ::-1]
    n_capped = np.arange(n_classes - 1)
    left = total[:, None] - n_capped * cap[:, None]  # mass for the uncapped
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(tail > 0, left / tail, 0.0)
    even = left / (n_classes - 1 - n_capped)
    fits = np.where(tail > 0, scale * s <= cap[:, None], even <= cap[:, None])
    fits[:, -1] = True  # all but one capped always fits when cap >= 1 / K
    first = np.argmax(fits, axis=1)
    lam = scale[rows, first]
    positive = tail[rows, first] > 0
    out = np.where(
        positive[:, None],
        np.minimum(cap[:, None], lam[:, None] * share),
        np.where(share > 0, cap[:, None], even[rows, first][:, None]),
    )
    out[rows, top] = 0.0
    return out


def _break_ties(proba, top):
    """Lower, to the next float below the top value, every other entry that
    would win ``argmax`` (after rounding): one above the top value, or equal
    to it at a lower index."""
    rows = np.arange(proba.shape[0])
    c = proba[rows, top]
    cols = np.arange(proba.shape[1])
    reach = np.where(cols < top[:, None], proba >= c[:, None], proba > c[:, None])
    if reach.any():
        r, j = np.nonzero(reach)
        proba[r, j] = np.nextafter(c[r], proba.dtype.type(0))
    return proba


def _map_view(scores, y, *, k, map_input):
    """Score and 0/1 target of map ``k`` (None: the binary map) of a chunk."""
    if k is None:
        if map_input == "proba":
            return scores.positive_proba, y == 1
        return scores.positive_log_odds, y == 1
    if map_input == "proba":
        return scores.proba[:, k], y == k
    return log_odds(scores.log_proba.astype(np.float64, copy=False))[:, k], y == k


def _xp_log_odds(xp, log_proba):
    """:func:`~skcalib._core.scores.log_odds` in the namespace of
    ``log_proba``, by the same formulas."""
    n_classes = log_proba.shape[1]
    if n_classes == 2:
        d = log_proba[:, 1] - log_proba[:, 0]
        return xp.stack((-d, d), axis=1)
    log_rest = xp.log1p(-xp.exp(log_proba))
    top = xp.argmax(log_proba, axis=1)
    cols = xp.arange(n_classes, device=log_proba.device)
    is_top = cols[None, :] == top[:, None]
    others = xp.where(is_top, -xp.inf, log_proba)
    m = xp.max(others, axis=1)
    rest_top = m + xp.log(xp.sum(xp.exp(others - m[:, None]), axis=1))
    return log_proba - xp.where(is_top, rest_top[:, None], log_rest)


def _xp_columns(xp, scores):
    """The columns of ``scores`` as contiguous 1-D arrays (``take`` copies;
    a column view has a stride, which torch's ``searchsorted`` copies again
    with a warning)."""
    ids = xp.arange(scores.shape[1], device=scores.device)
    return [xp.take(scores, ids[k : k + 1], axis=1)[:, 0] for k in range(ids.shape[0])]


class _OneVsRestCalibrator(BaseCalibrator):
    """Base for calibrators built on a map of one score: the one-vs-rest and
    top-label strategies (see the module docstring).

    Subclasses set ``_map_input`` to ``"log_odds"`` or ``"proba"`` and
    implement ``_fit_map(score, target, sample_weight)`` returning the fitted
    map, and ``_apply_map(fitted, score)`` returning probabilities.
    """

    _parameter_constraints: dict = {
        **BaseCalibrator._parameter_constraints,
        "multi_class": [StrOptions({"ovr", "top_label"})],
    }
    _map_input = "log_odds"

    @classmethod
    def _supports_chunks(cls):
        """Whether the maps fit on chunks: ``_fit_map_chunks`` implemented at
        least as specifically as ``_fit_map`` (and ``_fit_chunks`` as ``_fit``,
        see :meth:`BaseCalibrator._supports_chunks`)."""
        return super()._supports_chunks() and _implements_after(
            cls, "_fit_map_chunks", "_fit_map"
        )

    def _map_scores(self, scores):
        if self._map_input == "proba":
            return scores.proba
        return log_odds(scores.log_proba.astype(np.float64, copy=False))

    def _binary_scores(self, scores):
        if self._map_input == "proba":
            return scores.positive_proba
        return scores.positive_log_odds

    #: Subclasses whose maps take boolean targets set this (no float copy).
    #: Their maps also accept the encoded labels of a binary problem (0/1
    #: integers) as the target, without a ``y == 1`` pass.
    _bool_target = False

    def _target(self, is_positive):
        """The 0/1 target of a map: boolean, or float64 (the default)."""
        if self._bool_target:
            return is_positive
        return is_positive.astype(np.float64)

    def _fit(self, scores, y, sample_weight):
        n_classes = scores.n_classes
        w = sample_weight
        maps = []
        if n_classes == 2 and self.multi_class == "ovr":
            # Two classes are encoded 0/1: the labels are the target.
            target = y if self._bool_target else self._target(y == 1)
            self.calibrators_ = [self._fit_map(self._binary_scores(scores), target, w)]
            self._set_fitted_views()
            return
        log_proba = scores.log_proba
        scores = self._map_scores(scores)
        if self.multi_class == "ovr":
            for k in range(n_classes):
                maps.append(self._fit_map(scores[:, k], self._target(y == k), w))
        else:
            top = np.argmax(log_proba, axis=1)
            rows = np.arange(top.shape[0])
            conf = scores[rows, top]
            for k in range(n_classes):
                mask = top == k
                if not mask.any() or (w is not None and not w[mask].sum() > 0):
                    maps.append(None)
                    continue
                maps.append(
                    self._fit_map(
                        conf[mask],
                        self._target(y[mask] == k),
                        None if w is None else w[mask],
                    )
                )
        self.calibrators_ = maps
        self._set_fitted_views()

    def _fit_chunks(self, data):
        """Fit every map on chunked data (binary and one-vs-rest).

        Subclasses that can do it implement ``_fit_map_chunks(data, view,
        n_pos)`` (see :meth:`_supports_chunks`): ``view(scores, y)`` gives
        the map's score and 0/1 target of a chunk, ``n_pos`` is the weighted
        count of positives.
        """
        name = type(self).__name__
        n_classes = data.classes.size
        if n_classes == 2 and self.multi_class == "ovr":
            columns = [None]
        elif self.multi_class == "ovr":
            columns = range(n_classes)
        else:
            raise ValueError(
                f"{name} fits chunks with multi_class='ovr' only (top-label maps "
                "need the predicted class of every sample first)."
            )
        maps = []
        for k in columns:
            view = partial(_map_view, k=k, map_input=self._map_input)
            n_pos = data.class_weight[1 if k is None else k]
            maps.append(self._fit_map_chunks(data, view, float(n_pos)))
        self.calibrators_ = maps
        self._set_fitted_views()

    def _set_fitted_views(self):
        """Hook for subclasses to expose ``coef_``, ``bin_edges_``, ..."""

    #: Subclasses whose ``_apply_map`` already returns values in
    #: ``[OUTPUT_EPS, 1 - OUTPUT_EPS]`` set this to skip the per-sample clip.
    _map_output_clipped = False

    def _apply(self, fitted, score):
        out = np.asarray(self._apply_map(fitted, score), dtype=np.float64)
        if self._map_output_clipped:
            return out
        return np.clip(out, OUTPUT_EPS, 1.0 - OUTPUT_EPS, out=out)

    def _binary_proba(self, fitted, score, dtype):
        """``(1 - p, p)`` of the binary map, shape (n, 2), in ``dtype``."""
        p1 = self._apply(fitted, score)
        proba = np.empty((p1.shape[0], 2), dtype=dtype)
        np.subtract(1.0, p1, out=proba[:, 0], casting="unsafe")
        proba[:, 1] = p1
        return proba

    def _predict_proba(self, scores):
        dtype = scores.dtype
        n, n_classes = scores.n_samples, scores.n_classes
        if n_classes == 2 and self.multi_class == "ovr":
            return self._binary_proba(
                self.calibrators_[0], self._binary_scores(scores), dtype
            )
        log_proba = scores.log_proba
        scores = self._map_scores(scores)
        if self.multi_class == "ovr":
            proba = np.empty((n, n_classes), dtype=np.float64)
            for k, fitted in enumerate(self.calibrators_):
                proba[:, k] = self._apply(fitted, scores[:, k])
            # Every entry is >= OUTPUT_EPS (see the module docstring): the
            # row sums are positive.
            proba /= proba.sum(axis=1, keepdims=True)
            return proba.astype(dtype, copy=False)
        # top-label
        rows = np.arange(n)
        top = np.argmax(log_proba, axis=1)
        conf = scores[rows, top]
        calibrated = np.exp(log_proba[rows, top], dtype=np.float64)
        for k, fitted in enumerate(self.calibrators_):
            mask = top == k
            if fitted is not None and mask.any():
                calibrated[mask] = self._apply(fitted, conf[mask])
        return share_rest(log_proba, top, calibrated, dtype)

    # ------------------------------------------------ array-API namespaces
    # Subclasses that set ``_array_api_native = True`` implement
    # ``_fit_map_xp(ns, score, target, sample_weight)`` (score and weights of
    # the namespace, target boolean; returns the fitted map as ``_fit_map``
    # does: small numpy arrays, computed from the device's sums) and
    # ``_apply_map_xp(fitted, score, ns)`` (probabilities of the namespace;
    # ``fitted`` is numpy, or of the namespace after a host fit).

    def _map_scores_xp(self, scores):
        xp = scores.xp
        if self._map_input == "proba":
            if scores.score_type != "probability":
                return xp.exp(scores.log_proba)  # as numpy: exp(log_proba)
            return scores.proba
        return _xp_log_odds(xp, xp.astype(scores.log_proba, scores.ns.accumulate_dtype))

    def _binary_scores_xp(self, scores):
        if self._map_input != "proba":
            return scores.positive_log_odds
        if scores.score_type == "probability" and scores.raw.ndim == 2:
            return _xp_columns(scores.xp, scores.raw)[1]
        return scores.positive_proba

    def _fit_xp(self, scores, y, sample_weight):
        """Fit every map on the device (binary and one-vs-rest); top-label
        maps are fitted by the numpy code on the host (one transfer)."""
        if self.multi_class != "ovr":
            self._fit(
                Scores(to_numpy(scores.raw), scores.score_type, scores.n_classes),
                to_numpy(y),
                to_numpy(sample_weight),
            )
        elif scores.n_classes == 2:
            s = self._binary_scores_xp(scores)
            self.calibrators_ = [self._fit_map_xp(scores.ns, s, y == 1, sample_weight)]
            self._set_fitted_views()
        else:
            columns = _xp_columns(scores.xp, self._map_scores_xp(scores))
            self.calibrators_ = [
                self._fit_map_xp(scores.ns, s, y == k, sample_weight)
                for k, s in enumerate(columns)
            ]
            self._set_fitted_views()
        move_fitted_attributes(self, scores.ns)

    def _apply_xp(self, fitted, score, ns):
        xp = ns.xp
        out = xp.astype(self._apply_map_xp(fitted, score, ns), ns.accumulate_dtype)
        if self._map_output_clipped:
            return out
        return xp.clip(out, OUTPUT_EPS, 1.0 - OUTPUT_EPS)

    def _predict_proba_xp(self, scores):
        """Probabilities on the device (binary and one-vs-rest; top-label
        by the numpy code on the host, one transfer each way)."""
        ns, xp, dtype = scores.ns, scores.xp, scores.dtype
        if self.multi_class != "ovr":
            host = Scores(to_numpy(scores.raw), scores.score_type, scores.n_classes)
            return ns.asarray(host_view(self)._predict_proba(host))
        if scores.n_classes == 2:
            p1 = self._apply_xp(
                self.calibrators_[0], self._binary_scores_xp(scores), ns
            )
            return xp.astype(xp.stack((1.0 - p1, p1), axis=1), dtype)
        columns = _xp_columns(xp, self._map_scores_xp(scores))
        proba = xp.stack(
            [
                self._apply_xp(m, s, ns)
                for m, s in zip(self.calibrators_, columns, strict=True)
            ],
            axis=1,
        )
        # Every entry is >= OUTPUT_EPS: the row sums are positive.
        return xp.astype(proba / xp.sum(proba, axis=1, keepdims=True), dtype)

    @abstractmethod
    def _fit_map(self, score, target, sample_weight):
        """Fit a map from one score to P(target = 1)."""

    @abstractmethod
    def _apply_map(self, fitted, score):
        """Apply a fitted map to scores."""
