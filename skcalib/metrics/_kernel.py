"""The kernel calibration error and its calibration tests.

The squared kernel calibration error (SKCE) of Widmann, Lindsten and
Zachariah (2019) measures the calibration of all ``K`` probabilities at
once, without bins; its unbiased quadratic estimator (SKCE_uq) and its
linear-time estimator (SKCE_ul) are the metric
:func:`kernel_calibration_error`, and :func:`kernel_calibration_test` turns
them into tests of the hypothesis of calibration. The arithmetic lives in
:mod:`skcalib.metrics._kernel_core`.
"""

from numbers import Integral, Real

import numpy as np
from scipy.stats import norm
from sklearn.utils import check_random_state

from skcalib._core.compat import Interval, StrOptions, validate_params
from skcalib._core.inputs import COMMON_CONSTRAINTS, check_metric_inputs
from skcalib._core.xp import host_array_api
from skcalib.metrics._kernel_core import (
    canonical_order,
    linear_terms,
    median_bandwidth,
    quadratic_sums,
    resampled_linear,
    resampled_quadratic,
)
from skcalib.metrics._tests_result import CalibrationTestResult

__all__ = ["kernel_calibration_error", "kernel_calibration_test"]

ESTIMATORS = ("quadratic", "linear")
KERNEL_CONSTRAINTS = {
    **COMMON_CONSTRAINTS,
    "estimator": [StrOptions(set(ESTIMATORS))],
    "bandwidth": [StrOptions({"median"}), Interval(Real, 0, None, closed="neither")],
}

_PARAMS_DOC = """\
    y_true : array-like of shape (n_samples,)
        True class labels (integers or strings).
    y_proba : array-like of shape (n_samples,) or (n_samples, n_classes)
        Predicted probabilities. 1-D: probability of the positive class (the
        larger label, or ``labels[1]``), used as the two columns
        ``(1 - p, p)``. 2-D: one column per class in the order of
        ``labels``; rows must sum to 1.
    estimator : {"quadratic", "linear"}, default=ESTIMATOR
        ``"quadratic"``: the unbiased estimator SKCE_uq, the mean of
        :math:`h_{ij}` over all pairs :math:`i < j` (:math:`O(n^2)` time,
        computed in blocks of 256 rows: :math:`O(1)` extra memory), summed
        with the rows in a canonical order (sorted lexicographically by
        :math:`(p_i, y_i)`), so that not even its rounding depends on the
        row order.
        ``"linear"``: the linear-time estimator SKCE_ul, the mean over the
        disjoint pairs ``(0, 1), (2, 3), ...`` of the rows in their given
        order (a last odd row is left out); it depends on the row order.
    bandwidth : "median" or float > 0, default="median"
        The bandwidth :math:`\\nu` of the kernel. ``"median"``: the median
        of the distances :math:`\\|p_i - p_j\\|` over all pairs of rows,
        exactly, up to 4096 rows; above, over the pairs of 4096 rows taken
        at evenly spaced ranks of the rows sorted lexicographically by
        their values (first column, ties by the next), never by their
        positions. Either way it does not depend on the row order, and it
        depends on the predictions only, never on the labels (so the
        estimators stay unbiased under calibration and the tests keep
        their level).
    sample_weight : None
        Not supported (must be None): a weighted U-statistic is neither
        unbiased nor the metric of repeated rows (a repeated row pairs with
        itself), so no weighting is principled here.
    labels : array-like of shape (n_classes,), default=None
        Class labels of the columns of ``y_proba``; default: the sorted labels
        of ``y_true``, which must then name every column (otherwise a
        ``ValueError`` asks for ``labels=``; the columns are never guessed)."""

