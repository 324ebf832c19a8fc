"""Stratified sampling with proportional or Neyman allocation, one item at a time (seed 002).

Strata are CSF bins of the classifier score. Items are drawn without replacement within a
stratum. The first labels visit every stratum twice (largest first; once where a stratum has
a single item) so that the estimator and every stratum's own variance are defined as early as
possible; afterwards each label goes to the stratum furthest below its allocated share:
proportional, n_h ∝ N_h, or Neyman, n_h ∝ N_h S_h, where S_h is the standard deviation of the
linearized loss Dg(R) l(x, y) in the stratum under the classifier's probabilities (the pool's
probability column where it has one; seed 002, Sec. 3). Neyman shares never fall below
``min_proportional_share`` of the proportional share: S_h computed from the classifier's
probabilities is 0 or nearly so in strata the classifier is sure of, and a stratum starved on
that belief can never show the positives it hides.
"""

from __future__ import annotations

import numpy as np

from .frozen import SharesFrozenArrays, frozen
from .measures import Measure
from .pool import Pool
from .samplers import Proposal, checked_label
from .strata import compact_codes, group_order, stratify_scores

__all__ = ["StratifiedSampler"]


class StratifiedSampler(SharesFrozenArrays):
    """Stratified sampling design; ``allocation`` is ``"proportional"`` or ``"neyman"``."""

    def __init__(
        self,
        pool: Pool,
        measure: Measure,
        deterministic: bool = True,
        rng=None,
        n_strata: int = 10,
        allocation: str = "proportional",
        min_proportional_share: float = 0.1,
    ):
        if allocation not in ("proportional", "neyman"):
            raise ValueError(
                f"`allocation` must be 'proportional' or 'neyman', not {allocation!r}."
            )
        if not 0 <= min_proportional_share <= 1:
            raise ValueError(
                f"`min_proportional_share` must lie in [0, 1], got {min_proportional_share!r}."
            )
        if int(n_strata) != n_strata or not 1 <= n_strata <= pool.n_pool:
            raise ValueError(f"`n_strata` must be an integer in 1..{pool.n_pool}.")
        measure.check_pool(pool)
        self.pool, self.measure, self.allocation = pool, measure, allocation
        self.deterministic = True  # sampling without replacement: every answer is final
        self.rng_ = np.random.default_rng(rng)
        scores = pool.binary_scores if pool.n_classes == 2 else pool.prob.max(axis=1)
        stratum = stratify_scores(scores, int(n_strata))
        present, stratum_of = compact_codes(stratum)
        self.stratum_ = frozen(stratum_of)
        self.stratum_size_ = frozen(np.bincount(stratum_of))
        H = len(present)
        self.stratum_items_ = frozen(group_order(stratum_of, H, self.rng_))
        self.stratum_start_ = frozen(np.concatenate([[0], np.cumsum(self.stratum_size_)]))
        self.n_sampled_ = np.zeros(H, dtype=np.int64)
        self.codes_ = frozen(measure.codes(pool))
        proportional = self.stratum_size_ / self.stratum_size_.sum()
        share = proportional
        if allocation == "neyman":
            neyman = self.stratum_size_ * self._stratum_std()
            neyman = neyman / neyman.sum() if neyman.sum() > 0 else proportional
            share = np.maximum(neyman, min_proportional_share * proportional)
        self.share_ = share / share.sum()
        self.labels_ = np.full(pool.n_pool, -1, dtype=np.int64)
        self._items: list[int] = []
        self._labels: list[int] = []
        self._pending: Proposal | None = None

    def _stratum_std(self) -> np.ndarray:
        """S_h: std of Dg(R) l(x, y) under the classifier's p(y|x), per stratum, shape (H,)."""
        n_codes, C = self.measure.n_codes(self.pool), self.pool.n_classes
        H = len(self.stratum_size_)
        mass = np.zeros((H, n_codes, C))
        for y in range(C):
            np.add.at(mass[:, :, y], (self.stratum_, self.codes_), self.pool.prob[:, y])
        risk = self.measure.expected_risk(mass.sum(axis=0)) / self.pool.n_pool
        table = self.measure.loss_table(n_codes, C) @ self.measure.dense_jacobian(risk).T
        table = np.nan_to_num(table)
        mean = np.einsum("hcy,cym->hm", mass, table) / self.stratum_size_[:, None]
        second = np.einsum("hcy,cy->h", mass, np.einsum("cym,cym->cy", table, table))
        variance = second / self.stratum_size_ - np.einsum("hm,hm->h", mean, mean)
        return np.sqrt(np.maximum(variance, 0.0))

    @property
    def n_labels(self) -> int:
        return len(self._items)

    def propose(self) -> Proposal:
        if self._pending is not None:
            return self._pending
        open_strata = self.n_sampled_ < self.stratum_size_
        if not open_strata.any():
            raise RuntimeError("every item of the pool is labelled.")
        unvisited = open_strata & (self.n_sampled_ < 2)
        if unvisited.any():  # every stratum once, then twice
            first = unvisited & (self.n_sampled_ == self.n_sampled_[unvisited].min())
            h = int(np.argmax(np.where(first, self.stratum_size_, -1)))
        else:
            deficit = self.share_ * (self.n_labels + 1) - self.n_sampled_
            h = int(np.argmax(np.where(open_strata, deficit, -np.inf)))
        item = int(self.stratum_items_[self.stratum_start_[h] + self.n_sampled_[h]])
        size = self.stratum_size_[h]
        self._pending = Proposal(item, float(self.share_[h] / size), float(size))
        return self._pending

    def record(self, label: int) -> None:
        if self._pending is None:
            raise RuntimeError("`record` needs a pending proposal; call `propose` first.")
        proposal, self._pending = self._pending, None
        label = checked_label(label, self.pool.n_classes)
        self.labels_[proposal.item] = label
        self.n_sampled_[self.stratum_[proposal.item]] += 1
        self._items.append(proposal.item)
        self._labels.append(label)

    def labelled(self) -> tuple[np.ndarray, np.ndarray]:
        """Items and labels in the order they were answered."""
        return np.asarray(self._items, dtype=np.int64), np.asarray(self._labels, dtype=np.int64)
