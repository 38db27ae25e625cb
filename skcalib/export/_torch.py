"""A fitted calibrator as a :class:`torch.nn.Module` (torch imported on use).

The module reproduces, step by step, how ``predict_proba`` turns raw scores
into the map's input (:class:`~skcalib._core.scores.Scores`): 2-D logits as
given, ``log(max(p, 1e-12))`` for probabilities (rows that miss 1 by more
than ``sqrt(eps)`` divided by their sum first, as
:func:`~skcalib._core.scores.resolve_score_type` does), ``(0, s)`` for a 1-D
binary logit ``s`` and ``log(max((1 - p, p), 1e-12))`` for a 1-D binary
probability ``p``; then the map, then a softmax (or a log-softmax). Every
step is in the module's dtype (row sums included): a float32 module holds
no float64, which some devices lack. torch is imported inside the
functions that build the module; the class is built once per process, and
is reachable as ``skcalib.export._torch.CalibratorModule`` so that a
pickled module loads.
"""

import functools
import math
import sys

import numpy as np
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from skcalib._base import BaseCalibrator
from skcalib._core.compat import StrOptions, validate_params
from skcalib._core.scores import PROBA_FLOOR, sum_tolerance
from skcalib._core.xp import to_numpy
from skcalib.calibration import (
    BiasCorrectedTemperatureCalibrator,
    DirichletCalibrator,
    DirichletCalibratorCV,
    MatrixScalingCalibrator,
    MatrixScalingCalibratorCV,
    PlattCalibrator,
    TemperatureCalibrator,
    VectorScalingCalibrator,
)
from skcalib.calibration._one_vs_rest import OUTPUT_EPS

__all__ = ["to_torch"]

#: The exported classes (exactly these: a subclass may change the map) and,
#: for each, the kind of map and its input: ``"logits"`` (the scores as
#: given, ``log p`` for probabilities) or ``"log_proba"`` (their
#: log-softmax).
EXPORTABLE = {
    TemperatureCalibrator: ("temperature", "logits"),
    BiasCorrectedTemperatureCalibrator: ("bias_temperature", "logits"),
    VectorScalingCalibrator: ("vector", "logits"),
    MatrixScalingCalibrator: ("matrix", "logits"),
    MatrixScalingCalibratorCV: ("matrix", "logits"),
    DirichletCalibrator: ("matrix", "log_proba"),
    DirichletCalibratorCV: ("matrix", "log_proba"),
    PlattCalibrator: ("platt", "logits"),
}

_DTYPES = ("float32", "float64")


def _names(classes):
    *others, last = sorted(c.__name__ for c in classes)
    return f"{', '.join(others)} and {last}"


def _check_exportable(calibrator):
    """Raise unless ``calibrator`` is a fitted raw-score calibrator whose map
    the module computes."""
    name = type(calibrator).__name__
    if type(calibrator) not in EXPORTABLE:
        what = "calibrator" if isinstance(calibrator, BaseCalibrator) else "object"
        raise TypeError(
            f"to_torch cannot export {name}: its map is not one this module "
            f"computes (it exports {_names(EXPORTABLE)}, exactly those classes). "
            f"For this {what}, see skcalib.export.to_onnx, or compute "
            "predict_proba on the host."
        )
    if calibrator.estimator is not None:
        raise TypeError(_wrapper_message(calibrator))
    try:
        check_is_fitted(calibrator)
    except NotFittedError as error:
        raise NotFittedError(
            f"This {name} is not fitted yet: fit it on the raw scores (logits or "
            "probabilities) before calling to_torch."
        ) from error
    if type(calibrator) is PlattCalibrator and calibrator.multi_class != "ovr":
        raise TypeError(
            f"to_torch exports PlattCalibrator with multi_class='ovr' only, got "
            f"{calibrator.multi_class!r}: the top-label map (capped shares of "
            "the other classes) is not exported; see skcalib.export.to_onnx."
        )


def _wrapper_message(calibrator):
    name = type(calibrator).__name__
    estimator = calibrator.estimator
    torch = sys.modules.get("torch")  # a torch network is loaded with torch
    network = torch is not None and (
        isinstance(estimator, torch.nn.Module)
        or isinstance(getattr(estimator, "module_", None), torch.nn.Module)
    )
    advice = (
        "export the network itself (its logits) and append the module: "
        "torch.nn.Sequential(net, to_torch(calibrator)), with the calibrator "
        f"fitted on the network's logits ({name}().fit(logits, y))"
        if network
        else f"fit {name}() on the estimator's scores (its "
        "decision_function or predict_proba of the calibration features) and "
        "export that map, or see skcalib.export.to_onnx"
    )
    return (
        f"to_torch exports raw-score calibrators only; this {name} wraps "
        f"{type(estimator).__name__} (estimator=...), whose scores the module "
        f"cannot compute: {advice}."
    )


