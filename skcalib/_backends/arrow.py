"""Column handles of tables (Spark DataFrames, Ray Datasets) and their Arrow
batches as numpy arrays.

A table carries many columns; the metrics take ``y_true``, ``y_proba`` and
``sample_weight`` and the calibrators ``X``, ``y``. A :class:`Columns`
handle names the columns of one table that make one of those arguments; the
engine pairs the handles of one table (:func:`table_of`) and reads each Arrow
batch of the named columns into the numpy arrays that the kernels take
(:func:`batch_arrays`). The names and types are checked when a handle is
made (:func:`check_columns`), before any job; nulls are found by the first
pass, batch by batch. The engine-specific parts (reading the schema, running
the batches) are in :mod:`skcalib._backends.spark` and
:mod:`skcalib._backends.ray`.
"""

import pickle
from dataclasses import dataclass
from functools import partial

import numpy as np

__all__ = []  # private module

#: The column kinds (read from the engine's schema) each role accepts.
ROLE_KINDS = {
    "label": ("integer", "string", "boolean", "float32", "float64"),
    "proba": ("float32", "float64", "integer", "array"),
    "weight": ("float32", "float64", "integer"),
}
ROLE_ARGS = {"label": "label", "proba": "proba", "weight": "weight"}


@dataclass(frozen=True)
class Spec:
    """What one kernel argument reads: its columns, role and shape
    (``"scalar"``: one column, 1-D; ``"columns"``: several, 2-D;
    ``"array"``: one array column, 2-D)."""

    names: tuple
    role: str
    shape: str


class Columns:
    """Columns of one table that make one argument of a metric or a fit.

    Made by the engines' ``columns`` functions; ``_skcalib_engine`` (set by
    the subclass) tells :func:`skcalib._core.inputs.engine_of` which engine
    holds them.
    """

    _skcalib_engine = None

    def __init__(self, table, spec, kinds):
        self.table = table
        self.spec = spec
        self._kinds = kinds

    @property
    def names(self):
        """The column names, in order."""
        return list(self.spec.names)

    @property
    def ndim(self):
        """1 for one scalar column, else 2."""
        return 1 if self.spec.shape == "scalar" else 2

    @property
    def dtype(self):
        """Scores: float32 when every column holds float32, else float64;
        weights: float64; labels: None (their own type)."""
        if self.spec.role == "label":
            return None
        if self.spec.role == "weight":
            return np.float64
        return np.float32 if set(self._kinds) == {"float32"} else np.float64

    def __array__(self, dtype=None, copy=None):
        # Makes the handles array-likes for validate_params; converting one
        # would bring the whole table to the driver.
        engine = self._skcalib_engine.capitalize()
        raise TypeError(
            f"{engine} columns {self.names} cannot be converted to an in-memory "
            f"array (that would bring the whole table to the driver); this "
            f"function needs in-memory arrays, or collect the columns first."
        )

    def __repr__(self):
        engine = self._skcalib_engine.capitalize()
        return f"<{engine} columns {self.names} ({self.spec.role})>"


def _name_list(value, arg):
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, (list, tuple)) or not names:
        raise TypeError(
            f"{arg}= must be a column name or a non-empty list of names, got {value!r}."
        )
    for n in names:
        if not isinstance(n, str):
            raise TypeError(f"{arg}= must hold column names (str), got {n!r}.")
    if len(set(names)) != len(names):
        raise ValueError(f"{arg}= names a column twice: {list(names)}.")
    return list(names)


def _missing(name, arg, available):
    close = [a for a in available if a.lower() == name.lower()]
    hint = f" Did you mean {close[0]!r}?" if close else ""
    return ValueError(
        f"Column {name!r} ({arg}=) is not in the table; its columns are "
        f"{list(available)}.{hint}"
    )


