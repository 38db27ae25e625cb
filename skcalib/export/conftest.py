"""The doctests of :mod:`skcalib.export` need the ``onnx`` extra; without it
they are skipped, saying so (``pytest --doctest-modules`` collects them in
every checkout)."""

import importlib.util

import pytest

#: The packages the examples import.
_EXTRA = ("onnx", "onnxruntime", "skl2onnx")


def _missing():
    missing = []
    for name in _EXTRA:
        try:
            found = importlib.util.find_spec(name) is not None
        except ValueError:  # in sys.modules as None: blocked
            found = False
        if not found:
            missing.append(name)
    return missing


def pytest_runtest_setup(item):
    if isinstance(item, pytest.DoctestItem) and (missing := _missing()):
        pytest.skip(
            f"the onnx extra is not installed ({', '.join(missing)} missing): "
            "pip install -e '.[onnx]'"
        )
