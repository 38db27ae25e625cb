"""Calibrators: one private module per method family, re-exported here.

:class:`~skcalib.AutoCalibrator` (which chooses among these) lives in
:mod:`skcalib.selection` and :class:`~skcalib.ConformalClassifier` (which
predicts sets) in :mod:`skcalib.conformal`; both are reached from
``skcalib`` (and, for code written before they moved, from here).
"""

from skcalib.calibration._beta import BetaCalibrator
from skcalib.calibration._bias_temperature import BiasCorrectedTemperatureCalibrator
from skcalib.calibration._binning import HistogramBinningCalibrator
from skcalib.calibration._dirichlet import DirichletCalibrator
from skcalib.calibration._ensemble_temperature import EnsembleTemperatureCalibrator
from skcalib.calibration._identity import IdentityCalibrator
from skcalib.calibration._isotonic import IsotonicCalibrator
from skcalib.calibration._linear_cv import (
    DirichletCalibratorCV,
    MatrixScalingCalibratorCV,
)
from skcalib.calibration._matrix_scaling import (
    MatrixScalingCalibrator,
    VectorScalingCalibrator,
)
from skcalib.calibration._meta import CalibratedClassifier
from skcalib.calibration._multilabel import MultiLabelCalibrator
from skcalib.calibration._platt import PlattCalibrator
from skcalib.calibration._prior_shift import PriorShiftAdapter
from skcalib.calibration._scaling_binning import ScalingBinningCalibrator
from skcalib.calibration._spline import SplineCalibrator
from skcalib.calibration._structured_scaling import (
    StructuredMatrixScalingCalibrator,
    StructuredVectorScalingCalibrator,
)
from skcalib.calibration._temperature import TemperatureCalibrator
from skcalib.calibration._venn_abers import VennAbersCalibrator

__all__ = [
    "BetaCalibrator",
    "BiasCorrectedTemperatureCalibrator",
    "CalibratedClassifier",
    "DirichletCalibrator",
    "DirichletCalibratorCV",
    "EnsembleTemperatureCalibrator",
    "HistogramBinningCalibrator",
    "IdentityCalibrator",
    "IsotonicCalibrator",
    "MatrixScalingCalibrator",
    "MatrixScalingCalibratorCV",
    "MultiLabelCalibrator",
    "PlattCalibrator",
    "PriorShiftAdapter",
    "ScalingBinningCalibrator",
    "SplineCalibrator",
    "StructuredMatrixScalingCalibrator",
    "StructuredVectorScalingCalibrator",
    "TemperatureCalibrator",
    "VectorScalingCalibrator",
    "VennAbersCalibrator",
]

#: Names that lived here before the layers (issue 17): the one place a lower
#: layer reaches up, on demand only; ``tests/test_layers.py`` allows exactly
#: this function.
_MOVED = {
    "AutoCalibrator": "skcalib.selection",
    "ConformalClassifier": "skcalib.conformal",
}


def __getattr__(name):
    if name in _MOVED:
        import importlib

        return getattr(importlib.import_module(_MOVED[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