def _map_parameters(calibrator):
    """``(kind, features, coef, intercept)`` of a checked calibrator, the
    arrays as float64 numpy (``coef``: the temperature, ``1 / T``, the
    scales, the matrix ``W`` or the Platt slopes, by kind)."""
    kind, features = EXPORTABLE[type(calibrator)]
    n_classes = len(calibrator.classes_)
    zeros = np.zeros(n_classes)
    if kind == "temperature":
        return kind, features, np.float64(calibrator.temperature_), zeros

    def array(name):
        return np.asarray(to_numpy(getattr(calibrator, name)), dtype=np.float64)

    if kind == "bias_temperature":
        with np.errstate(divide="ignore"):  # T = inf: every row the priors
            inverse = 1.0 / np.float64(calibrator.temperature_)
        return kind, features, inverse, array("intercept_")
    return kind, features, array("coef_"), array("intercept_")


def _torch_dtype(torch, dtype):
    name = dtype if isinstance(dtype, str) else str(dtype).removeprefix("torch.")
    if name not in _DTYPES:
        raise ValueError(
            f"dtype must be torch.float32 or torch.float64 (or 'float32', "
            f"'float64'), got {dtype!r}."
        )
    return getattr(torch, name)


@functools.cache
def _scores_class():
    """The base module: raw scores to the map's input (as ``Scores``)."""
    import torch

    class _ScoresToLogits(torch.nn.Module):
        def _logits(self, scores: torch.Tensor) -> torch.Tensor:
            x = scores.to(self.coef.dtype)
            if x.dim() == 2 and x.size(1) == 1:
                x = x[:, 0]
            if x.dim() == 1:
                if self.score_type == "logit":  # the logits (0, s)
                    return torch.stack((torch.zeros_like(x), x), dim=1)
                x = torch.stack((1.0 - x, x), dim=1)
            elif self.score_type == "probability":
                # rows off by more than sqrt(eps) are divided by their sum
                total = x.sum(dim=1, keepdim=True)
                x = torch.where((total - 1.0).abs() > self.tolerance, x / total, x)
            if self.score_type == "logit":
                return x
            return torch.log(torch.clamp(x, min=self.floor))

        def _log_odds(self, log_proba: torch.Tensor) -> torch.Tensor:
            # log p_k - log(1 - p_k), with 1 - p of the top class the
            # logsumexp of the others (as skcalib._core.scores.log_odds)
            top = torch.argmax(log_proba, dim=1, keepdim=True)
            columns = torch.arange(log_proba.size(1), device=log_proba.device)
            is_top = columns[None, :] == top
            others = torch.where(
                is_top, torch.full_like(log_proba, -math.inf), log_proba
            )
            rest_top = torch.logsumexp(others, dim=1, keepdim=True)
            rest = torch.log1p(-torch.exp(log_proba))
            return log_proba - torch.where(is_top, rest_top, rest)

    return _ScoresToLogits


