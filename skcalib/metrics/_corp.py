"""CORP: the isotonic (PAV) reliability curve, its consistency band and the
CORP decomposition of the Brier and the log score.

CORP (*consistent, optimally binned, reproducible, PAV-based*; Dimitriadis,
Gneiting & Jordan 2021) replaces the bins of a reliability diagram by the
blocks of the isotonic regression of the event on the probability: the
bins are chosen by the data, with no tuning parameter. The isotonic fit
is scikit-learn's :func:`~sklearn.isotonic.isotonic_regression` (pool
adjacent violators) on the pooled distinct probabilities.
"""

from dataclasses import dataclass
from numbers import Integral

import numpy as np
from scipy.special import xlogy
from sklearn.isotonic import isotonic_regression
from sklearn.utils import check_random_state

from skcalib._core.compat import Interval, StrOptions, validate_params
from skcalib._core.inputs import (
    COMMON_CONSTRAINTS,
    KINDS,
    check_metric_inputs,
    curve_cells,
)
from skcalib._core.losses import NLL_FLOOR
from skcalib._core.totals import iter_groups
from skcalib._core.xp import host_array_api

__all__ = ["CORPDecomposition", "corp_decomposition"]

_SCORES = ("brier", "log")


# ------------------------------------------------------------------ pairs
def event_pairs(y_true, y_proba, *, kind, class_index, sample_weight, labels):
    """``(x, event, w, class_index, weight_scale)`` of the one group of a
    curve: the probability (float64), the event (float64 0/1) and the
    weights (None: equal; the user's divided by ``weight_scale``) of
    ``kind`` (see :func:`~skcalib.metrics.reliability_curve`); rows of
    weight 0 are dropped."""
    inp = check_metric_inputs(
        y_true, y_proba, sample_weight=sample_weight, labels=labels
    )
    kind, class_index = curve_cells(kind, class_index, inp.n_classes)
    ((_, x, event, w),) = list(iter_groups(inp, kind, class_index))
    x, event = np.asarray(x, dtype=np.float64), np.asarray(event, dtype=np.float64)
    if w is not None:
        keep = w > 0
        x, event, w = x[keep], event[keep], w[keep]
    if x.size == 0:
        raise ValueError(
            f"No sample is in the curve of kind={kind!r}, class_index="
            f"{class_index} (no sample is predicted as that class)."
        )
    return x, event, w, class_index, inp.weight_scale


@dataclass(frozen=True)
class Pooled:
    """The samples pooled by distinct probability: ``values`` (sorted),
    ``inverse`` (the value of each sample), per value the total weight
    ``weight``, squared weight ``weight2``, sample count ``count`` and
    weighted event sum ``events``."""

    values: np.ndarray
    inverse: np.ndarray
    weight: np.ndarray
    weight2: np.ndarray
    count: np.ndarray
    events: np.ndarray

    def pav(self, events=None):
        """PAV fit at each distinct value (of ``events``, default: the
        observed weighted event sums per value), in ``[0, 1]``."""
        events = self.events if events is None else events
        return isotonic_regression(
            events / self.weight, sample_weight=self.weight, y_min=0.0, y_max=1.0
        )


def pool(x, event, w):
    """:class:`Pooled` of the pairs ``(x, event)`` with weights ``w``."""
    values, inverse = np.unique(x, return_inverse=True)
    inverse = inverse.ravel()
    ww = np.ones(x.size) if w is None else w
    m = values.size
    return Pooled(
        values=values,
        inverse=inverse,
        weight=np.bincount(inverse, weights=ww, minlength=m),
        weight2=np.bincount(inverse, weights=ww * ww, minlength=m),
        count=np.bincount(inverse, minlength=m),
        events=np.bincount(inverse, weights=ww * event, minlength=m),
    )


def consistency_draws(pooled, x, w, n_resamples, random_state):
    """``(n_resamples, n_values)`` PAV fits of outcomes redrawn under
    calibration, ``event* ~ Bernoulli(x)`` with the forecasts kept.

    Without weights the events of a distinct value ``v`` held by ``c``
    samples are one ``Binomial(c, v)`` draw (the same law, drawn in
    ``O(n_values)``, free of the row order); with weights each row is one
    Bernoulli draw counted with its weight, drawn in the order of
    ``(x, w)`` so that the rows' order does not matter either.
    """
    rng = check_random_state(random_state)
    fits = np.empty((n_resamples, pooled.values.size))
    if w is None:
        single = pooled.count == 1  # one Bernoulli draw: a uniform is faster
        events = np.empty(pooled.values.size)
        for b in range(n_resamples):
            events[single] = rng.random_sample(single.sum()) < pooled.values[single]
            events[~single] = rng.binomial(
                pooled.count[~single], pooled.values[~single]
            )
            fits[b] = pooled.pav(events)
        return fits
    order = np.lexsort((w, x))
    xs, ws, inverse = x[order], w[order], pooled.inverse[order]
    for b in range(n_resamples):
        drawn = rng.random_sample(xs.size) < xs
        events = np.bincount(inverse, weights=ws * drawn, minlength=fits.shape[1])
        fits[b] = pooled.pav(events)
    return fits


