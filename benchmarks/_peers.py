"""Peer libraries and adapters that give every calibrator and metric one shape.

Every peer is optional. :func:`load_peers` imports the selected ones and
returns a :class:`PeerStatus` per library: a missing library, or one that
fails to import, is kept with a one-line note and everything that needs it
is skipped. scikit-learn is a dependency of skcalib and always present.

Inputs: a :class:`ScoreSet` holds one prediction set in every form the
libraries take (logits, probabilities, binary log-odds, per-class log-odds),
built once outside the timed calls, so each library gets its natural input
and the conversion is never timed. Labels are ``0..K-1``.

Calibrators (:class:`Calibrator`) fit on one score set and predict an
``(n, K)`` probability array on another; ``params`` returns the fitted
parameters that can be compared across libraries (the temperature, Platt's
slope and intercept). Metrics (:class:`Metric`) map ``(y, proba)`` to a float.
Each adapter carries ``why``: the one-line reason its value may differ from
skcalib's, printed next to the difference when there is one.
"""

import importlib
import warnings
from dataclasses import dataclass
from functools import cached_property
from importlib import metadata

import numpy as np
from scipy.special import log_softmax, softmax
from sklearn.base import BaseEstimator, ClassifierMixin

#: Floor of probabilities before taking logs (skcalib's own floor,
#: ``skcalib._core.scores.PROBA_FLOOR``), so every library sees the same logits.
PROBA_FLOOR = 1e-12

#: name shown -> (module to import, distribution on PyPI)
PEERS = {
    "sklearn": ("sklearn", "scikit-learn"),
    "torch": ("torch", "torch"),
    "torchmetrics": ("torchmetrics.functional.classification", "torchmetrics"),
    "netcal": ("netcal", "netcal"),
    "betacal": ("betacal", "betacal"),
    "venn-abers": ("venn_abers", "venn-abers"),
    "relplot": ("relplot", "relplot"),
    # imports as the top-level package ``calibration``
    "uncertainty-calibration": ("calibration.utils", "uncertainty-calibration"),
    "splinecalib": ("splinecalib", "splinecalib"),
    "ml-insights": ("ml_insights", "ml-insights"),
    "probmetrics": ("probmetrics.calibrators", "probmetrics"),
}


@dataclass
class PeerStatus:
    name: str
    version: str = ""
    note: str = ""
    module: object = None

    @property
    def ok(self):
        return self.module is not None


def parse_peers(spec):
    """``"all"``, ``"none"`` (scikit-learn only) or a comma-separated list."""
    if spec in (None, "", "all"):
        return list(PEERS)
    if spec == "none":
        return ["sklearn"]
    names = [s.strip() for s in spec.split(",") if s.strip()]
    unknown = [s for s in names if s not in PEERS]
    if unknown:
        raise SystemExit(f"unknown peer(s) {unknown}; known: {', '.join(PEERS)}")
    return ["sklearn", *[s for s in names if s != "sklearn"]]


def load_peers(selected):
    """Import the selected peers; never raises."""
    status = {}
    for name in PEERS:
        module_name, dist = PEERS[name]
        if name not in selected:
            status[name] = PeerStatus(name, note="not selected (--peers)")
            continue
        try:
            version = metadata.version(dist)
        except metadata.PackageNotFoundError:
            status[name] = PeerStatus(
                name, note=f"not installed (pip install {dist}; see README)"
            )
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                module = importlib.import_module(module_name)
        except Exception as exc:  # noqa: BLE001 - any import failure skips the peer
            status[name] = PeerStatus(
                name, version, f"import failed: {type(exc).__name__}: {exc}"[:160]
            )
            continue
        status[name] = PeerStatus(name, version, "", module)
    return status


def skip_notes(status):
    return [f"{s.name}: {s.note}" for s in status.values() if not s.ok]


