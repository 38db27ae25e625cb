"""Binned calibration errors: ECE (confidence, top-label, classwise), MCE and
the debiased L2 error.

All of them reduce the per-cell statistics of :mod:`skcalib._core.totals`
(one binning pass, of in-memory arrays or of Dask blocks).
"""

from skcalib._core.compat import StrOptions, validate_params
from skcalib._core.inputs import (
    AVERAGES,
    BINNING_CONSTRAINTS,
    COMMON_CONSTRAINTS,
    KINDS,
    NORMS,
    accepts_dask,
    input_kind,
)
from skcalib._core.totals import (
    check_norm,
    reduce_totals,
)
from skcalib.metrics._dispatch import binned_totals

__all__ = [
    "classwise_calibration_error",
    "expected_calibration_error",
    "maximum_calibration_error",
]

ECE_CONSTRAINTS = {
    **COMMON_CONSTRAINTS,
    **BINNING_CONSTRAINTS,
    "kind": [StrOptions(set(KINDS))],
    "norm": [StrOptions(set(NORMS))],
    "debias": ["boolean"],
}


def _calibration_error(
    y_true,
    y_proba,
    *,
    n_bins,
    strategy,
    kind,
    norm,
    debias,
    sample_weight,
    labels,
    average="mean",
):
    check_norm(norm, debias)
    if average != "mean" and kind != "classwise":
        raise ValueError(
            f"average={average!r} combines the classes of kind='classwise'; "
            f"kind={kind!r} has no per-class errors to average."
        )
    if average != "mean" and input_kind(y_true, y_proba, sample_weight) != "numpy":
        raise TypeError(
            f"average={average!r} needs in-memory arrays; call .compute() "
            "first (Dask collections, Spark / Ray columns: average='mean')."
        )
    bt = binned_totals(
        y_true,
        y_proba,
        n_bins=n_bins,
        strategy=strategy,
        kind=kind,
        sample_weight=sample_weight,
        labels=labels,
    )
    return float(reduce_totals(bt.totals, kind, norm, debias, average))


