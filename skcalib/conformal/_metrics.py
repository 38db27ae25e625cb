"""Metrics of prediction sets: coverage, size, and coverage by set size."""

import dataclasses
from numbers import Real

import numpy as np
from sklearn.utils import check_array

from skcalib._core.compat import Interval, validate_params
from skcalib._core.inputs import _check_y, _resolve_classes, check_sample_weight
from skcalib._core.labels import encode as _encode
from skcalib._core.xp import host_array_api

__all__ = [
    "SizeStratifiedCoverage",
    "classwise_set_coverage",
    "mean_set_size",
    "set_coverage_score",
    "size_stratified_coverage",
    "size_stratified_coverage_score",
]


def check_sets(y_sets):
    """Validate prediction sets: ``(n, K)`` or, for several levels, ``(n, K,
    n_alpha)``; at least 2 classes and one level; boolean.

    Booleans are taken as given; integer or float arrays are accepted when
    they hold only 0 and 1 (e.g. sets read from a file). Anything else (for
    instance probabilities passed by mistake) is a ``ValueError`` naming the
    first offending entry.
    """
    sets = check_array(
        y_sets,
        ensure_2d=False,
        allow_nd=True,
        dtype=None,
        ensure_all_finite=False,
        input_name="y_sets",
    )
    if sets.ndim not in (2, 3):
        raise ValueError(
            "y_sets must be a boolean array of shape (n_samples, n_classes), or "
            "(n_samples, n_classes, n_alpha) for several levels (2-D or 3-D), "
            f"got shape {sets.shape}."
        )
    if sets.shape[1] < 2:
        raise ValueError(
            "y_sets must have one column per class (at least 2), got shape "
            f"{sets.shape}."
        )
    if sets.ndim == 3 and sets.shape[2] == 0:
        raise ValueError(
            "y_sets of shape (n_samples, n_classes, n_alpha) needs at least one "
            f"level, got shape {sets.shape}."
        )
    if sets.dtype == bool:
        return sets
    if sets.dtype.kind not in "iuf":
        raise ValueError(
            f"y_sets must be boolean (or hold only 0 and 1), got dtype {sets.dtype}."
        )
    bad = (sets != 0) & (sets != 1)
    if bad.any():
        where = tuple(int(v) for v in np.argwhere(bad)[0])
        raise ValueError(
            "y_sets must be boolean (or hold only 0 and 1); "
            f"y_sets[{', '.join(map(str, where))}] = {sets[where].item()!r}. Pass "
            "prediction sets (e.g. ConformalClassifier.predict_set), not "
            "probabilities."
        )
    return sets.astype(bool)


def _check_set_inputs(y_true, y_sets, sample_weight, labels):
    sets = check_sets(y_sets)
    y = _check_y(y_true)
    if y.shape[0] != sets.shape[0]:
        raise ValueError(
            f"y_true has {y.shape[0]} samples but y_sets has {sets.shape[0]} rows."
        )
    weight, _ = check_sample_weight(sample_weight, y.shape[0])
    classes = _resolve_classes(y, sets.shape[1], labels, name="y_sets", binary_1d=False)
    return sets, _encode(y, classes), weight, classes


def _covered(sets, codes):
    """Whether each set holds the true class: ``(n,)``, or ``(n, n_alpha)``."""
    return sets[np.arange(codes.size), codes]


def _weighted_mean(values, weight):
    """Mean over the rows (axis 0), a float for 1-D ``values``."""
    values = values.astype(np.float64)
    mean = values.mean(axis=0) if weight is None else weight @ values / weight.sum()
    return float(mean) if np.ndim(mean) == 0 else mean


_SET_CONSTRAINTS = {
    "y_true": ["array-like"],
    "y_sets": ["array-like"],
    "labels": ["array-like", None],
    "sample_weight": ["array-like", None],
}


