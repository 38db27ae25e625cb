"""Choosing a calibrator from the calibration data (:class:`AutoCalibrator`)."""

from skcalib.selection._auto import AutoCalibrator

__all__ = ["AutoCalibrator"]
