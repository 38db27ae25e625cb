"""Calibration audit by subgroup: :func:`calibration_by_group`.

The sums that are additive over rows (counts, weights, accuracy, Brier,
NLL, and the per-bin totals of uniform bins) are computed for every group
at once: one ``np.unique(..., return_inverse=True)`` gives each row its
group, and one ``np.bincount`` per sum (cells ``group * n_bins + bin``)
gives them all. What has no grouped form runs once per group on the
group's rows, through the public metric functions: quantile edges (they
depend on the group's data), the CORP decomposition (a PAV fit), the ECE
interval (a bootstrap test inversion) and the calibration test.
"""

from numbers import Integral, Real

import numpy as np

from skcalib._core.binning import STRATEGIES, assign_bins, bin_edges, check_n_bins
from skcalib._core.compat import Interval, StrOptions, validate_params
from skcalib._core.inputs import MetricInputs, binary_column, check_metric_inputs
from skcalib._core.losses import sample_brier, sample_nll
from skcalib._core.top1 import top1
from skcalib._core.totals import Cells, cell_totals, reduce_totals, statistics
from skcalib.metrics import (
    calibration_error_interval,
    corp_decomposition,
    cumulative_calibration_test,
    hosmer_lemeshow_test,
    spiegelhalter_test,
)
from skcalib.metrics._calibration_tests import adjust_pvalues
from skcalib.metrics._curve import curve_from_totals
from skcalib.monitoring._groups_result import GroupCalibrationResult

__all__ = ["calibration_by_group"]

#: The calibration tests offered, by name.
TESTS = {
    "cumulative": cumulative_calibration_test,
    "spiegelhalter": spiegelhalter_test,
    "hosmer_lemeshow": hosmer_lemeshow_test,
}
#: The multiplicity corrections over groups (None: no correction).
ADJUSTMENTS = ("holm", "bonferroni")


# ------------------------------------------------------------------ groups
def _is_missing(value):
    """None, NaN, NaT and pandas' NA."""
    if value is None or type(value).__name__ in ("NAType", "NaTType"):
        return True
    if isinstance(value, float | np.floating | complex | np.complexfloating):
        return bool(np.isnan(value))
    if isinstance(value, np.datetime64 | np.timedelta64):
        return bool(np.isnat(value))
    return False


def check_groups(groups, n_samples):
    """The sorted distinct groups and the group index of every row.

    Raises ``ValueError`` for a wrong length or a missing value (None, NaN,
    NaT, pandas NA), ``TypeError`` for values that do not sort together.
    """
    g = np.asarray(groups)
    if g.ndim != 1 or g.shape[0] != n_samples:
        raise ValueError(
            f"groups must have shape ({n_samples},), one group per row of "
            f"y_true, got shape {g.shape}."
        )
    if g.dtype.kind in "fc":
        missing = np.isnan(g)
    elif g.dtype.kind in "mM":
        missing = np.isnat(g)
    elif g.dtype.kind == "O":
        missing = np.fromiter((_is_missing(v) for v in g), bool, g.size)
    else:
        missing = np.zeros(g.size, dtype=bool)
    if missing.any():
        bad = int(np.flatnonzero(missing)[0])
        shown = g[bad].item() if isinstance(g[bad], np.generic) else g[bad]
        raise ValueError(
            f"groups must not hold missing values; groups[{bad}] is {shown!r}. "
            "Give those rows a group of their own (e.g. 'missing') or drop them."
        )
    try:
        values, inverse = np.unique(g, return_inverse=True)
    except TypeError as exc:
        kinds = sorted({type(v).__name__ for v in g})
        raise TypeError(
            f"groups must be values that sort together (all strings or all "
            f"numbers), got a mix of {kinds}."
        ) from exc
    return values, inverse.ravel()


def _members(inverse, n_groups):
    """The rows of each group, in row order."""
    order = np.argsort(inverse, kind="stable")
    bounds = np.searchsorted(inverse[order], np.arange(n_groups + 1))
    return [order[bounds[g] : bounds[g + 1]] for g in range(n_groups)]


def _subset(inp, rows):
    """:class:`MetricInputs` of some rows (the classes and scale kept)."""
    w = inp.sample_weight
    return MetricInputs(
        y=inp.y[rows],
        proba=inp.proba[rows],
        classes=inp.classes,
        sample_weight=None if w is None else w[rows],
        weight_scale=inp.weight_scale,
    )


