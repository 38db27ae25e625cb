"""The reliability curve: per-bin confidence, accuracy, counts and intervals.

The per-cell statistics it reads are those of every binned metric
(:mod:`skcalib._core.totals`); this module turns the statistics of one group
into a :class:`ReliabilityCurve`.
"""

import dataclasses
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np

from skcalib._core.binning import N_BINS_RULES, STRATEGIES
from skcalib._core.compat import Interval, StrOptions, validate_params
from skcalib._core.inputs import (
    BINNING_CONSTRAINTS,
    COMMON_CONSTRAINTS,
    KINDS,
    accepts_dask,
    engine_of,
)
from skcalib._core.totals import (
    ACC,
    CONF,
    COUNT,
    W2,
    W,
)
from skcalib._core.xp import namespace, to_numpy
from skcalib.metrics._corp import isotonic_curve_arrays
from skcalib.metrics._curve_band import (
    BANDS,
    INTERVALS,
    bootstrap_band,
    curve_in_namespace,
    proportion_interval,
    resolve_rule,
)
from skcalib.metrics._dispatch import binned_totals

__all__ = ["ReliabilityCurve", "reliability_curve"]


# -------------------------------------------------------------------- curve
@dataclass(frozen=True, eq=False)
class ReliabilityCurve:
    """Per-bin values of a reliability diagram, from :func:`reliability_curve`.

    Every bin is reported, empty ones included: an empty bin has
    ``counts == 0``, ``nonempty == False`` and NaN ``mean_confidence``,
    ``accuracy``, ``lower`` and ``upper``. Arrays are read-only.

    A curve about one class (``kind="classwise"``, e.g. the positive class
    of a binary problem) unpacks like the result of
    :func:`sklearn.calibration.calibration_curve`: ``prob_true, prob_pred =
    curve`` gives ``accuracy`` and ``mean_confidence`` of the non-empty bins
    (scikit-learn drops empty bins). Other kinds refuse to unpack (a
    ``TypeError``): their numbers are not those of ``calibration_curve``.

    Attributes
    ----------
    edges : ndarray of shape (n_bins + 1,)
        Bin edges, increasing from 0 to 1; bin ``j`` is ``(edges[j],
        edges[j + 1]]`` and the first bin also holds 0.
    mean_confidence : ndarray of shape (n_bins,)
        Weighted mean predicted probability (confidence) in each bin.
    accuracy : ndarray of shape (n_bins,)
        Weighted observed frequency of the event (correct prediction, or the
        class) in each bin.
    counts : ndarray of shape (n_bins,)
        Total sample weight in each bin (the number of samples without
        weights).
    n_samples : ndarray of shape (n_bins,)
        Number of samples in each bin, ignoring weights.
    lower, upper : ndarray of shape (n_bins,)
        Interval of ``accuracy`` at ``confidence_level`` by the method
        ``interval`` (Wilson score or Clopper-Pearson), with the effective
        sample size ``(sum w)**2 / sum w**2`` of the bin (the number of
        samples without weights).
    nonempty : ndarray of shape (n_bins,), bool
        Bins holding positive weight.
    kind : str
        ``"confidence"``, ``"top_label"`` or ``"classwise"``.
    strategy : str
        ``"uniform"``, ``"quantile"``, ``"discrete"`` or ``"isotonic"``
        (``"fixed"``: edges given to :class:`CalibrationAccumulator`).
    class_index : int or None
        The column the curve is about, or None (pooled top-1 confidence).
    confidence_level : float
        Level of ``lower`` and ``upper`` (and of the consistency band).
    curve_x, curve_y : ndarray or None
        ``strategy="isotonic"`` only (else None): the CORP curve, the
        points to join by straight lines; each PAV block is a horizontal
        segment from its smallest to its largest probability.
    band_lower, band_upper : ndarray or None
        ``strategy="isotonic"`` with ``n_resamples > 0``: the pointwise
        consistency band at ``curve_x``, where the curve of a calibrated
        model falls with probability ``confidence_level``. A binned curve
        with ``band`` set: the bootstrap band of ``accuracy``, one value per
        bin (NaN for empty bins), at ``mean_confidence``. Else None.
    interval : str
        Method of ``lower`` and ``upper``: ``"wilson"`` or
        ``"clopper-pearson"``.
    n_bins : int or None
        The number of bins asked for, resolved (the count a rule name such
        as ``"sturges"`` gave); quantile bins may be fewer (``edges``).
        None where ``n_bins`` is not used (``strategy="discrete"`` or
        ``"isotonic"``).
    band : str or None
        What ``band_lower`` and ``band_upper`` are: ``"consistency"`` (CORP
        curve), ``"pointwise"`` or ``"simultaneous"`` (bootstrap band of a
        binned curve), or None without a band.

    See Also
    --------
    reliability_curve : Computes it.
    skcalib.plotting.ReliabilityDisplay : Draws it.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib.metrics import reliability_curve
    >>> y = np.array([0, 1, 1, 0, 1, 1])
    >>> p = np.array([0.1, 0.6, 0.8, 0.9, 0.8, 0.95])  # P(y = 1)
    >>> curve = reliability_curve(y, p, n_bins=2, kind="classwise")
    >>> curve.counts, curve.accuracy, curve.mean_confidence
    (array([1., 5.]), array([0. , 0.8]), array([0.1 , 0.81]))

    Unpacked as scikit-learn's ``calibration_curve``:

    >>> prob_true, prob_pred = curve
    >>> prob_true, prob_pred
    (array([0. , 0.8]), array([0.1 , 0.81]))
    """

    edges: np.ndarray
    mean_confidence: np.ndarray
    accuracy: np.ndarray
    counts: np.ndarray
    n_samples: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    nonempty: np.ndarray
    kind: str
    strategy: str
    class_index: int | None
    confidence_level: float
    curve_x: np.ndarray | None = None
    curve_y: np.ndarray | None = None
    band_lower: np.ndarray | None = None
    band_upper: np.ndarray | None = None
    interval: str = "wilson"
    n_bins: int | None = None
    band: str | None = None

    def __iter__(self):
        """``prob_true``, ``prob_pred`` of the non-empty bins, as
        :func:`sklearn.calibration.calibration_curve` returns them; only for a
        curve about one class (``kind="classwise"``)."""
        if self.kind != "classwise":
            raise TypeError(
                f"A reliability curve of kind={self.kind!r} does not unpack: "
                "prob_true, prob_pred = calibration_curve(y, p) is the curve of "
                "the positive class; get it with prob_true, prob_pred = "
                "reliability_curve(y, p, kind='classwise'), or read the "
                "attributes accuracy and mean_confidence."
            )
        keep = self.nonempty  # in the namespace and on the device of the curve
        return iter((self.accuracy[keep], self.mean_confidence[keep]))