@host_array_api("y_sets")
@validate_params(_SET_CONSTRAINTS, prefer_skip_nested_validation=True)
def set_coverage_score(y_true, y_sets, *, labels=None, sample_weight=None):
    """Empirical coverage: the fraction of prediction sets holding the true class.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True class labels (integers or strings).
    y_sets : array-like of shape (n_samples, n_classes[, n_alpha])
        Boolean prediction sets, one column per class in the order of
        ``labels`` (as returned by
        :meth:`~skcalib.calibration.ConformalClassifier.predict_set`); 0/1
        integers are accepted. 3-D: the sets of several levels, as
        ``predict_set(X, alpha=[...])`` returns them.
    labels : array-like of shape (n_classes,), default=None
        Class labels of the columns; default: the sorted labels of
        ``y_true``, which must then hold every class (else pass ``labels=``:
        the columns are never guessed). A label of ``y_true`` not in
        ``labels`` is an error.
    sample_weight : array-like of shape (n_samples,), default=None
        Sample weights.

    Returns
    -------
    coverage : float or ndarray of shape (n_alpha,)
        In ``[0, 1]``; one per level for 3-D ``y_sets``. A conformal
        predictor at level ``alpha`` has an expected coverage of at least
        ``1 - alpha``.

    See Also
    --------
    classwise_set_coverage : Coverage within each class.
    mean_set_size : The price paid for the coverage.

    Notes
    -----
    .. math::

        \\mathrm{coverage} = \\frac{\\sum_i w_i\\,[y_i \\in C(x_i)]}
        {\\sum_i w_i}.

    References
    ----------
    .. [1] A. N. Angelopoulos and S. Bates, "A gentle introduction to
       conformal prediction and distribution-free uncertainty
       quantification", arXiv:2107.07511, 2021 (Section 3).

    Examples
    --------
    >>> from skcalib.metrics import set_coverage_score
    >>> sets = [[True, True, False], [False, True, False], [True, False, True]]
    >>> set_coverage_score([0, 2, 2], sets, labels=[0, 1, 2])  # no 1 in y_true
    0.666...
    >>> set_coverage_score(["a", "c", "c"], sets, labels=["a", "b", "c"])
    0.666...

    Several levels at once (the last axis):

    >>> import numpy as np
    >>> nested = np.stack([np.ones((3, 3), bool), np.array(sets)], axis=2)
    >>> set_coverage_score([0, 2, 2], nested, labels=[0, 1, 2])
    array([1.        , 0.66666667])
    """
    sets, codes, weight, _ = _check_set_inputs(y_true, y_sets, sample_weight, labels)
    return _weighted_mean(_covered(sets, codes), weight)


@host_array_api("y_sets")
@validate_params(_SET_CONSTRAINTS, prefer_skip_nested_validation=True)
def classwise_set_coverage(y_true, y_sets, *, labels=None, sample_weight=None):
    """Coverage within each class: the fraction of its samples whose set holds it.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True class labels.
    y_sets : array-like of shape (n_samples, n_classes[, n_alpha])
        Boolean prediction sets, one column per class in the order of
        ``labels``; 3-D: one set per level (last axis).
    labels : array-like of shape (n_classes,), default=None
        Class labels of the columns (see :func:`set_coverage_score`).
    sample_weight : array-like of shape (n_samples,), default=None
        Sample weights.

    Returns
    -------
    coverage : ndarray of shape (n_classes,) or (n_classes, n_alpha)
        Coverage of each class, in the order of the columns (and of each
        level for 3-D ``y_sets``); NaN for a class with no sample (or zero
        total weight) in ``y_true``.

    See Also
    --------
    set_coverage_score : Coverage over all samples.
    skcalib.calibration.ConformalClassifier : ``class_conditional=True``
        guarantees every entry on average.

    Notes
    -----
    .. math::

        \\mathrm{coverage}_k = \\frac{\\sum_{i : y_i = k} w_i\\,[k \\in
        C(x_i)]}{\\sum_{i : y_i = k} w_i}.

    Marginal conformal prediction guarantees only the average over classes
    (weighted by their frequencies); a rare or hard class can be covered
    much less often (Vovk 2012; Ding et al. 2023).

    References
    ----------
    .. [1] V. Vovk, "Conditional validity of inductive conformal predictors",
       ACML 2012.
    .. [2] T. Ding, A. N. Angelopoulos, S. Bates, M. I. Jordan and R. J.
       Tibshirani, "Class-conditional conformal prediction with many
       classes", NeurIPS 2023.

    Examples
    --------
    >>> from skcalib.metrics import classwise_set_coverage
    >>> sets = [[True, True, False], [False, True, False], [True, False, True]]
    >>> classwise_set_coverage([0, 2, 2], sets, labels=[0, 1, 2])
    array([1. , nan, 0.5])
    """
    sets, codes, weight, classes = _check_set_inputs(
        y_true, y_sets, sample_weight, labels
    )
    covered = _covered(sets, codes).astype(np.float64)
    k = classes.size
    if weight is not None:
        covered *= weight if covered.ndim == 1 else weight[:, None]
    totals = np.bincount(codes, weights=weight, minlength=k).astype(np.float64)
    if covered.ndim == 1:
        hits = np.bincount(codes, weights=covered, minlength=k)
    else:
        hits = np.stack(
            [np.bincount(codes, weights=c, minlength=k) for c in covered.T], axis=1
        )
        totals = totals[:, None]
    out = np.full(hits.shape, np.nan)
    np.divide(hits, totals, out=out, where=totals > 0)
    return out


