"""Regression pools and measures (seed 003, Table 2), estimated by passive, stratified,
static and adaptive importance sampling and Bernoulli sampling.

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

Intervals are the delta method's on the log scale of the error measures and of 1 - R^2
(``Measure.log_scale``): they are positive and right-skewed, and the draws that miss the
heavy tail understate estimate and standard error together. Measured (150 runs, 300 labels,
the heavy-tailed pool of the tests): passive sampling's coverage for MSE 0.75 -> 0.81 and for
R^2 0.77 -> 0.82 with 3-dof errors, 0.92 -> 0.97 and 0.92 -> 0.95 with 10-dof errors; IS and
AIS within 0.03 either way; widths 1-6% larger. With 3-dof errors the squared errors have no
variance, and no delta-method interval for MSE or R^2 can be trusted at a few hundred labels.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .bernoulli import water_fill
from .estimators import Estimate, _from_risk, estimate_is, estimate_stratified
from .measures import Measure
from .pool import PoolValidationError
from .samplers import Proposal
from .strata import compact_codes, group_order, stratify_scores

__all__ = [
    "RegressionMapping",
    "RegressionPool",
    "regression_warnings",
    "detect_regression_mapping",
    "RegressionMeasure",
    "MeanAbsoluteError",
    "MeanSquaredError",
    "RootMeanSquaredError",
    "CoefficientOfDetermination",
    "REGRESSION_MEASURES",
    "MEASURE_DEFINITIONS",
    "get_regression_measure",
    "true_risk",
    "RegressionImportanceSampler",
    "RegressionAISSampler",
    "RegressionBernoulliSampler",
    "RegressionStratifiedSampler",
    "make_regression_sampler",
    "checked_value",
]

_NODES, _WEIGHTS = np.polynomial.hermite.hermgauss(20)  # exact to degree 39


@dataclass(frozen=True)
class RegressionMapping:
    """Which column holds what in a regression pool's table (``RegressionPool.from_dataframe``
    takes them by name); the store keeps it with the pool's file."""

    prediction: str
    label: str | None = None
    spread: str | None = None
    id: str | None = None
    content: tuple[str, ...] = ()
    unit: str | None = None  # of the predictions and true values (shown, never parsed)


@dataclass(frozen=True, eq=False)
class RegressionPool:
    """N items with an ``id``, a ``prediction`` (N,), optionally the model's predicted
    standard deviation ``spread`` (N,), the true value ``y_true`` (N,) and ``content`` to
    show the expert (text columns)."""

    ids: np.ndarray
    prediction: np.ndarray
    spread: np.ndarray | None = None
    y_true: np.ndarray | None = None
    content: pd.DataFrame | None = field(default=None, repr=False)
    unit: str | None = None

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
        content: tuple[str, ...] = (),
        unit: str | None = None,
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
        shown = frame[[_column(frame, c).name for c in content]].astype(str) if content else None
        unit = (unit or "").strip() or None
        return cls(
            ids, values["prediction"], values.get("spread"), values.get("y_true"), shown, unit
        )


_PREDICTION_NAMES = ("pred", "prediction", "y_pred", "predicted", "estimate")
_TRUTH_NAMES = ("label", "y_true", "truth", "target", "actual", "true_value")
_SPREAD_NAMES = ("sd", "std", "spread", "sigma", "uncertainty")
_ID_NAMES = ("item_id", "id", "uid", "key")


def detect_regression_mapping(frame: pd.DataFrame) -> RegressionMapping:
    """The columns a regression table's names suggest: the prediction, the true value, the
    spread and the id by their usual names, every other text column as content."""

    def find(names):
        return next((str(c) for c in frame.columns if str(c).lower() in names), None)

    prediction = find(_PREDICTION_NAMES)
    if prediction is None:
        raise PoolValidationError(
            "no prediction column is recognised.",
            f"name it one of {', '.join(_PREDICTION_NAMES)}, or choose it.",
        )
    mapping = RegressionMapping(
        prediction, find(_TRUTH_NAMES), find(_SPREAD_NAMES), find(_ID_NAMES)
    )
    used = {mapping.prediction, mapping.label, mapping.spread, mapping.id}
    content = tuple(
        str(c)
        for c in frame.columns
        if str(c) not in used and not pd.api.types.is_numeric_dtype(frame[c])
    )
    return RegressionMapping(mapping.prediction, mapping.label, mapping.spread, mapping.id, content)


