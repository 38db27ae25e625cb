"""Helpers of the ONNX export tests: a session on the CPU, quiet logs."""

import pytest


@pytest.fixture(scope="session")
def run_onnx():
    """``run_onnx(model, X)``: the outputs of an ONNX model on ``X`` (its
    only input), as a dict keyed by output name."""
    ort = pytest.importorskip(
        "onnxruntime", reason="the onnx extra is not installed (pip install '.[onnx]')"
    )
    options = ort.SessionOptions()
    options.log_severity_level = 3  # no shape-merge warnings in the test log

    def run(model, X):
        session = ort.InferenceSession(
            model.SerializeToString(), options, providers=["CPUExecutionProvider"]
        )
        names = [o.name for o in session.get_outputs()]
        feed = {session.get_inputs()[0].name: X}
        return dict(zip(names, session.run(None, feed), strict=True))

    return run