@host_array_api("y_sets")
@validate_params(
    {"y_sets": ["array-like"], "sample_weight": ["array-like", None]},
    prefer_skip_nested_validation=True,
)
def mean_set_size(y_sets, *, sample_weight=None):
    """Average number of classes in the prediction sets.

    Parameters
    ----------
    y_sets : array-like of shape (n_samples, n_classes[, n_alpha])
        Boolean prediction sets (0/1 integers are accepted); 3-D: one set
        per level (last axis).
    sample_weight : array-like of shape (n_samples,), default=None
        Sample weights.

    Returns
    -------
    size : float or ndarray of shape (n_alpha,)
        In ``[0, n_classes]``, one per level for 3-D ``y_sets``; lower is
        better at equal coverage (empty sets count as 0).

    See Also
    --------
    set_coverage_score : The coverage bought with this size.

    Notes
    -----
    .. math::

        \\overline{|C|} = \\frac{\\sum_i w_i\\,|C(x_i)|}{\\sum_i w_i}.

    Examples
    --------
    >>> from skcalib.metrics import mean_set_size
    >>> mean_set_size([[True, True, False], [False, True, False]])
    1.5
    """
    sets = check_sets(y_sets)
    weight, _ = check_sample_weight(sample_weight, sets.shape[0])
    return _weighted_mean(np.count_nonzero(sets, axis=1), weight)


# ------------------------------------------------------ size-stratified coverage
@dataclasses.dataclass(frozen=True, eq=False)
class SizeStratifiedCoverage:
    """Coverage of the prediction sets of each size, from
    :func:`size_stratified_coverage`.

    Attributes
    ----------
    sizes : ndarray of shape (n_sizes,)
        The set sizes that occur (with positive weight), ascending; for 3-D
        ``y_sets``, those that occur at any level.
    coverage : ndarray of shape (n_sizes,) or (n_sizes, n_alpha)
        Coverage among the samples whose set has that size (per level for
        3-D ``y_sets``; NaN where no set of the level has that size).
        Always 0 for size 0: an empty set holds no class.
    counts : ndarray of shape (n_sizes,) or (n_sizes, n_alpha)
        Total sample weight of each stratum (the number of samples without
        weights).

    Examples
    --------
    >>> from skcalib.metrics import size_stratified_coverage
    >>> ssc = size_stratified_coverage([0, 1], [[True, False], [True, True]])
    >>> ssc.sizes, ssc.coverage
    (array([1, 2]), array([1., 1.]))
    """

    sizes: np.ndarray
    coverage: np.ndarray
    counts: np.ndarray


def _strata(y_true, y_sets, sample_weight, labels):
    sets, codes, weight, _ = _check_set_inputs(y_true, y_sets, sample_weight, labels)
    _, scale = check_sample_weight(sample_weight, codes.size)
    flat = sets if sets.ndim == 3 else sets[:, :, None]
    size = np.count_nonzero(flat, axis=1)  # (n, n_alpha)
    covered = _covered(flat, codes).astype(np.float64)
    w = np.ones(codes.size) if weight is None else weight
    n_bins = sets.shape[1] + 1
    counts = np.stack(
        [np.bincount(s, weights=w, minlength=n_bins) for s in size.T], axis=1
    )
    hits = np.stack(
        [
            np.bincount(s, weights=w * c, minlength=n_bins)
            for s, c in zip(size.T, covered.T, strict=True)
        ],
        axis=1,
    )
    sizes = np.flatnonzero(counts.sum(axis=1) > 0)
    counts, hits = counts[sizes], hits[sizes]
    coverage = np.full(counts.shape, np.nan)
    np.divide(hits, counts, out=coverage, where=counts > 0)
    counts = counts * scale
    if sets.ndim == 2:
        coverage, counts = coverage[:, 0], counts[:, 0]
    return sizes, coverage, counts


