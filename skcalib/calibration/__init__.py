"""Calibrators: one private module per method family, re-exported here."""

from skcalib.calibration._binning import HistogramBinningCalibrator
from skcalib.calibration._isotonic import IsotonicCalibrator
from skcalib.calibration._scaling import PlattCalibrator, TemperatureCalibrator

__all__ = [
    "HistogramBinningCalibrator",
    "IsotonicCalibrator",
    "PlattCalibrator",
    "TemperatureCalibrator",
]
