"""Calibration tests with p-values: Spiegelhalter's Z test, Hosmer-Lemeshow,
the cumulative-differences (Kolmogorov-Smirnov and Kuiper) tests, each
binary or one-vs-rest per class with a multiplicity correction, and the
Kolmogorov-Smirnov calibration error.

Weights are relative (importance) weights: multiplying them by a constant
changes nothing, and the variances under calibration use their squares
(``sum w**2 p (1 - p)``, Kish's effective sample size), as the debiased ECE
does; so an integer weight is not a repeated row (a weight of 2 is one
observation that counts twice, whose variance is four times one row's).
"""

from numbers import Integral

import numpy as np
from scipy.stats import chi2, norm

from skcalib._core.binning import assign_bins, bin_edges, bin_sums
from skcalib._core.compat import Interval, StrOptions, validate_params
from skcalib._core.inputs import COMMON_CONSTRAINTS, KINDS, check_metric_inputs
from skcalib._core.top1 import top1
from skcalib._core.xp import host_array_api
from skcalib.metrics._calibration_tests_cumulative import (
    cumulative_summary,
    kolmogorov_sf,
    ks_error,
    kuiper_sf,
)
from skcalib.metrics._tests_result import CalibrationTestResult

__all__ = [
    "cumulative_calibration_test",
    "hosmer_lemeshow_test",
    "ks_calibration_error",
    "spiegelhalter_test",
]

CORRECTIONS = ("holm", "bonferroni")
TEST_CONSTRAINTS = {
    **COMMON_CONSTRAINTS,
    "correction": [StrOptions(set(CORRECTIONS))],
}


def adjust_pvalues(pvalues, correction):
    """Holm's step-down or Bonferroni's adjusted p-values (family-wise error
    control over the ``K`` hypotheses, any dependence between them)."""
    p = np.asarray(pvalues, dtype=np.float64)
    m = p.size
    if correction == "bonferroni":
        return np.minimum(1.0, m * p)
    order = np.argsort(p, kind="stable")
    stepped = np.maximum.accumulate((m - np.arange(m)) * p[order])
    adjusted = np.empty_like(p)
    adjusted[order] = np.minimum(1.0, stepped)
    return adjusted


def _run(binary_test, y_true, y_proba, sample_weight, labels, correction):
    """A binary test on binary input, else one-vs-rest on every class with
    the multiplicity correction (the combined p-value rejects "every class
    is calibrated" when some adjusted p-value is at most the level)."""
    inputs = check_metric_inputs(
        y_true, y_proba, sample_weight=sample_weight, labels=labels
    )
    w = inputs.sample_weight
    proba = inputs.proba
    if proba.ndim == 1 or proba.shape[1] == 2:
        s = proba if proba.ndim == 1 else proba[:, 1]
        return binary_test(inputs.y == 1, s, w)
    results = tuple(
        binary_test(inputs.y == k, proba[:, k], w) for k in range(proba.shape[1])
    )
    raw = np.array([r.pvalue for r in results])
    adjusted = adjust_pvalues(raw, correction)
    best = int(np.argmin(adjusted))
    effects = np.array([r.effect for r in results], dtype=np.float64)
    return CalibrationTestResult(
        statistic=results[best].statistic,
        pvalue=float(adjusted[best]),
        method=(
            f"one-vs-rest {results[0].method} for each of {len(results)} "
            f"classes, {correction} correction; statistic of the class of "
            "the smallest adjusted p-value"
        ),
        df=results[best].df,
        n_samples=results[0].n_samples,
        effect=float(effects[int(np.argmax(np.abs(effects)))]),
        effect_name=(
            f"{results[0].effect_name}, of the class where it is largest in "
            "absolute value"
        ),
        per_class_statistic=np.array([r.statistic for r in results]),
        per_class_pvalue=raw,
        per_class_effect=effects,
        pvalues_adjusted=adjusted,
        correction=correction,
    )


