"""Shared helpers of the array-API tests: the namespaces at hand, and the
tolerances numpy and namespace results must agree within (by dtype).

Namespaces: array-api-strict (the standard, nothing more; CPU) and torch on
the CPU, in float64 and float32; torch on CUDA when a GPU is present (those
cases skip with the reason otherwise). All skip when scikit-learn cannot
dispatch (it needs SciPy >= 1.14 and SCIPY_ARRAY_API=1, set in conftest.py).
"""

import os

import numpy as np
import pytest
import scipy
from sklearn.utils.fixes import parse_version

#: |namespace - numpy| <= ATOL + RTOL * |numpy|, by the input dtype. float32
#: inputs are computed in float32 by both paths; the paths differ in the order
#: of operations (and reductions), hence the float32 tolerance.
TOLERANCE = {"float64": (1e-9, 1e-9), "float32": (2e-4, 2e-4)}

CASES = [
    ("array_api_strict", None, "float64"),
    ("array_api_strict", None, "float32"),
    ("torch", "cpu", "float64"),
    ("torch", "cpu", "float32"),
    ("torch", "cuda", "float32"),
]


def case_id(case):
    return "-".join(str(c) for c in case if c is not None)


def dispatch_reason():
    """Why array-API dispatch cannot run here, or None."""
    if parse_version(scipy.__version__) < parse_version("1.14"):
        return f"array_api_dispatch needs SciPy >= 1.14 (found {scipy.__version__})"
    if os.environ.get("SCIPY_ARRAY_API") != "1":
        return "SCIPY_ARRAY_API=1 must be set before SciPy is imported"
    try:
        from sklearn.externals import array_api_compat  # noqa: F401
    except ImportError:
        return "this scikit-learn vendors no array-api-compat (needs >= 1.7)"
    return None


#: The namespaces of the ``array-api`` test extra (pyproject.toml): not in the
#: ``test`` extra, since pip's default torch is a CUDA build of several GB.
ARRAY_API_EXTRA = ("torch", "array_api_strict")


def import_namespace(name):
    """The module ``name``, or a skip that says how to install it."""
    how = ' (pip install -e ".[array-api]")' if name in ARRAY_API_EXTRA else ""
    return pytest.importorskip(name, reason=f"{name} is not installed{how}")


def namespace_for(case):
    """``(module, device, dtype)`` of a case, skipping when it cannot run."""
    name, device, dtype = case
    reason = dispatch_reason()
    if reason:
        pytest.skip(reason)
    xp = import_namespace(name)
    if name == "torch" and device == "cuda" and not xp.cuda.is_available():
        pytest.skip("no CUDA GPU on this machine (torch.cuda.is_available() is False)")
    if name == "array_api_strict":
        device = xp.Device("CPU_DEVICE")
    return xp, device, getattr(xp, dtype)


def to_xp(array, xp, device, dtype=None):
    """A numpy array in ``xp`` (float arrays in ``dtype``)."""
    array = np.asarray(array)
    if array.dtype.kind == "f" and dtype is not None:
        return xp.asarray(array, device=device, dtype=dtype)
    return xp.asarray(array, device=device)


def to_np(array):
    from skcalib._core.xp import to_numpy

    return np.asarray(to_numpy(array))


def assert_close(actual, expected, dtype_name, what=""):
    atol, rtol = TOLERANCE[dtype_name]
    np.testing.assert_allclose(
        to_np(actual), np.asarray(expected), atol=atol, rtol=rtol, err_msg=what
    )


def same_namespace(array, xp):
    """Whether ``array`` is an array of ``xp`` (torch: a Tensor)."""
    module = type(array).__module__.partition(".")[0]
    return module == xp.__name__.partition(".")[0]


def assert_result_follows(actual, expected, xp, dtype_name, what=""):
    """The rule for a metric's result from namespace inputs, against its
    result from the same numpy inputs: numeric arrays are arrays of ``xp``
    within :data:`TOLERANCE` of numpy's; scalars are Python floats within
    it; result dataclasses and tuples follow the rule field by field.
    Other scalars (strings, ``None``, integers such as ``class_index``) and
    label arrays (object, string: labels stay host values) are not
    compared."""
    import dataclasses

    if isinstance(expected, np.ndarray):
        if expected.dtype.kind in "OUS":
            return
        assert same_namespace(actual, xp), f"{what}: {type(actual)}"
        assert_close(actual, expected, dtype_name, what)
    elif isinstance(expected, (float, np.floating)):
        assert isinstance(actual, float), f"{what}: {type(actual)}"
        assert_close(actual, expected, dtype_name, what)
    elif dataclasses.is_dataclass(expected):
        for field in dataclasses.fields(expected):
            assert_result_follows(
                getattr(actual, field.name),
                getattr(expected, field.name),
                xp,
                dtype_name,
                f"{what}.{field.name}",
            )
    elif isinstance(expected, tuple):
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            assert_result_follows(a, e, xp, dtype_name, f"{what}[{i}]")