# ----------------------------------------------------------------------- data
class ScoreSet:
    """One prediction set (labels ``0..K-1``) in the forms libraries take.

    Parameters
    ----------
    y : ndarray of shape (n,)
    logits : ndarray of shape (n, K) or None
        Logits; when ``None`` they are ``log(max(proba, PROBA_FLOOR))``.
    proba : ndarray of shape (n, K) or None
        Probabilities; when ``None`` they are ``softmax(logits)``.
    """

    def __init__(self, y, *, logits=None, proba=None):
        self.y = np.asarray(y)
        if proba is None:
            proba = softmax(logits, axis=1)
        if logits is None:
            logits = np.log(np.maximum(proba, PROBA_FLOOR))
        self.proba = proba
        self.logits = logits
        self.k = proba.shape[1]
        self.n = proba.shape[0]

    @cached_property
    def s(self):
        """Binary: log-odds of class 1 (``z1 - z0``), float64, shape (n,)."""
        return (self.logits[:, 1] - self.logits[:, 0]).astype(np.float64)

    @cached_property
    def p1(self):
        """Binary: probability of class 1, shape (n,)."""
        return np.ascontiguousarray(self.proba[:, 1])

    @cached_property
    def ovr_log_odds(self):
        """Per-class log-odds ``log p_k - log(1 - p_k)``, as skcalib computes
        them for its one-vs-rest maps (1-D log-odds for two classes)."""
        if self.k == 2:
            return self.s
        from skcalib._core.scores import log_odds

        return log_odds(log_softmax(self.logits.astype(np.float64), axis=1))

    @cached_property
    def y_onehot(self):
        out = np.zeros((self.n, self.k))
        out[np.arange(self.n), self.y] = 1.0
        return out


def nll_at_temperature(logits, y, temperature, chunk=1 << 16):
    """Mean NLL of ``softmax(logits / T)`` in float64, by blocks of rows."""
    total = 0.0
    for start in range(0, logits.shape[0], chunk):
        z = logits[start : start + chunk].astype(np.float64) / temperature
        lp = log_softmax(z, axis=1)
        total -= lp[np.arange(lp.shape[0]), y[start : start + chunk]].sum()
    return total / logits.shape[0]


def renormalise(proba):
    """Rows divided by their sums (a zero row becomes uniform)."""
    proba = np.asarray(proba, dtype=np.float64)
    if proba.ndim == 1:
        return np.column_stack((1.0 - proba, proba))
    s = proba.sum(axis=1, keepdims=True)
    bad = ~(s[:, 0] > 0)
    proba = proba / np.where(s > 0, s, 1.0)
    proba[bad] = 1.0 / proba.shape[1]
    return proba


# ---------------------------------------------------------------- calibrators
class PassthroughClassifier(ClassifierMixin, BaseEstimator):
    """A "fitted" classifier whose ``decision_function`` returns its input.

    Wrapped in :class:`sklearn.frozen.FrozenEstimator`, it lets
    ``CalibratedClassifierCV`` calibrate precomputed scores: one column
    gives a 1-D binary decision value.
    """

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        return self

    def decision_function(self, X):
        X = np.asarray(X)
        return X[:, 0] if X.shape[1] == 1 else X

    def predict(self, X):
        X = np.asarray(X)
        if X.shape[1] == 1:
            return self.classes_[(X[:, 0] > 0).astype(int)]
        return self.classes_[np.argmax(X, axis=1)]


def frozen_passthrough(k):
    from sklearn.frozen import FrozenEstimator

    return FrozenEstimator(PassthroughClassifier().fit(None, np.arange(k)))


class Calibrator:
    """Adapter of one calibration method of one library."""

    library = ""
    label = ""
    method = ""  # family: temperature, platt, isotonic, histogram, beta, ...
    binary_only = False
    max_classes = None  # larger problems are skipped (too slow or unsupported)
    max_cells = None  # speed: n * K above this is skipped
    max_cells_multiclass = None  # the same, for K > 2 only
    why = ""

    why_binary = None  # the reason on two classes, when it is another one

    def explain(self, k):
        return self.why_binary if (k == 2 and self.why_binary) else self.why

    def applies(self, n, k):
        if self.binary_only and k != 2:
            return "binary only"
        if self.max_classes is not None and k > self.max_classes:
            return f"skipped for K > {self.max_classes} (too slow)"
        return ""

    def fit(self, tr):
        raise NotImplementedError

    def predict(self, state, te):
        raise NotImplementedError

    def params(self, state):
        return {}


# -- skcalib ------------------------------------------------------------------
#: skcalib class name -> method family; unknown classes get their own family.
FAMILIES = {
    "TemperatureCalibrator": "temperature",
    "PlattCalibrator": "platt",
    "IsotonicCalibrator": "isotonic",
    "HistogramBinningCalibrator": "histogram",
    "BetaCalibrator": "beta",
    "VennAbersCalibrator": "venn_abers",
    "ScalingBinningCalibrator": "scaling_binning",
    "DirichletCalibrator": "dirichlet",
    "VectorScalingCalibrator": "vector_scaling",
    "MatrixScalingCalibrator": "matrix_scaling",
    "EnsembleTemperatureCalibrator": "ensemble_temperature",
    "SplineCalibrator": "spline",
    "StructuredMatrixScalingCalibrator": "structured_matrix_scaling",
    "StructuredVectorScalingCalibrator": "structured_vector_scaling",
}
#: Methods that act on logits: the speed benchmark feeds them logits.
LOGIT_FAMILIES = {
    "temperature",
    "platt",
    "isotonic",
    "vector_scaling",
    "matrix_scaling",
}


