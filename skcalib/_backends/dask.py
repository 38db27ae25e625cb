"""The metrics of Dask arrays: per-block statistics, reduced by summing.

Used only when a metric gets a Dask collection; Dask itself is imported inside
the functions, so that this module imports without it. Every block runs the
chunk functions of :mod:`skcalib.metrics._accumulator` (the same code as the
in-memory metrics) and returns small per-cell sums; a tree of merges adds them
up and only those sums reach the client. Nothing is loaded whole.

Passes over the data (each one ``dask.compute``):

* without ``labels``, one pass over ``y_true`` collects its distinct labels
  (the metric functions resolve the classes from them);
* uniform bins: one pass for the statistics (and the value checks);
* quantile bins: 2 (float32) or 4 (float64) passes of an exact radix
  selection of the quantile edges
  (:class:`~skcalib._core.binning.QuantileEdgeSearch`), then the statistics.

Blocks run on the current Dask scheduler (threads by default, or the
``distributed.Client`` in use).
"""

import copy
import re
from dataclasses import dataclass
from functools import partial

import numpy as np

from skcalib._core.binning import QuantileEdgeSearch, bin_edges
from skcalib._core.inputs import (
    _check_y,
    _present_labels,
    _resolve_classes,
    check_chunk,
    check_n_bins,
    is_dask_collection,
)
from skcalib._core.inputs import weight_scale as _scale_of
from skcalib.metrics._accumulator import (
    CalibrationAccumulator,
    brier_from_sums,
    check_totals,
    check_values,
    chunk_totals,
    grouped_scores,
    loss_sums,
    nll_from_sums,
)
from skcalib.metrics._calibration_error import reduce_totals
from skcalib.metrics._curve import _resolve_class_index, curve_from_totals

__all__ = []  # private module

#: Partial results merged per task of the reduction tree.
SPLIT_EVERY = 16

_ROW_REFERENCE = re.compile(r"\b(row |y_true\[|sample_weight\[)(\d+)")


# ------------------------------------------------------------------ inputs
@dataclass
class Blocks:
    """Dask arrays of the inputs with the same row blocks.

    ``offsets[b]`` is the first row of block ``b`` (None when the block
    sizes are unknown, as for a Dask DataFrame).
    """

    y: object
    proba: object
    weight: object
    offsets: list | None

    @property
    def n_blocks(self):
        return self.proba.numblocks[0]

    @property
    def n_columns(self):
        return 1 if self.proba.ndim == 1 else int(self.proba.shape[1])

    @property
    def n_rows(self):
        """The number of rows, or None when the block sizes are unknown."""
        n = self.proba.shape[0]
        return None if np.isnan(n) else int(n)

    @property
    def score_dtype(self):
        return np.float32 if self.proba.dtype == np.float32 else np.float64


def _to_dask_array(x):
    """A Dask array of a Dask collection (DataFrame, Series, Array)."""
    import dask.array as da

    if isinstance(x, da.Array):
        return x
    if hasattr(x, "to_dask_array"):  # Dask DataFrame / Series
        return x.to_dask_array()
    raise TypeError(
        f"cannot read a {type(x).__name__} as a Dask array; pass a Dask Array, "
        "DataFrame or Series."
    )


def _known(chunks):
    return not any(np.isnan(c) for c in chunks)


