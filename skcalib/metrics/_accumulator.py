"""Mergeable per-bin statistics: the binned metrics of data seen in chunks.

Every binned metric reduces additive per-cell sums (weight, weighted
confidence, weighted accuracy, sum of squared weights, count; see
:mod:`skcalib._core.totals`), and the Brier score and the negative
log-likelihood are weighted means. :class:`CalibrationAccumulator` keeps those
sums for chunks of data (:meth:`~CalibrationAccumulator.update`) and adds
those of another accumulator (:meth:`~CalibrationAccumulator.merge`). Its
chunk functions (:mod:`skcalib._core.totals`, :mod:`skcalib._core.losses`)
are also what each block of an engine's data runs (Dask, Spark, Ray;
:mod:`skcalib.metrics._engine_metrics`).
"""

from numbers import Integral, Real

import numpy as np

from skcalib._core.compat import Interval, StrOptions, validate_params
from skcalib._core.inputs import (
    KINDS,
    NORMS,
    accepts_dask,
    check_chunk,
    check_n_bins,
    curve_cells,
    input_kind,
)
from skcalib._core.losses import (
    LOSS_W,
    brier_from_sums,
    loss_sums,
    nll_from_sums,
)
from skcalib._core.totals import (
    check_norm,
    check_totals,
    chunk_totals,
    merged_scale,
    reduce_totals,
    rescale_stats,
)
from skcalib._core.xp import namespace, to_numpy
from skcalib.metrics._curve import curve_from_totals
from skcalib.metrics._engine_metrics import accumulate

__all__ = ["CalibrationAccumulator"]


def check_edges(edges, n_bins):
    """Validated float64 edges: given, or ``n_bins`` uniform bins.

    Given edges increase strictly from 0 to 1, except that ``edges[1]`` may
    be 0 (the bin ``[0, 0]`` of quantile edges, see
    :func:`~skcalib._core.binning.bin_edges`).
    """
    if edges is None:
        return np.linspace(0.0, 1.0, check_n_bins(n_bins) + 1)
    e = np.asarray(edges, dtype=np.float64)
    if e.ndim != 1 or e.size < 2:
        raise ValueError(f"edges must be 1-D with at least 2 values, got {e.tolist()}.")
    if not (
        e[0] == 0.0 and e[-1] == 1.0 and e[1] >= 0.0 and np.all(np.diff(e[1:]) > 0)
    ):
        raise ValueError(
            "edges must increase strictly from 0 to 1 (the outer edges of the "
            "first and last bins; only edges[1] may also be 0, for the bin "
            f"[0, 0]), got {e.tolist()}."
        )
    return e.copy()


# ------------------------------------------------------------- accumulator
_METHOD_CONSTRAINTS = {
    "kind": [StrOptions(set(KINDS))],
    "norm": [StrOptions(set(NORMS))],
    "debias": ["boolean"],
}