def regression_warnings(pool: RegressionPool) -> list[str]:
    """Plain-language warnings about a valid but suspicious regression pool."""
    warnings = []
    if np.ptp(pool.prediction) == 0:
        warnings.append(
            f"Every prediction is {pool.prediction[0]:g}: check the prediction column. "
            "MAE and MSE still estimate; R^2 is then at most 0."
        )
    if pool.spread is not None and not np.any(pool.spread > 0):
        warnings.append(
            "The spread column is 0 for every item: static importance sampling has nothing "
            "to go on (it samples uniformly); adaptive sampling learns the errors instead."
        )
    return warnings


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
        return np.mean(self.normal_expectation(prediction, spread, lambda loss: loss), axis=0)

    def second_moment(self, prediction: np.ndarray, spread: np.ndarray) -> np.ndarray:
        """E[||Dg(R) l(x, y)||^2] per item (N,) for y | x ~ N(f(x), s(x)^2), R = model_risk:
        the square of Prop. 4's proposal for a deterministic oracle (seed 003)."""
        J = self.dense_jacobian(self.model_risk(prediction, spread))
        return self.normal_expectation(
            prediction, spread, lambda loss: np.sum((loss @ J.T) ** 2, axis=1)
        )

    def normal_expectation(self, prediction, spread, function, shift=0.0) -> np.ndarray:
        """E[function(l(x, y))] per item for y ~ N(prediction + shift, spread^2)."""
        total = 0.0
        for node, weight in zip(_NODES, _WEIGHTS, strict=True):
            y = prediction + shift + np.sqrt(2.0) * spread * node
            total = total + weight * function(self.loss(prediction, y))
        return total / np.sqrt(np.pi)


class MeanAbsoluteError(RegressionMeasure):
    name, d, component_names = "mae", 1, ("mae",)
    value_range = (0.0, np.inf)
    log_scale = (0.0, 1.0)  # positive and right-skewed: limits on the log scale

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
    log_scale = (1.0, -1.0)  # 1 - R^2 = MSE / Var(y) is positive and right-skewed

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


MEASURE_DEFINITIONS = {  # one line each, as the set-up page and --help show them
    "mae": "The mean of |y − f| over items, as scikit-learn's mean_absolute_error.",
    "mse": "The mean of (y − f)² over items, as scikit-learn's mean_squared_error.",
    "rmse": "√MSE, as scikit-learn's root_mean_squared_error.",
    "r2": "1 − MSE / Var(y), as scikit-learn's r2_score.",
}
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