def as_blocks(y_true, y_proba, sample_weight=None):
    """Align the inputs (Dask collections or arrays) on the row blocks of
    ``y_proba`` (or of the first Dask input).

    Inputs whose blocks all have unknown sizes (Dask DataFrames) are paired
    block by block (each block then checks that its lengths agree); otherwise
    block sizes are computed where unknown and the other inputs are
    rechunked (or, in memory, split) like the reference.
    """
    import dask.array as da

    given = {"y_true": y_true, "y_proba": y_proba, "sample_weight": sample_weight}
    given = {k: v for k, v in given.items() if v is not None}
    arrays = {k: _to_dask_array(v) for k, v in given.items() if is_dask_collection(v)}
    ref_name = next(k for k in ("y_proba", "y_true", "sample_weight") if k in arrays)
    ref = arrays[ref_name]
    paired = len(arrays) == len(given) and all(
        not _known(a.chunks[0]) and a.numblocks[0] == ref.numblocks[0]
        for a in arrays.values()
    )
    if not paired and not _known(ref.chunks[0]):
        ref = ref.compute_chunk_sizes()
    rows = ref.chunks[0]
    out = {"sample_weight": None}
    for name, x in given.items():
        a = ref if name == ref_name else arrays.get(name)
        if a is None:
            a = np.asarray(x)
            a = da.from_array(a, chunks=(rows,) + a.shape[1:])
        elif not paired and a.chunks[0] != rows:
            if not _known(a.chunks[0]):
                a = a.compute_chunk_sizes()
            a = a.rechunk({0: rows})
        if a.ndim > 2:
            raise ValueError(f"{name} must be 1-D or 2-D, got shape {a.shape}.")
        out[name] = a
    y, proba = out["y_true"], out["y_proba"]
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise ValueError(
            f"y_true must be a 1-D array of class labels, got shape {y.shape}."
        )
    if proba.ndim == 2 and proba.shape[1] == 1:
        proba = proba[:, 0]
    if proba.ndim == 2:
        proba = proba.rechunk({1: -1})
    offsets = None
    if _known(rows):
        offsets = np.concatenate(([0], np.cumsum(rows)[:-1])).astype(int).tolist()
    return Blocks(y, proba, out["sample_weight"], offsets)


# ------------------------------------------------------------- map, reduce
def _shift_rows(message, offset):
    return _ROW_REFERENCE.sub(
        lambda m: f"{m.group(1)}{int(m.group(2)) + offset}", message
    )


def _run_block(block_id, *arrays, kernel, offsets):
    """Run ``kernel`` on one block; errors name the row of the whole input."""
    b = int(np.asarray(block_id).ravel()[0])
    try:
        result = kernel(*arrays)
    except ValueError as exc:
        if offsets is None:
            message = (
                f"{exc} (in block {b} of the Dask input; rows counted from the "
                "start of the block)"
            )
        else:
            message = _shift_rows(str(exc), offsets[b])
        raise ValueError(message) from exc
    out = np.empty(1, dtype=object)
    out[0] = result
    return out


def _combine(combine, *parts, blocks=False):
    """``combine`` of partial results (``blocks``: of blocks, each wrapped in a
    one-element object array)."""
    return combine([p[0] for p in parts] if blocks else list(parts))


def map_reduce(arrays, kernel, combine, offsets):
    """``combine`` (of a list) of ``kernel(*blocks)`` over the row blocks.

    ``arrays`` are Dask arrays with the same row blocks. One ``dask.compute``
    of a tree of merges (``SPLIT_EVERY`` partial results per task).
    """
    import dask
    import dask.array as da

    ids = da.arange(arrays[0].numblocks[0], chunks=1)
    args = [ids, "i"]
    for a in arrays:
        args += [a, "ij"[: a.ndim]]
    parts = da.blockwise(
        _run_block,
        "i",
        *args,
        kernel=kernel,
        offsets=offsets,
        dtype=object,
        concatenate=True,
        align_arrays=False,
        adjust_chunks={"i": 1},
        meta=np.empty((0,), dtype=object),
    )
    tasks = parts.to_delayed().ravel().tolist()
    level = 0
    while len(tasks) > 1 or level == 0:
        merge = dask.delayed(partial(_combine, combine, blocks=level == 0), pure=True)
        tasks = [
            merge(*tasks[i : i + SPLIT_EVERY])
            for i in range(0, len(tasks), SPLIT_EVERY)
        ]
        level += 1
    (result,) = dask.compute(tasks[0])
    return result


def _inputs(blocks):
    arrays = [blocks.y, blocks.proba]
    return arrays if blocks.weight is None else [*arrays, blocks.weight]


# ----------------------------------------------------------------- classes
def _present_kernel(y):
    y = _check_y(y, allow_empty=True)
    return _present_labels(y) if y.size else y


def _present_combine(parts):
    labels = np.concatenate(parts)
    return _present_labels(labels) if labels.size else labels


