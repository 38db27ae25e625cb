"""The kernel calibration error and its calibration tests.

The squared kernel calibration error (SKCE) of Widmann, Lindsten and
Zachariah (2019) measures the calibration of all ``K`` probabilities at
once, without bins; its biased estimator (SKCE_b), its unbiased quadratic
estimator (SKCE_uq) and its unbiased linear-time estimator (SKCE_ul) are
the metric :func:`kernel_calibration_error`, and
:func:`kernel_calibration_test` turns them into tests of the hypothesis of
calibration. The arithmetic lives in :mod:`skcalib.metrics._kernel_core`,
the distribution-free and asymptotic p-values in
:mod:`skcalib.metrics._kernel_pvalues`.
"""

from numbers import Integral, Real

import numpy as np
from scipy.stats import norm
from sklearn.utils import check_random_state

from skcalib._core.compat import Interval, StrOptions, validate_params
from skcalib._core.inputs import COMMON_CONSTRAINTS, check_metric_inputs
from skcalib._core.xp import host_array_api
from skcalib.metrics._kernel_core import (
    METRICS,
    biased_from_sums,
    canonical_order,
    linear_terms,
    median_bandwidth,
    quadratic_sums,
    resampled_linear,
    resampled_quadratic,
)
from skcalib.metrics._kernel_pvalues import (
    bootstrap_quadratic_null,
    distribution_free_pvalue,
)
from skcalib.metrics._tests_result import CalibrationTestResult

__all__ = ["kernel_calibration_error", "kernel_calibration_test"]

#: Every accepted ``estimator`` string and the estimator it names: the
#: descriptive names, the paper's names and the short names of skcalib 0.x.
ESTIMATORS = {
    "biased": "biased",
    "SKCE_b": "biased",
    "unbiased_quadratic": "unbiased_quadratic",
    "SKCE_uq": "unbiased_quadratic",
    "quadratic": "unbiased_quadratic",
    "unbiased_linear": "unbiased_linear",
    "SKCE_ul": "unbiased_linear",
    "linear": "unbiased_linear",
}
PAPER_NAMES = {
    "biased": "SKCE_b",
    "unbiased_quadratic": "SKCE_uq",
    "unbiased_linear": "SKCE_ul",
}
KERNEL_CONSTRAINTS = {
    **COMMON_CONSTRAINTS,
    "estimator": [StrOptions(set(ESTIMATORS))],
    "kernel": [StrOptions(set(METRICS))],
    "bandwidth": [
        StrOptions({"median", "median_all"}),
        Interval(Real, 0, None, closed="neither"),
    ],
}