_NOTES_DOC = """\
    With the matrix-valued kernel
    :math:`k(p, p') = \\exp(-\\|p - p'\\| / \\nu)\\, I_K` (Euclidean
    distance on the simplex; the kernel of the experiments of [1]_), the
    term of a pair of samples is

    .. math::

        h_{ij} = e^{-\\|p_i - p_j\\| / \\nu}
        (e_{y_i} - p_i)^\\top (e_{y_j} - p_j),

    and the estimators of the squared kernel calibration error are

    .. math::

        \\widehat{\\mathrm{SKCE}}_{uq} = \\binom{n}{2}^{-1}
        \\sum_{i < j} h_{ij}, \\qquad
        \\widehat{\\mathrm{SKCE}}_{ul} = \\frac{1}{\\lfloor n/2 \\rfloor}
        \\sum_{i=1}^{\\lfloor n/2 \\rfloor} h_{2i-1, 2i}.

    Both are unbiased for the SKCE, which is 0 exactly when the predictions
    are calibrated (the kernel is characteristic), so either may be
    negative. SKCE_ul is a mean over disjoint pairs: its sums over chunks of
    even length add up to the sum over all the data (it can be computed
    chunk by chunk and merged); SKCE_uq pairs every row with every other and
    is not mergeable."""

_REFERENCES_DOC = """\
    .. [1] D. Widmann, F. Lindsten and D. Zachariah, "Calibration tests in
       multi-class classification: A unifying framework", NeurIPS 2019."""


def _doc(default_estimator):
    def decorate(func):
        func.__doc__ = (
            func.__doc__.replace("    {params}", _PARAMS_DOC)
            .replace("ESTIMATOR", f'"{default_estimator}"')
            .replace("    {notes}", _NOTES_DOC)
            .replace("    {references}", _REFERENCES_DOC)
        )
        return func

    return decorate


def _kernel_inputs(y_true, y_proba, sample_weight, labels, bandwidth, estimator):
    """Validated ``(P, y, nu)``: float64 ``(n, K)`` probabilities, label
    codes and the bandwidth; for the quadratic estimator the rows are put
    in their canonical order (:func:`canonical_order`), for the linear one
    they stay in their given order (its pairs)."""
    if sample_weight is not None:
        raise ValueError(
            "sample_weight is not supported by the kernel calibration error: "
            "its estimators are U-statistics over pairs of rows, and neither "
            "a weighted pair mean nor repeated rows keep them unbiased (a "
            "repeated row would pair with itself); pass sample_weight=None."
        )
    inputs = check_metric_inputs(y_true, y_proba, labels=labels)
    P = np.asarray(inputs.proba, dtype=np.float64)
    if P.ndim == 1:
        P = np.column_stack([1.0 - P, P])
    y = inputs.y.astype(np.intp)
    if estimator == "quadratic":
        order = canonical_order(P, y)
        P, y = P[order], y[order]
    nu = median_bandwidth(P) if bandwidth == "median" else float(bandwidth)
    return P, y, nu


def _estimate(P, y, nu, estimator):
    n = P.shape[0]
    if estimator == "quadratic":
        if n < 2:
            raise ValueError("estimator='quadratic' needs at least 2 samples.")
        return float(quadratic_sums(P, y[:, None], nu)[0] / (n * (n - 1) / 2))
    if n < 2:
        raise ValueError("estimator='linear' needs at least 2 samples (one pair).")
    return float(linear_terms(P, y[:, None], nu).mean())


@host_array_api("y_proba")
@_doc("quadratic")
@validate_params(
    KERNEL_CONSTRAINTS,
    prefer_skip_nested_validation=True,
)
def kernel_calibration_error(
    y_true,
    y_proba,
    *,
    estimator="quadratic",
    bandwidth="median",
    sample_weight=None,
    labels=None,
):
    """Compute the squared kernel calibration error (SKCE) of Widmann et al.

    A binning-free measure of the calibration of the whole probability
    vector (not only of the confidence): 0 in expectation when the
    predictions are calibrated, positive otherwise. Its unbiased estimators
    may be slightly negative on calibrated data.

    Parameters
    ----------
    {params}

    Returns
    -------
    skce : float
        The estimate of the squared kernel calibration error (in squared
        probability units; ``sqrt(max(skce, 0))`` is on the probability
        scale).

    See Also
    --------
    kernel_calibration_test : The test of calibration built on it.
    expected_calibration_error : The binned confidence error.

    Notes
    -----
    {notes}

    References
    ----------
    {references}

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib.metrics import kernel_calibration_error
    >>> rng = np.random.default_rng(0)
    >>> p = rng.dirichlet([1.0, 1.0, 1.0], size=500)
    >>> y = (rng.random((500, 1)) > p.cumsum(axis=1)).sum(axis=1)  # y ~ p
    >>> round(kernel_calibration_error(y, p), 5)
    0.00036
    >>> sharp = p**3 / (p**3).sum(axis=1, keepdims=True)  # overconfident
    >>> round(kernel_calibration_error(y, sharp), 5)
    0.00791
    """
    P, y, nu = _kernel_inputs(
        y_true, y_proba, sample_weight, labels, bandwidth, estimator
    )
    return _estimate(P, y, nu, estimator)