def resolve_classes(blocks, labels):
    """The classes of the columns, as the metric functions fix them (one pass
    over ``y_true`` when ``labels`` is None)."""
    if labels is not None:
        return _resolve_classes(np.zeros(0), blocks.n_columns, labels)
    present = map_reduce([blocks.y], _present_kernel, _present_combine, blocks.offsets)
    if present.size == 0:
        raise ValueError("y_true is empty; at least one sample is needed.")
    return _resolve_classes(present, blocks.n_columns, None)


def weight_scale(blocks):
    """The power of two just below the largest weight of the whole data (one
    pass over ``sample_weight``), which every block divides its weights by,
    as the metric functions do; None without weights, 1.0 when the weights
    are invalid (the blocks say why) or all 0. Equal positive weights are
    dropped from ``blocks`` and their value returned (as
    :func:`~skcalib._core.inputs.check_sample_weight` does).
    """
    if blocks.weight is None:
        return None
    import dask

    try:
        lo, hi = (
            float(v) for v in dask.compute(blocks.weight.min(), blocks.weight.max())
        )
    except (ValueError, TypeError):  # empty, or not numbers
        return 1.0
    same_rows = blocks.weight.ndim == 1 and blocks.weight.shape[0] == blocks.n_rows
    if lo == hi and np.isfinite(hi) and hi > 0 and same_rows:
        # Equal weights are no weights (as check_sample_weight): drop them.
        blocks.weight = None
        return hi
    return _scale_of(hi)


# ----------------------------------------------------------------- kernels
def _sizes(inp):
    w = inp.sample_weight
    return np.array([inp.n_samples, inp.n_samples if w is None else w.sum()], float)


def _sum_pairs(parts):
    """Add ``(payload, sizes)`` pairs whose payload is an array (or None)."""
    parts = [p for p in parts if p is not None]
    if not parts:
        return None
    payloads = [p[0] for p in parts if p[0] is not None]
    total = None
    if payloads:
        total = payloads[0].copy()
        for p in payloads[1:]:
            total += p
    return total, sum(p[1] for p in parts)


def _totals_kernel(y, proba, weight=None, *, classes, kind, edges, class_index, scale):
    inp, _ = check_chunk(y, proba, weight, classes=classes, weight_scale=scale)
    if inp is None:
        return None
    return chunk_totals(inp, kind, edges, class_index=class_index), _sizes(inp)


def _loss_kernel(y, proba, weight=None, *, classes, scale):
    inp, _ = check_chunk(y, proba, weight, classes=classes, weight_scale=scale)
    if inp is None:
        return None
    check_values(inp)
    return loss_sums(inp), _sizes(inp)


def _search_kernel(y, proba, weight=None, *, classes, kind, class_index, search, scale):
    inp, _ = check_chunk(y, proba, weight, classes=classes, weight_scale=scale)
    if inp is None:
        return None
    if search.level == 0:
        check_values(inp)
    groups = grouped_scores(inp, kind, class_index)
    counts = search.digit_counts([(s, w) for s, _, w in groups])
    return counts, _sizes(inp)


def _search_combine(parts):
    parts = [p for p in parts if p is not None]
    if not parts:
        return None
    return QuantileEdgeSearch.merge([p[0] for p in parts]), sum(p[1] for p in parts)


def _accumulator_kernel(y, proba, weight=None, *, params, classes):
    acc = CalibrationAccumulator(**params, labels=classes)
    return acc.update(y, proba, weight)


def _merge_accumulators(parts):
    total = copy.deepcopy(parts[0])  # never change a task's result in place
    for p in parts[1:]:
        total.merge(p)
    return total


# ------------------------------------------------------------------ passes
def _n_groups(kind, class_index, n_classes):
    return 1 if kind == "confidence" or class_index is not None else n_classes


