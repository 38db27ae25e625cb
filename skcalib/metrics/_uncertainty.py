"""Uncertainty of an ensemble (or of MC-dropout passes) from its members'
predictions: the entropy and the variance decompositions into aleatoric and
epistemic parts, and the ensemble's averaged prediction."""

from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
from scipy.special import xlogy

from skcalib._core.compat import Interval, StrOptions, validate_params
from skcalib._core.inputs import check_sample_weight
from skcalib._core.scores import (
    PROBA_FLOOR,
    all_finite,
    row_sums,
    softmax,
)
from skcalib._core.xp import host_array_api

__all__ = ["UncertaintyDecomposition", "ensemble_proba", "uncertainty_decomposition"]

_SHAPE = "(n_members, n_samples, n_classes)"
_SHAPE_SAMPLES_FIRST = "(n_samples, n_members, n_classes)"


@dataclass(frozen=True)
class UncertaintyDecomposition:
    """Result of :func:`uncertainty_decomposition`.

    Per-sample arrays of shape ``(n_samples,)``, in the dtype of the
    computation (float32 for float32 input, float64 otherwise). Entropies
    are in nats, or in the unit of ``base``.

    Attributes
    ----------
    total : ndarray of shape (n_samples,)
        Entropy of the mean prediction :math:`H(\\bar p)`.
    aleatoric : ndarray of shape (n_samples,)
        Mean entropy of the members :math:`\\frac1M \\sum_m H(p_m)`.
    epistemic : ndarray of shape (n_samples,)
        Mutual information between the label and the member, ``total -
        aleatoric`` (computed as the members' mean Kullback-Leibler
        divergence from the mean prediction, clipped at 0 for rounding only).
    total_variance : ndarray of shape (n_samples,)
        :math:`\\sum_k \\bar p_k (1 - \\bar p_k)`, the summed variance of the
        one-hot label under the mean prediction.
    aleatoric_variance : ndarray of shape (n_samples,)
        :math:`\\frac1M \\sum_m \\sum_k p_{mk} (1 - p_{mk})`.
    epistemic_variance : ndarray of shape (n_samples,)
        :math:`\\sum_k \\frac1M \\sum_m (p_{mk} - \\bar p_k)^2`, the summed
        variance of the members' probabilities; ``total_variance =
        aleatoric_variance + epistemic_variance`` up to rounding.
    mean_proba : ndarray of shape (n_samples, n_classes)
        The mean prediction :math:`\\bar p` (the ensemble's probabilities).
    mean_total, mean_aleatoric, mean_epistemic : float
        Weighted means of ``total``, ``aleatoric`` and ``epistemic`` over the
        samples.
    mean_total_variance, mean_aleatoric_variance, mean_epistemic_variance : float
        Weighted means of the variance-based measures.
    base : float or None
        The base of the logarithm (None: natural logarithm, nats).

    See Also
    --------
    uncertainty_decomposition : Computes it.

    Examples
    --------
    >>> from skcalib.metrics import uncertainty_decomposition
    >>> d = uncertainty_decomposition([[[1.0, 0.0]], [[0.0, 1.0]]], base=2)
    >>> d.total.tolist(), d.aleatoric.tolist(), d.epistemic.tolist()
    ([1.0], [0.0], [1.0])
    >>> d.mean_epistemic_variance
    0.5
    """

    total: np.ndarray
    aleatoric: np.ndarray
    epistemic: np.ndarray
    total_variance: np.ndarray
    aleatoric_variance: np.ndarray
    epistemic_variance: np.ndarray
    mean_proba: np.ndarray
    mean_total: float
    mean_aleatoric: float
    mean_epistemic: float
    mean_total_variance: float
    mean_aleatoric_variance: float
    mean_epistemic_variance: float
    base: float | None = None


