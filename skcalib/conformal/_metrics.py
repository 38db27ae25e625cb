"""Metrics of prediction sets: coverage and size."""

import numpy as np
from sklearn.utils import check_array

from skcalib._core.compat import validate_params
from skcalib._core.inputs import _check_y, _resolve_classes, check_sample_weight
from skcalib._core.labels import encode as _encode
from skcalib._core.xp import host_array_api

__all__ = ["classwise_set_coverage", "mean_set_size", "set_coverage_score"]


def check_sets(y_sets):
    """Validate a prediction-set matrix: 2-D, at least 2 columns, boolean.

    Booleans are taken as given; integer or float arrays are accepted when
    they hold only 0 and 1 (e.g. sets read from a file). Anything else (for
    instance probabilities passed by mistake) is a ``ValueError`` naming the
    first offending entry.
    """
    sets = check_array(
        y_sets,
        ensure_2d=False,
        dtype=None,
        ensure_all_finite=False,
        input_name="y_sets",
    )
    if sets.ndim != 2:
        raise ValueError(
            "y_sets must be a 2-D boolean array of shape (n_samples, n_classes), "
            f"got shape {sets.shape}."
        )
    if sets.shape[1] < 2:
        raise ValueError(
            "y_sets must have one column per class (at least 2), got shape "
            f"{sets.shape}."
        )
    if sets.dtype == bool:
        return sets
    if sets.dtype.kind not in "iuf":
        raise ValueError(
            f"y_sets must be boolean (or hold only 0 and 1), got dtype {sets.dtype}."
        )
    bad = (sets != 0) & (sets != 1)
    if bad.any():
        i, j = (int(v) for v in np.argwhere(bad)[0])
        raise ValueError(
            "y_sets must be boolean (or hold only 0 and 1); "
            f"y_sets[{i}, {j}] = {sets[i, j].item()!r}. Pass prediction sets "
            "(e.g. ConformalClassifier.predict_set), not probabilities."
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
    return sets[np.arange(codes.size), codes]


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
    y_sets : array-like of shape (n_samples, n_classes)
        Boolean prediction sets, one column per class in the order of
        ``labels`` (as returned by
        :meth:`~skcalib.calibration.ConformalClassifier.predict_set`); 0/1
        integers are accepted.
    labels : array-like of shape (n_classes,), default=None
        Class labels of the columns; default: the sorted labels of
        ``y_true``, which must then hold every class (else pass ``labels=``:
        the columns are never guessed). A label of ``y_true`` not in
        ``labels`` is an error.
    sample_weight : array-like of shape (n_samples,), default=None
        Sample weights.

    Returns
    -------
    coverage : float
        In ``[0, 1]``. A conformal predictor at level ``alpha`` has an
        expected coverage of at least ``1 - alpha``.

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
    """
    sets, codes, weight, _ = _check_set_inputs(y_true, y_sets, sample_weight, labels)
    covered = _covered(sets, codes)
    if weight is None:
        return float(covered.mean())
    return float(np.dot(weight, covered) / weight.sum())


@host_array_api("y_sets")
@validate_params(_SET_CONSTRAINTS, prefer_skip_nested_validation=True)
def classwise_set_coverage(y_true, y_sets, *, labels=None, sample_weight=None):
    """Coverage within each class: the fraction of its samples whose set holds it.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True class labels.
    y_sets : array-like of shape (n_samples, n_classes)
        Boolean prediction sets, one column per class in the order of
        ``labels``.
    labels : array-like of shape (n_classes,), default=None
        Class labels of the columns (see :func:`set_coverage_score`).
    sample_weight : array-like of shape (n_samples,), default=None
        Sample weights.

    Returns
    -------
    coverage : ndarray of shape (n_classes,)
        Coverage of each class, in the order of the columns; NaN for a class
        with no sample (or zero total weight) in ``y_true``.

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
        covered *= weight
    hits = np.bincount(codes, weights=covered, minlength=k)
    totals = np.bincount(codes, weights=weight, minlength=k).astype(np.float64)
    out = np.full(k, np.nan)
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
    y_sets : array-like of shape (n_samples, n_classes)
        Boolean prediction sets (0/1 integers are accepted).
    sample_weight : array-like of shape (n_samples,), default=None
        Sample weights.

    Returns
    -------
    size : float
        In ``[0, n_classes]``; lower is better at equal coverage (empty sets
        count as 0).

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
    sizes = np.count_nonzero(sets, axis=1)
    if weight is None:
        return float(sizes.mean())
    return float(np.dot(weight, sizes) / weight.sum())