_PARAMS_DOC = """\
    y_true : array-like of shape (n_samples,)
        True class labels (integers or strings).
    y_proba : array-like of shape (n_samples,) or (n_samples, n_classes)
        Predicted probabilities. 1-D: probability of the positive class (the
        larger label, or ``labels[1]``), used as the two columns
        ``(1 - p, p)``. 2-D: one column per class in the order of
        ``labels``; rows must sum to 1.
    estimator : str, default=ESTIMATOR
        The estimator of [1]_, by its descriptive name or the paper's:

        - ``"unbiased_quadratic"`` (``"SKCE_uq"``, or ``"quadratic"``): the
          unbiased estimator, the mean of :math:`h_{ij}` over all pairs
          :math:`i < j`; :math:`O(n^2 K)` time (see Notes for measured
          times), computed in blocks of 256 rows (:math:`O(1)` extra
          memory).
        - ``"biased"`` (``"SKCE_b"``): the biased estimator, the mean of
          :math:`h_{ij}` over all :math:`n^2` ordered pairs, :math:`i = j`
          included; never negative; the same cost.
        - ``"unbiased_linear"`` (``"SKCE_ul"``, or ``"linear"``): the
          linear-time unbiased estimator, the mean over the disjoint pairs
          ``(0, 1), (2, 3), ...`` of the rows in their given order (a last
          odd row is left out); :math:`O(n K)`, but it depends on the row
          order and has a standard deviation of order :math:`n^{-1/2}`
          (against :math:`1/n` for SKCE_uq under calibration).

        The two quadratic-time estimators sum their rows in a canonical
        order (sorted lexicographically by :math:`(p_i, y_i)`), so that not
        even their rounding depends on the row order.
    kernel : {"euclidean", "tv"}, default="euclidean"
        The distance :math:`d` of the kernel
        :math:`k(p, p') = \\exp(-d(p, p') / \\nu)\\, I_K`.
        ``"euclidean"``: :math:`\\|p - p'\\|_2`. ``"tv"``: the total
        variation distance :math:`\\mathrm{TV}(p, p') = \\frac12 \\sum_k
        |p_k - p'_k|`, the kernel of the experiments of [1]_ (with
        ``bandwidth="median_all"`` to take their bandwidth exactly). Both
        kernels are bounded by 1 and characteristic, so the SKCE is 0
        exactly when the predictions are calibrated.
    bandwidth : "median", "median_all" or float > 0, default="median"
        The bandwidth :math:`\\nu` of the kernel (:math:`\\gamma` in the
        total variation kernel of the experiments of [1]_).
        ``"median"``: the median of the distances :math:`d(p_i, p_j)` over
        the pairs :math:`i < j`. ``"median_all"``: the median of all
        :math:`n^2` entries of the distance matrix, its :math:`n` zeros
        :math:`d(p_i, p_i)` included and every pair twice, as the code of
        the experiments of [1]_ computes it (a slightly lower quantile of
        the pair distances: rank :math:`(n^2/2 - n)/2` of the
        :math:`n(n-1)/2`). Both are exact up to 4096 rows; above, they are
        over the pairs of 4096 rows taken at evenly spaced ranks of the
        rows sorted lexicographically by their values (first column, ties
        by the next), never by their positions. Either way the bandwidth
        does not depend on the row order, and it depends on the
        predictions only, never on the labels (so the estimators stay
        unbiased under calibration and the tests keep their level). When
        the median is 0 (more than half of the distances are 0: tied
        predictions), it is the median of the positive distances; when
        every prediction is the same, 1.0 (the kernel is then 1 whatever
        the bandwidth, so the result does not depend on it; the paper's
        :math:`\\gamma = 0` would be undefined).
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
    :math:`k(p, p') = \\exp(-d(p, p') / \\nu)\\, I_K` (``kernel``: the
    Euclidean or the total variation distance on the simplex), the term of
    a pair of samples is

    .. math::

        h_{ij} = e^{-d(p_i, p_j) / \\nu}
        (e_{y_i} - p_i)^\\top (e_{y_j} - p_j),

    and the estimators of the squared kernel calibration error are

    .. math::

        \\widehat{\\mathrm{SKCE}}_{b} = \\frac{1}{n^2}
        \\sum_{i, j = 1}^{n} h_{ij}, \\qquad
        \\widehat{\\mathrm{SKCE}}_{uq} = \\binom{n}{2}^{-1}
        \\sum_{i < j} h_{ij}, \\qquad
        \\widehat{\\mathrm{SKCE}}_{ul} = \\frac{1}{\\lfloor n/2 \\rfloor}
        \\sum_{i=1}^{\\lfloor n/2 \\rfloor} h_{2i-1, 2i}.

    SKCE_uq and SKCE_ul are unbiased for the SKCE, which is 0 exactly when
    the predictions are calibrated (the kernel is characteristic), so
    either may be negative; SKCE_b is a squared norm, never negative, and
    biased upwards by the mean of its diagonal terms
    :math:`h_{ii} = \\|e_{y_i} - p_i\\|^2` divided by :math:`n`. SKCE_ul is
    a mean over disjoint pairs: its sums over chunks of even length add up
    to the sum over all the data (it can be computed chunk by chunk and
    merged); SKCE_uq and SKCE_b pair every row with every other and are not
    mergeable.

    Cost: the quadratic-time estimators evaluate the kernel on all
    :math:`n(n-1)/2` pairs. Measured times (``python -m
    benchmarks.bench_kernel_cost``: best of 3, one run at :math:`3 \\times
    10^4`) of the default (SKCE_uq, Euclidean kernel, median bandwidth)
    against SKCE_ul, with :math:`K = 10` classes, on a development machine
    of 2 CPU cores shared with other jobs (load average 3 to 6, so the wall
    times are inflated; CPU seconds of the process in parentheses):

    ========  =================  =================  ==============
    n         SKCE_uq            SKCE_uq, ``"tv"``  SKCE_ul
    ========  =================  =================  ==============
    1 000     0.19 s (0.13 s)    0.10 s (0.07 s)    0.01 s
    10 000    3.7 s (2.5 s)      7.5 s (5.0 s)      0.25 s (0.16 s)
    30 000    70 s (37 s)        98 s (52 s)        0.6 s (0.3 s)
    ========  =================  =================  ==============

    The time grows as :math:`n^2`: roughly 15 to 30 minutes at
    :math:`n = 2 \\times 10^5` on that machine (extrapolated). SKCE_ul, one
    argument away (``estimator="unbiased_linear"``), stays under a second.
    The estimator is never switched by size and no warning is raised: on
    large data choose SKCE_ul, or SKCE_uq on a random subsample of a few
    thousand rows."""

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


