"""The Ray engine of :mod:`skcalib._backends.engines` (:data:`ENGINE`).

The inputs are column handles of one Ray Dataset (:func:`columns`). A pass
is one execution of ``map_batches`` (whole blocks, as Arrow tables) that
runs the pass's kernel on each block and emits one row holding its pickled
result; the rows come back in block order (the pass runs with Ray Data's
``preserve_order``) and are combined in that order. ``predict_proba``
returns a Dataset (``map_batches``, lazily). :func:`make_aggregation` makes
:class:`~skcalib.metrics.CalibrationAccumulator` a Ray aggregation
(``ds.aggregate``). Ray is imported inside the functions.
"""

import copy
import pickle
from functools import partial

import numpy as np

from skcalib._backends.arrow import (
    Columns,
    TableBlocks,
    ordered_results,
    run_batches,
    table_chunk_runner,
    table_of,
)
from skcalib._backends.arrow import batch_array as _batch_array
from skcalib._backends.arrow import check_columns as _check_columns

__all__ = []  # private module

_HINTS = {
    "other": " Convert it first, e.g. ds.map_batches(...) to a numeric column.",
}


class RayColumns(Columns):
    """Columns of one Ray Dataset (see :func:`columns`)."""

    _skcalib_engine = "ray"


def _kind(t):
    """The kind of an Arrow column type (see :data:`arrow.ROLE_KINDS`)."""
    import pyarrow as pa

    types = pa.types
    if types.is_integer(t):
        return "integer"
    if types.is_float32(t):
        return "float32"
    if types.is_float64(t):
        return "float64"
    if types.is_string(t) or types.is_large_string(t):
        return "string"
    if types.is_boolean(t):
        return "boolean"
    lists = (types.is_list, types.is_large_list, types.is_fixed_size_list)
    if any(f(t) for f in lists) and (
        types.is_floating(t.value_type) or types.is_integer(t.value_type)
    ):
        return "array"
    return f"other:{t}"


def columns(ds, *, label=None, proba=None, weight=None):
    """Handles of the label, score and weight columns of ``ds``.

    See :func:`skcalib.cluster.ray_columns`, which documents it.
    """
    if not (hasattr(ds, "map_batches") and hasattr(ds, "schema")):
        raise TypeError(
            f"ds must be a Ray Dataset, got {type(ds).__name__}; build one with "
            "ray.data.read_parquet(...) or ray.data.from_pandas(...)."
        )
    schema = ds.schema()
    if schema is None:
        raise ValueError("The Ray Dataset is empty: it has no columns.")
    kinds = dict(zip(schema.names, map(_kind, schema.types), strict=True))
    specs = _check_columns(kinds, label, proba, weight, hints=_HINTS)
    return tuple(RayColumns(ds, spec, k) for spec, k in specs)


# ----------------------------------------------------------------- passes
def _block(table, *, kernel, specs, combine, first):
    import pyarrow as pa

    parts = run_batches(table.to_batches(), kernel, specs, combine=combine, first=first)
    return pa.table(
        {
            "seq": pa.array([s for s, _ in parts], pa.int64()),
            "payload": pa.array([p for _, p in parts], pa.binary()),
        }
    )


def _ordered(ds):
    """``ds`` executed with Ray Data's ``preserve_order`` (the rows in block
    order), the setting restored after."""
    from ray.data import DataContext

    options = DataContext.get_current().execution_options
    kept = options.preserve_order
    options.preserve_order = True
    try:
        return ds.take_all()
    finally:
        options.preserve_order = kept


def run_pass(handles, kernel, *, combine=None, first=False):
    """``kernel(*arrays)`` of the blocks of ``handles`` (one array per
    handle), one Ray Data execution: the list of results in block order
    (``combine``: one per block)."""
    ds = table_of({f"input {i}": h for i, h in enumerate(handles)})
    specs = [(h.spec, h.dtype, _n_columns(h)) for h in handles]
    names = list(dict.fromkeys(n for h in handles for n in h.names))
    fn = partial(_block, kernel=kernel, specs=specs, combine=combine, first=first)
    out = ds.select_columns(names).map_batches(
        fn, batch_format="pyarrow", batch_size=None, zero_copy_batch=True
    )
    # a block's rows come together, seq 0, 1, ...: its index is its first row's
    rows = [(i - r["seq"], r["seq"], r["payload"]) for i, r in enumerate(_ordered(out))]
    return ordered_results(rows, "block", names)