def checked_value(value) -> float:
    """An answer as a float, or a ValueError that says what a regression answer must be."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = np.nan
    if not np.isfinite(number):
        raise ValueError(f"a regression answer must be a finite number, got {value!r}.")
    return number


class RegressionImportanceSampler:
    """Importance sampling with replacement from a fixed proposal ``q`` (N,): uniform
    (passive) or Prop. 4's (static IS). A deterministic oracle answers an item once: a later
    draw of a labelled item reuses its answer without asking, and the budget counts the
    items labelled (as for the classifiers). R = (1/n) sum_j w_j l_j with
    w_j = p(x_j) / q_{j-1}(x_j), p = 1/N (seed 003 eq. 1), each draw weighted by the proposal
    it was drawn from; the variance is the martingale one of ``estimate_is``."""

    def __init__(self, pool: RegressionPool, measure: RegressionMeasure, q: np.ndarray, rng=None):
        self.pool, self.measure = pool, measure
        self.q = np.asarray(q, float) / np.sum(q)
        self._cumulative = np.cumsum(self.q)
        self.rng_ = np.random.default_rng(rng)
        self.answers_: dict[int, float] = {}
        self._drawn: list[tuple[int, float]] = []  # (item, q at the draw), reuses included
        self._pending: tuple[int, float] | None = None

    @property
    def n_labels(self) -> int:
        return len(self.answers_)

    def propose(self) -> Proposal:
        """The next item the expert must answer (draws of labelled items are recorded on
        the way from their answers)."""
        while self._pending is None:
            draw = self._draw()
            if draw[0] in self.answers_:
                self._drawn.append(draw)
            else:
                self._pending = draw
        item, q = self._pending
        return Proposal(item, q, 1.0 / (self.pool.n_pool * q))

    def record(self, value: float) -> None:
        item = self.propose().item
        answer = self.answers_[item] = checked_value(value)
        self._drawn.append(self._pending)
        self._pending = None
        self._learn(item, answer)

    def _draw(self) -> tuple[int, float]:
        item = int(np.searchsorted(self._cumulative, self.rng_.random() * self._cumulative[-1]))
        item = min(item, self.pool.n_pool - 1)
        return item, float(self.q[item])

    def _learn(self, item: int, value: float) -> None:
        """A fixed proposal learns nothing from an answer."""

    def pmf_of(self, items: np.ndarray) -> np.ndarray:
        """The current proposal's probability of ``items``."""
        return self.q[items]

    def pmf(self) -> np.ndarray:
        """The whole current proposal, (N,) (O(N): for diagnostics)."""
        return self.pmf_of(np.arange(self.pool.n_pool))

    def kl_from(self, target: np.ndarray) -> float:
        """D_KL(target || q_t) for a fixed ``target`` pmf (N,), e.g. the optimal proposal."""
        q = self.pmf()
        support = target > 0
        if np.any(q[support] <= 0):
            return float("inf")
        return float(np.sum(target[support] * np.log(target[support] / q[support])))

    def design_weights(self) -> np.ndarray:
        """p / q of every draw, reused answers included."""
        return np.array([1.0 / (self.pool.n_pool * q) for _, q in self._drawn])

    def answer_weights(self) -> np.ndarray:
        """p / q of the draw that asked each answer, in answer order."""
        asked = {}
        for item, q in self._drawn:
            asked.setdefault(item, q)
        return np.array([1.0 / (self.pool.n_pool * asked[item]) for item in self.answers_])

    def estimate(self, measure: RegressionMeasure | None = None) -> Estimate:
        """The estimate of the sampler's measure, or of another one from the same draws
        (sample reuse, seed 003 Sec. 3.3.1)."""
        measure = measure or self.measure
        drawn = np.array(self._drawn, dtype=float).reshape(-1, 2)
        rows, count = np.unique(drawn, axis=0, return_counts=True)  # one row per (item, q)
        items, q = rows[:, 0].astype(np.int64), rows[:, 1]
        y = np.array([self.answers_[int(item)] for item in items])
        losses = measure.loss(self.pool.prediction[items], y)
        return estimate_is(
            losses.reshape(len(items), measure.d),
            1.0 / (self.pool.n_pool * q),
            self.pmf_of(items),
            self.pool.n_pool,
            measure,
            self.n_labels,
            count=count,
        )


