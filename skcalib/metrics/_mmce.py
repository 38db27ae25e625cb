"""The maximum mean calibration error (MMCE) of Kumar, Sarawagi & Jain (2018).

A kernel measure of the calibration of the confidence: the RKHS norm of the
mean of ``(c - r) k(r, .)``, with ``r`` the confidence (the largest
probability) and ``c`` the correctness of the arg-max prediction. The
double sum over pairs of rows is computed in ``O(n log n)`` time and
``O(n)`` memory: on the real line the Laplacian kernel factorises once the
rows are sorted by confidence.
"""

from numbers import Real

import numpy as np

from skcalib._core.compat import Interval, validate_params
from skcalib._core.inputs import COMMON_CONSTRAINTS, check_metric_inputs
from skcalib._core.xp import host_array_api
from skcalib.metrics._selective_core import top1

__all__ = ["maximum_mean_calibration_error", "mmce"]

#: Largest spread of ``r / bandwidth`` within one block of the sorted rows:
#: ``exp(+-SPAN)`` stays far from overflow and underflow in float64.
_SPAN = 50.0


def laplacian_pair_sum(r, d, bandwidth):
    """``sum_i sum_j d_i d_j exp(-|r_i - r_j| / bandwidth)`` over all pairs
    (``i = j`` included), in ``O(n log n)`` without an ``n x n`` array.

    Sorted by ``r``, a pair ``j < i`` has ``exp(-(u_i - u_j)) =
    exp(-(u_i - a)) exp(u_j - a)`` (``u = r / bandwidth``, ``a`` any
    reference), so the sum over ``j < i`` is a cumulative sum. The sorted
    rows are cut into blocks of spread at most :data:`_SPAN` in ``u``, each
    with its own reference ``a`` (its first value), so no factor overflows;
    what the earlier blocks contribute is carried from block to block (one
    step per block, not per row).
    """
    order = np.argsort(r, kind="stable")
    u = r[order] / bandwidth
    d = d[order]
    total = float(d @ d)
    block = np.floor((u - u[0]) / _SPAN)
    starts = np.flatnonzero(np.r_[True, block[1:] != block[:-1]])
    stops = np.r_[starts[1:], u.size]
    carry, carry_ref = 0.0, u[0]  # sum_j d_j exp(-(carry_ref - u_j)), earlier blocks
    for start, stop in zip(starts, stops, strict=True):
        ub, db = u[start:stop], d[start:stop]
        ref = ub[0]
        up = db * np.exp(ub - ref)
        down = db * np.exp(ref - ub)
        before = np.concatenate(([0.0], np.cumsum(up[:-1])))  # j < i, this block
        carry *= np.exp(carry_ref - ref)
        total += 2.0 * (float(down @ before) + carry * float(down.sum()))
        carry, carry_ref = carry + float(up.sum()), ref
    return total


