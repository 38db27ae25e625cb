"""Choosing the RAPS regularisation (``k_reg``, ``lam``) on a tuning split
of the calibration data (Angelopoulos, Bates, Malik & Jordan 2021, sec. 2.3
and appendix E, "optimizing for set size")."""

import numpy as np

from skcalib.conformal._quantile import conformal_quantile
from skcalib.conformal._scores import label_scores, prediction_sets, row_uniforms

__all__ = []  # private module

#: The values of ``lam`` searched, those of Angelopoulos et al. (2021) and MAPIE.
LAMBDA_GRID = (0.001, 0.01, 0.1, 0.2, 0.5)
#: A ``lam`` must shrink the mean set size by more than this to be preferred
#: to a smaller one (MAPIE's ``EPSILON``): equal sizes keep the smallest.
_SIZE_TOL = 1e-8


def tuning_split(proba, tuning_size, seed):
    """``(calibration, tuning)`` row indices: a row is a tuning row when its
    uniform :func:`row_uniforms(proba, seed) <row_uniforms>` is below
    ``tuning_size``.

    A row's side depends only on the seed and the row, as the uniforms of
    randomised sets do: the split does not change when rows are permuted,
    a weight of 2 and a duplicated row land on the same side, and for a
    random seed every row is a tuning row with probability ``tuning_size``,
    independently of its label (so about ``tuning_size * n`` rows, not
    exactly). When no row (or every row) falls below ``tuning_size``, the
    rows of the smallest (largest) uniform move over, so both parts are
    non-empty for ``n >= 2``. Not stratified: any class counts work.
    """
    u = row_uniforms(proba, seed)
    tune = u < tuning_size
    if not tune.any():
        tune = u == u.min()
    if tune.all():
        tune = u < u.max()
    return np.flatnonzero(~tune), np.flatnonzero(tune)


def choose_k_reg(proba, y, alpha, sample_weight=None):
    """``k_reg``: the top-k threshold of the tuning rows at level ``alpha``.

    The :math:`\\lceil (n + 1)(1 - \\alpha) \\rceil`-th smallest 1-based rank
    of the true label (the size of the split-conformal top-k sets), as in
    MAPIE; the number of classes when the tuning rows are too few for a
    finite threshold. Angelopoulos et al. take the plain empirical
    ``1 - alpha`` quantile of the ranks, without the finite-sample step.
    """
    ranks = label_scores(proba, y, "top_k")
    k = conformal_quantile(ranks, alpha, sample_weight)
    return int(proba.shape[1] if np.isinf(k) else k)


def choose_lam(
    proba,
    y,
    alpha,
    k_reg,
    u=None,
    *,
    include_last_label=True,
    sample_weight=None,
    grid=LAMBDA_GRID,
):
    """``lam``: the value of ``grid`` with the smallest mean set size.

    For each ``lam`` the RAPS threshold is computed on the tuning rows and
    their own sets are measured (weighted mean size with ``sample_weight``);
    a larger ``lam`` is kept only when it shrinks the mean size by more than
    ``1e-8``. ``u`` and ``include_last_label`` select the set rule (the same
    as the final sets: randomised when ``u`` is given).
    """
    if sample_weight is not None and not sample_weight.sum() > 0:
        sample_weight = None  # no weighted row: every row counts alike
    best_lam, best_size = grid[0], np.inf
    for lam in grid:
        params = {"k_reg": k_reg, "lam": lam}
        s = label_scores(proba, y, "raps", u, **params)
        t = conformal_quantile(s, alpha, sample_weight)
        sets = prediction_sets(
            proba, "raps", t, u, include_last_label=include_last_label, **params
        )
        size = np.average(sets.sum(axis=1), weights=sample_weight)
        if size < best_size - _SIZE_TOL:
            best_lam, best_size = lam, size
    return float(best_lam)


def resolve_raps(est, proba, y, u, sample_weight, rng):
    """``(k_reg, lam, calibration rows)`` of a RAPS ``ConformalClassifier``.

    Given values are used as they are, with every row for the threshold;
    with ``"auto"`` ones, :func:`tuning_split` sets about
    ``est.tuning_size`` of the rows aside (rows hashed with a seed drawn
    from ``rng``), chooses the values on them at
    ``est.alpha`` with the estimator's set rule, and returns the other rows.
    """
    k_reg = None if est.k_reg == "auto" else int(est.k_reg)
    lam = None if est.lam == "auto" else float(est.lam)
    if k_reg is not None and lam is not None:
        return k_reg, lam, np.arange(y.size)
    seed = int(rng.randint(np.iinfo(np.int32).max))
    cal, tune = tuning_split(proba, est.tuning_size, seed)
    w = None if sample_weight is None else sample_weight[tune]
    if k_reg is None:
        k_reg = choose_k_reg(proba[tune], y[tune], est.alpha, w)
    if lam is None:
        lam = choose_lam(
            proba[tune],
            y[tune],
            est.alpha,
            k_reg,
            None if u is None else u[tune],
            include_last_label=est.include_last_label,
            sample_weight=w,
        )
    return k_reg, lam, cal
