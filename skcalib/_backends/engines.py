"""The engine seam: where the rows live, and how one pass runs over them.

An *engine* runs skcalib's passes over data that it holds in row blocks
(Dask arrays, Spark DataFrames, Ray Datasets). Every statistic is written
once, as a *kernel* (a function of the numpy arrays of one block, the same
code as for in-memory arrays) and a *combine* (of a list of kernel results,
in block order); the engine only moves blocks and results. Metrics and
calibrators never branch on the engine: they ask
:func:`skcalib._core.inputs.input_kind` for its name and hand the inputs to
:func:`get` (the metrics through :mod:`skcalib.metrics._engine_metrics`, the
chunked fits through :class:`skcalib._backends.chunks.ChunkedData`).

An engine (a module named in :data:`ENGINE_MODULES`, holding an object
``ENGINE``) provides:

``ENGINE.blocks(y_true, y_proba, sample_weight=None)``
    A *blocks* object of the metric inputs: properties ``n_columns``,
    ``n_rows`` (None when unknown), ``score_dtype``, ``weighted``; methods
    ``map_reduce(kernel, combine, inputs=("y", "proba", "weight"))`` (one
    pass: ``combine`` of ``kernel(*arrays)`` over the blocks, in block
    order; ``combine`` may be applied to lists of its own results, so an
    engine can merge partial results where they are computed),
    ``weight_range()`` (the smallest and largest weight; ``ValueError`` or
    ``TypeError`` when there is none or they are not numbers) and
    ``drop_weights()``. Kernel ``ValueError`` s reach the caller as
    ``ValueError`` s that say which block.
``ENGINE.chunk_runner(X, y, sample_weight=None)``
    ``run(fn, first=False)``: the list of ``fn(X, y, w)`` over the row
    blocks, in block order (``first``: of the first block at least); what
    :class:`~skcalib._backends.chunks.ChunkedData` runs its passes with.
``ENGINE.apply(X, func, *, columns, dtype)``
    A lazy collection of the same engine holding ``func(x)`` of each block
    ``x`` of ``X`` (``columns``: the names of the output columns, a string
    for 1-D output; ``dtype``: numpy dtype of the output): what
    ``predict_proba``, ``transform`` and ``predict`` return. Nothing is
    brought to the caller.

Inputs are recognised without importing the engine
(:func:`skcalib._core.inputs.engine_of`): by the module of their type (Dask
collections) or by a class attribute ``_skcalib_engine`` naming the engine
(the column handles of :func:`skcalib._backends.spark.columns` and
:func:`skcalib._backends.ray.columns`, since a DataFrame carries many
columns and the metrics take ``y_true``, ``y_proba``, ``sample_weight``).

A new engine: write its module with ``ENGINE``, name it in
:data:`ENGINE_MODULES` and in :data:`skcalib._core.inputs.ENGINE_TYPES`
(or give its handles ``_skcalib_engine``), and run the equality tests of
``tests/backends/`` on it; no metric or calibrator changes.
"""

import importlib

import numpy as np

from skcalib._core.inputs import _check_y, _resolve_classes
from skcalib._core.inputs import weight_scale as _scale_of
from skcalib._core.labels import present_labels as _present_labels
from skcalib._core.totals import check_totals

__all__ = []  # private module

#: The module of each engine (imported on first use).
ENGINE_MODULES = {
    "dask": "skcalib._backends.dask",
    "spark": "skcalib._backends.spark",
    "ray": "skcalib._backends.ray",
}


def get(name):
    """The ``ENGINE`` of the engine ``name`` (see :data:`ENGINE_MODULES`)."""
    return importlib.import_module(ENGINE_MODULES[name]).ENGINE


# ----------------------------------------------------------------- totals
def sum_parts(parts):
    """Entry-wise sum of tuples of arrays/floats, in order (None skipped);
    None when every part is None (every block empty)."""
    parts = [p for p in parts if p is not None]
    if not parts:
        return None
    total = [np.array(v, dtype=np.float64) for v in parts[0]]
    for part in parts[1:]:
        for t, v in zip(total, part, strict=True):
            t += v
    return tuple(total)


def map_reduce_totals(blocks, kernel, combine=sum_parts):
    """The totals of the whole data: ``combine`` of ``kernel(y, proba[,
    weight])`` over the row blocks, each a pair ``(totals, [n_samples,
    total_weight])`` (None for an empty block).

    Raises the errors of the metric functions for empty or weightless data.
    """
    result = blocks.map_reduce(kernel, combine)
    if result is None:
        check_totals(0, 0.0)
    totals, sizes = result
    check_totals(*sizes)
    return totals


# ----------------------------------------------------------------- classes
def _present_kernel(y):
    y = _check_y(y, allow_empty=True)
    return _present_labels(y) if y.size else y


def _present_combine(parts):
    parts = [p for p in parts if p is not None]
    labels = np.concatenate(parts) if parts else np.zeros(0)
    return _present_labels(labels) if labels.size else labels


def resolve_classes(blocks, labels):
    """The classes of the columns, as the metric functions fix them (one pass
    over ``y_true`` when ``labels`` is None)."""
    if labels is not None:
        return _resolve_classes(np.zeros(0), blocks.n_columns, labels)
    present = blocks.map_reduce(_present_kernel, _present_combine, inputs=("y",))
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
    if not blocks.weighted:
        return None
    try:
        lo, hi = (float(v) for v in blocks.weight_range())
    except (ValueError, TypeError):  # empty, or not numbers
        return 1.0
    if lo == hi and np.isfinite(hi) and hi > 0 and blocks.same_weight_rows():
        # Equal weights are no weights (as check_sample_weight): drop them.
        blocks.drop_weights()
        return hi
    return _scale_of(hi)
