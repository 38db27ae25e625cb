"""Conformal risk control with a user loss: the loss of every calibration
row at every ``lambda`` of a grid, checked to be bounded and non-increasing
as the sets grow."""

import numpy as np

from skcalib.conformal._quantile import _LEVEL_RTOL

__all__ = []  # private module

#: The grid of a callable loss when ``lambda_grid=None``.
DEFAULT_GRID_SIZE = 1001

#: Slack of the bound and monotonicity checks, relative to the bound ``B``
#: (a loss computed as ``1 - hits / n_true`` rounds).
_CHECK_RTOL = 1e-12


def check_grid(grid):
    """The ``lambda`` grid of a callable loss: increasing values in [0, 1],
    with 1 (full sets) appended when absent."""
    if grid is None:
        return np.linspace(0.0, 1.0, DEFAULT_GRID_SIZE)
    try:
        out = np.asarray(grid, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(
            f"lambda_grid must be a 1-D array of floats in [0, 1], got {grid!r}."
        ) from None
    if out.ndim != 1 or out.size == 0:
        raise ValueError(
            f"lambda_grid must be a non-empty 1-D array, got shape {out.shape}."
        )
    bad = np.flatnonzero(~((out >= 0) & (out <= 1)))
    if bad.size:
        raise ValueError(
            f"lambda_grid must lie in [0, 1]; lambda_grid[{bad[0]}] = "
            f"{out[bad[0]].item()!r}."
        )
    down = np.flatnonzero(np.diff(out) <= 0)
    if down.size:
        i = int(down[0]) + 1
        raise ValueError(
            f"lambda_grid must be strictly increasing; lambda_grid[{i}] = "
            f"{out[i].item()!r} after {out[i - 1].item()!r}."
        )
    return out if out[-1] == 1.0 else np.append(out, 1.0)


def _row_losses(loss, sets, y, lam, bound):
    values = np.asarray(loss(sets, y), dtype=np.float64)
    n = sets.shape[0]
    name = getattr(loss, "__name__", type(loss).__name__)
    if values.shape != (n,):
        raise ValueError(
            f"loss {name}(sets, y) must return one loss per row, shape ({n},); "
            f"got shape {values.shape} at lambda={lam:g}."
        )
    tol = _CHECK_RTOL * bound
    bad = np.flatnonzero(~((values >= -tol) & (values <= bound + tol)))
    if bad.size:
        i = int(bad[0])
        raise ValueError(
            f"loss {name} must lie in [0, loss_bound={bound:g}]; row {i} has "
            f"loss {values[i].item()!r} at lambda={lam:g}. Pass the loss's "
            "bound as loss_bound."
        )
    return values, name


def grid_loss_sums(proba, y, loss, grid, bound, weight):
    """``sum_i w_i L_i(lambda)`` at every ``lambda`` of ``grid``.

    The sets at ``lambda`` are ``1 - proba <= lambda``, the rule of the
    built-in losses. One call of ``loss`` per grid point, on all rows at
    once. An error when a row's loss is not finite, leaves ``[0, bound]``,
    or grows from one grid point to the next (the sets only grow).
    """
    scores = 1 - proba
    sums = np.empty(grid.size)
    previous = None
    for g, lam in enumerate(grid):
        values, name = _row_losses(loss, scores <= lam, y, lam, bound)
        if previous is not None:
            up = np.flatnonzero(values > previous + _CHECK_RTOL * bound)
            if up.size:
                i = int(up[0])
                raise ValueError(
                    f"loss {name} must not increase as the sets grow; row {i} "
                    f"has loss {previous[i].item()!r} at lambda="
                    f"{grid[g - 1]:g} and {values[i].item()!r} at lambda={lam:g}."
                )
        sums[g] = float(weight @ values)
        previous = values
    return sums


def grid_lambdas(grid, sums, total_weight, alphas, bound):
    """``lambda_hat`` on the grid at every level: the first grid point with
    ``sums + B <= alpha (W + 1)`` (slack as in the split-conformal
    quantile), 1 where none passes.

    Returns
    -------
    lambdas, feasible, index : ndarrays of shape (len(alphas),)
    """
    alphas = np.asarray(alphas, dtype=np.float64)
    scale = total_weight + 1.0
    passes = sums[None, :] + bound <= alphas[:, None] * scale + _LEVEL_RTOL * scale
    feasible = passes.any(axis=1)
    index = np.where(feasible, np.argmax(passes, axis=1), grid.size - 1)
    return grid[index], feasible, index