def _options(estimator, kernel, bandwidth):
    return {
        "estimator": ESTIMATORS[estimator],
        "kernel": kernel,
        "bandwidth": bandwidth,
    }


def _kernel_inputs(y_true, y_proba, sample_weight, labels, options):
    """Validated ``(P, y, nu)``: float64 ``(n, K)`` probabilities, label
    codes and the bandwidth; for the quadratic-time estimators the rows are
    put in their canonical order (:func:`canonical_order`), for the linear
    one they stay in their given order (its pairs). ``options`` holds the
    canonical ``estimator``, the ``kernel`` and the ``bandwidth``."""
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
    if options["estimator"] != "unbiased_linear":
        order = canonical_order(P, y)
        P, y = P[order], y[order]
    bandwidth = options["bandwidth"]
    if isinstance(bandwidth, str):
        diagonal = bandwidth == "median_all"
        nu = median_bandwidth(P, options["kernel"], diagonal=diagonal)
    else:
        nu = float(bandwidth)
    return P, y, nu


def _estimate(P, y, nu, estimator, metric):
    n = P.shape[0]
    if n < 2:
        raise ValueError(
            f"estimator={estimator!r} ({PAPER_NAMES[estimator]}) needs at least "
            f"2 samples (one pair); got {n}."
        )
    if estimator == "unbiased_linear":
        return float(linear_terms(P, y[:, None], nu, metric).mean())
    sums = quadratic_sums(P, y[:, None], nu, metric=metric)
    if estimator == "biased":
        return float(biased_from_sums(sums, P, y[:, None])[0])
    return float(sums[0] / (n * (n - 1) / 2))


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
    kernel="euclidean",
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

    The estimators and the kernel of the experiments of [1]_ (total
    variation distance, the median of the whole distance matrix); SKCE_ul,
    a mean of only 250 pair terms, is noisy (negative here):

    >>> tv = dict(kernel="tv", bandwidth="median_all")
    >>> for estimator in ("SKCE_b", "SKCE_uq", "SKCE_ul"):
    ...     print(estimator, round(kernel_calibration_error(
    ...         y, sharp, estimator=estimator, **tv), 5))
    SKCE_b 0.00893
    SKCE_uq 0.00788
    SKCE_ul -0.00447
    """
    options = _options(estimator, kernel, bandwidth)
    P, y, nu = _kernel_inputs(y_true, y_proba, sample_weight, labels, options)
    return _estimate(P, y, nu, options["estimator"], kernel)


@host_array_api("y_proba")
@_doc("linear")
@validate_params(
    {
        **KERNEL_CONSTRAINTS,
        "method": [
            StrOptions({"asymptotic", "bootstrap", "distribution_free"}),
            None,
        ],
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
    kernel="euclidean",
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
    method : {"asymptotic", "bootstrap", "distribution_free"} or None, \
default=None
        How the p-value is computed.

        - ``"distribution_free"`` (every estimator): the bounds of [1]_,
          valid at every ``n`` for any distribution, and conservative (far
          below the level; they need large miscalibration or large ``n``
          to reject). With :math:`B = 2` the bound of :math:`|h_{ij}|`,
          SKCE_b: :math:`\\exp(-\\max(0, \\sqrt{n \\widehat{\\mathrm{SKCE}}_b
          / B} - 1)^2 / 2)` (McDiarmid's inequality); SKCE_uq and SKCE_ul:
          :math:`\\exp(-\\lfloor n/2 \\rfloor t^2 / (2 B^2))` at
          :math:`t = \\max(\\widehat{\\mathrm{SKCE}}, 0)` (Hoeffding's
          inequality; the bound holds for :math:`t > 0`, so a negative
          estimate gets 1).
        - ``"asymptotic"``: SKCE_ul, the normal approximation of
          :math:`\\sqrt{m}\\, \\widehat{\\mathrm{SKCE}}_{ul} / \\hat\\sigma`
          (:math:`m = \\lfloor n/2 \\rfloor` pair terms of sample standard
          deviation :math:`\\hat\\sigma`); SKCE_uq, its asymptotic null
          distribution (a weighted sum of centred chi-squares) approximated
          as in [1]_ by the bootstrap of the degenerate U-statistic
          (Arcones and Gine [3]_): ``n_resamples`` samples drawn with
          replacement from the rows, each scored with the centred term
          :math:`h_{ab} - g_a - g_b + \\widehat{\\mathrm{SKCE}}_b`
          (:math:`g` the row means of the :math:`n \\times n` term matrix),
          p-value ``(1 + #{U* >= SKCE_uq}) / (1 + n_resamples)``. Not for
          SKCE_b.
        - ``"bootstrap"`` (every estimator): consistency resampling [2]_,
          the estimator recomputed on ``n_resamples`` label vectors drawn
          from the predictions themselves,
          :math:`y^*_i \\sim \\mathrm{Categorical}(p_i)` (the null
          distribution given the predictions, with the same kernel), and the
          p-value ``(1 + #{T* >= T}) / (1 + n_resamples)``, valid at any
          ``n``.
        - None: ``"asymptotic"`` for SKCE_ul, ``"bootstrap"`` for SKCE_uq
          and SKCE_b.

        The default estimator of the test is the linear one (:math:`O(n)`,
        with a normal limit); the quadratic ones are more powerful at the
        same ``n`` but cost :math:`O(n^2 K)` per resample.
    n_resamples : int, default=1000
        Number of resamples of ``method="bootstrap"`` and of the asymptotic
        test of SKCE_uq (:math:`O(n^2 K)` each for the quadratic
        estimators; the bootstrap of the degenerate U-statistic computes the
        term matrix once per batch of resamples and costs
        :math:`O(n^2)` multiply-adds per resample).
    random_state : int, RandomState instance or None, default=None
        Seed of the resampling (unused by the normal approximation and the
        distribution-free bounds).

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

    The asymptotic test of SKCE_ul needs :math:`n \\ge 4`; its level is
    accurate from a few hundred samples, slightly conservative (the pair
    terms are skewed): on calibrated Dirichlet(1, 1, 1, 1) predictions it
    rejects 4.1% at :math:`n = 500` and 4.5% at :math:`n = 2000` at level
    5% (4000 seeds). The size of every estimator and method at
    :math:`n = 500` and 2000 is checked over 400 seeds by a slow test of
    skcalib's test suite. Consistency resampling assumes only that the
    samples are independent given the predictions; it tests the
    calibration of the predictions as given (a bandwidth from the median
    heuristic depends on the predictions only, so it is the same for every
    resample). Its draws are made row by row, in the canonical row order
    for SKCE_uq and SKCE_b (so a seed gives the same p-value to permuted
    rows) and in the given order for SKCE_ul (which itself depends on the
    row order). The bootstrap of the degenerate U-statistic is
    asymptotic: it approximates the limit law of :math:`n\\,
    \\widehat{\\mathrm{SKCE}}_{uq}`, while consistency resampling gives
    the exact null distribution given the predictions.

    Power: SKCE_ul has a standard deviation of order :math:`n^{-1/2}`,
    SKCE_uq of order :math:`1/n` under calibration, so the quadratic test
    is far more powerful at the same ``n``: against temperature 1.5 on
    three classes, the linear test rejects 7% of the time at
    :math:`n = 1000` and 20% at :math:`n = 10^4`, the quadratic one always
    at :math:`n = 1000` (a slow test of skcalib's test suite).

    A small p-value says the data are unlikely under calibration, not that
    the miscalibration matters: report ``effect`` beside it.

    References
    ----------
    {references}
    .. [2] J. Vaicenavicius et al., "Evaluating model calibration in
       classification", AISTATS 2019 (consistency resampling).
    .. [3] M. A. Arcones and E. Gine, "On the bootstrap of U and V
       statistics", The Annals of Statistics 20(2), 1992.

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

    The tests of [1]_ with its kernel, on the same 300 rows (the
    distribution-free bound is far too conservative to reject here):

    >>> for method in ("asymptotic", "distribution_free"):
    ...     r = kernel_calibration_test(
    ...         y[:300], sharp[:300], estimator="SKCE_uq", method=method,
    ...         kernel="tv", bandwidth="median_all", random_state=0)
    ...     print(method, round(r.pvalue, 4))
    asymptotic 0.001
    distribution_free 0.996
    """
    options = _options(estimator, kernel, bandwidth)
    estimator = options["estimator"]
    P, y, nu = _kernel_inputs(y_true, y_proba, sample_weight, labels, options)
    if method is None:
        method = "asymptotic" if estimator == "unbiased_linear" else "bootstrap"
    name = f"{PAPER_NAMES[estimator]}, {_KERNEL_WORDS[kernel]}, bandwidth {nu:.4g}"
    if method == "asymptotic" and estimator == "unbiased_linear":
        statistic, pvalue, how = _linear_asymptotic(P, y, nu, kernel)
    elif method == "asymptotic" and estimator == "biased":
        raise ValueError(
            "method='asymptotic' is for the unbiased estimators (a normal limit "
            "for 'unbiased_linear', a bootstrapped chi-squares mixture for "
            "'unbiased_quadratic'); for estimator='biased' (SKCE_b) use "
            "method='bootstrap' (consistency resampling) or "
            "method='distribution_free'."
        )
    else:
        statistic = _estimate(P, y, nu, estimator, kernel)
        pvalue, how = _resampled_pvalue(
            P, y, nu, statistic, method, options, n_resamples, random_state
        )
    return CalibrationTestResult(
        statistic=statistic,
        pvalue=pvalue,
        method=f"kernel calibration test ({name}), {how}",
        n_samples=P.shape[0],
        effect=float(np.sqrt(max(statistic, 0.0))),
        effect_name="kernel calibration error sqrt(max(SKCE, 0))",
    )