@functools.cache
def _module_class():
    import torch

    class CalibratorModule(_scores_class()):
        """A fitted skcalib calibrator's map; see :func:`skcalib.export.to_torch`."""

        def __init__(
            self,
            map_parameters,
            *,
            n_classes,
            score_type,
            log_output,
            dtype,
            trainable=False,
            name="",
        ):
            super().__init__()
            self.kind, self.features, coef, intercept = map_parameters
            self.n_classes = int(n_classes)
            self.score_type = score_type
            self.log_output = bool(log_output)
            self.calibrator = name
            self.floor = float(PROBA_FLOOR)
            self.tolerance = sum_tolerance(str(dtype).removeprefix("torch."))
            self.eps = float(OUTPUT_EPS)
            self.log_eps = math.log(OUTPUT_EPS)
            self.log_one_minus_eps = math.log1p(-OUTPUT_EPS)
            for key, value in (("coef", coef), ("intercept", intercept)):
                tensor = torch.as_tensor(np.asarray(value), dtype=dtype)
                if trainable:
                    setattr(self, key, torch.nn.Parameter(tensor))
                else:
                    self.register_buffer(key, tensor)
            self.eval()

        def forward(self, scores: torch.Tensor) -> torch.Tensor:
            x = self._logits(scores)
            if self.kind == "platt":
                return self._platt(x)
            if self.features == "log_proba":
                x = torch.log_softmax(x, dim=1)
            if self.kind == "temperature":
                a = x / self.coef
            elif self.kind == "bias_temperature":
                # centred first: ties and large scores keep the biases exact
                top = torch.amax(x, dim=1, keepdim=True)
                a = (x - top) * self.coef + self.intercept
            elif self.kind == "vector":
                a = x * self.coef + self.intercept
            else:
                a = torch.matmul(x, self.coef.t()) + self.intercept
            if self.log_output:
                return torch.log_softmax(a, dim=1)
            return torch.softmax(a, dim=1)

        def _platt(self, x: torch.Tensor) -> torch.Tensor:
            if self.n_classes == 2:  # the log-odds of the positive class
                t = (x[:, 1] - x[:, 0])[:, None] * self.coef + self.intercept
                t = torch.cat((-t, t), dim=1)
                if self.log_output:
                    log_p = torch.nn.functional.logsigmoid(t)
                    return torch.clamp(log_p, self.log_eps, self.log_one_minus_eps)
                return torch.clamp(torch.sigmoid(t), self.eps, 1.0 - self.eps)
            t = self._log_odds(torch.log_softmax(x, dim=1))
            p = torch.sigmoid(t * self.coef + self.intercept)
            p = torch.clamp(p, self.eps, 1.0 - self.eps)
            total = p.sum(dim=1, keepdim=True)
            if self.log_output:
                return torch.log(p) - torch.log(total)
            return p / total

        def extra_repr(self):
            return (
                f"{self.calibrator}: {self.kind} on {self.features} of "
                f"{self.score_type} scores, {self.n_classes} classes, output "
                f"{'log_proba' if self.log_output else 'proba'}"
            )

    CalibratorModule.__qualname__ = "CalibratorModule"
    return CalibratorModule


