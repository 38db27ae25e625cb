"""The core layer: inputs, scores, weights, binning, per-bin totals and
solvers. It imports nothing from the rest of skcalib (see
``tests/test_layers.py``)."""
