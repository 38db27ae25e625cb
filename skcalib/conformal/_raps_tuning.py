"""Choosing the RAPS regularisation (``k_reg``, ``lam``) on a tuning split
of the calibration data (Angelopoulos, Bates, Malik & Jordan 2021, sec. 2.3
and appendix E, "optimizing for set size")."""

import warnings

import numpy as np

from skcalib.conformal._quantile import _LEVEL_RTOL, _min_samples, conformal_quantile
from skcalib.conformal._scores import label_scores, prediction_sets

__all__ = []  # private module

#: The values of ``lam`` searched, those of Angelopoulos et al. (2021) and MAPIE.
LAMBDA_GRID = (0.001, 0.01, 0.1, 0.2, 0.5)
#: A ``lam`` must shrink the mean set size by more than this to be preferred
#: to a smaller one (MAPIE's ``EPSILON``): equal sizes keep the smallest.
_SIZE_TOL = 1e-8


def n_tuning_rows(n, tuning_size):
    """Number of tuning rows among ``n``: ``ceil(tuning_size * n)`` (as the
    ``test_size`` of :func:`sklearn.model_selection.train_test_split`)."""
    x = tuning_size * n
    return int(np.ceil(x - _LEVEL_RTOL * x))


def tuning_split(n, tuning_size, seed):
    """``(calibration, tuning)`` row indices: a random permutation of the
    ``n`` rows (``numpy.random.default_rng(seed)``), its first
    :func:`n_tuning_rows` rows for tuning, the rest for the threshold.

    The split depends on the seed and the row positions only, never on the
    rows' content: given the permutation is independent of the data, the
    calibration rows are a random subset of exchangeable rows, hence
    exchangeable with a test row, which the guarantee needs. (A split by a
    hash of each row's probabilities puts tied rows on the same side: on a
    k-nearest-neighbours model, whose rows take a few distinct values, one
    seed's threshold then came from a few kinds of rows only and covered
    0.3 of the test rows.) The price: the split, and so the result, depends
    on the row order given a seed, and a weight of 2 is no longer a
    duplicated row. Both indices are sorted; not stratified.
    """
    perm = np.random.default_rng(seed).permutation(n)
    n_tune = n_tuning_rows(n, tuning_size)
    return np.sort(perm[n_tune:]), np.sort(perm[:n_tune])


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
    with ``"auto"`` ones, :func:`tuning_split` sets
    ``ceil(est.tuning_size * n)`` rows aside (a permutation drawn from a
    seed drawn from ``rng``), chooses the values on them at ``est.alpha``
    with the estimator's set rule, and returns the other rows. Raises when
    no row would be left for the threshold; warns when the tuning rows are
    too few for a finite top-k threshold (``k_reg`` is then the number of
    classes).
    """
    k_reg = None if est.k_reg == "auto" else int(est.k_reg)
    lam = None if est.lam == "auto" else float(est.lam)
    if k_reg is not None and lam is not None:
        return k_reg, lam, np.arange(y.size)
    n = y.size
    n_tune = n_tuning_rows(n, est.tuning_size)
    auto = [name for name in ("k_reg", "lam") if getattr(est, name) == "auto"]
    if n_tune >= n:
        raise ValueError(
            f"tuning_size={est.tuning_size} sets {n_tune} of the {n} calibration "
            f"rows aside to choose {' and '.join(auto)}, leaving none for the "
            "threshold: give more calibration rows, a smaller tuning_size, or "
            "k_reg and lam explicitly."
        )
    if k_reg is None and n_tune < _min_samples(est.alpha):
        warnings.warn(
            f"tuning_size={est.tuning_size} gives {n_tune} tuning rows, fewer than "
            f"the {_min_samples(est.alpha)} a finite top-k threshold needs at "
            f"alpha={est.alpha}: k_reg is set to the number of classes "
            f"({proba.shape[1]}, no penalty). Give more calibration rows, a "
            "larger tuning_size, or k_reg explicitly.",
            UserWarning,
            stacklevel=5,
        )
    seed = int(rng.randint(np.iinfo(np.int32).max))
    cal, tune = tuning_split(n, est.tuning_size, seed)
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
