"""Sample weights: validation, exact power-of-two rescaling, count checks."""

import numpy as np

from skcalib._core.compat import _check_sample_weight

__all__ = []  # private module


def _checked_weights(sample_weight, y_enc, *, rescale=True):
    """Validated float64 weights, divided by a power of two near their
    maximum if ``rescale`` (:func:`unit_weights`: an exact division, the
    largest weight becomes a value in ``[1, 2)``).

    Every result of a rescaling calibrator is then the same for weights
    ``w`` and ``c * w`` (bit for bit when ``c`` is a power of two, up to
    rounding otherwise), from ``c = 5e-324`` to weights of ``1e308``, whose
    sums would overflow.
    """
    sample_weight = _check_sample_weight(
        sample_weight, y_enc, dtype=np.float64, ensure_non_negative=True
    )
    top = sample_weight.max()
    if not top > 0:
        raise ValueError("All sample weights are zero; there is nothing to fit.")
    if not rescale:
        return sample_weight
    return unit_weights(sample_weight, top)[0]


def check_count_weights(sample_weight, name):
    """Raise ``ValueError`` when repetition-count weights cannot be added up.

    For the methods that read ``sample_weight`` as counts (their results
    depend on the total by design, so the weights are not rescaled): a
    total beyond the float64 range would turn every count into ``inf``.
    """
    if sample_weight is None:
        return
    with np.errstate(over="ignore"):
        total = float(np.sum(sample_weight))
    if not np.isfinite(total):
        raise ValueError(
            f"{name} reads sample_weight as repetition counts, and these sum "
            f"beyond the float64 range (largest weight "
            f"{float(np.max(sample_weight)):.3g}); divide them by a constant."
        )


def unit_exponent(top):
    """The exponent ``e`` of the power of two at or just below ``top``,
    ``2**e <= top < 2**(e + 1)`` (from ``e = -1074``, the smallest
    subnormal 5e-324, to ``e = 1023``); None when ``top`` is not positive
    and finite.

    The one rule by which skcalib rescales sample weights: dividing them by
    ``2**e`` (:func:`unit_weights`) is exact (no rounding, unless a weight
    more than ``2**1022`` times below the largest turns subnormal), the
    largest weight becomes a number in ``[1, 2)``, and a sum of ``n``
    rescaled weights stays below ``2 n``, whether the weights are subnormal
    or near 1.8e308. ``2.0**e`` itself is a float64 for every such ``e``.

    Examples
    --------
    >>> unit_exponent(1.0), unit_exponent(1.5), unit_exponent(0.75)
    (0, 0, -1)
    >>> unit_exponent(3e300), unit_exponent(5e-324), unit_exponent(0.0)
    (998, -1074, None)
    """
    top = float(top)
    if not (np.isfinite(top) and top > 0):
        return None
    return int(np.frexp(top)[1]) - 1


def unit_weights(sample_weight, top=None):
    """``sample_weight`` divided by the power of two ``2**e`` at or just below
    its maximum ``top`` (:func:`unit_exponent`; exact, the largest weight
    becomes a number in ``[1, 2)``, as in the metrics), and that divisor:
    ``(w, 2.0**e)``. ``top`` not positive (or not finite): returned as
    given, 1.0.

    Examples
    --------
    >>> import numpy as np
    >>> w, unit = unit_weights(np.array([0.0, 3e300, 1e300]))
    >>> unit == 2.0**998, float(w.max())
    (True, 1.1199163422038627)
    >>> bool(np.all(w * unit == [0.0, 3e300, 1e300]))
    True
    """
    e = unit_exponent(np.max(sample_weight) if top is None else top)
    if e is None:
        return sample_weight, 1.0
    return np.ldexp(sample_weight, -e), float(np.ldexp(1.0, e))