@host_array_api("y_proba")
@_doc("linear")
@validate_params(
    {
        **KERNEL_CONSTRAINTS,
        "method": [StrOptions({"asymptotic", "bootstrap"}), None],
        "n_resamples": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def kernel_calibration_test(
    y_true,
    y_proba,
    *,
    estimator="linear",
    method=None,
    n_resamples=1000,
    bandwidth="median",
    random_state=None,
    sample_weight=None,
    labels=None,
):
    """Test the hypothesis of calibration with the kernel calibration error.

    The hypothesis is that the predictions are calibrated,
    :math:`P(Y = k \\mid p(X)) = p_k(X)` for every class; it is rejected
    for large values of the SKCE estimate (one-sided: miscalibration makes
    the SKCE positive).

    Parameters
    ----------
    {params}
    method : {"asymptotic", "bootstrap"} or None, default=None
        How the p-value is computed. ``"asymptotic"`` (linear estimator
        only): the normal approximation of
        :math:`\\sqrt{m}\\, \\widehat{\\mathrm{SKCE}}_{ul} / \\hat\\sigma`
        (:math:`m = \\lfloor n/2 \\rfloor` pair terms of sample standard
        deviation :math:`\\hat\\sigma`). ``"bootstrap"``: consistency
        resampling, the estimator recomputed on ``n_resamples`` label
        vectors drawn from the predictions themselves,
        :math:`y^*_i \\sim \\mathrm{Categorical}(p_i)` (the null
        distribution given the predictions, with the same kernel), and the
        p-value ``(1 + #{T* >= T}) / (1 + n_resamples)``, valid at any
        ``n``. None: ``"asymptotic"`` for the linear estimator,
        ``"bootstrap"`` for the quadratic one (its null distribution is a
        weighted sum of chi-squares, with no closed form).
        The default estimator of the test is the linear one (:math:`O(n)`,
        with a normal limit); the quadratic one is more powerful at the same
        ``n`` but costs :math:`O(n^2 K)` per resample.
    n_resamples : int, default=1000
        Number of consistency resamples of ``method="bootstrap"``. The
        quadratic estimator costs :math:`O(n^2 K)` per resample.
    random_state : int, RandomState instance or None, default=None
        Seed of the consistency resampling (unused by the asymptotic test).

    Returns
    -------
    result : CalibrationTestResult
        ``statistic``: the SKCE estimate (as
        :func:`kernel_calibration_error`); ``pvalue``; ``method``;
        ``n_samples``; ``effect``: :math:`\\sqrt{\\max(\\mathrm{SKCE}, 0)}`,
        the kernel calibration error on the probability scale.

    See Also
    --------
    kernel_calibration_error : The estimate alone.

    Notes
    -----
    {notes}

    The asymptotic test needs :math:`n \\ge 4`; its level is accurate from
    a few hundred samples, slightly conservative (the pair terms are
    skewed): on calibrated Dirichlet(1, 1, 1, 1) predictions it rejects
    4.1% at :math:`n = 500` and 4.5% at :math:`n = 2000` at level 5%
    (4000 seeds). The size of every estimator and method at
    :math:`n = 500` and 2000 is checked over 400 seeds by a slow test of
    skcalib's test suite. Consistency resampling assumes only that the
    samples are independent given the predictions; it tests the
    calibration of the predictions as given (a bandwidth from the median
    heuristic depends on the predictions only, so it is the same for every
    resample). Its draws are made row by row, in the canonical row order
    for SKCE_uq (so a seed gives the same p-value to permuted rows) and in
    the given order for SKCE_ul (which itself depends on the row order).

    Power: SKCE_ul has a standard deviation of order :math:`n^{-1/2}`,
    SKCE_uq of order :math:`1/n` under calibration, so the quadratic test
    is far more powerful at the same ``n``: against temperature 1.5 on
    three classes, the linear test rejects 7% of the time at
    :math:`n = 1000` and 20% at :math:`n = 10^4`, the quadratic one always
    at :math:`n = 1000` (a slow test of skcalib's test suite). The
    quadratic estimator has no asymptotic test here: its limit under
    calibration is a weighted sum of chi-squares whose weights are unknown,
    while consistency resampling gives its exact null distribution given
    the predictions.

    A small p-value says the data are unlikely under calibration, not that
    the miscalibration matters: report ``effect`` beside it.

    References
    ----------
    {references}
    .. [2] J. Vaicenavicius et al., "Evaluating model calibration in
       classification", AISTATS 2019 (consistency resampling).

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib.metrics import kernel_calibration_test
    >>> rng = np.random.default_rng(0)
    >>> p = rng.dirichlet([1.0, 1.0, 1.0], size=2000)
    >>> y = (rng.random((2000, 1)) > p.cumsum(axis=1)).sum(axis=1)
    >>> kernel_calibration_test(y, p).reject(0.05)  # calibrated
    False
    >>> sharp = p**3 / (p**3).sum(axis=1, keepdims=True)  # overconfident
    >>> result = kernel_calibration_test(
    ...     y[:300], sharp[:300], estimator="quadratic", random_state=0)
    >>> result.pvalue < 0.01, round(result.effect, 3)
    (True, 0.121)
    """
    P, y, nu = _kernel_inputs(
        y_true, y_proba, sample_weight, labels, bandwidth, estimator
    )
    n = P.shape[0]
    if method is None:
        method = "asymptotic" if estimator == "linear" else "bootstrap"
    if method == "asymptotic":
        if estimator != "linear":
            raise ValueError(
                "method='asymptotic' is for estimator='linear' (a normal "
                "limit); the quadratic estimator's null distribution is a "
                "weighted sum of chi-squares: use method='bootstrap' "
                "(consistency resampling)."
            )
        statistic, pvalue, how = _linear_asymptotic(P, y, nu)
    else:
        statistic = _estimate(P, y, nu, estimator)
        rng = check_random_state(random_state)
        resample = resampled_linear if estimator == "linear" else resampled_quadratic
        null = resample(P, nu, n_resamples, rng)
        pvalue = float((1 + np.count_nonzero(null >= statistic)) / (1 + n_resamples))
        how = (
            f"kernel calibration test (SKCE_{'ul' if estimator == 'linear' else 'uq'}"
            f", bandwidth {nu:.4g}), consistency resampling ({n_resamples} "
            "label draws from the predictions)"
        )
    return CalibrationTestResult(
        statistic=statistic,
        pvalue=pvalue,
        method=how,
        n_samples=n,
        effect=float(np.sqrt(max(statistic, 0.0))),
        effect_name="kernel calibration error sqrt(max(SKCE, 0))",
    )


def _linear_asymptotic(P, y, nu):
    """SKCE_ul, its one-sided normal p-value and the method's words."""
    if P.shape[0] < 4:
        raise ValueError(
            "method='asymptotic' needs at least 4 samples (two pairs) to "
            f"estimate the variance; got {P.shape[0]}."
        )
    terms = linear_terms(P, y[:, None], nu)[:, 0]
    statistic = float(terms.mean())
    sd = float(terms.std(ddof=1))
    if sd > 0:
        pvalue = float(norm.sf(np.sqrt(terms.size) * statistic / sd))
    else:
        pvalue = 1.0 if statistic <= 0 else 0.0
    how = (
        f"kernel calibration test (SKCE_ul, bandwidth {nu:.4g}), normal "
        "approximation of sqrt(m) SKCE_ul / sd"
    )
    return statistic, pvalue, how
