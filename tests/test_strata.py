"""CSF and equal-width bins and the tree partition."""

import numpy as np
import pytest
from conftest import synthetic_pool

import evalcore as ec


def test_csf_cuts_where_the_cumulative_root_frequency_passes_each_target():
    # 2 strata -> 8 fine bins over [0.5, 7.5], width 0.875; counts 16,16,16,16,1,1,1,1 give
    # cumulative sqrt 4,8,12,16,17,18,19,20; the target 10 is passed in fine bin 2, whose
    # lower edge is 0.5 + 2 * 0.875 = 2.25.
    scores = np.repeat(np.arange(8) + 0.5, [16, 16, 16, 16, 1, 1, 1, 1])
    np.testing.assert_allclose(ec.csf_edges(scores, 2), [2.25])
    block = ec.stratify_scores(scores, 2, "csf")
    assert np.bincount(block).tolist() == [32, 36]


def test_a_dense_spike_cannot_leave_strata_empty():
    # 4 strata -> 16 fine bins; fine bin 0 holds 10,000 items (sqrt 100) and passes all three
    # targets (28.75, 57.5, 86.25 of 115); each later fine bin closes one stratum instead.
    scores = np.concatenate([np.zeros(10_000), np.arange(1, 16) + 0.5])
    block = ec.stratify_scores(scores, 4, "csf")
    assert np.bincount(block).tolist() == [10_000, 1, 1, 13]


def test_csf_on_a_smooth_density_balances_root_frequency():
    scores = np.random.default_rng(0).normal(size=20000)
    n_bins = 8
    block = ec.stratify_scores(scores, n_bins, "csf")
    counts, edges = np.histogram(scores, bins=4 * n_bins)
    root = np.sqrt(counts)
    fine_of_item = np.clip(np.searchsorted(edges, scores, side="right") - 1, 0, 4 * n_bins - 1)
    share = (
        np.array([root[np.unique(fine_of_item[block == b])].sum() for b in range(n_bins)])
        / root.sum()
    )
    # each stratum holds 1/8 of the root-frequency mass up to one fine bin (at most 0.085)
    assert np.all(np.abs(share - 1 / n_bins) <= root.max() / root.sum() + 1e-12)
    assert np.all(np.diff([scores[block == b].max() for b in range(n_bins)]) > 0)


def test_equal_width_bins_split_the_range_evenly():
    scores = np.array([0.0, 0.1, 0.26, 0.49, 0.51, 0.74, 0.76, 1.0])
    np.testing.assert_array_equal(
        ec.stratify_scores(scores, 4, "equal_width"), [0, 0, 1, 1, 2, 2, 3, 3]
    )


def test_partition_sizes_and_depth_one_is_flat():
    pool = synthetic_pool(n=3000)
    tree = ec.partition_pool(pool, depth=3, branching=2)
    flat = ec.partition_pool(pool, depth=1, branching=8)
    assert tree.n_blocks == flat.n_blocks == 8
    np.testing.assert_array_equal(tree.block, flat.block)
    assert tree.sizes.sum() == pool.n_pool
    # leaves are ordered by score
    maxima = [pool.scores[tree.block == k].max() for k in range(8)]
    assert np.all(np.diff(maxima) > 0)


def test_partition_refuses_more_leaves_than_items():
    with pytest.raises(ValueError, match="smaller `depth`"):
        ec.partition_pool(synthetic_pool(n=100), depth=8, branching=2)