# ------------------------------------------------------------------ totals
def _uniform_totals(inp, kind, inverse, n_groups, n_bins, top):
    """Statistics ``(5, n_groups, C, n_bins)`` of uniform bins: the cell of
    an entry is ``(group * C + c) * n_bins + bin``, with ``C`` one
    (confidence) or the classes (classwise: one class at a time, O(n)
    memory); and the edges."""
    edges = bin_edges(None, n_bins, "uniform")
    if kind == "confidence":
        pred, conf = top
        cells = inverse * n_bins + assign_bins(conf, edges)
        cells = Cells(None, cells, conf, pred == inp.y, n_groups, n_bins, [edges])
        totals, _ = cell_totals(inp, cells)
        return totals.reshape(5, n_groups, 1, n_bins), edges
    k, proba = inp.n_classes, inp.proba
    totals = np.zeros((5, n_groups * k * n_bins))
    for c in range(k):
        value = binary_column(proba, c) if proba.ndim == 1 else proba[:, c]
        cells = (inverse * k + c) * n_bins + assign_bins(value, edges)
        cells = Cells(None, cells, value, inp.y == c, n_groups * k * n_bins, 1, [])
        totals += cell_totals(inp, cells)[0].reshape(5, -1)
    return totals.reshape(5, n_groups, k, n_bins), edges


def grouped_totals(inp, kind, inverse, members, n_bins, strategy, top):
    """Per-cell statistics ``(n_groups, 5, C, M)`` of every group, and the
    edges of each (group, curve): ``C`` is 1 (confidence) or the number of
    classes (classwise).

    Uniform bins: one accumulation over all rows. Other strategies: each
    group is binned on its own rows (its quantiles), one group at a time.
    """
    n_groups = len(members)
    c = 1 if kind == "confidence" else inp.n_classes
    if strategy == "uniform":
        totals, edges = _uniform_totals(inp, kind, inverse, n_groups, n_bins, top)
        return np.moveaxis(totals, 1, 0), [[edges] * c] * n_groups
    parts = []
    for rows in members:
        t, edges = statistics(_subset(inp, rows), kind, n_bins, strategy, None, False)
        parts.append((t, edges))
    m = max(t.shape[-1] for t, _ in parts)
    totals = np.zeros((n_groups, 5, c, m))
    for g, (t, _) in enumerate(parts):
        totals[g, :, :, : t.shape[-1]] = t
    return totals, [edges for _, edges in parts]


def _curves(totals, edges, kind, strategy, n_bins, confidence_level, scale):
    """Per group, the tuple of its reliability curves (one per ``C``)."""
    out = []
    for t, group_edges in zip(totals, edges, strict=True):
        curves = []
        for c, e in enumerate(group_edges):
            curves.append(
                curve_from_totals(
                    t[:, c, : e.size - 1],
                    e,
                    kind=kind,
                    strategy=strategy,
                    class_index=None if kind == "confidence" else c,
                    confidence_level=confidence_level,
                    weight_scale=scale,
                    n_bins=None if strategy == "discrete" else n_bins,
                )
            )
        out.append(tuple(curves))
    return out


# ------------------------------------------------------ per-group functions
def _corp_mcb(sub, kind):
    """CORP Brier miscalibration of one group (mean over the classes for
    ``kind="classwise"``)."""
    labels = np.arange(sub.n_classes)
    common = {"labels": labels, "sample_weight": sub.sample_weight}
    if kind == "confidence":
        return corp_decomposition(
            sub.y, sub.proba, kind="confidence", **common
        ).miscalibration
    return float(
        np.mean(
            [
                corp_decomposition(
                    sub.y, sub.proba, kind="classwise", class_index=c, **common
                ).miscalibration
                for c in range(sub.n_classes)
            ]
        )
    )


def _group_test(sub, kind, test, top):
    """The calibration test of one group: of the top-1 pair (correct,
    confidence), or one-vs-rest per class with Holm's correction."""
    func = TESTS[test]
    if kind == "confidence":
        pred, conf = top
        correct = (pred == sub.y).astype(np.intp)
        return func(correct, conf, labels=[0, 1], sample_weight=sub.sample_weight)
    return func(
        sub.y,
        sub.proba,
        labels=np.arange(sub.n_classes),
        sample_weight=sub.sample_weight,
        correction="holm",
    )


