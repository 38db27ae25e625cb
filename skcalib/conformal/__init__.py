"""Conformal prediction sets (:class:`ConformalClassifier`) and the metrics of
sets (coverage, size), re-exported by :mod:`skcalib.metrics`."""

from skcalib.conformal._classifier import ConformalClassifier
from skcalib.conformal._metrics import (
    classwise_set_coverage,
    mean_set_size,
    set_coverage_score,
)

__all__ = [
    "ConformalClassifier",
    "classwise_set_coverage",
    "mean_set_size",
    "set_coverage_score",
]