def isotonic_curve_arrays(
    y_true,
    y_proba,
    *,
    kind,
    class_index,
    sample_weight,
    labels,
    confidence_level,
    n_resamples,
    random_state,
):
    """The arrays of the CORP reliability curve (one bin per PAV block), for
    :func:`~skcalib.metrics.reliability_curve` with ``strategy="isotonic"``.

    Returns a dict: per block ``edges`` (``[0, max_0, ..., max_{m-2}, 1]``:
    block ``j`` holds the probabilities in ``(edges[j], edges[j + 1]]``),
    ``mean_confidence``, ``accuracy`` (the PAV value), ``counts`` (weight),
    ``n_samples``, ``n_eff`` (Kish); the drawn curve ``curve_x``,
    ``curve_y`` (each block from its smallest to its largest probability);
    the consistency band ``band_lower``, ``band_upper`` at ``curve_x``
    (None when ``n_resamples`` is 0); and ``class_index``.
    """
    x, event, w, class_index, scale = event_pairs(
        y_true,
        y_proba,
        kind=kind,
        class_index=class_index,
        sample_weight=sample_weight,
        labels=labels,
    )
    pooled = pool(x, event, w)
    fit = pooled.pav()
    starts = np.flatnonzero(np.r_[True, np.diff(fit) != 0])
    ends = np.r_[starts[1:], fit.size] - 1
    weight = np.add.reduceat(pooled.weight, starts)
    wide = ends > starts  # blocks spanning more than one probability
    ids = np.column_stack((starts, ends)).ravel()
    ids = ids[np.column_stack((np.ones_like(wide), wide)).ravel()]
    out = {
        "edges": np.r_[0.0, pooled.values[ends[:-1]], 1.0],
        "mean_confidence": np.add.reduceat(pooled.weight * pooled.values, starts)
        / weight,
        "accuracy": fit[starts],
        "counts": weight * scale,
        "n_samples": np.add.reduceat(pooled.count, starts).astype(np.intp),
        "n_eff": weight**2 / np.add.reduceat(pooled.weight2, starts),
        "curve_x": pooled.values[ids],
        "curve_y": fit[ids],
        "band_lower": None,
        "band_upper": None,
        "class_index": class_index,
    }
    if n_resamples:
        draws = consistency_draws(pooled, x, w, n_resamples, random_state)[:, ids]
        alpha = (1.0 - confidence_level) / 2
        out["band_lower"], out["band_upper"] = np.quantile(
            draws, [alpha, 1.0 - alpha], axis=0
        )
    return out


# ---------------------------------------------------------- decomposition
def binary_score(x, event, w, score):
    """Weighted mean Brier ``(x - event)**2`` or log score ``-log p(event)``
    (the probability floored at :data:`~skcalib._core.losses.NLL_FLOOR`, as
    :func:`~skcalib.metrics.negative_log_likelihood`)."""
    if score == "brier":
        losses = np.square(x - event)
    else:
        losses = -np.log(np.maximum(np.where(event > 0, x, 1.0 - x), NLL_FLOOR))
    return float(np.average(losses, weights=w))


def _uncertainty(base_rate, score):
    if score == "brier":
        return float(base_rate * (1.0 - base_rate))
    return float(-xlogy(base_rate, base_rate) - xlogy(1 - base_rate, 1 - base_rate))


@dataclass(frozen=True)
class CORPDecomposition:
    """Result of :func:`corp_decomposition`: ``score = miscalibration -
    discrimination + uncertainty``.

    Attributes
    ----------
    score : float
        Mean score of the probabilities.
    miscalibration : float
        MCB: the score minus that of the PAV-recalibrated probabilities
        (>= 0; 0 when the isotonic fit is the identity).
    discrimination : float
        DSC: the score of the base rate minus that of the recalibrated
        probabilities (>= 0).
    uncertainty : float
        UNC: the score of the base rate (the weighted mean event).
    score_name : str
        ``"brier"`` or ``"log"``.
    kind : str
        What was decomposed: ``"classwise"``, ``"confidence"`` or
        ``"top_label"``.
    class_index : int or None
        The column decomposed, or None (pooled top-1 confidence).

    See Also
    --------
    corp_decomposition : Computes it.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib.metrics import corp_decomposition
    >>> d = corp_decomposition([0, 0, 1, 1], [0.2, 0.6, 0.4, 0.9])
    >>> d.miscalibration, d.discrimination, d.uncertainty
    (0.0675, 0.125, 0.25)
    """

    score: float
    miscalibration: float
    discrimination: float
    uncertainty: float
    score_name: str
    kind: str
    class_index: int | None