class RegressionAISSampler(RegressionImportanceSampler):
    """Adaptive importance sampling for a regression pool (seed 003 Algorithm 1) with a
    Normal error model learned from the answers.

    Cells: CSF bins of the prediction crossed with CSF bins of the model's own spread (when
    the pool has one). The error e = y - f(x) of an item in cell c is N(mu_c, sigma_c^2)
    with a conjugate Normal-inverse-gamma prior NIG(0, kappa0, a0, b0_c) (Murphy 2007,
    "Conjugate Bayesian analysis of the Gaussian distribution", Sec. 6), whose prior mean of
    sigma^2, b0_c / (a0 - 1), is lambda * s_c^2: s_c^2 the cell's mean squared spread (the
    variance of the predictions, for every item, without a spread column) and lambda the
    pooled scale, the ratio of the squared errors seen to the squared spreads of their items,
    shrunk to 1 by one pseudo-answer of the pool's mean squared spread. So the pool shares
    one scale and each cell departs from it as its own answers accumulate (a two-level tree).
    After each answer the posterior gives mu_c and v_c = E[sigma_c^2] (1 + 1/kappa_c), the
    model risk R_t (exact per cell from power sums of the predictions) and the proposal of
    Prop. 4 at the cell's mean prediction, q(c) ∝ N_c sqrt(E ||Dg(R_t) l||^2), mixed with
    the uniform distribution at share ``epsilon`` (Theorem 1's condition); an item is drawn
    by picking a cell by its mass and an item in it uniformly, so a step costs O(cells).
    """

    def __init__(
        self,
        pool: RegressionPool,
        measure: RegressionMeasure,
        rng=None,
        epsilon: float = 0.1,
        n_bins: int = 16,
        kappa0: float = 1.0,
        a0: float = 2.0,
    ):
        super().__init__(pool, measure, np.ones(pool.n_pool), rng)
        cell = stratify_scores(pool.prediction, n_bins)
        if pool.spread is not None:
            cell = cell * (n_bins + 1) + stratify_scores(pool.spread, max(2, n_bins // 2))
        _, self.cell_ = compact_codes(cell)
        C = self.cell_.max() + 1
        self.cell_size_ = np.bincount(self.cell_, minlength=C).astype(float)
        self._order = group_order(self.cell_, C, self.rng_)
        self._start = np.concatenate([[0], np.cumsum(self.cell_size_).astype(np.int64)])
        self._powers = np.stack(
            [np.bincount(self.cell_, pool.prediction**k, minlength=C) for k in range(3)], axis=1
        )
        if pool.spread is None:  # the predictions' own spread sets the prior's scale
            spread2 = np.full(pool.n_pool, np.var(pool.prediction) or 1.0)
        else:
            spread2 = pool.spread**2
        self._spread2, self._prior_scale = spread2, float(np.mean(spread2)) or 1.0
        self._cell_spread2 = np.bincount(self.cell_, spread2, minlength=C) / self.cell_size_
        self.epsilon, self.kappa0, self.a0 = epsilon, kappa0, a0
        self._stats = np.zeros((C, 3))  # per cell: answers, sum of e, sum of e^2
        self._scale = np.zeros(2)  # sum of e^2 and of s^2 over the answered items
        self._refresh()

    def _learn(self, item: int, value: float) -> None:
        error = value - self.pool.prediction[item]
        self._stats[self.cell_[item]] += (1.0, error, error**2)
        self._scale += (error**2, self._spread2[item])
        self._refresh()

    def _posterior(self) -> tuple[np.ndarray, np.ndarray]:
        """mu_c and the predictive variance v_c of each cell's errors."""
        n, total, squares = self._stats.T
        # the pooled scale, shrunk to 1 by one pseudo-answer of the pool's mean squared spread
        scale = (self._scale[0] + self._prior_scale) / (self._scale[1] + self._prior_scale)
        b0 = (self.a0 - 1) * scale * self._cell_spread2
        mean = np.divide(total, n, out=np.zeros_like(total), where=n > 0)
        kappa = self.kappa0 + n
        mu = total / kappa
        a = self.a0 + n / 2
        b = b0 + 0.5 * (squares - n * mean**2) + 0.5 * self.kappa0 * n * mean**2 / kappa
        return mu, b / (a - 1) * (1 + 1 / kappa)

    def _refresh(self) -> None:
        mu, v = self._posterior()
        size, sum_f, sum_f2 = self._powers.T
        mean_f = sum_f / size
        expected = self._cell_expected_losses(size, sum_f, sum_f2, mu, v)
        risk = expected.sum(axis=0) / self.pool.n_pool
        J = self.measure.dense_jacobian(risk)
        second = self.measure.normal_expectation(
            mean_f, np.sqrt(v), lambda loss: np.sum((loss @ J.T) ** 2, axis=1), shift=mu
        )
        optimal = size * np.sqrt(np.maximum(second, 0.0))
        total = optimal.sum()
        share = optimal / total if total > 0 and np.isfinite(total) else size / size.sum()
        mass = (1 - self.epsilon) * share + self.epsilon * size / size.sum()
        self._cell_mass = mass
        self._cell_cumulative = np.cumsum(mass)

    def _cell_expected_losses(self, size, sum_f, sum_f2, mu, v) -> np.ndarray:
        """sum over each cell's items of E[l(x, y)] (C, d), y = f(x) + e, e ~ N(mu, v): exact
        for the losses of this module but MAE's, which takes E|e| at the cell's mean error
        by quadrature (MAE's g is linear, so its proposal does not depend on R_t)."""
        if isinstance(self.measure, CoefficientOfDetermination):
            sum_y = sum_f + size * mu
            sum_y2 = sum_f2 + 2 * mu * sum_f + size * (mu**2 + v)
            return np.stack([size * (mu**2 + v), sum_y, sum_y2], axis=1)
        mean_error = self.measure.normal_expectation(
            np.zeros_like(mu), np.sqrt(v), lambda loss: loss, shift=mu
        )
        return size[:, None] * mean_error

    def _draw(self) -> tuple[int, float]:
        cell = int(
            np.searchsorted(self._cell_cumulative, self.rng_.random() * self._cell_cumulative[-1])
        )
        cell = min(cell, len(self._cell_mass) - 1)
        size = int(self.cell_size_[cell])
        item = int(self._order[self._start[cell] + self.rng_.integers(size)])
        return item, float(self._cell_mass[cell] / size)

    def pmf_of(self, items: np.ndarray) -> np.ndarray:
        cells = self.cell_[items]
        return self._cell_mass[cells] / self.cell_size_[cells]


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
        self._values.append(checked_value(value))
        self._taken[self.stratum_[item]] += 1
        self._items.append(item)

    def design_weights(self) -> np.ndarray:
        """N_h / n_h of each labelled item, in answer order."""
        strata = self.stratum_[np.asarray(self._items, dtype=np.int64)]
        return self.stratum_size_[strata] / np.bincount(strata)[strata]

    answer_weights = design_weights

    def estimate(self, measure: RegressionMeasure | None = None) -> Estimate:
        """The estimate of the sampler's measure, or of another one (sample reuse)."""
        measure = measure or self.measure
        items = np.asarray(self._items, dtype=np.int64)
        losses = measure.loss(self.pool.prediction[items], np.asarray(self._values))
        return estimate_stratified(
            losses.reshape(len(items), measure.d), self.stratum_[items], self.stratum_size_, measure
        )


class RegressionBernoulliSampler:
    """Bernoulli (Poisson) sampling in one round (seed 004): item x is included with
    probability b(x), the water-filling solution (Alg. 3) for h(x) = sqrt(E ||Dg(R) l||^2)
    under y ~ N(f, s^2) with the expected number of inclusions ``budget`` (uniform b without
    a spread column); the included items are labelled in random order. R = (1/N) sum l / b
    over the labelled items (Horvitz-Thompson) with the Poisson variance (1/N^2) sum
    (1 - b) / b^2 l l'; while the round is in progress b is scaled by the share of its items
    answered (they come in random order), as in ``estimate_bernoulli``."""

    def __init__(self, pool: RegressionPool, measure: RegressionMeasure, rng=None, budget=None):
        if budget is None:
            raise ValueError("Bernoulli sampling plans its round from a label budget; give one.")
        self.pool, self.measure = pool, measure
        self.rng_ = np.random.default_rng(rng)
        if pool.spread is None:
            h = np.ones(pool.n_pool)
        else:
            h = np.sqrt(measure.second_moment(pool.prediction, pool.spread))
            h = h if h.sum() > 0 else np.ones(pool.n_pool)
        self.pi_ = water_fill(h, float(budget))
        included = np.flatnonzero(self.rng_.random(pool.n_pool) < self.pi_)
        self.order_ = self.rng_.permutation(included)
        self._values: list[float] = []

    @property
    def n_labels(self) -> int:
        return len(self._values)

    @property
    def finished(self) -> bool:
        return self.n_labels >= len(self.order_)

    def propose(self) -> Proposal:
        if self.finished:
            raise ValueError("every item of the round is labelled.")
        item = int(self.order_[self.n_labels])
        return Proposal(item, float(self.pi_[item]), 1.0 / float(self.pi_[item]))

    def record(self, value: float) -> None:
        self.propose()
        self._values.append(checked_value(value))

    def design_weights(self) -> np.ndarray:
        """1 / b of each answered item, in answer order."""
        return 1.0 / self.pi_[self.order_[: self.n_labels]]

    answer_weights = design_weights

    def estimate(self, measure: RegressionMeasure | None = None) -> Estimate:
        measure = measure or self.measure
        items = self.order_[: self.n_labels]
        if not len(items):
            return estimate_is(np.zeros((0, measure.d)), np.zeros(0), np.zeros(0), 1, measure, 0)
        share = self.n_labels / len(self.order_)
        pi = self.pi_[items] * share
        losses = measure.loss(self.pool.prediction[items], np.asarray(self._values))
        losses = losses.reshape(len(items), measure.d)
        N = self.pool.n_pool
        risk = (losses / pi[:, None]).sum(axis=0) / N
        factor = losses * (np.sqrt(1 - pi) / pi / N)[:, None]
        return _from_risk(risk, measure, self.n_labels, self.n_labels, factor)


def make_regression_sampler(
    name: str,
    pool: RegressionPool,
    measure: RegressionMeasure,
    seed: int,
    epsilon: float = 0.1,
    budget: int | None = None,
):
    """``passive``, ``stratified``, ``is`` (Prop. 4's proposal from the model's own
    uncertainty, mixed with the uniform distribution at share ``epsilon``), ``ais``
    (``RegressionAISSampler``) or ``bernoulli`` (one round planned for ``budget``)."""
    if name == "passive":
        return RegressionImportanceSampler(pool, measure, np.ones(pool.n_pool), seed)
    if name == "stratified":
        return RegressionStratifiedSampler(pool, measure, seed)
    if name == "ais":
        return RegressionAISSampler(pool, measure, seed, epsilon)
    if name == "bernoulli":
        return RegressionBernoulliSampler(pool, measure, seed, budget)
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
    raise ValueError(f"unknown regression sampler {name!r}; choose passive, stratified, is or ais.")
