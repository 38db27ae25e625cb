"""Calibrators: one private module per method family, re-exported here."""

from skcalib.calibration._auto import AutoCalibrator, IdentityCalibrator
from skcalib.calibration._beta import BetaCalibrator
from skcalib.calibration._binning import HistogramBinningCalibrator
from skcalib.calibration._conformal import ConformalClassifier
from skcalib.calibration._dirichlet import (
    DirichletCalibrator,
    MatrixScalingCalibrator,
    VectorScalingCalibrator,
)
from skcalib.calibration._isotonic import IsotonicCalibrator
from skcalib.calibration._linear_cv import (
    DirichletCalibratorCV,
    MatrixScalingCalibratorCV,
)
from skcalib.calibration._meta import CalibratedClassifier
from skcalib.calibration._scaling import PlattCalibrator, TemperatureCalibrator
from skcalib.calibration._scaling_binning import ScalingBinningCalibrator
from skcalib.calibration._venn_abers import VennAbersCalibrator

__all__ = [
    "AutoCalibrator",
    "BetaCalibrator",
    "CalibratedClassifier",
    "ConformalClassifier",
    "DirichletCalibrator",
    "DirichletCalibratorCV",
    "HistogramBinningCalibrator",
    "IdentityCalibrator",
    "IsotonicCalibrator",
    "MatrixScalingCalibrator",
    "MatrixScalingCalibratorCV",
    "PlattCalibrator",
    "ScalingBinningCalibrator",
    "TemperatureCalibrator",
    "VectorScalingCalibrator",
    "VennAbersCalibrator",
]
