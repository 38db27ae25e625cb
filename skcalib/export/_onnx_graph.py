"""A small builder of ONNX graphs on :mod:`onnx.helper`, and the arithmetic
that the exported calibrators share (softmax, log-softmax, sigmoid, log1p).

Every tensor is a name; the builder remembers each name's numpy dtype, so a
Python number or numpy array given as an operand becomes a constant of the
dtype of the first tensor operand (a float64 map on float64 values, a
float32 step on float32 values: the graph computes each step in the dtype
that ``predict_proba`` uses for it). ``onnx`` is imported here only, when a
graph is built.
"""

import numpy as np

__all__ = []  # private module

#: The oldest opset whose form of an operator the builder writes (axes of
#: ReduceSum, Squeeze and Unsqueeze as an input: 13); operators not listed
#: exist in that form since opset 7 or before.
MIN_OPSET = {
    "ArgMax": 12,
    "CumSum": 11,
    "Equal": 11,
    "GreaterOrEqual": 12,
    "LessOrEqual": 12,
    "ReduceMax": 13,
    "ReduceMin": 13,
    "ReduceSum": 13,
    "Squeeze": 13,
    "TopK": 11,
    "Unsqueeze": 13,
    "Where": 9,
}
#: The oldest opset a skcalib graph can be written for (see MIN_OPSET).
OLDEST_OPSET = max(MIN_OPSET.values())
#: ``to_onnx``'s default: an opset that onnxruntime has run since 1.14.
DEFAULT_OPSET = 18

_COMPARISONS = {"Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual"}
_LOGICAL = {"And", "Or", "Not"}


def tensor_type(dtype):
    """The ``TensorProto`` element type of a numpy dtype."""
    from onnx import TensorProto, helper

    if np.dtype(dtype) == object:
        return TensorProto.STRING
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


