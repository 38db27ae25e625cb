"""Synthetic scores whose true calibration map is known."""

from numbers import Integral, Real

import numpy as np
from sklearn.utils import check_random_state

from skcalib._core.compat import Interval, validate_params
from skcalib._core.scores import softmax

__all__ = ["make_miscalibrated_scores"]


@validate_params(
    {
        "n_samples": [Interval(Integral, 1, None, closed="left")],
        "n_classes": [Interval(Integral, 2, None, closed="left")],
        "temperature": [Interval(Real, 0, None, closed="neither")],
        "class_sep": [Interval(Real, 0, None, closed="left")],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_miscalibrated_scores(
    n_samples=1000, n_classes=2, *, temperature=2.0, class_sep=2.0, random_state=None
):
    """Draw logits whose true calibration map is temperature scaling by ``temperature``.

    True logits ``z`` are drawn as ``class_sep * N(0, I_K)``; each label is drawn
    from ``softmax(z)``, so ``softmax(z)`` is perfectly calibrated. The returned
    scores are ``temperature * z``: a model with ``temperature > 1`` is
    over-confident, below 1 under-confident, and
    ``P(y = k | s) = softmax(s / temperature)_k`` exactly.

    Parameters
    ----------
    n_samples : int, default=1000
    n_classes : int, default=2
    temperature : float, default=2.0
        The temperature that calibrates the returned logits.
    class_sep : float, default=2.0
        Scale of the true logits (larger: more confident, more accurate).
    random_state : int, RandomState instance or None, default=None

    Returns
    -------
    logits : ndarray of shape (n_samples, n_classes)
        Miscalibrated logits.
    y : ndarray of shape (n_samples,)
        Labels in ``0 .. n_classes - 1``.
    true_proba : ndarray of shape (n_samples, n_classes)
        The true class probabilities ``softmax(logits / temperature)``.

    Examples
    --------
    >>> from skcalib import TemperatureCalibrator
    >>> from skcalib.datasets import make_miscalibrated_scores
    >>> logits, y, true_proba = make_miscalibrated_scores(
    ...     20000, 3, temperature=2.0, random_state=0)
    >>> round(TemperatureCalibrator().fit(logits, y).temperature_, 1)
    2.0
    """
    rng = check_random_state(random_state)
    z = class_sep * rng.standard_normal((n_samples, n_classes))
    true_proba = softmax(z)
    cum = np.cumsum(true_proba, axis=1)
    u = rng.uniform(size=(n_samples, 1))
    y = np.minimum((u > cum).sum(axis=1), n_classes - 1)
    return temperature * z, y, true_proba