def _totals(blocks, classes, kind, n_bins, strategy, class_index=None, scale=None):
    """Per-cell statistics of the whole data and the edges of each group
    (weights divided by ``scale``)."""
    n_groups = _n_groups(kind, class_index, classes.size)
    if strategy == "uniform":
        edges = [bin_edges(None, n_bins, "uniform")] * n_groups
    else:
        search = QuantileEdgeSearch(
            n_groups, n_bins, blocks.score_dtype, weighted=blocks.weight is not None
        )
        while not search.done:
            kernel = partial(
                _search_kernel,
                classes=classes,
                kind=kind,
                class_index=class_index,
                search=search,
                scale=scale,
            )
            result = map_reduce(
                _inputs(blocks), kernel, _search_combine, blocks.offsets
            )
            if result is None:
                check_totals(0, 0.0)
            counts, sizes = result
            check_totals(*sizes)
            search.advance(counts)
        edges = search.edges()
    kernel = partial(
        _totals_kernel,
        classes=classes,
        kind=kind,
        edges=edges,
        class_index=class_index,
        scale=scale,
    )
    result = map_reduce(_inputs(blocks), kernel, _sum_pairs, blocks.offsets)
    if result is None:
        check_totals(0, 0.0)
    totals, sizes = result
    check_totals(*sizes)
    return totals, edges


def calibration_error(
    y_true, y_proba, *, n_bins, strategy, kind, norm, debias, sample_weight, labels
):
    """:func:`~skcalib.metrics.expected_calibration_error` of Dask inputs."""
    blocks = as_blocks(y_true, y_proba, sample_weight)
    n_bins = check_n_bins(n_bins, blocks.n_rows)
    classes = resolve_classes(blocks, labels)
    scale = weight_scale(blocks)
    totals, _ = _totals(blocks, classes, kind, n_bins, strategy, scale=scale)
    return float(reduce_totals(totals, kind, norm, debias))


def reliability_curve(
    y_true,
    y_proba,
    *,
    n_bins,
    strategy,
    kind,
    class_index,
    sample_weight,
    labels,
    confidence_level,
):
    """:func:`~skcalib.metrics.reliability_curve` of Dask inputs."""
    blocks = as_blocks(y_true, y_proba, sample_weight)
    n_bins = check_n_bins(n_bins, blocks.n_rows)
    classes = resolve_classes(blocks, labels)
    class_index = _resolve_class_index(kind, class_index, classes.size)
    pooled = "confidence" if kind == "top_label" and class_index is None else kind
    scale = weight_scale(blocks)
    totals, edges = _totals(
        blocks, classes, pooled, n_bins, strategy, class_index, scale=scale
    )
    return curve_from_totals(
        totals[:, 0, : edges[0].size - 1],
        np.array(edges[0]),
        kind=kind,
        strategy=strategy,
        class_index=class_index,
        confidence_level=confidence_level,
        weight_scale=1.0 if scale is None else scale,
    )


def proper_score(y_true, y_proba, *, loss, sample_weight, labels, scale_by_half=None):
    """:func:`~skcalib.metrics.brier_score` (``loss="brier"``) or
    :func:`~skcalib.metrics.negative_log_likelihood` of Dask inputs."""
    blocks = as_blocks(y_true, y_proba, sample_weight)
    classes = resolve_classes(blocks, labels)
    kernel = partial(_loss_kernel, classes=classes, scale=weight_scale(blocks))
    result = map_reduce(_inputs(blocks), kernel, _sum_pairs, blocks.offsets)
    if result is None:
        check_totals(0, 0.0)
    sums, sizes = result
    check_totals(*sizes)
    if loss == "brier":
        return brier_from_sums(sums, classes.size, scale_by_half)
    return nll_from_sums(sums)


def accumulate(acc, y_true, y_proba, sample_weight=None):
    """A :class:`CalibrationAccumulator` like ``acc`` holding the Dask inputs."""
    blocks = as_blocks(y_true, y_proba, sample_weight)
    classes = acc.classes_
    if classes is None:
        classes = resolve_classes(blocks, acc.labels)
    params = {"n_bins": acc.n_bins, "edges": acc.edges, "classwise": acc.classwise}
    kernel = partial(_accumulator_kernel, params=params, classes=classes)
    return map_reduce(_inputs(blocks), kernel, _merge_accumulators, blocks.offsets)
