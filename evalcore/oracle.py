"""The Dirichlet-tree model of the oracle response p(y|x) (seed 003, Sec. 4, App. F-H).

Labels are generated as y ~ Categorical(theta), theta ~ Dirichlet(alpha), and the leaf of an
item as k ~ Categorical(psi_y), psi_y ~ DirichletTree(beta_y) over the partition's tree. All
work is per leaf and class, (K, C) arrays, and per tree level; nothing here touches items.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy import sparse

from .strata import Partition

__all__ = ["DirichletTreeModel", "EMConvergenceWarning", "prior_from_probabilities"]

# Keeps a Dirichlet mode strictly inside the simplex when a concentration is exactly 1 with no
# counts (a depth-1 node over an empty block).
_MODE_FLOOR = 1e-12


class EMConvergenceWarning(RuntimeWarning):
    """EM stopped at its iteration cap before meeting its tolerance."""


def prior_from_probabilities(prob: np.ndarray, partition: Partition) -> np.ndarray:
    """Mean classifier probability per block, s(y|k) of seed 003 Sec. 5.2, shape ``(K, C)``.

    Empty blocks get zeros (they carry no prior mass).
    """
    K = partition.n_blocks
    sums = np.zeros((K, prob.shape[1]))
    for y in range(prob.shape[1]):
        sums[:, y] = np.bincount(partition.block, weights=prob[:, y], minlength=K)
    sizes = np.maximum(partition.sizes, 1)[:, None]
    return sums / sizes


class DirichletTreeModel:
    """Online estimate of the oracle response per leaf, pi(y|k), shape ``(K, C)``.

    Parameters
    ----------
    partition : Partition
        The tree (depth, branching) and the leaf of every item.
    block_prior : ndarray, shape (K, C)
        s(y|k), the mean classifier probability per block. Hyperparameters follow seed 003
        Sec. 5.2: ``alpha_y = 1 + sum_k s(y|k)`` and
        ``beta_{y,nu} = depth(nu)^2 + sum_{k under nu} s(y|k)``.
    deterministic : bool
        True: an answer is final; the unobserved labels are latent and the MAP parameters are
        found by EM (App. F). False: labels may disagree on repeat; the leaf-level posterior
        predictive (App. H, eq. 14) with importance-weighted counts is used.
    prior_strength : float
        Pseudo-observations of the classifier per block: s(y|k) is multiplied by it in alpha
        and beta (1 in Sec. 5.2; the reference package uses 2).
    em_tol, em_max_iter : float, int
        EM stops when the relative change of the log posterior is below ``em_tol``; after
        ``em_max_iter`` iterations it stops with an ``EMConvergenceWarning``.

    Notes
    -----
    The M-step takes the mode of each internal node's Dirichlet over its children,
    b_c ∝ beta~_c - 1. Eq. (11) of App. F is the mode in leaf coordinates, b_c ∝ beta~_c -
    (leaves under c); with the Sec. 5.2 hyperparameters it leaves the simplex whenever a
    subtree holds fewer expected labels of a class than leaves (rare positives under a level-1
    node of a depth-8 tree: 128 leaves), and EM then drives that class's response to zero,
    which would cost the proposal its support. The branch-coordinate mode is the MAP of the
    same model in the Dirichlet tree's natural parameters and stays inside the simplex.
    """

    def __init__(
        self,
        partition: Partition,
        block_prior: np.ndarray,
        deterministic: bool = True,
        prior_strength: float = 1.0,
        em_tol: float = 1e-5,
        em_max_iter: int = 500,
    ):
        if not prior_strength > 0:
            raise ValueError("`prior_strength` must be positive.")
        if em_tol <= 0:
            raise ValueError("`em_tol` must be positive.")
        if int(em_max_iter) != em_max_iter or em_max_iter < 1:
            raise ValueError("`em_max_iter` must be a positive integer.")
        self.partition = partition
        self.block_prior = prior_strength * np.asarray(block_prior, dtype=float)
        self.deterministic = deterministic
        self.em_tol = float(em_tol)
        self.em_max_iter = int(em_max_iter)

        K, C = self.block_prior.shape
        D, B = partition.depth, partition.branching
        self.alpha_ = 1.0 + self.block_prior.sum(axis=0)
        # Non-root nodes, level by level (depth 1 first), left to right; siblings are
        # consecutive runs of B. ancestors_[node, k] = 1 when node lies on the path to leaf k.
        levels = np.concatenate([np.full(B**level, level) for level in range(1, D + 1)])
        node_of_leaf = [
            np.arange(K) // B ** (D - level) + (B**level - B) // (B - 1)
            for level in range(1, D + 1)
        ]
        self.ancestors_ = sparse.csr_matrix(
            (np.ones(K * D), (np.concatenate(node_of_leaf), np.tile(np.arange(K), D))),
            shape=(len(levels), K),
        )
        self.ancestors_t_ = self.ancestors_.T.tocsr()
        self.beta_ = levels[:, None] ** 2 + self.ancestors_ @ self.block_prior
        self.observed_ = np.zeros((K, C))  # distinct labelled items (deterministic) or weights
        self.unobserved_ = partition.sizes.astype(float)
        self.n_updates_ = 0
        self.em_iterations_ = 0
        empty = self.block_prior.sum(axis=1) == 0
        start = np.where(empty[:, None], 1.0 / C, self.block_prior)
        self.response_ = start / start.sum(axis=1, keepdims=True)
        if deterministic:
            self._run_em()
        else:
            self.response_ = self._posterior_predictive()

    # -- updates ------------------------------------------------------------------------
    def update(self, blocks: np.ndarray, labels: np.ndarray, weights: np.ndarray | None = None):
        """Add answers. Deterministic: ``blocks``/``labels`` of newly labelled items only.
        Stochastic: every draw, with its importance ``weights`` (App. H's bias correction).
        """
        blocks, labels = np.atleast_1d(blocks), np.atleast_1d(labels)
        if self.deterministic:
            np.add.at(self.observed_, (blocks, labels), 1.0)
            np.add.at(self.unobserved_, blocks, -1.0)
            self._run_em()
        else:
            w = np.ones(len(blocks)) if weights is None else np.atleast_1d(weights)
            np.add.at(self.observed_, (blocks, labels), w)
            self.response_ = self._posterior_predictive()
        self.n_updates_ += 1

    # -- App. F: EM for a deterministic oracle ------------------------------------------
    def _run_em(self) -> None:
        """EM from the current response, accelerated by SQUAREM (Varadhan & Roland, Scand. J.
        Stat. 2008, scheme S3): two EM steps give a direction, and the extrapolated point is
        kept only when it does not lower the observed-data log posterior. Plain EM contracts
        by about u_k / (u_k + prior) per leaf (u_k unlabelled items), hundreds of steps on
        small pools; the fixed point, the MAP of App. F, is unchanged."""
        response, log_post = self.response_, None
        for iteration in range(1, self.em_max_iter + 1):
            first, _ = self._em_map(response)
            second, value = self._em_map(first)
            r, v = first - response, second - 2 * first + response
            step = -np.sqrt(np.sum(r * r) / max(np.sum(v * v), 1e-300))
            if step < -1:
                jumped = response - 2 * step * r + step**2 * v
                if np.all(jumped > 0):
                    jumped, jumped_value = self._em_map(jumped / jumped.sum(axis=1, keepdims=True))
                    if jumped_value >= value:
                        second, value = jumped, jumped_value
            previous, log_post, response = log_post, value, second
            if previous is not None:
                change = abs(log_post - previous) / max(abs(previous), abs(log_post), 1e-300)
                if change < self.em_tol:
                    self.response_, self.em_iterations_ = response, iteration
                    return
        self.response_, self.em_iterations_ = response, self.em_max_iter
        warnings.warn(
            f"EM did not reach a relative change below em_tol={self.em_tol:g} within "
            f"em_max_iter={self.em_max_iter} iterations; the proposal uses the last iterate.",
            EMConvergenceWarning,
            stacklevel=3,
        )

    def _em_map(self, response: np.ndarray) -> tuple[np.ndarray, float]:
        """One EM step from ``response``: E-step (eq. 12), M-step (eqs. 10-11).

        Returns the new response pi(y|k) ∝ theta_y psi_{y,k} (eq. 13), shape (K, C), and the
        observed-data log posterior at the M-step's parameters,
        sum_obs log(theta_y psi_yk) + sum_k u_k log sum_y theta_y psi_yk + log prior,
        which EM never decreases.
        """
        counts = self.observed_ + self.unobserved_[:, None] * response
        theta_counts = np.maximum(self.alpha_ + counts.sum(axis=0) - 1.0, _MODE_FLOOR)
        theta = theta_counts / theta_counts.sum()
        log_psi, log_b = self._descend(counts, mode=True)
        log_joint = np.log(theta)[None, :] + log_psi
        joint = np.exp(log_joint)
        marginal = joint.sum(axis=1)
        value = (
            np.sum(self.observed_ * log_joint)
            + self.unobserved_ @ np.log(marginal)
            + np.sum((self.alpha_ - 1.0) * np.log(theta))
            + np.sum((self.beta_ - 1.0) * log_b)
        )
        return joint / marginal[:, None], float(value)

    def _descend(self, counts: np.ndarray, mode: bool) -> tuple[np.ndarray, np.ndarray]:
        """log psi (K, C) and log branch probabilities (nodes, C) given leaf ``counts``.

        ``mode``: the M-step's mode, b ∝ beta~ - 1; otherwise the posterior mean, b ∝
        beta~ (eq. 14). psi_{y,k} is the product of the branch probabilities on k's path.
        """
        B = self.partition.branching
        x = self.beta_ + self.ancestors_ @ counts
        if mode:
            x = np.maximum(x - 1.0, _MODE_FLOOR)
        siblings = x.reshape(-1, B, x.shape[1]).sum(axis=1)
        log_b = np.log(x) - np.repeat(np.log(siblings), B, axis=0)
        return self.ancestors_t_ @ log_b, log_b

    # -- App. H: posterior predictive for a stochastic oracle ---------------------------
    def _posterior_predictive(self) -> np.ndarray:
        alpha_post = self.alpha_ + self.observed_.sum(axis=0)
        log_psi, _ = self._descend(self.observed_, mode=False)
        joint = alpha_post[None, :] * np.exp(log_psi)  # eq. 14
        return joint / joint.sum(axis=1, keepdims=True)

    def log_posterior(self, response: np.ndarray | None = None) -> float:
        """The observed-data log posterior at the parameters implied by ``response`` (K, C),
        default the current one: the objective EM maximizes (for tests and diagnostics)."""
        return self._em_map(self.response_ if response is None else response)[1]