def _stack(member_proba, name, member_axis):
    """The members as one float array of shape ``(M, n, K)`` (no copy of a
    float32 or float64 ndarray with the members first; one copy with the
    axes swapped for ``member_axis=1``).

    ``member_axis=None`` is the members-first order of a list or tuple (its
    entries are the members); for an array the data cannot tell
    ``(n_members, n_samples, n_classes)`` from ``(n_samples, n_members,
    n_classes)``, so an array without ``member_axis`` is an error."""
    sequence = isinstance(member_proba, (list, tuple))
    if sequence:
        shapes = [np.shape(m) for m in member_proba]
        for i, shape in enumerate(shapes):
            if shape != shapes[0]:
                raise ValueError(
                    f"Every entry of {name} (a list) must have the same shape; "
                    f"entry 0 has shape {shapes[0]}, entry {i} has shape "
                    f"{shape}."
                )
    stack = np.asarray(member_proba)
    if stack.dtype.kind not in "fiub":
        raise TypeError(f"{name} must hold numbers, got dtype {stack.dtype}.")
    if stack.dtype not in (np.float32, np.float64):
        stack = stack.astype(np.float64)
    if stack.ndim != 3:
        hint = (
            " One model's predictions of shape (n_samples, n_classes) are not an "
            "ensemble: stack the members' predictions along a new axis (and "
            "name it with member_axis), or pass the list of them."
            if stack.ndim == 2
            else ""
        )
        raise ValueError(
            f"{name} must be 3-D of shape {_SHAPE} (member_axis=0) or "
            f"{_SHAPE_SAMPLES_FIRST} (member_axis=1), got an array of shape "
            f"{stack.shape}.{hint}"
        )
    if member_axis is None:
        if not sequence:
            a, b, _ = stack.shape
            raise ValueError(
                f"{name} is an array of shape {stack.shape}: its values cannot "
                f"tell {_SHAPE} from {_SHAPE_SAMPLES_FIRST}, so say which axis "
                f"holds the members: member_axis=0 for {a} members of {b} "
                f"samples, member_axis=1 for {b} members of {a} samples (a list "
                "of the members' (n_samples, n_classes) arrays needs no "
                "member_axis)."
            )
        member_axis = 0
    if member_axis == 1:
        stack = np.ascontiguousarray(stack.swapaxes(0, 1))
    n_members, n_samples, n_classes = stack.shape
    if n_members < 2:
        raise ValueError(
            f"{name} has {n_members} member(s) (shape {stack.shape} in the "
            f"order {_SHAPE}); the epistemic part needs at least 2 members "
            f"(ensemble models or MC-dropout passes) along axis "
            f"member_axis={member_axis}."
        )
    if n_samples < 1 or n_classes < 2:
        raise ValueError(
            f"{name} must have at least 1 sample and 2 classes, got shape "
            f"{stack.shape} {_SHAPE}."
        )
    if not all_finite(stack):
        bad = np.argwhere(~np.isfinite(stack))[0]
        raise ValueError(
            f"{name} must be finite; member {bad[0]}, row {bad[1]}, column "
            f"{bad[2]} is {stack[tuple(bad)]}."
        )
    return stack


def _check_member_proba(stack, name):
    """Raise unless every row of every member is a probability vector."""
    lo, hi = stack.min(), stack.max()
    if lo < 0 or hi > 1:
        bad = np.argwhere((stack < 0) | (stack > 1))[0]
        raise ValueError(
            f"{name} must hold probabilities in [0, 1] (pass score_type='logit' "
            f"for logits); member {bad[0]}, row {bad[1]} has "
            f"{stack[bad[0], bad[1]].tolist()}."
        )
    n_members, n_samples, n_classes = stack.shape
    sums = row_sums(stack.reshape(n_members * n_samples, n_classes))
    if not sums.rounded:
        flat, total = sums.worst
        member, row = divmod(flat, n_samples)
        raise ValueError(
            f"{name} rows must sum to 1 (tolerance {sums.tolerance:.1e} for "
            f"{n_classes} columns); member {member}, row {row} sums to "
            f"{total:.6g} (the farthest from 1 of {sums.rows.size} row(s) that "
            "miss it). Pass score_type='logit' if these are logits."
        )


def _member_proba(member_scores, score_type, name, member_axis):
    stack = _stack(member_scores, name, member_axis)
    if score_type == "logit":
        n_members, n_samples, n_classes = stack.shape
        flat = stack.reshape(n_members * n_samples, n_classes)
        return softmax(flat).reshape(stack.shape)
    _check_member_proba(stack, name)
    return stack


def _mean_member(values):
    """Mean over the members (axis 0), computed as ``v_0 + mean(v_m - v_0)``:
    the same value up to rounding, and exactly ``v_0`` when every member
    gives ``v_0``."""
    return values[0] + (values - values[0]).mean(axis=0)