@accepts_dask
@validate_params(
    {**ECE_CONSTRAINTS, "average": [StrOptions(set(AVERAGES))]},
    prefer_skip_nested_validation=True,
)
def expected_calibration_error(
    y_true,
    y_proba,
    *,
    n_bins=15,
    strategy="uniform",
    kind="confidence",
    norm="l1",
    debias=False,
    average="mean",
    sample_weight=None,
    labels=None,
):
    """Expected calibration error (ECE): the mean gap of the reliability diagram.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True class labels (integers or strings).
    y_proba : array-like of shape (n_samples,) or (n_samples, n_classes)
        Predicted probabilities. 1-D: probability of the positive class (the
        larger label, or ``labels[1]``), as scorers pass binary
        ``predict_proba``. 2-D: one column per class in the order of
        ``labels``; rows must sum to 1 (within ``sqrt(eps)`` of the dtype).
        float32 input is used as is (never copied).
    n_bins : int, default=15
        Number of bins.
    strategy : {"uniform", "quantile", "discrete"}, default="uniform"
        Equal-width bins, or equal-mass bins from the (weighted) quantiles of
        the binned probabilities of each group (adaptive ECE [4]_; tied
        quantiles are merged), or one bin per distinct probability of each
        group (``"discrete"``, ``n_bins`` unused): the exact error of a
        discrete calibrator's outputs (histogram binning, scaling-binning
        [3]_), as ``uncertainty-calibration``'s ``get_binning_ce``. At most
        4096 distinct values per group; continuous probabilities raise a
        ``ValueError`` that points to ``"uniform"`` and ``"quantile"``.
    kind : {"confidence", "top_label", "classwise"}, default="confidence"
        ``"confidence"``: top-1 probability against top-1 correctness, all
        samples pooled [1]_. ``"top_label"``: per predicted class ``k``, the
        binned error of the confidence of the samples predicted ``k``,
        weighted by the fraction of samples predicted ``k`` [2]_.
        ``"classwise"``: the **mean** (not the sum) over classes of the binned
        error of ``p_k`` against ``y == k``.
    norm : {"l1", "l2", "max"}, default="l1"
        Weighted mean absolute gap, root of the weighted mean squared gap, or
        largest gap over non-empty bins (the MCE).
    debias : bool, default=False
        Subtract the sampling variance of each bin from the squared gaps
        (``norm="l2"`` only; see Notes). The result may be negative.
    average : {"mean", "rms"}, default="mean"
        ``kind="classwise"`` only: the mean of the classes' errors, or their
        root mean square. With ``norm="l2"``, ``"rms"`` is the marginal
        calibration error of Kumar, Liang & Ma [3]_, :math:`(\\frac{1}{K}
        \\sum_k \\mathrm{ECE}_2^{(k)\\,2})^{1/2}` (see Notes).
    sample_weight : array-like of shape (n_samples,), default=None
        Sample weights.
    labels : array-like of shape (n_classes,), default=None
        Class labels of the columns of ``y_proba``; default: the sorted labels
        of ``y_true``, which must then name every column (as many labels as
        columns; both labels for 1-D ``y_proba``): otherwise a ``ValueError``
        asks for ``labels=``, the columns are never guessed (pass
        ``labels=clf.classes_`` for a classifier's ``predict_proba``).

    Returns
    -------
    ece : float
        In ``[0, 1]`` (``debias=True``: in ``[-1, 1]``).

    See Also
    --------
    maximum_calibration_error : ``norm="max"``.
    classwise_calibration_error : ``kind="classwise"``.
    calibration_error_interval : Bootstrap interval of any variant.
    reliability_curve : The per-bin values.

    Notes
    -----
    **Array API**: with ``array_api_dispatch=True`` and ``y_proba`` of
    another namespace (torch, CuPy, array-api-strict, on any device), the
    bins and per-bin sums are computed on the device and only the per-bin
    totals (and a few scalars of the checks) cross to the host; the result
    is a Python float. Sums are accumulated in float64 where the device has
    it: the result equals numpy's within 1e-12 (relative) for float64
    inputs and within 1e-6 (absolute) for float32 inputs at n = 1e7
    (float16 and bfloat16 are computed in float32). On a device without
    float64 the sums are blocked pairwise float32 sums (error growing with
    ``log2(n)``). Quantile edges with ``sample_weight``, and discrete
    edges, are computed on the host from the group's scores.

    Bins are right-closed, :math:`(e_j, e_{j+1}]`, the first one
    :math:`[0, e_1]` (as :func:`sklearn.calibration.calibration_curve`); a
    probability equal to an edge lands in the lower bin, edges being compared
    in the dtype of ``y_proba``. With weights :math:`w_i`, confidences
    :math:`c_i`, outcomes :math:`a_i \\in \\{0, 1\\}`, cells :math:`B`
    (bins; for ``"top_label"`` a bin of one predicted class), :math:`W_B =
    \\sum_{i \\in B} w_i`, :math:`W = \\sum_i w_i` and the gap
    :math:`g_B = \\sum_{i \\in B} w_i (a_i - c_i) / W_B`:

    .. math::

        \\mathrm{ECE}_1 = \\sum_B \\frac{W_B}{W} |g_B|, \\qquad
        \\mathrm{ECE}_2 = \\Big(\\sum_B \\frac{W_B}{W} g_B^2\\Big)^{1/2},
        \\qquad \\mathrm{MCE} = \\max_{B : W_B > 0} |g_B|.

    For ``"top_label"`` the sums run over the cells of all predicted classes
    together, which for L1 is :math:`\\sum_k \\frac{W_k}{W}
    \\mathrm{ECE}_1^{(k)}`. For ``"classwise"`` each class :math:`k` gives
    one such error (:math:`c_i = p_{ik}`, :math:`a_i = [y_i = k]`) and the
    result is their mean over the ``K`` classes (``average="mean"``) or
    their root mean square (``average="rms"``, :math:`(\\frac{1}{K}
    \\sum_k e_k^2)^{1/2}`). For ``norm="l2"`` the root mean square is the
    root of the mean squared error over classes and bins, the marginal
    calibration error of [3]_ (their ``get_calibration_error(..., p=2,
    mode="marginal")``); with ``debias=True`` it is the root of the mean
    of the classes' debiased squared errors, with its sign (see below),
    where [3]_ clips each class's estimate at 0 before the mean.

    **Debiased L2** (Kumar, Liang & Ma [3]_; Bröcker [5]_): the plug-in
    :math:`g_B^2` overestimates the squared gap by the variance of the bin's
    accuracy. With :math:`\\bar a_B` the bin's accuracy and :math:`n_B =
    W_B^2 / \\sum_{i \\in B} w_i^2` its effective size (the count without
    weights), each squared gap becomes :math:`g_B^2 - \\bar a_B (1 - \\bar
    a_B) / (n_B - 1)`; bins with :math:`n_B < 2` contribute 0 (as in [3]_).
    The result :math:`D` estimates the squared L2 error without that bias and
    can be negative when the model is (close to) calibrated; the function
    returns :math:`\\operatorname{sign}(D) \\sqrt{|D|}`, which keeps the order
    of :math:`D` (use ``max(value, 0)`` for [3]_'s clipped value).

    References
    ----------
    .. [1] C. Guo, G. Pleiss, Y. Sun and K. Q. Weinberger, "On Calibration of
       Modern Neural Networks", ICML 2017.
    .. [2] C. Gupta and A. Ramdas, "Top-label calibration and multiclass-to-
       binary reductions", ICLR 2022.
    .. [3] A. Kumar, P. Liang and T. Ma, "Verified Uncertainty Calibration",
       NeurIPS 2019.
    .. [4] J. Nixon, M. Dusenberry, L. Zhang, G. Jerfel and D. Tran,
       "Measuring Calibration in Deep Learning", CVPR Workshops 2019.
    .. [5] J. Bröcker, "Estimating reliability and resolution of probability
       forecasts through decomposition of the empirical score", Climate
       Dynamics 39, 2012.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib.metrics import expected_calibration_error
    >>> y = np.array([0, 1, 2, 2])
    >>> proba = np.array([[0.9, 0.05, 0.05],   # right: bin (0.8, 1], gap 0.1
    ...                   [0.6, 0.3, 0.1],     # wrong: bin (0.4, 0.6] (0.6 is an edge)
    ...                   [0.1, 0.1, 0.8],     # right: bin (0.6, 0.8], gap 0.2
    ...                   [0.2, 0.2, 0.6]])    # right: bin (0.4, 0.6], gap 0.5 - 0.6
    >>> expected_calibration_error(y, proba, n_bins=5)  # (0.1 + 0.2 + 2 * 0.1) / 4
    0.125
    >>> expected_calibration_error(y, proba, n_bins=5, norm="max")
    0.2
    """
    return _calibration_error(
        y_true,
        y_proba,
        n_bins=n_bins,
        strategy=strategy,
        kind=kind,
        norm=norm,
        debias=debias,
        sample_weight=sample_weight,
        labels=labels,
        average=average,
    )


