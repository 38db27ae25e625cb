"""Calibration metrics (filled in by the metrics work)."""

__all__ = []
