"""skcalib's calibrators inside skl2onnx conversions: a parser, a shape
calculator and a converter per exportable class, registered on request
(:func:`register_skl2onnx`), and the wrapper-mode path of ``to_onnx``.

The converter writes the same graph as ``to_onnx`` into skl2onnx's
container. In wrapper mode the prefit classifier is converted first by
skl2onnx itself (``OnnxSubEstimator``), asked for its decision values
(``raw_scores``) or probabilities as the calibrator reads them; a binary
decision function is its positive column, as scikit-learn gives it.
"""

import numpy as np

from skcalib.export._onnx_build import build_graph, check_exportable, label_output
from skcalib.export._onnx_graph import Graph
from skcalib.export._onnx_maps import GRAPHS
from skcalib.export._onnx_scores import GraphScores

__all__ = ["register_skl2onnx"]

_ALIAS = "Skcalib{}"


def _skl2onnx():
    try:
        import skl2onnx
    except ImportError as exc:  # pragma: no cover - the extra is installed in CI
        raise ImportError(
            "skcalib's skl2onnx converters need skl2onnx: pip install "
            "'skcalib[onnx]' (onnx, onnxruntime and skl2onnx)."
        ) from exc
    return skl2onnx


def _label_type(classes):
    from skl2onnx.common.data_types import (
        BooleanTensorType,
        DoubleTensorType,
        Int64TensorType,
        StringTensorType,
    )

    kind = np.asarray(classes).dtype.kind
    if kind in "iu":
        return Int64TensorType
    if kind == "b":
        return BooleanTensorType
    if kind == "f":
        return DoubleTensorType
    return StringTensorType


def _scores_type(inputs):
    """The tensor type of the scores: double for double input, else float."""
    from skl2onnx.common.data_types import DoubleTensorType, FloatTensorType

    last = inputs[-1].type
    return DoubleTensorType if isinstance(last, DoubleTensorType) else FloatTensorType


def parse_calibrator(scope, model, inputs, custom_parsers=None):
    """Two outputs, ``label`` and the ``probabilities`` tensor (no ZipMap:
    a calibrator's point is the probabilities)."""
    from skl2onnx.common.data_types import Int64TensorType

    operator = scope.declare_local_operator(_ALIAS.format(type(model).__name__), model)
    operator.inputs = inputs
    label = scope.declare_local_variable("label", Int64TensorType())
    proba = scope.declare_local_variable("probabilities", _scores_type(inputs)())
    operator.outputs.extend([label, proba])
    return operator.outputs


def shape_calculator(operator):
    cal = operator.raw_operator
    n = operator.inputs[0].get_first_dimension()
    operator.outputs[0].type = _label_type(cal.classes_)([n])
    operator.outputs[1].type = _scores_type(operator.inputs)([n, len(cal.classes_)])


def _inner_scores(scope, operator, container, cal):
    """The name of the wrapped classifier's float64 scores, as the
    calibrator reads them, and their number of columns (None: 1-D).

    scikit-learn's classifiers give float64 scores for float32 features too
    (float64 coefficients, thresholds), and the calibrator then computes in
    float64: the classifier's graph is written for float64 input (a Cast of
    float32 features first) and so is the calibrator's."""
    from onnx import TensorProto
    from skl2onnx.algebra.onnx_operator import OnnxSubEstimator
    from skl2onnx.algebra.onnx_ops import OnnxCast, OnnxIdentity
    from skl2onnx.common.data_types import DoubleTensorType

    if hasattr(cal.estimator, "steps"):
        raise TypeError(
            f"{type(cal).__name__} wraps a Pipeline, whose graph skl2onnx 1.20 "
            "cannot nest in a calibrator's: wrap the pipeline's classifier and "
            "make the calibrator the pipeline's last step instead, e.g. "
            "make_pipeline(model[:-1], "
            f"{type(cal).__name__}(model[-1]).fit(model[:-1].transform(X), y)), "
            "and convert that pipeline."
        )
    opset = container.target_opset
    decision = cal._response_method() == "decision_function"
    options = {"zipmap": False, **({"raw_scores": True} if decision else {})}
    # the converters read their options from the container (skl2onnx 1.20
    # gives OnnxSubEstimator's options to the scope only)
    container.add_options(id(cal.estimator), options)
    features = operator.inputs[0]
    if not isinstance(features.type, DoubleTensorType):
        features = OnnxCast(features, to=TensorProto.DOUBLE, op_version=opset)
    sub = OnnxSubEstimator(
        cal.estimator,
        features,
        op_version=opset,
        options=options,
        input_types=[DoubleTensorType([None, None])],
    )
    name = scope.get_unique_variable_name("skcalib_inner_scores")
    OnnxIdentity(sub[1], op_version=opset, output_names=[name]).add_to(scope, container)
    n_classes = len(cal.classes_)
    return name, (None if decision and n_classes == 2 else n_classes)