def _decompose(proba, mean):
    """The six per-sample measures (natural logarithm), with one work array
    of the shape of ``proba`` besides ``proba * log(proba)``."""
    plogp = xlogy(proba, proba)
    work = xlogy(proba, mean)
    aleatoric = -_mean_member(plogp.sum(axis=2))
    total = -xlogy(mean, mean).sum(axis=1)
    plogp -= work  # p_m log(p_m / mean): the terms of KL(p_m || mean)
    epistemic = np.maximum(plogp.sum(axis=2).mean(axis=0), 0)
    del plogp
    np.subtract(proba, mean, out=work)
    work *= work
    epistemic_variance = work.sum(axis=2).mean(axis=0)
    np.subtract(1, proba, out=work)
    work *= proba  # p (1 - p) >= 0, also for rows rounded to 4 decimals
    aleatoric_variance = _mean_member(work.sum(axis=2))
    total_variance = (mean * (1 - mean)).sum(axis=1)
    return {
        "total": total,
        "aleatoric": aleatoric,
        "epistemic": epistemic,
        "total_variance": total_variance,
        "aleatoric_variance": aleatoric_variance,
        "epistemic_variance": epistemic_variance,
    }


_CONSTRAINTS = {
    "member_proba": ["array-like"],
    "score_type": [StrOptions({"probability", "logit"})],
    "sample_weight": ["array-like", None],
    "base": [Interval(Real, 1, None, closed="neither"), None],
    "member_axis": [Interval(Integral, 0, 1, closed="both"), None],
}


