"""Sample weights on an array-API namespace: the exact power-of-two
rescaling of :func:`skcalib._core.weights.unit_weights`, by its rule
(:func:`~skcalib._core.weights.unit_exponent`, not copied)."""

from skcalib._core.weights import unit_exponent
from skcalib._core.xp import to_numpy

__all__ = []  # private module


def xp_times_power_of_two(x, e):
    """``x * 2**e`` for an integer ``e``, in two exact power-of-two factors
    (the namespace may have no ``ldexp``, and ``2.0**e`` alone is not a
    float64 beyond ``e = +-1023``: weights of 5e-324 need ``2**1074``)."""
    half = e // 2
    return (x * float(2.0**half)) * float(2.0 ** (e - half))


def xp_unit_weights(ns, sample_weight, top=None):
    """:func:`~skcalib._core.weights.unit_weights` of weights on the device:
    ``(w, unit)``, the weights divided by the power of two ``unit`` at or
    just below their maximum ``top`` (read from the device when not given;
    one scalar crosses to the host). ``top`` not positive (or not finite):
    returned as given, 1.0."""
    if top is None:
        top = float(to_numpy(ns.xp.max(sample_weight)))
    e = unit_exponent(top)
    if e is None:
        return sample_weight, 1.0
    return xp_times_power_of_two(sample_weight, -e), float(2.0**e)
