"""KL divergence, the optimal proposal and the effective sample size."""

import numpy as np
import pandas as pd
import pytest
from conftest import synthetic_pool

import evalcore as ec


def test_kl_divergence_by_hand():
    p, q = np.array([0.5, 0.5, 0.0]), np.array([0.25, 0.5, 0.25])
    assert ec.kl_divergence(p, q) == pytest.approx(0.5 * np.log(2))
    assert ec.kl_divergence(p, p) == 0.0
    assert ec.kl_divergence(q, p) == np.inf  # q puts mass where p has none


def test_optimal_proposal_is_proportional_to_the_norm_of_the_linearized_loss():
    pool = synthetic_pool(n=300, positive_rate=0.1, seed=5)
    measure = ec.get_measure("f1")
    q_star = ec.optimal_proposal(pool, measure)
    R = ec.true_risk(pool, measure)
    J = measure.dense_jacobian(R)
    losses = measure.loss(pool.y_pred, pool.y_true)
    norms = np.linalg.norm(losses @ J.T, axis=1)
    np.testing.assert_allclose(q_star, norms / norms.sum(), rtol=1e-12)
    assert np.all(q_star[(pool.y_true == 0) & (pool.y_pred == 0)] == 0)


def test_there_is_no_optimal_proposal_when_every_items_term_is_zero():
    # three classes, no prediction right: per-class recall is 0 for every class, and its
    # linearized loss vanishes wherever the prediction is wrong, so on every item
    labels = np.arange(30) % 3
    scores = np.eye(3)[(labels + 1) % 3]  # each item's highest score on the wrong class
    frame = pd.DataFrame(scores, columns=["score_a", "score_b", "score_c"])
    frame["item_id"], frame["label"] = range(30), np.array(["a", "b", "c"])[labels]
    pool = ec.Pool.from_dataframe(frame, ec.detect_mapping(frame))
    assert np.all(pool.y_pred != pool.y_true)
    assert ec.optimal_proposal(pool, ec.get_measure("per_class_recall", 3)) is None


def test_effective_sample_size():
    assert ec.effective_sample_size(np.ones(10)) == pytest.approx(10)
    assert ec.effective_sample_size(np.array([1.0, 0.0, 0.0])) == pytest.approx(1)
    assert ec.effective_sample_size(np.array([])) == 0.0


def test_ais_proposal_approaches_the_optimal_proposal_as_labels_arrive():
    """Seed 003 Fig. 2: D_KL(q* || q_t) falls as the oracle model learns."""
    pool = synthetic_pool(n=3000, positive_rate=0.02, seed=8)
    measure = ec.get_measure("f1")
    q_star = ec.optimal_proposal(pool, measure)
    sampler = ec.AISSampler(pool, measure, rng=0, depth=4)
    divergence = [ec.kl_divergence(q_star, sampler.pmf())]
    for _ in range(3):
        for _ in range(300):
            sampler.record(pool.y_true[sampler.propose().item])
        divergence.append(ec.kl_divergence(q_star, sampler.pmf()))
    assert np.all(np.isfinite(divergence))
    assert divergence[-1] < 0.5 * divergence[0]


def test_cell_level_kl_equals_the_kl_of_the_full_pmfs():
    pool = synthetic_pool(n=1200, positive_rate=0.05, seed=9)
    measure = ec.get_measure("f1")
    q_star = ec.optimal_proposal(pool, measure)
    for name, options in [("ais", {"depth": 3}), ("passive", {}), ("oasis", {"n_strata": 8})]:
        sampler = ec.make_sampler(name, pool, measure, 0, **options)
        for _ in range(4):
            expected = ec.kl_divergence(q_star, sampler.pmf())
            assert sampler.kl_from(q_star) == pytest.approx(expected, rel=1e-9)
            for _ in range(40):
                sampler.record(pool.y_true[sampler.propose().item])


def test_the_next_terms_variance_matches_the_spread_of_simulated_terms():
    """Draw the next new item from the proposal restricted to the unlabelled items many
    times: the sample variance of u(x) / (N q'(x)) matches ``next_term_variance``; with every
    item whose term can be non-zero labelled, it is 0."""
    pool = synthetic_pool(n=300, positive_rate=0.1, seed=5)
    measure = ec.get_measure("f1")
    sampler = ec.make_sampler("ais", pool, measure, 2, depth=3)
    while sampler.n_labels < 20:
        sampler.record(pool.y_true[sampler.propose().item])
    unlabelled = np.flatnonzero(sampler.labels_ < 0)
    q = sampler.pmf()[unlabelled]
    q = q / q.sum()
    risk = ec.true_risk(pool, measure)
    u = (measure.loss(pool.y_pred, pool.y_true) @ measure.dense_jacobian(risk).T)[:, 0]
    drawn = np.random.default_rng(0).choice(len(unlabelled), 200_000, p=q)
    terms = u[unlabelled][drawn] / (pool.n_pool * q[drawn])
    assert ec.diagnostics.next_term_variance(sampler) == pytest.approx(terms.var(), rel=0.02)
    matters = np.flatnonzero(u != 0)
    for item in matters[sampler.labels_[matters] < 0]:
        sampler._pending = ec.samplers.Proposal(int(item), 0.5, 1.0, None)
        sampler.record(pool.y_true[item])
    assert ec.diagnostics.next_term_variance(sampler) == 0.0
