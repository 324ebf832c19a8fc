"""What the oracle model says about the unlabelled part: a model variance and the bounds.

Under extreme imbalance the design-based variance of an estimate is computed from draws that
have usually missed the rare, heavily weighted events (a false negative deep among the
predicted negatives), so it is smallest exactly when the estimate is furthest off: estimate
and standard error are negatively correlated and Wald intervals miss on one side. Two pieces
of knowledge about the unlabelled items help without touching the design's estimate:

* **The model variance.** The oracle model pi(y|x) (binary pools: the classifier's
  probabilities recalibrated on the answers and averaged with them by the evidence,
  ``RecalibratedProbabilities``; multi-class pools:
  the sampler's Dirichlet tree, or one fitted to its answers, seed 003 Sec. 4, 5.2) says what
  the unlabelled items can still add. Labelled items count at their answers (deterministic
  oracle), so it vanishes only when every item whose loss can change the measure is labelled.
  With u(x, y) = Dg(R) l(x, y) (component i) and E, Var under the model:

  - importance sampling and Bernoulli designs add the variance of the unlabelled remainder,
    (1/N^2) sum_{x unlabelled} Var[u_i(x, y)] (independent answers: Poisson-binomial);
  - stratified designs (seed 002) replace each stratum's sample variance S_h^2 by
    max(S_h^2, sigma_h^2), sigma_h^2 the model's variance of u in the stratum, so a stratum
    that shows no false negative is not sure it has none; a stratum with a single label uses
    sigma_h^2 (instead of a pooled S^2 borrowed from other strata).

  The model's variance under the proposal itself, (1/n) sum_x p^2 / q E[u^2], was tried
  first: with heavy-tailed weights it is dominated by events a run almost never draws
  (standard errors above 1 for F1 on abt-buy), so it is not used.
* **The model's own estimate.** The same model gives a second estimate of the measure: the
  answers where items are labelled, pi's expectation elsewhere (a prediction estimator,
  Saerndal, Swensson & Wretman 1992, Sec. 6.7; here with the recalibrated probabilities),
  G_model = g((1/N) [sum_{x labelled} l(x, y_x) + sum_{x unlabelled} E_pi l(x, y)]), with
  the remainder variance above and, on binary pools, the recalibration's own uncertainty
  (``recalibration_spread``) making up its distribution (``ModelSpread``). It errs where
  the model is wrong, the design estimate where its draws have missed the rare heavy events,
  and the two errors tend to lie on opposite sides of the truth (over-confident
  probabilities: the model under-counts the hidden false negatives by a factor 2-3, the
  design has not drawn them). The reported
  interval is the hull of the design's interval and the model's (``model_estimate``). Measured
  (F1, 60 runs, AIS at 500 labels, the model's variance then the remainder's alone): coverage
  0.73 -> 0.92 on the over-confident synthetic pool (width 0.34 -> 0.43), 0.95 -> 1.00 on
  abt-buy with its calibrated column (width 0.144 -> 0.157). The recalibration's uncertainty
  (F1, 200 runs; see ``recalibration_spread`` and benchmarks/results/coverage.md) then
  lifted Bernoulli sampling at 200 / 500 labels from 0.73 / 0.75 to 1.00 on the rare
  calibrated pool (width 0.56 / 0.56 -> 0.84 / 0.66) and from 0.68 / 0.82 to 0.98 / 0.98 on
  the over-confident one (width 0.51 / 0.47 -> 0.75 / 0.67). Around the MAP alone, without
  the average with p̂, it doubled or tripled the width on the calibrated pools (0.146 ->
  0.41 on abt-buy at 200 labels, AIS).
  Stratified designs report the hull too: with their stratum variances alone (F1, 200 runs,
  proportional allocation) they covered 0.57-0.82 on the rare pools where the estimate was
  defined, with the hull 1.00 at median widths 0-7% wider; on the balanced tweets100k the
  model's bias widens them by up to 21% (2000 labels: 0.036 -> 0.043, coverage 0.955 -> 0.97).
  Neyman allocation, already at 0.93-1.00, moves by less than 0.07 in coverage and 3% in
  width.
* **The bounds.** Whatever the unlabelled items turn out to be, the measure lies in the range
  it takes over all their labellings (worst-case bounds, Manski 1989). Intervals are clipped
  to it, and while the answers carry too little evidence for an interval (the measure is
  undefined, or no true positive has been found yet) the bounds are the interval.
"""