def convert_calibrator(scope, operator, container):
    """Write the calibrator's graph into skl2onnx's container."""
    from skl2onnx.common.data_types import DoubleTensorType

    cal = operator.raw_operator
    name = check_exportable(cal)
    if cal.estimator is None:
        scores = operator.inputs[-1]  # after a classifier-like step: its probabilities
        x, n_columns = scores.full_name, getattr(cal, "n_features_in_", None)
    else:
        x, n_columns = _inner_scores(scope, operator, container, cal)
    double = isinstance(operator.inputs[-1].type, DoubleTensorType)
    out_dtype = np.float64 if double else np.float32
    prefix = scope.get_unique_variable_name(f"skcalib_{name}") + "_"
    g = Graph(container.target_opset, prefix=prefix, owner=name)
    g.declare(x, np.float64 if cal.estimator is not None else out_dtype)
    if cal.estimator is not None and n_columns is None:
        # skl2onnx writes a binary decision function as (-d, d); the
        # calibrator was fitted on scikit-learn's 1-D d
        x = g.column(x, 1)
    sc = GraphScores(g, x, cal.score_type_, len(cal.classes_), n_columns)
    proba = build_graph(g, cal, sc)
    label = label_output(g, cal.classes_, proba)
    proba = g.cast(proba, out_dtype)
    for tensor in g.initializers:
        _add_initializer(container, tensor)
    for node in g.nodes:
        attrs = {a.name: _attribute(a) for a in node.attribute}
        container.add_node(
            node.op_type, list(node.input), list(node.output), name=node.name, **attrs
        )
    container.add_node("Identity", [label], [operator.outputs[0].full_name])
    container.add_node("Identity", [proba], [operator.outputs[1].full_name])


def _add_initializer(container, tensor):
    from onnx import TensorProto

    if tensor.data_type == TensorProto.STRING:
        content = [s.decode("utf-8") for s in tensor.string_data]
    else:
        content = tensor  # its raw data are copied
    container.add_initializer(tensor.name, tensor.data_type, list(tensor.dims), content)


def _attribute(attribute):
    from onnx import helper

    return helper.get_attribute_value(attribute)


def register_skl2onnx():
    """Register skcalib's exportable calibrators with skl2onnx.

    After this call ``skl2onnx.to_onnx`` converts a fitted skcalib calibrator
    (raw-score or wrapper mode) and a :class:`~sklearn.pipeline.Pipeline`
    that ends in one, with the graphs of :func:`to_onnx`. A calibrator's
    outputs are ``label`` and the ``probabilities`` tensor (no ZipMap). A
    raw-score calibrator placed after a classifier-like step (another
    calibrator) reads that step's probabilities. Registering changes
    skl2onnx's global registry, so it happens only when asked for (and
    when :func:`to_onnx` converts a wrapper-mode calibrator); calling it
    again changes nothing.

    Returns
    -------
    names : list of str
        The registered classes.

    Examples
    --------
    >>> from skcalib.export import register_skl2onnx
    >>> "TemperatureCalibrator" in register_skl2onnx()
    True
    """
    skl2onnx = _skl2onnx()
    names = []
    for cls in GRAPHS:
        skl2onnx.update_registered_converter(
            cls,
            _ALIAS.format(cls.__name__),
            shape_calculator,
            convert_calibrator,
            parser=parse_calibrator,
        )
        names.append(cls.__name__)
    return sorted(names)


def convert_wrapper(cal, dtype, opset, n_features):
    """``to_onnx`` of a wrapper-mode calibrator, through skl2onnx: the input
    ``"X"`` holds the classifier's features."""
    skl2onnx = _skl2onnx()
    from skl2onnx.common.data_types import DoubleTensorType, FloatTensorType

    register_skl2onnx()
    if n_features is None:
        n_features = getattr(cal, "n_features_in_", None)
    if n_features is None:
        raise ValueError(
            f"{type(cal).__name__}'s classifier {type(cal.estimator).__name__} has "
            "no n_features_in_; pass n_features (the number of its input columns)."
        )
    tensor = FloatTensorType if dtype == np.float32 else DoubleTensorType
    return skl2onnx.to_onnx(
        cal,
        initial_types=[("X", tensor([None, int(n_features)]))],
        target_opset=opset,
    )
