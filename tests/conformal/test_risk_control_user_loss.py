"""ConformalRiskController with a callable loss: the grid search against
the exact built-in losses and a looped scan, and the checks of the loss."""

import numpy as np
import pytest

from skcalib.conformal import ConformalRiskController


def fnr_loss(sets, Y):
    n_true = Y.sum(axis=1)
    hit = (sets & (Y == 1)).sum(axis=1)
    return np.where(n_true > 0, 1 - hit / np.maximum(n_true, 1), 0.0)


def _data(seed, n=40, n_labels=5):
    rng = np.random.default_rng(seed)
    P = np.round(rng.uniform(size=(n, n_labels)), 2)
    Y = (rng.uniform(size=(n, n_labels)) < 0.4).astype(int)
    return P, Y


def _all_steps(P):
    """Every lambda where a set changes: 0, each 1 - p, 1."""
    return np.unique(np.concatenate([[0.0, 1.0], (1 - P).ravel()]))


@pytest.mark.parametrize("seed", range(5))
def test_callable_fnr_on_every_step_equals_the_exact_fnr(seed):
    P, Y = _data(seed)
    w = np.random.default_rng(seed).integers(0, 3, size=len(P)).astype(float)
    for alpha in (0.1, 0.2, 0.35):
        exact = ConformalRiskController(alpha=alpha).fit(P, Y, sample_weight=w)
        user = ConformalRiskController(
            loss=fnr_loss, alpha=alpha, lambda_grid=_all_steps(P)
        ).fit(P, Y, sample_weight=w)
        assert user.lambda_ == exact.lambda_
        assert user.calibration_risk_ == pytest.approx(exact.calibration_risk_)
        np.testing.assert_array_equal(user.predict_set(P), exact.predict_set(P))


def test_callable_miscoverage_gets_class_indices():
    rng = np.random.default_rng(0)
    P = np.round(rng.dirichlet(np.ones(4), size=80), 2)
    P /= P.sum(axis=1, keepdims=True)
    y = np.array(["a", "b", "c", "d"])[rng.integers(0, 4, size=80)]

    def miss(sets, y_idx):
        return 1.0 - sets[np.arange(y_idx.size), y_idx]

    grid = np.unique(np.concatenate([[0.0, 1.0], (1 - P).ravel()]))
    user = ConformalRiskController(loss=miss, alpha=0.1, lambda_grid=grid)
    exact = ConformalRiskController(loss="miscoverage", alpha=0.1)
    assert user.fit(P, y).lambda_ == exact.fit(P, y).lambda_
    assert user.classes_.tolist() == ["a", "b", "c", "d"]


def test_weighted_label_loss_against_a_looped_scan():
    # missing label j costs c_j; loss = missed cost / total cost of the row
    P, Y = _data(7, n=30, n_labels=4)
    cost = np.array([1.0, 2.0, 0.5, 4.0])

    def cost_loss(sets, Y):
        total = (Y * cost).sum(axis=1)
        missed = ((Y == 1) & ~sets) @ cost
        return np.where(total > 0, missed / np.maximum(total, 1e-300), 0.0)

    grid = np.linspace(0, 1, 101)
    alpha = 0.2
    crc = ConformalRiskController(loss=cost_loss, alpha=alpha, lambda_grid=grid)
    crc.fit(P, Y)
    expected = 1.0
    for lam in grid:  # the definition, row by row
        total = 0.0
        for i in range(len(P)):
            c = sum(cost[j] for j in range(4) if Y[i, j])
            m = sum(cost[j] for j in range(4) if Y[i, j] and not 1 - P[i, j] <= lam)
            total += m / c if c else 0.0
        if total + 1 <= alpha * (len(P) + 1):
            expected = lam
            break
    assert crc.lambda_ == expected
    # several levels from one fit agree with refits
    sets = crc.predict_set(P, alpha=[0.1, 0.3])
    for a, level in enumerate([0.1, 0.3]):
        ref = ConformalRiskController(loss=cost_loss, alpha=level, lambda_grid=grid)
        np.testing.assert_array_equal(sets[:, :, a], ref.fit(P, Y).predict_set(P))


def test_loss_bound_scales_the_correction():
    P, Y = _data(1)

    def double_fnr(sets, Y):
        return 2 * fnr_loss(sets, Y)

    a = ConformalRiskController(loss=double_fnr, alpha=0.4, loss_bound=2.0)
    b = ConformalRiskController(loss=fnr_loss, alpha=0.2)
    grid = _all_steps(P)
    assert a.set_params(lambda_grid=grid).fit(P, Y).lambda_ == pytest.approx(
        b.set_params(lambda_grid=grid).fit(P, Y).lambda_
    )


@pytest.mark.parametrize(
    "loss, match",
    [
        (lambda s, Y: 1.0 - fnr_loss(s, Y), "must not increase as the sets grow"),
        (lambda s, Y: 3 * fnr_loss(s, Y), r"must lie in \[0, loss_bound=1\]"),
        (lambda s, Y: fnr_loss(s, Y) - 0.5, r"must lie in \[0, loss_bound=1\]"),
        (lambda s, Y: np.full(len(Y), np.nan), "has loss nan"),
        (lambda s, Y: fnr_loss(s, Y)[:3], r"one loss per row, shape \(40,\)"),
    ],
    ids=["increasing", "above-bound", "negative", "nan", "shape"],
)
def test_bad_user_loss(loss, match):
    P, Y = _data(2)
    with pytest.raises(ValueError, match=match):
        ConformalRiskController(loss=loss, alpha=0.2).fit(P, Y)


@pytest.mark.parametrize(
    "grid, match",
    [
        ([0.5, 0.2, 1.0], "strictly increasing"),
        ([0.0, 1.5], r"lambda_grid\[1\] = 1.5"),
        ([], "non-empty"),
        ([[0.1, 0.2]], "1-D"),
    ],
)
def test_bad_grid(grid, match):
    P, Y = _data(3)
    with pytest.raises(ValueError, match=match):
        ConformalRiskController(loss=fnr_loss, lambda_grid=grid).fit(P, Y)


def test_grid_options_refused_with_a_builtin_loss():
    P, Y = _data(4)
    with pytest.raises(ValueError, match="lambda_grid and loss_bound are for a"):
        ConformalRiskController(lambda_grid=[0.0, 1.0]).fit(P, Y)
    with pytest.raises(ValueError, match="loss_bound=2.0"):
        ConformalRiskController(loss_bound=2.0).fit(P, Y)


def test_grid_without_one_ends_at_full_sets():
    P, Y = _data(5, n=8)
    with pytest.warns(UserWarning, match="every set holds every label"):
        crc = ConformalRiskController(
            loss=fnr_loss, alpha=0.05, lambda_grid=[0.0, 0.5]
        ).fit(P, Y)
    assert crc.lambda_ == 1.0 and crc.predict_set(P).all()
    assert crc.calibration_risk_ == 0.0
