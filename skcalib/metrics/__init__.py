"""Calibration metrics and scorers.

Binned calibration errors (confidence / top-label / classwise ECE, MCE,
adaptive and debiased variants) with bootstrap intervals, the per-bin
reliability curve, proper scoring rules (Brier score, negative
log-likelihood) with their calibration-refinement decomposition, and
ready-made scorers for :class:`~sklearn.model_selection.GridSearchCV` and
:func:`~sklearn.model_selection.cross_validate`.

Every metric has the signature of :mod:`sklearn.metrics`:
``metric(y_true, y_proba, *, ..., sample_weight=None, labels=None)``, with
``y_true`` class labels and ``y_proba`` 1-D (binary, probability of the
positive class) or 2-D (one column per class), and returns a Python float.
The columns are the classes in the order of ``labels``; without ``labels``
they are the sorted labels of ``y_true`` when those name every column, and a
``ValueError`` asks for ``labels=`` otherwise (the columns are never guessed).
The scorers pass ``labels=estimator.classes_`` (:func:`make_proba_scorer`).
Binned metrics use right-closed bins ``(lo, hi]`` (the first one ``[0, e1]``),
as :func:`sklearn.calibration.calibration_curve`.
"""

from skcalib.conformal._metrics import (
    SizeStratifiedCoverage,
    classwise_set_coverage,
    mean_set_size,
    set_coverage_score,
    size_stratified_coverage,
    size_stratified_coverage_score,
)
from skcalib.metrics._accumulator import CalibrationAccumulator
from skcalib.metrics._calibration_error import (
    classwise_calibration_error,
    expected_calibration_error,
    maximum_calibration_error,
)
from skcalib.metrics._calibration_tests import (
    cumulative_calibration_test,
    hosmer_lemeshow_test,
    ks_calibration_error,
    spiegelhalter_test,
)
from skcalib.metrics._corp import CORPDecomposition, corp_decomposition
from skcalib.metrics._curve import ReliabilityCurve, reliability_curve
from skcalib.metrics._interval import (
    CalibrationErrorInterval,
    calibration_error_interval,
)
from skcalib.metrics._kernel import (
    kernel_calibration_error,
    kernel_calibration_test,
)
from skcalib.metrics._mmce import maximum_mean_calibration_error, mmce
from skcalib.metrics._multilabel import (
    multilabel_brier_score,
    multilabel_calibration_error,
    multilabel_log_loss,
    multilabel_reliability_curve,
)
from skcalib.metrics._multilabel_scorer import (
    MultilabelProbaScorer,
    make_multilabel_scorer,
    multilabel_brier_scorer,
    multilabel_ece_scorer,
    multilabel_nll_scorer,
)
from skcalib.metrics._proper import (
    CalibrationRefinement,
    brier_score,
    calibration_refinement_decomposition,
    negative_log_likelihood,
)
from skcalib.metrics._register import register_scorers, unregister_scorers
from skcalib.metrics._scorer import (
    ProbaScorer,
    aurc_scorer,
    brier_scorer,
    classwise_ece_scorer,
    ece_scorer,
    get_scorer,
    get_scorer_names,
    make_proba_scorer,
    mce_scorer,
    nll_scorer,
    smooth_ece_scorer,
)
from skcalib.metrics._selective import (
    RiskCoverageCurve,
    augrc,
    aurc,
    correctness_auroc,
    excess_aurc,
    risk_coverage_curve,
    selective_risk_at_coverage,
)
from skcalib.metrics._smooth import (
    SmoothReliabilityCurve,
    smooth_calibration_error,
    smooth_reliability_curve,
)
from skcalib.metrics._tests_result import CalibrationTestResult
from skcalib.metrics._uncertainty import (
    UncertaintyDecomposition,
    ensemble_proba,
    uncertainty_decomposition,
)

__all__ = [
    "SizeStratifiedCoverage",
    "size_stratified_coverage",
    "size_stratified_coverage_score",
    "register_scorers",
    "unregister_scorers",
    "CORPDecomposition",
    "CalibrationAccumulator",
    "CalibrationErrorInterval",
    "CalibrationRefinement",
    "CalibrationTestResult",
    "MultilabelProbaScorer",
    "ProbaScorer",
    "ReliabilityCurve",
    "RiskCoverageCurve",
    "SmoothReliabilityCurve",
    "UncertaintyDecomposition",
    "augrc",
    "aurc",
    "aurc_scorer",
    "brier_score",
    "brier_scorer",
    "calibration_error_interval",
    "calibration_refinement_decomposition",
    "classwise_calibration_error",
    "classwise_ece_scorer",
    "classwise_set_coverage",
    "corp_decomposition",
    "correctness_auroc",
    "cumulative_calibration_test",
    "ece_scorer",
    "ensemble_proba",
    "excess_aurc",
    "expected_calibration_error",
    "get_scorer",
    "get_scorer_names",
    "hosmer_lemeshow_test",
    "kernel_calibration_error",
    "kernel_calibration_test",
    "ks_calibration_error",
    "make_multilabel_scorer",
    "make_proba_scorer",
    "maximum_calibration_error",
    "maximum_mean_calibration_error",
    "mce_scorer",
    "mean_set_size",
    "mmce",
    "multilabel_brier_score",
    "multilabel_brier_scorer",
    "multilabel_calibration_error",
    "multilabel_ece_scorer",
    "multilabel_log_loss",
    "multilabel_nll_scorer",
    "multilabel_reliability_curve",
    "negative_log_likelihood",
    "nll_scorer",
    "reliability_curve",
    "risk_coverage_curve",
    "selective_risk_at_coverage",
    "set_coverage_score",
    "smooth_calibration_error",
    "smooth_ece_scorer",
    "smooth_reliability_curve",
    "spiegelhalter_test",
    "uncertainty_decomposition",
]