@host_array_api("y_proba")
@validate_params(
    {
        **COMMON_CONSTRAINTS,
        "bandwidth": [Interval(Real, 0, None, closed="neither")],
        "squared": ["boolean"],
    },
    prefer_skip_nested_validation=True,
)
def maximum_mean_calibration_error(
    y_true, y_proba, *, bandwidth=0.4, squared=False, sample_weight=None, labels=None
):
    """Compute the maximum mean calibration error (MMCE) of the confidence.

    A binning-free measure of top-1 (confidence) calibration: 0 when every
    prediction's correctness equals its confidence on average around every
    confidence level, larger otherwise. ``mmce`` is the same function.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True class labels (integers or strings).
    y_proba : array-like of shape (n_samples,) or (n_samples, n_classes)
        Predicted probabilities. 1-D: probability of the positive class (the
        larger label, or ``labels[1]``); the confidence is then
        ``max(p, 1 - p)`` and ``p > 0.5`` predicts ``labels[1]``. 2-D: one
        column per class in the order of ``labels``; rows must sum to 1.
    bandwidth : float > 0, default=0.4
        The width :math:`\\nu` of the Laplacian kernel on the confidences,
        :math:`k(r, r') = \\exp(-|r - r'| / \\nu)`; 0.4 is the paper's (and
        netcal's) value.
    squared : bool, default=False
        Return :math:`\\mathrm{MMCE}^2` (the double sum itself, the form the
        paper trains with) instead of its square root.
    sample_weight : array-like of shape (n_samples,), default=None
        Sample weights; an integer weight equals repeated rows.
    labels : array-like of shape (n_classes,), default=None
        Class labels of the columns of ``y_proba``; default: the sorted labels
        of ``y_true``, which must then name every column (otherwise a
        ``ValueError`` asks for ``labels=``; the columns are never guessed).

    Returns
    -------
    mmce : float
        The MMCE, at least 0, in probability units (squared with
        ``squared=True``).

    See Also
    --------
    expected_calibration_error : The binned confidence error.
    kernel_calibration_error : A kernel error of the whole probability vector.

    Notes
    -----
    With the confidence :math:`r_i = \\max_k p_{ik}`, the correctness
    :math:`c_i = 1[\\arg\\max_k p_{ik} = y_i]` and weights :math:`w_i`
    (all 1 by default),

    .. math::

        \\mathrm{MMCE}^2 = \\frac{1}{(\\sum_i w_i)^2} \\sum_{i, j}
        w_i w_j (c_i - r_i)(c_j - r_j)\\, e^{-|r_i - r_j| / \\nu},

    the squared RKHS norm of the weighted mean of
    :math:`(c_i - r_i) k(r_i, \\cdot)` (Kumar et al. [1]_, eq. 2, there
    unweighted). The sum runs over all pairs, :math:`i = j` included (a
    V-statistic: biased upwards, never negative, and an integer weight is
    a repeated row). netcal's ``MMCE().measure`` computes the same square
    root on 2-D probabilities; on 1-D input it takes ``p`` itself as the
    confidence even when ``p < 0.5`` predicts the other class, where this
    function uses ``max(p, 1 - p)``. The paper's weighted variant
    :math:`\\mathrm{MMCE}_w`, which normalises the correct and the wrong
    predictions apart, is a training loss and not computed here.

    Computation: sorted by confidence, :math:`e^{-(u_i - u_j)} =
    e^{-(u_i - a)} e^{u_j - a}` for :math:`u = r / \\nu`, so the pairs
    :math:`j < i` are a cumulative sum: :math:`O(n \\log n)` time (the sort)
    and :math:`O(n)` memory, never an :math:`n \\times n` matrix (see
    :func:`laplacian_pair_sum` for the blocks that keep the exponentials
    finite for any bandwidth).

    References
    ----------
    .. [1] A. Kumar, S. Sarawagi and U. Jain, "Trainable Calibration Measures
       for Neural Networks from Kernel Mean Embeddings", ICML 2018.

    Examples
    --------
    >>> from skcalib.metrics import maximum_mean_calibration_error
    >>> y = [0, 1, 1, 0]
    >>> p = [0.2, 0.9, 0.3, 0.4]  # P(y = 1): the third row is wrong
    >>> round(maximum_mean_calibration_error(y, p), 5)
    0.08905
    >>> round(maximum_mean_calibration_error(y, p, squared=True), 5)
    0.00793
    """
    inputs = check_metric_inputs(
        y_true, y_proba, sample_weight=sample_weight, labels=labels
    )
    pred, conf = top1(inputs.proba)
    d = (pred == inputs.y).astype(np.float64) - conf
    w = inputs.sample_weight
    if w is None:
        total = float(d.size)
    else:
        # weights summing to 1 (their sum is positive, checked with the
        # inputs): no overflow for any scale of the weights
        d = d * (np.asarray(w, dtype=np.float64) / np.sum(w))
        total = 1.0
    value = max(laplacian_pair_sum(conf, d, float(bandwidth)), 0.0) / total**2
    return float(value if squared else np.sqrt(value))


#: The short name of :func:`maximum_mean_calibration_error`.
mmce = maximum_mean_calibration_error