def discover_calibrators():
    """skcalib's public calibrators (from ``skcalib.__all__``), by name.

    A class counts when it derives from skcalib's base calibrator (when that
    can be imported; else when it has ``fit`` and ``predict_proba``), and has
    no ``predict_set``: ``CalibratedClassifier`` takes features and
    ``ConformalClassifier`` returns sets.
    """
    import skcalib

    try:
        from skcalib._base import BaseCalibrator
    except ImportError:  # pragma: no cover - layout changed
        BaseCalibrator = ()
    found = {}
    for name in getattr(skcalib, "__all__", []):
        obj = getattr(skcalib, name, None)
        if not isinstance(obj, type) or hasattr(obj, "predict_set"):
            continue  # prediction sets (ConformalClassifier), not a calibrator
        if BaseCalibrator and not issubclass(obj, BaseCalibrator):
            continue  # CalibratedClassifier takes features, not scores
        if hasattr(obj, "fit") and hasattr(obj, "predict_proba"):
            found[name] = obj
    return found


class SkcalibCalibrator(Calibrator):
    library = "skcalib"

    def __init__(self, cls, *, label=None, score_input=None, **params):
        self.cls = cls
        self.params_ = params
        self.method = FAMILIES.get(cls.__name__, cls.__name__)
        self.label = label or (
            f"skcalib {cls.__name__}"
            + (
                f"({', '.join(f'{k}={v!r}' for k, v in params.items())})"
                if params
                else ""
            )
        )
        # "logit": logits (1-D log-odds for two classes); "probability"
        self.score_input = score_input or (
            "logit" if self.method in LOGIT_FAMILIES else "probability"
        )

    def _X(self, data):
        if self.score_input == "logit":
            return data.s if data.k == 2 else data.logits
        return data.p1 if data.k == 2 else data.proba

    def fit(self, tr):
        return self.cls(score_type=self.score_input, **self.params_).fit(
            self._X(tr), tr.y
        )

    def predict(self, state, te):
        return state.predict_proba(self._X(te))

    def params(self, state):
        out = {}
        if hasattr(state, "temperature_"):
            out["T"] = float(state.temperature_)
        coef = getattr(state, "coef_", None)
        if coef is not None and np.ndim(coef) == 1 and np.size(coef) == 1:
            out["slope"] = float(np.ravel(coef)[0])
            out["intercept"] = float(np.ravel(state.intercept_)[0])
        return out


# -- scikit-learn -------------------------------------------------------------
class SklearnCCV(Calibrator):
    """``CalibratedClassifierCV(FrozenEstimator(passthrough), method=...)``.

    Temperature gets the logits (``log p`` on probability data); sigmoid and
    isotonic get per-class log-odds, the scores skcalib's one-vs-rest maps
    see (1-D log-odds for two classes), so the methods are the same.
    """

    library = "sklearn"

    def __init__(self, method):
        self.sk_method = method
        if method == "sigmoid":  # K L-BFGS fits: ~2 minutes at n*K = 1e7
            self.max_cells_multiclass = 1_000_000
        self.method = {"sigmoid": "platt"}.get(method, method)
        self.label = f"sklearn CalibratedClassifierCV({method})"
        self.why = {
            "temperature": "Brent's method on log(1/T) in [-10, 10], stopped at "
            "64 eps in log(1/T); 1-D binary scores become logits (-s, s), so its T "
            "is twice ours (shown divided by 2)",
            "sigmoid": "same smoothed-target Platt objective, solved by L-BFGS "
            "(stops at a gradient tolerance)",
            "isotonic": "IsotonicRegression on the same log-odds; sklearn "
            "renormalises one-vs-rest rows the same way; ours floors outputs at "
            "1e-12",
        }[method]

    def _X(self, data):
        if self.sk_method == "temperature":
            return data.s[:, None] if data.k == 2 else data.logits
        return data.s[:, None] if data.k == 2 else data.ovr_log_odds

    def fit(self, tr):
        from sklearn.calibration import CalibratedClassifierCV

        return CalibratedClassifierCV(
            frozen_passthrough(tr.k), method=self.sk_method
        ).fit(self._X(tr), tr.y)

    def predict(self, state, te):
        return state.predict_proba(self._X(te))

    def params(self, state):
        cal = state.calibrated_classifiers_[0].calibrators[0]
        if self.sk_method == "temperature":
            t = 1.0 / float(cal.beta_)
            if len(state.classes_) == 2:
                t /= 2.0  # logits (-s, s): twice skcalib's T on log-odds s
            return {"T": t}
        if self.sk_method == "sigmoid" and len(state.classes_) == 2:
            return {"slope": -float(cal.a_), "intercept": -float(cal.b_)}
        return {}


