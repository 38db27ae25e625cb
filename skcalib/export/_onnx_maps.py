"""The graphs of the calibrators that map all the scores of a row at once:
identity, temperature, bias-corrected temperature, vector and matrix
scaling, Dirichlet (and their cross-validated forms), prior shift; and the
dispatch from a calibrator's class to the function that writes its graph.

Each ``*_graph(g, cal, sc)`` takes a :class:`~skcalib.export._onnx_graph.Graph`,
the fitted calibrator and the
:class:`~skcalib.export._onnx_scores.GraphScores` of its input, and returns
the name of the ``(n, K)`` probabilities in the dtype of the scores, by the
operations of the calibrator's ``_predict_proba`` in their order and dtype.
"""

import numpy as np

from skcalib._core.xp import to_numpy
from skcalib.calibration import (
    BetaCalibrator,
    BiasCorrectedTemperatureCalibrator,
    DirichletCalibrator,
    DirichletCalibratorCV,
    HistogramBinningCalibrator,
    IdentityCalibrator,
    IsotonicCalibrator,
    MatrixScalingCalibrator,
    MatrixScalingCalibratorCV,
    PlattCalibrator,
    PriorShiftAdapter,
    ScalingBinningCalibrator,
    TemperatureCalibrator,
    VectorScalingCalibrator,
)
from skcalib.export._onnx_graph import log_softmax, softmax
from skcalib.export._onnx_ovr import one_vs_rest_graph
from skcalib.export._onnx_scaling_binning import scaling_binning_graph

__all__ = []  # private module


def host(array):
    """A fitted attribute as a numpy array (device arrays are copied)."""
    return np.asarray(to_numpy(array))


def identity_graph(g, cal, sc):
    if sc.score_type != "probability":
        return g.exp(sc.log_proba)
    proba = sc.proba
    return g.div(proba, g.reduce("ReduceSum", proba, 1))


def temperature_graph(g, cal, sc):
    return softmax(g, g.div(sc.logits, sc.dtype.type(cal.temperature_)))


def linear_map_graph(g, cal, sc):
    """``softmax(x * w + b)`` (vector scaling) or ``softmax(x @ W.T + b)``,
    ``x`` the logits or (Dirichlet) the log-probabilities."""
    x = sc.logits if cal._features == "logits" else sc.log_proba
    coef = host(cal.coef_).astype(sc.dtype)
    a = g.mul(x, coef) if cal._diagonal else g.op("MatMul", x, coef.T)
    return softmax(g, g.add(a, host(cal.intercept_).astype(sc.dtype)))


def bias_temperature_graph(g, cal, sc):
    """``softmax(z / T + b)`` in float64 (``1 / T = 0`` for ``T = inf``)."""
    with np.errstate(divide="ignore"):
        inverse = 1.0 / float(cal.temperature_)
    a = g.mul(g.cast(sc.logits, np.float64), inverse)
    a = g.add(a, host(cal.intercept_).astype(np.float64))
    return g.cast(softmax(g, a), sc.dtype)


def prior_shift_graph(g, cal, sc):
    """``exp(log_softmax(log p + log w))``, ``w`` the prior ratios (a ratio
    of 0 is a shift of ``-inf``: that class gets probability 0)."""
    with np.errstate(divide="ignore"):
        shift = np.log(host(cal.weights_)).astype(sc.dtype)
    return g.exp(log_softmax(g, g.add(sc.log_proba, shift)))


#: The function that writes each exportable class's graph. Exact classes
#: only: a subclass may compute otherwise, so it is refused until listed.
GRAPHS = {
    IdentityCalibrator: identity_graph,
    TemperatureCalibrator: temperature_graph,
    BiasCorrectedTemperatureCalibrator: bias_temperature_graph,
    VectorScalingCalibrator: linear_map_graph,
    MatrixScalingCalibrator: linear_map_graph,
    MatrixScalingCalibratorCV: linear_map_graph,
    DirichletCalibrator: linear_map_graph,
    DirichletCalibratorCV: linear_map_graph,
    PriorShiftAdapter: prior_shift_graph,
    PlattCalibrator: one_vs_rest_graph,
    BetaCalibrator: one_vs_rest_graph,
    IsotonicCalibrator: one_vs_rest_graph,
    HistogramBinningCalibrator: one_vs_rest_graph,
    ScalingBinningCalibrator: scaling_binning_graph,
}
