"""The graph's counterpart of :class:`skcalib._core.scores.Scores`: the raw
scores read as ``predict_proba`` reads them, step for step and dtype for
dtype (float32 scores stay float32 where the numpy code keeps them so, and
go to float64 where it does)."""

import numpy as np

from skcalib._core.scores import PROBA_FLOOR, sum_tolerance
from skcalib.export._onnx_graph import expit, log1p, log_softmax, zeros_like

__all__ = []  # private module


class GraphScores:
    """Validated raw scores in a graph, and what calibrators derive from them.

    Parameters
    ----------
    g : Graph
    x : str
        The scores: shape ``(n,)`` or ``(n, n_columns)``, a float dtype.
    score_type : {"logit", "probability"}
        The fitted ``score_type_``.
    n_classes : int
    n_columns : int or None
        The number of columns of ``x``; None when ``x`` is 1-D.

    Notes
    -----
    As at predict time (:func:`~skcalib._core.scores.resolve_score_type`
    with the fitted score type), 2-D probability rows whose float64 sum
    misses 1 by more than :func:`~skcalib._core.scores.sum_tolerance` are
    divided by that sum; one column is read as a 1-D score. What the numpy
    code refuses (NaN, values outside ``[0, 1]`` after a probability fit,
    rows far from summing to 1) the graph does not check.
    """

    def __init__(self, g, x, score_type, n_classes, n_columns):
        self.g = g
        self.score_type = score_type
        self.n_classes = n_classes
        self.dtype = g.dtype(x)
        self.one_d = n_columns is None or n_columns == 1
        if n_columns == 1:
            x = g.column(x, 0)
        if score_type == "probability" and not self.one_d:
            x = _renormalised(g, x, n_columns)
        self.raw = x
        self._cache = {}

    def _memo(self, key, make):
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    def _floor(self):
        return self.dtype.type(PROBA_FLOOR)

    @property
    def logits(self):
        """:attr:`Scores.logits`: 2-D logits as given, ``log(max(p, 1e-12))``
        of probabilities; a 1-D score as ``[0, s]`` or ``[1 - p, p]``."""

        def make():
            g, raw = self.g, self.raw
            if self.score_type == "logit":
                if not self.one_d:
                    return raw
                return g.concat_columns([zeros_like(g, raw, self.dtype), raw])
            two = g.concat_columns([g.sub(1.0, raw), raw]) if self.one_d else raw
            return g.log(g.maximum(two, self._floor()))

        return self._memo("logits", make)

    @property
    def log_proba(self):
        """:func:`~skcalib._core.scores.to_log_proba`: the log-softmax of
        :attr:`logits` (what its branches compute, in the same order)."""
        return self._memo("log_proba", lambda: log_softmax(self.g, self.logits))

    @property
    def proba(self):
        """:attr:`Scores.proba`: probability scores as given (``[1 - p, p]``
        for a 1-D score), ``exp(log_proba)`` of logits."""

        def make():
            g, raw = self.g, self.raw
            if self.score_type != "probability":
                return g.exp(self.log_proba)
            if self.one_d:
                return g.concat_columns([g.sub(1.0, raw), raw])
            return raw

        return self._memo("proba", make)

    @property
    def positive_log_odds(self):
        """:attr:`Scores.positive_log_odds`, float64, shape (n,)."""

        def make():
            g, raw = self.g, self.raw
            f64 = np.float64
            if self.score_type == "logit":
                if self.one_d:
                    return g.cast(raw, f64)
                return g.sub(
                    g.cast(g.column(raw, 1), f64), g.cast(g.column(raw, 0), f64)
                )
            if self.one_d:
                p1 = g.cast(raw, f64)
                p0 = g.sub(1.0, p1)
            else:
                p0, p1 = (g.cast(g.column(raw, k), f64) for k in (0, 1))
            return g.sub(
                g.log(g.maximum(p1, PROBA_FLOOR)), g.log(g.maximum(p0, PROBA_FLOOR))
            )

        return self._memo("positive_log_odds", make)

    @property
    def positive_proba(self):
        """:attr:`Scores.positive_proba`: the input's dtype for probability
        scores, float64 ``expit`` of the log-odds for logits."""
        if self.score_type == "probability":
            return self.raw if self.one_d else self.g.column(self.raw, 1)
        return self._memo(
            "positive_proba", lambda: expit(self.g, self.positive_log_odds)
        )


def _renormalised(g, x, n_columns):
    """Rows off 1 by more than ``sum_tolerance`` divided by their float64
    sum (:func:`~skcalib._core.scores.renormalize_rows`), the others as given.

    The sums are added in numpy's order (:func:`numpy_row_sum`), so a
    renormalised probability is the same float as numpy's and is looked up
    in the same bin even when it sits on an edge."""
    dtype = g.dtype(x)
    x64 = g.cast(x, np.float64)
    columns = [g.column(x64, k) for k in range(n_columns)]
    sums = g.unsqueeze(numpy_row_sum(g, columns), 1)
    off = g.compare(
        "Greater", g.op("Abs", g.sub(sums, 1.0)), float(sum_tolerance(dtype))
    )
    divided = g.cast(g.div(x64, sums), dtype)
    return g.where(off, divided, x)


def numpy_row_sum(g, columns):
    """The sum of the 1-D ``columns``, added in the order of numpy's pairwise
    summation of a contiguous row (``x.sum(axis=1)``): one by one from 0
    (from ``0.0``) below 8 terms, eight running sums combined pairwise up to 128, halves
    (rounded down to a multiple of 8) beyond."""
    n = len(columns)
    if n < 8:  # numpy starts from 0.0: 0.0 + a0 is a0
        total = columns[0]
        for column in columns[1:]:
            total = g.add(total, column)
        return total
    if n <= 128:
        r = list(columns[:8])
        i = 8
        while i < n - n % 8:
            r = [g.add(r[j], columns[i + j]) for j in range(8)]
            i += 8
        total = g.add(
            g.add(g.add(r[0], r[1]), g.add(r[2], r[3])),
            g.add(g.add(r[4], r[5]), g.add(r[6], r[7])),
        )
        for column in columns[i:]:
            total = g.add(total, column)
        return total
    half = n // 2
    half -= half % 8
    return g.add(numpy_row_sum(g, columns[:half]), numpy_row_sum(g, columns[half:]))


def log_odds(g, log_proba, k):
    """:func:`~skcalib._core.scores.log_odds` of float64 log-probabilities,
    shape ``(n, K)``: the difference of the columns for two classes; else
    ``log p - log1p(-p)``, with ``log(1 - p_top)`` the log-sum-exp of the
    other classes."""
    if k == 2:
        d = g.sub(g.column(log_proba, 1), g.column(log_proba, 0))
        return g.concat_columns([g.op("Neg", d), d])
    log_rest = log1p(g, g.op("Neg", g.exp(log_proba)))
    is_top = g.one_hot_rows(g.argmax(log_proba), k)
    others = g.where(is_top, -np.inf, log_proba)
    m = g.reduce("ReduceMax", others, 1)
    top_rest = g.add(m, g.log(g.reduce("ReduceSum", g.exp(g.sub(others, m)), 1)))
    return g.sub(log_proba, g.where(is_top, top_rest, log_rest))
