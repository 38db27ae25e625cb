"""``to_onnx``: a fitted calibrator as an ONNX graph that computes its
``predict_proba``."""

import numpy as np

from skcalib._version import __version__
from skcalib.conformal import ConformalClassifier
from skcalib.export._onnx_build import (
    build_graph,
    check_exportable,
    import_onnx,
    label_output,
)
from skcalib.export._onnx_graph import DEFAULT_OPSET, OLDEST_OPSET, Graph, tensor_type
from skcalib.export._onnx_scores import GraphScores
from skcalib.export._onnx_sets import conformal_graph
from skcalib.export._skl2onnx import convert_wrapper

__all__ = ["to_onnx"]


def check_opset(target_opset):
    onnx = import_onnx()
    newest = onnx.defs.onnx_opset_version()
    opset = min(DEFAULT_OPSET, newest) if target_opset is None else target_opset
    if isinstance(opset, bool) or not isinstance(opset, (int, np.integer)):
        raise TypeError(f"target_opset must be an int or None, got {target_opset!r}.")
    if opset > newest:
        raise ValueError(
            f"target_opset={opset} is newer than the newest opset of the installed "
            f"onnx {onnx.__version__} ({newest})."
        )
    if opset < 1:
        raise ValueError(f"target_opset must be >= {OLDEST_OPSET}, got {opset}.")
    return int(opset)


def check_dtype(dtype):
    try:
        dtype = np.dtype(dtype)
    except TypeError:
        dtype = None
    if dtype not in (np.float32, np.float64):
        raise ValueError(f"dtype must be np.float32 or np.float64, got {dtype!r}.")
    return dtype


def input_columns(calibrator, n_features):
    """The number of columns of the raw scores (None: 1-D scores)."""
    name = type(calibrator).__name__
    n_classes = len(calibrator.classes_)
    fitted = getattr(calibrator, "n_features_in_", None)
    if n_features is None:
        return fitted
    if isinstance(n_features, bool) or not isinstance(n_features, (int, np.integer)):
        raise TypeError(f"n_features must be an int or None, got {n_features!r}.")
    allowed = {n_classes} | ({1} if n_classes == 2 else set())
    if fitted is not None:
        allowed = {fitted}
    if n_features not in allowed:
        raise ValueError(
            f"n_features={n_features} does not match {name}: its raw scores have "
            f"{' or '.join(str(a) for a in sorted(allowed))} column(s) "
            f"({n_classes} classes{', fitted on 2-D scores' if fitted else ''})."
        )
    return int(n_features)


