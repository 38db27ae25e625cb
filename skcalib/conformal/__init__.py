"""Conformal prediction sets (:class:`ConformalClassifier`, and under label or
covariate shift) and the metrics of sets (coverage, size), re-exported by
:mod:`skcalib.metrics`."""

from skcalib.conformal._classifier import ConformalClassifier
from skcalib.conformal._covariate_shift import CovariateShiftConformalClassifier
from skcalib.conformal._cross import CrossConformalClassifier
from skcalib.conformal._label_shift import LabelShiftConformalClassifier
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
    "CovariateShiftConformalClassifier",
    "ConformalRiskController",
    "CrossConformalClassifier",
    "LabelShiftConformalClassifier",
    "SizeStratifiedCoverage",
    "size_stratified_coverage",
    "size_stratified_coverage_score",
    "classwise_set_coverage",
    "mean_set_size",
    "set_coverage_score",
]
