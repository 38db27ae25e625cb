"""Bootstrap confidence intervals of the calibration errors.

The per-cell statistics of every resample are computed at once: they are
linear in the resampling counts, so one sparse product with the counts of a
block of resamples gives them all (no Python loop over samples or
resamples).
"""

from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
from scipy import sparse
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions, validate_params

from skcalib._scores import check_probabilities
from skcalib.metrics._calibration_error import (
    ECE_CONSTRAINTS,
    check_norm,
    reduce_totals,
)
from skcalib.metrics._curve import cell_assignment, cell_totals, top1
from skcalib.metrics._validation import (
    check_finite_proba,
    check_metric_inputs,
    check_n_bins,
)

__all__ = ["CalibrationErrorInterval", "calibration_error_interval"]

#: Bootstrap resamples are processed in blocks of about this many weights.
_BOOTSTRAP_BLOCK = 1 << 22


@dataclass(frozen=True, eq=False)
class CalibrationErrorInterval:
    """Bootstrap confidence interval of a calibration error.

    Attributes
    ----------
    estimate : float
        The calibration error of the full sample.
    low, high : float
        Interval bounds.
    confidence_level : float
        Nominal coverage.
    method : str
        ``"percentile"`` or ``"basic"``.
    standard_error : float
        Standard deviation of the bootstrap distribution.
    bootstrap_distribution : ndarray of shape (n_resamples,)
        The error of every resample (read-only).

    See Also
    --------
    calibration_error_interval : Computes it.
    """

    estimate: float
    low: float
    high: float
    confidence_level: float
    method: str
    standard_error: float
    bootstrap_distribution: np.ndarray


def _resample_counts(rng, n, n_rows):
    """``n_rows`` multinomial(n, 1/n) count vectors (how often each row is drawn)."""
    draws = rng.randint(0, n, size=(n_rows, n))
    draws += (np.arange(n_rows) * n)[:, None]
    return np.bincount(draws.ravel(), minlength=n_rows * n).reshape(n_rows, n)


