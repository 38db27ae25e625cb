"""The doctests of :mod:`skcalib.export` need the ``onnx`` extra; without it
they are skipped, saying so (``pytest --doctest-modules`` collects them in
every checkout)."""

import importlib.util

import pytest

#: The packages the examples import.
_EXTRA = ("onnx", "onnxruntime", "skl2onnx")


def pytest_runtest_setup(item):
    missing = [name for name in _EXTRA if importlib.util.find_spec(name) is None]
    if missing and isinstance(item, pytest.DoctestItem):
        pytest.skip(
            f"the onnx extra is not installed ({', '.join(missing)} missing): "
            "pip install -e '.[onnx]'"
        )
