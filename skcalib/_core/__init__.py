"""The core layer: inputs, scores, weights, binning, per-bin totals and
solvers. It imports nothing from the rest of skcalib (see
``tests/test_layers.py``). Its subpackage ``accel`` holds the compiled
kernels (they import nothing of skcalib) and ``xp`` the array-API twins of
the numpy functions; the numpy modules here import neither, except where
they dispatch to a kernel through ``accel``."""
