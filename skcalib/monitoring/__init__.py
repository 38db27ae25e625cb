"""Monitoring of deployed predictions: :class:`CalibrationMonitor` keeps
per-window calibration metrics of a stream and runs an anytime-valid
sequential test of its calibration."""

from skcalib.monitoring._monitor import CalibrationMonitor

__all__ = ["CalibrationMonitor"]
