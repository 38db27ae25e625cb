"""Backends: where the data live (numpy chunks, Dask arrays). Imports only
:mod:`skcalib._core`."""