def _spiegelhalter(alternative):
    def test(y, s, w):
        s = np.asarray(s, dtype=np.float64)
        slope = 1.0 - 2.0 * s
        excess = (y - s) * slope
        var_terms = slope * slope * s * (1.0 - s)
        if w is not None:
            excess, var_terms = excess * w, var_terms * (w * w)
        total = float(excess.sum())
        sd = float(np.sqrt(var_terms.sum()))
        z = (
            total / sd
            if sd > 0
            else (0.0 if total == 0 else np.copysign(np.inf, total))
        )
        if alternative == "two-sided":
            p = 2.0 * norm.sf(abs(z))
        else:
            p = norm.sf(z) if alternative == "greater" else norm.cdf(z)
        weight = y.size if w is None else float(w.sum())
        return CalibrationTestResult(
            statistic=float(z),
            pvalue=float(min(1.0, p)),
            method=f"Spiegelhalter's Z test ({alternative}, normal approximation)",
            n_samples=int(y.size),
            effect=total / weight,
            effect_name="Brier score minus its expected value under calibration",
        )

    return test


@host_array_api("y_proba")
@validate_params(
    {
        **TEST_CONSTRAINTS,
        "alternative": [StrOptions({"two-sided", "greater", "less"})],
    },
    prefer_skip_nested_validation=True,
)
def spiegelhalter_test(
    y_true,
    y_proba,
    *,
    alternative="two-sided",
    correction="holm",
    sample_weight=None,
    labels=None,
):
    """Test calibration with Spiegelhalter's Z statistic.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True class labels.
    y_proba : array-like of shape (n_samples,) or (n_samples, n_classes)
        Predicted probabilities: 1-D (positive class) or one column per
        class in the order of ``labels``. More than two columns: one test
        per class (one-vs-rest, ``p_k`` against ``y == k``).
    alternative : {"two-sided", "greater", "less"}, default="two-sided"
        ``"greater"``: the Brier score is larger than calibration expects
        (MAPIE's ``spiegelhalter_p_value`` is this one-sided p-value).
    correction : {"holm", "bonferroni"}, default="holm"
        Multiplicity correction over the classes (more than two columns).
    sample_weight : array-like of shape (n_samples,), default=None
        Relative weights (their scale does not matter; see the module
        notes: a weight of 2 is not a repeated row).
    labels : array-like of shape (n_classes,), default=None
        The labels of the columns of ``y_proba``.

    Returns
    -------
    result : CalibrationTestResult
        ``effect``: the Brier score minus its expected value under
        calibration (``mean((y - p)(1 - 2p))``, the numerator over ``n``).

    See Also
    --------
    cumulative_calibration_test : A test that sees every miscalibration.

    Notes
    -----
    Under calibration, the Brier score ``B = mean((y - p)**2)`` has
    expectation ``mean(p (1 - p))``; their difference,
    ``sum (y - p)(1 - 2p)``, divided by its standard deviation
    ``sqrt(sum (1 - 2p)**2 p (1 - p))`` is asymptotically standard normal
    (weighted: ``w (y - p)(1 - 2p)`` and ``w**2 (1 - 2p)**2 p (1 - p)``).
    It is blind to miscalibration that does not change the Brier score in
    expectation (the weight ``1 - 2p`` vanishes at ``p = 1/2``, and
    over- and under-confidence on either side can cancel).

    References
    ----------
    .. [1] D. J. Spiegelhalter, "Probabilistic prediction in patient
       management and clinical trials", Statistics in Medicine 5(5),
       421-433, 1986.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib.metrics import spiegelhalter_test
    >>> y = np.array([1, 0, 1, 0, 1, 0])
    >>> p = np.array([0.8, 0.3, 0.5, 0.5, 0.7, 0.1])
    >>> round(spiegelhalter_test(y, p).pvalue, 4)
    0.3029
    """
    test = _spiegelhalter(alternative)
    return _run(test, y_true, y_proba, sample_weight, labels, correction)