def check_columns(kinds, label=None, proba=None, weight=None, *, hints):
    """The :class:`Spec` of each given argument, checked against ``kinds``
    (a dict: column name to kind, in schema order).

    ``hints``: the engine's advice for a kind, by kind (``"vector"``,
    ``"other"``); raises ``ValueError`` for a missing column and
    ``TypeError`` for a column of the wrong type, each naming the column.
    """
    specs = []
    for role, value in (("label", label), ("proba", proba), ("weight", weight)):
        if value is None:
            continue
        if role != "proba" and not isinstance(value, str):
            raise TypeError(f"{role}= must be one column name, got {value!r}.")
        names = _name_list(value, role)
        for n in names:
            if n not in kinds:
                raise _missing(n, role, kinds)
            kind = kinds[n]
            ok = kind in ROLE_KINDS[role] and not (kind == "array" and len(names) > 1)
            if not ok:
                raise TypeError(_type_message(n, role, kind, hints))
        if len(names) > 1:
            shape = "columns"
        else:
            shape = "array" if kinds[names[0]] == "array" else "scalar"
        specs.append((Spec(tuple(names), role, shape), [kinds[n] for n in names]))
    if not specs:
        raise TypeError("Name at least one column: label=, proba= or weight=.")
    return specs


def _type_message(name, role, kind, hints):
    what = {
        "label": "class labels (integers, strings or booleans)",
        "proba": "probabilities or scores (float or integer columns, or one "
        "array column of floats)",
        "weight": "sample weights (numbers)",
    }[role]
    shown = kind.partition(":")[2] or kind
    advice = hints.get(kind.partition(":")[0], "")
    return f"Column {name!r} ({role}=) has type {shown}; it must hold {what}.{advice}"


def table_of(handles):
    """The one table of ``handles`` (a dict: argument name to handle or
    None); the error says which argument is not a handle or is another
    table's."""
    given = {k: v for k, v in handles.items() if v is not None}
    first = next((v for v in given.values() if isinstance(v, Columns)), None)
    for arg, h in given.items():
        if not isinstance(h, Columns):
            engine = first._skcalib_engine.capitalize()
            raise TypeError(
                f"{arg} is a {type(h).__name__}, not {engine} columns; pass "
                f"every input as columns of one table: "
                f"skcalib.cluster.{first._skcalib_engine}_columns(table, "
                "label=..., proba=..., weight=...)."
            )
        if h.table is not first.table:
            raise ValueError(
                f"{arg} holds columns of another table than the other inputs; "
                "pass columns of one table (join the tables first)."
            )
    return first.table


# ----------------------------------------------------------------- blocks
def weight_range_kernel(w):
    """``(min, max)`` of one block of weights (None when empty); raises
    ``TypeError`` for weights that are not numbers."""
    w = np.asarray(w)
    if w.dtype.kind not in "biuf":
        raise TypeError(f"sample_weight must hold numbers, got dtype {w.dtype}.")
    return None if w.size == 0 else (float(w.min()), float(w.max()))


def weight_range_combine(parts):
    """The range of ranges (None skipped; ``ValueError`` when all are)."""
    parts = [p for p in parts if p is not None]
    if not parts:
        raise ValueError("sample_weight is empty.")
    return min(p[0] for p in parts), max(p[1] for p in parts)


class TableBlocks:
    """The metric inputs as column handles of one table (the blocks protocol
    of :mod:`skcalib._backends.engines`); ``run_pass(handles, kernel, *,
    combine=None, first=False)`` is the engine's one pass, ``n_columns`` of a
    handle its number of score columns."""

    n_rows = None  # not known before a pass

    def __init__(self, run_pass, n_columns, y_true, y_proba, sample_weight=None):
        args = {"y_true": y_true, "y_proba": y_proba, "sample_weight": sample_weight}
        table_of(args)
        _check_label(y_true, "y_true")
        _check_label(sample_weight, "sample_weight")
        self._run_pass, self._n_columns = run_pass, n_columns
        self.y, self.proba, self.weight = y_true, y_proba, sample_weight

    @property
    def n_columns(self):
        n = self._n_columns(self.proba)
        return 1 if (self.proba.ndim == 1 or n == 1) else n

    @property
    def score_dtype(self):
        return self.proba.dtype

    @property
    def weighted(self):
        return self.weight is not None

    def map_reduce(self, kernel, combine, inputs=("y", "proba", "weight")):
        handles = [getattr(self, n) for n in inputs if getattr(self, n) is not None]
        return combine(self._run_pass(handles, kernel, combine=combine))

    def weight_range(self):
        return self.map_reduce(
            weight_range_kernel, weight_range_combine, inputs=("weight",)
        )

    def same_weight_rows(self):
        return True  # columns of one DataFrame

    def drop_weights(self):
        self.weight = None


def _check_label(y, arg):
    if y is not None and isinstance(y, Columns) and y.spec.shape != "scalar":
        raise ValueError(f"{arg} must be one label column, got {y.names}.")