from __future__ import annotations

import itertools
import weakref
from dataclasses import dataclass, replace

import numpy as np
from scipy import sparse
from scipy.special import expit, ndtr

from .measures import Measure
from .oracle import DirichletTreeModel, RecalibratedProbabilities, prior_from_probabilities
from .samplers import code_sums
from .strata import compact_codes, fitting_depth, partition_pool

__all__ = ["OracleView", "oracle_view", "measure_bounds", "model_estimate"]

_MAX_BOUND_VERTICES = 256
_Z95 = 1.959963984540054  # G_1's limits are its 2.5% and 97.5% quantiles
# the recalibration's 95% confidence region for (a, b), at the chi-square quantile with two
# degrees of freedom, sqrt(5.991) (``recalibration_spread``)
_REGION_Z = 2.447746830680816
_REGION_POINTS = 32
_GRID_STEPS = 17  # per code, for binary measures whose extremes need not lie at vertices
# Occam's window (Madigan & Raftery 1994): a map stays in it unless its posterior odds
# against the other are below 1 to 20 (``ModelSpread.window``)
OCCAM_WINDOW = 1 / 21


@dataclass(frozen=True, eq=False)
class OracleView:
    """The oracle model per item group (model block, measure code) and the final answers.

    ``group_of`` (N,) the group of every item; ``group_code`` (G,); ``response`` (G, C)
    pi(y | group); ``labelled``/``labels`` (n,) the distinct items whose answer is final
    (empty for a stochastic oracle); ``grouping`` the cached structures behind them;
    ``model`` the fitted model (``RecalibratedProbabilities`` or ``DirichletTreeModel``).
    """

    group_of: np.ndarray
    group_code: np.ndarray
    response: np.ndarray
    labelled: np.ndarray
    labels: np.ndarray
    grouping: _Grouping
    model: RecalibratedProbabilities | DirichletTreeModel

    @property
    def n_groups(self) -> int:
        return len(self.group_code)

    def unlabelled_counts(self) -> np.ndarray:
        """The items per group whose answer is not final, (G,)."""
        labelled = np.bincount(self.group_of[self.labelled], minlength=self.n_groups)
        return self.grouping.group_size - labelled

    def expected(self, table: np.ndarray) -> np.ndarray:
        """sum_y pi(y | g) table[code_g, y] per group, (G, m) from ``table`` (codes, C, m)."""
        return np.einsum("gy,gym->gm", self.response, table[self.group_code])


class _Grouping:
    """Items grouped by (model block, code), with the sparse overlaps of groups and other
    partitions (a sampler's cells, strata): O(N), built once per pool, blocks and codes."""

    def __init__(self, block: np.ndarray, codes: np.ndarray, n_codes: int):
        self.block, self.codes = block, codes
        present, self.group_of = compact_codes(block * n_codes + codes)
        self.group_block, self.group_code = present // n_codes, present % n_codes
        self.group_size = np.bincount(self.group_of).astype(float)
        self.code_count = np.bincount(self.group_code, self.group_size, minlength=n_codes)
        self._overlap: tuple[np.ndarray, sparse.csr_matrix] | None = None

    def overlap(self, other_of: np.ndarray) -> sparse.csr_matrix:
        """Items per (group, part of ``other_of``), shape (G, parts), e.g. per stratum."""
        if self._overlap is None or self._overlap[0] is not other_of:
            shape = (len(self.group_code), int(other_of.max()) + 1)
            matrix = sparse.csr_matrix(
                (np.ones(len(other_of)), (self.group_of, other_of)), shape=shape
            )
            self._overlap = (other_of, matrix)
        return self._overlap[1]