@accepts_dask
@validate_params(
    {
        **COMMON_CONSTRAINTS,
        **BINNING_CONSTRAINTS,
        "n_bins": [*BINNING_CONSTRAINTS["n_bins"], StrOptions(set(N_BINS_RULES))],
        "strategy": [StrOptions({*STRATEGIES, "isotonic"})],
        "kind": [StrOptions(set(KINDS))],
        "class_index": [Interval(Integral, 0, None, closed="left"), None],
        "confidence_level": [Interval(Real, 0, 1, closed="neither")],
        "n_resamples": [Interval(Integral, 0, None, closed="left")],
        "random_state": ["random_state"],
        "interval": [StrOptions(set(INTERVALS))],
        "band": [StrOptions(set(BANDS)), None],
    },
    prefer_skip_nested_validation=True,
)
def reliability_curve(
    y_true,
    y_proba,
    *,
    n_bins=15,
    strategy="uniform",
    kind="confidence",
    class_index=None,
    sample_weight=None,
    labels=None,
    confidence_level=0.95,
    n_resamples=100,
    random_state=0,
    interval="wilson",
    band=None,
):
    """Per-bin confidence, accuracy, counts and intervals of a reliability diagram.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True class labels (integers or strings).
    y_proba : array-like of shape (n_samples,) or (n_samples, n_classes)
        Predicted probabilities. 1-D: probability of the positive class (the
        larger label, or ``labels[1]``). 2-D: one column per class, in the
        order of ``labels``.
    n_bins : int or {"sqrt", "sturges", "rice"}, default=15
        Number of bins, or a bin-count rule of
        :func:`numpy.histogram_bin_edges` resolved from the number ``n`` of
        samples binned: ``"sqrt"``, ``ceil(sqrt(n))``; ``"sturges"``,
        ``ceil(log2(n)) + 1``; ``"rice"``, ``ceil(2 n**(1/3))``. ``n``
        counts the rows of positive weight (for ``kind="top_label"`` with a
        ``class_index``, those predicted as the class). The count used is
        ``curve.n_bins``. numpy's rules that read the spread of the data
        (``"fd"``, ``"scott"``, ``"doane"``, ``"stone"``, and ``"auto"``, the
        larger of ``"fd"`` and ``"sturges"``) are refused: the curve bins
        probabilities on the fixed range ``[0, 1]``, and scikit-learn's
        ``calibration_curve`` and ``CalibrationDisplay`` take an int.
    strategy : {"uniform", "quantile", "discrete", "isotonic"}, \
            default="uniform"
        Equal-width bins, or equal-mass bins from the (weighted) quantiles of
        the binned probabilities (tied quantiles are merged, so fewer bins may
        be returned), or one bin per distinct probability (``n_bins`` unused;
        at most 4096 distinct values, else a ``ValueError``), or
        ``"isotonic"``: the CORP curve [3]_, one bin per block of the
        isotonic (PAV) regression of the event on the probability
        (``n_bins`` unused; see Notes).
    kind : {"confidence", "top_label", "classwise"}, default="confidence"
        What is binned:

        * ``"confidence"``: the top-1 probability of every sample against
          whether the top-1 class is right;
        * ``"top_label"``: with ``class_index=k``, the same for the samples
          predicted as class ``k`` only; without, the same as
          ``"confidence"``;
        * ``"classwise"``: the probability of class ``class_index`` against
          ``y == class``, over all samples (``class_index`` defaults to the
          positive class, column 1, for binary input).
    class_index : int, default=None
        Column of ``y_proba`` (index into ``labels``) the curve is about.
    sample_weight : array-like of shape (n_samples,), default=None
        Sample weights.
    labels : array-like of shape (n_classes,), default=None
        Class labels of the columns of ``y_proba``; default: the sorted
        labels of ``y_true``.
    confidence_level : float, default=0.95
        Level of the per-bin intervals and of the band (the bootstrap band,
        or the consistency band of ``strategy="isotonic"``).
    n_resamples : int, default=100
        Number of resamples of the band: for ``strategy="isotonic"``,
        outcome resamples of the consistency band (0: no band; it costs
        ``n_resamples`` PAV fits of the distinct probabilities, about 5 s
        for a million distinct values and 100 resamples); for a binned
        curve with ``band`` set, row resamples of the bootstrap band (at
        least 1; 1000 give a steadier 95% band, see Notes).
    random_state : int, RandomState instance or None, default=0
        Seed of the resamples of the band; fixed by default so that the
        band is reproducible.
    interval : {"wilson", "clopper-pearson"}, default="wilson"
        Per-bin interval of ``accuracy`` (``lower``, ``upper``): the Wilson
        score interval [2]_ or the Clopper-Pearson exact binomial interval
        [4]_, whose coverage is at least ``confidence_level`` for every
        true frequency (unweighted bins); see Notes.
    band : {"pointwise", "simultaneous"}, default=None
        Binned strategies only: a bootstrap band of the whole curve
        (``band_lower``, ``band_upper``), from ``n_resamples`` resamples of
        the rows binned by the curve's edges. ``"pointwise"``: each bin's
        percentile interval; ``"simultaneous"``: a band that holds the
        whole true curve with probability ``confidence_level`` (sup-t,
        [5]_). None: no band. See Notes.

    Returns
    -------
    curve : ReliabilityCurve
        Per-bin ``edges``, ``mean_confidence``, ``accuracy``, ``counts``,
        ``n_samples``, ``lower``, ``upper``, ``nonempty``.

    See Also
    --------
    expected_calibration_error : The weighted mean gap of this curve.
    sklearn.calibration.calibration_curve : Binary only; drops empty bins.
    skcalib.plotting.ReliabilityDisplay : Draws this curve.

    Notes
    -----
    Array API: with ``array_api_dispatch=True`` and ``y_proba`` of another
    namespace (torch, CuPy, ...), the per-bin sums are computed on its
    device (in float64 where the device has it) and the curve's arrays are
    in that namespace, on that device; see
    :func:`expected_calibration_error` for the precision.

    Bins are right-closed, :math:`(e_j, e_{j+1}]`, the first one
    :math:`[0, e_1]`, as in :func:`sklearn.calibration.calibration_curve`; a
    probability equal to an edge lands in the lower bin (edges are compared in
    the dtype of ``y_proba``). For bin :math:`B_j` with weights :math:`w_i`,
    predicted probabilities :math:`c_i` and outcomes :math:`a_i \\in \\{0, 1\\}`:

    .. math::

        \\mathrm{conf}_j = \\frac{\\sum_{i \\in B_j} w_i c_i}{\\sum_{i \\in B_j} w_i},
        \\qquad
        \\mathrm{acc}_j = \\frac{\\sum_{i \\in B_j} w_i a_i}{\\sum_{i \\in B_j} w_i}.

    The per-bin intervals of :math:`\\mathrm{acc}_j` use the effective
    sample size :math:`n_j = (\\sum w_i)^2 / \\sum w_i^2` (Kish), which is
    the count when there are no weights, and :math:`k_j = n_j
    \\mathrm{acc}_j` successes. ``interval="wilson"`` is the Wilson score
    interval [2]_; ``interval="clopper-pearson"`` the exact interval [4]_
    :math:`[B_{\\alpha/2}(k_j, n_j - k_j + 1), B_{1-\\alpha/2}(k_j + 1, n_j -
    k_j)]`, :math:`B_q(a, b)` the :math:`q` quantile of the Beta
    distribution and :math:`\\alpha = 1 -` ``confidence_level``, with lower
    bound 0 at :math:`k_j = 0` and upper bound 1 at :math:`k_j = n_j` (as
    :meth:`scipy.stats.binomtest` ``proportion_ci(method="exact")``). With
    sample weights :math:`k_j` and :math:`n_j` are not integers and the Beta
    quantiles are taken at these effective counts (Korn & Graubard [6]_);
    the interval is then an approximation, not exact. The discussion of
    per-bin intervals for scikit-learn's ``CalibrationDisplay``
    (scikit-learn issue #30664) preferred Clopper-Pearson: a bootstrap
    interval collapses to zero width in the small bins whose outcomes are
    all 0 or all 1, and Clopper-Pearson does not.

    **Bootstrap band** (``band``, binned strategies): the rows are
    resampled with replacement ``n_resamples`` times (seeded by
    ``random_state``; as multinomial counts, of the (bin, outcome) groups
    for unweighted pooled curves, else of the rows) and each bin's
    frequency is recomputed with the curve's edges held fixed. The
    band is a confidence band for the true frequency of each bin, not a
    consistency band (which holds the forecasts and redraws the outcomes
    under calibration, Bröcker & Smith [7]_, as ``strategy="isotonic"``
    does). ``"pointwise"``: the percentile bootstrap interval of each bin,
    each holding its bin's true frequency with probability about
    ``confidence_level``, but not all at once; a bin whose outcomes are
    all equal gets a band of zero width there (the collapse noted in
    scikit-learn #30664: read such bins by their per-bin ``interval``).
    ``"simultaneous"``: the sup-t band of Montiel Olea & Plagborg-Møller
    [5]_ on the variance-stabilising arcsine square-root scale [8]_,
    :math:`\\theta_j = \\arcsin\\sqrt{\\mathrm{acc}_j}`, whose standard
    deviation is about :math:`1 / (2 \\sqrt{n_j})` whatever the frequency:
    the band is :math:`\\sin^2(\\theta_j \\pm \\hat q / (2 \\sqrt{n_j}))`,
    :math:`\\hat q` the ``confidence_level`` quantile over the resamples of
    :math:`\\max_j 2 \\sqrt{n_j}\\, |\\theta^*_j - \\theta_j|`, the largest
    standardised deviation of the resampled curve. It holds the true
    frequencies of all bins at once with probability about
    ``confidence_level`` (0.93 to 0.97 at 95% in simulations of calibrated
    data, 10 to 30 bins of 17 to 330 samples), and it does not collapse
    in a bin whose outcomes are all equal (its width there is set by
    :math:`n_j`). Bins empty in a resample take no part in it. The band
    is computed on the host (array-API inputs are copied there); Dask
    input is refused.

    ``strategy="isotonic"`` (CORP, Dimitriadis, Gneiting & Jordan [3]_):
    the bins are the blocks of the weighted isotonic regression :math:`\\hat
    x` of the event on the probability (ties pooled; scikit-learn's
    :func:`~sklearn.isotonic.isotonic_regression`), so ``accuracy`` is the
    PAV value of each block, which is its observed frequency. The drawn
    curve is ``curve_x``, ``curve_y``. The consistency band holds the forecasts
    fixed and redraws the events under the hypothesis of calibration,
    :math:`a_i^* \\sim \\mathrm{Bernoulli}(c_i)`, ``n_resamples`` times
    (seeded by ``random_state``); at each point of ``curve_x`` it spans the
    pointwise ``(1 - confidence_level) / 2`` and ``(1 + confidence_level) / 2``
    quantiles of the refitted PAV values. A curve leaving the band is
    evidence of miscalibration there (pointwise, not simultaneously: a
    calibrated curve leaves a 95% band somewhere more often than 5% of
    the time). Array-API and Dask inputs: the isotonic curve is computed
    on the host (PAV is sequential); Dask input is refused.

    References
    ----------
    .. [1] C. Guo, G. Pleiss, Y. Sun and K. Q. Weinberger, "On Calibration of
       Modern Neural Networks", ICML 2017.
    .. [2] E. B. Wilson, "Probable inference, the law of succession, and
       statistical inference", JASA 22, 1927.
    .. [3] T. Dimitriadis, T. Gneiting and A. I. Jordan, "Stable reliability
       diagrams for probabilistic classifiers", PNAS 118(8), 2021.
    .. [4] C. J. Clopper and E. S. Pearson, "The use of confidence or
       fiducial limits illustrated in the case of the binomial",
       Biometrika 26(4), 1934.
    .. [5] J. L. Montiel Olea and M. Plagborg-Møller, "Simultaneous
       confidence bands: Theory, implementation, and an application to
       SVARs", Journal of Applied Econometrics 34(1), 2019.
    .. [6] E. L. Korn and B. I. Graubard, "Confidence intervals for
       proportions with small expected number of positive counts estimated
       from survey data", Survey Methodology 24(2), 1998.
    .. [7] J. Bröcker and L. A. Smith, "Increasing the reliability of
       reliability diagrams", Weather and Forecasting 22(3), 2007.
    .. [8] F. J. Anscombe, "The transformation of Poisson, binomial and
       negative-binomial data", Biometrika 35(3/4), 1948.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib.metrics import reliability_curve
    >>> y = np.array([0, 1, 1, 0, 1, 1])
    >>> p = np.array([0.1, 0.6, 0.8, 0.9, 0.8, 0.95])  # P(y = 1)
    >>> curve = reliability_curve(y, p, n_bins=4, kind="classwise")
    >>> curve.counts
    array([1., 0., 1., 4.])
    >>> curve.accuracy          # the empty bin is NaN, not dropped
    array([0.  ,  nan, 1.  , 0.75])
    >>> curve.mean_confidence
    array([0.1   ,   nan, 0.6   , 0.8625])

    The CORP curve: one bin per PAV block.

    >>> iso = reliability_curve(y, p, strategy="isotonic", kind="classwise")
    >>> iso.edges, iso.accuracy, iso.counts
    (array([0. , 0.1, 0.9, 1. ]), array([0.  , 0.75, 1.  ]), array([1., 4., 1.]))
    >>> iso.curve_x, iso.curve_y     # the block (0.1, 0.9] spans 0.6 to 0.9
    (array([0.1 , 0.6 , 0.9 , 0.95]), array([0.  , 0.75, 0.75, 1.  ]))

    Exact per-bin intervals, a simultaneous bootstrap band, a bin-count rule:

    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=1000)
    >>> y = (rng.uniform(size=1000) < p).astype(int)  # calibrated
    >>> c = reliability_curve(y, p, n_bins="sturges", kind="classwise",
    ...     interval="clopper-pearson", band="simultaneous", n_resamples=500)
    >>> c.n_bins, c.interval, c.band
    (11, 'clopper-pearson', 'simultaneous')
    >>> np.round(c.lower[:3], 3), np.round(c.band_lower[:3], 3)
    (array([0.007, 0.083, 0.156]), array([0.   , 0.042, 0.103]))
    """
    if strategy == "isotonic":
        if band is not None:
            raise ValueError(
                f"band={band!r} is the bootstrap band of a binned curve; the "
                "CORP curve (strategy='isotonic') has its consistency band, "
                "set by n_resamples. Pass band=None."
            )
        return _isotonic_curve(
            y_true,
            y_proba,
            kind=kind,
            class_index=class_index,
            sample_weight=sample_weight,
            labels=labels,
            confidence_level=confidence_level,
            n_resamples=n_resamples,
            random_state=random_state,
            interval=interval,
        )
    if band is not None and n_resamples < 1:
        raise ValueError(
            f"band={band!r} needs n_resamples >= 1 row resamples, got "
            f"n_resamples={n_resamples}; pass band=None for no band."
        )
    params = dict(sample_weight=sample_weight, labels=labels, strategy=strategy)
    n_bins = resolve_rule(n_bins, y_true, y_proba, kind, class_index, params)
    bt = binned_totals(
        y_true,
        y_proba,
        n_bins=n_bins,
        kind=kind,
        class_index=class_index,
        curve=True,
        **params,
    )
    curve = curve_from_totals(
        bt.totals[:, 0, : bt.edges[0].size - 1],
        np.array(bt.edges[0]),
        kind=kind,
        strategy=strategy,
        class_index=bt.class_index,
        confidence_level=confidence_level,
        weight_scale=bt.weight_scale,
        interval=interval,
        n_bins=None if strategy == "discrete" else int(n_bins),
    )
    if band is not None:
        lower, upper = bootstrap_band(
            y_true,
            y_proba,
            curve,
            params={**params, "n_bins": n_bins},
            band=band,
            n_resamples=n_resamples,
            random_state=random_state,
        )
        lower.flags.writeable = upper.flags.writeable = False
        curve = dataclasses.replace(
            curve, band_lower=lower, band_upper=upper, band=band
        )
    ns = namespace(y_proba)
    return curve if ns is None else curve_in_namespace(curve, ns)


