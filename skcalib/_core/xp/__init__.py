"""Arrays of other array-API namespaces: torch, CuPy, array-api-strict, ...

scikit-learn's convention (its ``array_api_dispatch=True`` setting): inputs
from any array-API namespace stay in their namespace and on their device,
outputs and fitted array attributes come back in the namespace and on the
device of the input (``X`` for estimators, ``y_proba`` for metrics;
"everything follows X"). Without the setting nothing changes: such inputs
are converted to numpy as before.

This module is the one place that decides which namespace a call computes
in (:func:`namespace`) and moves arrays between namespaces
(:meth:`Namespace.to_numpy`, :meth:`Namespace.asarray`); the namespace
objects and the conversions are scikit-learn's (``get_namespace_and_device``
and its numpy conversion), imported through :mod:`skcalib._core.compat`.

Compute dtypes (:meth:`Namespace.compute_dtype`): float16 and bfloat16 are
computed in float32; float32 stays float32 with float64 accumulation of
sums where the device has float64; float64 stays float64 (float32 on a
device without float64, such as Apple's MPS).
"""

import dataclasses
import functools

import numpy as np
from sklearn import config_context, get_config

from skcalib._core.compat import (
    array_namespace_of,
    convert_to_numpy,
    estimator_with_converted_arrays,
    get_namespace_and_device,
    max_precision_float_dtype,
)

__all__ = ["move_estimator_to"]  # the public name: skcalib.move_estimator_to


@dataclasses.dataclass(frozen=True)
class Namespace:
    """The array namespace and device a call computes in."""

    xp: object
    device: object

    @property
    def name(self):
        """The namespace's module name (``"array_api_compat.torch"``, ...)."""
        return self.xp.__name__

    @property
    def has_float64(self):
        """Whether the device computes in float64."""
        return max_precision_float_dtype(self.xp, self.device) == self.xp.float64

    @property
    def accumulate_dtype(self):
        """The dtype sums are accumulated in: float64 where the device has it."""
        return self.xp.float64 if self.has_float64 else self.xp.float32

    def compute_dtype(self, dtype):
        """The float dtype an input of ``dtype`` is computed in: float32 for
        float32, float16 and bfloat16; float64 (where the device has it) for
        float64 and for integers and booleans, as numpy's path converts them."""
        xp = self.xp
        if xp.isdtype(dtype, "real floating") and dtype != xp.float64:
            return xp.float32
        return xp.float64 if self.has_float64 else xp.float32

    def asarray(self, array, dtype=None):
        """``array`` (numpy, scalar or of this namespace) in this namespace, on
        this device; float64 becomes float32 on a device without float64."""
        if isinstance(array, np.ndarray):
            if array.dtype.kind in "OUS":
                return array  # strings (class labels) stay numpy
            if array.dtype == np.float64 and not self.has_float64:
                array = array.astype(np.float32)
            array = np.ascontiguousarray(array)  # torch takes no negative strides
        return self.xp.asarray(array, dtype=dtype, device=self.device)

    def to_numpy(self, array):
        """:func:`to_numpy` of ``array``."""
        return to_numpy(array)


def to_numpy(array):
    """``array`` as a numpy array on the host (one transfer) when it is of
    another array-API library; anything else (numpy, lists, None) passes
    through. float16 and bfloat16 arrays come as float32."""
    if array is None or not is_foreign(array):
        return array
    xp = array_namespace_of(array)
    if "float16" in str(array.dtype):  # bfloat16 has no numpy dtype
        array = xp.astype(array, xp.float32)
    return convert_to_numpy(array, xp)


def is_foreign(array):
    """Whether ``array`` is an array of another array-API library than numpy
    (torch, CuPy, JAX, array-api-strict, ...), read from its type."""
    if isinstance(array, (np.ndarray, np.generic)):
        return False
    module = type(array).__module__.partition(".")[0]
    if module in ("torch", "cupy", "jax", "jaxlib", "dpnp"):
        return True
    return hasattr(array, "__array_namespace__") and module not in ("dask", "numpy")