class _PoolStructures:
    """What the intervals build once per pool (O(N)), whatever sampler or copy of one asks:
    the recalibration's bins (binary pools), the fitted tree's partition and prior
    (multi-class pools without a tree of their own) and the latest groupings."""

    _GROUPINGS_KEPT = 8

    def __init__(self):
        self.calibration: RecalibratedProbabilities | None = None
        self.tree: tuple | None = None
        self.groupings: list[_Grouping] = []

    def grouping(self, block: np.ndarray, codes: np.ndarray, n_codes: int) -> _Grouping:
        """The grouping of ``block`` and ``codes``, kept when ``codes`` is a sampler's (a
        read-only view, shared by its copies); another measure's codes are grouped per call."""
        for grouping in self.groupings:
            if grouping.block is block and _owner(grouping.codes) is _owner(codes):
                return grouping
        grouping = _Grouping(block, codes, n_codes)
        if not codes.flags.writeable:
            self.groupings = [grouping, *self.groupings[: self._GROUPINGS_KEPT - 1]]
        return grouping


def _owner(array: np.ndarray) -> np.ndarray:
    """The array that owns ``array``'s memory: samplers of one measure on one pool hold
    read-only views of the same codes (``frozen``), so they share one grouping."""
    return array if array.base is None else array.base


_structures: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # pool -> _PoolStructures
_fits: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # sampler -> its fitted model


def _pool_structures(pool) -> _PoolStructures:
    structures = _structures.get(pool)
    if structures is None:
        structures = _structures[pool] = _PoolStructures()
    return structures


def oracle_view(sampler, codes: np.ndarray, n_codes: int) -> OracleView:
    """The oracle model for the intervals, grouped by the model's cells and the measure's codes.

    Binary pools: the classifier's probabilities recalibrated on the answers
    (``RecalibratedProbabilities``), on bins of width 0.25 in logit p̂. Multi-class pools: the
    sampler's own Dirichlet tree when it has one, else one fitted to its answers. The bins
    and groupings are built once per pool (O(N)) and shared by a sampler's copies (a new tab,
    a checkpoint); a call after that costs O(groups + answers), so a labelling step does not
    grow with the pool.
    """
    labelled, labels = final_answers(sampler)
    pool = sampler.pool
    structures = _pool_structures(pool)
    if pool.n_classes == 2:
        if structures.calibration is None:
            structures.calibration = RecalibratedProbabilities(pool.prob[:, 1])
        calibration = _fits.get(sampler)
        if calibration is None:
            calibration = _fits[sampler] = structures.calibration.unfitted()
        calibration.fit(labelled, labels)
        grouping = structures.grouping(calibration.bin_of, codes, n_codes)
        p1 = calibration.bin_probability()[grouping.group_block]
        response, model = np.column_stack([1 - p1, p1]), calibration
    else:
        model = getattr(sampler, "model_", None)
        if not isinstance(model, DirichletTreeModel):
            model = _fitted_model(sampler, structures, labelled, labels)
        grouping = structures.grouping(model.partition.block, codes, n_codes)
        response = model.response_[grouping.group_block]
    return OracleView(
        grouping.group_of, grouping.group_code, response, labelled, labels, grouping, model
    )


def final_answers(sampler) -> tuple[np.ndarray, np.ndarray]:
    """Distinct items whose answer is final, in the order answered, and their labels."""
    if hasattr(sampler, "_labelled_items"):  # importance sampling
        if not sampler.deterministic:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        items = np.asarray(sampler._labelled_items, dtype=np.int64)
    elif hasattr(sampler, "_order"):  # Bernoulli
        items = np.asarray(sampler._order, dtype=np.int64)
    else:  # stratified
        items = sampler.labelled()[0]
    return items, sampler.labels_[items]


def _fitted_model(sampler, structures, labelled, labels) -> DirichletTreeModel:
    """A deterministic Dirichlet tree on the pool's CSF blocks (depth 8, fewer on a pool of
    under 256 items) with the classifier's probabilities as prior, fitted to the answers in
    one batch (so a replay of the log gives the same fit) and kept until they change. The
    partition and prior are built once per pool (O(N)); a refit costs O(blocks + answers).
    """
    pool = sampler.pool
    if structures.tree is None:
        partition = partition_pool(pool, depth=fitting_depth(pool.n_pool), branching=2)
        structures.tree = (partition, prior_from_probabilities(pool.prob, partition))
    partition, prior = structures.tree
    fitted = _fits.get(sampler)
    if fitted is None or fitted[0] != len(labelled):
        model = DirichletTreeModel(partition, prior)
        if len(labelled):
            model.update(partition.block[labelled], labels)
        fitted = _fits[sampler] = (len(labelled), model)
    return fitted[1]


