"""Discovery of every public estimator, calibrator, metric and scorer.

The one place the tests read ``__all__`` to find what is public
(:func:`public_members`); test modules ask here instead of reading it
themselves, so that every test sees the same public objects. (Tests of
``__all__`` itself, that it is sorted or complete, read it directly.)

Nothing here is a hand list of methods: estimators are the
``BaseEstimator`` classes of ``skcalib.__all__``; calibrators are those that
are calibrators (subclasses of :class:`skcalib._base.BaseCalibrator`, or
estimators with ``predict_proba``); metrics are the functions of
``skcalib.metrics.__all__`` read by their first parameters: ``(y_true,
y_proba)`` (probability metrics; named ``multilabel_*``: of a
label-indicator ``y_true``), ``y_sets`` among the first two (set
metrics) or a member stack first (ensemble metrics). The only choices made
here are how to build an instance that can be fitted on generated data (a
small ``LogisticRegression`` where an estimator is needed, 3 splits where
``cv`` splits, a fixed ``random_state``) and which parameter options also
get a configuration of their own (every option of ``strategy`` and
``method``: the bin edges and nonconformity scores are where the data
decide things).
"""

import inspect
import warnings
from dataclasses import dataclass, field

import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.linear_model import LogisticRegression
from sklearn.utils._param_validation import StrOptions

import skcalib
import skcalib.metrics
from skcalib._base import BaseCalibrator

#: Parameters whose every option gets its own configuration.
VARIED_OPTIONS = ("strategy", "method")


def public_members(module):
    """``(name, object)`` of each name of ``module.__all__``, in its order."""
    return [(name, getattr(module, name)) for name in module.__all__]


def public_classes(module, base=object):
    """The classes of ``module.__all__`` that subclass ``base``."""
    return [
        obj
        for _, obj in public_members(module)
        if inspect.isclass(obj) and issubclass(obj, base)
    ]


def public_functions(module):
    """The functions of ``module.__all__`` (not classes, not instances such
    as the ready-made scorers)."""
    return [obj for _, obj in public_members(module) if inspect.isfunction(obj)]


def estimator_classes():
    """Every public estimator class of ``skcalib.__all__`` (a
    ``BaseEstimator``)."""
    return public_classes(skcalib, BaseEstimator)


def multi_label(cls):
    """True for estimators whose ``y`` is a label-indicator matrix only
    (sklearn tags: ``target_tags.single_output`` False and
    ``classifier_tags.multi_label`` True). The single-label contract (rows
    summing to 1, ``y`` of class labels) does not apply to them; their own
    contract is in ``tests/calibrators/test_multilabel.py``."""
    tags = cls().__sklearn_tags__()
    ct = tags.classifier_tags
    return not tags.target_tags.single_output and ct is not None and ct.multi_label


def single_label_estimator_classes():
    """:func:`estimator_classes` without the :func:`multi_label` ones: the
    estimators that the tests of single-label ``y`` (class labels) apply to."""
    return [cls for cls in estimator_classes() if not multi_label(cls)]


def score_calibrator_classes():
    """Every public calibrator of scores: the subclasses of
    :class:`skcalib._base.BaseCalibrator` in ``skcalib.__all__`` (not the
    meta-estimators that fit their own classifier)."""
    return public_classes(skcalib, BaseCalibrator)


def calibrator_classes():
    """Every public calibrator class of ``skcalib.__all__`` of single-label
    ``y`` (the multi-label ones: :func:`multi_label`)."""
    return [
        cls
        for cls in single_label_estimator_classes()
        if issubclass(cls, BaseCalibrator) or hasattr(cls, "predict_proba")
    ]


class UnitLikelihoodRatio:
    """A likelihood ratio of 1 for every row (no covariate shift): a module
    class, so that an estimator holding it pickles, with a fixed repr, so
    that test ids (the estimator's repr) are the same in every pytest-xdist
    worker (a function's repr holds its address)."""

    def __call__(self, X):
        return np.ones(np.shape(X)[0])

    def __repr__(self):
        return "unit_likelihood_ratio"

    def __eq__(self, other):  # a clone's deep copy is the same ratio
        return isinstance(other, UnitLikelihoodRatio)

    def __hash__(self):
        return hash(UnitLikelihoodRatio)