@host_array_api("member_proba")
@validate_params(_CONSTRAINTS, prefer_skip_nested_validation=True)
def uncertainty_decomposition(
    member_proba,
    *,
    member_axis=None,
    score_type="probability",
    sample_weight=None,
    base=None,
):
    """Split an ensemble's predictive uncertainty into aleatoric and epistemic.

    Parameters
    ----------
    member_proba : array-like of shape (n_members, n_samples, n_classes) \
            or (n_samples, n_members, n_classes)
        The predictions of each member of an ensemble (or of each
        MC-dropout pass) on the same samples: a list (or tuple) of
        ``n_members`` arrays of shape ``(n_samples, n_classes)``, or one
        3-D array whose member axis ``member_axis`` names. At least 2
        members and 2 classes.
    member_axis : {0, 1} or None, default=None
        The axis of ``member_proba`` that holds the members: ``0`` for
        ``(n_members, n_samples, n_classes)`` (``np.stack`` of the members'
        predictions), ``1`` for ``(n_samples, n_members, n_classes)``
        (``np.stack(..., axis=1)``, a batch of MC-dropout passes). None:
        the entries of a list or tuple are the members; for an array it is
        an error, because its values cannot decide the order (in either
        order every row is a probability vector, or a row of logits) and
        the wrong order silently gives the decomposition of other
        "members" (per-member arrays of the wrong length).
    score_type : {"probability", "logit"}, default="probability"
        What ``member_proba`` holds, never guessed. ``"probability"``:
        values in ``[0, 1]``, rows summing to 1 within the tolerance of
        every skcalib metric (rows rounded to 4 decimals pass and are used
        as given). ``"logit"``: each member's logits, turned into
        probabilities by a softmax (member by member, then averaged).
    sample_weight : array-like of shape (n_samples,), default=None
        Weights of the samples in the ``mean_*`` figures (the per-sample
        arrays do not depend on them).
    base : float > 1, default=None
        Base of the logarithm of the entropies; None: natural logarithm
        (nats). ``base=2`` gives bits. The variance-based measures do not
        depend on it.

    Returns
    -------
    decomposition : UncertaintyDecomposition
        Per-sample ``total``, ``aleatoric``, ``epistemic``,
        ``total_variance``, ``aleatoric_variance``, ``epistemic_variance``,
        the mean prediction ``mean_proba``, and their means over samples.

    See Also
    --------
    ensemble_proba : The ensemble's prediction, averaged over probabilities
        or over logits.

    Notes
    -----
    With :math:`p_{m}` the prediction of member :math:`m = 1..M` on a
    sample, :math:`\\bar p = \\frac1M \\sum_m p_m` (the mixture: the
    ensemble's predictive distribution [2]_) and :math:`H(p) = -\\sum_k p_k
    \\log p_k`, the entropy decomposition of [1]_ is

    .. math::

        \\underbrace{H(\\bar p)}_{\\text{total}} =
        \\underbrace{\\frac1M \\sum_m H(p_m)}_{\\text{aleatoric}} +
        \\underbrace{\\frac1M \\sum_m \\mathrm{KL}(p_m \\,\\|\\, \\bar p)}_{
        \\text{epistemic (mutual information)}}.

    The epistemic part is computed as the mean Kullback-Leibler divergence
    (not as the difference of two entropies, which cancels badly when the
    members agree), so identical members give exactly 0 and members that
    disagree give a value that is not the difference of rounded numbers;
    a value below 0 can only be rounding and is clipped to 0. Means over
    the members are formed as :math:`v_1 + \\frac1M \\sum_m (v_m - v_1)`,
    exactly :math:`v_1` when the members agree, so identical members give
    ``epistemic == 0`` and ``aleatoric == total`` exactly (and the same for
    the variances). ``0 log 0 = 0`` (:func:`scipy.special.xlogy`), so one-hot
    members are exact too.

    The variance-based decomposition [3]_ is the law of total variance of
    the one-hot label, summed over the classes:

    .. math::

        \\sum_k \\bar p_k (1 - \\bar p_k) =
        \\frac1M \\sum_m \\sum_k p_{mk} (1 - p_{mk}) +
        \\sum_k \\frac1M \\sum_m (p_{mk} - \\bar p_k)^2.

    Both treat the members as equally likely draws from a (second-order)
    distribution over predictions, as a deep ensemble [2]_ or MC dropout [4]_
    provide. Float32 input is computed in float32 (about 7 significant
    digits, ample for these measures) without a float64 copy of the stack;
    other input in float64. Besides the input, the work takes two arrays of
    its shape and dtype at most (and, for ``member_axis=1``, one copy of the
    input in the members-first order). With scikit-learn's
    ``array_api_dispatch=True``, a stack of another array-API namespace
    (torch, CuPy, ...) is computed on the host (one transfer) and the
    arrays of the result come back in its namespace and on its device.

    References
    ----------
    .. [1] S. Depeweg, J. M. Hernandez-Lobato, F. Doshi-Velez and S. Udluft,
       "Decomposition of uncertainty in Bayesian deep learning for efficient
       and risk-sensitive learning", ICML 2018.
    .. [2] B. Lakshminarayanan, A. Pritzel and C. Blundell, "Simple and
       scalable predictive uncertainty estimation using deep ensembles",
       NeurIPS 2017.
    .. [3] Y. Sale, P. Hofman, L. Wimmer, E. Hüllermeier and
       T. Nagler, "Second-order uncertainty quantification:
       variance-based measures", arXiv:2401.00276, 2023.
    .. [4] Y. Gal and Z. Ghahramani, "Dropout as a Bayesian approximation:
       representing model uncertainty in deep learning", ICML 2016.

    Examples
    --------
    Two members that agree on the first sample and disagree on the second:

    >>> import numpy as np
    >>> from skcalib.metrics import uncertainty_decomposition
    >>> members = [[[0.5, 0.5], [1.0, 0.0]],
    ...            [[0.5, 0.5], [0.0, 1.0]]]
    >>> d = uncertainty_decomposition(members, base=2)
    >>> d.total.tolist(), d.aleatoric.tolist(), d.epistemic.tolist()
    ([1.0, 1.0], [1.0, 0.0], [0.0, 1.0])
    >>> d.epistemic_variance.tolist()
    [0.0, 0.5]
    >>> d.mean_epistemic
    0.5

    An array says which axis holds the members (here the same two members
    of the same two samples, samples first):

    >>> by_sample = np.array(members).swapaxes(0, 1)
    >>> by_sample.shape
    (2, 2, 2)
    >>> uncertainty_decomposition(by_sample, member_axis=1, base=2).epistemic.tolist()
    [0.0, 1.0]
    """
    proba = _member_proba(member_proba, score_type, "member_proba", member_axis)
    n_samples = proba.shape[1]
    if sample_weight is not None:
        n_weights = np.shape(sample_weight)
        if n_weights != (n_samples,):
            raise ValueError(
                f"sample_weight must have shape ({n_samples},) (n_samples of "
                f"member_proba {proba.shape}), got {n_weights}."
            )
    weight, _ = check_sample_weight(sample_weight, n_samples)
    mean = _mean_member(proba)
    parts = _decompose(proba, mean)
    if base is not None:
        scale = proba.dtype.type(np.log(base))
        for key in ("total", "aleatoric", "epistemic"):
            parts[key] = parts[key] / scale
    means = {
        f"mean_{key}": float(np.average(value, weights=weight))
        for key, value in parts.items()
    }
    return UncertaintyDecomposition(**parts, mean_proba=mean, **means, base=base)


