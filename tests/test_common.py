"""sklearn's common estimator checks on every public skcalib estimator.

Estimators are discovered by ``tests/_discovery.py`` (every public class of
``skcalib.__all__`` that is a BaseEstimator), not hand-listed.
"""

import pytest
from _discovery import default_instance, estimator_classes
from sklearn.base import clone
from sklearn.utils import estimator_checks
from sklearn.utils.estimator_checks import parametrize_with_checks

import skcalib

#: In raw-score mode (the default, ``estimator=None``) ``X`` *is* the scores:
#: one column per class (or one column for two classes). These generic checks
#: feed ``X`` whose column count cannot match the number of classes of their
#: ``y``, so a calibrator must refuse them with a clear error.
_REASON = "generated X has a column count that cannot match the classes of its y"
RAW_SCORE_XFAILS = {
    "check_classifiers_train": _REASON,
    "check_classifiers_train(readonly_memmap=True)": _REASON,
    "check_classifiers_train(readonly_memmap=True,X_dtype=float32)": _REASON,
    "check_estimators_overwrite_params": _REASON,
    "check_estimators_fit_returns_self": _REASON,
    "check_readonly_memmap_input": _REASON,
    "check_n_features_in_after_fitting": _REASON,
    "check_positive_only_tag_during_fit": _REASON,
    "check_estimators_dtypes": _REASON,
    "check_sample_weight_equivalence_on_dense_data": _REASON,
    "check_dtype_object": _REASON,
    "check_pipeline_consistency": _REASON,
    "check_estimators_nan_inf": _REASON,
    "check_estimators_pickle": _REASON,
    "check_estimators_pickle(readonly_memmap=True)": _REASON,
    "check_classifiers_classes": _REASON,
    "check_transformer_general": _REASON,
    "check_transformer_preserve_dtypes": _REASON,
    "check_transformer_general(readonly_memmap=True)": _REASON,
    "check_transformer_data_not_an_array": _REASON,
    "check_fit2d_predict1d": _REASON,
    # scikit-learn runs it (numpy namespace) once SCIPY_ARRAY_API=1 is set
    # (tests/conftest.py); tests/test_array_api.py runs it on every namespace
    # in wrapper mode, where X is features
    "check_array_api_input": _REASON,
}


ESTIMATORS = [default_instance(cls) for cls in estimator_classes()]


#: These checks feed ``X`` uniform in [0, 1] with one column per class but rows
#: that do not sum to 1. Under ``score_type="auto"`` such scores are neither
#: probabilities nor silently logits (issue 14), so they are refused with an
#: error that names ``score_type="logit"``. The same checks pass with
#: ``score_type="logit"`` (``test_range_checks_pass_with_declared_logits``).
_RANGE_REASON = (
    "generated X lies in [0, 1] with rows not summing to 1: score_type='auto' "
    "refuses it (never silently logits); the check passes with score_type='logit'"
)
RANGE_XFAILS = {
    "check_fit_score_takes_y": _RANGE_REASON,
    "check_sample_weights_list": _RANGE_REASON,
    "check_supervised_y_2d": _RANGE_REASON,
}

#: Only run on estimators with ``max_iter`` (the others have no ``n_iter_``).
N_ITER_XFAILS = {
    "check_non_transformer_estimators_n_iter": _REASON,
    "check_transformer_n_iter": _REASON,
}


