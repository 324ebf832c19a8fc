"""Water-filling (seed 004 Alg. 3) against a generic convex solver."""

import numpy as np
import pytest
from scipy.optimize import Bounds, LinearConstraint, minimize

import evalcore as ec


@pytest.mark.parametrize("seed", range(8))
def test_water_fill_matches_a_generic_convex_solver(seed):
    rng = np.random.default_rng(seed)
    n = 12
    h = rng.exponential(size=n) ** 2  # heavy spread, so several items saturate
    counts = rng.integers(1, 4, size=n).astype(float)
    budget = float(rng.uniform(0.2, 0.8) * counts.sum())
    b = ec.water_fill(h, budget, counts)

    result = minimize(
        lambda x: np.sum(counts * h**2 / x),
        x0=np.full(n, budget / counts.sum()),
        jac=lambda x: -counts * h**2 / x**2,
        hess=lambda x: np.diag(2 * counts * h**2 / x**3),
        bounds=Bounds(1e-6, 1.0),
        constraints=[LinearConstraint(counts[None, :], budget, budget)],
        method="trust-constr",
        options={"gtol": 1e-12, "xtol": 1e-14, "maxiter": 5000},
    )
    assert counts @ result.x == pytest.approx(budget, rel=1e-8)
    objective = np.sum(counts * h**2 / b)
    # The closed form is optimal: never worse than the solver, and equal to its optimum.
    assert objective <= result.fun * (1 + 1e-9)
    np.testing.assert_allclose(b, result.x, atol=1e-5)
    assert counts @ b == pytest.approx(budget, rel=1e-12)


def test_water_fill_saturates_the_largest_and_keeps_zero_at_zero():
    b = ec.water_fill(np.array([100.0, 1.0, 1.0, 0.0]), 2.0)
    np.testing.assert_allclose(b, [1.0, 0.5, 0.5, 0.0])
    np.testing.assert_allclose(ec.water_fill(np.array([1.0, 2.0]), 5.0), [1.0, 1.0])