def _n_columns(handle):
    """The number of score columns (a list column: its first row's length,
    read once per handle)."""
    if handle.spec.shape != "array":
        return len(handle.names)
    cached = getattr(handle, "_n_columns", None)
    if cached is None:
        name = handle.names[0]
        rows = handle.table.select_columns([name]).take(1)
        if not rows:
            raise ValueError(
                f"The table is empty (columns {[name]}): there is nothing to compute."
            )
        cached = handle._n_columns = len(rows[0][name])
    return cached


def blocks(y_true, y_proba, sample_weight=None):
    """The blocks of column handles of one Dataset (see
    :class:`~skcalib._backends.arrow.TableBlocks`)."""
    return TableBlocks(run_pass, _n_columns, y_true, y_proba, sample_weight)


def chunk_runner(X, y, sample_weight=None):
    """``run(fn, first=False)``: ``fn(X, y, w)`` of each block, in order."""
    return table_chunk_runner(run_pass, X, y, sample_weight)


# ---------------------------------------------------------------- predict
def _apply_block(table, *, func, spec, columns, n_columns, dtype, out_dtype):
    import pyarrow as pa

    k = len(columns)
    x = _batch_array(table.combine_chunks().to_batches()[0], spec, dtype, n_columns)
    out = func(x) if table.num_rows else np.zeros((0, k), dtype=out_dtype)
    out = np.asarray(out, dtype=out_dtype).reshape(table.num_rows, k)
    for j, name in enumerate(columns):
        table = table.append_column(name, pa.array(out[:, j]))
    return table


def apply(X, func, *, columns, dtype):
    """The Dataset of ``X`` with the columns ``func`` of each block of
    ``X``'s columns appended (``map_batches``: lazy)."""
    table_of({"X": X})
    ds = X.table
    names = [columns] if isinstance(columns, str) else list(columns)
    clash = [n for n in names if n in ds.schema().names]
    if clash:
        raise ValueError(
            f"The Dataset already has the column(s) {clash} that would hold "
            "the output; rename or drop them first."
        )
    fn = partial(
        _apply_block,
        func=func,
        spec=X.spec,
        columns=names,
        n_columns=_n_columns(X),
        dtype=X.dtype,
        out_dtype=X.dtype if dtype is None else dtype,
    )
    return ds.map_batches(fn, batch_format="pyarrow", batch_size=None)


# ------------------------------------------------------------ aggregation
def make_aggregation(accumulator, *, label, proba, weight=None):
    """A Ray ``AggregateFnV2`` that fills copies of ``accumulator`` (see
    :func:`skcalib.cluster.accumulator_aggregation`)."""
    from ray.data.aggregate import AggregateFnV2

    if accumulator.n_samples_ or accumulator.classes_ is not None:
        raise ValueError(
            "accumulator must be empty (a fresh CalibrationAccumulator): it is "
            "the zero of the aggregation."
        )
    roles = {"label": label, "proba": proba, "weight": weight}
    roles = {k: v for k, v in roles.items() if v is not None}
    zero = pickle.dumps(accumulator)

    class CalibrationAggregation(AggregateFnV2):
        def __init__(self):
            super().__init__("calibration", lambda: zero, on=None, ignore_nulls=False)

        def aggregate_block(self, block):
            acc = pickle.loads(zero)
            for batch in _arrow(block).to_batches():
                if batch.num_rows:
                    acc.update(*_aggregation_arrays(batch, roles))
            return pickle.dumps(acc)

        def combine(self, current, new):
            total = copy.deepcopy(pickle.loads(current))
            return pickle.dumps(total.merge(pickle.loads(new)))

        def finalize(self, accumulator):
            return pickle.loads(accumulator)

    return CalibrationAggregation()


def _arrow(block):
    from ray.data.block import BlockAccessor

    return BlockAccessor.for_block(block).to_arrow()


def _aggregation_arrays(batch, roles):
    """The numpy arrays of the named columns of one batch, checked as
    :func:`columns` checks them."""
    kinds = {f.name: _kind(f.type) for f in batch.schema}
    specs = _check_columns(kinds, **roles, hints=_HINTS)
    arrays = []
    for spec, _ in specs:
        dtype = None if spec.role == "label" else np.float64
        n = len(batch.column(spec.names[0])[0]) if spec.shape == "array" else None
        arrays.append(_batch_array(batch, spec, dtype, n))
    return arrays


class _Engine:
    """The Ray engine (see :mod:`skcalib._backends.engines`)."""

    name = "ray"
    blocks = staticmethod(blocks)
    chunk_runner = staticmethod(chunk_runner)
    apply = staticmethod(apply)


ENGINE = _Engine()