def _hosmer_lemeshow(n_groups, ddof):
    def test(y, s, w):
        edges = bin_edges(s, n_groups, "quantile", w)
        ids = assign_bins(s, edges)
        count, observed, expected = bin_sums(ids, edges.size - 1, w, y, s)
        keep = count > 0
        count, observed, expected = count[keep], observed[keep], expected[keep]
        # sum of squared weights per group (the count without weights)
        squares = count if w is None else bin_sums(ids, edges.size - 1, w * w)[0]
        squares = squares[keep]
        df = count.size - ddof
        if df < 1:
            raise ValueError(
                f"The Hosmer-Lemeshow test has {count.size} non-empty groups "
                f"and ddof={ddof}: no degree of freedom is left; use more "
                "distinct probabilities, more groups or a smaller ddof."
            )
        mean = expected / count
        var = squares * mean * (1.0 - mean)
        gap = observed - expected
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(var > 0, gap * gap / var, np.where(gap == 0, 0.0, np.inf))
        stat = float(terms.sum())
        return CalibrationTestResult(
            statistic=stat,
            pvalue=float(chi2.sf(stat, df)),
            method=(
                f"Hosmer-Lemeshow test, {count.size} groups by quantiles of "
                f"the probability, chi-squared with {df} df"
            ),
            df=float(df),
            n_samples=int(y.size),
            effect=float(np.abs(gap).sum() / count.sum()),
            effect_name="ECE over the Hosmer-Lemeshow groups",
        )

    return test


@host_array_api("y_proba")
@validate_params(
    {
        **TEST_CONSTRAINTS,
        "n_groups": [Interval(Integral, 2, None, closed="left")],
        "ddof": [Interval(Integral, 0, None, closed="left")],
    },
    prefer_skip_nested_validation=True,
)
def hosmer_lemeshow_test(
    y_true,
    y_proba,
    *,
    n_groups=10,
    ddof=0,
    correction="holm",
    sample_weight=None,
    labels=None,
):
    """Hosmer-Lemeshow goodness-of-fit test of calibration.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True class labels.
    y_proba : array-like of shape (n_samples,) or (n_samples, n_classes)
        Predicted probabilities (see :func:`spiegelhalter_test`).
    n_groups : int, default=10
        Number of groups ("deciles of risk"): equal-mass groups from the
        (weighted) quantiles of the probabilities, tied probabilities kept
        in one group (so fewer groups may result).
    ddof : int, default=0
        Degrees of freedom removed: ``df = groups - ddof``. 0 for
        predictions evaluated on data they were not fitted on (a test set,
        the output of a calibrator fitted elsewhere): ``df = groups``. 2
        for a logistic model fitted on the same data, Hosmer and Lemeshow's
        setting, where the fit uses two degrees of freedom; ``ddof=2`` on
        held-out predictions rejects calibrated ones too often (9.8%
        instead of 5% for 10 groups at ``n = 1000`` in a slow test of
        skcalib's test suite).
    correction : {"holm", "bonferroni"}, default="holm"
        Multiplicity correction over the classes (more than two columns).
    sample_weight : array-like of shape (n_samples,), default=None
        Relative weights (their scale does not matter; see the module
        notes: a weight of 2 is not a repeated row).
    labels : array-like of shape (n_classes,), default=None
        The labels of the columns of ``y_proba``.

    Returns
    -------
    result : CalibrationTestResult
        ``df`` holds the degrees of freedom; ``effect``: the expected
        calibration error over the groups (``sum |O_g - E_g| / n``).

    See Also
    --------
    cumulative_calibration_test : A test without groups.

    Notes
    -----
    ``C = sum_g (O_g - E_g)**2 / (E_g (1 - E_g / N_g))``, with ``N_g`` rows,
    ``O_g`` observed and ``E_g`` expected positives in group ``g``
    (weighted: ``N_g``, ``O_g``, ``E_g`` weighted sums, and the variance
    ``E_g (1 - E_g / N_g)`` becomes ``S_g m_g (1 - m_g)``, with ``m_g =
    E_g / N_g`` and ``S_g`` the sum of the squared weights), compared with
    a chi-squared distribution. Known caveats [2]_:

    - the p-value depends on the grouping: another ``n_groups`` (or
      another tie-breaking of the group boundaries in other software) can
      turn a rejection into an acceptance;
    - low power, against miscalibration that the groups average out and
      at small ``n``; at large ``n`` it rejects tiny miscalibration;
    - ties: with few distinct probabilities the groups are unequal or
      fewer (they are kept whole here, so the result does not depend on
      the row order), which changes ``df``;
    - the chi-squared reference is asymptotic: small expected counts
      (``E_g`` or ``N_g - E_g`` below about 5) make it unreliable.

    References
    ----------
    .. [1] D. W. Hosmer and S. Lemeshow, "Goodness of fit tests for the
       multiple logistic regression model", Communications in Statistics -
       Theory and Methods 9(10), 1043-1069, 1980.
    .. [2] D. W. Hosmer, T. Hosmer, S. Le Cessie and S. Lemeshow, "A
       comparison of goodness-of-fit tests for the logistic regression
       model", Statistics in Medicine 16(9), 965-980, 1997.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib.metrics import hosmer_lemeshow_test
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=500)
    >>> y = rng.uniform(size=500) < p
    >>> r = hosmer_lemeshow_test(y, p)
    >>> r.df, r.pvalue > 0.05
    (10.0, True)
    """
    test = _hosmer_lemeshow(n_groups, ddof)
    return _run(test, y_true, y_proba, sample_weight, labels, correction)


