"""Per-bin intervals, the bootstrap band and the bin-count rules of a
binned reliability curve.

:func:`proportion_interval` gives the per-bin interval of an observed
frequency (Wilson score, or Clopper-Pearson exact); :func:`bootstrap_band`
the band of the whole curve from row resamples, with the edges of the curve
held fixed; :func:`resolve_rule` the number of bins of a rule name such as
``"sturges"``. All are used by :func:`~skcalib.metrics.reliability_curve`.
"""

import dataclasses
import warnings

import numpy as np
from scipy.special import betaincinv, ndtri
from sklearn.utils import check_random_state

from skcalib._core.binning import resolve_n_bins
from skcalib._core.inputs import check_metric_inputs, curve_cells, engine_of
from skcalib._core.top1 import top1
from skcalib._core.totals import ACC, W2, W, cell_assignment, cell_totals
from skcalib._core.xp import to_numpy
from skcalib.metrics._interval import bootstrap_totals, group_bootstrap_totals

__all__ = []  # private module

#: The per-bin intervals of :func:`proportion_interval`.
INTERVALS = ("wilson", "clopper-pearson")
#: The bands of :func:`bootstrap_band`.
BANDS = ("pointwise", "simultaneous")


def wilson_interval(successes, n_eff, confidence_level):
    """Wilson score interval of a proportion ``successes / n_eff`` (NaN if 0)."""
    z = float(ndtri(0.5 + confidence_level / 2))
    with np.errstate(divide="ignore", invalid="ignore"):
        p = successes / n_eff
        z2n = z * z / n_eff
        centre = (p + z2n / 2) / (1 + z2n)
        half = z * np.sqrt(p * (1 - p) / n_eff + z2n / (4 * n_eff)) / (1 + z2n)
    # The interval contains p (exactly, despite rounding: 0 at p = 0).
    lower = np.clip(np.minimum(centre - half, p), 0.0, 1.0)
    upper = np.clip(np.maximum(centre + half, p), 0.0, 1.0)
    return lower, upper


