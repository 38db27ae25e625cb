"""skcalib: probability calibration for scikit-learn.

Measure miscalibration (:mod:`skcalib.metrics`), fix it after training with a
calibrator, and plot it (:mod:`skcalib.plotting`, needs matplotlib). Nothing
heavy is imported here.
"""

from skcalib._core.score_cache import ScoreCache
from skcalib._core.xp import move_estimator_to
from skcalib._version import __version__
from skcalib.calibration import (
    BetaCalibrator,
    BiasCorrectedTemperatureCalibrator,
    CalibratedClassifier,
    DirichletCalibrator,
    DirichletCalibratorCV,
    EnsembleTemperatureCalibrator,
    HistogramBinningCalibrator,
    IdentityCalibrator,
    IsotonicCalibrator,
    MatrixScalingCalibrator,
    MatrixScalingCalibratorCV,
    MultiLabelCalibrator,
    PlattCalibrator,
    PriorShiftAdapter,
    ScalingBinningCalibrator,
    SplineCalibrator,
    StructuredMatrixScalingCalibrator,
    StructuredVectorScalingCalibrator,
    TemperatureCalibrator,
    VectorScalingCalibrator,
    VennAbersCalibrator,
)
from skcalib.conformal import (
    ConformalClassifier,
    ConformalRiskController,
    CovariateShiftConformalClassifier,
    CrossConformalClassifier,
    LabelShiftConformalClassifier,
)
from skcalib.decision import BayesDecisionClassifier
from skcalib.monitoring import (
    CalibrationMonitor,
    GroupCalibrationResult,
    calibration_by_group,
)
from skcalib.selection import AutoCalibrator

__all__ = [
    "AutoCalibrator",
    "BayesDecisionClassifier",
    "BetaCalibrator",
    "BiasCorrectedTemperatureCalibrator",
    "CalibratedClassifier",
    "CalibrationMonitor",
    "ConformalClassifier",
    "ConformalRiskController",
    "CovariateShiftConformalClassifier",
    "CrossConformalClassifier",
    "DirichletCalibrator",
    "DirichletCalibratorCV",
    "EnsembleTemperatureCalibrator",
    "GroupCalibrationResult",
    "HistogramBinningCalibrator",
    "IdentityCalibrator",
    "IsotonicCalibrator",
    "LabelShiftConformalClassifier",
    "MatrixScalingCalibrator",
    "MatrixScalingCalibratorCV",
    "MultiLabelCalibrator",
    "PlattCalibrator",
    "PriorShiftAdapter",
    "ScalingBinningCalibrator",
    "ScoreCache",
    "SplineCalibrator",
    "StructuredMatrixScalingCalibrator",
    "StructuredVectorScalingCalibrator",
    "TemperatureCalibrator",
    "VectorScalingCalibrator",
    "VennAbersCalibrator",
    "__version__",
    "calibration_by_group",
    "move_estimator_to",
]