class Graph:
    """Nodes and constants of an ONNX graph under construction.

    Parameters
    ----------
    opset : int
        The target opset of the default domain; an operator whose written
        form needs a newer one is a ``ValueError`` naming it.
    prefix : str
        Prefix of every name the builder makes (unique inside a larger
        graph, such as a skl2onnx conversion).
    owner : str
        The exported class, named in the messages.
    """

    def __init__(self, opset, prefix="", owner="the calibrator"):
        self.opset = int(opset)
        self.prefix = prefix
        self.owner = owner
        self.nodes = []
        self.initializers = []
        self._dtypes = {}
        self._count = 0
        self._constants = {}

    # ---------------------------------------------------------------- names
    def fresh(self, hint):
        self._count += 1
        return f"{self.prefix}{hint}_{self._count}"

    def declare(self, name, dtype):
        """Record the dtype of a tensor made outside the builder (an input)."""
        self._dtypes[name] = np.dtype(dtype)
        return name

    def dtype(self, name):
        return self._dtypes[name]

    def const(self, value, dtype, hint="c"):
        """A constant tensor of ``value`` in ``dtype`` (shared when repeated)."""
        from onnx import numpy_helper

        array = np.array(value, dtype=dtype, order="C")
        key = (array.dtype.str, array.shape, array.tobytes())
        if key in self._constants:
            return self._constants[key]
        name = self.fresh(hint)
        self.initializers.append(numpy_helper.from_array(array, name))
        self._dtypes[name] = array.dtype
        self._constants[key] = name
        return name

    # ------------------------------------------------------------ operators
    def _check_opset(self, op_type):
        needed = MIN_OPSET.get(op_type, 1)
        if self.opset < needed:
            raise ValueError(
                f"target_opset={self.opset} is too old for the ONNX operator "
                f"{op_type} that the graph of {self.owner} uses (it needs opset >= "
                f"{needed}); pass target_opset >= {OLDEST_OPSET}."
            )

    def _operands(self, inputs, dtype):
        names = []
        for x in inputs:
            if x is None or isinstance(x, str):
                names.append("" if x is None else x)
            else:
                names.append(self.const(x, dtype))
        return names

    def node(self, op_type, inputs, n_out=1, out_dtypes=None, hint=None, **attrs):
        """Add a node; its output names (a list of ``n_out``)."""
        from onnx import helper

        self._check_opset(op_type)
        outputs = [self.fresh(hint or op_type.lower()) for _ in range(n_out)]
        self.nodes.append(
            helper.make_node(
                op_type, inputs, outputs, name=self.fresh(f"n_{op_type}"), **attrs
            )
        )
        for name, dtype in zip(outputs, out_dtypes, strict=True):
            self._dtypes[name] = np.dtype(dtype)
        return outputs

    def op(self, op_type, *inputs, out_dtype=None, hint=None, **attrs):
        """One-output node; numbers among ``inputs`` become constants of the
        dtype of the first tensor input. Comparisons give booleans."""
        first = next(x for x in inputs if isinstance(x, str))
        dtype = self._dtypes[first]
        if out_dtype is None:
            out_dtype = bool if op_type in _COMPARISONS | _LOGICAL else dtype
        names = self._operands(inputs, dtype)
        return self.node(op_type, names, 1, [out_dtype], hint=hint, **attrs)[0]

    # ----------------------------------------------------------- shorthands
    def add(self, a, b):
        return self.op("Add", a, b)

    def sub(self, a, b):
        if not isinstance(a, str):  # a number minus a tensor
            a = self.const(a, self._dtypes[b])
        return self.op("Sub", a, b)

    def mul(self, a, b):
        return self.op("Mul", a, b)

    def div(self, a, b):
        if not isinstance(a, str):
            a = self.const(a, self._dtypes[b])
        return self.op("Div", a, b)

    def exp(self, x):
        return self.op("Exp", x)

    def log(self, x):
        return self.op("Log", x)

    def maximum(self, a, b):
        return self.op("Max", a, b)

    def minimum(self, a, b):
        return self.op("Min", a, b)

    def where(self, cond, a, b):
        """``Where(cond, a, b)``; numbers take the dtype of the tensor one."""
        tensor = a if isinstance(a, str) else b
        dtype = self._dtypes[tensor]
        a, b = self._operands([a, b], dtype)
        return self.node("Where", [cond, a, b], 1, [dtype])[0]

    def compare(self, op_type, a, b):
        """A comparison; a number operand takes the other operand's dtype."""
        tensor = a if isinstance(a, str) else b
        a, b = self._operands([a, b], self._dtypes[tensor])
        return self.node(op_type, [a, b], 1, [bool])[0]

    def cast(self, x, dtype):
        if self._dtypes[x] == np.dtype(dtype):
            return x
        return self.op("Cast", x, out_dtype=dtype, to=tensor_type(dtype))

    def reduce(self, op_type, x, axis, keepdims=True):
        """``ReduceSum``/``ReduceMax``/``ReduceMin`` over one axis, in the
        form of the target opset (axes an input from 13 for ReduceSum, from
        18 for the others)."""
        axes_input = op_type == "ReduceSum" or self.opset >= 18
        if axes_input:
            axes = self.const([axis], np.int64, "axes")
            return self.node(
                op_type, [x, axes], 1, [self._dtypes[x]], keepdims=int(keepdims)
            )[0]
        return self.op(op_type, x, axes=[axis], keepdims=int(keepdims))

    def unsqueeze(self, x, axis):
        return self.node(
            "Unsqueeze", [x, self.const([axis], np.int64, "axes")], 1, [self.dtype(x)]
        )[0]

    def gather(self, table, index, axis=0):
        """``table[index]`` along ``axis``; ``table`` a tensor or an array
        (made a constant in its own dtype)."""
        if not isinstance(table, str):
            table = self.const(table, np.asarray(table).dtype, "table")
        return self.node("Gather", [table, index], 1, [self._dtypes[table]], axis=axis)[
            0
        ]

    def column(self, x, k):
        """Column ``k`` of a 2-D tensor, as a 1-D tensor."""
        return self.gather(x, self.const(k, np.int64, "col"), axis=1)

    def concat_columns(self, columns):
        """Stack 1-D tensors as the columns of a 2-D tensor."""
        cols = [self.unsqueeze(c, 1) for c in columns]
        return self.node("Concat", cols, 1, [self._dtypes[cols[0]]], axis=1)[0]

    def argmax(self, x):
        """Row-wise ``argmax`` (int64, shape (n,)), the first index on ties
        as :func:`numpy.argmax`."""
        return self.op(
            "ArgMax", x, out_dtype=np.int64, axis=1, keepdims=0, select_last_index=0
        )

    def one_hot_rows(self, index, n_columns):
        """Boolean ``(n, K)``: True in column ``index[i]`` of row ``i``."""
        cols = self.const(np.arange(n_columns, dtype=np.int64), np.int64, "range")
        return self.compare("Equal", self.unsqueeze(index, 1), cols)