class SklearnIsotonicAlone(Calibrator):
    """``IsotonicRegression(out_of_bounds="clip")`` on binary log-odds."""

    library = "sklearn"
    method = "isotonic"
    label = "sklearn IsotonicRegression alone"
    binary_only = True
    why = "bare IsotonicRegression: no output floor at 1e-12"

    def fit(self, tr):
        from sklearn.isotonic import IsotonicRegression

        return IsotonicRegression(out_of_bounds="clip").fit(tr.s, tr.y)

    def predict(self, state, te):
        p = state.predict(te.s)
        return np.column_stack((1.0 - p, p))


# -- netcal -------------------------------------------------------------------
class _Netcal(Calibrator):
    library = "netcal"

    def _X(self, data):
        return data.p1 if data.k == 2 else data.proba

    def fit(self, tr):
        return self._make().fit(self._X(tr), tr.y)

    def predict(self, state, te):
        return renormalise(state.transform(self._X(te)))


class NetcalTemperature(_Netcal):
    method = "temperature"
    label = "netcal TemperatureScaling"
    max_cells = 10_000_000
    why = (
        "scipy L-BFGS-B with finite-difference gradients of a torch NLL "
        "(default tolerances), on log of its own clipped probabilities"
    )

    def _make(self):
        from netcal.scaling import TemperatureScaling

        return TemperatureScaling()

    def params(self, state):
        return {"T": 1.0 / float(np.ravel(state.weights)[0])}


class NetcalLogistic(_Netcal):
    method = "platt"
    label = "netcal LogisticCalibration"
    binary_only = True
    max_cells = 10_000_000
    why = (
        "plain logistic regression on log-odds: no Platt smoothed targets, "
        "L-BFGS-B with finite-difference gradients"
    )

    def _make(self):
        from netcal.scaling import LogisticCalibration

        return LogisticCalibration()

    def params(self, state):
        return {
            "slope": float(np.ravel(state.weights)[0]),
            "intercept": float(np.ravel(state.intercept)[0]),
        }


class NetcalMatrixScaling(NetcalLogistic):
    method = "matrix_scaling"
    label = "netcal LogisticCalibration (matrix scaling)"
    binary_only = False
    max_classes = 10
    why = "multinomial logistic regression on log p with a full K x K matrix"

    def applies(self, n, k):
        return "multiclass only" if k == 2 else super().applies(n, k)

    def params(self, state):
        return {}


class NetcalBeta(_Netcal):
    method = "beta"
    label = "netcal BetaCalibration"
    binary_only = True
    max_cells = 10_000_000
    why = "same 3-parameter beta map, fitted by L-BFGS-B on a torch NLL"

    def _make(self):
        from netcal.scaling import BetaCalibration

        return BetaCalibration()


class NetcalDirichlet(NetcalBeta):
    method = "dirichlet"
    label = "netcal BetaCalibration (multiclass: Dirichlet)"
    binary_only = False
    max_classes = 10
    why = (
        "multinomial logistic regression on log p (Dirichlet calibration), "
        "unregularised"
    )

    def applies(self, n, k):
        return "multiclass only" if k == 2 else super().applies(n, k)


class NetcalHistogram(_Netcal):
    method = "histogram"
    label = "netcal HistogramBinning(bins=15)"
    max_cells = 10_000_000
    why = (
        "empty bins and bins without positives give 0 (no floor); one-vs-rest "
        "rows renormalised by the benchmark"
    )

    def _make(self):
        from netcal.binning import HistogramBinning

        return HistogramBinning(bins=15)


class NetcalIsotonic(_Netcal):
    method = "isotonic"
    label = "netcal IsotonicRegression"
    max_cells = 10_000_000
    why = (
        "isotonic on probabilities (ties that log-odds separate stay tied), "
        "outputs 0 and 1 kept; rows renormalised by the benchmark"
    )

    def _make(self):
        from netcal.binning import IsotonicRegression

        return IsotonicRegression()


