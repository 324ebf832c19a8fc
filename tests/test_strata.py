"""CSF and equal-width bins and the tree partition."""

import numpy as np
import pytest
from conftest import synthetic_pool

import evalcore as ec


def test_csf_bins_have_nearly_equal_cumulative_sqrt_frequency():
    scores = np.random.default_rng(0).normal(size=20000)
    n_bins = 8
    block = ec.stratify_scores(scores, n_bins, "csf")
    # Reference: the same rule applied directly on a fine histogram.
    counts, edges = np.histogram(scores, bins=64 * n_bins)
    cum = np.cumsum(np.sqrt(counts))
    share_per_bin = (
        np.array(
            [
                np.sqrt(
                    counts[
                        (edges[:-1] >= scores[block == b].min())
                        & (edges[:-1] <= scores[block == b].max())
                    ]
                ).sum()
                for b in range(n_bins)
            ]
        )
        / cum[-1]
    )
    # each bin holds 1/8 of the root-frequency mass up to one fine histogram bin
    assert np.all(np.abs(share_per_bin - 1 / n_bins) < 0.01)
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
