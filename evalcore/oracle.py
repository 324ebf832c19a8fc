"""The Dirichlet-tree model of the oracle response p(y|x) (seed 003, Sec. 4, App. F-H).

Labels are generated as y ~ Categorical(theta), theta ~ Dirichlet(alpha), and the leaf of an
item as k ~ Categorical(psi_y), psi_y ~ DirichletTree(beta_y) over the partition's tree. All
work is per leaf and class, (K, C) arrays, and per tree level; nothing here touches items.
"""

from __future__ import annotations

import copy
import warnings

import numpy as np
from scipy import sparse
from scipy.special import expit, logit

from .frozen import SharesFrozenArrays, frozen
from .strata import Partition

__all__ = [
    "DirichletTreeModel",
    "EMConvergenceWarning",
    "ItemLevelModel",
    "RecalibratedProbabilities",
    "prior_from_probabilities",
]

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
        # a one-level tree's nodes are its leaves: the sums over paths are the identity, and
        # skipping the sparse products (about 9 us each, 12 per AIS answer) changes no bit
        flat = self.partition.depth == 1
        x = self.beta_ + (counts if flat else self.ancestors_ @ counts)
        if mode:
            x = np.maximum(x - 1.0, _MODE_FLOOR)
        siblings = x.reshape(-1, B, x.shape[1]).sum(axis=1)
        log_b = np.log(x) - np.repeat(np.log(siblings), B, axis=0)
        return (log_b if flat else self.ancestors_t_ @ log_b), log_b

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


LOGIT_BIN_WIDTH = 0.25


def softplus(eta: np.ndarray) -> np.ndarray:
    """log(1 + e^eta) without overflow; four times as fast as ``np.logaddexp(0, eta)`` (and
    scipy's ``softplus``), which sets the time of the likelihood fits in every step."""
    return np.maximum(eta, 0.0) + np.log1p(np.exp(-np.abs(eta)))


def classifier_logit(p1: np.ndarray) -> np.ndarray:
    """logit p̂ (N,), clipped where a double can no longer tell p̂ from 1 (1 - 2^-53, logit
    36.7) and as far from 0. The clip only guards against p̂ of exactly 0 or 1: a tighter
    one (it was 1e-9) merges the tail of over-confident probabilities into one value. On the
    synthetic over_confident pool, 85% of the items (42,711 of 50,000, 7 of its 80 positives)
    lie below 1e-9, spread over true logits -15 to -7, which a recalibrated map cannot tell
    apart once merged."""
    bound = logit(1 - np.finfo(float).epsneg)
    return np.clip(logit(np.asarray(p1, dtype=float)), -bound, bound)


def logit_bins(logit_p: np.ndarray) -> np.ndarray:
    """Each item's bin (N,) of width ``LOGIT_BIN_WIDTH`` in the logit of the classifier's
    probability, numbered from the lowest logit (some bins may be empty). Within a bin the
    odds differ by at most e^0.25 (28%), or e^(0.25 b) after a recalibration of slope b, so
    a bin is evaluated at its mean logit. Fixed widths, not quantiles: under imbalance the
    positives crowd into the top percent of the items, and a quantile bin there spans the
    whole range that matters (abt-buy with expit(score): 49 of its 50 positives and all 24
    predicted positives shared the top of 64 quantile bins, 840 items at one p of 0.006; static
    IS there, 200 runs: interval width at 2000 labels 0.55 -> 0.51 with these bins)."""
    return np.floor((logit_p - logit_p.min()) / LOGIT_BIN_WIDTH).astype(np.int64)


# Gauss-Hermite nodes and weights for expectations over a standard normal
_NORMAL_NODES, _NORMAL_WEIGHTS = np.polynomial.hermite_e.hermegauss(24)
_NORMAL_WEIGHTS = _NORMAL_WEIGHTS / _NORMAL_WEIGHTS.sum()


def expected_expit(mean: np.ndarray, variance: np.ndarray) -> np.ndarray:
    """E[expit(eta)] for eta ~ N(mean, variance), elementwise (Gauss-Hermite quadrature with
    24 nodes: relative error below 1e-6 for variances up to 4)."""
    eta = np.asarray(mean)[..., None] + np.sqrt(variance)[..., None] * _NORMAL_NODES
    return expit(eta) @ _NORMAL_WEIGHTS