@accepts_dask
@validate_params(
    {k: v for k, v in ECE_CONSTRAINTS.items() if k not in ("norm", "debias")},
    prefer_skip_nested_validation=True,
)
def maximum_calibration_error(
    y_true,
    y_proba,
    *,
    n_bins=15,
    strategy="uniform",
    kind="confidence",
    sample_weight=None,
    labels=None,
):
    """Maximum calibration error (MCE): the largest gap over non-empty bins.

    The same as ``expected_calibration_error(..., norm="max")``.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True class labels.
    y_proba : array-like of shape (n_samples,) or (n_samples, n_classes)
        Predicted probabilities (1-D: of the positive class).
    n_bins : int, default=15
        Number of bins.
    strategy : {"uniform", "quantile", "discrete"}, default="uniform"
        Equal-width or equal-mass bins, or one bin per distinct probability
        (see :func:`expected_calibration_error`).
    kind : {"confidence", "top_label", "classwise"}, default="confidence"
        See :func:`expected_calibration_error`; ``"classwise"`` gives the mean
        over classes of each class's maximum gap.
    sample_weight : array-like of shape (n_samples,), default=None
        Sample weights.
    labels : array-like of shape (n_classes,), default=None
        Class labels of the columns of ``y_proba``.

    Returns
    -------
    mce : float
        In ``[0, 1]``.

    See Also
    --------
    expected_calibration_error : The weighted mean gap.

    Notes
    -----
    :math:`\\mathrm{MCE} = \\max_{B : W_B > 0} |g_B|` with the bins and gaps
    of :func:`expected_calibration_error` (right-closed bins
    :math:`(e_j, e_{j+1}]`, the first one :math:`[0, e_1]`). A bin holding a
    single sample can set it: it is noisy for small samples.

    References
    ----------
    .. [1] M. P. Naeini, G. F. Cooper and M. Hauskrecht, "Obtaining Well
       Calibrated Probabilities Using Bayesian Binning", AAAI 2015.

    Examples
    --------
    >>> from skcalib.metrics import maximum_calibration_error
    >>> maximum_calibration_error([0, 1, 1, 1], [0.2, 0.6, 0.9, 0.7], n_bins=2)
    0.3
    """
    return _calibration_error(
        y_true,
        y_proba,
        n_bins=n_bins,
        strategy=strategy,
        kind=kind,
        norm="max",
        debias=False,
        sample_weight=sample_weight,
        labels=labels,
    )