def clopper_pearson_interval(successes, n, confidence_level):
    """Clopper-Pearson (exact binomial) interval of ``successes / n``.

    ``[B(alpha / 2; k, n - k + 1), B(1 - alpha / 2; k + 1, n - k)]`` with
    ``B(q; a, b)`` the ``q`` quantile of the Beta distribution (the inverse
    regularised incomplete beta function), ``alpha = 1 - confidence_level``;
    the lower bound is 0 at ``k = 0`` and the upper bound 1 at ``k = n``.
    ``k`` and ``n`` may be non-integers (effective counts of weighted
    data): the Beta quantiles are defined for real parameters. NaN where
    ``n`` is 0 or NaN.
    """
    alpha = 1.0 - confidence_level
    k = np.asarray(successes, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    valid = n > 0
    k = np.where(valid, np.clip(k, 0.0, np.where(valid, n, 1.0)), 0.0)
    n_safe = np.where(valid, n, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        low = betaincinv(np.maximum(k, 1e-300), n_safe - k + 1, alpha / 2)
        high = betaincinv(k + 1, np.maximum(n_safe - k, 1e-300), 1 - alpha / 2)
    low = np.where(k > 0, low, 0.0)
    high = np.where(k < n_safe, high, 1.0)
    # The interval contains k / n (exactly, despite rounding).
    p = k / n_safe
    low = np.clip(np.minimum(low, p), 0.0, 1.0)
    high = np.clip(np.maximum(high, p), 0.0, 1.0)
    return np.where(valid, low, np.nan), np.where(valid, high, np.nan)


def proportion_interval(successes, n_eff, confidence_level, interval="wilson"):
    """Per-bin interval ``(lower, upper)`` of ``successes / n_eff`` by the
    method ``interval`` (one of :data:`INTERVALS`)."""
    if interval == "wilson":
        return wilson_interval(successes, n_eff, confidence_level)
    if interval == "clopper-pearson":
        return clopper_pearson_interval(successes, n_eff, confidence_level)
    raise ValueError(f"interval must be one of {list(INTERVALS)}, got {interval!r}.")


def resolve_rule(n_bins, y_true, y_proba, kind, class_index, params):
    """``n_bins``, or the count its rule name gives for the number of
    samples the curve bins (rows of positive weight; for ``"top_label"``
    with a class, those predicted as the class); see
    :func:`~skcalib._core.binning.resolve_n_bins`."""
    if not isinstance(n_bins, str):
        return n_bins
    weight = params["sample_weight"]
    if any(engine_of(a) for a in (y_true, y_proba, weight)):
        raise TypeError(
            f"n_bins={n_bins!r} needs the number of samples before the one "
            "pass over Dask collections; pass an int."
        )
    inp = check_metric_inputs(
        to_numpy(y_true),
        to_numpy(y_proba),
        sample_weight=to_numpy(weight),
        labels=params["labels"],
        check_values=False,
    )
    kind, class_index = curve_cells(kind, class_index, inp.n_classes)
    rows = np.ones(inp.n_samples, dtype=bool)
    if inp.sample_weight is not None:
        rows = inp.sample_weight > 0
    if kind == "top_label":  # with a class: the rows predicted as it
        rows &= top1(inp.proba, check_values=False)[0] == class_index
    return resolve_n_bins(n_bins, np.count_nonzero(rows))


def curve_in_namespace(curve, ns):
    """``curve`` with its arrays moved to the namespace and device ``ns``
    (copies: the curve's numpy arrays are read-only)."""
    arrays = {
        f.name: ns.asarray(np.array(getattr(curve, f.name)))
        for f in dataclasses.fields(curve)
        if isinstance(getattr(curve, f.name), np.ndarray)
    }
    return dataclasses.replace(curve, **arrays)


def _host_inputs(y_true, y_proba, sample_weight):
    """The inputs on the host (numpy); Dask collections are refused."""
    arrays = (y_true, y_proba, sample_weight)
    if any(engine_of(a) for a in arrays):
        raise TypeError(
            "The bootstrap band of a reliability curve needs in-memory arrays "
            "(it resamples rows); call .compute() first, or pass band=None."
        )
    return tuple(to_numpy(a) for a in arrays)


def _resampled_frequencies(inp, cells, n_resamples, random_state):
    """``(n_resamples, n_bins)`` observed frequency of every bin in every
    row resample (NaN where a resample leaves the bin empty)."""
    rng = check_random_state(random_state)
    if inp.sample_weight is None and cells.rows is None:
        boot = group_bootstrap_totals(cells, n_resamples, rng)
    else:
        boot = bootstrap_totals(inp, cells, n_resamples, rng)
    weight, hits = boot[:, W, 0], boot[:, ACC, 0]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(weight > 0, hits / weight, np.nan)


def band_from_resamples(accuracy, n_eff, resampled, band, confidence_level):
    """``(lower, upper)`` of the band ``band`` around the per-bin
    ``accuracy`` (effective sizes ``n_eff``) from its ``(n_resamples,
    n_bins)`` resampled values.

    ``"pointwise"``: the ``(1 -+ confidence_level) / 2`` quantiles of each
    bin's resampled frequencies (percentile bootstrap). ``"simultaneous"``:
    the sup-t band on the arcsine square-root scale, ``theta_j +- q / (2
    sqrt(n_eff_j))`` with ``theta = arcsin(sqrt(accuracy))`` (whose standard
    deviation is about ``1 / (2 sqrt(n))`` whatever the frequency) and
    ``q`` the ``confidence_level`` quantile over the resamples of ``max_j
    2 sqrt(n_eff_j) |theta*_j - theta_j|``, mapped back by ``sin(.)**2``.
    NaN for the bins empty in the sample (or in every resample).
    """
    alpha = 1.0 - confidence_level
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN bins
        if band == "pointwise":
            lower, upper = np.nanquantile(resampled, [alpha / 2, 1 - alpha / 2], axis=0)
        else:
            theta = np.arcsin(np.sqrt(accuracy))
            scale = 2.0 * np.sqrt(n_eff)
            worst = np.nanmax(np.abs(np.arcsin(np.sqrt(resampled)) - theta) * scale, 1)
            half = float(np.nanquantile(worst, 1 - alpha)) / scale
            lower = np.sin(np.clip(theta - half, 0.0, np.pi / 2)) ** 2
            upper = np.sin(np.clip(theta + half, 0.0, np.pi / 2)) ** 2
    empty = ~np.isfinite(accuracy) | ~np.isfinite(lower) | ~np.isfinite(upper)
    lower = np.where(empty, np.nan, np.clip(np.minimum(lower, accuracy), 0.0, 1.0))
    upper = np.where(empty, np.nan, np.clip(np.maximum(upper, accuracy), 0.0, 1.0))
    return lower, upper


def bootstrap_band(y_true, y_proba, curve, *, params, band, n_resamples, random_state):
    """``(band_lower, band_upper)`` of ``curve``, a binned
    :class:`~skcalib.metrics.ReliabilityCurve`, from ``n_resamples`` row
    resamples binned by the curve's edges (see :func:`band_from_resamples`).

    ``params``: ``sample_weight``, ``labels``, ``n_bins`` (resolved) and
    ``strategy`` of the curve; its ``kind`` and ``class_index`` are the
    curve's. The edges are recomputed from the full sample by the same
    function as the curve's, so they are the curve's (checked).
    """
    y_true, y_proba, weight = _host_inputs(y_true, y_proba, params["sample_weight"])
    inp = check_metric_inputs(
        y_true, y_proba, sample_weight=weight, labels=params["labels"]
    )
    kind, class_index = curve_cells(curve.kind, curve.class_index, inp.n_classes)
    top = None if kind == "classwise" else top1(inp.proba, check_values=False)
    cells = cell_assignment(
        inp, kind, params["n_bins"], params["strategy"], class_index, top
    )
    if not np.array_equal(cells.edges[0], np.asarray(to_numpy(curve.edges))):
        raise RuntimeError("the bootstrap band's edges differ from the curve's")
    totals = cell_totals(inp, cells)[0][:, 0]
    with np.errstate(divide="ignore", invalid="ignore"):
        accuracy = totals[ACC] / totals[W]
        n_eff = totals[W] ** 2 / totals[W2]
    resampled = _resampled_frequencies(inp, cells, n_resamples, random_state)
    return band_from_resamples(accuracy, n_eff, resampled, band, curve.confidence_level)
