"""The conformal-risk-control parameter: the smallest ``lambda`` whose
corrected empirical risk is at most ``alpha``, read exactly from the sorted
points where the risk steps down."""

import numpy as np

from skcalib.conformal._quantile import _LEVEL_RTOL

__all__ = []  # private module


def risk_steps(scores, rows, row_weight, label_count):
    """The step points of the empirical risk and their cumulative loss.

    Every true label ``(i, j)`` adds ``w_i / |Y_i|`` to the loss of row ``i``
    while it is outside the set, i.e. while ``lambda < s_ij``, with
    ``s_ij = 1 - p_ij``. The total loss at ``lambda`` is therefore the total
    ``U`` minus the cumulative weight of the scores ``<= lambda``.

    Parameters
    ----------
    scores : ndarray of shape (m,)
        ``1 - p_ij`` of every true label (in the dtype of the probabilities,
        the same expression the sets use).
    rows : ndarray of shape (m,), int
        The row of each true label.
    row_weight : ndarray of shape (n,), float64
        ``w_i`` (1 without ``sample_weight``).
    label_count : ndarray of shape (n,), int
        ``|Y_i|``; rows with none add no step (their loss is 0).

    Returns
    -------
    sorted_scores : ndarray of shape (m_kept,), float64
    cum_loss : ndarray of shape (m_kept,), float64
        Weight of the true labels with score ``<= sorted_scores[k]``, for
        the last of every run of tied scores and every other position alike
        (only the first position reaching a level is read).
    """
    per_label = row_weight[rows] / label_count[rows]
    keep = per_label > 0
    scores, per_label = scores[keep], per_label[keep]
    order = np.argsort(scores, kind="stable")
    return (
        scores[order].astype(np.float64),
        np.cumsum(per_label[order], dtype=np.float64),
    )


def risk_lambdas(sorted_scores, cum_loss, total_weight, alphas, bound=1.0):
    """``lambda_hat`` at every level of ``alphas``.

    With ``U = cum_loss[-1]`` the total loss at ``lambda = 0^-``, ``W`` the
    total row weight and ``B`` the loss bound, ``lambda`` passes when

    .. math::

        \\sum_i w_i L_i(\\lambda) + B \\le \\alpha (W + 1),

    i.e. when the cumulative weight of the scores ``<= lambda`` reaches
    ``U + B - alpha (W + 1)``. The first sorted score that reaches it is
    ``lambda_hat`` (0 when ``lambda = 0`` already passes; 1, full sets,
    when ``B > alpha (W + 1)``: then no ``lambda <= 1`` passes). The slack
    :data:`~skcalib.conformal._quantile._LEVEL_RTOL`, relative to ``W + 1``,
    keeps a level that is exact in exact arithmetic from moving to the next
    step through rounding, as in the split-conformal quantile.

    Returns
    -------
    lambdas : ndarray of shape (len(alphas),), float64
        Non-increasing in ``alpha``.
    feasible : ndarray of shape (len(alphas),), bool
        False where no ``lambda <= 1`` passes (``lambdas`` is 1 there).
    """
    alphas = np.asarray(alphas, dtype=np.float64)
    total_loss = float(cum_loss[-1]) if cum_loss.size else 0.0
    scale = total_weight + 1.0
    need = total_loss + bound - alphas * scale
    tol = _LEVEL_RTOL * scale
    k = np.searchsorted(cum_loss, need - tol, side="left")
    values = sorted_scores[np.minimum(k, max(sorted_scores.size - 1, 0))]
    values = values if sorted_scores.size else np.ones(alphas.shape)
    feasible = bound <= alphas * scale + tol
    lambdas = np.where(need <= tol, 0.0, np.clip(values, 0.0, 1.0))
    return np.where(feasible, lambdas, 1.0), feasible


def empirical_risk(sorted_scores, cum_loss, total_weight, lam):
    """The weighted mean loss ``sum_i w_i L_i(lam) / W`` of the calibration
    rows (rows without a true label count with loss 0)."""
    total_loss = float(cum_loss[-1]) if cum_loss.size else 0.0
    k = np.searchsorted(sorted_scores, lam, side="right")
    covered = float(cum_loss[k - 1]) if k > 0 else 0.0
    return (total_loss - covered) / total_weight