class CalibrationAccumulator:
    """Mergeable per-bin statistics of the calibration metrics.

    Feed it chunks of predictions with :meth:`update` (or add another
    accumulator with :meth:`merge`), then read every binned calibration
    error, the reliability curve, the Brier score and the negative
    log-likelihood of all the data seen. Memory is ``O(n_classes * n_bins)``
    whatever the number of samples; accumulators of different chunks (other
    processes, machines) merge in any order.

    Parameters
    ----------
    n_bins : int, default=15
        Number of equal-width bins (ignored when ``edges`` is given).
    edges : array-like of shape (n_edges,), default=None
        Fixed bin edges, increasing strictly from 0 to 1, shared by every
        class. For equal-mass (quantile) bins: edges from a first pass over
        the data (see Notes).
    labels : array-like of shape (n_classes,), default=None
        Class labels of the columns of ``y_proba``. Default: fixed by the
        first non-empty chunk as the metric functions would fix them from
        its ``y_true``; pass them when a chunk may miss some classes.
    classwise : bool, default=True
        Also keep the per-class statistics (classwise error, classwise
        curves): this bins every probability, not only the top one, which
        costs ``O(n_classes)`` more per sample.

    Attributes
    ----------
    edges_ : ndarray of shape (n_bins + 1,)
        The bin edges.
    classes_ : ndarray of shape (n_classes,) or None
        Labels of the columns of ``y_proba``; None until a non-empty chunk
        (or ``labels``) fixed them.
    n_samples_ : int
        Number of samples seen.
    total_weight_ : float
        Total sample weight seen (``n_samples_`` without weights).

    See Also
    --------
    expected_calibration_error : The same errors from one array.
    reliability_curve : The same curves from one array.

    Notes
    -----
    The statistics of a cell (bin :math:`B` of a group) are :math:`W_B =
    \\sum_{i \\in B} w_i`, :math:`\\sum_{i \\in B} w_i c_i`,
    :math:`\\sum_{i \\in B} w_i a_i`, :math:`\\sum_{i \\in B} w_i^2` and the
    count, for the top-label groups (one per predicted class; their sum over
    groups gives the confidence statistics) and the classwise groups; plus
    :math:`\\sum w_i`, :math:`\\sum w_i \\mathrm{NLL}_i` and :math:`\\sum w_i
    \\mathrm{BS}_i`. Sums add, so the result does not depend on how the data
    was split: every metric equals the metric function on the concatenated
    data up to the rounding of the float64 sums (``~1e-15``; the tests ask
    for ``1e-12``). The debiased L2 error needs only these sums.

    **Quantile bins.** Equal-mass edges are quantiles of all the data, which
    a single pass over a stream cannot give exactly with bounded memory.
    Fix the edges first, from a first pass or from a sample (for example
    ``np.quantile(confidences, np.linspace(0, 1, 16))`` with the ends set to
    0 and 1): the accumulator is then exact *relative to those edges*, and
    equal to the metric functions' ``strategy="quantile"`` (``kind=
    "confidence"``) when the edges are those of the whole data. Dask arrays
    can be read several times: the metric functions compute the exact
    quantile edges of a Dask array in extra passes (see the user guide,
    "Large data").

    NLL and Brier are computed from float64 sums of per-sample losses, with
    the rules of :func:`negative_log_likelihood` and :func:`brier_score`:
    they equal the metric functions to ``1e-12`` for every dtype.

    **Weights.** The sums of each chunk are kept divided by the largest
    weight seen so far (rescaled when a larger one arrives), so weights of
    any size (1e308, 5e-324) neither overflow nor lose precision, and
    multiplying every weight by a constant changes no metric.
    ``total_weight_`` is in the user's units (``inf`` if it exceeds the
    float64 range).

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib.metrics import (CalibrationAccumulator,
    ...                              expected_calibration_error)
    >>> rng = np.random.default_rng(0)
    >>> proba = rng.dirichlet(np.ones(3), size=1000)
    >>> y = np.array([rng.choice(3, p=p) for p in proba])
    >>> acc = CalibrationAccumulator(n_bins=10)
    >>> for start in range(0, 1000, 300):
    ...     _ = acc.update(y[start:start + 300], proba[start:start + 300])
    >>> acc.n_samples_
    1000
    >>> one_shot = expected_calibration_error(y, proba, n_bins=10)
    >>> bool(abs(acc.expected_calibration_error() - one_shot) < 1e-12)
    True

    Accumulators of different chunks merge:

    >>> left = CalibrationAccumulator(n_bins=10).update(y[:400], proba[:400])
    >>> right = CalibrationAccumulator(n_bins=10).update(y[400:], proba[400:])
    >>> merged = left.merge(right)
    >>> bool(abs(merged.negative_log_likelihood() - acc.negative_log_likelihood())
    ...      < 1e-12)
    True
    """

    @validate_params(
        {
            "n_bins": [Interval(Integral, 1, None, closed="left")],
            "edges": ["array-like", None],
            "labels": ["array-like", None],
            "classwise": ["boolean"],
        },
        prefer_skip_nested_validation=True,
    )
    def __init__(self, n_bins=15, *, edges=None, labels=None, classwise=True):
        self.n_bins = n_bins
        self.edges = edges
        self.labels = labels
        self.classwise = classwise
        # A data container, not an estimator: the edges are resolved here so
        # that accumulators can be compared and merged before any update.
        self.edges_ = check_edges(edges, n_bins)
        self.classes_ = None
        self.n_samples_ = 0
        self.total_weight_ = 0.0
        self._top = None
        self._classwise = None
        self._losses = np.zeros(3)
        # The sums hold weights divided by this (0: no positive weight yet).
        self._scale = 0.0

    # -------------------------------------------------------------- feeding
    @accepts_dask
    def update(self, y_true, y_proba, sample_weight=None):
        """Add the statistics of a chunk of predictions.

        Parameters
        ----------
        y_true : array-like of shape (n_samples,)
            True class labels of the chunk (may be empty).
        y_proba : array-like of shape (n_samples,) or (n_samples, n_classes)
            Predicted probabilities, as for :func:`expected_calibration_error`
            (1-D: of the positive class). Dask arrays (and Dask DataFrames /
            Series) are reduced block by block without being loaded whole.
            Arrays of another array-API namespace (torch, CuPy, ...; with
            ``array_api_dispatch=True``) are moved to the host once, and
            the chunk's sums computed there.
        sample_weight : array-like of shape (n_samples,), default=None
            Sample weights (a chunk's may sum to 0).

        Returns
        -------
        self : CalibrationAccumulator
            Unchanged if the chunk is invalid (the error names the bad row
            of the chunk).
        """
        if (engine := input_kind(y_true, y_proba, sample_weight)) != "numpy":
            return self.merge(accumulate(engine, self, y_true, y_proba, sample_weight))
        if namespace(y_proba) is not None:  # array-API chunk: moved to the host
            y_true, y_proba = to_numpy(y_true), to_numpy(y_proba)
            sample_weight = to_numpy(sample_weight)
        inp, classes = check_chunk(
            y_true,
            y_proba,
            sample_weight,
            classes=self.classes_,
            labels=self.labels,
        )
        if inp is None:
            if classes is not None and self.classes_ is None:
                self._start(classes)
            return self
        edges = [self.edges_] * inp.n_classes
        top = chunk_totals(inp, "top_label", edges)
        cw = (
            chunk_totals(inp, "classwise", edges, check=False)
            if self.classwise
            else None
        )
        losses = loss_sums(inp)
        if self.classes_ is None:
            self._start(classes)
        scale = inp.weight_scale if inp.sample_weight is None or losses[0] else 0.0
        self._add(top, cw, losses, inp.n_samples, scale)
        return self

    def merge(self, other):
        """Add the statistics of another accumulator.

        Parameters
        ----------
        other : CalibrationAccumulator
            Made with the same edges (and ``classwise`` if this one has it);
            its classes must be the same (or either may have seen no data).

        Returns
        -------
        self : CalibrationAccumulator
            This accumulator, now holding the data of both (``other`` is not
            changed). Merging is associative and commutative up to float
            rounding.
        """
        if not isinstance(other, CalibrationAccumulator):
            raise TypeError(
                f"merge needs a CalibrationAccumulator, got {type(other).__name__}."
            )
        if not np.array_equal(self.edges_, other.edges_):
            raise ValueError(
                "cannot merge accumulators with different bin edges: "
                f"{self.edges_.tolist()} and {other.edges_.tolist()}."
            )
        if self.classwise and not other.classwise:
            raise ValueError(
                "cannot merge an accumulator made with classwise=False into one "
                "with classwise=True (it lacks the per-class statistics)."
            )
        if other.classes_ is None:
            return self
        if self.classes_ is None:
            self._start(other.classes_)
        elif not (
            self.classes_.size == other.classes_.size
            and np.array_equal(self.classes_, other.classes_)
        ):
            raise ValueError(
                "cannot merge accumulators of different classes: "
                f"{self.classes_.tolist()} and {other.classes_.tolist()}."
            )
        self._add(
            other._top.copy(),
            other._classwise.copy() if self.classwise else None,
            other._losses.copy(),
            other.n_samples_,
            other._scale,
        )
        return self

    def _start(self, classes):
        shape = (5, classes.size, self.edges_.size - 1)
        self.classes_ = classes
        self._top = np.zeros(shape)
        self._classwise = np.zeros(shape) if self.classwise else None

    def _add(self, top, classwise, losses, n_samples, scale):
        """Add sums whose weights are divided by ``scale`` (changed in place)."""
        self._scale, mine, theirs = merged_scale(self._scale, scale)
        rescale_stats(self._top, mine)
        self._top += rescale_stats(top, theirs)
        if self._classwise is not None:
            rescale_stats(self._classwise, mine)
            self._classwise += rescale_stats(classwise, theirs)
        self._losses *= mine
        self._losses += losses * theirs
        self.n_samples_ += int(n_samples)
        with np.errstate(over="ignore"):
            self.total_weight_ = float(self._losses[LOSS_W] * self._scale)

    # -------------------------------------------------------------- reading
    def _totals(self, kind):
        check_totals(self.n_samples_, self.total_weight_)
        if kind == "confidence":
            return self._top.sum(axis=1, keepdims=True)
        if kind == "top_label":
            return self._top
        if self._classwise is None:
            raise ValueError(
                "kind='classwise' needs the per-class statistics; this "
                "accumulator was made with classwise=False."
            )
        return self._classwise

    @validate_params(_METHOD_CONSTRAINTS, prefer_skip_nested_validation=True)
    def expected_calibration_error(self, *, kind="confidence", norm="l1", debias=False):
        """Expected calibration error of the data seen.

        Parameters
        ----------
        kind : {"confidence", "top_label", "classwise"}, default="confidence"
            See :func:`expected_calibration_error`.
        norm : {"l1", "l2", "max"}, default="l1"
            See :func:`expected_calibration_error`.
        debias : bool, default=False
            Debiased L2 error (``norm="l2"`` only).

        Returns
        -------
        ece : float
            :func:`expected_calibration_error` of the concatenated chunks.
        """
        check_norm(norm, debias)
        return float(reduce_totals(self._totals(kind), kind, norm, debias))

    @validate_params(
        {"kind": _METHOD_CONSTRAINTS["kind"]}, prefer_skip_nested_validation=True
    )
    def maximum_calibration_error(self, *, kind="confidence"):
        """Maximum calibration error of the data seen.

        Parameters
        ----------
        kind : {"confidence", "top_label", "classwise"}, default="confidence"
            See :func:`maximum_calibration_error`.

        Returns
        -------
        mce : float
            :func:`maximum_calibration_error` of the concatenated chunks.
        """
        return float(reduce_totals(self._totals(kind), kind, "max", False))

    @validate_params(
        {k: _METHOD_CONSTRAINTS[k] for k in ("norm", "debias")},
        prefer_skip_nested_validation=True,
    )
    def classwise_calibration_error(self, *, norm="l1", debias=False):
        """Classwise calibration error of the data seen.

        Parameters
        ----------
        norm : {"l1", "l2", "max"}, default="l1"
            Norm of each class's binned error.
        debias : bool, default=False
            Debiased L2 error per class (``norm="l2"`` only).

        Returns
        -------
        error : float
            :func:`classwise_calibration_error` of the concatenated chunks.
        """
        return self.expected_calibration_error(
            kind="classwise", norm=norm, debias=debias
        )

    @validate_params(
        {
            "kind": _METHOD_CONSTRAINTS["kind"],
            "class_index": [Interval(Integral, 0, None, closed="left"), None],
            "confidence_level": [Interval(Real, 0, 1, closed="neither")],
            "interval": [StrOptions({"wilson", "clopper-pearson"})],
        },
        prefer_skip_nested_validation=True,
    )
    def reliability_curve(
        self,
        *,
        kind="confidence",
        class_index=None,
        confidence_level=0.95,
        interval="wilson",
    ):
        """Reliability curve of the data seen.

        Parameters
        ----------
        kind : {"confidence", "top_label", "classwise"}, default="confidence"
            See :func:`reliability_curve`.
        class_index : int, default=None
            Column the curve is about (``"top_label"``, ``"classwise"``).
        confidence_level : float, default=0.95
            Level of the per-bin intervals.
        interval : {"wilson", "clopper-pearson"}, default="wilson"
            Per-bin interval; see :func:`reliability_curve`.

        Returns
        -------
        curve : ReliabilityCurve
            :func:`reliability_curve` of the concatenated chunks; its
            ``strategy`` is ``"uniform"``, or ``"fixed"`` for given edges.
        """
        check_totals(self.n_samples_, self.total_weight_)
        cells, class_index = curve_cells(kind, class_index, self.classes_.size)
        totals = self._totals(cells)[:, 0 if class_index is None else class_index]
        m = self.edges_.size - 1
        uniform = np.array_equal(self.edges_, np.linspace(0.0, 1.0, m + 1))
        return curve_from_totals(
            totals.copy(),
            self.edges_.copy(),
            kind=kind,
            strategy="uniform" if uniform else "fixed",
            class_index=class_index,
            confidence_level=confidence_level,
            weight_scale=self._scale or 1.0,
            interval=interval,
            n_bins=m,
        )

    @validate_params(
        {"scale_by_half": ["boolean", StrOptions({"auto"})]},
        prefer_skip_nested_validation=True,
    )
    def brier_score(self, *, scale_by_half="auto"):
        """Brier score of the data seen.

        Parameters
        ----------
        scale_by_half : bool or "auto", default="auto"
            See :func:`brier_score`.

        Returns
        -------
        score : float
            :func:`brier_score` of the concatenated chunks.
        """
        check_totals(self.n_samples_, self.total_weight_)
        return brier_from_sums(self._losses, self.classes_.size, scale_by_half)

    def negative_log_likelihood(self):
        """Negative log-likelihood of the data seen.

        Returns
        -------
        nll : float
            :func:`negative_log_likelihood` of the concatenated chunks.
        """
        check_totals(self.n_samples_, self.total_weight_)
        return nll_from_sums(self._losses)

    def __repr__(self):
        bins = (
            f"n_bins={self.edges_.size - 1}"
            if self.edges is None
            else f"edges=<{self.edges_.size} edges>"
        )
        return (
            f"{type(self).__name__}({bins}, n_classes="
            f"{None if self.classes_ is None else self.classes_.size}, "
            f"n_samples_={self.n_samples_})"
        )