def recalibration_weight(log_post_1, log_det_1, log_post_0, log_det_0) -> float:
    """w = expit(log B_10), the posterior probability (prior odds 1) of recalibrating the
    classifier's probabilities against keeping them, from the Bayes factor by Laplace's method
    (Kass & Raftery 1995, "Bayes factors", JASA 90; Tierney & Kadane 1986):

        log B_10 = L_1 - L_0 + (1/2)(log det P - log det H_1 + log det H_0),

    L the log posteriors at the two MAPs (without constants), P = diag(1/4, 1) the prior
    precision of the map's (a, b) and H the negative Hessians of the log posteriors in the
    parameters each model fits (``log_det_0`` is 0 when the identity map fits none)."""
    prior_log_det = np.sum(np.log(1.0 / RecalibratedProbabilities.prior_sd**2))
    return float(expit(log_post_1 - log_post_0 + 0.5 * (prior_log_det - log_det_1 + log_det_0)))


class RecalibratedProbabilities:
    """p(y = 1 | x) = expit(a + b logit p̂(x)): the classifier's probabilities p̂, recalibrated
    on the answers (Platt 1999 scaling in the logit of p̂; Kull et al. 2017's beta calibration
    with equal shape parameters), averaged with p̂ itself by the evidence.

    (a, b) is the MAP under a Gaussian prior centred on the identity map, a ~ N(0, 2^2),
    b ~ N(1, 1): calibrated probabilities are kept until the answers contradict them, and
    over- or under-confident ones are corrected by all answers together, which a per-block
    model cannot do where a block has few labels. Answers are selected on x only, so the
    conditional likelihood needs no importance weights. Items are grouped into bins of
    width 0.25 in logit p̂ (``logit_bins``, ``bin_of``), evaluated at the bin's mean logit.

    As in ``ItemLevelModel``, the prediction averages the recalibrated map M1 with the
    identity map M0 (p̂ as it is) by their posterior probabilities, ``bin_probability`` =
    w p_1 + (1 - w) p_0 with w = ``recalibration_weight_`` (``recalibration_weight``, M0
    fitting no parameter). ``covariance_`` is M1's posterior covariance of (a, b) by Laplace's
    method, H_1^-1, and ``likelihood_region`` the boundary of M1's 95% region of (a, b): the
    intervals carry it to the model's estimate (``intervals``). A MAP alone moves with weak
    evidence, and its slope extrapolates far into the tails where the hidden positives are:
    early in a session on a calibrated pool it can multiply the tail's odds several-fold,
    which no variance term then accounts for.
    """

    prior_mean = np.array([0.0, 1.0])  # the identity map
    prior_sd = np.array([2.0, 1.0])

    def __init__(self, p1: np.ndarray):
        self.logit_ = frozen(classifier_logit(p1))
        self.bin_of = frozen(logit_bins(self.logit_))
        counts = np.bincount(self.bin_of)
        self.bin_logit_ = frozen(np.bincount(self.bin_of, self.logit_) / np.maximum(counts, 1))
        self._reset()

    def _reset(self) -> None:
        self._answers = (np.zeros(0), np.zeros(0), np.zeros(0))
        self.coef_ = self.prior_mean.copy()
        self.covariance_ = np.diag(self.prior_sd**2)
        self.recalibration_weight_ = 0.5  # before any answer both maps are p̂
        self._n_fitted = -1

    def unfitted(self) -> RecalibratedProbabilities:
        """A model at the identity map that shares these bins (O(1); the bins cost O(N))."""
        twin = copy.copy(self)
        twin._reset()
        return twin

    def fit(self, items: np.ndarray, labels: np.ndarray) -> None:
        """Newton's method with step halving on the log posterior (concave, so it converges
        from any start; plain Newton steps can overshoot into saturation and diverge when the
        answers are nearly separable in logit p̂); then M1's covariance and the weight w.

        The answers enter through their distinct values of logit p̂, each with its number of
        answers and of positives (the likelihood's sufficient statistics): a classifier that
        reports only its decisions, or probabilities rounded to a few digits, has a handful of
        values, and the fit and ``likelihood_region`` then cost O(values), not O(answers)."""
        if len(items) == self._n_fitted:
            return
        self._n_fitted = len(items)
        x, group = np.unique(self.logit_[items], return_inverse=True)
        counts = np.bincount(group, minlength=len(x)).astype(float)
        self._answers = (x, np.bincount(group, labels, minlength=len(x)), counts)
        X = np.column_stack([np.ones(len(x)), x])
        precision = 1.0 / self.prior_sd**2

        def negative_hessian(coef):
            p = expit(X @ coef)
            return (X * (counts * p * (1 - p))[:, None]).T @ X + np.diag(precision)

        coef = self.prior_mean.copy()  # from the identity each time, so a replay gives the same fit
        current = identity = self.log_posterior(coef)
        for _ in range(100):
            step = np.linalg.solve(negative_hessian(coef), self._gradient(coef))
            while True:
                trial = self.log_posterior(coef + step)
                if trial >= current - 1e-12 or np.max(np.abs(step)) < 1e-10:
                    break
                step = step / 2
            coef, current = coef + step, trial
            if np.max(np.abs(step)) < 1e-8:
                break
        self.coef_ = coef
        hessian = negative_hessian(coef)
        self.covariance_ = np.linalg.inv(hessian)
        log_det = np.linalg.slogdet(hessian)[1]
        self.recalibration_weight_ = recalibration_weight(current, log_det, identity, 0.0)

    def log_posterior(self, coef: np.ndarray) -> np.ndarray:
        """M1's log posterior (without constants) at ``coef``, (a, b) of shape (2,) or (k, 2),
        on the answers of the last ``fit``."""
        x, positives, counts = self._answers
        coef = np.asarray(coef, dtype=float)
        eta = coef[..., :1] + coef[..., 1:] * x
        prior = 0.5 * ((coef - self.prior_mean) ** 2 / self.prior_sd**2).sum(axis=-1)
        return eta @ positives - softplus(eta) @ counts - prior

    def _gradient(self, coef: np.ndarray) -> np.ndarray:
        """The gradient of ``log_posterior`` in (a, b) at ``coef``, (2,) or (k, 2)."""
        x, positives, counts = self._answers
        residual = positives - counts * expit(coef[..., :1] + coef[..., 1:] * x)
        likelihood = np.stack([residual.sum(axis=-1), residual @ x], axis=-1)
        return likelihood - (coef - self.prior_mean) / self.prior_sd**2

    def likelihood_region(self, z: float, n_points: int) -> np.ndarray:
        """``n_points`` points (n_points, 2) on the boundary of M1's region of (a, b) whose log
        posterior lies within z^2 / 2 of the MAP's: along each of ``n_points`` directions
        d = L (cos phi, sin phi) from the MAP (L L' = ``covariance_``), the distance r where
        the log posterior has fallen by z^2 / 2. Newton's method on f(r) = log posterior - the
        level, from r = z (Laplace's ellipse): f is concave and falls along the ray, so the
        tangent's root never lies short of f's and the steps close in on it from beyond.
        For a Gaussian posterior this is Laplace's ellipse; here the logistic tails make it
        lopsided (``intervals.recalibration_spread``).

        Along a ray the linear predictor at the answers' value x_i is eta_i + r s_i,
        s_i = d_a + d_b x_i, so an iteration takes f and f' from one pass over (rays, values),
        shared by the softplus and expit, and a ray stops once its step is below 1e-9 z (at
        2,000 answers of distinct values the rays' passes set the time of an estimate)."""
        x, positives, counts = self._answers
        angle = np.linspace(0, 2 * np.pi, n_points, endpoint=False)
        circle = np.column_stack([np.cos(angle), np.sin(angle)])
        direction = circle @ np.linalg.cholesky(self.covariance_).T
        level = self.log_posterior(self.coef_) - z**2 / 2
        at_map = self.coef_[0] + self.coef_[1] * x  # (values,)
        along = direction[:, :1] + direction[:, 1:] * x  # s (rays, values)
        along_y, at_map_y = along @ positives, at_map @ positives
        # the prior's term in r, 0.5 ||centred + r spread||^2 per ray
        centred, spread = (self.coef_ - self.prior_mean) / self.prior_sd, direction / self.prior_sd
        distance = np.full(n_points, z)
        moving = np.arange(n_points)
        for _ in range(50):
            r, ray, ray_spread = distance[moving], along[moving], spread[moving]
            eta = at_map + r[:, None] * ray
            tail = np.exp(-np.abs(eta))
            softplus = np.maximum(eta, 0.0) + np.log1p(tail)
            p1 = np.where(eta >= 0, 1.0, tail) / (1.0 + tail)  # expit(eta)
            prior = centred + r[:, None] * ray_spread
            value = at_map_y + r * along_y[moving] - softplus @ counts
            value -= 0.5 * (prior**2).sum(axis=1)
            slope = along_y[moving] - (p1 * ray) @ counts
            slope -= (prior * ray_spread).sum(axis=1)
            step = (value - level) / slope
            distance[moving] = r - step
            moving = moving[np.abs(step) >= 1e-9 * z]
            if not len(moving):
                break
        return self.coef_ + distance[:, None] * direction

    def recalibrated_probability(self, logit_p: np.ndarray) -> np.ndarray:
        """M1's p(y = 1) at ``logit_p``, the logit of the classifier's probability."""
        return expit(self.coef_[0] + self.coef_[1] * logit_p)

    def bin_probability(self) -> np.ndarray:
        """The averaged prediction per bin, w p_1 + (1 - w) p_0, shape ``(n_bins,)``."""
        weight = self.recalibration_weight_
        recalibrated = self.recalibrated_probability(self.bin_logit_)
        return weight * recalibrated + (1 - weight) * expit(self.bin_logit_)


