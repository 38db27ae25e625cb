"""Export fitted calibrators to run where the model runs.

:func:`to_torch` turns a fitted calibrator into a :class:`torch.nn.Module`
that computes its ``predict_proba`` (or log-probabilities) from the same raw
scores, to append to a network, ``torch.export`` or TorchScript.
:func:`to_onnx` writes it as an ONNX graph (the ``onnx`` extra:
``pip install 'skcalib[onnx]'``), and :func:`register_skl2onnx` registers
skl2onnx converters for wrapper-mode calibrators and pipelines ending in one.
Importing this module imports neither torch, onnx nor skl2onnx.
"""

from skcalib.export._onnx import to_onnx
from skcalib.export._skl2onnx import register_skl2onnx
from skcalib.export._torch import to_torch

__all__ = ["register_skl2onnx", "to_onnx", "to_torch"]