# ----------------------------------------------------------------- numerics
def softmax(g, z):
    """``exp(z - max) / sum``: :func:`skcalib._core.scores.softmax`'s steps."""
    p = g.exp(g.sub(z, g.reduce("ReduceMax", z, 1)))
    return g.div(p, g.reduce("ReduceSum", p, 1))


def log_softmax(g, z):
    """``z - max - log(sum(exp(z - max)))``: the steps of
    :func:`skcalib._core.scores.log_softmax`."""
    out = g.sub(z, g.reduce("ReduceMax", z, 1))
    return g.sub(out, g.log(g.reduce("ReduceSum", g.exp(out), 1)))


def expit(g, x):
    """``1 / (1 + exp(-x))``, as :func:`scipy.special.expit` computes it (0
    and 1 at the ends, never NaN)."""
    return g.div(1.0, g.add(g.exp(g.op("Neg", x)), 1.0))


def log1p(g, x):
    """``log(1 + x)`` accurate for small ``x`` (ONNX has no Log1p): with
    ``u = 1 + x``, ``log(u) * x / (u - 1)``, and ``x`` where ``u == 1``
    (Goldberg's formula: relative error of a few units of the last place)."""
    u = g.add(x, 1.0)
    d = g.sub(u, 1.0)
    safe = g.where(g.compare("Equal", d, 0.0), 1.0, d)
    ratio = g.div(g.mul(g.log(u), x), safe)
    return g.where(g.compare("Equal", d, 0.0), x, ratio)


def log_expit(g, x):
    """``log(expit(x))`` without overflow, by :func:`scipy.special.log_expit`'s
    two branches: ``x - log1p(exp(x))`` below 0, ``-log1p(exp(-x))`` above."""
    t = log1p(g, g.exp(g.op("Neg", g.op("Abs", x))))
    return g.where(g.compare("Less", x, 0.0), g.sub(x, t), g.op("Neg", t))


def zeros_like(g, x, dtype):
    """Zeros of ``dtype`` in the shape of ``x``."""
    from onnx import helper

    shape = g.op("Shape", x, out_dtype=np.int64)
    value = helper.make_tensor("value", tensor_type(dtype), [1], [0])
    return g.op("ConstantOfShape", shape, out_dtype=dtype, value=value)


def sorted_count(g, table, x, strict):
    """How many entries of the non-decreasing 1-D ``table`` (an array) are
    ``< x`` (``strict``) or ``<= x``, for every element of the 1-D ``x``:
    ``numpy.searchsorted(table, x, side="left" if strict else "right")``.

    Up to :data:`COMPARE_MAX` entries: one comparison of every ``x`` with
    every entry and a sum. More: a binary search unrolled into
    ``ceil(log2(m + 1))`` gathers and comparisons (the table padded to a
    power of two with ``+inf``, which never counts). Both give the count
    exactly, ties and entries equal to ``x`` included.
    """
    table = np.asarray(table)
    op = "Less" if strict else "LessOrEqual"
    if table.size <= COMPARE_MAX:
        if table.size == 0:
            return zeros_like(g, x, np.int64)
        hits = g.compare(op, g.const(table, table.dtype, "edges"), g.unsqueeze(x, 1))
        return g.reduce("ReduceSum", g.cast(hits, np.int64), 1, keepdims=False)
    size = 1 << int(table.size).bit_length()  # > table.size: the last entry is +inf
    padded = np.full(size, np.inf, dtype=table.dtype)
    padded[: table.size] = table
    padded_name = g.const(padded, table.dtype, "edges")
    count = zeros_like(g, x, np.int64)
    step = size // 2
    while step >= 1:
        probe = g.add(count, np.int64(step - 1))
        hit = g.compare(op, g.gather(padded_name, probe), x)
        count = g.add(count, g.mul(g.cast(hit, np.int64), np.int64(step)))
        step //= 2
    return count


#: Tables up to this size are searched by one comparison with every entry;
#: larger ones by the binary search, which onnxruntime runs as fast from 10
#: entries on and 3 times faster at 60 (``python -m benchmarks export``).
COMPARE_MAX = 4