def table_chunk_runner(run_pass, X, y, sample_weight=None):
    """``run(fn, first=False)``: ``fn(X, y, w)`` of each Arrow batch, in
    block order, by the engine's ``run_pass`` (``first``: the first batch of
    each block)."""
    args = {"X": X, "y": y, "sample_weight": sample_weight}
    table_of(args)
    _check_label(y, "y")
    _check_label(sample_weight, "sample_weight")
    handles = [h for h in (X, y, sample_weight) if h is not None]

    def run(fn, first=False):
        kernel = fn if sample_weight is not None else partial(_no_weight, fn)
        return run_pass(handles, kernel, first=first)

    return run


def _no_weight(fn, X, y):
    return fn(X, y, None)


# ---------------------------------------------------------------- batches
def _column(batch, name):
    arr = batch.column(batch.schema.get_field_index(name))
    if arr.null_count:
        raise ValueError(
            f"Column {name!r} holds nulls; drop or fill them first (Spark: "
            f"df.dropna(subset=[{name!r}]))."
        )
    return arr


def _numbers(arr, dtype=None):
    out = arr.to_numpy(zero_copy_only=False)
    return out if dtype is None else out.astype(dtype, copy=False)


def _array_rows(arr, name, n_columns):
    import pyarrow.compute as pc

    lengths = _numbers(pc.list_value_length(arr))
    if lengths.size and (lengths.min() != n_columns or lengths.max() != n_columns):
        bad = int(lengths[np.argmax(lengths != n_columns)])
        raise ValueError(
            f"Column {name!r} has arrays of {bad} values, not {n_columns} (its "
            "first row's); every row needs one value per class."
        )
    values = arr.flatten()
    if values.null_count:
        raise ValueError(f"Column {name!r} holds arrays with null values.")
    return _numbers(values).reshape(len(arr), n_columns)


def batch_array(batch, spec, dtype, n_columns=None):
    """The numpy array of ``spec``'s columns of an Arrow ``batch`` (labels:
    their own type, strings as str; scores and weights: ``dtype``)."""
    if spec.role == "label":
        arr = _column(batch, spec.names[0])
        out = _numbers(arr)
        return out.astype(str) if out.dtype == object else out
    if spec.shape == "array":
        rows = _array_rows(_column(batch, spec.names[0]), spec.names[0], n_columns)
        return rows.astype(dtype, copy=False)
    cols = [_numbers(_column(batch, n), dtype) for n in spec.names]
    return cols[0] if spec.shape == "scalar" else np.column_stack(cols)


def run_batches(batches, kernel, specs, *, combine=None, first=False):
    """The pickled results of ``kernel`` on each batch of ``batches``, in
    order: a list of ``(seq, payload)``; ``combine``: one result of the
    whole list; ``first``: of the first non-empty batch only. A
    ``ValueError``/``TypeError`` of a kernel becomes the one payload
    ``("error", type name, message, batch index)``: the driver raises it."""
    results = []
    for i, batch in enumerate(batches):
        if batch.num_rows == 0:
            continue
        try:
            arrays = [batch_array(batch, *s) for s in specs]
            results.append(kernel(*arrays))
        except (ValueError, TypeError) as exc:
            err = ("error", type(exc).__name__, str(exc), i)
            return [(0, pickle.dumps(err))]
        if first:
            break
    if combine is not None and results:
        results = [combine(results)]
    return [(j, pickle.dumps(("ok", r))) for j, r in enumerate(results)]


def ordered_results(rows, where, names):
    """The kernel results of ``rows`` ``(part, seq, payload)`` in the order
    of the parts and their batches; raises a kernel's error (naming the part
    as ``where`` says) and ``ValueError`` when no part held a row."""
    rows = sorted(rows, key=lambda r: (r[0], r[1]))
    out = []
    for part, _, payload in rows:
        status, *rest = pickle.loads(payload)
        if status == "error":
            kind, message, batch = rest
            error = ValueError if kind == "ValueError" else TypeError
            raise error(
                f"{message} (in {where} {part}, Arrow batch {batch}; rows counted "
                "from the start of the batch)"
            )
        out.append(rest[0])
    if not out:
        raise ValueError(
            f"The table is empty (columns {names}): there is nothing to compute."
        )
    return out