unit_likelihood_ratio = UnitLikelihoodRatio()


#: Estimators whose defaults need target data at fit (``X_target=``): the
#: parameters that let them fit on ``(X, y)`` alone, as generic checks do.
#: Defaults that guessed such data would give silently unweighted sets.
FIT_ALONE_PARAMS = {
    "LabelShiftConformalClassifier": {"target_priors": "uniform"},
    "CovariateShiftConformalClassifier": {"likelihood_ratio": unit_likelihood_ratio},
}


def default_instance(cls):
    """``cls()``, with :data:`FIT_ALONE_PARAMS` where it needs them."""
    return cls(**FIT_ALONE_PARAMS.get(cls.__name__, {}))


def _first_params(func, n=2):
    return list(inspect.signature(func).parameters)[:n]


def _is_multilabel(func):
    return func.__name__.startswith("multilabel_")


def metric_functions():
    """Every public function of ``skcalib.metrics`` taking ``(y_true,
    y_proba)`` of class labels (not the multi-label metrics)."""
    return [
        f
        for f in public_functions(skcalib.metrics)
        if _first_params(f) == ["y_true", "y_proba"] and not _is_multilabel(f)
    ]


def multilabel_metric_functions():
    """Every public function of ``skcalib.metrics`` of a label-indicator
    ``y_true`` and an ``(n, L)`` ``y_proba``: ``multilabel_*(y_true,
    y_proba)``."""
    return [
        f
        for f in public_functions(skcalib.metrics)
        if _first_params(f) == ["y_true", "y_proba"] and _is_multilabel(f)
    ]


def set_metric_functions():
    """Every public function of ``skcalib.metrics`` of prediction sets:
    ``f(y_true, y_sets)`` or ``f(y_sets)``."""
    return [
        f for f in public_functions(skcalib.metrics) if "y_sets" in _first_params(f)
    ]


def member_metric_functions():
    """Every public function of ``skcalib.metrics`` of a stack of ensemble
    members (first parameter ``member_proba`` or ``member_scores``)."""
    return [
        f
        for f in public_functions(skcalib.metrics)
        if _first_params(f, 1) in (["member_proba"], ["member_scores"])
    ]


def every_metric_function():
    """The metrics of probabilities, of multi-label probabilities, of sets
    and of member stacks."""
    return (
        metric_functions()
        + multilabel_metric_functions()
        + set_metric_functions()
        + member_metric_functions()
    )


def scorer_names():
    """skcalib's own scorer names (``get_scorer_names`` also lists
    scikit-learn's): those whose scorer is a
    :class:`skcalib.metrics.ProbaScorer`."""
    M = skcalib.metrics
    return [
        name
        for name in M.get_scorer_names()
        if isinstance(M.get_scorer(name), M.ProbaScorer)
    ]


def takes_features(cls):
    """True for meta-estimators that fit their own ``estimator`` on features
    (not a calibrator of scores): they are built with a LogisticRegression."""
    return not issubclass(cls, BaseCalibrator) and "estimator" in _init_params(cls)


def _init_params(cls):
    return inspect.signature(cls.__init__).parameters


def _small_lr():
    """A LogisticRegression solved to round-off (Newton steps), so that equal
    problems give equal probabilities (lbfgs at ``tol=1e-10`` still differs
    by 3e-5 under a row permutation)."""
    return LogisticRegression(solver="newton-cholesky", tol=1e-12, max_iter=1000)


_LR_FLOAT32 = []


def inner_model_refuses_float32(est):
    """True when ``est`` fits the package's small LogisticRegression on
    float32 features and this scikit-learn cannot (1.6 raises "Buffer dtype
    mismatch" in its loss for newton-cholesky on float32): measured once on
    tiny data, a limit of scikit-learn, not of skcalib."""
    if not scores_as_features(est):
        return False
    if not _LR_FLOAT32:
        X = np.array([[0.0], [1.0], [2.0], [3.0]], dtype=np.float32)
        try:
            _small_lr().fit(X, np.array([0, 0, 1, 1]))
            _LR_FLOAT32.append(False)
        except ValueError:
            _LR_FLOAT32.append(True)
    return _LR_FLOAT32[0]


