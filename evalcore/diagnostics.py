"""Convergence diagnostics: KL divergence of proposals and the effective sample size."""

from __future__ import annotations

import numpy as np

from .measures import Measure
from .pool import Pool
from .regression import RegressionPool

__all__ = [
    "kl_divergence",
    "optimal_proposal",
    "effective_sample_size",
    "true_risk",
    "next_term_variance",
    "next_term_variance_by_share",
]


def kl_divergence(p: np.ndarray, q: np.ndarray) -> float:
    """D_KL(p || q) = sum_x p log(p / q) in nats; inf where q = 0 < p."""
    p, q = np.asarray(p, dtype=float), np.asarray(q, dtype=float)
    support = p > 0
    if np.any(q[support] <= 0):
        return float("inf")
    return float(np.sum(p[support] * np.log(p[support] / q[support])))


def true_risk(pool: Pool | RegressionPool, measure: Measure) -> np.ndarray:
    """R on the whole pool from its true labels (values), shape ``(d,)``."""
    if pool.y_true is None:
        raise ValueError("the pool has no true-label column.")
    if isinstance(pool, RegressionPool):
        return measure.loss(pool.prediction, pool.y_true).mean(axis=0)
    codes = measure.codes(pool)
    mass = np.zeros((measure.n_codes(pool), pool.n_classes))
    np.add.at(mass, (codes, pool.y_true), 1.0)
    return measure.expected_risk(mass) / pool.n_pool


def optimal_proposal(pool: Pool, measure: Measure) -> np.ndarray | None:
    """The asymptotically optimal proposal q*(x) ∝ ||Dg(R) l(x, y(x))|| for a deterministic
    oracle with known labels (seed 003, Prop. 3, eq. 5), shape ``(N,)``; None where every
    item's term is 0 (e.g. per-class recall with no correct prediction): the asymptotic
    variance is then 0 under any proposal, and no q* is singled out."""
    risk = true_risk(pool, measure)
    if isinstance(pool, RegressionPool):
        projected = measure.loss(pool.prediction, pool.y_true) @ measure.dense_jacobian(risk).T
        values = np.sqrt(np.sum(projected**2, axis=1))
    else:
        codes = measure.codes(pool)
        sq_norm = measure.sq_norm_dg_loss(risk, measure.n_codes(pool), pool.n_classes)
        values = np.sqrt(sq_norm[codes, pool.y_true])
    total = values.sum()
    return values / total if total > 0 else None


def next_term_variance(sampler) -> float:
    """Variance, given the pool's true labels, of the next new item's Des Raj term under an
    importance sampler's current proposal (``estimators.estimate_is_rao_blackwellised``):
    u(x) / (N q'(x)), x ~ q', with q' the proposal restricted to the unlabelled items and
    u = Dg(R) l(x, y(x)) at the true risk R; summed over the measure's components. 0 once
    every unlabelled item's u is 0 (e.g. every positive labelled, for F1): every later term
    is then exact. O(N): for benchmarks and tests, not for a labelling step."""
    unlabelled = sampler.labels_ < 0
    q = sampler.pmf()[unlabelled]
    return float(_term_variances(sampler, (q / q.sum())[None, :])[0])


def next_term_variance_by_share(sampler, shares) -> np.ndarray:
    """``next_term_variance`` had the default AIS's tree had each of ``shares`` of the
    proposal (``AISSampler.unlabelled_proposal``), shape ``(shares,)``: what the share
    criterion (``AISSampler.share_moments``) tries to estimate from the answers."""
    unlabelled = sampler.labels_ < 0
    q = sampler.unlabelled_proposal(shares)[:, sampler.cell_of_[unlabelled]]
    return _term_variances(sampler, q)


def _term_variances(sampler, q: np.ndarray) -> np.ndarray:
    """Per row of ``q`` (k, unlabelled items, in pool order; each a pmf over them)."""
    pool, measure = sampler.pool, sampler.measure
    risk = true_risk(pool, measure)
    unlabelled = sampler.labels_ < 0
    codes = measure.codes(pool)[unlabelled]
    u = measure.loss(codes, pool.y_true[unlabelled]) @ measure.dense_jacobian(risk).T
    u2 = np.sum(u**2, axis=1)
    matters = u2 > 0  # where q is 0, so is u (Theorem 1's floor)
    second = (u2[matters] / q[:, matters]).sum(axis=1) / pool.n_pool**2
    mean = u.sum(axis=0) / pool.n_pool
    return np.maximum(0.0, second - mean @ mean)


def effective_sample_size(weight: np.ndarray) -> float:
    """Kish's effective sample size (sum w)^2 / sum w^2 of importance weights."""
    weight = np.asarray(weight, dtype=float)
    if len(weight) == 0 or not np.any(weight):
        return 0.0
    return float(weight.sum() ** 2 / np.sum(weight**2))
