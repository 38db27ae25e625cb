"""The private scikit-learn names skcalib uses, imported in this one module.

A scikit-learn release that moves one of them breaks this file only; every
other module imports them from here.
"""

from sklearn.base import _fit_context
from sklearn.utils import _safe_indexing
from sklearn.utils._param_validation import (
    HasMethods,
    Interval,
    StrOptions,
    validate_params,
)
from sklearn.utils.validation import (
    _check_feature_names_in,
    _check_method_params,
    _check_sample_weight,
    _num_samples,
)

__all__ = [
    "HasMethods",
    "Interval",
    "StrOptions",
    "_check_feature_names_in",
    "_check_method_params",
    "_check_sample_weight",
    "_fit_context",
    "_num_samples",
    "_safe_indexing",
    "validate_params",
]