def _cumulative(statistic):
    def test(y, s, w):
        summary = cumulative_summary(y, s, w)
        if statistic == "ks":
            gap = max(summary.high, -summary.low)
            name, sf = "Kolmogorov-Smirnov", kolmogorov_sf
        else:
            gap = summary.high - summary.low
            name, sf = "Kuiper", kuiper_sf
        sd = np.sqrt(summary.variance)
        stat = gap / sd if sd > 0 else (0.0 if gap == 0 else np.inf)
        return CalibrationTestResult(
            statistic=float(stat),
            pvalue=float(sf(stat)[0]),
            method=(
                f"{name} test of the cumulative differences (Arrieta-Ibarra "
                "et al. 2022), asymptotic p-value"
            ),
            n_samples=int(y.size),
            effect=float(gap / summary.weight),
            effect_name=(
                "largest absolute cumulative difference (KS calibration error)"
                if statistic == "ks"
                else "range of the cumulative differences"
            ),
        )

    return test


@host_array_api("y_proba")
@validate_params(
    {**TEST_CONSTRAINTS, "statistic": [StrOptions({"ks", "kuiper"})]},
    prefer_skip_nested_validation=True,
)
def cumulative_calibration_test(
    y_true,
    y_proba,
    *,
    statistic="ks",
    correction="holm",
    sample_weight=None,
    labels=None,
):
    """Kolmogorov-Smirnov or Kuiper test of the cumulative differences.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True class labels.
    y_proba : array-like of shape (n_samples,) or (n_samples, n_classes)
        Predicted probabilities (see :func:`spiegelhalter_test`).
    statistic : {"ks", "kuiper"}, default="ks"
        The largest absolute cumulative difference (Kolmogorov-Smirnov,
        ECCE-MAD) or their range (Kuiper, ECCE-R), each divided by its
        standard deviation under calibration.
    correction : {"holm", "bonferroni"}, default="holm"
        Multiplicity correction over the classes (more than two columns).
    sample_weight : array-like of shape (n_samples,), default=None
        Relative weights (their scale does not matter; see the module
        notes: a weight of 2 is not a repeated row).
    labels : array-like of shape (n_classes,), default=None
        The labels of the columns of ``y_proba``.

    Returns
    -------
    result : CalibrationTestResult
        ``effect``: the unscaled statistic, on the probability scale (for
        ``"ks"`` the KS calibration error, :func:`ks_calibration_error`).

    See Also
    --------
    ks_calibration_error : The unscaled statistic as a metric.
    spiegelhalter_test : A test of the Brier score.

    Notes
    -----
    Sorted by probability, ``C_k = sum_{j <= k} w_j (y_j - p_j) / W`` and
    ``sigma = sqrt(sum w_j**2 p_j (1 - p_j)) / W``; the statistics are
    ``max_k |C_k| / sigma`` and ``(max_k C_k - min_k C_k) / sigma`` (``C_0
    = 0`` included), whose limits under calibration are the maximum of
    ``|B|`` and the range of a standard Brownian motion ``B`` on ``[0, 1]``
    [1]_ (Darling-Siegert and Feller series; not Kolmogorov's distribution
    :data:`scipy.stats.kstwobign`, which is that of a Brownian bridge).
    ``C`` is evaluated at the end of each run of tied probabilities, so
    the order inside a tie does not matter (MAPIE breaks ties with a random
    jitter of relative size 1e-8 instead, and evaluates its range without
    ``C_0``). The p-values are asymptotic: conservative at small ``n``.

    The statistic of consecutive sorted chunks merges exactly from small
    per-chunk summaries (total, largest and smallest prefix sums,
    variance); unsorted chunks do not merge (the order is global).

    References
    ----------
    .. [1] I. Arrieta-Ibarra, P. Gujral, J. Tannen, M. Tygert and C. Xu,
       "Metrics of calibration for probabilistic predictions", Journal of
       Machine Learning Research 23(351), 1-54, 2022.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib.metrics import cumulative_calibration_test
    >>> y = np.array([1, 0, 1, 0, 1, 0])
    >>> p = np.array([0.8, 0.3, 0.55, 0.5, 0.7, 0.1])
    >>> r = cumulative_calibration_test(y, p, statistic="kuiper")
    >>> round(r.statistic, 4), round(r.pvalue, 4), round(r.effect, 4)
    (0.8792, 0.9812, 0.1583)
    """
    test = _cumulative(statistic)
    return _run(test, y_true, y_proba, sample_weight, labels, correction)


