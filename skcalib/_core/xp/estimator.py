"""Estimators on array-API inputs: on the device, or on the host.

Two ways, chosen per class (``_array_api_native``) and per mode:

* **on the device** (:func:`fit_native`, :func:`predict_proba_native`):
  raw-score mode of a calibrator whose map computes in any namespace. The
  scores are validated and summarised on the device
  (:mod:`skcalib._core.xp.scores`); labels are encoded on the device when
  they are arrays of the namespace; sample weights are checked on the host
  (``n`` numbers, one transfer) and moved to the device.
* **on the host** (:func:`fit_on_host`, :func:`call_on_host`): everything
  else, wrapper mode included (its prefit classifier computes the scores)
  and the inherently sequential maps (pool-adjacent-violators, the
  Venn-ABERS hull). The inputs are moved to numpy once, the numpy code
  runs, and the outputs and the fitted array attributes are moved back to
  the input's namespace and device once.

Fitted in one namespace, called in another (:func:`follows_input`): the
call computes where its input is, and the fitted arrays are brought there
for the call. With ``array_api_dispatch=True`` and an input of another
array-API library, the paths above move them to the input's namespace and
device (they are small: maps, bins, thresholds); for a call that computes
with numpy (dispatch off, or numpy input) a numpy copy of the estimator
(:func:`~skcalib._core.xp.move_estimator_to`) computes it. The estimator
itself never changes.
"""

import copy
import functools

import numpy as np
from sklearn import config_context

from skcalib._core.weights import _checked_weights
from skcalib._core.xp import (
    _convert_result,
    is_foreign,
    move_estimator_to,
    namespace,
    to_numpy,
)
from skcalib._core.xp.scores import (
    XpScores,
    as_compute_scores,
    check_fitted,
    reads_as_probability_rows,
    resolve,
)

__all__ = []  # private module


def move_fitted_attributes(estimator, ns):
    """Move the numeric numpy arrays among the fitted attributes (names
    ending in ``_``) of ``estimator`` to ``ns``, in place."""
    for name, value in list(vars(estimator).items()):
        if (
            name.endswith("_")
            and not name.startswith("_")
            and isinstance(value, np.ndarray)
            and value.dtype.kind in "biuf"
        ):
            setattr(estimator, name, ns.asarray(value))


def holds_foreign_arrays(estimator):
    """Whether the fitted state of ``estimator`` (its attributes that are not
    constructor parameters, and those of the estimators, lists, tuples and
    dicts they hold) has an array of another array-API library than
    numpy."""
    params = set(estimator.get_params(deep=False))
    todo = [v for k, v in vars(estimator).items() if k not in params]
    while todo:
        value = todo.pop()
        if is_foreign(value):
            return True
        if isinstance(value, (list, tuple)):
            todo.extend(value)
        elif isinstance(value, dict):
            todo.extend(value.values())
        elif hasattr(value, "get_params") and not isinstance(value, type):
            todo.extend(vars(value).values())
    return False


def follows_input(method):
    """Decorate a public method ``method(self, X, ...)`` of a fitted estimator
    so that a call computing with numpy (``namespace(X)`` is None: dispatch
    off, or ``X`` not of another array-API library) on an estimator fitted
    on arrays of another namespace runs on a numpy copy of it: the result is
    numpy, as for an estimator fitted on numpy. Other calls run as given."""

    @functools.wraps(method)
    def wrapper(self, X, *args, **kwargs):
        if namespace(X) is None and holds_foreign_arrays(self):
            self = move_estimator_to(self, np)
        return method(self, X, *args, **kwargs)

    return wrapper


def host_view(estimator):
    """A shallow copy of ``estimator`` whose array-API attributes are numpy."""
    host = copy.copy(estimator)
    for name, value in vars(estimator).items():
        if is_foreign(value):
            setattr(host, name, to_numpy(value))
    return host


def fit_on_host(estimator, fit, X, *args, **params):
    """Fit with the numpy code on host copies of the inputs; the fitted
    array attributes then move to the namespace and device of ``X``."""
    ns = namespace(X)
    args = [to_numpy(a) for a in (X, *args)]
    params = {k: to_numpy(v) for k, v in params.items()}
    with config_context(array_api_dispatch=False):
        fit(*args, **params)
    move_fitted_attributes(estimator, ns)
    return estimator


