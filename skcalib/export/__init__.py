"""Fitted calibrators as ONNX graphs (the ``onnx`` extra:
``pip install 'skcalib[onnx]'``); importing this module imports neither
onnx nor skl2onnx."""

from skcalib.export._onnx import to_onnx
from skcalib.export._skl2onnx import register_skl2onnx

__all__ = ["register_skl2onnx", "to_onnx"]
