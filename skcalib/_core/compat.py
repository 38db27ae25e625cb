"""The private scikit-learn names skcalib uses, imported in this one module.

A scikit-learn release that moves one of them breaks this file only; every
other module imports them from here.
"""

import numpy as np
from sklearn.base import _fit_context
from sklearn.utils import _safe_indexing
from sklearn.utils._array_api import (
    _convert_to_numpy,
    _estimator_with_converted_arrays,
    _max_precision_float_dtype,
    get_namespace_and_device,
)
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

try:  # scikit-learn >= 1.7 vendors array-api-compat
    from sklearn.externals import array_api_compat
except ImportError:  # pragma: no cover - older scikit-learn
    try:
        import array_api_compat
    except ImportError:
        array_api_compat = None


def array_namespace_of(array):
    """The array-API namespace of one array (array-api-compat's wrapper for
    torch and CuPy), whatever the ``array_api_dispatch`` setting."""
    if array_api_compat is None:
        raise ImportError(
            f"Reading a {type(array).__name__} needs array-api-compat: "
            "scikit-learn >= 1.7 vendors it, or pip install array-api-compat."
        )
    return array_api_compat.array_namespace(array)


def convert_to_numpy(array, xp):
    """``array`` of namespace ``xp`` as a numpy array on the host."""
    if "torch" in xp.__name__:
        return array.detach().cpu().numpy()
    if hasattr(xp, "Device") and "array_api_strict" in xp.__name__:
        return np.asarray(xp.asarray(array, device=xp.Device("CPU_DEVICE")))
    return _convert_to_numpy(array, xp)


estimator_with_converted_arrays = _estimator_with_converted_arrays
max_precision_float_dtype = _max_precision_float_dtype

__all__ = [
    "array_api_compat",
    "array_namespace_of",
    "convert_to_numpy",
    "estimator_with_converted_arrays",
    "get_namespace_and_device",
    "max_precision_float_dtype",
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
