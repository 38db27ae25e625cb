"""Export fitted calibrators to run where the model runs.

:func:`to_torch` turns a fitted calibrator into a :class:`torch.nn.Module`
that computes its ``predict_proba`` (or log-probabilities) from the same raw
scores, to append to a network, ``torch.export`` or TorchScript. torch is
imported only when a module is built, never on ``import skcalib``.
"""

from skcalib.export._torch import to_torch

__all__ = ["to_torch"]