@host_array_api("member_scores")
@validate_params(
    {
        "member_scores": ["array-like"],
        "member_axis": [Interval(Integral, 0, 1, closed="both"), None],
        "score_type": [StrOptions({"probability", "logit"})],
        "average": [StrOptions({"probability", "logit"})],
    },
    prefer_skip_nested_validation=True,
)
def ensemble_proba(
    member_scores, *, member_axis=None, score_type="probability", average="probability"
):
    """Average the members' predictions into the ensemble's probabilities.

    Parameters
    ----------
    member_scores : array-like of shape (n_members, n_samples, n_classes) \
            or (n_samples, n_members, n_classes)
        Each member's probabilities or logits: a list of arrays of shape
        ``(n_samples, n_classes)``, or one 3-D array whose member axis
        ``member_axis`` names; checked as in
        :func:`uncertainty_decomposition`.
    member_axis : {0, 1} or None, default=None
        The axis of ``member_scores`` that holds the members (``0``:
        members first, ``1``: samples first). None: the entries of a list
        or tuple are the members; for an array it is an error (its values
        cannot decide the order), as in :func:`uncertainty_decomposition`.
    score_type : {"probability", "logit"}, default="probability"
        What ``member_scores`` holds, never guessed.
    average : {"probability", "logit"}, default="probability"
        ``"probability"``: the mean of the members' probabilities (the
        mixture, the prediction of a deep ensemble [1]_, the one whose
        entropy is the ``total`` of :func:`uncertainty_decomposition`; it
        keeps the members' disagreement as uncertainty). ``"logit"``: the
        softmax of the mean of the members' logits (of their
        log-probabilities for probabilities, floored at 1e-12), a
        normalised geometric mean that is more confident than the mixture
        where the members disagree; the logits to feed a calibrator that
        works on logits are then ``log`` of it.

    Returns
    -------
    proba : ndarray of shape (n_samples, n_classes)
        The ensemble's probabilities (rows sum to 1), float32 for float32
        input.

    See Also
    --------
    uncertainty_decomposition : How much of the uncertainty is disagreement.

    Notes
    -----
    The choice matters for calibration: temperature scaling fitted on the
    mixture's log-probabilities and temperature scaling of each member
    before averaging give different ensembles (see the user guide,
    "Uncertainty and decisions").

    References
    ----------
    .. [1] B. Lakshminarayanan, A. Pritzel and C. Blundell, "Simple and
       scalable predictive uncertainty estimation using deep ensembles",
       NeurIPS 2017.

    Examples
    --------
    >>> from skcalib.metrics import ensemble_proba
    >>> members = [[[0.9, 0.1]], [[0.1, 0.9]]]
    >>> ensemble_proba(members).tolist()
    [[0.5, 0.5]]
    >>> ensemble_proba([[[2.0, 0.0]], [[4.0, 0.0]]], score_type="logit",
    ...                average="logit").round(4).tolist()
    [[0.9526, 0.0474]]
    >>> import numpy as np
    >>> stacked = np.array(members)  # (n_members, n_samples, n_classes)
    >>> ensemble_proba(stacked, member_axis=0).tolist()
    [[0.5, 0.5]]
    """
    if score_type == "logit" and average == "logit":
        stack = _stack(member_scores, "member_scores", member_axis)
        return softmax(_mean_member(stack))
    proba = _member_proba(member_scores, score_type, "member_scores", member_axis)
    if average == "probability":
        return _mean_member(proba)
    log_proba = np.log(np.maximum(proba, proba.dtype.type(PROBA_FLOOR)))
    return softmax(_mean_member(log_proba))
