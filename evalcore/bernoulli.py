"""Bernoulli (Poisson) sampling with water-filling inclusion probabilities (seed 004).

Labelling runs in rounds. At the start of a round every item not yet sampled gets an
inclusion probability b_n from the water-filling solution (Alg. 3) of

    minimize sum_n h_n^2 / b_n  subject to  sum_n b_n = M,  0 < b_n <= 1,

with h_n^2 = E_{y ~ pi(y|x_n)} max(||Dg(R) l(x_n, y)||^2, eps 1[l != 0]) (seed 004's h for
ratio measures, generalized to any measure); pi is AIS's oracle model, refreshed with every
answer, chosen as in ``AISSampler`` by ``oracle_model``: "block" (the Dirichlet tree), "item"
(``oracle.ItemLevelModel``, binary pools) or "mixture" (the default on binary pools: the
mean of the two models' inclusion probabilities, so b is at least half of either and the
Horvitz-Thompson variance terms h^2 / b at most twice either's). Items of one cell (block,
bin of logit p̂, loss code) share h and b, so a round is drawn per cell: a Binomial count,
then the next items of the cell's random permutation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .frozen import SharesFrozenArrays, frozen
from .measures import Measure
from .oracle import DirichletTreeModel, prior_from_probabilities
from .pool import Pool
from .samplers import (
    MAX_CONTROL_CODES,
    Proposal,
    checked_label,
    code_sums,
    model_risk,
    oracle_cells,
)
from .strata import group_order, partition_pool

__all__ = ["water_fill", "BernoulliSampler", "Round"]


def water_fill(h: np.ndarray, budget: float, counts: np.ndarray | None = None) -> np.ndarray:
    """Inclusion probabilities minimizing ``sum counts * h^2 / b`` with ``sum counts * b =
    budget`` and ``0 <= b <= 1`` (seed 004, App. B.1, Alg. 3), shape ``h.shape``.

    ``counts`` (default 1) is the number of items sharing each h. The solution is
    b = min(1, h / lam), the items with the largest h saturating first; h = 0 gets b = 0.
    Sorts once: O(n log n).
    """
    h = np.asarray(h, dtype=float)
    counts = np.ones_like(h) if counts is None else np.asarray(counts, dtype=float)
    if np.any(h < 0) or not np.all(np.isfinite(h)):
        raise ValueError("`h` must be finite and non-negative.")
    total_items = counts[h > 0].sum()
    if budget <= 0:
        raise ValueError("`budget` must be positive.")
    if budget >= total_items:
        return (h > 0).astype(float)
    order = np.argsort(-h, kind="stable")
    hs, ns = h[order], counts[order]
    # Saturating the first j cells leaves lam_j = (H - sum_{<j} n h) / (M - sum_{<j} n).
    sat_items = np.concatenate([[0.0], np.cumsum(ns)])[:-1]
    sat_mass = np.concatenate([[0.0], np.cumsum(ns * hs)])[:-1]
    remaining = budget - sat_items
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = (hs @ ns - sat_mass) / remaining
    # The first j (in sorted order) where cell j itself does not saturate is the solution.
    feasible = (remaining > 0) & (hs <= lam)
    j = int(np.argmax(feasible))
    b_sorted = np.where(np.arange(len(hs)) < j, 1.0, hs / lam[j])
    b = np.empty_like(h)
    b[order] = np.minimum(b_sorted, 1.0)
    return b


@dataclass(frozen=True)
class Round:
    """One round: ``items`` drawn (in presentation order) with inclusion probabilities ``pi``
    (shape ``(n,)``), the round's planned expected size and the items sampled before it.
    With control variates, the item-level model's prediction at the round's start:
    ``response`` pi(y | x) at each item (n, C) and ``unsampled`` its sum over the items not
    sampled before the round, per code (codes, C) (``estimators.estimate_bernoulli``)."""

    items: np.ndarray
    pi: np.ndarray
    planned_size: float
    n_before: int
    response: np.ndarray | None = None
    unsampled: np.ndarray | None = None


class BernoulliSampler(SharesFrozenArrays):
    """Online Bernoulli sampling in rounds of expected size ``round_size`` (seed 004 App. E).

    The caller proposes and records one item at a time; within a round the items come in
    random order. With a ``budget`` the rounds are planned up front, sizes round_size, ...,
    and the remainder, so the expected number of labels is the budget; the plan is fixed
    before any answer so that the estimator's round weights are too (its unbiasedness needs
    that). Without a budget rounds continue until the caller stops. ``oracle_model`` and
    ``model_averaging`` choose pi as in ``AISSampler``. With ``control_variate`` (default
    True; binary pools with the item-level model and at most ``MAX_CONTROL_CODES`` codes)
    each round records the item-level model's predictions at its start, and estimates take
    them as control variates (``estimators.estimate_bernoulli``); False estimates as before.
    The draws are the same.
    """

    def __init__(
        self,
        pool: Pool,
        measure: Measure,
        deterministic: bool = True,
        rng=None,
        round_size: int = 50,
        budget: int | None = None,
        depth: int = 8,
        branching: int = 2,
        epsilon: float = 1e-6,
        oracle_model: str = "mixture",
        model_averaging: bool = True,
        control_variate: bool = True,
    ):
        if int(round_size) != round_size or round_size < 1:
            raise ValueError(f"`round_size` must be a positive integer, got {round_size!r}.")
        measure.check_pool(pool)
        self.pool, self.measure = pool, measure
        self.deterministic = True  # every item is sampled at most once
        self.round_size, self.budget, self.epsilon = int(round_size), budget, epsilon
        self.planned_sizes_: list[float] | None = None
        if budget is not None:
            if int(budget) != budget or budget < 1:
                raise ValueError(f"`budget` must be a positive integer, got {budget!r}.")
            full, rest = divmod(int(budget), self.round_size)
            self.planned_sizes_ = [float(self.round_size)] * full + ([float(rest)] if rest else [])
        self.rng_ = np.random.default_rng(rng)
        self.codes_ = frozen(measure.codes(pool))
        self.n_codes_ = measure.n_codes(pool)
        self.control_variate = control_variate and self.n_codes_ <= MAX_CONTROL_CODES
        self.partition = partition_pool(pool, depth, branching)
        self.model_ = DirichletTreeModel(
            self.partition, prior_from_probabilities(pool.prob, self.partition)
        )
        cells = oracle_cells(
            pool, self.partition, self.codes_, self.n_codes_, oracle_model, model_averaging
        )
        self.oracle_model, self.item_model_ = cells.model, cells.item_model
        self.cell_of_, self.cell_block_, self.cell_code_ = cells.cell_of, cells.block, cells.code
        self.cell_logit_ = cells.logit
        self.cell_size_ = np.bincount(self.cell_of_)
        self.cell_start_ = np.concatenate([[0], np.cumsum(self.cell_size_)])
        self.cell_items_ = frozen(group_order(self.cell_of_, len(self.cell_size_), self.rng_))
        self.cell_of_ = frozen(self.cell_of_)
        self.cell_sampled_ = np.zeros(len(self.cell_size_), dtype=np.int64)
        self._nonzero = measure.nonzero_loss(self.n_codes_, pool.n_classes)
        self.labels_ = np.full(pool.n_pool, -1, dtype=np.int64)
        self.rounds_: list[Round] = []
        self._position = 0  # answers recorded in the current round
        self._order: list[int] = []
        self._item_response, self._item_response_at = None, -1

    @property
    def n_labels(self) -> int:
        return len(self._order)

    def cell_response(self, model: str | None = None) -> np.ndarray:
        """pi(y | x) of the items of each cell under ``model`` ("block" or "item"; default: the
        item-level model where there is one), shape ``(cells, C)``."""
        if (model or ("block" if self.item_model_ is None else "item")) == "block":
            return self.model_.response_[self.cell_block_]
        if self._item_response_at != self.n_labels:  # answers only accrue: fit once per count
            sampled = np.asarray(self._order, dtype=np.int64)
            self.item_model_.fit(sampled, self.labels_[sampled])
            p1 = self.item_model_.cell_probability(self.cell_block_, self.cell_logit_)
            self._item_response = np.column_stack([1 - p1, p1])
            self._item_response_at = self.n_labels
        return self._item_response

    def model_risk(self, response: np.ndarray | None = None) -> np.ndarray:
        """R_t from the oracle model, sampled items at their answers, shape ``(d,)``."""
        labelled = np.asarray(self._order, dtype=int)
        return model_risk(
            self.measure,
            self.n_codes_,
            self.cell_code_,
            self.cell_size_ - self.cell_sampled_,
            self.cell_response() if response is None else response,
            self.codes_[labelled],
            self.labels_[labelled],
            self.pool.n_pool,
        )

    def cell_h(self, model: str | None = None) -> np.ndarray:
        """h per cell (seed 004 eq. 12 generalized) under ``model`` (as in
        ``cell_response``), shape ``(n_cells,)``."""
        response = self.cell_response(model)
        sq_norm = self.measure.sq_norm_dg_loss(
            self.model_risk(response), self.n_codes_, self.pool.n_classes
        )
        floored = np.maximum(sq_norm, self.epsilon * self._nonzero)[self.cell_code_]
        return np.sqrt(np.sum(floored * response, axis=1))

    def inclusion_probabilities(self, planned_size: float) -> np.ndarray:
        """b per cell for the next round, shape ``(n_cells,)``."""
        unsampled = self.cell_size_ - self.cell_sampled_
        models = ("item", "block") if self.oracle_model == "mixture" else (self.oracle_model,)
        b = [
            water_fill(self.cell_h(model) * (unsampled > 0), planned_size, unsampled)
            for model in models
        ]
        return sum(b) / len(b)

    @property
    def finished(self) -> bool:
        """Every planned round is drawn and answered (never, without a budget)."""
        if self.planned_sizes_ is None:
            return self.n_labels >= self.pool.n_pool
        return len(self.rounds_) == len(self.planned_sizes_) and self._position >= len(
            self.rounds_[-1].items
        )

    def _start_round(self) -> None:
        if self.finished:
            raise RuntimeError("every planned round is done (the label budget is used).")
        if self.planned_sizes_ is None:
            planned = float(self.round_size)
        else:
            planned = self.planned_sizes_[len(self.rounds_)]
        unsampled = self.cell_size_ - self.cell_sampled_
        b = self.inclusion_probabilities(planned) if unsampled.sum() else np.zeros(len(unsampled))
        response = predicted = None
        if self.control_variate and self.item_model_ is not None:
            response = self.cell_response("item")
            predicted = code_sums(self.cell_code_, unsampled, response, self.n_codes_)
        chosen = self.rng_.binomial(unsampled, np.minimum(b, 1.0))
        items, pi = [], []
        for cell in np.flatnonzero(chosen):
            start = self.cell_start_[cell] + self.cell_sampled_[cell]
            items.append(self.cell_items_[start : start + chosen[cell]])
            pi.append(np.full(chosen[cell], b[cell]))
        self.cell_sampled_ += chosen
        items = np.concatenate(items) if items else np.zeros(0, dtype=np.int64)
        pi = np.concatenate(pi) if pi else np.zeros(0)
        shown = self.rng_.permutation(len(items))
        at_items = None if response is None else response[self.cell_of_[items[shown]]]
        self.rounds_.append(
            Round(items[shown], pi[shown], planned, self.n_labels, at_items, predicted)
        )
        self._position = 0

    def propose(self) -> Proposal:
        while not self.rounds_ or self._position >= len(self.rounds_[-1].items):
            self._start_round()
        current = self.rounds_[-1]
        pi = float(current.pi[self._position])
        return Proposal(int(current.items[self._position]), pi, 1.0 / pi)

    def record(self, label: int) -> None:
        if not self.rounds_ or self._position >= len(self.rounds_[-1].items):
            raise RuntimeError("`record` needs a pending proposal; call `propose` first.")
        label = checked_label(label, self.pool.n_classes)
        item = int(self.rounds_[-1].items[self._position])
        self.labels_[item] = label
        self._order.append(item)
        self._position += 1
        self.model_.update(self.partition.block[item], label)