def _default_params(cls):
    """Parameters that make ``cls`` fit on small generated data."""
    params = _init_params(cls)
    kwargs = dict(FIT_ALONE_PARAMS.get(cls.__name__, {}))
    if takes_features(cls):
        kwargs["estimator"] = _small_lr()
    if "cv" in params and params["cv"].default is not None:
        kwargs["cv"] = 3  # fewer splits: generated data have >= 5 per class
    if "random_state" in params:
        kwargs["random_state"] = 0
    return kwargs


@dataclass
class Config:
    """One way to build a discovered calibrator."""

    cls: type
    params: dict = field(default_factory=dict)

    @property
    def id(self):
        extra = ",".join(
            f"{k}={_short(v)}"
            for k, v in self.params.items()
            if k not in _default_params(self.cls)
        )
        return self.cls.__name__ + (f"[{extra}]" if extra else "")

    def build(self, **overrides):
        return self.cls(**{**_default_params(self.cls), **self.params, **overrides})

    def __repr__(self):
        return self.id


def _short(value):
    if isinstance(value, BaseEstimator):
        return type(value).__name__
    return repr(value)


def calibrator_configs():
    """Each discovered calibrator with its defaults, plus one configuration
    per non-default option of the parameters in :data:`VARIED_OPTIONS`, plus
    ``calibrator=LogisticRegression()`` where a ``calibrator`` parameter
    takes any classifier, plus the non-default ``randomized`` for APS where
    it exists (``randomized=False`` when the default is ``"auto"``, which
    randomises APS; it needs ``method="aps"`` when ``method`` has that
    option)."""
    configs = []
    for cls in calibrator_classes():
        configs.append(Config(cls))
        constraints = getattr(cls, "_parameter_constraints", {})
        defaults = {k: p.default for k, p in _init_params(cls).items()}
        for name in VARIED_OPTIONS:
            for option in constraints.get(name, []):
                if isinstance(option, StrOptions):
                    for value in sorted(option.options - {defaults[name]}):
                        configs.append(Config(cls, {name: value}))
        if "calibrator" in defaults and issubclass(cls, BaseCalibrator):
            configs.append(Config(cls, {"calibrator": _small_lr()}))
        if "randomized" in defaults:
            # the option that is not the default for APS: randomized="auto"
            # randomises APS (issue 30), so the deterministic sets get theirs
            extra = {"randomized": defaults["randomized"] != "auto"}
            methods = [
                o.options
                for o in constraints.get("method", [])
                if hasattr(o, "options")
            ]
            if methods and "aps" in methods[0]:
                extra["method"] = "aps"
            configs.append(Config(cls, extra))
    return configs


