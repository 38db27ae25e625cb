"""The Spark engine of :mod:`skcalib._backends.engines` (:data:`ENGINE`).

The inputs are column handles of one Spark DataFrame (:func:`columns`). A
pass is one Spark job: ``mapInArrow`` over the DataFrame's partitions runs
the pass's kernel on each Arrow batch of the named columns (the numpy code
of the in-memory path), merges the batch results of the partition, and emits
one row ``(partition id, 0, pickled result)``; the driver collects those
rows only, sorts them by partition id and combines them in that order, so
the result depends on neither the scheduling nor a retried task. The rows
of the data never reach the driver; ``predict_proba`` returns a DataFrame
(``mapInArrow`` again, lazily). PySpark is imported inside the functions.
"""

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

_RESULT_SCHEMA = "part long, seq long, payload binary"
_HINTS = {
    "vector": " Convert an ML vector with "
    "pyspark.ml.functions.vector_to_array(df[name]) first.",
    "other": " Cast it first, e.g. df.withColumn(name, df[name].cast('double')).",
}


class SparkColumns(Columns):
    """Columns of one Spark DataFrame (see :func:`columns`)."""

    _skcalib_engine = "spark"


def _kind(data_type):
    """The kind of a Spark column type (see :data:`arrow.ROLE_KINDS`)."""
    from pyspark.sql import types as T

    simple = {
        T.FloatType: "float32",
        T.DoubleType: "float64",
        T.StringType: "string",
        T.BooleanType: "boolean",
    }
    for cls, kind in simple.items():
        if isinstance(data_type, cls):
            return kind
    if isinstance(data_type, T.IntegralType):
        return "integer"
    if isinstance(data_type, T.ArrayType) and isinstance(
        data_type.elementType, (T.FloatType, T.DoubleType, T.IntegralType)
    ):
        return "array"
    if type(data_type).__name__ == "VectorUDT":
        return "vector:vector (pyspark.ml)"
    return f"other:{data_type.simpleString()}"


def columns(df, *, label=None, proba=None, weight=None):
    """Handles of the label, score and weight columns of ``df``.

    See :func:`skcalib.cluster.spark_columns`, which documents it.
    """
    if not (hasattr(df, "mapInArrow") and hasattr(df, "schema")):
        raise TypeError(
            f"df must be a Spark DataFrame, got {type(df).__name__}; build one "
            "with spark.read.parquet(...) or spark.createDataFrame(...)."
        )
    kinds = {f.name: _kind(f.dataType) for f in df.schema.fields}
    specs = _check_columns(kinds, label, proba, weight, hints=_HINTS)
    return tuple(SparkColumns(df, spec, k) for spec, k in specs)


# ----------------------------------------------------------------- passes
def _partition(batches, *, kernel, specs, combine, first):
    import pyarrow as pa
    from pyspark import TaskContext

    part = TaskContext.get().partitionId()
    for seq, payload in run_batches(
        batches, kernel, specs, combine=combine, first=first
    ):
        yield pa.RecordBatch.from_pydict(
            {"part": [part], "seq": [seq], "payload": [payload]},
            schema=pa.schema(
                [("part", pa.int64()), ("seq", pa.int64()), ("payload", pa.binary())]
            ),
        )


def run_pass(handles, kernel, *, combine=None, first=False):
    """``kernel(*arrays)`` of the Arrow batches of ``handles`` (one array
    per handle), one Spark job: the list of results in partition order
    (``combine``: one per partition, merged where computed; ``first``: the
    first batch of each partition only)."""
    df = table_of({f"input {i}": h for i, h in enumerate(handles)})
    specs = [(h.spec, h.dtype, _n_columns(h)) for h in handles]
    names = list(dict.fromkeys(n for h in handles for n in h.names))
    fn = partial(_partition, kernel=kernel, specs=specs, combine=combine, first=first)
    rows = df.select(*names).mapInArrow(fn, _RESULT_SCHEMA).collect()
    rows = [(r["part"], r["seq"], r["payload"]) for r in rows]
    return ordered_results(rows, "partition", names)


def _n_columns(handle):
    """The number of score columns (an array column: its first row's length,
    read by a one-row job, once per handle)."""
    if handle.spec.shape != "array":
        return len(handle.names)
    cached = getattr(handle, "_n_columns", None)
    if cached is None:
        from pyspark.sql import functions as F

        name = handle.names[0]
        row = handle.table.select(F.size(name).alias("k")).first()
        if row is None:
            raise ValueError(
                f"The table is empty (columns {[name]}): there is nothing to compute."
            )
        cached = handle._n_columns = int(row["k"])
    return cached


def blocks(y_true, y_proba, sample_weight=None):
    """The blocks of column handles of one DataFrame (see
    :class:`~skcalib._backends.arrow.TableBlocks`)."""
    return TableBlocks(run_pass, _n_columns, y_true, y_proba, sample_weight)


def chunk_runner(X, y, sample_weight=None):
    """``run(fn, first=False)``: ``fn(X, y, w)`` of each Arrow batch, in
    partition order (``first``: the first batch of each partition)."""
    return table_chunk_runner(run_pass, X, y, sample_weight)


# ---------------------------------------------------------------- predict
def _spark_type(dtype):
    from pyspark.sql import types as T

    kind = np.dtype(dtype).kind
    if kind == "f":
        return T.FloatType() if np.dtype(dtype) == np.float32 else T.DoubleType()
    if kind in "iu":
        return T.LongType()
    if kind == "b":
        return T.BooleanType()
    return T.StringType()


def _apply_partition(batches, *, func, spec, columns, n_columns, dtype, out_dtype):
    import pyarrow as pa

    k = len(columns)
    for batch in batches:
        x = _batch_array(batch, spec, dtype, n_columns)
        out = func(x) if batch.num_rows else np.zeros((0, k), dtype=out_dtype)
        out = np.asarray(out, dtype=out_dtype).reshape(batch.num_rows, k)
        new = [pa.array(out[:, j]) for j in range(k)]
        yield pa.RecordBatch.from_arrays(
            list(batch.columns) + new, names=batch.schema.names + columns
        )


def apply(X, func, *, columns, dtype):
    """The DataFrame of ``X`` with the columns ``func`` of each Arrow batch
    of ``X``'s columns appended (a ``mapInArrow``: lazy; nothing reaches
    the driver)."""
    from pyspark.sql import types as T

    table_of({"X": X})
    df = X.table
    one = isinstance(columns, str)
    names = [columns] if one else list(columns)
    clash = [n for n in names if n in df.columns]
    if clash:
        raise ValueError(
            f"The DataFrame already has the column(s) {clash} that would hold "
            "the output; rename or drop them first."
        )
    if dtype is None:
        dtype = X.dtype
    fields = [T.StructField(n, _spark_type(dtype), False) for n in names]
    schema = T.StructType(list(df.schema.fields) + fields)
    fn = partial(
        _apply_partition,
        func=func,
        spec=X.spec,
        columns=names,
        n_columns=_n_columns(X),
        dtype=X.dtype,
        out_dtype=dtype,
    )
    return df.mapInArrow(fn, schema)


class _Engine:
    """The Spark engine (see :mod:`skcalib._backends.engines`)."""

    name = "spark"
    blocks = staticmethod(blocks)
    chunk_runner = staticmethod(chunk_runner)
    apply = staticmethod(apply)


ENGINE = _Engine()