# -- betacal --------------------------------------------------------------------
class Betacal(Calibrator):
    library = "betacal"
    method = "beta"
    label = "betacal BetaCalibration(abm)"
    max_classes = 100
    max_cells = 10_000_000
    why = (
        "sklearn LogisticRegression(C=1e11) on (log p, -log(1-p)), p clipped at "
        "the input dtype's eps; multiclass: one-vs-rest by the benchmark"
    )

    def _fit1(self, p, t):
        from betacal import BetaCalibration

        with warnings.catch_warnings():  # betacal sets a global "ignore" filter
            return BetaCalibration("abm").fit(p, t)

    def fit(self, tr):
        if tr.k == 2:
            return [self._fit1(tr.p1, tr.y)]
        return [
            self._fit1(tr.proba[:, j], (tr.y == j).astype(int)) for j in range(tr.k)
        ]

    def predict(self, state, te):
        if te.k == 2:
            return renormalise(state[0].predict(te.p1))
        return renormalise(
            np.column_stack([m.predict(te.proba[:, j]) for j, m in enumerate(state)])
        )

    def params(self, state):
        if len(state) == 1:
            a, b, m = state[0].calibrator_.map_
            return {"a": float(a), "b": float(b), "m": float(m)}
        return {}


# -- venn-abers -------------------------------------------------------------------
class VennAbers(Calibrator):
    library = "venn-abers"
    method = "venn_abers"
    label = "venn-abers VennAbersCalibrator (inductive)"
    max_classes = 10
    max_cells = 2_000_000
    why = "inductive Venn-ABERS; multiclass: its one-vs-one pairs"

    def fit(self, tr):
        return tr  # prefitted mode: calibration data are used at predict time

    def predict(self, state, te):
        from venn_abers import VennAbersCalibrator

        with warnings.catch_warnings():
            p = VennAbersCalibrator().predict_proba(
                p_cal=state.proba, y_cal=state.y, p_test=te.proba
            )
        return renormalise(p)


# -- uncertainty-calibration (Kumar, Liang & Ma) ----------------------------------
class _UC(Calibrator):
    library = "uncertainty-calibration"
    max_cells = 1_000_000  # Python loops over samples
    n_bins = 15

    def fit(self, tr):
        from calibration import calibrators

        cal = getattr(calibrators, self._class(tr.k))(tr.n, self.n_bins)
        with warnings.catch_warnings():
            cal.train_calibration(*self._train_args(tr))
        return cal

    def _train_args(self, tr):
        return (tr.p1, tr.y) if tr.k == 2 else (tr.proba, tr.y)

    def predict(self, state, te):
        return renormalise(state.calibrate(te.p1 if te.k == 2 else te.proba))


class UCPlatt(_UC):
    method = "platt"
    label = "uncertainty-calibration PlattCalibrator"
    binary_only = True
    why = "LogisticRegression(C=1e10) on logit(p): no Platt smoothed targets"

    def _class(self, k):
        return "PlattCalibrator"

    def params(self, state):
        return {}


class UCHistogram(_UC):
    method = "histogram_quantile"
    label = "uncertainty-calibration HistogramCalibrator (15 equal-mass bins)"
    why = "equal-mass bins with edges halfway between order statistics"

    def _class(self, k):
        return "HistogramCalibrator" if k == 2 else "HistogramMarginalCalibrator"


class UCScalingBinning(_UC):
    method = "scaling_binning"
    label = "uncertainty-calibration PlattBinner (15 bins)"
    why = "Platt then equal-mass binning of the Platt outputs (marginal)"

    def _class(self, k):
        return "PlattBinnerCalibrator" if k == 2 else "PlattBinnerMarginalCalibrator"