@host_array_api("y_proba")
@validate_params(
    {
        **COMMON_CONSTRAINTS,
        "score": [StrOptions(set(_SCORES))],
        "kind": [StrOptions({"auto", *KINDS})],
        "class_index": [Interval(Integral, 0, None, closed="left"), None],
    },
    prefer_skip_nested_validation=True,
)
def corp_decomposition(
    y_true,
    y_proba,
    *,
    score="brier",
    kind="auto",
    class_index=None,
    sample_weight=None,
    labels=None,
):
    """CORP decomposition of the Brier or log score: MCB - DSC + UNC.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True class labels.
    y_proba : array-like of shape (n_samples,) or (n_samples, n_classes)
        Predicted probabilities (1-D: of the positive class).
    score : {"brier", "log"}, default="brier"
        The proper score decomposed, of the binary pair (probability,
        event): ``(x - event)**2`` or ``-log`` of the probability given to
        the event.
    kind : {"auto", "classwise", "confidence", "top_label"}, default="auto"
        The binary pairs, as in :func:`reliability_curve`: ``"classwise"``,
        the probability of class ``class_index`` against ``y == class``;
        ``"confidence"``, the top-1 probability against top-1 correctness;
        ``"top_label"`` with ``class_index``, the same for the samples
        predicted as that class. ``"auto"``: ``"classwise"`` of the
        positive class for two classes (the decomposition of the paper),
        ``"confidence"`` otherwise.
    class_index : int, default=None
        Column of ``y_proba`` for ``"classwise"`` and ``"top_label"``.
    sample_weight : array-like of shape (n_samples,), default=None
        Sample weights.
    labels : array-like of shape (n_classes,), default=None
        Class labels of the columns of ``y_proba``.

    Returns
    -------
    result : CORPDecomposition
        ``score``, ``miscalibration``, ``discrimination``, ``uncertainty``.

    See Also
    --------
    reliability_curve : ``strategy="isotonic"`` gives the CORP curve whose
        gap to the diagonal ``miscalibration`` measures.
    calibration_refinement_decomposition : ``recalibration="isotonic"`` is
        the same miscalibration term (binary); cross-fitted with ``cv``.

    Notes
    -----
    With :math:`\\hat x` the weighted isotonic (PAV) regression of the event
    on the probability :math:`x` (ties pooled), :math:`\\bar y` the weighted
    base rate and :math:`\\bar S` the weighted mean score [1]_:

    .. math::

        \\mathrm{MCB} = \\bar S(x) - \\bar S(\\hat x), \\quad
        \\mathrm{DSC} = \\bar S(\\bar y) - \\bar S(\\hat x), \\quad
        \\mathrm{UNC} = \\bar S(\\bar y),

    so that :math:`\\bar S(x) = \\mathrm{MCB} - \\mathrm{DSC} +
    \\mathrm{UNC}` exactly. The PAV fit minimises every proper score among
    non-decreasing maps, the identity and the constants included, so MCB
    and DSC are >= 0. For two classes with ``kind="classwise"`` ``score``
    equals :func:`brier_score` and :func:`negative_log_likelihood`. MCB is
    the in-sample term, biased upwards as an estimate of the population's
    (about the number of PAV blocks over ``n``, for the log score, on
    calibrated data); see :func:`calibration_refinement_decomposition` for
    a cross-fitted estimate.

    Array API: inputs of another namespace are moved to the host (PAV is
    sequential).

    References
    ----------
    .. [1] T. Dimitriadis, T. Gneiting and A. I. Jordan, "Stable reliability
       diagrams for probabilistic classifiers", PNAS 118(8), 2021.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib.metrics import corp_decomposition
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=2000)
    >>> y = rng.uniform(size=2000) < p ** 2        # p is too high
    >>> d = corp_decomposition(y, p, labels=[False, True])
    >>> round(d.score, 4), round(d.miscalibration, 4)
    (0.1643, 0.0387)
    >>> bool(abs(d.score - (d.miscalibration - d.discrimination + d.uncertainty))
    ...      < 1e-15)
    True
    """
    if kind == "auto":
        two = np.ndim(y_proba) == 1 or np.shape(y_proba)[1] == 2
        kind = "classwise" if two else "confidence"
    x, event, w, class_index, _ = event_pairs(
        y_true,
        y_proba,
        kind=kind,
        class_index=class_index,
        sample_weight=sample_weight,
        labels=labels,
    )
    pooled = pool(x, event, w)
    recalibrated = pooled.pav()[pooled.inverse]
    value = binary_score(x, event, w, score)
    refined = binary_score(recalibrated, event, w, score)
    unc = _uncertainty(float(np.average(event, weights=w)), score)
    mcb = value - refined
    return CORPDecomposition(
        score=value,
        miscalibration=mcb,
        discrimination=unc - refined,
        uncertainty=unc,
        score_name=score,
        kind=kind,
        class_index=class_index,
    )