def _inference(inp, members, tested, settings):
    """Interval and test of each group with ``tested[g]`` (None for others)."""
    kind, n_bins, strategy, level, n_resamples, test, random_state = settings
    intervals, tests = [], []
    for rows, run in zip(members, tested, strict=True):
        if not run:
            intervals.append(None)
            tests.append(None)
            continue
        sub = _subset(inp, rows)
        intervals.append(
            calibration_error_interval(
                sub.y,
                sub.proba,
                n_bins=n_bins,
                strategy=strategy,
                kind=kind,
                sample_weight=sub.sample_weight,
                labels=np.arange(sub.n_classes),
                confidence_level=level,
                n_resamples=n_resamples,
                random_state=random_state,
            )
        )
        top = None if kind != "confidence" else top1(sub.proba, check_values=False)
        tests.append(_group_test(sub, kind, test, top))
    return intervals, tests


def _adjusted(pvalue, adjust):
    """``pvalue`` adjusted over the tested (non-NaN) groups."""
    out = np.full_like(pvalue, np.nan)
    tested = ~np.isnan(pvalue)
    if tested.any():
        raw = pvalue[tested]
        out[tested] = raw if adjust is None else adjust_pvalues(raw, adjust)
    return out


def _per_group_means(inp, inverse, values, top):
    """Total weight, top-1 accuracy, Brier score and NLL of every group (a
    ``ValueError`` naming the groups whose weights sum to 0)."""
    n_groups, w = values.size, inp.sample_weight
    total = np.bincount(inverse, weights=w, minlength=n_groups).astype(np.float64)
    empty = total <= 0
    if empty.any():
        raise ValueError(
            f"sample_weight sums to 0 in group(s) {values[empty][:10].tolist()}: "
            "their metrics are undefined. Drop those rows or give them positive "
            "weights."
        )
    pred, _ = top
    columns = (
        (pred == inp.y).astype(np.float64),
        sample_brier(inp.y, inp.proba),
        sample_nll(inp.y, inp.proba),
    )
    means = [
        np.bincount(inverse, weights=v if w is None else v * w, minlength=n_groups)
        / total
        for v in columns
    ]
    return total, *means