# -- Mix-n-Match's procedure, from the paper (Zhang, Kailkhura & Han 2020) ----
class MixNMatchETS(Calibrator):
    """Ensemble temperature scaling as the Mix-n-Match authors fit it, written
    from the paper and its description of their procedure: ``T`` minimises
    the mean squared error of ``softmax(z / T)`` by L-BFGS-B within
    ``[0.05, 5]`` (from ``T = 1``), then the weights ``w`` of
    ``w1 softmax(z / T) + w2 softmax(z) + w3 / K`` minimise the mean squared
    error on the simplex by SLSQP (from ``w = (1, 0, 0)``). Always available
    (numpy and scipy): the reference of the family, not a package.
    """

    library = "Mix-n-Match (paper)"
    method = "ensemble_temperature"
    label = "Mix-n-Match ETS (paper: MSE fits, T in [0.05, 5])"
    max_cells = 10_000_000  # dense one-hot targets, numerical gradients
    why = (
        "the paper's objective: T and the weights by squared error (ours: T by "
        "likelihood, weights by log-loss), T bounded to [0.05, 5]"
    )

    @staticmethod
    def _mix(z, t, w):
        k = z.shape[1]
        return w[0] * softmax(z / t, axis=1) + w[1] * softmax(z, axis=1) + w[2] / k

    def fit(self, tr):
        from scipy.optimize import minimize

        z, onehot = tr.logits.astype(np.float64), tr.y_onehot

        def mse_t(t):
            return float(np.mean((softmax(z / t[0], axis=1) - onehot) ** 2))

        t = minimize(
            mse_t, [1.0], method="L-BFGS-B", bounds=[(0.05, 5.0)], tol=1e-12
        ).x[0]
        pt, p1 = softmax(z / t, axis=1), softmax(z, axis=1)

        def mse_w(w):
            mix = w[0] * pt + w[1] * p1 + w[2] / tr.k
            return float(np.mean((mix - onehot) ** 2))

        res = minimize(
            mse_w,
            [1.0, 0.0, 0.0],
            method="SLSQP",
            bounds=[(0.0, 1.0)] * 3,
            constraints={"type": "eq", "fun": lambda w: np.sum(w) - 1.0},
            tol=1e-12,
        )
        w = np.maximum(res.x, 0.0)
        return t, w / w.sum()

    def predict(self, state, te):
        t, w = state
        return self._mix(te.logits.astype(np.float64), t, w)

    def params(self, state):
        return {"T": float(state[0])}


# -- splinecalib / ml-insights (Lucena) ----------------------------------------
class LucenaSplineCalib(Calibrator):
    """``SplineCalib()`` with its defaults (log-odds scale, unity prior,
    one cross-validation fold for the penalty), on probabilities: class 1's
    on two classes, one-vs-rest rows renormalised by the package on more."""

    library = "splinecalib"
    method = "spline"
    max_cells = 1_000_000  # one L-BFGS-B fit per penalty and class
    why = (
        "ridge penalty on the spline coefficients chosen on one random fold, "
        "30 random knots plus 0.1..0.9, synthetic points on the diagonal"
    )

    def __init__(self, library="splinecalib"):
        self.library = library
        self.module = {"splinecalib": "splinecalib", "ml-insights": "ml_insights"}[
            library
        ]
        self.label = f"{library} SplineCalib"

    def fit(self, tr):
        cal = importlib.import_module(self.module).SplineCalib()
        with warnings.catch_warnings():
            cal.fit(tr.p1 if tr.k == 2 else tr.proba, tr.y)
        return cal

    def predict(self, state, te):
        return renormalise(state.calibrate(te.p1 if te.k == 2 else te.proba))


# -- probmetrics (Berta et al.: structured matrix / vector scaling) -------------
class ProbmetricsStructured(Calibrator):
    """probmetrics' ``SMSCalibrator`` / ``SVSCalibrator`` with their defaults,
    on probabilities (the paper's implementation)."""

    library = "probmetrics"
    why = (
        "the same regularised objective, solved by torch BFGS in float32 "
        "(stops at a gradient of 1e-5)"
    )

    def __init__(self, vector):
        self.vector = vector
        self.cls_name = "SVSCalibrator" if vector else "SMSCalibrator"
        self.method = (
            "structured_vector_scaling" if vector else "structured_matrix_scaling"
        )
        self.label = f"probmetrics {self.cls_name}"

    def fit(self, tr):
        from probmetrics import calibrators

        cal = getattr(calibrators, self.cls_name)(print_init_info=False)
        return cal.fit(tr.proba, tr.y)

    def predict(self, state, te):
        return renormalise(np.asarray(state.predict_proba(te.proba)))


