"""Monitoring of deployed predictions: :class:`CalibrationMonitor` keeps
per-window calibration metrics of a stream and runs an anytime-valid
sequential test of its calibration; :func:`calibration_by_group` audits
calibration subgroup by subgroup, with multiplicity-corrected tests."""

from skcalib.monitoring._groups import calibration_by_group
from skcalib.monitoring._groups_result import GroupCalibrationResult
from skcalib.monitoring._monitor import CalibrationMonitor

__all__ = ["CalibrationMonitor", "GroupCalibrationResult", "calibration_by_group"]