def bootstrap_totals(inp, cells, n_resamples, rng):
    """Per-cell statistics ``(n_resamples, 5, G, M)`` of bootstrap resamples.

    Every statistic is linear in the resampling counts ``c_i``: with the
    sparse design ``A`` (samples x 5 cells) holding each entry's
    contribution, the statistics of all resamples are ``C @ A``.
    """
    n = inp.n_samples
    rows = np.arange(n) if cells.rows is None else cells.rows
    w = np.ones(n) if inp.sample_weight is None else inp.sample_weight
    we = w[rows]
    n_cells = cells.n_groups * cells.n_bins
    contrib = [we, we * cells.value, we * cells.target, we * we, np.ones(rows.size)]
    design = sparse.csr_matrix(
        (
            np.concatenate(contrib),
            (
                np.tile(rows, 5),
                np.concatenate([cells.cells + q * n_cells for q in range(5)]),
            ),
        ),
        shape=(n, 5 * n_cells),
    ).T.tocsr()
    out = np.empty((n_resamples, 5 * n_cells))
    step = max(1, _BOOTSTRAP_BLOCK // n)
    for start in range(0, n_resamples, step):
        stop = min(start + step, n_resamples)
        counts = _resample_counts(rng, n, stop - start).astype(np.float64)
        out[start:stop] = (design @ counts.T).T
    return out.reshape(n_resamples, 5, cells.n_groups, cells.n_bins)


@validate_params(
    {
        **ECE_CONSTRAINTS,
        "confidence_level": [Interval(Real, 0, 1, closed="neither")],
        "n_resamples": [Interval(Integral, 1, None, closed="left")],
        "method": [StrOptions({"percentile", "basic"})],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def calibration_error_interval(
    y_true,
    y_proba,
    *,
    n_bins=15,
    strategy="uniform",
    kind="confidence",
    norm="l1",
    debias=False,
    sample_weight=None,
    labels=None,
    confidence_level=0.95,
    n_resamples=1000,
    method="percentile",
    random_state=None,
):
    """Bootstrap confidence interval of any calibration error variant.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True class labels.
    y_proba : array-like of shape (n_samples,) or (n_samples, n_classes)
        Predicted probabilities (1-D: of the positive class).
    n_bins : int, default=15
        Number of bins.
    strategy : {"uniform", "quantile"}, default="uniform"
        Equal-width or equal-mass bins (the bins of the full sample).
    kind : {"confidence", "top_label", "classwise"}, default="confidence"
        Variant, as in :func:`expected_calibration_error`.
    norm : {"l1", "l2", "max"}, default="l1"
        Norm, as in :func:`expected_calibration_error`.
    debias : bool, default=False
        Debiased L2 error (``norm="l2"`` only).
    sample_weight : array-like of shape (n_samples,), default=None
        Sample weights (resampled with their rows).
    labels : array-like of shape (n_classes,), default=None
        Class labels of the columns of ``y_proba``.
    confidence_level : float, default=0.95
        Nominal coverage of the interval.
    n_resamples : int, default=1000
        Number of bootstrap resamples.
    method : {"percentile", "basic"}, default="percentile"
        ``"percentile"``: the ``(1 - level) / 2`` and ``(1 + level) / 2``
        quantiles of the bootstrap distribution. ``"basic"`` (reverse
        percentile): those quantiles reflected around the estimate,
        ``2 * estimate - q``, which corrects a bias that the bootstrap
        reproduces (see Notes); clipped at 0 unless ``debias=True``. For
        an interval with close to nominal coverage use ``norm="l2",
        debias=True`` with ``"percentile"``.
    random_state : int, RandomState instance or None, default=None
        Seed of the resampling.

    Returns
    -------
    interval : CalibrationErrorInterval
        ``estimate``, ``low``, ``high``, ``standard_error`` and the
        ``bootstrap_distribution``.

    See Also
    --------
    expected_calibration_error : The estimate.
    reliability_curve : Per-bin Wilson intervals.

    Notes
    -----
    Rows are resampled with replacement (multinomial counts; weights are
    carried along). The bins (quantile edges included) are those of the full
    sample and stay fixed, so the interval is about the binned error of these
    bins; the per-cell sums of all resamples are computed at once as a
    product of the resampling counts with a sparse matrix, without a Python
    loop over samples or resamples.

    What the interval covers: the population value of the *binned* error for
    these bins (which for L1 is at most the continuous calibration error).
    The plug-in ECE is biased upwards, by about
    :math:`\\sum_B \\frac{W_B}{W} \\sqrt{2 / \\pi}\\,\\sigma_B` when the gap of
    a bin is small compared with its standard error :math:`\\sigma_B` (close
    to calibrated, few samples per bin), and the bootstrap distribution is
    shifted up by about as much again: the percentile interval of the
    plug-in ECE under-covers in that regime (never covers a calibrated
    model's 0) and is fine when every gap is large against its noise. The
    debiased L2 error (``norm="l2", debias=True``) removes that bias; its
    percentile interval has close to nominal coverage in every regime we
    measured. Measured coverage of the true binned error at 95% (binary,
    15 bins, 2000 samples, 300 draws; ``tests/metrics/test_interval.py``):

    ============================  ==============  =====  ==========
    interval                      over-confident  mild   calibrated
    ============================  ==============  =====  ==========
    debiased L2, percentile       0.94            0.92   0.94
    plug-in L1, percentile        0.96            0.53   0.00
    plug-in L1, basic             --              0.91   --
    ============================  ==============  =====  ==========

    References
    ----------
    .. [1] B. Efron and R. J. Tibshirani, "An Introduction to the Bootstrap",
       Chapman & Hall, 1993.
    .. [2] A. Kumar, P. Liang and T. Ma, "Verified Uncertainty Calibration",
       NeurIPS 2019.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib.metrics import calibration_error_interval
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=2000)
    >>> truth = 0.5 + (p - 0.5) / 2          # over-confident: true ECE 0.125
    >>> y = (rng.uniform(size=2000) < truth).astype(int)
    >>> ci = calibration_error_interval(y, p, n_resamples=200, random_state=0)
    >>> round(ci.estimate, 3), round(ci.low, 3), round(ci.high, 3)
    (0.14, 0.12, 0.161)
    """
    n_bins = check_n_bins(n_bins)
    check_norm(norm, debias)
    inp = check_metric_inputs(
        y_true, y_proba, sample_weight=sample_weight, labels=labels, check_values=False
    )
    if kind == "classwise":
        check_finite_proba(inp.proba)
        check_probabilities(inp.proba, name="y_proba")
        top = None
    else:
        top = top1(inp.proba)
    cells = cell_assignment(inp, kind, n_bins, strategy, top=top)
    totals, _ = cell_totals(inp, cells)
    estimate = float(reduce_totals(totals, kind, norm, debias))
    rng = check_random_state(random_state)
    boot = reduce_totals(
        bootstrap_totals(inp, cells, n_resamples, rng), kind, norm, debias
    )
    boot = boot[np.isfinite(boot)]  # a resample of zero total weight only
    if boot.size == 0:
        raise ValueError("Every bootstrap resample has zero total weight.")
    alpha = (1 - confidence_level) / 2
    q_low, q_high = np.quantile(boot, [alpha, 1 - alpha])
    if method == "percentile":
        low, high = q_low, q_high
    else:
        low, high = 2 * estimate - q_high, 2 * estimate - q_low
        if not debias:
            low, high = max(low, 0.0), max(high, 0.0)
    boot.flags.writeable = False
    return CalibrationErrorInterval(
        estimate=estimate,
        low=float(low),
        high=float(high),
        confidence_level=float(confidence_level),
        method=method,
        standard_error=float(boot.std(ddof=1)) if boot.size > 1 else 0.0,
        bootstrap_distribution=boot,
    )