def peer_calibrators(status):
    """Adapters of every available peer calibrator."""
    out = [SklearnCCV("temperature"), SklearnCCV("sigmoid"), SklearnCCV("isotonic")]
    out.append(MixNMatchETS())
    for name in ("splinecalib", "ml-insights"):
        if status.get(name) and status[name].ok:
            out.append(LucenaSplineCalib(name))
    if status.get("probmetrics") and status["probmetrics"].ok:
        out += [ProbmetricsStructured(False), ProbmetricsStructured(True)]
    if status.get("netcal") and status["netcal"].ok:
        out += [
            NetcalTemperature(),
            NetcalLogistic(),
            NetcalIsotonic(),
            NetcalHistogram(),
            NetcalBeta(),
            NetcalDirichlet(),
            NetcalMatrixScaling(),
        ]
    if status.get("betacal") and status["betacal"].ok:
        out.append(Betacal())
    if status.get("venn-abers") and status["venn-abers"].ok:
        out.append(VennAbers())
    if status.get("uncertainty-calibration") and status["uncertainty-calibration"].ok:
        out += [UCPlatt(), UCHistogram(), UCScalingBinning()]
    return out


# -------------------------------------------------------------------- metrics
@dataclass
class Metric:
    """``fn(y, proba) -> float``; ``proba`` float32 ``(n, K)``."""

    library: str
    label: str
    metric: str
    fn: object
    why: str = ""
    why_binary: str = None  # the reason on two classes, when it is another one
    max_n: int = None
    max_k: int = None
    baseline: bool = False  # a lower bound, not a peer (no value)

    def explain(self, k):
        return self.why_binary if (k == 2 and self.why_binary) else self.why

    def applies(self, n, k):
        if self.max_n is not None and n > self.max_n:
            return f"skipped for n > {self.max_n:.0e} (too slow)"
        if self.max_k is not None and k > self.max_k:
            return f"skipped for K > {self.max_k}"
        return ""


def _confidence(y, proba):
    pred = np.argmax(proba, axis=1)
    conf = proba[np.arange(proba.shape[0]), pred]
    return conf, (pred == y)


def _curve_checksum(acc):
    acc = np.asarray(acc, dtype=np.float64)
    return float(np.nanmean(acc))


def skcalib_metrics():
    from skcalib import metrics as M

    def curve(y, p):
        r = M.reliability_curve(y, p, n_bins=15)
        return _curve_checksum(r.accuracy[r.nonempty])

    return [
        Metric(
            "numpy",
            "proba.max(axis=1) alone",
            "ece_confidence",
            lambda y, p: p.max(axis=1),
            baseline=True,
        ),
        Metric(
            "skcalib",
            "skcalib expected_calibration_error",
            "ece_confidence",
            lambda y, p: M.expected_calibration_error(y, p, n_bins=15),
        ),
        Metric(
            "skcalib",
            "skcalib classwise_calibration_error",
            "ece_classwise",
            lambda y, p: M.classwise_calibration_error(y, p, n_bins=15),
        ),
        Metric(
            "skcalib",
            "skcalib maximum_calibration_error",
            "mce",
            lambda y, p: M.maximum_calibration_error(y, p, n_bins=15),
        ),
        Metric(
            "skcalib",
            "skcalib expected_calibration_error(norm='l2', debias=True)",
            "ece_debiased_l2",
            lambda y, p: M.expected_calibration_error(
                y, p, n_bins=15, norm="l2", debias=True
            ),
        ),
        Metric(
            "skcalib", "skcalib brier_score", "brier", lambda y, p: M.brier_score(y, p)
        ),
        Metric(
            "skcalib",
            "skcalib negative_log_likelihood",
            "nll",
            lambda y, p: M.negative_log_likelihood(y, p),
        ),
        Metric("skcalib", "skcalib reliability_curve", "reliability_curve", curve),
    ]