# ------------------------------------------------------------------ public
@validate_params(
    {
        "y_true": ["array-like"],
        "y_proba": ["array-like"],
        "groups": ["array-like"],
        "n_bins": [Interval(Integral, 1, None, closed="left")],
        "strategy": [StrOptions(set(STRATEGIES))],
        "kind": [StrOptions({"confidence", "classwise"})],
        "labels": ["array-like", None],
        "sample_weight": ["array-like", None],
        "confidence_level": [Interval(Real, 0, 1, closed="neither")],
        "n_resamples": [Interval(Integral, 1, None, closed="left")],
        "test": [StrOptions(set(TESTS))],
        "adjust": [StrOptions(set(ADJUSTMENTS)), None],
        "min_group_size": [Interval(Integral, 2, None, closed="left")],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def calibration_by_group(
    y_true,
    y_proba,
    groups,
    *,
    n_bins=15,
    strategy="uniform",
    kind="confidence",
    labels=None,
    sample_weight=None,
    confidence_level=0.95,
    n_resamples=1000,
    test="cumulative",
    adjust="holm",
    min_group_size=10,
    random_state=None,
):
    """Audit calibration group by group, with tests corrected for multiplicity.

    For each group of rows (a subgroup of patients, a country, a device
    type), the metrics of the group's rows: accuracy, ECE with its
    interval, CORP miscalibration, Brier score, NLL, the p-value of a
    calibration test and that p-value adjusted over the groups (Holm's
    step-down by default), and the reliability curve.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True class labels.
    y_proba : array-like of shape (n_samples,) or (n_samples, n_classes)
        Predicted probabilities (1-D: of the positive class); rows must sum
        to 1.
    groups : array-like of shape (n_samples,)
        The group of each row: strings, integers or other values that sort
        together (no missing value). For intersections of attributes, pass
        one combined key per row (e.g. ``"female|<30"``).
    n_bins : int, default=15
        Number of bins of the ECE and the curves.
    strategy : {"uniform", "quantile", "discrete"}, default="uniform"
        Binning, as in :func:`~skcalib.metrics.expected_calibration_error`;
        quantile (and discrete) bins are those of each group's own rows.
    kind : {"confidence", "classwise"}, default="confidence"
        ``"confidence"``: the top-1 confidence against top-1 correctness
        (ECE, CORP, test). ``"classwise"``: each class's probability
        against being of the class, averaged over the classes (ECE, CORP),
        tested one-vs-rest with Holm's correction within the group.
    labels : array-like of shape (n_classes,), default=None
        Class labels of the columns of ``y_proba`` (default: the sorted
        labels of ``y_true``, which must name every column). The columns
        are the same in every group, whichever classes a group holds.
    sample_weight : array-like of shape (n_samples,), default=None
        Sample weights.
    confidence_level : float, default=0.95
        Level of the ECE intervals.
    n_resamples : int, default=1000
        Bootstrap resamples of each interval.
    test : {"cumulative", "spiegelhalter", "hosmer_lemeshow"}, default="cumulative"
        The calibration test of each group:
        :func:`~skcalib.metrics.cumulative_calibration_test` (Kolmogorov-
        Smirnov of the cumulative differences),
        :func:`~skcalib.metrics.spiegelhalter_test` or
        :func:`~skcalib.metrics.hosmer_lemeshow_test`.
    adjust : {"holm", "bonferroni"} or None, default="holm"
        Correction of the groups' p-values for the number of groups
        tested; None leaves them as they are.
    min_group_size : int, default=10
        Groups with fewer rows get their metrics but no interval and no
        test (NaN, and a note); they are not part of the correction.
    random_state : int, RandomState instance or None, default=None
        Seed of the bootstrap. An int seeds every group's resampling alike,
        so a group's interval does not depend on the other groups; a
        ``RandomState`` is drawn from group after group, in sorted order.

    Returns
    -------
    result : GroupCalibrationResult
        One entry per group, sorted by group value; ``as_frame()`` and
        ``to_dict()`` give the table.

    Raises
    ------
    ValueError
        For ``groups`` of the wrong length or with a missing value, a group
        whose weights sum to 0, or probabilities that are not valid
        (rows not summing to 1, values outside ``[0, 1]``, NaN).
    TypeError
        For group values that do not sort together.

    See Also
    --------
    skcalib.metrics.expected_calibration_error : The ECE of one group.
    skcalib.metrics.calibration_error_interval : Its interval.
    skcalib.plotting.GroupReliabilityDisplay : The curves, side by side.
    CalibrationMonitor : Calibration over time instead of over groups.

    Notes
    -----
    Each group's numbers are those of the metric functions on the group's
    rows (with the columns of ``labels``): the sums (counts, accuracy,
    Brier, NLL and, for uniform bins, the per-bin totals) are computed for
    all groups in one pass of ``np.bincount``; the rest runs once per group
    on its rows (quantile edges, the CORP PAV fit, the bootstrap interval,
    the test), which is fast for tens to hundreds of groups: the interval
    dominates, about 20 ms a group with 1000 resamples (``kind="classwise"``
    and weighted intervals resample rows: about 150 ms a group of 150 rows
    and 5 classes; lower ``n_resamples`` for many groups).

    **Test.** For ``kind="confidence"`` the test is that of the pair
    (top-1 correct, top-1 confidence): calibration of the confidence,
    ``P(correct | confidence) = confidence``, for any number of classes.
    The default, the cumulative-differences (KS) test of Arrieta-Ibarra et
    al. (2022), needs no bins and detects every miscalibration of the
    confidence as ``n`` grows (Spiegelhalter's test is blind to some, and
    Hosmer-Lemeshow's p-value depends on its groups); its p-value is
    asymptotic (conservative for small groups).

    **Adjustment.** With ``m`` groups tested and their p-values sorted
    :math:`p_{(1)} \\le \\dots \\le p_{(m)}`, Holm's adjusted p-values [1]_
    are :math:`\\tilde p_{(i)} = \\max_{j \\le i} \\min(1, (m - j + 1)
    p_{(j)})`: rejecting the groups with :math:`\\tilde p \\le \\alpha`
    keeps the probability of flagging any calibrated group at most
    :math:`\\alpha`, whatever the dependence between the tests. Bonferroni
    is :math:`\\min(1, m p)`.

    **Weights.** Point metrics treat a weight of 2 as a repeated row. The
    intervals and the tests treat weights as relative (importance) weights,
    with the variance of Kish's effective sample size, so there a weight
    of 2 is not a repeated row (see :func:`~skcalib.metrics.spiegelhalter_test`).

    References
    ----------
    .. [1] S. Holm, "A simple sequentially rejective multiple test
       procedure", Scandinavian Journal of Statistics 6(2), 65-70, 1979.
    .. [2] T. Dimitriadis, T. Gneiting and A. I. Jordan, "Stable reliability
       diagrams for probabilistic classifiers", PNAS 118(8), 2021.
    .. [3] I. Arrieta-Ibarra, P. Gujral, J. Tannen, M. Tygert and C. Xu,
       "Metrics of calibration for probabilistic predictions", Journal of
       Machine Learning Research 23(351), 1-54, 2022.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib.monitoring import calibration_by_group
    >>> rng = np.random.default_rng(0)
    >>> n = 3000
    >>> region = rng.choice(["north", "south", "west"], size=n)
    >>> p = rng.uniform(size=n)
    >>> truth = np.where(region == "west", 0.5 + 0.6 * (p - 0.5), p)
    >>> y = (rng.uniform(size=n) < truth).astype(int)  # west: over-confident
    >>> res = calibration_by_group(y, p, region, random_state=0)
    >>> res.groups.tolist(), res.n.tolist()
    (['north', 'south', 'west'], [962, 995, 1043])
    >>> res.reject(0.05).tolist()  # Holm-adjusted p-values <= 0.05
    [False, False, True]
    >>> cols = ["group", "n", "ece", "ece_low", "ece_high", "pvalue_adjusted"]
    >>> res.as_frame()[cols].round(3)
       group     n    ece  ece_low  ece_high  pvalue_adjusted
    0  north   962  0.026    0.000     0.040              1.0
    1  south   995  0.022    0.000     0.033              1.0
    2   west  1043  0.107    0.072     0.125              0.0
    """
    inp = check_metric_inputs(
        y_true, y_proba, sample_weight=sample_weight, labels=labels
    )
    n_bins = check_n_bins(n_bins, inp.n_samples)
    values, inverse = check_groups(groups, inp.n_samples)
    members = _members(inverse, values.size)
    top = top1(inp.proba, check_values=False)
    total, accuracy, brier, nll = _per_group_means(inp, inverse, values, top)
    args = (inverse, members, n_bins, strategy, top)
    conf_totals, conf_edges = grouped_totals(inp, "confidence", *args)
    curve_args = (strategy, n_bins, confidence_level, inp.weight_scale)
    curves = [c[0] for c in _curves(conf_totals, conf_edges, "confidence", *curve_args)]
    class_curves = None
    if kind == "classwise":
        cls_totals, cls_edges = grouped_totals(inp, "classwise", *args)
        class_curves = _curves(cls_totals, cls_edges, "classwise", *curve_args)
        ece = reduce_totals(cls_totals, "classwise", "l1", False)
    else:
        ece = reduce_totals(conf_totals, "confidence", "l1", False)
    n = np.array([rows.size for rows in members], dtype=np.intp)
    tested = n >= min_group_size
    settings = (kind, n_bins, strategy, confidence_level, n_resamples, test)
    intervals, tests = _inference(inp, members, tested, (*settings, random_state))
    nan = float("nan")
    pvalue = np.array([nan if t is None else t.pvalue for t in tests])
    note = f"fewer than min_group_size={min_group_size} rows: no interval, no test"
    return GroupCalibrationResult(
        groups=values,
        n=n,
        weight=total * inp.weight_scale,
        accuracy=accuracy,
        ece=np.asarray(ece, dtype=np.float64),
        ece_low=np.array([nan if i is None else i.low for i in intervals]),
        ece_high=np.array([nan if i is None else i.high for i in intervals]),
        corp_mcb=np.array([_corp_mcb(_subset(inp, r), kind) for r in members]),
        brier=brier,
        nll=nll,
        pvalue=pvalue,
        pvalue_adjusted=_adjusted(pvalue, adjust),
        note=np.where(tested, "", note),
        curves=tuple(curves),
        class_curves=None if class_curves is None else tuple(class_curves),
        intervals=tuple(intervals),
        tests=tuple(tests),
        classes=inp.classes,
        kind=kind,
        strategy=strategy,
        n_bins=n_bins,
        confidence_level=float(confidence_level),
        test=_test_name(test, tests),
        adjust=adjust,
        min_group_size=int(min_group_size),
    )


def _test_name(test, tests):
    """The ``method`` of the tests run, or the test's name when none ran."""
    for t in tests:
        if t is not None:
            return t.method
    return f"{test} (no group tested)"