_KERNEL_WORDS = {"euclidean": "Euclidean kernel", "tv": "total variation kernel"}


def _resampled_pvalue(P, y, nu, statistic, method, options, n_resamples, seed):
    """The p-value and its words for the distribution-free bounds, the
    bootstrap of the degenerate SKCE_uq and consistency resampling."""
    estimator, metric = options["estimator"], options["kernel"]
    n = P.shape[0]
    if method == "distribution_free":
        bound = distribution_free_pvalue(statistic, n, estimator)
        return bound, "distribution-free bound (Widmann et al. 2019)"
    rng = check_random_state(seed)
    if method == "asymptotic":  # unbiased_quadratic
        null = bootstrap_quadratic_null(P, y, nu, metric, n_resamples, rng)
        how = (
            f"asymptotic null approximated by the bootstrap of the degenerate "
            f"U-statistic ({n_resamples} resamples of the rows)"
        )
    else:
        if estimator == "unbiased_linear":
            null = resampled_linear(P, nu, n_resamples, rng, metric)
        else:
            biased = estimator == "biased"
            null = resampled_quadratic(P, nu, n_resamples, rng, metric, biased)
        how = f"consistency resampling ({n_resamples} label draws from the predictions)"
    pvalue = float((1 + np.count_nonzero(null >= statistic)) / (1 + n_resamples))
    return pvalue, how


def _linear_asymptotic(P, y, nu, metric):
    """SKCE_ul, its one-sided normal p-value and the method's words."""
    if P.shape[0] < 4:
        raise ValueError(
            "method='asymptotic' needs at least 4 samples (two pairs) to "
            f"estimate the variance; got {P.shape[0]}."
        )
    terms = linear_terms(P, y[:, None], nu, metric)[:, 0]
    statistic = float(terms.mean())
    sd = float(terms.std(ddof=1))
    if sd > 0:
        pvalue = float(norm.sf(np.sqrt(terms.size) * statistic / sd))
    else:
        pvalue = 1.0 if statistic <= 0 else 0.0
    return statistic, pvalue, "normal approximation of sqrt(m) SKCE_ul / sd"