def projected_losses(measure: Measure, jacobian, n_codes: int, n_classes: int) -> np.ndarray:
    """u = Dg(R) l(c, y) for every code, class and component, shape ``(codes, C, m)``. A
    sparse Dg stays sparse: a PR curve's is 2 non-zeros per row of 2,049."""
    table = measure.loss_table(n_codes, n_classes)
    if not sparse.issparse(jacobian):
        return table @ np.nan_to_num(np.asarray(jacobian)).T
    J = sparse.csr_matrix(jacobian)
    J.data = np.nan_to_num(J.data)
    return (J @ table.reshape(-1, table.shape[2]).T).T.reshape(n_codes, n_classes, -1)


def remainder_variance(view: OracleView, u: np.ndarray, n_pool: int) -> np.ndarray:
    """Var_pi[(1/N) sum_{x unlabelled} u(x, y)] (m,): what the unlabelled items can still
    add, independent Bernoulli (Poisson-binomial) answers under the model."""
    counts = view.unlabelled_counts()
    spread = view.expected(u**2) - view.expected(u) ** 2
    return counts @ np.maximum(spread, 0.0) / n_pool**2


# ModelSpread.limits' search: 48 halvings' precision in rounds of 2^bits ways, the bits the
# largest of these divisors of 48 that keeps a round's grid within _SEARCH_POINTS points
_SEARCH_BITS = (8, 6, 4, 3)
_SEARCH_POINTS = 512


