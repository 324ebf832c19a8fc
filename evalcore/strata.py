"""Partitions of the pool by score: CSF and equal-width bins, and the hierarchical tree.

The bins are ordered by score and associated with the leaves of a complete tree of the
chosen depth and branching in breadth-first order (seed 003, Sec. 5.2 and App. I); for a
complete tree that is left-to-right order, so bin k is leaf k. Depth 1 is the flat partition.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .frozen import frozen
from .pool import Pool

__all__ = ["Partition", "csf_edges", "equal_width_edges", "partition_pool", "stratify_scores"]

_CSF_HISTOGRAM_BINS_PER_STRATUM = 4


def csf_edges(scores: np.ndarray, n_bins: int) -> np.ndarray:
    """Inner bin edges, shape ``(n_bins - 1,)``, by the cumulative square-root frequency rule.

    Dalenius & Hodges (1959), as used in seed 003 Sec. 5.2: histogram the scores into 4 fine
    bins per stratum, and cut where the cumulative sum of sqrt(frequency) passes each of
    ``n_bins - 1`` equally spaced targets, at the lower edge of the fine bin that passes it
    and at most once per fine bin (a dense region cannot produce empty strata; targets it
    skips move up the score range). If the fine bins run out first, the last strata are
    empty.

    The rule depends on the histogram's resolution: on a histogram so fine that most bins
    hold 0 or 1 items, sqrt(frequency) is the frequency and CSF degenerates to equal-count
    strata (about 210 items each on abt-buy, the 50 positives in 7 strata); with 4 bins per
    stratum, sparse tails get small strata and dense regions large ones (13 to 1,011 items,
    the top strata 15 to 24 items). The 4 per stratum is what the paper's code ends up
    using on both real pools (its Freedman-Diaconis histogram has fewer bins than strata).
    """
    lo, hi = float(scores.min()), float(scores.max())
    if lo == hi:
        return np.full(n_bins - 1, hi)
    counts, fine_edges = np.histogram(
        scores, bins=_CSF_HISTOGRAM_BINS_PER_STRATUM * n_bins, range=(lo, hi)
    )
    cum = np.cumsum(np.sqrt(counts))
    targets = cum[-1] * np.arange(1, n_bins) / n_bins
    edges, target = [], 0
    for fine_bin in range(1, len(counts)):
        if target == len(targets):
            break
        if cum[fine_bin] >= targets[target]:
            edges.append(fine_edges[fine_bin])
            target += 1
    edges += [hi] * (len(targets) - len(edges))
    return np.array(edges)


def equal_width_edges(scores: np.ndarray, n_bins: int) -> np.ndarray:
    """Inner bin edges, shape ``(n_bins - 1,)``, splitting the score range into equal widths."""
    return np.linspace(scores.min(), scores.max(), n_bins + 1)[1:-1]


def stratify_scores(scores: np.ndarray, n_bins: int, method: str = "csf") -> np.ndarray:
    """Bin index in ``0..n_bins-1`` of each score, shape ``(N,)``."""
    edges = {"csf": csf_edges, "equal_width": equal_width_edges}
    if method not in edges:
        raise ValueError(f"`method` must be 'csf' or 'equal_width', got {method!r}.")
    return np.searchsorted(edges[method](scores, n_bins), scores, side="right")


@dataclass(frozen=True, eq=False)
class Partition:
    """A complete tree of ``depth`` levels and ``branching`` children per node over the pool.

    ``block`` (N,) is the leaf of every item; ``sizes`` (K,) the items per leaf, K =
    branching ** depth. Nodes at level l (1..depth) are numbered left to right; the node at
    level l above leaf k is ``k // branching ** (depth - l)``.
    """

    block: np.ndarray
    sizes: np.ndarray
    depth: int
    branching: int

    @property
    def n_blocks(self) -> int:
        return len(self.sizes)

    def flattened(self) -> Partition:
        """The same leaves under one root (seed 003's one-level tree)."""
        return Partition(self.block, self.sizes, depth=1, branching=self.n_blocks)

    def __deepcopy__(self, memo):
        return self  # never changed: the samplers' copies share it


def compact_codes(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values of a non-negative integer ``key`` (N,) in order, and each item's
    index among them: ``np.unique(key, return_inverse=True)`` in O(N) for small keys."""
    present = np.flatnonzero(np.bincount(key))
    index = np.zeros(present[-1] + 1, dtype=np.int64)
    index[present] = np.arange(len(present))
    return present, index[key]


def group_order(group: np.ndarray, n_groups: int, rng: np.random.Generator) -> np.ndarray:
    """Item indices sorted by ``group``, in random order within each group, shape (N,).

    A stable sort of a random permutation; narrow keys make numpy use a radix sort."""
    dtype = np.uint16 if n_groups <= 2**16 else np.uint32
    shuffled = rng.permutation(len(group))
    return shuffled[np.argsort(group[shuffled].astype(dtype), kind="stable")]


def fitting_depth(n_pool: int, branching: int = 2) -> int:
    """The papers' depth 8 (seed 003 Sec. 5.2), or the deepest tree whose branching^depth
    leaves can each hold an item of a smaller pool (at least 1)."""
    depth = 1
    while depth < 8 and branching ** (depth + 1) <= n_pool:
        depth += 1
    return depth


def partition_pool(
    pool: Pool, depth: int = 8, branching: int = 2, method: str = "csf"
) -> Partition:
    """Bin the pool's scores into ``branching ** depth`` blocks and build the tree."""
    if int(depth) != depth or depth < 1:
        raise ValueError(f"`depth` must be a positive integer, got {depth!r}.")
    if int(branching) != branching or branching < 2:
        raise ValueError(f"`branching` must be an integer >= 2, got {branching!r}.")
    n_blocks = branching**depth
    if n_blocks > pool.n_pool:
        raise ValueError(
            f"the tree has {n_blocks} leaves but the pool only {pool.n_pool} items; "
            "use a smaller `depth` or `branching`."
        )
    scores = pool.binary_scores if pool.n_classes == 2 else pool.prob.max(axis=1)
    block = stratify_scores(scores, n_blocks, method)
    sizes = np.bincount(block, minlength=n_blocks)
    return Partition(
        block=frozen(block), sizes=frozen(sizes), depth=int(depth), branching=int(branching)
    )