def _isotonic_curve(
    y_true, y_proba, *, kind, confidence_level, interval="wilson", **params
):
    """The CORP :class:`ReliabilityCurve` (``strategy="isotonic"``), on the
    host; array-API results come back in the namespace of ``y_proba``."""
    arrays = (y_true, y_proba, params["sample_weight"])
    if any(engine_of(a) for a in arrays):
        raise TypeError(
            "strategy='isotonic' needs in-memory arrays (the PAV fit is "
            "sequential); call .compute() first, or use a binned strategy, "
            "which accepts Dask collections."
        )
    ns = namespace(y_proba)
    params["sample_weight"] = to_numpy(params["sample_weight"])
    a = isotonic_curve_arrays(
        to_numpy(y_true),
        to_numpy(y_proba),
        kind=kind,
        confidence_level=confidence_level,
        **params,
    )
    lower, upper = proportion_interval(
        a["accuracy"] * a["n_eff"], a["n_eff"], confidence_level, interval
    )
    arrays = dict(
        edges=a["edges"],
        mean_confidence=a["mean_confidence"],
        accuracy=a["accuracy"],
        counts=a["counts"],
        n_samples=a["n_samples"],
        lower=lower,
        upper=upper,
        nonempty=np.ones(a["counts"].size, dtype=bool),
        curve_x=a["curve_x"],
        curve_y=a["curve_y"],
        band_lower=a["band_lower"],
        band_upper=a["band_upper"],
    )
    for value in arrays.values():
        if value is not None:
            value.flags.writeable = False
    curve = ReliabilityCurve(
        **arrays,
        kind=kind,
        strategy="isotonic",
        class_index=a["class_index"],
        confidence_level=float(confidence_level),
        interval=interval,
        band=None if a["band_lower"] is None else "consistency",
    )
    return curve if ns is None else curve_in_namespace(curve, ns)


