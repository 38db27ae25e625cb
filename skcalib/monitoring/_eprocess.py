"""The betting core of :class:`~skcalib.monitoring.CalibrationMonitor`.

A *cell* is one bin of the confidence (``kind="confidence"``) or one (class,
bin) pair (``kind="classwise"``). Each cell runs a test martingale that bets
on the residuals ``r = outcome - probability`` of its rows, and the monitor's
e-process is the average of the cells' wealths. Every function here takes a
leading axis of independent streams, so that the validity simulations run
hundreds of streams at once through the same code as the monitor (one
stream).
"""

from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

#: Largest fraction of the wealth at risk on one row (WSR 2024's truncation
#: ``c = 1/2``): every factor ``1 + lambda * r`` is at least ``1 - KAPPA``.
KAPPA = 0.5
#: Prior pseudo-observation of the bet estimates: one residual of 0 whose
#: square is 1/4 (WSR's prior variance of a [0, 1] variable).
PRIOR_SECOND = 0.25
#: The estimated mean residual is shrunk to 0 by this many standard errors
#: before it sets the bet, so that a calibrated stream costs little wealth.
THRESHOLD = 2.0


@dataclass
class BettingState:
    """Per-cell state of the test martingales, arrays of shape ``(S, C)``.

    ``log_wealth``: log of each cell's wealth (starts at 0). ``n``,
    ``sum_r``, ``sum_r2``: discounted count, sum and sum of squares of the
    cell's past residuals (they set the next bets). ``seen`` and
    ``total_r``: undiscounted count and residual sum (reported only).
    """

    log_wealth: np.ndarray
    n: np.ndarray
    sum_r: np.ndarray
    sum_r2: np.ndarray
    seen: np.ndarray
    total_r: np.ndarray

    @classmethod
    def start(cls, n_streams, n_cells):
        return cls(*(np.zeros((n_streams, n_cells)) for _ in range(6)))


def bet_bounds(edges, n_groups):
    """Lower and upper bounds ``(C,)`` of each cell's bet.

    A residual of a probability ``p`` lies in ``[-p, 1 - p]``, so ``1 +
    lambda r >= 1 - KAPPA`` for every ``p`` of the bin ``(lo, hi]`` when
    ``-KAPPA / (1 - lo) <= lambda <= KAPPA / hi``.
    """
    lo, hi = edges[:-1], edges[1:]
    return np.tile(-KAPPA / (1.0 - lo), n_groups), np.tile(KAPPA / hi, n_groups)


def bets(state, bounds):
    """The bets of the next batch ``(S, C)``, from past residuals only.

    aGRAPA (Waudby-Smith & Ramdas 2024): ``lambda = mean / second moment`` of
    the residuals, with the mean soft-thresholded at ``THRESHOLD`` standard
    errors, clipped to ``bounds``.
    """
    m = state.n + 1.0
    mean = state.sum_r / m
    second = (PRIOR_SECOND + state.sum_r2) / m
    se = np.sqrt(second / m)
    shrunk = np.sign(mean) * np.maximum(np.abs(mean) - THRESHOLD * se, 0.0)
    return np.clip(shrunk / second, bounds[0], bounds[1])


def step(state, cells, resid, n_rows, decay, bounds):
    """Bet on one batch of every stream and update ``state`` in place.

    Parameters
    ----------
    state : BettingState
    cells : ndarray of shape (S, m), intp
        Cell of each observation (``m = rows * observations per row``).
    resid : ndarray of shape (S, m)
        Its residual ``outcome - probability``.
    n_rows : int
        Rows of the batch (the discount of the moments is ``decay ** n_rows``).
    decay : float
        Per-row discount of the moments (1: no forgetting).
    bounds : tuple of ndarray
        From :func:`bet_bounds`.
    """
    n_streams, n_cells = state.log_wealth.shape
    lam = bets(state, bounds)  # fixed before this batch's outcomes are read
    ids = (cells + n_cells * np.arange(n_streams)[:, None]).ravel()
    r = resid.ravel()
    size = n_streams * n_cells

    def total(values):
        return np.bincount(ids, weights=values, minlength=size).reshape(
            n_streams, n_cells
        )

    state.log_wealth += total(np.log1p(lam.ravel()[ids] * r))
    count, s1, s2 = total(None), total(r), total(r * r)
    keep = decay**n_rows
    state.n = keep * state.n + count
    state.sum_r = keep * state.sum_r + s1
    state.sum_r2 = keep * state.sum_r2 + s2
    state.seen += count
    state.total_r += s1


def log_e_value(log_wealth):
    """Log of the average of the cells' wealths, per stream ``(S,)``."""
    return logsumexp(log_wealth, axis=-1) - np.log(log_wealth.shape[-1])


def driving_cells(log_wealth, alpha):
    """The fewest cells, largest wealth first, that raise the alarm alone.

    The average with every other cell held at its starting wealth 1 reaches
    ``1 / alpha`` with these cells; ``log_wealth`` is one stream's ``(C,)``
    at the alarm (its average reached ``1 / alpha``, so such a set exists
    among the cells of wealth above 1).
    """
    n_cells = log_wealth.size
    order = np.argsort(-log_wealth, kind="stable")
    gains = np.expm1(log_wealth[order])  # wealth - 1 of each cell
    reached = 1.0 + np.cumsum(gains) / n_cells >= 1.0 / alpha
    k = int(np.argmax(reached)) + 1 if reached.any() else int((gains > 0).sum())
    return order[:k]