def to_onnx(calibrator, *, dtype=np.float32, target_opset=None, n_features=None):
    """Write a fitted calibrator as an ONNX graph of its ``predict_proba``.

    The graph's output ``"probabilities"`` is ``calibrator.predict_proba(X)``
    and ``"label"`` is ``calibrator.predict(X)`` (a
    :class:`~skcalib.ConformalClassifier` adds ``"sets"``, the boolean
    ``predict_set(X)``). Each step runs in the dtype ``predict_proba`` uses
    for it (float32 scores stay float32 where the numpy code keeps them so,
    and go to float64 where it does), so the graph agrees with
    ``predict_proba`` on the same input to within 1e-6 (float64) or 1e-5
    (float32), and looks up every score in the same bin, edges included.

    Parameters
    ----------
    calibrator : fitted skcalib calibrator
        Raw-score mode: the graph's input ``"X"`` holds the scores. Wrapper
        mode (``estimator=clf``): the input holds the classifier's features
        and the classifier is converted by skl2onnx, after
        :func:`register_skl2onnx` (which this call runs).
    dtype : {np.float32, np.float64}, default=np.float32
        The dtype of the input and of the probabilities. In wrapper mode the
        classifier and the calibrator compute in float64 (float32 features
        are cast), as scikit-learn's classifiers give float64 scores.
    target_opset : int or None, default=None
        The ONNX opset (default domain); None: 18 (or the newest of the
        installed onnx if older). Opsets before 13 are refused.
    n_features : int or None, default=None
        Columns of the input. None: as at fit (1-D scores for a calibrator
        fitted on 1-D binary scores). Raw-score mode also accepts 1 or 2
        for binary problems fitted on 1-D scores; wrapper mode needs it
        when the classifier has no ``n_features_in_``.

    Returns
    -------
    model : onnx.ModelProto
        A checked model: input ``"X"`` of shape ``(N,)`` or
        ``(N, n_features)``, outputs ``"label"`` ``(N,)`` and
        ``"probabilities"`` ``(N, n_classes)`` (and ``"sets"``).

    Raises
    ------
    TypeError
        For classes without a graph (:class:`~skcalib.VennAbersCalibrator`,
        :class:`~skcalib.AutoCalibrator`: export its ``best_calibrator_``,
        :class:`~skcalib.CalibratedClassifier`, randomised or APS/RAPS
        conformal sets, a ConformalClassifier in wrapper mode, and the
        calibrators not listed in the error's message).
    ValueError
        For a ``target_opset`` too old for an operator of the graph, and
        for ``dtype=np.float32`` when float32 cannot represent the map (a
        bin narrower than float32 resolution, see Notes).
    sklearn.exceptions.NotFittedError
        When ``calibrator`` is not fitted.

    See Also
    --------
    register_skl2onnx : the same graphs inside skl2onnx conversions.

    Notes
    -----
    The graph does not validate its input: scores ``predict_proba`` would
    refuse (NaN, values outside ``[0, 1]`` after a probability fit, rows
    far from summing to 1) give unspecified outputs. Probability rows off 1
    by rounding are renormalised as ``predict_proba`` renormalises them
    (their sums added in numpy's order: the same floats).

    **Bins and knots.** Given probabilities are looked up exactly as
    numpy looks them up, at every edge (right-closed bins, the first one
    closed) and in every dtype. A value the graph *computes* (a softmax of
    logits, a log-odds, a scaled probability) can differ from numpy's in
    the last place, because onnxruntime's ``exp`` and ``log`` round
    differently from numpy's (as numpy's own do between machines); one
    that sits on a bin edge or between two knots a few ulps apart (the
    calibration rows' own values, a tie such as the 1/3 of equal logits)
    can then take the neighbouring bin. On held-out rows of the built-in
    CIFAR-10 and airlines sets this happened to at most 0.3% of the rows;
    on a random forest's 195 distinct probabilities, whose values are the
    edges, to about 1% (float64) and up to 8% (scaling-binning's top-label
    float32 graph, whose scores go through float32 logs).

    **float32.** Where ``predict_proba`` rounds fitted values to float32
    (temperature, linear-map coefficients, the bin edges of probability
    scores), so does the graph. The float32 export of a binning map is
    refused when that rounding changes the map's value in the middle of
    one of its own bins by more than 1e-5 (a bin too narrow for float32);
    the maps that ``predict_proba`` computes in float64 (Platt, beta,
    isotonic, the bins of binary logits, scaling-binning) are float64 steps
    of the float32 graph, which onnxruntime runs on the CPU.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib import TemperatureCalibrator
    >>> from skcalib.export import to_onnx
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 3, 500)
    >>> logits = 3.0 * (rng.normal(size=(500, 3)) + np.eye(3)[y])
    >>> ts = TemperatureCalibrator().fit(logits, y)
    >>> model = to_onnx(ts, dtype=np.float64)
    >>> [o.name for o in model.graph.output]
    ['label', 'probabilities']
    >>> import onnxruntime as ort
    >>> session = ort.InferenceSession(model.SerializeToString(),
    ...                                providers=["CPUExecutionProvider"])
    >>> label, proba = session.run(None, {"X": logits[:5]})
    >>> bool(np.abs(proba - ts.predict_proba(logits[:5])).max() < 1e-12)
    True
    """
    onnx = import_onnx()
    name = check_exportable(calibrator)
    dtype = check_dtype(dtype)
    opset = check_opset(target_opset)
    if calibrator.estimator is not None:
        return convert_wrapper(calibrator, dtype, opset, n_features)
    n_columns = input_columns(calibrator, n_features)
    g = Graph(opset, owner=name)
    x = g.declare("X", dtype)
    n_classes = len(calibrator.classes_)
    outputs = {}
    if type(calibrator) is ConformalClassifier:
        proba, outputs["sets"] = conformal_graph(
            g, calibrator, x, n_columns, build_graph
        )
    else:
        sc = GraphScores(g, x, calibrator.score_type_, n_classes, n_columns)
        proba = build_graph(g, calibrator, sc)
    outputs = {
        "label": label_output(g, calibrator.classes_, proba),
        "probabilities": proba,
        **outputs,
    }
    shape_in = ["N"] if n_columns is None else ["N", n_columns]
    return _model(onnx, g, ("X", dtype, shape_in), outputs, n_classes)


def _model(onnx, g, graph_input, outputs, n_classes):
    from onnx import helper

    name, dtype, shape = graph_input
    values = []
    for out, tensor in outputs.items():
        g.nodes.append(helper.make_node("Identity", [tensor], [out], name=f"out_{out}"))
        shape_out = ["N"] if out == "label" else ["N", n_classes]
        values.append(
            helper.make_tensor_value_info(out, tensor_type(g.dtype(tensor)), shape_out)
        )
    graph = helper.make_graph(
        g.nodes,
        f"skcalib_{g.owner}",
        [helper.make_tensor_value_info(name, tensor_type(dtype), shape)],
        values,
        initializer=g.initializers,
    )
    opsets = [helper.make_opsetid("", g.opset)]
    model = helper.make_model(
        graph,
        opset_imports=opsets,
        producer_name="skcalib",
        producer_version=__version__,
        ir_version=helper.find_min_ir_version_for(opsets),
    )
    onnx.checker.check_model(model)
    return model