def curve_from_totals(
    t,
    edges,
    *,
    kind,
    strategy,
    class_index,
    confidence_level,
    weight_scale=1.0,
    interval="wilson",
    n_bins=None,
):
    """:class:`ReliabilityCurve` from the ``(5, n_bins)`` statistics of one group.

    ``weight_scale``: the weights of ``t`` are the user's divided by it (see
    :func:`~skcalib._core.inputs.check_sample_weight`); ``counts`` is
    given back in the user's units. ``interval``: the per-bin interval
    (:func:`~skcalib.metrics._curve_band.proportion_interval`); ``n_bins``:
    the number of bins asked for, shown on the curve.
    """
    filled = t[W] > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        conf = np.where(filled, t[CONF] / t[W], np.nan)
        acc = np.where(filled, t[ACC] / t[W], np.nan)
        # Unit weights: the count itself (W**2 / W2 rounds above 2**26).
        n_eff = np.where(
            filled, np.where(t[W2] == t[W], t[W], t[W] ** 2 / t[W2]), np.nan
        )
        hits = np.where(t[W2] == t[W], t[ACC], acc * n_eff)
    lower, upper = proportion_interval(hits, n_eff, confidence_level, interval)
    counts = t[COUNT].astype(np.intp)
    with np.errstate(over="ignore"):
        weight = t[W] * weight_scale
    if not np.isfinite(weight).all():
        bad = int(np.flatnonzero(~np.isfinite(weight))[0])
        raise ValueError(
            f"the total sample weight of bin {bad} exceeds the float64 range "
            f"({t[W][bad].item():.6g} x {weight_scale:.6g}); divide sample_weight "
            "by a constant (no value of the curve but counts depends on it)."
        )
    arrays = [edges, conf, acc, weight, counts, lower, upper, filled]
    for a in arrays:
        a.flags.writeable = False
    return ReliabilityCurve(
        *arrays,
        kind=kind,
        strategy=strategy,
        class_index=class_index,
        confidence_level=float(confidence_level),
        interval=interval,
        n_bins=n_bins,
    )
