"""Dask collections as row blocks, and one map-reduce over them.

The Dask engine of :mod:`skcalib._backends.engines` (:data:`ENGINE`). Used
only when a function gets a Dask collection; Dask itself is imported inside
the functions, so that this module imports without it. A pass runs a
kernel on every row block (the same code as for in-memory arrays) and
returns small partial results (per-cell sums, label sets); a tree of merges
adds them up and only those results reach the client. Nothing is loaded
whole. Blocks run on the current Dask scheduler (threads by default, or the
``distributed.Client`` in use). The metrics of Dask inputs are in
:mod:`skcalib.metrics._engine_metrics`.
"""

import re
from dataclasses import dataclass
from functools import partial

import numpy as np

from skcalib._core.inputs import is_dask_collection

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

    @property
    def weighted(self):
        return self.weight is not None

    def map_reduce(self, kernel, combine, inputs=("y", "proba", "weight")):
        """One pass: ``combine`` of ``kernel`` over the blocks of ``inputs``
        (see :mod:`skcalib._backends.engines`)."""
        arrays = [getattr(self, name) for name in inputs]
        arrays = [a for a in arrays if a is not None]
        return map_reduce(arrays, kernel, combine, self.offsets)

    def weight_range(self):
        import dask

        return dask.compute(self.weight.min(), self.weight.max())

    def same_weight_rows(self):
        return self.weight.ndim == 1 and self.weight.shape[0] == self.n_rows

    def drop_weights(self):
        self.weight = None


def to_dask_array(x, *, lengths=False):
    """A Dask array of a Dask collection (Array, DataFrame, Series) or of an
    in-memory array; ``lengths``: compute the block sizes of a DataFrame."""
    import dask.array as da

    if isinstance(x, da.Array):
        return x
    if hasattr(x, "to_dask_array"):  # Dask DataFrame / Series
        return x.to_dask_array(lengths=True) if lengths else x.to_dask_array()
    if is_dask_collection(x):
        raise TypeError(
            f"cannot read a {type(x).__name__} as a Dask array; pass a Dask "
            "Array, DataFrame or Series."
        )
    return da.asarray(x)


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
    arrays = {k: to_dask_array(v) for k, v in given.items() if is_dask_collection(v)}
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


# ------------------------------------------------------------------ engine
def chunk_runner(X, y, sample_weight=None):
    """``run(fn, first=False)`` over the row blocks of ``X`` (Dask arrays or
    DataFrames; ``y`` and the weights rechunked like ``X``): one
    ``dask.compute`` of one task per block."""
    import dask

    X = to_dask_array(X, lengths=True)
    if X.ndim == 2:
        X = X.rechunk({1: -1})
    rows = (X.chunks[0],)
    y = to_dask_array(y, lengths=True)
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows but y has {y.shape[0]}.")
    y = y.rechunk(rows)
    blocks = [X.to_delayed().ravel(), y.to_delayed().ravel()]
    if sample_weight is not None:
        w = to_dask_array(sample_weight, lengths=True)
        if w.shape[0] != X.shape[0]:
            raise ValueError(
                f"X has {X.shape[0]} rows but sample_weight has {w.shape[0]}."
            )
        blocks.append(w.rechunk(rows).to_delayed().ravel())
    else:
        blocks.append([None] * len(blocks[0]))

    def run(fn, first=False):
        tasks = [dask.delayed(fn)(*b) for b in zip(*blocks, strict=True)]
        if first:  # only the first block is computed
            return [tasks[0].compute()]
        return list(dask.compute(*tasks))

    return run


def apply(X, func, *, columns, dtype):
    """``func`` of each row block of ``X``, lazily (``map_blocks``): a Dask
    array of ``len(columns)`` columns, or 1-D when ``columns`` is a str
    (``dtype`` None: float32 for float32 ``X``, else float64)."""
    X = to_dask_array(X, lengths=True)
    if dtype is None:
        dtype = np.float32 if X.dtype == np.float32 else np.float64
    if X.ndim == 2:
        X = X.rechunk({1: -1})
    if isinstance(columns, str):
        shape = {"drop_axis": 1} if X.ndim == 2 else {}
        meta = np.empty((0,), dtype=dtype)
        return X.map_blocks(func, dtype=dtype, meta=meta, **shape)
    shape = {"new_axis": 1} if X.ndim == 1 else {}
    return X.map_blocks(
        func,
        chunks=(X.chunks[0], (len(columns),)),
        dtype=dtype,
        meta=np.empty((0, 0), dtype=dtype),
        **shape,
    )


class _Engine:
    """The Dask engine (see :mod:`skcalib._backends.engines`)."""

    name = "dask"
    blocks = staticmethod(as_blocks)
    chunk_runner = staticmethod(chunk_runner)
    apply = staticmethod(apply)


ENGINE = _Engine()