# ------------------------------------------------------------------- rules
def _quiet_fit(est, X, y, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(X, y, **kw)


def outputs(est, X):
    """What a fitted calibrator says about ``X``: its probabilities and, if it
    has ``predict_set``, its prediction sets."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = {"proba": np.asarray(est.predict_proba(X))}
        if hasattr(est, "predict_set"):
            out["set"] = np.asarray(est.predict_set(X))
    return out


def _rule_data():
    rng = np.random.default_rng(12345)
    Z = rng.normal(size=(120, 3)) * 2
    P = np.exp(Z - Z.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    y = np.array([rng.choice(3, p=p) for p in P])
    y[:15] = np.arange(15) % 3
    return Z, y


_RANDOMNESS = {}


def uses_randomness(config):
    """True when the fit of ``config`` depends on ``random_state``: fits with
    ``random_state=0`` and ``1`` on the same data give different outputs.
    (A ``random_state`` that the configuration never uses, as Venn-ABERS
    with ``cv=None`` or LAC sets, does not count.)"""
    if "random_state" not in _init_params(config.cls):
        return False
    if config.id not in _RANDOMNESS:
        Z, y = _rule_data()
        a = outputs(_quiet_fit(config.build(random_state=0), Z, y), Z)
        b = outputs(_quiet_fit(config.build(random_state=1), Z, y), Z)
        _RANDOMNESS[config.id] = any(not np.array_equal(a[k], b[k]) for k in a)
    return _RANDOMNESS[config.id]


def splits_rows(est):
    """True when the fit splits the rows by position (a ``cv`` that is set):
    then reordering rows, duplicating a row or giving it weight 0 changes the
    splits, and so the result."""
    params = est.get_params(deep=False)
    return params.get("cv") is not None


def order_dependent(config):
    """Row order (and row multiplicity) legitimately matter for this fit."""
    return uses_randomness(config) or splits_rows(config.build())


def weight_scale_dependent(est):
    """True when an inner estimator that is not a skcalib calibrator has a
    regularisation strength ``C`` or ``alpha``: in scikit-learn's convention
    the penalty is not divided by the total weight, so multiplying every
    weight changes the effective penalty (``LogisticRegression``)."""
    for value in est.get_params(deep=False).values():
        if isinstance(value, BaseEstimator) and not isinstance(value, BaseCalibrator):
            inner = value.get_params(deep=False)
            if "C" in inner or "alpha" in inner:
                return True
    return False


def weights_are_counts(est):
    """True when the method declares that its result depends on the weight
    total by design (``_rescale_sample_weight = False``: Platt's smoothed
    targets, conformal levels ``(1 - alpha)(W + 1)``, Venn-ABERS repetition
    counts), so multiplying every weight is not a no-op."""
    return getattr(est, "_rescale_sample_weight", True) is False


def scores_as_features(est):
    """True when ``X`` (or the scores) are features of a plain scikit-learn
    estimator (a meta-estimator's classifier, or a ``calibrator`` that is
    not a skcalib calibrator): properties of *scores* (1-D = 2-D binary,
    rounded probabilities = renormalised ones) are not promised for
    features."""
    if takes_features(type(est)):
        return True
    return any(
        isinstance(v, BaseEstimator) and not isinstance(v, BaseCalibrator)
        for k, v in est.get_params(deep=False).items()
        if k != "estimator"
    )


def iterative(est):
    """Fitted by an iterative solver with a tolerance (``tol`` or an inner
    estimator with ``tol``): equal problems agree to the solver's accuracy,
    not to the last bit."""
    params = est.get_params(deep=True)
    return any(k == "tol" or k.endswith("__tol") for k in params)


_PIECEWISE = {}
_DATA_JUMPS = {}


def fit_jumps_with_the_data(config):
    """True when the fitted map jumps as tied *training* scores are untied:
    fits on scores rounded to 2 decimals (many ties) and on the same scores
    moved by a relative 1e-9 (no ties left) predict more than 1e-4 apart
    somewhere, 1e5 times the move. Isotonic regression is such a fit (PAV
    pools tied scores into one block, and untied ones may be split), also
    when its map is continuous in its input (centered isotonic), so 4-decimal
    rounding, which creates ties, has no pointwise bound for it; smooth
    maximum-likelihood fits move by about the perturbation."""
    if config.id not in _DATA_JUMPS:
        Z, y = _rule_data()
        P = np.exp(Z - Z.max(axis=1, keepdims=True))
        P /= P.sum(axis=1, keepdims=True)
        R = np.maximum(P.round(2), 0.01)
        R /= R.sum(axis=1, keepdims=True)
        Q = R * (1 + 1e-9 * np.random.default_rng(7).standard_normal(R.shape))
        Q /= Q.sum(axis=1, keepdims=True)
        a = outputs(_quiet_fit(clone(config.build()), R, y), P)["proba"]
        b = outputs(_quiet_fit(clone(config.build()), Q, y), P)["proba"]
        _DATA_JUMPS[config.id] = bool(np.abs(a - b).max() > 1e-4)
    return _DATA_JUMPS[config.id]


def piecewise_constant(config):
    """True when the fitted map of ``config`` is piecewise constant in its
    input (binning, isotonic steps): moving every input by 1e-9 leaves at
    least half of the predictions bit-identical. For such maps an input
    that crosses a step changes its prediction by the step height, so their
    sensitivity to rounding is bounded through the metrics, not pointwise."""
    if config.id not in _PIECEWISE:
        Z, y = _rule_data()
        est = _quiet_fit(clone(config.build()), Z, y)
        a = outputs(est, Z)["proba"]
        b = outputs(est, Z + np.array([1e-9, -1e-9, 5e-10]))["proba"]
        _PIECEWISE[config.id] = np.mean(np.all(a == b, axis=1)) >= 0.5
    return _PIECEWISE[config.id]
