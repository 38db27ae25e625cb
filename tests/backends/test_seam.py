"""The engine seam without an engine: how inputs are recognised, the column
checks of the handles, and the order in which per-partition results are
combined (fast; no Spark, Ray or Dask needed)."""

import pickle
import subprocess
import sys

import numpy as np
import pytest

from skcalib._backends import engines
from skcalib._backends.arrow import (
    Columns,
    Spec,
    check_columns,
    ordered_results,
    table_of,
)
from skcalib._core.inputs import engine_of, input_kind

KINDS = {"y": "integer", "p0": "float64", "p1": "float32", "s": "string"}
KINDS |= {"arr": "array", "vec": "vector:vector (pyspark.ml)", "t": "other:timestamp"}
HINTS = {"vector": " Use vector_to_array.", "other": " Cast it."}


class _Handle(Columns):
    _skcalib_engine = "spark"


def _handle(table, names, role="proba", shape="columns"):
    return _Handle(table, Spec(tuple(names), role, shape), ["float64"] * len(names))


def test_every_engine_is_named_in_one_registry():
    assert set(engines.ENGINE_MODULES) == {"dask", "spark", "ray"}
    for name in engines.ENGINE_MODULES:
        engine = engines.get(name)
        assert engine.name == name
        for attr in ("blocks", "chunk_runner", "apply"):
            assert callable(getattr(engine, attr))


def test_inputs_recognised_without_importing_an_engine():
    code = (
        "import sys, skcalib.cluster, skcalib.metrics; "
        "print(sorted(m for m in ('pyspark', 'ray', 'dask') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"
    h = _handle(object(), ["p0", "p1"])
    assert engine_of(h) == "spark" and engine_of(np.zeros(3)) is None
    assert input_kind(None, np.zeros(3)) == "numpy"
    assert input_kind(np.zeros(3), h, None) == "spark"


def test_inputs_of_two_engines_are_refused():
    class _Ray(Columns):
        _skcalib_engine = "ray"

    r = _Ray(object(), Spec(("y",), "label", "scalar"), ["integer"])
    with pytest.raises(TypeError, match=r"different engines \(\['ray', 'spark'\]\)"):
        input_kind(r, _handle(object(), ["p0"]))


def test_column_checks_name_the_column():
    (label, proba) = check_columns(KINDS, "y", ["p0", "p1"], hints=HINTS)
    assert label[0] == Spec(("y",), "label", "scalar")
    assert proba[0] == Spec(("p0", "p1"), "proba", "columns")
    assert check_columns(KINDS, proba="arr", hints=HINTS)[0][0].shape == "array"
    with pytest.raises(ValueError, match=r"'Y' \(label=\) is not in.*'y'\?"):
        check_columns(KINDS, "Y", hints=HINTS)
    with pytest.raises(
        TypeError, match=r"'vec' \(proba=\) has type vector .*vector_to"
    ):
        check_columns(KINDS, proba="vec", hints=HINTS)
    with pytest.raises(TypeError, match=r"'t' \(weight=\) has type timestamp.*Cast"):
        check_columns(KINDS, weight="t", hints=HINTS)
    with pytest.raises(TypeError, match=r"'s' \(proba=\) has type string"):
        check_columns(KINDS, proba=["p0", "s"], hints=HINTS)
    with pytest.raises(TypeError, match=r"'arr' \(proba=\)"):  # arrays come alone
        check_columns(KINDS, proba=["p0", "arr"], hints=HINTS)
    with pytest.raises(ValueError, match="names a column twice"):
        check_columns(KINDS, proba=["p0", "p0"], hints=HINTS)
    with pytest.raises(TypeError, match="at least one column"):
        check_columns(KINDS, hints=HINTS)


def test_handles_of_one_table_only():
    t = object()
    a, b = _handle(t, ["p0"]), _handle(object(), ["p1"])
    assert table_of({"y_true": a, "y_proba": a, "sample_weight": None}) is t
    with pytest.raises(ValueError, match="y_proba holds columns of another table"):
        table_of({"y_true": a, "y_proba": b})
    with pytest.raises(TypeError, match="y_true is a ndarray, not Spark columns"):
        table_of({"y_proba": a, "y_true": np.zeros(2)})
    with pytest.raises(TypeError, match="cannot be converted to an in-memory"):
        np.asarray(a)


def test_results_combined_in_partition_order_and_errors_raised():
    ok = [(p, s, pickle.dumps(("ok", (p, s)))) for p in (2, 0, 1) for s in (1, 0)]
    assert ordered_results(ok, "partition", ["y"]) == [
        (p, s) for p in (0, 1, 2) for s in (0, 1)
    ]
    bad = ok + [(5, 0, pickle.dumps(("error", "ValueError", "y_true[3] is bad", 2)))]
    with pytest.raises(ValueError, match=r"y_true\[3\] is bad \(in partition 5, Arrow"):
        ordered_results(bad, "partition", ["y"])
    with pytest.raises(ValueError, match=r"The table is empty \(columns \['y'\]\)"):
        ordered_results([], "partition", ["y"])
