"""Regression pools and measures (seed 003, Table 2), estimated by passive, stratified and
static importance sampling.

A regression pool has a numeric prediction f(x) per item, optionally the model's own
uncertainty s(x) (a predicted standard deviation) and optionally the true value y (which
enables simulation). The measures are generalized measures G = g(R), R = E[l(x, y)]
(seed 003, Definition 1), so the estimators of ``estimators`` apply unchanged: an item's
"code" is its prediction and its "label" the true value.

* mean absolute error: l = |y - f|, g(R) = R;
* mean squared error: l = (y - f)^2, g(R) = R; root mean squared error: g(R) = sqrt(R);
* coefficient of determination: l = [(y - f)^2, y, y^2],
  g(R) = 1 - R_1 / (R_3 - R_2^2) = 1 - MSE / Var(y). Seed 003's Table 2 writes R^2 with
  l = [y, y^2, f, f^2] and g = (R_4 - 2 R_1 R_3 + R_1^2) / (R_2 - R_1^2), which puts
  E[y] E[f] where 1 - MSE / Var(y) needs E[y f]; it equals R^2 only when y and f are
  uncorrelated, so the loss here carries (y - f)^2 instead.

Static importance sampling uses the variance-minimizing proposal of seed 003 Prop. 4 for a
deterministic oracle, q(x) ∝ sqrt(E_{y|x} ||Dg(R) l(x, y)||^2), with y | x ~ N(f(x), s(x)^2)
from the model's own uncertainty and R its expectation under that model, mixed with the
uniform distribution (share ``epsilon``) so that every item keeps a positive probability
(Theorem 1's condition). The expectations are Gauss-Hermite quadratures, exact for the
polynomial losses (every ||Dg l||^2 here is a polynomial in y of degree at most 4).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .estimators import Estimate, estimate_is, estimate_stratified
from .measures import Measure
from .pool import PoolValidationError
from .samplers import Proposal
from .strata import compact_codes, group_order, stratify_scores

__all__ = [
    "RegressionPool",
    "RegressionMeasure",
    "MeanAbsoluteError",
    "MeanSquaredError",
    "RootMeanSquaredError",
    "CoefficientOfDetermination",
    "REGRESSION_MEASURES",
    "get_regression_measure",
    "true_risk",
    "RegressionImportanceSampler",
    "RegressionStratifiedSampler",
    "make_regression_sampler",
]

_NODES, _WEIGHTS = np.polynomial.hermite.hermgauss(20)  # exact to degree 39


@dataclass(frozen=True, eq=False)
class RegressionPool:
    """N items with an ``id``, a ``prediction`` (N,), optionally the model's predicted
    standard deviation ``spread`` (N,) and the true value ``y_true`` (N,)."""

    ids: np.ndarray
    prediction: np.ndarray
    spread: np.ndarray | None = None
    y_true: np.ndarray | None = None

    @property
    def n_pool(self) -> int:
        return len(self.prediction)

    @classmethod
    def from_dataframe(
        cls,
        frame: pd.DataFrame,
        prediction: str = "pred",
        label: str | None = None,
        spread: str | None = None,
        id: str | None = None,
    ) -> RegressionPool:
        """The pool from a table's columns; ``PoolValidationError`` names the column, the
        rows and the fix for a missing column, a non-numeric or non-finite value, or a
        negative spread."""
        if len(frame) == 0:
            raise PoolValidationError("the table has no rows.", "upload a table with items.")
        ids = np.arange(len(frame)).astype(str) if id is None else _column(frame, id).astype(str)
        values = {
            name: _numeric(frame, column)
            for name, column in (("prediction", prediction), ("y_true", label), ("spread", spread))
            if column is not None
        }
        if "spread" in values and np.any(values["spread"] < 0):
            rows = np.flatnonzero(values["spread"] < 0)
            raise PoolValidationError(
                "a standard deviation cannot be negative.",
                "give the model's predicted standard deviation (0 or more), or no spread column.",
                spread,
                rows,
            )
        return cls(ids, values["prediction"], values.get("spread"), values.get("y_true"))


def _column(frame: pd.DataFrame, name: str) -> pd.Series:
    if name not in frame.columns:
        raise PoolValidationError(
            f"there is no column `{name}`.",
            f"name one of the table's columns: {', '.join(map(str, frame.columns))}.",
        )
    return frame[name]


def _numeric(frame: pd.DataFrame, name: str) -> np.ndarray:
    column = _column(frame, name)
    numbers = pd.to_numeric(column, errors="coerce").to_numpy(dtype=float)
    text = np.flatnonzero(np.isnan(numbers) & column.notna().to_numpy())
    if len(text):
        raise PoolValidationError(
            "values are not numbers.", "give numbers (a decimal point, no units).", name, text
        )
    bad = np.flatnonzero(~np.isfinite(numbers))
    if len(bad):
        raise PoolValidationError(
            "values are missing or infinite.", "fill them in or drop those rows.", name, bad
        )
    return numbers


class RegressionMeasure(Measure):
    """A regression measure: ``loss(prediction, y)`` (n, d), ``g`` and ``jacobian``."""

    binary_only = False
    bounded = False
    value_range = (-np.inf, np.inf)

    def check_pool(self, pool) -> None:
        return None

    def model_risk(self, prediction: np.ndarray, spread: np.ndarray) -> np.ndarray:
        """R = (1/N) sum_x E[l(x, y)] for y | x ~ N(f(x), s(x)^2), (d,)."""
        return np.mean(self._expected(prediction, spread, lambda loss: loss), axis=0)

    def second_moment(self, prediction: np.ndarray, spread: np.ndarray) -> np.ndarray:
        """E[||Dg(R) l(x, y)||^2] per item (N,) for y | x ~ N(f(x), s(x)^2), R = model_risk:
        the square of Prop. 4's proposal for a deterministic oracle (seed 003)."""
        J = self.dense_jacobian(self.model_risk(prediction, spread))
        return self._expected(prediction, spread, lambda loss: np.sum((loss @ J.T) ** 2, axis=1))

    def _expected(self, prediction, spread, function) -> np.ndarray:
        total = 0.0
        for node, weight in zip(_NODES, _WEIGHTS, strict=True):
            y = prediction + np.sqrt(2.0) * spread * node
            total = total + weight * function(self.loss(prediction, y))
        return total / np.sqrt(np.pi)