# ItemLevelModel's ``integrate_offsets`` and ``fit_block_sd``: the maps each acts on
MAP_CHOICES = {
    "none": (),
    "recalibrated": ("recalibrated",),
    "both": ("recalibrated", "identity"),
}


class ItemLevelModel(SharesFrozenArrays):
    """pi_t(1 | x) for each item of a binary pool: the classifier's probability p̂(x),
    recalibrated on the answers, with a correction for the item's block k(x):

        pi_t(1 | x) = expit(a + b logit p̂(x) + d_k(x))                                   (*)

    a logistic model with random block intercepts, fitted as the joint MAP under the priors
    a ~ N(0, 2^2), b ~ N(1, 1) (``RecalibratedProbabilities``' Platt scaling centred on the
    identity) and d_k ~ N(0, sigma^2). Before any answer (*) is p̂ itself: calibrated
    probabilities are trusted, item by item, until the answers contradict them; answers
    correct them globally (over- or under-confidence, a shifted base rate) through (a, b), and
    locally, where a block's answers disagree with the recalibrated p̂, through d_k, shrunk to
    0 in proportion to the evidence. Answers are selected on x only, so the conditional
    likelihood needs no importance weights. The Dirichlet tree cannot play this part for rare
    positives: its depth^2 pseudo-counts per node spread the positives almost evenly over the
    leaves, so a 16-item block whose mean p̂ is 0.41 starts at a rate of 0.017 and bulk blocks
    at p̂ ~ 3e-6 start at 5e-4 (synthetic sharp_calibrated pool).

    **Model averaging** (``model_averaging``, the default). A MAP of (a, b) moves with weak
    evidence, and a slope fitted where the answers are extrapolates far into the tails: on
    sharp_calibrated, 24 positives and 8 negatives at moderate p̂ give b = 0.8 (0.17 nats
    better than b = 1), which multiplies the odds of the bulk at logit p̂ = -16 by 24. So the
    prediction averages M1, (*), with M0, the identity map with the same block intercepts,
    pi = expit(logit p̂(x) + d_k(x)), by their posterior probabilities (prior odds 1):

        pi_t(1 | x) = w pi_1(x) + (1 - w) pi_0(x),   w = expit(log B_10),

    where B_10 = p(y | M1) / p(y | M0) is the Bayes factor by Laplace's method (Kass &
    Raftery 1995, "Bayes factors", JASA 90; Tierney & Kadane 1986): log p(y | M) ~ log p(y | th^) +
    log p(th^) + (k / 2) log 2 pi - (1/2) log det H at the MAP th^ with H the negative Hessian
    of the log posterior. The constants of the d_k cancel, leaving

        log B_10 = L_1 - L_0 + (1/2)(log det P - log det S - sum_k log D_1k + sum_k log D_0k),

    L the log posteriors at the MAPs (without constants), P = diag(1/4, 1) the prior precision
    of (a, b), S the Schur complement of H_1 on (a, b) (their posterior precision) and D the
    diagonal of H in d. Calibrated probabilities are trusted until the answers contradict
    them (w -> 0 on calibrated pools: 0.15 on sharp_calibrated, 0.02 on abt-buy's calibrated
    column after 2,000 labels), and recalibrated as before where they do (w = 1 on the
    over-confident pool within a few hundred labels). ``recalibration_weight_`` is w (0.5
    before any answer, when both maps are p̂). Without model averaging (sessions saved
    before it) the prediction is M1's.

    **Block intercepts integrated out** (``integrate_offsets``). Seed 003's deterministic
    Prop. 4 sets q(x) in proportion to sum_y pi(y|x) ||Dg(R) l(x, y)||, linear in pi, so
    under a posterior over the model the proposal that minimises the expected variance takes
    pi's posterior mean, not its value at the MAP. With a few hundred answers spread over 256
    blocks, each d_k rests on a handful of answers (the map (a, b) on all of them), so the
    prediction takes each map's expectation over its d_k:

        E[expit(eta + e)],  e ~ N(0, v_k),  v_k = 1 / (sum_{answers in k} p (1 - p) + 1 / sigma^2),

    eta the linear predictor at the MAP and v_k Laplace's variance of d_k given (a, b) (the
    inverse of the Hessian's diagonal in d; sigma^2 in a block without answers), by
    Gauss-Hermite quadrature (``expected_expit``). ``integrate_offsets`` names the maps that
    take it: "none" (both at the MAP; Bernoulli sampling's), "recalibrated" (M1 only; AIS's
    default since 2026-11-27) or "both". In a block without answers it multiplies the tail's
    odds by about e^(sigma^2 / 2) = 1.65; in M0, which carries the weight where p̂ is
    calibrated (abt-buy's column), that spends draws on a spread the answers do not
    support, so "recalibrated" leaves M0 at its MAP (measured; README, issue 13: on a sure,
    calibrated pool it costs M1's share of that too). Integrating over (a, b) as well was
    measured and not taken: early in a session b's prior, extrapolated to logit p̂ of -15,
    makes the tail's predictive several percent, and the draws leave the items that matter.

    **The block intercepts' sd fitted** (``fit_block_sd``). sigma = 1 is a guess, and the
    answers can tell: on a calibrated pool every d_k is 0 and sigma = 1 lets each d_k follow
    its block's few answers (and, integrated out, multiplies the odds of every unanswered
    tail by about 1.65). ``fit_block_sd`` names the maps ("none", "recalibrated", AIS's
    default since 2026-11-28, or "both") whose sigma is then its type-II maximum likelihood
    (empirical Bayes), approached by one EM step per new answer (Dempster, Laird & Rubin
    1977), the E-step by Laplace's normal for each d_k given (a, b):

        sigma^2 <- mean over the blocks with answers of (d_k^2 + v_k),

    from ``block_sd`` before the first answer. A block without answers takes no part: its
    d_k is the prior's, and it leaves sigma's marginal likelihood unchanged. The fit on t
    answers is at the sigma the step on t - 1 left (``sd``), however often it is refitted,
    so a replay of the answers gives the same proposals. The Bayes factor keeps each map's
    -K log sigma, which cancelled while the sigmas were equal. Where a map's intercepts are
    integrated out, sigma is also the spread of every unanswered block's prediction, the
    1.65 above; at the MAP it only shrinks the d_k.

    **Blocks without answers** (``unanswered_sd``). "fitted" integrates an unanswered block's
    d_k over N(0, sigma^2) with the fitted sigma, the model's own predictive; "prior" over
    N(0, ``block_sd``^2). The answered blocks are not a random sample of blocks: the
    proposal chose them, mostly where p̂ is high, so on a calibrated pool their d_k near 0
    speak for blocks like them and not for the tail the draws have not reached, where
    hidden positives are the whole risk (abt-buy's calibrated column: 5 false negatives
    below p̂ = 0.01). "prior" keeps the fitted sigma where the answers inform it, in the
    answered blocks' Laplace variances, and the prior's spread elsewhere (measured; README,
    issue 13; AIS's default since 2026-11-28). It changes nothing without ``fit_block_sd``,
    where the two sigmas are equal.

    **The maps weighed at one sigma** (``weight_at_block_sd``). With ``fit_block_sd``
    naming one map only, the Bayes factor compares M1 at its type-II maximum-likelihood
    sigma with M0 at ``block_sd``: the fitted hyperparameter buys M1 evidence that has
    nothing to do with recalibrating (on a calibrated pool every d_k is near 0, so a small
    sigma fits better), and w rises where the answers bear p̂ out (0.22 -> 0.66 after 150
    AIS answers on the calibrated pool of ``test_samplers``' adaptive-share test, a
    one-off). With both maps fitted, M0's sigma grows to absorb a miscalibration block by
    block (2.8 on the same pool reported three times too sure in the logit), and w falls
    there (0.999 -> 0.43).
    ``weight_at_block_sd`` takes the Bayes factor from both maps' fits at ``block_sd`` (one
    more fit per map whose sigma is fitted), so w answers whether to recalibrate under one
    prior, and the fitted sigmas act only within each map's prediction. Measured and not
    the default (README, issue 13): with AIS's "recalibrated" and "prior" it costs abt-buy's
    calibrated column x1.3-1.5 of the MSE at 100-150 labels. There the larger w carries M1's
    integrated spread of the unanswered tail into the proposal, and the draws find the
    tail's false negatives sooner.

    **Each fit from the last** (``warm_start``). Newton's method for each map starts from
    its MAP on the answers before the last one, not from the identity: a new answer moves
    the MAP a little. From the identity, on a classifier whose probabilities are 0 or 1 (the
    logits at their clip), it took about 14 Newton steps and 54 evaluations of the log
    posterior per map at 1,800 answers, and the step time grew from 15 to 43 ms by 2,000
    answers. The start depends on the answers alone (as ``sd`` does), so a replay of them
    gives the same fits; the MAP is the same to 1e-8, but the proposal's last bits are not,
    and numpy's multinomial draw of the repeats can follow them, so sessions saved before
    it replay without it (AIS's default since 2026-11-28; False: from the identity).

    Items are grouped by ``bin_of`` (``logit_bins``); a caller's cells (block, bin, ...)
    evaluate (*) at their mean logit.
    """

    block_sd = 1.0  # sigma: a block's odds may differ from the global map by a factor e

    def __init__(
        self,
        p1: np.ndarray,
        block: np.ndarray,
        n_blocks: int,
        model_averaging: bool = True,
        integrate_offsets: str = "none",
        fit_block_sd: str = "none",
        unanswered_sd: str = "fitted",
        weight_at_block_sd: bool = False,
        warm_start: bool = False,
    ):
        for option, maps in (
            ("integrate_offsets", integrate_offsets),
            ("fit_block_sd", fit_block_sd),
        ):
            if not isinstance(maps, str) or maps not in MAP_CHOICES:
                raise ValueError(f"`{option}` must be one of {list(MAP_CHOICES)}, got {maps!r}.")
        if unanswered_sd not in ("fitted", "prior"):
            raise ValueError(f"`unanswered_sd` must be 'fitted' or 'prior', got {unanswered_sd!r}.")
        self.model_averaging = model_averaging
        self.integrate_offsets = integrate_offsets
        self.fit_block_sd = fit_block_sd
        self.unanswered_sd = unanswered_sd
        self.weight_at_block_sd = weight_at_block_sd
        self.warm_start = warm_start
        # each map's sigma for the current answers and for the next one (None: ``block_sd``)
        self.offset_sd_ = {"recalibrated": None, "identity": None}
        self.next_offset_sd_ = dict(self.offset_sd_)
        self.n_answers_ = 0
        # with ``warm_start``, each map's Newton start for the current answers and its MAP
        # on them (None: the identity with d = 0)
        self.map_start_ = {"recalibrated": None, "identity": None}
        self.latest_map_ = dict(self.map_start_)
        # Laplace's variance of each d_k given (a, b), per map (None before a fit: the prior's)
        self.offset_variance_ = self.identity_offset_variance_ = None
        self.recalibration_weight_ = 0.5
        self.identity_offset_ = np.zeros(n_blocks)
        self.answered_ = np.zeros(n_blocks, dtype=bool)  # the blocks with answers in the last fit
        self.logit_ = frozen(classifier_logit(p1))
        self.bin_of = frozen(logit_bins(self.logit_))
        self.n_bins = int(self.bin_of.max()) + 1
        self.block = frozen(block)
        self.coef_ = RecalibratedProbabilities.prior_mean.copy()  # (a, b)
        self.offset_ = np.zeros(n_blocks)  # d_k

    def fit(self, items: np.ndarray, labels: np.ndarray) -> None:
        """Fit (*) to the answers; with ``model_averaging``, also the identity map and their
        posterior weights (see the class docstring)."""
        x, y, block = self.logit_[items], labels.astype(float), self.block[items]
        if len(items) > self.n_answers_:  # a new answer: fit at the sigmas its EM step left,
            self.n_answers_ = len(items)  # from the MAPs on the answers before it
            self.offset_sd_ = dict(self.next_offset_sd_)
            if self.warm_start:
                self.map_start_ = dict(self.latest_map_)
        latest = self.warm_start and len(items) == self.n_answers_
        self.answered_ = np.bincount(block, minlength=len(self.offset_)) > 0
        # the blocks whose intercepts inform sigma (None: nothing to fit)
        answered = self.answered_ if MAP_CHOICES[self.fit_block_sd] and len(items) else None
        fitted = self._map(
            x, y, block, True, self.sd("recalibrated"), self.map_start_["recalibrated"]
        )
        self.coef_, self.offset_, log_post, log_det, self.offset_variance_ = fitted
        if latest:
            self.latest_map_["recalibrated"] = (self.coef_, self.offset_)
        self._em_step("recalibrated", answered, self.offset_, self.offset_variance_)
        if not self.model_averaging:
            return
        fitted = self._map(x, y, block, False, self.sd("identity"), self.map_start_["identity"])
        _, self.identity_offset_, log_post_0, log_det_0, self.identity_offset_variance_ = fitted
        if latest:
            self.latest_map_["identity"] = (fitted[0], self.identity_offset_)
        self._em_step("identity", answered, self.identity_offset_, self.identity_offset_variance_)
        if self.weight_at_block_sd:  # the maps compared at one sigma (class docstring)
            if self.sd("recalibrated") != self.block_sd:
                _, _, log_post, log_det, _ = self._map(x, y, block, True, self.block_sd)
            if self.sd("identity") != self.block_sd:
                _, _, log_post_0, log_det_0, _ = self._map(x, y, block, False, self.block_sd)
        self.recalibration_weight_ = recalibration_weight(log_post, log_det, log_post_0, log_det_0)

    def sd(self, map_name: str) -> float:
        """sigma of one map's block intercepts in the last fit: ``block_sd``, or with
        ``fit_block_sd`` its empirical-Bayes value (see the class docstring)."""
        fitted = self.offset_sd_[map_name]
        return self.block_sd if fitted is None else fitted

    def _em_step(self, map_name, answered, offset, variance) -> None:
        """The sigma of the next answer's fit where ``fit_block_sd`` names the map
        (``answered``: None without it or before any answer, when there is nothing to fit):
        one EM step for sigma^2 (Dempster, Laird & Rubin 1977), the E-step by Laplace's
        normal for each d_k, sigma^2 <- the mean of d_k^2 + v_k over the blocks with
        answers. A block without answers leaves sigma's marginal likelihood unchanged (its
        d_k is the prior's), so it takes no part. A refit on the same answers gives the same
        step, so sigma depends on the answers alone, not on how often they were fitted."""
        if answered is not None and map_name in MAP_CHOICES[self.fit_block_sd]:
            self.next_offset_sd_[map_name] = float(
                np.sqrt(np.mean(offset[answered] ** 2 + variance[answered]))
            )

    def _map(self, x, y, block, free_map: bool, sd: float, start=None):
        """The joint MAP of (a, b, d) (``free_map``) or of d with (a, b) at the identity, by
        Newton's method with step halving on the log posterior (concave), from ``start``
        ((a, b), d), or from the identity with d = 0. The Hessian is an arrow matrix
        (diagonal in d, two dense rows for a and b): each step solves it by the Schur
        complement in O(answers + blocks). Returns the coefficients, the offsets, the log
        posterior at the MAP (without constants but the d_k prior's -K log ``sd``, which the
        Bayes factor needs where the maps' sigmas differ), log det of its negative Hessian
        (Laplace's method) and each d_k's variance given (a, b), the inverse of the
        Hessian's diagonal in d."""
        K = len(self.offset_)
        centre = RecalibratedProbabilities.prior_mean
        coef_precision = 1.0 / RecalibratedProbabilities.prior_sd**2
        block_precision = 1.0 / sd**2

        def log_posterior(coef, offset):
            eta = coef[0] + coef[1] * x + offset[block]
            return (
                y @ eta
                - softplus(eta).sum()
                - 0.5 * coef_precision @ (coef - centre) ** 2
                - 0.5 * block_precision * offset @ offset
            )

        def curvature(coef, offset):
            p = expit(coef[0] + coef[1] * x + offset[block])
            w = p * (1 - p)
            h_coef = np.array([[w.sum(), w @ x], [w @ x, w @ x**2]]) + np.diag(coef_precision)
            cross = np.vstack([np.bincount(block, w, K), np.bincount(block, w * x, K)])  # (2, K)
            diagonal = cross[0] + block_precision
            return p, h_coef - (cross / diagonal) @ cross.T, cross, diagonal

        coef, offset = (centre.copy(), np.zeros(K)) if start is None else start
        current = log_posterior(coef, offset)
        for _ in range(100):
            p, schur, cross, diagonal = curvature(coef, offset)
            r = y - p
            g_offset = np.bincount(block, r, minlength=K) - block_precision * offset
            if free_map:
                g_coef = np.array([r.sum(), r @ x]) - coef_precision * (coef - centre)
                step_coef = np.linalg.solve(schur, g_coef - cross @ (g_offset / diagonal))
                step_offset = (g_offset - cross.T @ step_coef) / diagonal
            else:
                step_coef, step_offset = np.zeros(2), g_offset / diagonal
            while True:
                trial = log_posterior(coef + step_coef, offset + step_offset)
                size = max(np.max(np.abs(step_coef)), np.max(np.abs(step_offset), initial=0.0))
                if trial >= current - 1e-12 or size < 1e-10:
                    break
                step_coef, step_offset = step_coef / 2, step_offset / 2
            coef, offset, current = coef + step_coef, offset + step_offset, trial
            if size < 1e-8:
                break
        _, schur, _, diagonal = curvature(coef, offset)
        log_det = np.sum(np.log(diagonal))
        if free_map:
            log_det += np.linalg.slogdet(schur)[1]
        return coef, offset, float(current - K * np.log(sd)), float(log_det), 1.0 / diagonal

    def cell_probability(self, cell_block: np.ndarray, cell_logit: np.ndarray) -> np.ndarray:
        """(*) per cell of the last ``fit``, shape ``(G,)``; with ``integrate_offsets``,
        its expectation over the block intercept's posterior (see the class docstring)."""
        integrated = MAP_CHOICES[self.integrate_offsets]
        recalibrated = self._probability(
            self.coef_[0] + self.coef_[1] * cell_logit + self.offset_[cell_block],
            self.offset_variance_,
            cell_block,
            "recalibrated" in integrated,
            self.sd("recalibrated"),
        )
        if not self.model_averaging:
            return recalibrated
        identity = self._probability(
            cell_logit + self.identity_offset_[cell_block],
            self.identity_offset_variance_,
            cell_block,
            "identity" in integrated,
            self.sd("identity"),
        )
        weight = self.recalibration_weight_
        return weight * recalibrated + (1 - weight) * identity

    def _probability(self, eta, offset_variance, cell_block, integrate: bool, sd) -> np.ndarray:
        """expit(eta), or where ``integrate`` E[expit(eta + e)] for e ~ N(0, v_k), v_k the
        Laplace variance of the cell's block intercept (the prior's, sd^2, before a fit; with
        ``unanswered_sd="prior"``, ``block_sd``^2 in a block without answers)."""
        if not integrate:
            return expit(eta)
        if offset_variance is None:
            return expected_expit(eta, np.full(len(eta), sd**2))
        variance = offset_variance[cell_block]
        if self.unanswered_sd == "prior":
            variance = np.where(self.answered_[cell_block], variance, self.block_sd**2)
        return expected_expit(eta, variance)