def call_on_host(estimator, method, X, *args):
    """``estimator.method(X, *args)`` computed by the numpy code on the host;
    array results come back in the namespace and on the device of ``X``."""
    ns = namespace(X)
    host = host_view(estimator)
    with config_context(array_api_dispatch=False):
        result = getattr(host, method)(to_numpy(X), *(to_numpy(a) for a in args))
    return _convert_result(result, ns)


def take_classes(ns, classes, index):
    """``classes[index]`` in the namespace of ``index`` for numeric labels;
    string labels stay numpy (they have no array-API dtype)."""
    if isinstance(classes, np.ndarray) and classes.dtype.kind in "OUS":
        return classes[to_numpy(index)]
    return ns.xp.take(ns.asarray(classes), index, axis=0)


def _encode_labels(est, ns, y):
    xp = ns.xp
    if not is_foreign(y) or y.ndim != 1 or est._given_classes() is not None:
        classes, y_enc = est._encode_y(to_numpy(y))
        return classes, ns.asarray(y_enc)
    y = xp.asarray(y, device=ns.device)
    classes, y_enc = xp.unique_inverse(y)
    floating = xp.isdtype(y.dtype, "real floating")
    if classes.shape[0] < 2 or (floating and not bool(xp.all(xp.isfinite(y)))):
        est._encode_y(to_numpy(y))  # raises numpy's message
    return classes, y_enc


def _check_n_features(est, X, *, reset):
    if X.ndim != 2:
        if reset and hasattr(est, "n_features_in_"):
            del est.n_features_in_
        return
    if reset:
        est.n_features_in_ = int(X.shape[1])
    elif getattr(est, "n_features_in_", X.shape[1]) != X.shape[1]:
        raise ValueError(
            f"X has {X.shape[1]} features, but {type(est).__name__} is expecting "
            f"{est.n_features_in_} features as input."
        )


def fit_native(est, ns, X, y, sample_weight):
    """Fit a raw-score calibrator on the device: ``est._fit_xp``."""
    X, value_range = as_compute_scores(ns, X)
    _check_n_features(est, X, reset=True)
    est.classes_, y_enc = _encode_labels(est, ns, y)
    if X.shape[0] != y_enc.shape[0]:
        raise ValueError(f"X gives {X.shape[0]} samples but y has {y_enc.shape[0]}.")
    n_classes = int(est.classes_.shape[0])
    est._check_columns(X, n_classes)
    if sample_weight is not None:
        w = _checked_weights(
            to_numpy(sample_weight),
            np.zeros(X.shape[0]),
            rescale=est._rescale_sample_weight,
        )
        sample_weight = ns.asarray(w, dtype=ns.accumulate_dtype)
    requested = est.score_type if est.score_type != "auto" else "auto"
    score_type, scores, n_renormalized = resolve(
        ns, X, requested, value_range=value_range, warn_logit=est.score_type == "logit"
    )
    est.score_type_ = score_type
    est.n_renormalized_rows_ = n_renormalized
    est._fit_rows_were_probabilities_ = score_type == "logit" and (
        reads_as_probability_rows(ns, X, value_range)
    )
    est._fit_xp(XpScores(ns, scores, score_type, n_classes), y_enc, sample_weight)
    return est


def predict_proba_native(est, ns, X):
    """Calibrated probabilities computed on the device: ``est._predict_proba_xp``."""
    X, value_range = as_compute_scores(ns, X)
    _check_n_features(est, X, reset=False)
    n_classes = int(est.classes_.shape[0])
    est._check_columns(X, n_classes)
    check_fitted(
        ns,
        X,
        est.score_type_,
        declared=est.score_type,
        fit_rows_were_probabilities=getattr(
            est, "_fit_rows_were_probabilities_", False
        ),
        value_range=value_range,
    )
    score_type, scores, _ = resolve(
        ns, X, est.score_type_, value_range=value_range, warn_logit=False
    )
    return est._predict_proba_xp(XpScores(ns, scores, score_type, n_classes))
