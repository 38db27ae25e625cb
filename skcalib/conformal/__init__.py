"""Conformal prediction sets (:class:`ConformalClassifier`) and the metrics of
sets (coverage, size), re-exported by :mod:`skcalib.metrics`."""

from skcalib.conformal._classifier import ConformalClassifier
from skcalib.conformal._cross import CrossConformalClassifier
from skcalib.conformal._metrics import (
    SizeStratifiedCoverage,
    classwise_set_coverage,
    mean_set_size,
    set_coverage_score,
    size_stratified_coverage,
    size_stratified_coverage_score,
)
from skcalib.conformal._risk_control import ConformalRiskController

__all__ = [
    "ConformalClassifier",
    "ConformalRiskController",
    "CrossConformalClassifier",
    "SizeStratifiedCoverage",
    "size_stratified_coverage",
    "size_stratified_coverage_score",
    "classwise_set_coverage",
    "mean_set_size",
    "set_coverage_score",
]
