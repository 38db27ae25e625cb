"""Cross-validation folds shared by the meta-estimators that fit a model per
fold (:class:`~skcalib.CalibratedClassifier`,
:class:`~skcalib.CrossConformalClassifier`): reading one part of a split,
and fitting a clone of the model on the rows of a training part."""

import numpy as np
from sklearn.base import clone

from skcalib._core.compat import _check_method_params, _safe_indexing

__all__ = ["fit_on_rows", "split_part"]


def split_part(part, n_samples, what):
    """The sample indices of one part of a ``(train, test)`` split.

    A boolean mask of shape ``(n_samples,)`` or a 1-D array of integer
    indices in ``[0, n_samples - 1]``; anything else raises a ``ValueError``
    that starts with ``what`` (e.g. "The training part of split 2").
    """
    part = np.asarray(part)
    if part.dtype == bool:
        if part.shape != (n_samples,):
            raise ValueError(
                f"{what} is a boolean mask of shape {part.shape}, not ({n_samples},)."
            )
        return np.flatnonzero(part)
    if part.ndim != 1 or (part.size and part.dtype.kind not in "iu"):
        raise ValueError(f"{what} must be a 1-D array of sample indices; got {part!r}.")
    part = part.astype(np.intp, copy=False)
    if part.size and (part.min() < 0 or part.max() >= n_samples):
        raise ValueError(
            f"{what} has indices outside [0, {n_samples - 1}]: "
            f"{part[(part < 0) | (part >= n_samples)][:5].tolist()}."
        )
    return part


def fit_on_rows(estimator, X, y, rows, fit_params):
    """A clone of ``estimator`` fitted on ``X[rows]``, ``y[rows]``; the
    per-sample entries of ``fit_params`` are indexed alike."""
    params = _check_method_params(X, params=fit_params, indices=rows)
    return clone(estimator).fit(
        _safe_indexing(X, rows), _safe_indexing(y, rows), **params
    )