def __getattr__(name):
    # pickle finds the class here (built, with torch, on first use)
    if name == "CalibratorModule":
        return _module_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@validate_params(
    {
        "calibrator": "no_validation",
        "output": [StrOptions({"proba", "log_proba"})],
        "dtype": "no_validation",
        "trainable": ["boolean"],
    },
    prefer_skip_nested_validation=True,
)
def to_torch(calibrator, *, output="proba", dtype="float32", trainable=False):
    """Return a fitted calibrator's map as a :class:`torch.nn.Module`.

    The module takes the raw scores that the calibrator's ``predict_proba``
    takes (what its ``score_type_`` says: logits, decision values or
    probabilities; one column per class in the order of ``classes_``, or,
    for two classes, a 1-D tensor or one column with the score of the
    positive class) and returns the calibrated probabilities, shape
    ``(n, n_classes)``, or their logarithm. It turns the scores into the
    map's input exactly as ``predict_proba`` does (``log(max(p, 1e-12))``
    for probabilities, rows off by more than ``sqrt(eps)`` of the module's
    dtype renormalised; the log-softmax of the scores for Dirichlet
    calibration; ``(0, s)`` for a 1-D binary logit ``s``), then applies the
    fitted map in the module's dtype. Append it to a network whose output
    the calibrator was fitted on: ``torch.nn.Sequential(net, module)``.

    Exported: :class:`~skcalib.TemperatureCalibrator`,
    :class:`~skcalib.BiasCorrectedTemperatureCalibrator`,
    :class:`~skcalib.VectorScalingCalibrator`,
    :class:`~skcalib.MatrixScalingCalibrator`,
    :class:`~skcalib.MatrixScalingCalibratorCV`,
    :class:`~skcalib.DirichletCalibrator`,
    :class:`~skcalib.DirichletCalibratorCV` (the refit map on all the data)
    and :class:`~skcalib.PlattCalibrator` (binary, and one-vs-rest then
    renormalised), exactly these classes, fitted in raw-score mode.

    Parameters
    ----------
    calibrator : calibrator
        A fitted calibrator of the classes above, with ``estimator=None``.
    output : {"proba", "log_proba"}, default="proba"
        ``"proba"``: ``predict_proba``; ``"log_proba"``: its logarithm,
        computed as a log-softmax of the calibrated logits (Platt: a
        log-sigmoid), finite and accurate where the probabilities
        underflow (logits of +-1e4).
    dtype : torch.float32, torch.float64, "float32" or "float64", \
            default="float32"
        The dtype of the module's buffers, of its computation and of its
        output; inputs of another dtype are cast to it.
    trainable : bool, default=False
        ``False``: the map's arrays are buffers (``coef``, ``intercept``),
        not parameters, so an optimiser of the network leaves them alone.
        ``True``: they are :class:`torch.nn.Parameter` (to fine-tune).

    Returns
    -------
    module : torch.nn.Module
        In eval mode. Its ``coef`` holds the temperature ``T`` (temperature
        scaling; the logits are divided by it), ``1 / T`` (bias-corrected
        temperature scaling), the per-class scales (vector scaling), the
        matrix ``W`` (matrix scaling, Dirichlet) or the Platt slopes;
        ``intercept`` the biases (zeros for temperature scaling).

    Raises
    ------
    TypeError
        For a calibrator of another class (its map is not one of these;
        see ``skcalib.export.to_onnx``), a ``PlattCalibrator`` with
        ``multi_class="top_label"``, or one in wrapper mode
        (``estimator=...``: the module cannot compute the estimator's
        scores; for a torch network, export the network and append the
        module).
    sklearn.exceptions.NotFittedError
        For an unfitted calibrator.

    See Also
    --------
    torch.export.export : the module (or ``Sequential(net, module)``) as an
        exported program; the batch dimension may be dynamic.
    torch.jit.script : TorchScript, for runtimes that need it; the module
        scripts as it is (torch 2.13 warns that TorchScript is deprecated).

    Notes
    -----
    Measured against ``predict_proba`` on the same inputs (CIFAR-10, KITTI
    and airline predictions, logits of +-1e4 with ties;
    ``tests/export/test_torch.py``): probabilities agree within 1e-6 in
    float64 modules (on float64 inputs) and within 1e-5 in float32 modules
    (on float32 inputs); ``output="log_proba"`` agrees with
    ``log(predict_proba)`` wherever that probability is a normal float
    (subnormal probabilities keep few significant bits; the log-softmax is
    the accurate one there).

    The module does not validate its input as ``predict_proba`` does: NaN,
    probabilities outside ``[0, 1]``, rows that miss 1 by more than the
    rounding tolerance and scores of another kind than ``score_type_`` are
    not refused. Bias-corrected temperature scaling subtracts each row's
    maximum before dividing (``predict_proba`` computes in float64; the
    shift keeps a float32 module as accurate). Platt scaling's outputs are
    kept in ``[1e-12, 1 - 1e-12]``, as ``predict_proba`` keeps them.

    Examples
    --------
    >>> import pytest
    >>> torch = pytest.importorskip("torch")  # the example needs torch
    >>> import numpy as np
    >>> from skcalib import TemperatureCalibrator
    >>> from skcalib.export import to_torch
    >>> _ = torch.manual_seed(0)
    >>> net = torch.nn.Linear(4, 3)  # a network that returns logits
    >>> X = torch.randn(500, 4)
    >>> with torch.no_grad():
    ...     _ = net.weight.mul_(5.0)  # over-confident
    ...     logits = net(X)
    >>> rng = np.random.default_rng(0)
    >>> right = rng.uniform(size=500) < 0.7
    >>> y = np.where(right, logits.argmax(1).numpy(), rng.integers(0, 3, 500))
    >>> ts = TemperatureCalibrator().fit(logits.numpy(), y)
    >>> calibrated = torch.nn.Sequential(net, to_torch(ts))
    >>> with torch.no_grad():
    ...     proba = calibrated(X)
    >>> bool(np.abs(proba.numpy() - ts.predict_proba(logits.numpy())).max() < 1e-5)
    True
    >>> round(ts.temperature_, 1)  # above 1: the network was over-confident
    1.9
    >>> program = torch.export.export(calibrated, (X,))  # to save and deploy
    >>> bool(torch.allclose(program.module()(X), proba, atol=1e-6))
    True
    """
    _check_exportable(calibrator)
    import torch

    torch_dtype = _torch_dtype(torch, dtype)
    module = _module_class()(
        _map_parameters(calibrator),
        n_classes=len(calibrator.classes_),
        score_type=calibrator.score_type_,
        log_output=output == "log_proba",
        dtype=torch_dtype,
        trainable=trainable,
        name=type(calibrator).__name__,
    )
    return module
