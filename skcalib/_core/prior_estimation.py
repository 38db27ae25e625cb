"""Class priors of unlabelled target data under label shift: the EM of
Saerens et al. (2002) and black-box shift estimation (Lipton et al. 2018),
and the validation of given priors."""

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

__all__ = []

#: Given priors must sum to 1 within this (they are then renormalised).
PRIOR_SUM_TOLERANCE = 1e-6


def check_priors(priors, classes, name="target_priors"):
    """Validated class priors: 1-D, one per class, finite, non-negative,
    summing to 1 within :data:`PRIOR_SUM_TOLERANCE` (renormalised exactly).

    Errors name the bad values.
    """
    try:
        arr = np.asarray(priors, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"{name} must be an array of numbers, got {priors!r}."
        ) from exc
    k = len(classes)
    if arr.ndim != 1 or arr.shape[0] != k:
        raise ValueError(
            f"{name} must have one entry per class ({k}: {list(classes)}), got "
            f"shape {arr.shape}."
        )
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, got {arr.tolist()}.")
    if np.any(arr < 0):
        bad = int(np.flatnonzero(arr < 0)[0])
        raise ValueError(
            f"{name} must be non-negative; the prior of class {classes[bad]!r} "
            f"is {float(arr[bad])!r}."
        )
    total = float(arr.sum())
    if abs(total - 1.0) > PRIOR_SUM_TOLERANCE:
        raise ValueError(
            f"{name} must sum to 1 (within {PRIOR_SUM_TOLERANCE:g}); "
            f"{arr.tolist()} sums to {total!r}."
        )
    return arr / total


def _unit_weights(sample_weight, n):
    if sample_weight is None:
        return np.full(n, 1.0 / n)
    w = np.asarray(sample_weight, dtype=np.float64)
    return w / w.sum()


def em_priors(proba, source_priors, sample_weight=None, *, max_iter=1000, tol=1e-8):
    """Target priors by EM (Saerens, Latinne & Decaestecker 2002).

    From ``pi = source_priors``, iterate

    * E step: ``q_ik = pi_k / pi_s,k * p_ik / sum_j pi_j / pi_s,j * p_ij``
      (the posteriors re-weighted to the current priors);
    * M step: ``pi_k = sum_i s_i q_ik / sum_i s_i``,

    until ``max_k |pi_new - pi| <= tol``. Each step raises the target
    log-likelihood ``sum_i s_i log sum_k (pi_k / pi_s,k) p_ik`` (concave in
    ``pi``), so the limit is its maximum on the simplex.

    Parameters
    ----------
    proba : ndarray of shape (n, K)
        Source-calibrated probabilities of the target rows.
    source_priors : ndarray of shape (K,)
        Positive source priors.
    sample_weight : ndarray of shape (n,) or None
        Non-negative weights of positive sum.
    max_iter : int
    tol : float

    Returns
    -------
    priors : ndarray of shape (K,)
    n_iter : int
    converged : bool
    """
    w = _unit_weights(sample_weight, proba.shape[0])
    ratio = np.asarray(proba, dtype=np.float64) / source_priors
    pi = np.asarray(source_priors, dtype=np.float64).copy()
    converged = False
    n_iter = 0
    for n_iter in range(1, max_iter + 1):  # noqa: B007
        q = ratio * pi
        q /= q.sum(axis=1, keepdims=True)
        new = w @ q
        new /= new.sum()
        change = float(np.max(np.abs(new - pi)))
        pi = new
        if change <= tol:
            converged = True
            break
    return pi, n_iter, converged


def confusion(y, proba, sample_weight, n_classes, *, soft):
    """Joint confusion matrix ``C[i, j] = P_s(y = i, yhat = j)`` (rows true,
    columns predicted, total 1); ``soft``: ``yhat`` drawn from ``proba``
    (the expected confusion) instead of its argmax."""
    w = _unit_weights(sample_weight, y.shape[0])
    if soft:
        onehot = np.zeros((y.shape[0], n_classes))
        onehot[np.arange(y.shape[0]), y] = w
        return onehot.T @ np.asarray(proba, dtype=np.float64)
    pred = np.argmax(proba, axis=1)
    flat = np.bincount(y * n_classes + pred, weights=w, minlength=n_classes**2)
    return flat.reshape(n_classes, n_classes)


def bbse_priors(confusion_matrix, proba, source_priors, sample_weight=None, *, soft):
    """Target priors by black-box shift estimation (Lipton, Wang & Smola 2018).

    Under label shift ``P_t(yhat = j) = sum_i C[i, j] w_i`` with
    ``w_i = pi_t,i / pi_s,i``: ``w`` solves ``C^T w = mu``, ``mu`` the
    target frequencies of the (hard or soft) predictions. The least-squares
    solution (minimum norm when ``C`` is singular, with a warning) can have
    negative entries from sampling noise: ``pi_t = w * pi_s`` is clipped at
    0 and renormalised to sum 1.

    Returns
    -------
    priors : ndarray of shape (K,)
    n_clipped : int
        Number of negative entries set to 0.
    """
    k = confusion_matrix.shape[0]
    w = _unit_weights(sample_weight, proba.shape[0])
    if soft:
        mu = w @ np.asarray(proba, dtype=np.float64)
    else:
        mu = np.bincount(np.argmax(proba, axis=1), weights=w, minlength=k)
    ratio, _, rank, _ = np.linalg.lstsq(confusion_matrix.T, mu, rcond=None)
    if rank < k:
        warnings.warn(
            f"BBSE: the source confusion matrix has rank {rank} < {k} (some "
            "class is never predicted, or two classes are predicted alike); "
            "the minimum-norm solution is used and the priors are not "
            "identified. Use method='em' or 'bbse_soft'.",
            UserWarning,
            stacklevel=4,
        )
    priors = ratio * source_priors
    n_clipped = int(np.count_nonzero(priors < 0))
    priors = np.maximum(priors, 0.0)
    total = priors.sum()
    if not total > 0:
        raise ValueError(
            "BBSE estimated no positive prior (every entry of C^-1 mu is <= 0); "
            "the target predictions do not fit a label shift of the source. "
            "Use method='em'."
        )
    return priors / total, n_clipped


def warn_em_unconverged(name, max_iter, tol):
    """The warning of an EM run that reached ``max_iter``."""
    warnings.warn(
        f"{name}: EM did not converge in max_iter={max_iter} iterations (prior "
        f"change > tol={tol:g}); increase max_iter or tol.",
        ConvergenceWarning,
        stacklevel=4,
    )