class MeanAbsoluteError(RegressionMeasure):
    name, d, component_names = "mae", 1, ("mae",)
    value_range = (0.0, np.inf)

    def loss(self, prediction, y):
        return np.abs(np.asarray(y, float) - prediction)[:, None]

    def g(self, R):
        return np.asarray(R, float)[:1]

    def jacobian(self, R):
        return np.ones((1, 1))


class MeanSquaredError(MeanAbsoluteError):
    name, component_names = "mse", ("mse",)

    def loss(self, prediction, y):
        return ((np.asarray(y, float) - prediction) ** 2)[:, None]


class RootMeanSquaredError(MeanSquaredError):
    name, component_names = "rmse", ("rmse",)

    def g(self, R):
        return np.sqrt(np.asarray(R, float)[:1])

    def jacobian(self, R):
        root = np.sqrt(R[0])
        return np.array([[1 / (2 * root) if root > 0 else np.inf]])

    def undefined_reason(self, R):
        return None if R[0] > 0 else "every error seen so far is 0 (the slope of sqrt is infinite)"


class CoefficientOfDetermination(RegressionMeasure):
    """R^2 = 1 - R_1 / (R_3 - R_2^2), l = [(y - f)^2, y, y^2]."""

    name, d, component_names = "r2", 3, ("r2",)
    value_range = (-np.inf, 1.0)

    def loss(self, prediction, y):
        y = np.asarray(y, float)
        return np.stack([(y - prediction) ** 2, y, y**2], axis=1)

    def g(self, R):
        return np.array([1 - R[0] / (R[2] - R[1] ** 2)])

    def jacobian(self, R):
        D = R[2] - R[1] ** 2
        return np.array([[-1 / D, -2 * R[0] * R[1] / D**2, R[0] / D**2]])

    def undefined_reason(self, R):
        return None if R[2] - R[1] ** 2 > 0 else "the true values seen so far do not vary"


REGRESSION_MEASURES = {
    "mae": MeanAbsoluteError,
    "mse": MeanSquaredError,
    "rmse": RootMeanSquaredError,
    "r2": CoefficientOfDetermination,
}


def get_regression_measure(name: str) -> RegressionMeasure:
    if name not in REGRESSION_MEASURES:
        raise ValueError(
            f"unknown regression measure {name!r}; choose one of {', '.join(REGRESSION_MEASURES)}."
        )
    return REGRESSION_MEASURES[name]()


def true_risk(pool: RegressionPool, measure: RegressionMeasure) -> np.ndarray:
    """R on the whole pool from its true values, (d,)."""
    if pool.y_true is None:
        raise ValueError("the pool has no true values.")
    return measure.loss(pool.prediction, pool.y_true).mean(axis=0)