@accepts_dask
@validate_params(
    {
        **{k: v for k, v in ECE_CONSTRAINTS.items() if k != "kind"},
        "average": [StrOptions(set(AVERAGES))],
    },
    prefer_skip_nested_validation=True,
)
def classwise_calibration_error(
    y_true,
    y_proba,
    *,
    n_bins=15,
    strategy="uniform",
    norm="l1",
    debias=False,
    average="mean",
    sample_weight=None,
    labels=None,
):
    """Classwise calibration error: the mean over classes of one-vs-rest ECEs.

    The same as ``expected_calibration_error(..., kind="classwise")``.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True class labels.
    y_proba : array-like of shape (n_samples,) or (n_samples, n_classes)
        Predicted probabilities (1-D: of the positive class; both classes are
        then counted).
    n_bins : int, default=15
        Number of bins per class.
    strategy : {"uniform", "quantile", "discrete"}, default="uniform"
        Equal-width bins, or equal-mass bins per class, or one bin per
        distinct value of each class's probability (``n_bins`` unused; at
        most 4096 values per class, see :func:`expected_calibration_error`).
    norm : {"l1", "l2", "max"}, default="l1"
        Norm of each class's binned error.
    debias : bool, default=False
        Debiased L2 error per class (``norm="l2"`` only).
    average : {"mean", "rms"}, default="mean"
        Mean of the classes' errors, or their root mean square: with
        ``norm="l2"`` the marginal calibration error of Kumar, Liang & Ma
        [2]_.
    sample_weight : array-like of shape (n_samples,), default=None
        Sample weights.
    labels : array-like of shape (n_classes,), default=None
        Class labels of the columns of ``y_proba``.

    Returns
    -------
    error : float
        In ``[0, 1]``.

    See Also
    --------
    expected_calibration_error : All variants.

    Notes
    -----
    .. math::

        \\mathrm{CW\\text{-}ECE} = \\frac{1}{K} \\sum_{k=1}^{K}
        \\sum_{B} \\frac{W_{kB}}{W} \\big| \\bar a_{kB} - \\bar p_{kB} \\big|

    where :math:`B` runs over the bins of :math:`p_k` (right-closed,
    :math:`(e_j, e_{j+1}]`, the first one :math:`[0, e_1]`) and
    :math:`\\bar a_{kB}`, :math:`\\bar p_{kB}` are the weighted frequency of
    class :math:`k` and mean :math:`p_k` in that bin. By default this is a
    **mean** over classes; some papers (e.g. [1]_'s classwise ECE) use the
    same normalisation, others sum over classes (multiply by :math:`K`).
    ``average="rms"`` gives :math:`(\\frac{1}{K} \\sum_k e_k^2)^{1/2}` of the
    classes' errors :math:`e_k` instead; with ``norm="l2"`` that is the
    marginal (classwise) L2 calibration error of [2]_, which with
    ``strategy="discrete"`` equals ``get_calibration_error(y_proba, y_true,
    p=2, debias=False, mode="marginal")`` of the ``uncertainty-calibration``
    package on the outputs of a discrete calibrator (tested).

    References
    ----------
    .. [1] M. Kull, M. Perello-Nieto, M. Kängsepp, T. Silva Filho, H. Song and
       P. Flach, "Beyond temperature scaling: Obtaining well-calibrated
       multi-class probabilities with Dirichlet calibration", NeurIPS 2019.
    .. [2] A. Kumar, P. Liang and T. Ma, "Verified Uncertainty Calibration",
       NeurIPS 2019.

    Examples
    --------
    >>> from skcalib.metrics import classwise_calibration_error
    >>> classwise_calibration_error([0, 1, 1, 0], [0.2, 0.6, 0.9, 0.3], n_bins=2)
    0.25
    """
    return _calibration_error(
        y_true,
        y_proba,
        n_bins=n_bins,
        strategy=strategy,
        kind="classwise",
        norm=norm,
        debias=debias,
        sample_weight=sample_weight,
        labels=labels,
        average=average,
    )