def peer_metrics(status):
    out = []
    from sklearn.calibration import calibration_curve
    from sklearn.metrics import brier_score_loss, log_loss

    def sk_brier(y, p):
        if p.shape[1] == 2:
            return brier_score_loss(y, p[:, 1])
        return brier_score_loss(y, p, labels=np.arange(p.shape[1]))

    def sk_curve(y, p):
        conf, correct = _confidence(y, p)
        prob_true, _ = calibration_curve(correct, conf, n_bins=15)
        return _curve_checksum(prob_true)

    out += [
        Metric(
            "sklearn",
            "sklearn brier_score_loss",
            "brier",
            sk_brier,
            why="sklearn sums the squares in the input's float32 (skcalib in float64)",
        ),
        Metric(
            "sklearn",
            "sklearn log_loss",
            "nll",
            lambda y, p: log_loss(y, p, labels=np.arange(p.shape[1])),
            why="clips at the dtype's eps",
        ),
        Metric(
            "sklearn",
            "sklearn calibration_curve (on confidence, correct)",
            "reliability_curve",
            sk_curve,
            why="a float32 confidence equal to a float32-rounded edge: sklearn "
            "compares it with the float64 edge (upper bin), skcalib in the "
            "input's dtype (lower bin)",
        ),
    ]
    if status.get("torch") and status["torch"].ok:
        import torch

        def torch_nll(y, p):
            return float(
                torch.nn.functional.nll_loss(
                    torch.log(torch.from_numpy(p)), torch.from_numpy(y)
                )
            )

        out.append(
            Metric(
                "torch",
                "torch nll_loss(log p)",
                "nll",
                torch_nll,
                why="float32 log and mean; no clipping (log 0 = -inf)",
            )
        )
    if status.get("torchmetrics") and status["torchmetrics"].ok:
        import torch
        from torchmetrics.functional.classification import (
            multiclass_calibration_error,
        )

        def tm(norm):
            def fn(y, p):
                return float(
                    multiclass_calibration_error(
                        torch.from_numpy(p),
                        torch.from_numpy(y),
                        num_classes=p.shape[1],
                        n_bins=15,
                        norm=norm,
                    )
                )

            return fn

        why = (
            "float32 drift: torchmetrics casts confidences to float32 and sums "
            "the bins with scatter_add in float32 (skcalib in float64)"
        )
        out += [
            Metric(
                "torchmetrics",
                "torchmetrics multiclass_calibration_error(l1)",
                "ece_confidence",
                tm("l1"),
                why=why,
            ),
            Metric(
                "torchmetrics",
                "torchmetrics multiclass_calibration_error(max)",
                "mce",
                tm("max"),
                why=why,
            ),
        ]
    if status.get("netcal") and status["netcal"].ok:
        from netcal.metrics import ECE, MCE

        why = (
            "netcal's bins are left-closed [lo, hi) (a confidence on an edge "
            "goes to the upper bin)"
        )
        why2 = (
            "different definition: on 2 columns netcal bins the probability "
            "of class 1, not the top-1 confidence (our classwise value for "
            "class 1)"
        )
        out += [
            Metric(
                "netcal",
                "netcal ECE(bins=15).measure",
                "ece_confidence",
                lambda y, p: float(ECE(bins=15).measure(p, y)),
                why=why,
                why_binary=why2,
            ),
            Metric(
                "netcal",
                "netcal MCE(bins=15).measure",
                "mce",
                lambda y, p: float(MCE(bins=15).measure(p, y)),
                why=why,
                why_binary=why2,
            ),
        ]
    if status.get("relplot") and status["relplot"].ok:
        from relplot.metrics import binnedECE

        def rp(y, p):
            conf, correct = _confidence(y, p)
            return float(
                binnedECE(conf.astype(np.float64), correct.astype(np.float64), nbins=15)
            )

        out.append(
            Metric(
                "relplot",
                "relplot binnedECE (on confidence, correct)",
                "ece_confidence",
                rp,
                why="left-closed bins [j/15, (j+1)/15) by truncation "
                "(a confidence on an edge goes to the upper bin)",
            )
        )
    if status.get("uncertainty-calibration") and status["uncertainty-calibration"].ok:
        from calibration import utils as U

        def uc_ece(mode):
            def fn(y, p):
                return float(U.get_ece(p, y, num_bins=15, mode=mode))

            return fn

        def uc_debiased(y, p):
            return float(
                U.lower_bound_scaling_ce(
                    p,
                    y,
                    p=2,
                    debias=True,
                    num_bins=15,
                    binning_scheme=U.get_equal_prob_bins,
                    mode="top-label",
                )
            )

        why = "float32 drift: bin means taken in the input's float32"
        out += [
            Metric(
                "uncertainty-calibration",
                "uncertainty-calibration get_ece(top-label)",
                "ece_confidence",
                uc_ece("top-label"),
                why=why,
                max_n=100_000,
            ),
            Metric(
                "uncertainty-calibration",
                "uncertainty-calibration get_ece(marginal)",
                "ece_classwise",
                uc_ece("marginal"),
                why=why,
                max_n=100_000,
                max_k=100,
            ),
            Metric(
                "uncertainty-calibration",
                "uncertainty-calibration lower_bound_scaling_ce(p=2, debias)",
                "ece_debiased_l2",
                uc_debiased,
                why="float32 drift: bin means taken in the input's float32 "
                "(it also clamps a negative squared estimate at 0)",
                max_n=100_000,
            ),
        ]
    return out