def namespace(*arrays):
    """The :class:`Namespace` of the first array of ``arrays`` (None
    entries skipped), or None when the call computes with numpy as before.

    None unless ``array_api_dispatch`` is on and that first array is of
    another array-API library (:func:`is_foreign`): numpy arrays, lists and
    DataFrames take the numpy path, whatever the other arguments are.
    """
    if not get_config()["array_api_dispatch"]:
        return None
    first = next((a for a in arrays if a is not None), None)
    if first is None or not is_foreign(first):
        return None
    xp, _, device = get_namespace_and_device(first)
    return Namespace(xp, device)


def move_estimator_to(estimator, xp, device=None):
    """A copy of a fitted estimator with its array attributes moved to ``xp``.

    Use it to move an estimator fitted on GPU tensors to numpy before
    pickling it (``move_estimator_to(est, numpy)``), or back to a device.
    Without it, an estimator fitted in one namespace and called on another
    computes where the call's input is (numpy without
    ``array_api_dispatch``), moving its fitted arrays for that call only;
    moving them once saves that transfer on every call.
    Nested fitted estimators are converted as scikit-learn converts them
    (its ``_estimator_with_converted_arrays``); attributes holding strings
    (class labels) stay numpy.

    Parameters
    ----------
    estimator : estimator object
        A fitted estimator.
    xp : module
        The target namespace: ``numpy``, ``torch``, ``array_api_strict``...
    device : object, default=None
        The target device (``"cpu"``, ``"cuda:0"``...); None: the namespace's
        default device.

    Returns
    -------
    estimator : estimator object
        A copy with converted array attributes; ``estimator`` is unchanged.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib import TemperatureCalibrator, move_estimator_to
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 3, 200)
    >>> logits = 2.0 * (rng.normal(size=(200, 3)) + np.eye(3)[y])
    >>> ts = TemperatureCalibrator().fit(logits, y)
    >>> type(move_estimator_to(ts, np).classes_).__name__
    'ndarray'
    """

    def convert(array):
        host = to_numpy(array)
        if xp is np or host.dtype.kind in "OUS":
            return host
        return xp.asarray(host, device=device)

    return estimator_with_converted_arrays(estimator, convert)


def _convert_result(result, ns):
    """A metric's result with its numpy arrays moved to ``ns``."""
    if isinstance(result, np.ndarray):
        return ns.asarray(result)
    if isinstance(result, tuple) and not hasattr(result, "_fields"):
        return tuple(_convert_result(r, ns) for r in result)
    if dataclasses.is_dataclass(result) and not isinstance(result, type):
        changes = {
            f.name: _convert_result(getattr(result, f.name), ns)
            for f in dataclasses.fields(result)
            if isinstance(getattr(result, f.name), np.ndarray)
        }
        return dataclasses.replace(result, **changes) if changes else result
    return result


#: Names of the metrics computed on the host from array-API inputs (one
#: transfer of the inputs; filled by :func:`host_array_api`).
HOST_METRICS = []


def host_array_api(*array_args):
    """Let a numpy metric take array-API inputs: they are moved to the host
    (one transfer), the metric runs on numpy, and its array results come
    back in the namespace and on the device of the first of ``array_args``
    that is given (argument names, positional or keyword).

    For metrics whose work is inherently sequential or small next to the
    transfer; the others compute on the device
    (:mod:`skcalib.metrics._xp_metrics`).
    """

    def decorate(func):
        import inspect

        signature = inspect.signature(func)
        HOST_METRICS.append(func.__qualname__)

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            if not get_config()["array_api_dispatch"]:
                return func(*args, **kwargs)
            bound = signature.bind_partial(*args, **kwargs)
            given = [bound.arguments.get(name) for name in array_args]
            ns = namespace(*(a for a in given if a is not None))
            if ns is None:
                return func(*args, **kwargs)
            for name, value in bound.arguments.items():
                if is_foreign(value):
                    bound.arguments[name] = to_numpy(value)
            with config_context(array_api_dispatch=False):
                result = func(*bound.args, **bound.kwargs)
            return _convert_result(result, ns)

        return wrapper

    return decorate