@host_array_api("y_sets")
@validate_params(_SET_CONSTRAINTS, prefer_skip_nested_validation=True)
def size_stratified_coverage(y_true, y_sets, *, labels=None, sample_weight=None):
    """Coverage among the samples whose prediction set has each size.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True class labels.
    y_sets : array-like of shape (n_samples, n_classes[, n_alpha])
        Boolean prediction sets, one column per class in the order of
        ``labels``; 3-D: one set per level (last axis).
    labels : array-like of shape (n_classes,), default=None
        Class labels of the columns (see :func:`set_coverage_score`).
    sample_weight : array-like of shape (n_samples,), default=None
        Sample weights.

    Returns
    -------
    result : SizeStratifiedCoverage
        ``sizes`` (those that occur), ``coverage`` and ``counts`` (weight)
        of each stratum.

    See Also
    --------
    size_stratified_coverage_score : The worst stratum, one number.
    classwise_set_coverage : Coverage within each class.

    Notes
    -----
    With :math:`I_s = \\{i : |C(x_i)| = s\\}`,

    .. math::

        \\mathrm{coverage}_s = \\frac{\\sum_{i \\in I_s} w_i\\,[y_i \\in
        C(x_i)]}{\\sum_{i \\in I_s} w_i}.

    Marginal coverage is the count-weighted mean over the sizes. A set
    method that adapts to difficulty covers every size near ``1 - alpha``;
    one that does not under-covers the small sets (the hard samples it
    wrongly calls easy) and over-covers the large ones (Angelopoulos et al.
    2021, who take the worst stratum as a measure of conditional coverage).

    References
    ----------
    .. [1] A. N. Angelopoulos, S. Bates, J. Malik and M. I. Jordan,
       "Uncertainty sets for image classifiers using conformal prediction",
       ICLR 2021.

    Examples
    --------
    >>> from skcalib.metrics import size_stratified_coverage
    >>> sets = [[True, False, False], [False, True, False],
    ...         [True, True, False], [True, True, True]]
    >>> ssc = size_stratified_coverage([0, 0, 1, 2], sets, labels=[0, 1, 2])
    >>> ssc.sizes, ssc.coverage, ssc.counts
    (array([1, 2, 3]), array([0.5, 1. , 1. ]), array([2., 1., 1.]))
    """
    sizes, coverage, counts = _strata(y_true, y_sets, sample_weight, labels)
    return SizeStratifiedCoverage(sizes=sizes, coverage=coverage, counts=counts)


@host_array_api("y_sets")
@validate_params(
    {
        **_SET_CONSTRAINTS,
        "min_fraction": [Interval(Real, 0, 1, closed="left")],
    },
    prefer_skip_nested_validation=True,
)
def size_stratified_coverage_score(
    y_true, y_sets, *, labels=None, sample_weight=None, min_fraction=0.0
):
    """Worst coverage over the set sizes (size-stratified coverage, SSC).

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True class labels.
    y_sets : array-like of shape (n_samples, n_classes[, n_alpha])
        Boolean prediction sets, one column per class in the order of
        ``labels``; 3-D: one set per level (last axis).
    labels : array-like of shape (n_classes,), default=None
        Class labels of the columns (see :func:`set_coverage_score`).
    sample_weight : array-like of shape (n_samples,), default=None
        Sample weights.
    min_fraction : float in [0, 1), default=0.0
        Leave out the sizes that hold less than this fraction of the total
        weight (a stratum of three samples has a coverage of 0, 1/3, 2/3 or
        1 whatever the method).

    Returns
    -------
    score : float or ndarray of shape (n_alpha,)
        The smallest coverage of :func:`size_stratified_coverage` among the
        sizes kept (one per level for 3-D ``y_sets``); higher is better, a
        method with conditional coverage reaches ``1 - alpha``. NaN when no
        size holds ``min_fraction`` of the weight. 0 whenever an empty set
        is kept.

    See Also
    --------
    size_stratified_coverage : Coverage, counts and sizes of every stratum.
    set_coverage_score : Marginal coverage.

    Notes
    -----
    :math:`\\mathrm{SSC} = \\min_{s : W_s \\ge f W} \\mathrm{coverage}_s`,
    with :math:`W_s` the weight of the sets of size :math:`s`, :math:`W`
    the total and :math:`f` ``min_fraction`` (Angelopoulos et al. 2021 group
    sizes into bins; here every size is its own stratum).

    References
    ----------
    .. [1] A. N. Angelopoulos, S. Bates, J. Malik and M. I. Jordan,
       "Uncertainty sets for image classifiers using conformal prediction",
       ICLR 2021.

    Examples
    --------
    >>> from skcalib.metrics import size_stratified_coverage_score
    >>> sets = [[True, False, False], [False, True, False],
    ...         [True, False, False], [True, True, False]]
    >>> y = [0, 1, 0, 2]  # the sets of one class cover; the one of two does not
    >>> size_stratified_coverage_score(y, sets, labels=[0, 1, 2])
    0.0
    >>> size_stratified_coverage_score(y, sets, labels=[0, 1, 2],
    ...                                min_fraction=0.5)  # size 1 only
    1.0
    """
    _, coverage, counts = _strata(y_true, y_sets, sample_weight, labels)
    total = counts.sum(axis=0)
    keep = (counts > 0) & (counts >= min_fraction * total * (1 - 1e-12))
    masked = np.where(keep, coverage, np.inf)
    worst = masked.min(axis=0)
    worst = np.where(np.isinf(worst), np.nan, worst)
    return float(worst) if np.ndim(worst) == 0 else worst