@dataclass(frozen=True)
class ModelSpread:
    """The model's distribution of the measure, each field (m,): the Bayesian model average
    of the two maps of ``RecalibratedProbabilities`` (Hoeting, Madigan, Raftery & Volinsky
    1999, Statist. Sci. 14, eq. 1: the posterior of a quantity is the average of its
    posteriors under each model, weighted by the models' posterior probabilities),

        F(x) = w F_1(x) + (1 - w) Phi((x - G_0) / r),

    ``weight`` w on M1, the fitted map, and 1 - w on M0, p̂ itself; ``identity`` G_0 and
    ``at_map`` G_1 the measure under either map; ``remainder`` r the standard deviation of
    what the unlabelled items' answers add under the model (``remainder_variance``). F_1 is
    M1's posterior of G, read from G_1's extremes over the recalibration's 95% confidence
    region (``recalibration_spread``), taken as its 2.5% and 97.5% quantiles: G_1 + s z is
    G's quantile at Phi(z), with ``below`` s on the side under the MAP and ``above`` s over
    it (the extremes' distances over 1.96 each), and r added to each in quadrature. At one
    degree of freedom the extremes are the profile-likelihood limits, whose signed root of
    the likelihood ratio is close to N(0, 1) (Barndorff-Nielsen & Cox 1994, Sec. 3.4); the
    region at two is wider where that approximation fails, early in a session. For the
    Dirichlet tree (multi-class pools) w = 0 and G_0 is the model's estimate.

    The limits are F's quantiles: where w is small (the answers bear p̂ out), M1's long tail
    reaches only as far as its share of the tail probability allows. Before, the variance of
    this mixture (the law of total variance) went into the delta method on the logit scale,
    which turns a small chance of a large miss into a wide interval on both grounds: static
    IS on the sharp calibrated synthetic pool at 500 labels, w = 0.13, G_1's limits
    [0.50, 0.957], gave [0.33, 0.957] around an estimate within 1e-5 of the truth.

    With ``window`` the limits are the hull of those quantiles and M1's own (F_1's, as if
    w = 1) wherever M1 lies in Occam's window, w >= 1/21 (Madigan & Raftery 1994, JASA 89:
    a model is kept unless its posterior odds against the best are below 1 to 20): the
    average lets M1's tail reach the interval only as far as w allows, the window as far
    as M1 itself reaches. OASIS's intervals take it (``samplers.OASISSampler``, where it
    is measured); the other designs' do not, because on the calibrated pools it costs them
    far more width than the coverage it buys (README, "How the intervals are built").
    """

    weight: np.ndarray
    identity: np.ndarray
    at_map: np.ndarray
    below: np.ndarray
    above: np.ndarray
    remainder: np.ndarray
    window: bool = False

    def cdf(self, x: np.ndarray) -> np.ndarray:
        """F(x) per component; ``x`` (..., m)."""
        return self._cdf(
            x, np.hypot(self.below, self.remainder), np.hypot(self.above, self.remainder)
        )

    def _cdf(self, x, below, above):
        with np.errstate(divide="ignore", invalid="ignore"):
            side = np.where(x <= self.at_map, below, above)
            mapped = np.where(side > 0, ndtr((x - self.at_map) / side), 0.0)
            mapped = np.where((side == 0) & (x >= self.at_map), 1.0, mapped)
            identity = np.where(
                self.remainder > 0,
                ndtr((x - self.identity) / self.remainder),
                (x >= self.identity).astype(float),
            )
        return self.weight * mapped + (1 - self.weight) * identity

    def limits(self, confidence_level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
        """The model's interval, each (m,): F's quantiles at (1 -/+ level) / 2, with
        ``window`` their hull with M1's own where w >= 1/21; NaN where a component is
        undefined."""
        low, high = self._quantiles(confidence_level)
        kept = self.weight >= OCCAM_WINDOW
        if self.window and kept.any():
            alone = replace(self, weight=np.ones_like(self.weight), window=False)
            map_low, map_high = alone._quantiles(confidence_level)
            low = np.where(kept, np.fmin(low, map_low), low)
            high = np.where(kept, np.fmax(high, map_high), high)
        return low, high

    def _quantiles(self, confidence_level: float) -> tuple[np.ndarray, np.ndarray]:
        """F's quantiles at (1 -/+ level) / 2, to 2^-48 of a span of ten spreads either
        side. A 2^k-way search: F is non-decreasing, so the grid points under the level are
        a prefix and their count picks the next bracket. A scalar measure's time is the
        rounds, so it takes six of 256 ways (0.6 ms against sixteen rounds' 1.0-1.3); a PR
        curve's is the points (2 x 2,049 components), so it takes sixteen rounds of 8 ways,
        bisection's 48 halvings in a third of the calls."""
        tail = (1 - confidence_level) / 2
        below, above = np.hypot(self.below, self.remainder), np.hypot(self.above, self.remainder)
        reach = 10 * (np.maximum(below, above) + 1e-12)
        start = np.minimum(self.at_map, self.identity) - reach
        end = np.maximum(self.at_map, self.identity) + reach
        low, span = np.stack([start, start]), np.stack([end - start, end - start])
        levels = np.array([tail, 1 - tail])[:, None, None]
        bits = next(
            (b for b in _SEARCH_BITS if 2 * low.shape[-1] << b <= _SEARCH_POINTS), _SEARCH_BITS[-1]
        )
        ways = 1 << bits
        fractions = np.arange(1, ways)[:, None] / ways
        for _ in range(48 // bits):
            grid = low[:, None] + span[:, None] * fractions  # (2, ways - 1, m)
            under = (self._cdf(grid, below, above) < levels).sum(axis=1)
            span = span / ways
            low = low + under * span
        limits = low + span / 2
        return limits[0], limits[1]


def model_estimate(
    view: OracleView, measure: Measure, known_mass: np.ndarray, n_pool: int, window: bool = False
) -> tuple[np.ndarray, ModelSpread] | None:
    """The model's estimate of the measure (m,) and its distribution: the answers where
    items are labelled (``known_mass`` (codes, C) counts them), pi's expected class mass for
    the rest, the remainder variance at the model's own R, and, for the recalibrated
    probabilities, what their fit leaves uncertain (``recalibration_spread``), its limits
    widened to Occam's window with ``window`` (``ModelSpread``). None where the measure is
    not defined there."""
    risk = _model_risks(view, view.response[None], measure, known_mass, n_pool)[0]
    if measure.undefined_reason(risk) is not None:
        return None
    n_codes, C = known_mass.shape
    u = projected_losses(measure, measure.jacobian(risk), n_codes, C)
    remainder = np.sqrt(remainder_variance(view, u, n_pool))
    value = measure.g(risk)
    if not isinstance(view.model, RecalibratedProbabilities):
        zero = np.zeros_like(value)
        return value, ModelSpread(zero, value, value, zero, zero, remainder)
    weight, at_map, identity, below, above = recalibration_spread(view, measure, known_mass, n_pool)
    at_map, identity = (
        np.where(np.isnan(at_map), value, at_map),
        np.where(np.isnan(identity), value, identity),
    )
    spread = ModelSpread(
        np.full_like(value, weight), identity, at_map, below, above, remainder, window
    )
    return value, spread


def _model_risks(view, responses, measure, known_mass, n_pool) -> np.ndarray:
    """R (k, d) of k models: the answers where items are labelled and ``responses`` (k, G, C),
    each model's pi(y | group), for the rest."""
    n_codes, C = known_mass.shape
    responses = np.asarray(responses)
    k = len(responses)
    by_group = responses.transpose(1, 0, 2).reshape(view.n_groups, k * C)  # all k at once
    unlabelled = code_sums(view.group_code, view.unlabelled_counts(), by_group, n_codes)
    mass = known_mass + unlabelled.reshape(n_codes, k, C).transpose(1, 0, 2)
    return np.tensordot(mass, measure.loss_table(n_codes, C), axes=([1, 2], [0, 1])) / n_pool


def recalibration_spread(
    view: OracleView, measure: Measure, known_mass: np.ndarray, n_pool: int
) -> tuple[float, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """What the recalibration's fit leaves uncertain, for ``ModelSpread``: the model
    average's weight w on M1 (the map theta = (a, b); 1 - w on M0, p̂ itself), the estimates
    G_1 at M1's MAP and G_0 under p̂, and G_1's spread below and above its MAP under M1's
    posterior, each (m,):

        below = max over R of (G_1(theta^) - G_1(theta)) / z,  above likewise upwards,

    z = 1.96 and R = {theta : log p(theta | y) >= log p(theta^ | y) - c / 2}, c = 5.991 the
    95% quantile of chi-square with two degrees of freedom: M1's likelihood region
    (``RecalibratedProbabilities.likelihood_region``) as a 95% confidence region for
    theta = (a, b) itself, G_1 evaluated exactly at 32 points of its boundary, its extremes
    there taken as G_1's 2.5% and 97.5% quantiles. Where R holds theta, it holds G_1(theta)
    for every function G_1 at once (Scheffe's projection). With c = z^2 (one degree of
    freedom) the extremes are G_1's profile-likelihood limits at 95% (Venzon & Moolgavkar
    1988, Appl. Statist. 37), the construction until 2026-11-27. Where the posterior is
    Gaussian, R is Laplace's ellipse scaled by sqrt(c), and where G_1 is also linear in
    theta, both spreads are sqrt(c) / z times the delta method's sqrt(J Sigma J').
    Neither holds where it matters:

    * G_1 is not linear: the tail's expected positives grow exponentially in theta, so a
      slope a little shallower hides many more false negatives than a slope a little steeper
      removes, and the delta method understates that side (Bernoulli sampling on the
      over-confident pool at 200 labels: coverage 0.85 at median width 0.71 with the delta
      method, 40 runs; 0.98 at 0.75 with G_1 on Laplace's ellipse, 200 runs).
    * The posterior is lopsided: every labelled negative in the tail weighs against a
      shallower slope, little against a steeper one. Laplace's ellipse ignores that
      (abt-buy with expit(score), static IS, 200 runs: median width at 500 / 1000 / 2000
      labels 0.72 / 0.63 / 0.51 on the ellipse, 0.71 / 0.58 / 0.46 on R, coverage
      0.975-0.995 both; see benchmarks/results/coverage.md).

    Why two degrees of freedom: the one-parameter level rests on the likelihood ratio's
    large-sample law, and early in a session it does not hold. The first answers lie where
    p̂ is high, so (a, b) lie along a ridge, while G_1 counts the far tail's positives. On
    six redrawn over-confident pools (benchmarks/interval_parts.py --early, 200 runs), in the
    runs that missed the pool's own map lay outside the one-parameter region: on
    realisation 4 the default AIS at 20 labels missed in 29 of 100 runs, and the region held
    the map in 65, none of the 29. With two degrees of freedom, on the same draws (the
    region does not move the draws):

    * of the seven over-confident pools' 81 early cells measured there (ais, is and
      bernoulli at 20-150 labels; 100 runs on the reference pool), 27 were below the band
      and 4 are (realisation 4: the default AIS at 20 and 50 labels, static IS at 20,
      Bernoulli sampling at 100). On the reference pool the default AIS covers 0.98 / 0.98
      / 0.97 at 20 / 50 / 100 labels (0.89 / 0.97 / 0.90 before), static IS 1.00 at 50
      (0.64, at 1.41 times the width). In benchmarks/results/coverage.md (200 other runs)
      the block-level Bernoulli sampling covers 0.94 / 0.94 at 200 / 500 labels there
      (0.87 / 0.875), OASIS 0.98 / 0.82 / 0.935 at 500 / 1000 / 2000 (0.82 / 0.74 / 0.91);
    * it costs width at 200-2000 labels (the default AIS, 100 runs): 0-3% on abt-buy's
      calibrated column and rare_calibrated, 2-9% on tweets100k, 8-14% on abt-buy with
      expit(score) and on the over-confident pool, 29-50% on sharp_calibrated, where the
      estimate is exact to 1e-7 and the interval is the model's alone (0.076 -> 0.114 at
      2000 labels).

    The points serve every component of a vector measure (a PR curve) at once. Where a map
    leaves the measure undefined, its estimate is NaN (``model_estimate`` puts the model
    average's in its place).

    Why the term: around the Platt map's MAP alone, the model's interval was a Poisson-binomial
    spread around a point whose slope, fitted to a few dozen answers, decides how many
    positives the tail hides (over-confident pool, AIS at 200 labels, 30 runs: estimates over
    0.18-0.78 with intervals of +-0.03). On calibrated pools w is small (0.03 on abt-buy's
    column at 200 labels), so M1's spread reaches into the interval only as far as w lets
    it (``ModelSpread``)."""
    model = view.model
    boundary = model.likelihood_region(_REGION_Z, _REGION_POINTS)
    maps = np.vstack([model.coef_, model.prior_mean, boundary])  # M1's MAP, identity, region
    x = model.bin_logit_[view.grouping.group_block]
    p1 = expit(maps[:, :1] + maps[:, 1:] * x)  # (maps, G)
    risks = _model_risks(view, np.stack([1 - p1, p1], 2), measure, known_mass, n_pool)
    estimates = np.array(
        [
            measure.g(risk)
            if measure.undefined_reason(risk) is None
            else np.full(measure.m, np.nan)
            for risk in risks
        ]
    )
    at_map, identity, region = estimates[0], estimates[1], estimates[2:]
    with np.errstate(invalid="ignore"):
        below = np.nanmax(at_map - region, axis=0, initial=0.0) / _Z95
        above = np.nanmax(region - at_map, axis=0, initial=0.0) / _Z95
    return (
        model.recalibration_weight_,
        at_map,
        identity,
        np.nan_to_num(below),
        np.nan_to_num(above),
    )


def stratified_variance(sampler, view: OracleView, u: np.ndarray, items, labels) -> np.ndarray:
    """What the model adds (m,) to the Horvitz-Thompson stratified variance when each
    stratum's S_h^2 is replaced by max(S_h^2, sigma_h^2 of the model)."""
    stratum, size = sampler.stratum_, sampler.stratum_size_.astype(float)
    H = len(size)
    labelled_stratum = stratum[items]
    n_h = np.bincount(labelled_stratum, minlength=H).astype(float)
    answered = u[view.group_code[view.group_of[items]], labels]  # (n, m)
    # the model's population moments of u per stratum: unlabelled items under pi, labelled
    # ones at their answers
    per_stratum = view.grouping.overlap(stratum).T  # (H, G) items
    modelled = [view.expected(u), view.expected(u**2)]
    first, second = (per_stratum @ table for table in modelled)
    for moment, table, exact in zip(
        (first, second), modelled, (answered, answered**2), strict=True
    ):
        np.add.at(moment, labelled_stratum, exact - table[view.group_of[items]])
    model = np.maximum(second / size[:, None] - (first / size[:, None]) ** 2, 0.0)
    # the sample's S_h^2 where a stratum has two labels or more
    sums = np.zeros((H, u.shape[2]))
    np.add.at(sums, labelled_stratum, answered)
    mean = sums / np.maximum(n_h, 1)[:, None]
    scatter = np.zeros((H, u.shape[2]))
    np.add.at(scatter, labelled_stratum, (answered - mean[labelled_stratum]) ** 2)
    sample = np.where(n_h[:, None] >= 2, scatter / np.maximum(n_h - 1, 1)[:, None], 0.0)
    weight = size / size.sum()
    coefficient = np.where(n_h > 0, weight**2 * (1 - n_h / size) / np.maximum(n_h, 1), 0.0)
    return coefficient @ (np.maximum(sample, model) - sample)


def _settled_value(measure, table, known_mass, unlabelled, n_pool) -> np.ndarray | None:
    """The measure, (m,), where no unlabelled item can change it: every unlabelled item's
    code has the same loss for every class (``Measure.informative_codes``; precision once
    the predicted positives are labelled, any measure once every item is). None otherwise,
    or while the measure is undefined."""
    if np.any(unlabelled[measure.informative_codes(*known_mass.shape)]):
        return None
    mass = known_mass.astype(float).copy()
    mass[:, 0] += unlabelled
    risk = np.tensordot(mass, table, axes=([0, 1], [0, 1])) / n_pool
    return measure.g(risk) if measure.undefined_reason(risk) is None else None


def measure_bounds(
    measure: Measure, known_mass: np.ndarray, unlabelled: np.ndarray, n_pool: int
) -> tuple[np.ndarray, np.ndarray]:
    """The range of every component over all labellings of the unlabelled items, (m,) each.

    ``known_mass`` (codes, C) counts the answers by code and class, ``unlabelled`` (codes,)
    the items not yet labelled. For measures that are linear-fractional in the counts the
    extremes lie where every code's unlabelled items share one class (vertices of the
    feasible set); binary measures that are not (balanced accuracy, MCC, Fowlkes-Mallows)
    are also evaluated on a grid of positive shares per code, a close inner approximation.
    Where the vertices are too many (PR curves, many classes) the measure's natural range
    is returned, unless no unlabelled item can change the measure: then both bounds are its
    value (``_settled_value``).
    """
    low, high = (np.full(measure.m, float(v)) for v in measure.value_range)
    n_codes, C = known_mass.shape
    few_vertices = C**n_codes <= _MAX_BOUND_VERTICES
    if few_vertices or not np.any(unlabelled):
        table = measure.loss_table(n_codes, C)
        settled = _settled_value(measure, table, known_mass, unlabelled, n_pool)
        if settled is not None:
            known = np.isfinite(settled)
            return np.where(known, settled, low), np.where(known, settled, high)
    if not few_vertices:
        return low, high
    masses = []
    for assignment in itertools.product(range(C), repeat=n_codes):
        mass = known_mass.astype(float).copy()
        mass[np.arange(n_codes), assignment] += unlabelled
        masses.append(mass)
    if not measure.linear_fractional and C == 2 and n_codes == 2:
        for f0, f1 in itertools.product(np.linspace(0, 1, _GRID_STEPS), repeat=2):
            shares = np.array([[1 - f0, f0], [1 - f1, f1]])
            masses.append(known_mass + unlabelled[:, None] * shares)
    values = []
    with np.errstate(divide="ignore", invalid="ignore"):
        for mass in masses:
            risk = np.tensordot(mass, table, axes=([0, 1], [0, 1])) / n_pool
            values.append(measure.g(risk) if measure.undefined_reason(risk) is None else None)
    values = np.asarray([v for v in values if v is not None], dtype=float)
    if len(values):
        with np.errstate(invalid="ignore"):
            found_low, found_high = np.nanmin(values, axis=0), np.nanmax(values, axis=0)
        low = np.where(np.isfinite(found_low), np.maximum(low, found_low), low)
        high = np.where(np.isfinite(found_high), np.minimum(high, found_high), high)
    return low, high