class RegressionImportanceSampler:
    """Importance sampling with replacement from a fixed proposal ``q`` (N,): uniform
    (passive) or Prop. 4's (static IS). A deterministic oracle answers an item once: a later
    draw of a labelled item reuses its answer without asking, and the budget counts the
    items labelled (as for the classifiers). R = (1/n) sum_j w_j l_j with w = p / q
    (seed 003 eq. 1), p = 1/N."""

    def __init__(self, pool: RegressionPool, measure: RegressionMeasure, q: np.ndarray, rng=None):
        self.pool, self.measure = pool, measure
        self.q = np.asarray(q, float) / np.sum(q)
        self._cumulative = np.cumsum(self.q)
        self.rng_ = np.random.default_rng(rng)
        self.answers_: dict[int, float] = {}
        self._drawn: list[int] = []  # every draw, reused answers included
        self._pending: int | None = None

    @property
    def n_labels(self) -> int:
        return len(self.answers_)

    def propose(self) -> Proposal:
        """The next item the expert must answer (draws of labelled items are recorded on
        the way from their answers)."""
        while self._pending is None:
            item = int(np.searchsorted(self._cumulative, self.rng_.random() * self._cumulative[-1]))
            item = min(item, self.pool.n_pool - 1)
            if item in self.answers_:
                self._drawn.append(item)
            else:
                self._pending = item
        q = float(self.q[self._pending])
        return Proposal(self._pending, q, 1.0 / (self.pool.n_pool * q))

    def record(self, value: float) -> None:
        item = self.propose().item
        self.answers_[item] = float(value)
        self._drawn.append(item)
        self._pending = None

    def estimate(self) -> Estimate:
        items, count = np.unique(np.asarray(self._drawn, dtype=np.int64), return_counts=True)
        y = np.array([self.answers_[int(item)] for item in items])
        losses = self.measure.loss(self.pool.prediction[items], y)
        weight = 1.0 / (self.pool.n_pool * self.q[items])
        return estimate_is(
            losses.reshape(len(items), self.measure.d),
            weight,
            self.q[items],
            self.pool.n_pool,
            self.measure,
            self.n_labels,
            count=count,
        )


class RegressionStratifiedSampler:
    """Stratified sampling without replacement, proportional allocation, one item at a time
    (seed 002): strata are CSF bins of the model's uncertainty when the pool has it, else of
    the prediction. The first labels visit every stratum twice (largest first), so every
    stratum has a variance of its own; then each label goes to the stratum furthest below its
    proportional share."""

    def __init__(self, pool: RegressionPool, measure: RegressionMeasure, rng=None, n_strata=10):
        self.pool, self.measure = pool, measure
        self.rng_ = np.random.default_rng(rng)
        by = pool.spread if pool.spread is not None else pool.prediction
        _, self.stratum_ = compact_codes(stratify_scores(by, int(n_strata)))
        self.stratum_size_ = np.bincount(self.stratum_)
        self._order = group_order(self.stratum_, len(self.stratum_size_), self.rng_)
        self._start = np.concatenate([[0], np.cumsum(self.stratum_size_)])
        self._taken = np.zeros(len(self.stratum_size_), dtype=np.int64)
        self._items: list[int] = []
        self._values: list[float] = []

    @property
    def n_labels(self) -> int:
        return len(self._items)

    def _next_stratum(self) -> int:
        open_ = self._taken < self.stratum_size_
        first_pass = open_ & (self._taken < np.minimum(2, self.stratum_size_))
        if first_pass.any():
            return int(np.flatnonzero(first_pass)[np.argmax(self.stratum_size_[first_pass])])
        share = self.stratum_size_ / self.pool.n_pool * (self.n_labels + 1)
        return int(np.argmax(np.where(open_, share - self._taken, -np.inf)))

    def propose(self) -> Proposal:
        h = self._next_stratum()
        item = int(self._order[self._start[h] + self._taken[h]])
        # as the classifiers' stratified design: q of the proportional share, weight N_h
        return Proposal(item, 1.0 / self.pool.n_pool, float(self.stratum_size_[h]))

    def record(self, value: float) -> None:
        item = self.propose().item
        self._taken[self.stratum_[item]] += 1
        self._items.append(item)
        self._values.append(float(value))

    def estimate(self) -> Estimate:
        items = np.asarray(self._items, dtype=np.int64)
        losses = self.measure.loss(self.pool.prediction[items], np.asarray(self._values))
        return estimate_stratified(
            losses.reshape(len(items), self.measure.d),
            self.stratum_[items],
            self.stratum_size_,
            self.measure,
        )


def make_regression_sampler(
    name: str, pool: RegressionPool, measure: RegressionMeasure, seed: int, epsilon: float = 0.1
):
    """``passive``, ``stratified`` or ``is`` (Prop. 4's proposal from the model's own
    uncertainty, mixed with the uniform distribution at share ``epsilon``)."""
    if name == "passive":
        return RegressionImportanceSampler(pool, measure, np.ones(pool.n_pool), seed)
    if name == "stratified":
        return RegressionStratifiedSampler(pool, measure, seed)
    if name == "is":
        if pool.spread is None:
            raise ValueError(
                "static importance sampling needs the model's own uncertainty (a spread "
                "column); without it choose passive or stratified."
            )
        optimal = np.sqrt(measure.second_moment(pool.prediction, pool.spread))
        total = optimal.sum()
        optimal = optimal / total if total > 0 else np.full(pool.n_pool, 1 / pool.n_pool)
        q = (1 - epsilon) * optimal + epsilon / pool.n_pool
        return RegressionImportanceSampler(pool, measure, q, seed)
    raise ValueError(f"unknown regression sampler {name!r}; choose passive, stratified or is.")