def _ks_top_label(inputs, w):
    pred, conf = top1(inputs.proba)
    correct = pred == inputs.y
    weight = np.ones(pred.size) if w is None else w
    total, error = 0.0, 0.0
    for k in np.unique(pred):
        rows = pred == k
        mass = float(weight[rows].sum())
        if mass > 0:
            error += mass * ks_error(correct[rows], conf[rows], weight[rows])
            total += mass
    return error / total


@host_array_api("y_proba")
@validate_params(
    {**COMMON_CONSTRAINTS, "kind": [StrOptions(set(KINDS))]},
    prefer_skip_nested_validation=True,
)
def ks_calibration_error(
    y_true, y_proba, *, kind="confidence", sample_weight=None, labels=None
):
    """Kolmogorov-Smirnov calibration error (binning-free).

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True class labels.
    y_proba : array-like of shape (n_samples,) or (n_samples, n_classes)
        Predicted probabilities (1-D: positive class).
    kind : {"confidence", "top_label", "classwise"}, default="confidence"
        ``"confidence"``: top-1 probability against top-1 correctness [1]_.
        ``"top_label"``: the error of the confidence among the samples
        predicted ``k``, averaged with the fraction predicted ``k``.
        ``"classwise"``: the mean over classes of the error of ``p_k``
        against ``y == k``.
    sample_weight : array-like of shape (n_samples,), default=None
        Sample weights.
    labels : array-like of shape (n_classes,), default=None
        The labels of the columns of ``y_proba``.

    Returns
    -------
    error : float
        In ``[0, 1]``; 0 for calibrated predictions in the limit.

    See Also
    --------
    cumulative_calibration_test : Its test, with a p-value.
    expected_calibration_error : The binned error.

    Notes
    -----
    Sorted by the probability ``s``, ``max_k |sum_{j <= k} w_j (y_j - s_j)|
    / W``: the largest gap between the cumulative observed and predicted
    frequencies, without bins (ties in ``s`` taken whole). It is the
    ECCE-MAD of Arrieta-Ibarra et al. (2022), unscaled.

    References
    ----------
    .. [1] K. Gupta, A. Rahimi, T. Ajanthan, T. Mensink, C. Sminchisescu and
       R. Hartley, "Calibration of neural networks using splines", ICLR
       2021.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib.metrics import ks_calibration_error
    >>> y = np.array([0, 1, 1, 0])
    >>> p = np.array([0.2, 0.9, 0.6, 0.3])
    >>> round(ks_calibration_error(y, p, kind="classwise"), 4)
    0.125
    """
    inputs = check_metric_inputs(
        y_true, y_proba, sample_weight=sample_weight, labels=labels
    )
    w = inputs.sample_weight
    proba = inputs.proba
    if proba.ndim == 1 and kind == "confidence":
        p = proba.astype(np.float64)
        pred = p > 0.5  # the first column wins a tie at 1/2, as top1
        return float(ks_error(pred == inputs.y, np.where(pred, p, 1.0 - p), w))
    if proba.ndim == 1:
        proba = np.column_stack((1.0 - proba, proba))
        inputs = type(inputs)(inputs.y, proba, inputs.classes, w, inputs.weight_scale)
    if kind == "confidence":
        pred, conf = top1(proba)
        return float(ks_error(pred == inputs.y, conf, w))
    if kind == "top_label":
        return float(_ks_top_label(inputs, w))
    errors = [ks_error(inputs.y == k, proba[:, k], w) for k in range(proba.shape[1])]
    return float(np.mean(errors))