#: MultiLabelCalibrator in raw-score mode: ``X`` holds one score column per
#: label of the indicator ``y``. With its tags (multi-output only, no
#: multiclass) the generic checks reshape their 1-D ``y`` to one column, so
#: ``X`` would need one column; they feed 2 to 30.
_ML_X = (
    "generated X has a column count that cannot match the label columns of its "
    "y (raw scores: one column per label)"
)
#: ... or they feed a ``y`` that is not a label-indicator matrix at all.
_ML_Y = (
    "generated y is not a label-indicator matrix (1-D labels, or a column with "
    "entries other than 0/1); a multi-label calibrator refuses it"
)
MULTILABEL_XFAILS = {
    **{
        name: _ML_X
        for name in (
            "check_fit_score_takes_y",
            "check_estimators_overwrite_params",
            "check_dont_overwrite_parameters",
            "check_estimators_fit_returns_self",
            "check_readonly_memmap_input",
            "check_n_features_in_after_fitting",
            "check_positive_only_tag_during_fit",
            "check_sample_weights_pandas_series",
            "check_sample_weights_list",
            "check_all_zero_sample_weights_error",
            "check_sample_weight_equivalence_on_dense_data",
            "check_dtype_object",
            "check_pipeline_consistency",
            "check_estimators_nan_inf",
            "check_estimators_pickle",
            "check_estimators_pickle(readonly_memmap=True)",
            "check_array_api_input",
            "check_f_contiguous_array_estimator",
            "check_classifiers_one_label_sample_weights",
            "check_classifier_multioutput",
            "check_classifiers_train",
            "check_classifiers_train(readonly_memmap=True)",
            "check_classifiers_train(readonly_memmap=True,X_dtype=float32)",
            "check_classifiers_multilabel_representation_invariance",
            "check_classifiers_multilabel_output_format_predict",
            "check_classifiers_multilabel_output_format_predict_proba",
            "check_classifiers_multilabel_output_format_decision_function",
            "check_methods_sample_order_invariance",
            "check_methods_subset_invariance",
            "check_fit2d_1sample",
            "check_dict_unchanged",
            "check_fit_idempotent",
            "check_fit_check_is_fitted",
            "check_n_features_in",
            "check_fit2d_predict1d",
        )
    },
    **{
        name: _ML_Y
        for name in (
            "check_estimators_dtypes",
            "check_sample_weights_not_an_array",
            "check_sample_weights_shape",
            "check_sample_weights_not_overwritten",
            "check_classifier_data_not_an_array",
            "check_classifiers_classes",
            "check_transformer_data_not_an_array",
            "check_transformer_general",
            "check_transformer_general(readonly_memmap=True)",
            "check_transformer_preserve_dtypes",
            "check_fit2d_1feature",
        )
    },
    "check_classifiers_regression_target": (
        "continuous y is refused by the one label-indicator check, whose message "
        "names the entry that is not 0/1, not sklearn's 'Unknown label type' words"
    ),
    "check_classifier_not_supporting_multiclass": (
        "multiclass y is refused by the one label-indicator check, whose message "
        "names the shape it needs, not sklearn's 'Only binary classification' words"
    ),
}
#: Run on the other estimators tagged ``multi_label``
#: (ConformalRiskController): the generated ``X`` has 2 columns for a ``y``
#: of 5 labels, and raw-score mode needs one probability column per label.
RISK_MULTILABEL_XFAILS = {
    "check_classifiers_multilabel_representation_invariance": _REASON,
    "check_classifiers_multilabel_output_format_predict": _REASON,
    "check_classifiers_multilabel_output_format_predict_proba": _REASON,
    "check_classifiers_multilabel_output_format_decision_function": _REASON,
}


def _expected_failed_checks(estimator):
    if isinstance(estimator, skcalib.MultiLabelCalibrator):
        return MULTILABEL_XFAILS  # the same generic invariants on label data:
        # tests/calibrators/test_multilabel.py::test_generic_invariants_*
    if isinstance(
        estimator, (skcalib.CalibratedClassifier, skcalib.CrossConformalClassifier)
    ):
        return {}  # takes features, not scores: every check must pass
    xfails = {**RAW_SCORE_XFAILS, **RANGE_XFAILS}
    if hasattr(estimator, "partial_fit"):  # run on those only, X as above
        xfails["check_estimators_partial_fit_n_features"] = _REASON
    if estimator.__sklearn_tags__().classifier_tags.multi_label:
        xfails.update(RISK_MULTILABEL_XFAILS)
    if "max_iter" in estimator.get_params():
        return {**xfails, **N_ITER_XFAILS}
    return xfails


def test_discovery_finds_the_seed_calibrators():
    names = {type(e).__name__ for e in ESTIMATORS}
    assert {
        "PlattCalibrator",
        "TemperatureCalibrator",
        "HistogramBinningCalibrator",
        "IsotonicCalibrator",
        "CalibratedClassifier",
        "ConformalClassifier",
        "AutoCalibrator",
    } <= names


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=_expected_failed_checks)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


_DECLARED = [e for e in ESTIMATORS if e.get_params().get("score_type") == "auto"]


@pytest.mark.parametrize("check_name", sorted(RANGE_XFAILS))
@pytest.mark.parametrize("estimator", _DECLARED, ids=lambda e: type(e).__name__)
def test_range_checks_pass_with_declared_logits(estimator, check_name):
    est = clone(estimator).set_params(score_type="logit")
    getattr(estimator_checks, check_name)(type(est).__name__, est)
