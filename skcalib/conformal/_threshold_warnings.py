"""The warnings of a split-conformal threshold that is infinite: too few
calibration samples (weighted) for the level, marginally or in a class.
Each points at the user's call (:func:`~skcalib._core.warn.user_stacklevel`),
whichever path (``fit``, ``fit_chunks``, an engine, ``predict_set``) led
there."""

import warnings

import numpy as np

from skcalib._core.warn import user_stacklevel
from skcalib.conformal._quantile import _min_samples

__all__ = []  # private module


def warn_too_few(alpha, total_weight, fitted=True):
    """Warn that ``alpha`` has no finite threshold (marginal sets)."""
    got = f", got {total_weight:g}" if fitted else ""
    where = "every prediction set" if fitted else "every prediction set at that level"
    warnings.warn(
        f"alpha={alpha} needs at least {_min_samples(alpha)} calibration samples "
        f"(weighted){got}: the threshold is infinite and {where} holds every "
        "class.",
        UserWarning,
        stacklevel=user_stacklevel(),
    )


def warn_full_classes(classes, thresholds, alpha):
    """Warn for the classes without a finite threshold at ``alpha``."""
    full = np.flatnonzero(np.isinf(thresholds))
    if full.size:
        warnings.warn(
            f"Classes {classes[full].tolist()} have fewer than "
            f"{_min_samples(alpha)} calibration samples (weighted) at "
            f"alpha={alpha}: their threshold is infinite and they are in "
            "every prediction set.",
            UserWarning,
            stacklevel=user_stacklevel(),
        )


def warn_other_levels(classes, thresholds, alphas, fitted_alpha):
    """Warn for the levels other than ``fitted_alpha`` without a finite
    threshold (``classes`` None: marginal thresholds ``(m,)``, else
    ``(m, K)`` per class): their sets hold every class (or every such
    class)."""
    for a, alpha in enumerate(alphas):
        if alpha == fitted_alpha or not np.isinf(thresholds[a]).any():
            continue
        if classes is not None:
            warn_full_classes(classes, thresholds[a], alpha)
        else:
            warn_too_few(alpha, None, fitted=False)
