"""The private scikit-learn names skcalib uses, imported in this one module.

A scikit-learn release that moves one of them breaks this file only; every
other module imports them from here.
"""

import sys
import types

import numpy as np
import sklearn
from sklearn.base import _fit_context
from sklearn.metrics import _scorer as _sklearn_scorer_module
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


#: Scorer names every scikit-learn release since 1.0 has: an option set of
#: ``str`` holding all of them is a ``StrOptions(set(get_scorer_names()))``.
_SCORER_NAME_PROBE = frozenset(
    {"accuracy", "roc_auc", "neg_log_loss", "r2", "f1_macro", "neg_brier_score"}
)


def _mechanism_changed(what):
    return RuntimeError(
        f"scikit-learn {sklearn.__version__} {what}, so skcalib cannot make its "
        "scorer names valid strings there. Pass the scorer object instead: "
        "scoring=skcalib.metrics.get_scorer(name)."
    )


#: scikit-learn's scorer class, the one ``make_scorer`` returns (1.6 to 1.9:
#: ``_Scorer(score_func, sign, kwargs, response_method)`` whose
#: ``_score(method_caller, estimator, X, y_true, **kwargs)`` scores the
#: response). Its consumers (``LogisticRegressionCV``,
#: ``TunedThresholdClassifierCV``, multi-metric scoring) read the private
#: attributes ``_score_func``, ``_sign``, ``_kwargs`` and ``_response_method``
#: and call ``_score``, so skcalib's scorers subclass it.
SklearnScorer = _sklearn_scorer_module._Scorer


def sklearn_scorer_table():
    """scikit-learn's name -> scorer dict, the one its ``get_scorer`` reads.

    Raises ``RuntimeError`` naming the scikit-learn version when the table is
    not where scikit-learn 1.6 to 1.9 keep it.
    """
    table = getattr(_sklearn_scorer_module, "_SCORERS", None)
    if not isinstance(table, dict) or not _SCORER_NAME_PROBE <= table.keys():
        raise _mechanism_changed("keeps no sklearn.metrics._scorer._SCORERS dict")
    if sorted(table) != sklearn.metrics.get_scorer_names():
        raise _mechanism_changed("lists scorer names from elsewhere than _SCORERS")
    return table


def _constraint_dicts(value):
    """The parameter-constraint dicts of a class (its own and its methods')
    or of a ``validate_params``-decorated function.

    Types are read with ``type()``, never ``isinstance``: a module attribute
    may be a proxy whose ``__class__`` warns or imports (torch's deprecated
    ``torch.distributed.reduce_op``)."""
    if issubclass(type(value), type):
        attrs = vars(value)
        found = [attrs.get("_parameter_constraints")]
        for attr in list(attrs.values()):
            wrapped = type(attr) in (classmethod, staticmethod)
            func = attr.__func__ if wrapped else attr
            if type(func) is types.FunctionType:
                found.append(vars(func).get("_skl_parameter_constraints"))
        return [d for d in found if type(d) is dict]
    if type(value) is types.FunctionType:
        found = vars(value).get("_skl_parameter_constraints")
        return [found] if type(found) is dict else []
    return []


def scoring_name_option_sets():
    """The option sets of the ``StrOptions(set(get_scorer_names()))``
    constraints that scikit-learn (and any loaded module) built at import.

    scikit-learn validates ``scoring`` strings against these sets, made once
    from ``get_scorer_names()``; a name added to the scorer table later is
    only accepted once it is added to each set too. The sets are found in the
    ``_parameter_constraints`` of every class, and the constraints that
    ``validate_params`` stores on every function, of every loaded module.

    Returns
    -------
    option_sets : list of set
        Each set once. Raises ``RuntimeError`` naming the scikit-learn
        version when ``GridSearchCV``, ``cross_validate`` or ``check_scoring``
        has none (their ``scoring`` constraint changed form).
    """
    import sklearn.model_selection as model_selection

    found, seen = [], set()
    for module in list(sys.modules.values()):
        if not issubclass(type(module), types.ModuleType):
            continue
        names = getattr(module, "__dict__", None)
        if type(names) is not dict:
            continue
        for value in list(names.values()):
            for constraints in _constraint_dicts(value):
                for options in _scorer_name_options(constraints):
                    if id(options) not in seen:
                        seen.add(id(options))
                        found.append(options)
    for owner in (
        model_selection.GridSearchCV,
        model_selection.cross_validate,
        sklearn.metrics.check_scoring,
    ):
        if not any(map(seen.__contains__, map(id, _owner_options(owner)))):
            raise _mechanism_changed(
                f"validates the scoring of {owner.__name__} in an unknown way"
            )
    return found


def _scorer_name_options(constraints):
    for rules in constraints.values():
        for rule in rules if isinstance(rules, list) else ():
            options = getattr(rule, "options", None)
            if (
                isinstance(rule, StrOptions)
                and isinstance(options, set)
                and _SCORER_NAME_PROBE <= options
            ):
                yield options


def _owner_options(owner):
    return [
        options
        for constraints in _constraint_dicts(owner)
        for options in _scorer_name_options(constraints)
    ]


estimator_with_converted_arrays = _estimator_with_converted_arrays
max_precision_float_dtype = _max_precision_float_dtype

__all__ = [
    "SklearnScorer",
    "array_api_compat",
    "array_namespace_of",
    "convert_to_numpy",
    "estimator_with_converted_arrays",
    "get_namespace_and_device",
    "max_precision_float_dtype",
    "scoring_name_option_sets",
    "sklearn_scorer_table",
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
