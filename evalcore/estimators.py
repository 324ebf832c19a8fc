"""Estimators of R and G = g(R) with their uncertainty, for every design.

* importance sampling (passive, IS, AIS, OASIS): R = (1/n) sum w l (seed 003 eq. 1); by
  default the covariance of R is the sample covariance of the terms w l (the martingale
  variance, see ``estimate_is``), seed 003 Sec. 3.3.2's plug-in on request; the delta method
  (Theorem 2) carries it to G. With a deterministic oracle, passive, IS and AIS replace the
  repeated draws of labelled items by their expectation (``estimate_is_rao_blackwellised``);
  the plug-in variance keeps eq. 1;
* stratified: Horvitz-Thompson and the difference (model-assisted) estimator (seed 002);
* Bernoulli: Horvitz-Thompson per round, combined over rounds (seed 004 App. E), with the
  unbiased Poisson-design variance; logit-scale limits like the other designs (seed 004 fits
  a Beta, still available as ``method="beta"``; see ``estimate_bernoulli``).

``estimate`` adds what the oracle model knows about the unlabelled items (``intervals``): the
variance they can still add, the range the measure can still take, and, while the answers
carry too little evidence for an interval, a caveat in words. Any
design's answers can be re-estimated for another measure (sample reuse, Sec. 3.3.1).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from scipy import sparse, stats
from scipy.special import expit

from . import intervals
from .bernoulli import BernoulliSampler
from .measures import Measure
from .samplers import ImportanceSampler
from .stratified import StratifiedSampler

__all__ = [
    "Estimate",
    "estimate",
    "estimate_is",
    "estimate_is_rao_blackwellised",
    "estimate_stratified",
    "estimate_bernoulli",
]

_EXPONENTS = 11  # the grid of gamma in ``stage_weights``: steps of a tenth of 1 - w


@dataclass(frozen=True)
class Estimate:
    """An estimate of a measure with m components.

    ``value`` (m,); ``risk`` (d,) the estimate of R. The design's covariance is kept as a
    square-root factor, ``covariance = factor' factor - outer(downdate, downdate)`` with
    ``factor`` (k, m) and ``downdate`` (m,) or None, so that standard errors of long vector
    measures (a PR curve) cost O(k m); ``factor`` is None when the design variance is not
    estimable. ``model_variance`` (m,) is what the oracle model adds for the items the design
    has not seen (``intervals``). ``model_value`` (m,) is the model's own estimate and
    ``model_spread`` its distribution (``intervals.model_estimate``); the interval is the
    hull of the design's and the model's. ``bounds`` = (low, high), each (m,), is the range
    the measure can still take whatever the unlabelled items are. When the measure is not yet
    defined, ``value`` is NaN and ``reason`` says why; ``caveat`` says why there is no
    interval yet (the reason, or e.g. "no positive found yet"), and the interval is then the
    bounds.
    """

    value: np.ndarray
    factor: np.ndarray | None
    risk: np.ndarray
    n_labels: int
    n_draws: int
    component_names: tuple[str, ...]
    reason: str | None = None
    bounded: bool = True
    interval_method: str = "logit"
    log_scale: tuple[float, float] | None = None
    downdate: np.ndarray | None = None
    model_variance: np.ndarray | None = None
    model_value: np.ndarray | None = None
    model_spread: intervals.ModelSpread | None = None
    bounds: tuple[np.ndarray, np.ndarray] | None = None
    caveat: str | None = None

    @property
    def defined(self) -> bool:
        return self.reason is None

    @property
    def covariance(self) -> np.ndarray:
        """The (m, m) covariance matrix of ``value``: the design's (formed on demand) plus the
        oracle model's variance on the diagonal."""
        m = len(self.value)
        if self.factor is None:
            cov = np.full((m, m), np.nan)
        else:
            cov = self.factor.T @ self.factor
            if self.downdate is not None:
                cov -= np.outer(self.downdate, self.downdate)
        if self.model_variance is not None:
            if self.factor is None:
                cov = np.diag(self.model_variance)
            else:
                cov[np.diag_indices(m)] += self.model_variance
        return cov

    @property
    def design_std_error(self) -> np.ndarray:
        """The design's own standard error (NaN where it is not estimable)."""
        if self.factor is None:
            return np.full(len(self.value), np.nan)
        variance = np.einsum("km,km->m", self.factor, self.factor)
        if self.downdate is not None:
            variance = variance - self.downdate**2
        return np.sqrt(np.maximum(variance, 0.0))

    @property
    def std_error(self) -> np.ndarray:
        """sqrt(design variance + model variance) per component; the model's alone where the
        design has none yet; NaN where neither exists."""
        design = self.design_std_error**2
        if self.model_variance is None:
            return np.sqrt(design)
        return np.sqrt(np.where(np.isnan(design), 0.0, design) + self.model_variance)

    def confidence_interval(
        self, confidence_level: float = 0.95, method: str | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Pointwise two-sided interval per component: (low, high), each shape ``(m,)``.

        ``method``: ``"normal"`` (delta method), ``"logit"`` (the delta method on the logit
        scale, mapped back: asymmetric, the default for measures in [0, 1]; on abt-buy it
        raised static IS's F1 coverage at 200 labels from 0.60 to 1.00 and at 500 from 0.90
        to 0.975 in a 40-run pilot, at the same width) or ``"beta"`` (seed 004: a Beta
        distribution with the estimate's mean and variance); default ``interval_method``.
        Measures outside [0, 1] (MCC, Brier) use ``"normal"``, except those with a
        ``log_scale`` (a, b): their ``"logit"`` limits are the delta method's on the scale of
        log(a + b G), mapped back (regression errors, b = 1, and 1 - R^2, a = 1, b = -1: they
        are positive and right-skewed). With a ``model_spread`` the interval is the hull of
        the design's, by ``method``, and the model's, the quantiles of its distribution
        (``intervals``: the two err on opposite sides). It is clipped to ``bounds`` and holds
        the estimate; while there is a ``caveat`` (or the estimate is undefined) it is the
        bounds themselves.
        """
        if not 0 < confidence_level < 1:
            raise ValueError("`confidence_level` must lie strictly between 0 and 1.")
        method = method or self.interval_method
        if method not in ("normal", "logit", "beta"):
            raise ValueError(f"`method` must be 'normal', 'logit' or 'beta', got {method!r}.")
        if self.caveat is not None and self.bounds is not None:
            return self.bounds[0].copy(), self.bounds[1].copy()
        se = self.std_error
        low, high = self._limits(self.value, se, confidence_level, method)
        if self.model_spread is not None:
            model_low, model_high = self.model_spread.limits(confidence_level)
            low, high = np.fmin(low, model_low), np.fmax(high, model_high)  # NaN: the other
        if self.bounds is not None:
            low = np.where(np.isnan(se), self.bounds[0], np.maximum(low, self.bounds[0]))
            high = np.where(np.isnan(se), self.bounds[1], np.minimum(high, self.bounds[1]))
        elif self.bounded:
            low, high = np.clip(low, 0, 1), np.clip(high, 0, 1)
        # a settled measure's limits can round an ulp past its estimate (NaN: the limits)
        return np.fmin(low, self.value), np.fmax(high, self.value)

    def limits_from_model(self, confidence_level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
        """Which limits of ``confidence_interval`` the model's interval set (it reaches beyond
        the design's), (low, high) boolean arrays of shape ``(m,)``: where the sample may not
        yet have met the items that the model expects to move the measure."""
        low, high = self.confidence_interval(confidence_level)
        design_low, design_high = replace(self, model_spread=None).confidence_interval(
            confidence_level
        )
        return low < design_low, high > design_high

    def _limits(self, value, se, confidence_level, method):
        tail = (1 - confidence_level) / 2
        z = stats.norm.ppf(1 - tail)
        low, high = value - z * se, value + z * se
        if method == "logit" and self.bounded:
            low, high = _logit_limits(value, se, z, low, high)
        if method == "logit" and self.log_scale is not None:
            low, high = _log_limits(value, se, z, low, high, *self.log_scale)
        if method == "beta" and self.bounded:
            low, high = _beta_limits(value, se**2, tail, low, high)
        return low, high

    def interval_note(self, name: str | None = None, digits: int = 3) -> str | None:
        """Plain words for a caveat: e.g. "No positive found yet; with this pool the F1 score
        may lie anywhere in [0.000, 0.981]." (``name`` "F1 score"; without it, "the measure",
        for a row that names the measure beside the note). None when an interval applies."""
        if self.caveat is None:
            return None
        text = self.caveat[0].upper() + self.caveat[1:]
        if self.bounds is None or len(self.value) != 1:
            return text + "."
        name = name or "measure"
        low, high = float(self.bounds[0][0]), float(self.bounds[1][0])
        span = f"[{low:.{digits}f}, {high:.{digits}f}]"
        return f"{text}; with this pool the {name} may lie anywhere in {span}."

    def region_contains(self, point: np.ndarray, confidence_level: float = 0.95) -> bool:
        """Whether ``point`` (m,) lies in the confidence ellipsoid of seed 003 Sec. 3.3.2:
        (G - G_hat)' Cov^-1 (G - G_hat) <= k (n - 1) / (n - k) F_{k, n-k}."""
        diff = np.asarray(point, dtype=float) - self.value
        k, n = len(diff), self.n_draws
        statistic = diff @ np.linalg.pinv(self.covariance) @ diff
        if n > k:
            critical = k * (n - 1) / (n - k) * stats.f.ppf(confidence_level, k, n - k)
        else:
            critical = stats.chi2.ppf(confidence_level, k)
        return bool(statistic <= critical)


def _logit_limits(value, se, z, low, high):
    """The delta method on the logit scale, mapped back: asymmetric, inside (0, 1)."""
    low, high = low.copy(), high.copy()
    inside = (value > 0) & (value < 1) & np.isfinite(se)
    v = value[inside]
    centre, half = np.log(v / (1 - v)), z * se[inside] / (v * (1 - v))
    low[inside], high[inside] = expit(centre - half), expit(centre + half)
    return low, high


def _log_limits(value, se, z, low, high, a, b):
    """The delta method on the scale of log(a + b value), mapped back."""
    low, high = low.copy(), high.copy()
    u = a + b * value
    inside = (u > 0) & np.isfinite(se)
    spread = np.exp(z * se[inside] * abs(b) / u[inside])
    ends = np.sort(np.stack([(u[inside] / spread - a) / b, (u[inside] * spread - a) / b]), axis=0)
    low[inside], high[inside] = ends
    return low, high


def _beta_limits(mean, var, tail, low, high):
    low, high = low.copy(), high.copy()
    ok = (mean > 0) & (mean < 1) & (var > 0) & (var < mean * (1 - mean))
    if ok.any():
        m, v = mean[ok], var[ok]
        common = m * (1 - m) / v - 1
        a, b = m * common, (1 - m) * common
        low[ok], high[ok] = stats.beta.ppf(tail, a, b), stats.beta.ppf(1 - tail, a, b)
    return low, high


def _project(J, rows: np.ndarray) -> np.ndarray:
    """``rows @ J.T`` for a dense or sparse Jacobian J (m, d); rows (k, d) -> (k, m)."""
    return np.asarray((J @ rows.T).T)


def _from_risk(
    risk,
    measure,
    n_labels,
    n_draws,
    factor=None,
    downdate=None,
    variance_reason="",
    undefined="",
    **kwargs,
) -> Estimate:
    """Delta method (seed 003 Theorem 2): G = g(R); a factor F of Cov(R) maps to F Dg'.

    ``undefined`` forces an undefined estimate with that reason (e.g. nothing labelled)."""
    m = measure.m
    reason = undefined or measure.undefined_reason(risk)
    if reason is None and factor is None:
        kwargs["caveat"] = variance_reason or "the variance is not yet estimable"
    if reason is not None:
        kwargs["caveat"] = reason
        # vector measures: components may be defined individually (e.g. a PR curve's tail)
        value = measure.g(risk) if m > 1 and not undefined else np.full(m, np.nan)
        return Estimate(
            value,
            None,
            risk,
            n_labels,
            n_draws,
            measure.component_names,
            reason,
            measure.bounded,
            log_scale=measure.log_scale,
            **kwargs,
        )
    J = measure.jacobian(risk)
    if sparse.issparse(J):
        J = J.tocsr(copy=True)
        J.data = np.nan_to_num(J.data, nan=0.0, posinf=0.0, neginf=0.0)
    else:
        J = np.nan_to_num(J, nan=0.0, posinf=0.0, neginf=0.0)
    return Estimate(
        measure.g(risk),
        None if factor is None else _project(J, factor),
        risk,
        n_labels,
        n_draws,
        measure.component_names,
        None,
        measure.bounded,
        downdate=None if downdate is None else J @ downdate,
        log_scale=measure.log_scale,
        **kwargs,
    )


def estimate_is(
    losses: np.ndarray,
    weight: np.ndarray,
    q_now: np.ndarray,
    n_pool: int,
    measure: Measure,
    n_labels: int,
    variance: str = "martingale",
    count: np.ndarray | None = None,
) -> Estimate:
    """Importance-sampling estimate from ``n`` draws: R = (1/n) sum_j w_j l_j (seed 003 eq. 1).

    ``losses`` (k, d) at the drawn items and answers; ``weight`` (k,) = p(x_j)/q_{j-1}(x_j);
    ``q_now`` (k,) the latest proposal q_N(x_j); ``count`` (k,) how many identical draws each
    row stands for (default one each; n = count.sum()). ``variance`` selects the covariance:

    * ``"plugin"``: seed 003 Sec. 3.3.2, the asymptotic covariance under the latest proposal,
      [(1/n) sum_j p(x_j)^2 l_j l_j' / (q_N(x_j) q_{j-1}(x_j)) - R R'] / n;
    * ``"martingale"`` (default): the sample covariance of the terms w_j l_j, divided by n.
      The terms are martingale differences around R, so this estimates (1/n) sum_j V_j of
      Theorem 2 before the limit: the variance the draws actually had, including the early
      ones made under poorer proposals, which the plug-in misses at small n.
    """
    if variance not in ("martingale", "plugin"):
        raise ValueError(f"`variance` must be 'martingale' or 'plugin', got {variance!r}.")
    count = np.ones(len(weight)) if count is None else np.asarray(count, dtype=float)
    n = int(count.sum())
    if n == 0:
        return _from_risk(np.zeros(measure.d), measure, 0, 0, undefined="nothing labelled yet")
    risk = (count * weight) @ losses / n
    root = np.sqrt(count)
    factor = downdate = None
    reason = "one draw is not enough for a variance"
    matters = np.any(losses != 0, axis=1)
    if n < 2:
        pass
    elif variance == "martingale":
        factor = (losses * weight[:, None] - risk) * (root / np.sqrt(float(n) * (n - 1)))[:, None]
    elif np.any(matters & (q_now <= 0)):
        reason = (
            "the current proposal gives zero probability to a labelled item this "
            "measure needs, so the plug-in variance cannot be estimated"
        )
    else:
        weight_now = np.zeros(len(weight))
        weight_now[matters] = 1.0 / (n_pool * q_now[matters])
        factor = losses * (root * np.sqrt(weight * weight_now) / n)[:, None]
        downdate = risk / np.sqrt(n)
    return _from_risk(risk, measure, n_labels, n, factor, downdate, reason)


def estimate_is_rao_blackwellised(
    losses: np.ndarray,
    weight: np.ndarray,
    labelled_share: np.ndarray,
    n_pool: int,
    measure: Measure,
    n_draws: int,
    stage_weight: np.ndarray | None = None,
    control: tuple[np.ndarray, np.ndarray] | None = None,
) -> Estimate:
    """Importance sampling with a deterministic oracle, its repeated draws of labelled items
    replaced by their expectation. Over the n labelled items in the order labelled,

        R = sum_s a_s rho_s z_s / sum_s a_s rho_s,   z_s = K_s + (1 - q_s(L_s)) w_s l_s,
        K_s = (1/N) sum_{r < s} l_r,     a_s = 1 / (1 - q_s(L_s)),

    ``losses`` (n, d) l_s at each item and its answer; ``weight`` (n,) w_s = p(x_s)/q_s(x_s)
    at the draw that found it; ``labelled_share`` (n,) q_s(L_s), the proposal's mass then on
    the items labelled before it (``ImportanceSampler.first_draws``); ``n_draws`` all draws.

    Why: eq. 1 of seed 003 averages every draw, and with a deterministic oracle most draws
    late in a session repeat labelled items whose answers are known. Between the (s-1)-th and
    the s-th new label the proposal q_s is fixed (not so for OASIS), so the G_s repeats are
    geometric, E[G_s] = q_s(L_s) / (1 - q_s(L_s)), each with conditional mean K_s / q_s(L_s),
    and the new item is drawn from q_s restricted to the unlabelled items. Replacing eq. 1's
    numerator and denominator by their conditional expectations given the new draws (Rao-
    Blackwell) gives R above: how many repeats there were and which items they hit only
    added noise. z_s is Des Raj's term for sampling without replacement (Des Raj 1956, JASA
    51, "Some estimators in sampling with varying probabilities without replacement"): the
    known part plus the unlabelled part by importance sampling, with E[z_s | past] = R
    exactly; a_s, the segment's expected length, is fixed before the s-th draw. So the z_s - R
    are martingale differences with predictable weights, as eq. 1's terms are, and Theorems
    1 and 2 (consistency, the normal limit) carry over. The covariance is the weighted
    sample covariance of the z_s, n/(n-1) sum_s a_s^2 (z_s - R)(z_s - R)' / (sum_s a_s)^2.
    The plain mean of the z_s (Des Raj's estimator) is exactly unbiased but weighs the first
    terms, made under the poorest proposals, as much as the last: 4e-5 against eq. 1's 6e-7
    (F1 MSE, AIS at 500 labels on sharp_calibrated, 5 runs). ``stage_weight`` rho_s (n,),
    1 when None, weighs the terms further (``stage_weights``); the covariance then has
    a_s rho_s in place of a_s. ``control`` (``model_control``), where given, adds the oracle
    model's predictions as control variates to the terms (``controlled_terms``); the
    covariance's n - 1 is then n - 1 - k for the k coefficients fitted. Where the controlled
    terms put the measure outside its range or leave it undefined (``_within_range``), the
    terms are kept without them.
    """
    n = len(weight)
    if n == 0:
        return _from_risk(np.zeros(measure.d), measure, 0, 0, undefined="nothing labelled yet")
    terms, a = rao_blackwell_terms(losses, weight, labelled_share, n_pool)
    if stage_weight is not None:
        a = a * stage_weight
    risk = a @ terms / a.sum()
    fitted = 0
    if control is not None and n >= 2 and measure.undefined_reason(risk) is None:
        controlled, k = controlled_terms(
            terms, a, control, weight, labelled_share, n_pool, risk, measure
        )
        controlled_risk = a @ controlled / a.sum()
        if _within_range(controlled_risk, measure):
            terms, fitted, risk = controlled, k, controlled_risk
    factor = None
    if n >= 2 + fitted:
        factor = (terms - risk) * (a * np.sqrt(n / (n - 1.0 - fitted)) / a.sum())[:, None]
    reason = "one label is not enough for a variance"
    return _from_risk(risk, measure, n, n_draws, factor, variance_reason=reason)


def _within_range(risk: np.ndarray, measure: Measure) -> bool:
    """Whether the measure is defined at ``risk`` and inside its ``value_range`` (AIS's and
    Bernoulli sampling's control variates). The control coefficients are fitted on the
    terms themselves, and from the first few terms they can be
    far off: on the products demo, 9 of 40 default AIS sessions had, after 4-5 answers with
    a positive among them, a controlled R with a negative component, so F1 read as undefined
    ("no positive ... labelled yet"). ``estimate_is_rao_blackwellised`` then keeps the terms
    without control variates."""
    if measure.undefined_reason(risk) is not None:
        return False
    value = measure.g(risk)
    low, high = measure.value_range
    return bool(np.all(np.isfinite(value)) and np.all((low <= value) & (value <= high)))


def stage_weights(sampler, measure: Measure, risk: np.ndarray) -> np.ndarray | None:
    """rho_s of ``estimate_is_rao_blackwellised``: each Des Raj term weighed by a power of the
    inverse of its variance as the oracle model predicted it before the term's draw, the
    power chosen by the terms themselves,

        rho_s(gamma) = V_s^-gamma (scaled to a largest of 1),   V_s = sum_{c,y} M_s[c, y] S[c, y],
        gamma* = argmin over gamma in (1 - w) {1, 0.9, ..., 0} of
                 sum_s (a_s rho_s)^2 ||Dg(R) (z_s - R_gamma)||^2 / (sum_s a_s rho_s)^2,

    M_s the model's prediction of the s-th term's second moment per code and class
    (``ImportanceSampler.stage_moments``), S = ||Dg(R) l(c, y)||^2 at the estimate R (the
    linearisation whose variance the estimate's error is made of), w the item-level model's
    posterior probability that the classifier's probabilities need recalibrating
    (``oracle.ItemLevelModel``) at the latest draw, z_s Des Raj's terms
    (``rao_blackwell_terms``, without control variates) and R_gamma their mean under the
    weights a_s rho_s(gamma): gamma* gives the weighted mean whose own variance estimate
    (the covariance of ``estimate_is_rao_blackwellised``) is least. None (rho_s = 1) for
    designs that record no prediction and for measures other than the design's own.

    Why the inverse variances: the terms of the first draws, made while the proposal still
    spread its mass over items that cannot move the measure, carry most of the estimate's
    error where few items matter, and the plain weights a_s keep them for the whole session
    (F1 MSE on the synthetic sharp_calibrated pool at 500 / 1000 / 2000 labels, 100 runs:
    8.9e-12 / 3.9e-12 / 1.5e-12 with a_s alone, 3.6e-14 / 2.1e-14 / 8.1e-15 with gamma =
    1 - w). Inverse-variance weights are the weighted AIS of Delyon & Portier (2018,
    "Asymptotic optimality of adaptive importance sampling", NeurIPS), which forgets the poor
    early stages. With the model's V_s they are only as good as the model. The exponent 1 - w
    is the posterior probability that the probabilities the V_s rest on are right. Where they
    are right but the real labels hold what they under-predict, V_s falls over a session
    while the terms' spread does not (``benchmarks/stage_variance.py``: the realised squared
    terms over V_s grow x17 on abt-buy's calibrated column and x43 on rare_calibrated from
    the first 50 stages to the last 1000), and the weights then spend the late terms' luck:
    with gamma = 1 - w the MSE was x1.17 / 1.05 / 0.99 of a_s's on abt-buy (prob) and x0.99 /
    1.01 / 1.07 on rare_calibrated (500 runs), against x0.004-0.006 on sharp_calibrated. The
    terms show which case holds, so gamma is chosen by the estimate's own variance over a
    grid from 1 - w to 0 (ties keep the larger), a choice among eleven estimators each
    consistent for the same R (their weights are fixed functions of the predicted
    variances, asymptotically, as the stage weights always were), so the chosen one is
    consistent too. Measured on the same draws (benchmarks/
    term_weights.py, F1 MSE over gamma = 1 - w's at 500 / 1000 / 2000 labels): x0.83 / 0.86
    / 0.84 on abt-buy (prob) and x1.03 / 0.99 / 0.92 on rare_calibrated over 500 runs, the
    same on sharp_calibrated over 100 (gamma* = 1 - w), coverage 1.00 and median widths
    unchanged.

    With ``hindsight_weights`` (AIS's default since 2026-11-29) each V_s is the larger of
    that prediction and the same term's second moment read with the item-level model behind
    the latest draw, V'_s = sum_c H_s[c] sum_y pi(y | c) S[code of c, y] (H_s the stage's
    proposal per cell, ``ImportanceSampler.stage_inverse_masses``), and gamma ranges over
    the whole grid {1, 0.9, ..., 0}. Why: the model of stage s knew only the answers before
    it. Where the classifier's probabilities are falsely sure, the first stages' models
    trusted them and predicted small variances exactly where the proposal gave the tail
    almost nothing, so their V_s said nothing and gamma was held at 0 (w = 1): on the
    over-confident synthetic pool one find drawn at N q' = 0.008 after 194 answers kept F1 at
    0.06 (truth 0.555) to the end of a 2,000-label session. The model of now sees that tail,
    and the larger of the two keeps each stage's own prediction where it was the more
    doubtful (on sharp_calibrated, where the first stages' models knew the moderate items
    were unlabelled). Measured on the same draws (100 runs, seed 2021; README, issue 13),
    F1 MSE at 500 / 1000 / 2000 labels over the weights of each stage's own model: x0.98 /
    0.93 / 0.88 on over_confident, x0.96 / 0.89 / 0.72 on abt-buy (expit), x0.25 / 0.28 /
    0.31 on sharp_calibrated, 0.97-1.02 on the other three pools; coverage and
    median widths as before. The weights now depend on every answer, the term's own
    among them (a find raises the model of now where it was drawn, and so lowers its own
    stage's weight): on over_confident F1's bias grows from +0.019 to +0.024 at 2000 labels.
    As answers accrue the model of now settles, so the weights settle to fixed functions of
    the stages' proposals, and the estimate stays consistent as above.
    """
    recorded = sampler.stage_moments() if measure is sampler.measure else None
    if recorded is None:
        return None
    moments, recalibration = recorded
    sq_norm = measure.sq_norm_dg_loss(risk, sampler.n_codes_, sampler.pool.n_classes)
    variance = np.einsum("scy,cy->s", moments, sq_norm)
    if not np.all(variance > 0) or not np.all(np.isfinite(variance)):
        return None
    exponents = np.linspace(1, 0, _EXPONENTS)
    hindsight = sampler.stage_inverse_masses()  # None without ``hindsight_weights``
    if hindsight is None:
        exponents = exponents * (1 - recalibration)
    else:
        inverse_mass, response = hindsight
        cell_moment = np.sum(response * sq_norm[sampler.cell_code_], axis=1)
        variance = np.maximum(variance, inverse_mass @ cell_moment)
    items, weight, share = sampler.first_draws()
    losses = measure.loss(sampler.codes_[items], sampler.labels_[items])
    terms, a = rao_blackwell_terms(losses, weight, share, sampler.pool.n_pool)
    projected = np.asarray(measure.jacobian(risk) @ terms.T).T  # (n, m): Dg(R) z_s
    log_variance = np.log(variance)
    best, least = None, np.inf
    for gamma in exponents:
        log_precision = -gamma * log_variance
        rho = np.exp(log_precision - log_precision.max())
        spread = _weighted_spread(projected, a * rho)
        if best is None or spread < least:
            best, least = rho, spread
    return best


def _weighted_spread(values: np.ndarray, weights: np.ndarray) -> float:
    """sum_s weights_s^2 ||values_s - mean||^2 / (sum_s weights_s)^2, the mean weighted too:
    the variance estimate of the weighted mean of the rows of ``values``, up to the factor
    n / (n - 1)."""
    total = weights.sum()
    mean = weights @ values / total
    return float(weights**2 @ np.sum((values - mean) ** 2, axis=1) / total**2)


def rao_blackwell_terms(losses, weight, labelled_share, n_pool) -> tuple[np.ndarray, np.ndarray]:
    """Des Raj's terms z_s (n, d) and their weights a_s (n,) of
    ``estimate_is_rao_blackwellised``."""
    known = np.cumsum(losses, axis=0) - losses  # the answers before each item
    terms = known / n_pool + ((1 - labelled_share) * weight)[:, None] * losses
    return terms, 1.0 / (1 - labelled_share)


def controlled_terms(terms, a, control, weight, labelled_share, n_pool, risk, measure):
    """Des Raj's terms with the oracle model's predictions as control variates, and how
    many coefficients were fitted (``estimate_is_rao_blackwellised``).

    The control of code k at the s-th term is
        c_sk = (1/N) sum_{x in U_s, code k} m_s(x) - (1 - q_s(L_s)) w_s m_s(x_s) 1[x_s has code k],
    m_s(x) = sum_y pi_s(y|x) l(x, y) the model's expected loss before the draw. x_s ~ q'_s
    on U_s and (1 - q_s(L_s)) w_s = 1 / (N q'_s(x_s)), so E[c_sk | past] = 0 exactly and
    z_s + sum_k beta_k c_sk is again a term with mean R: the answers enter as their residuals
    from the model's prediction, and the model carries the items not yet drawn (the
    difference estimator, Saerndal, Swensson & Wretman 1992, Sec. 6.3, in Des Raj's terms).
    With beta = 1 on a code whose every answer has a loss (F1: the predicted positives, a
    true and a false positive) the term's variance falls from E[u^2] to Var[u] per item,
    u = Dg(R) l; on a code where most answers have none (the predicted negatives of a rare
    class: exact zeros, unless the model's expected hidden positives are added back) it can
    rise. So beta is fitted: by least squares of the projected terms Dg(R) z_s on the
    projected controls with the weights a_s^2 of the estimate's variance, the regression
    estimator of control variates in importance sampling (Owen & Zhou 2000, "Safe and
    effective importance sampling", JASA 95, Sec. 3), whose bias is O(1/n). beta settles as
    the model's predictions do, so asymptotically the terms are controlled with fixed
    coefficients and Theorems 1 and 2 carry over as for ``stage_weights``. Measured (F1,
    default AIS, 100 runs, the same draws without and with; benchmarks/default_sampler.py):
    MSE x0.78-0.84 on tweets100k and x0.80-0.81 on sharp_calibrated at 500-2000 labels,
    within 3% on abt-buy and over_confident (README, issue 13).
    """
    predicted, unlabelled = control
    scale = (1 - labelled_share) * weight
    controls = unlabelled / n_pool - scale[:, None, None] * predicted  # (n, codes, d)
    centred_terms = terms - a @ terms / a.sum()
    centred_controls = controls - np.einsum("s,skd->kd", a, controls) / a.sum()
    # the weighted spread of z_s + sum_k beta_k c_sk is least; a residual variance is left
    # to estimate with two terms more than coefficients
    beta, fitted = _control_coefficients(
        -centred_terms, centred_controls, measure.dense_jacobian(risk), len(terms) - 1, a
    )
    return terms + np.einsum("k,skd->sd", beta, controls), fitted


def model_control(sampler, measure: Measure, codes: np.ndarray, items: np.ndarray):
    """The oracle model's predictions behind ``estimate_is_rao_blackwellised``'s control
    variates, per labelled item and code k: the expected loss at the item if it has code k,
    m_s(x_s) (n, codes, d), and over the items of code k unlabelled before its draw,
    sum_{x in U_s, code k} m_s(x) (n, codes, d); None where the design records no
    prediction (``ImportanceSampler.stage_predictions``) or for another measure."""
    recorded = sampler.stage_predictions() if measure is sampler.measure else None
    if recorded is None:
        return None
    response, unlabelled = recorded
    table = measure.loss_table(sampler.n_codes_, sampler.pool.n_classes)  # (codes, C, d)
    predicted = _expected_loss_by_code(response, codes[items], table)
    return predicted, np.einsum("scy,cyd->scd", unlabelled, table)


def _expected_loss_by_code(response, item_codes, table) -> np.ndarray:
    """m(x) = sum_y pi(y|x) l(x, y) at each item, in its own code's slot and 0 in the
    others, shape (n, codes, d); ``response`` (n, C), ``table`` the loss table (codes, C, d)."""
    n = len(item_codes)
    predicted = np.zeros((n, table.shape[0], table.shape[2]))
    predicted[np.arange(n), item_codes] = np.einsum("ny,nyd->nd", response, table[item_codes])
    return predicted


def _control_coefficients(target, controls, J, spare_rows, weight=None):
    """beta (k,) minimizing sum_s weight_s^2 ||J (target_s - sum_k beta_k controls_sk)||^2,
    ``target`` (n, d), ``controls`` (n, k, d), ``J`` = Dg(R) (m, d), ``weight`` (n,) (default
    1), and how many were fitted: least squares through the origin on the controls that
    are not all 0 after projection, the others at 0, and all while ``spare_rows`` is not more
    than the number to fit (the control variates of ``controlled_terms`` and
    ``estimate_bernoulli``)."""
    m = J.shape[0]
    y = (target @ J.T).ravel()  # (n m,)
    x = np.moveaxis(controls @ J.T, 1, 2).reshape(len(target) * m, -1)  # (n m, k)
    if weight is not None:
        w = np.repeat(weight, m)
        y, x = w * y, w[:, None] * x
    used = np.any(x != 0, axis=0)
    beta = np.zeros(x.shape[1])
    if not used.any() or spare_rows <= used.sum():
        return beta, 0
    beta[used] = np.linalg.lstsq(x[:, used], y, rcond=None)[0]
    return beta, int(used.sum())


def estimate_stratified(
    losses: np.ndarray,
    stratum: np.ndarray,
    stratum_size: np.ndarray,
    measure: Measure,
    predicted_losses: np.ndarray | None = None,
    pool_predicted_risk: np.ndarray | None = None,
) -> Estimate:
    """Stratified estimate of R (seed 002): Horvitz-Thompson, or with ``predicted_losses``
    (n, d) of the labelled items and ``pool_predicted_risk`` (d,) the difference estimator
    R = mean_pool(m) + sum_h W_h mean_h(l - m).

    Variance: sum_h W_h^2 (1 - n_h / N_h) S_h^2 / n_h over the strata with two labels or
    more. A stratum with a single label has no S_h^2 of its own; borrowing a pooled one
    measured badly (on abt-buy it is dominated by the top stratum, and the interval becomes
    [0, 1]), so ``estimate`` gives such strata the oracle model's variance instead
    (``intervals.stratified_variance``).
    """
    H, d = len(stratum_size), measure.d
    n_h = np.bincount(stratum, minlength=H)
    n = len(stratum)
    if n == 0 or np.any(n_h == 0):
        empty = int(np.argmax(n_h == 0)) if n else 0
        return _from_risk(np.zeros(d), measure, n, n, undefined=f"stratum {empty} has no label yet")
    residual = losses if predicted_losses is None else losses - predicted_losses
    W = stratum_size / stratum_size.sum()
    means = np.zeros((H, d))
    np.add.at(means, stratum, residual)
    means /= n_h[:, None]
    risk = W @ means
    if predicted_losses is not None:
        risk = risk + pool_predicted_risk
    centred = residual - means[stratum]
    coefficient = W**2 * (1 - n_h / stratum_size) / n_h  # times S_h^2
    several = n_h >= 2
    factor = None
    if several.any():
        scale = np.sqrt(np.where(several, coefficient / np.maximum(n_h - 1, 1), 0.0))
        factor = centred * scale[stratum][:, None]
    return _from_risk(
        risk, measure, n, n, factor, variance_reason="fewer than two labels in every stratum"
    )


def estimate_bernoulli(
    sampler: BernoulliSampler, measure: Measure, codes: np.ndarray | None = None
) -> Estimate:
    """Horvitz-Thompson estimate combined over rounds (seed 004 App. E, eq. 122).

    Round t, with inclusion probabilities b for the items not sampled before it, gives
    R_t = (1/N) [sum_{sampled before} l + sum_{round t} l / b], conditionally unbiased; the
    rounds are averaged with weights proportional to their planned sizes, which the sampler
    fixes before the first answer when it has a budget (then the average is exactly unbiased;
    without one, the number of rounds is wherever the caller stopped). Variance: the rounds
    are martingale differences, so Var = sum_t lambda_t^2 V_t with the unbiased Poisson
    estimate V_t = (1/N^2) sum_{round t} (1 - b) / b^2 l l'. A round in progress counts with
    b scaled by the share of its items answered (they come in random order).

    Limits: logit-scale, not seed 004's Beta fitted to the estimate's mean and variance. On
    three pools (F1, 80 runs each, a 1000-label plan, the hull with the model's interval) the
    logit limits covered at least as often, at a median width 2-5% smaller, except where
    coverage rose most: rare positives with calibrated probabilities at 200 labels, 0.44 ->
    0.73 (width 0.45 -> 0.59); 0.85 -> 0.87 there at 1000; abt-buy (prob) 0.81 -> 0.83 and
    0.83 -> 0.85 at 200 and 500; badly over-confident probabilities 0.775 -> 0.79 at 200,
    equal after.

    Control variates (rounds that recorded the item-level model's predictions at their
    start, ``Round.response``; the sampler's own measure): per code k, the control
    C_tk = (1/N) [sum_{x unsampled before t, code k} m_t(x) - sum_{round t, code k} m_t(x) / b]
    has mean 0 given the past (Horvitz-Thompson), m_t(x) = sum_y pi_t(y|x) l(x, y), so
    R_t + sum_k beta_k C_tk is the difference estimator of the round (Saerndal, Swensson &
    Wretman 1992), the answers entering as residuals l - beta m. beta is fitted, as for AIS
    (``controlled_terms``), to make the estimated variance least: the Poisson variance
    rows (1 - b) / b^2 (l - beta m)^2, by least squares through the origin. Measured (F1,
    200 runs with a 2,000-label plan, the same draws without and with, at 200-2000 labels;
    benchmarks/results/coverage.md): MSE x0.68-0.88 on tweets100k, x0.78-0.88 on abt-buy
    (prob), within 3% on abt-buy (expit), rare_calibrated and over_confident. Where the
    controlled estimate leaves the measure undefined or outside its range (``_within_range``;
    on the products demo, 111 of 1,735 estimates in the first 60 answers of 30 sessions), the
    round estimates are kept without the controls.
    """
    N = sampler.pool.n_pool
    codes = measure.codes(sampler.pool) if codes is None else codes
    order = np.asarray(sampler._order, dtype=np.int64)
    d = measure.d
    labels = sampler.labels_
    controlled = measure is sampler.measure and all(r.response is not None for r in sampler.rounds_)
    table = measure.loss_table(sampler.n_codes_, sampler.pool.n_classes) if controlled else None
    estimates, rows, weights, planned = [], [], [], []
    controls, predicted_rows = [], []
    known = np.zeros(d)
    for round_ in sampler.rounds_:
        answered = min(len(round_.items), len(order) - round_.n_before)
        if len(round_.items) > 0 and answered == 0:
            continue
        items = round_.items[:answered]
        share = answered / len(round_.items) if len(round_.items) else 1.0
        pi = round_.pi[:answered] * share
        losses = measure.loss(codes[items], labels[items]) if answered else np.zeros((0, d))
        estimates.append((known + (losses / pi[:, None]).sum(axis=0)) / N)
        scale = np.sqrt(1 - pi) / pi / N
        rows.append(losses * scale[:, None])
        planned.append(round_.planned_size)
        weights.append(np.full(answered, round_.planned_size))
        known = known + losses.sum(axis=0)
        if controlled:
            # per code k: m(x) 1[code k] at the round's items, and its control
            # (1/N) [sum_{unsampled, code k} m - sum_{round, code k} m / pi], mean 0
            per_code = _expected_loss_by_code(round_.response[:answered], codes[items], table)
            total = np.einsum("cy,cyd->cd", round_.unsampled, table)
            controls.append((total - (per_code / pi[:, None, None]).sum(axis=0)) / N)
            predicted_rows.append(per_code * scale[:, None, None])
    if not estimates:
        return _from_risk(
            np.zeros(d),
            measure,
            0,
            0,
            undefined="nothing labelled yet",
        )
    total = np.sum(planned)
    risk = np.asarray(planned) @ np.asarray(estimates) / total
    factor = np.concatenate(rows) * (np.concatenate(weights) / total)[:, None]
    if controlled and measure.undefined_reason(risk) is None:
        predicted = (
            np.concatenate(predicted_rows) * (np.concatenate(weights) / total)[:, None, None]
        )
        # the Poisson variance rows (1 - b) / b^2 (l - beta m)^2, least in sum
        J = measure.dense_jacobian(risk)
        beta, _ = _control_coefficients(factor, predicted, J, len(factor))
        control = np.einsum("t,tkd->kd", np.asarray(planned), np.asarray(controls)) / total
        if _within_range(risk + beta @ control, measure):
            risk = risk + beta @ control
            factor = factor - np.einsum("k,nkd->nd", beta, predicted)
    return _from_risk(risk, measure, len(order), len(order), factor)


def estimate(
    sampler,
    measure: Measure | None = None,
    difference: bool = False,
    variance: str = "martingale",
    model_variance: bool = True,
) -> Estimate:
    """Estimate ``measure`` (default: the sampler's own) from the sampler's answers.

    ``difference`` selects the difference estimator for stratified designs (seed 002);
    ``variance`` the covariance of importance-sampling designs (see ``estimate_is``; with a
    deterministic oracle the default "martingale" is ``estimate_is_rao_blackwellised``'s,
    except for OASIS, whose proposal a repeated draw moves).
    The result carries the bounds and caveat of ``intervals`` and, with ``model_variance``,
    what the oracle model adds for the items the design has not seen (not for the
    difference estimator, whose residual variance the model does not describe).
    """
    if measure is None or _same_measure(measure, sampler.measure):
        # the design's own measure, however it was looked up: its stage weights and control
        # variates are kept for it alone (``stage_weights``, ``model_control``)
        measure, codes = sampler.measure, sampler.codes_
    else:
        measure.check_pool(sampler.pool)
        codes = measure.codes(sampler.pool)
    if isinstance(sampler, BernoulliSampler):
        design = estimate_bernoulli(sampler, measure, codes)
    elif isinstance(sampler, StratifiedSampler):
        items, labels = sampler.labelled()
        losses = measure.loss(codes[items], labels)
        predicted = pool_risk = None
        if difference:
            predicted, pool_risk = _model_predictions(sampler.pool, measure, codes, items)
        design = estimate_stratified(
            losses, sampler.stratum_[items], sampler.stratum_size_, measure, predicted, pool_risk
        )
    elif (
        isinstance(sampler, ImportanceSampler)
        and sampler.repeats_by_expectation
        and variance == "martingale"
    ):
        items, weight, share = sampler.first_draws()
        losses = measure.loss(codes[items], sampler.labels_[items])
        control = model_control(sampler, measure, codes, items)
        design = estimate_is_rao_blackwellised(
            losses, weight, share, sampler.pool.n_pool, measure, sampler.n_draws, None, control
        )
        stage_weight = stage_weights(sampler, measure, design.risk) if design.defined else None
        if stage_weight is not None:
            design = estimate_is_rao_blackwellised(
                losses,
                weight,
                share,
                sampler.pool.n_pool,
                measure,
                sampler.n_draws,
                stage_weight,
                control,
            )
    elif isinstance(sampler, ImportanceSampler):
        draws = sampler.draws()
        losses = measure.loss(codes[draws.items], draws.labels)
        q_now = sampler.pmf_of(draws.items)
        design = estimate_is(
            losses,
            draws.weight,
            q_now,
            sampler.pool.n_pool,
            measure,
            sampler.n_labels,
            variance,
            draws.count,
        )
    else:
        raise TypeError(f"cannot estimate from a {type(sampler).__name__}.")
    return _with_model(design, sampler, measure, codes, model_variance and not difference)


def _same_measure(measure: Measure, own: Measure) -> bool:
    """Whether ``measure`` is the design's own: the same kind and name (a name carries a
    measure's parameters, "fbeta:2", "pr_curve:50"; the classes are the pool's)."""
    return measure is own or (type(measure) is type(own) and measure.name == own.name)


def _with_model(design: Estimate, sampler, measure, codes, add_model: bool) -> Estimate:
    """Add the bounds, the caveat and (with ``add_model``) the model variance to ``design``:
    for importance sampling and Bernoulli designs the variance of the unlabelled remainder,
    for stratified designs the model's stratum variances where they exceed the sample's.

    The value is clipped to the bounds. The measure lies in them whatever the unlabelled
    items are, so the nearest bound is never further from it than a value outside them (a
    projection onto an interval that holds the truth never adds error), and the estimate
    stays inside its interval, which is clipped to them too. Once every item that can change
    the measure is labelled the bounds meet and the value is the measure itself; before,
    precision by AIS, with every predicted positive labelled, read 0.788 for 0.789 (OASIS
    0.802) inside a zero-width interval at 0.789. Early in a session an estimate of F1 or
    recall above the largest value the pool allows was reported beside an interval below
    it. Measured on the runs of ``benchmarks/coverage.py --early`` (F1, 200 runs, six
    pools): the same coverage and widths, MSE x0.81-1.00 for the default AIS and x0.30-1.00
    for static IS."""
    pool = sampler.pool
    n_codes, C = measure.n_codes(pool), pool.n_classes
    view = intervals.oracle_view(sampler, codes, n_codes)
    known = np.zeros((n_codes, C))
    np.add.at(known, (codes[view.labelled], view.labels), 1.0)
    unlabelled = view.grouping.code_count - known.sum(axis=1)
    bounds = intervals.measure_bounds(measure, known, unlabelled, pool.n_pool)
    model_variance = model = None
    if add_model and design.defined:
        u = intervals.projected_losses(measure, measure.jacobian(design.risk), n_codes, C)
        if isinstance(sampler, StratifiedSampler):
            items, labels = sampler.labelled()
            model_variance = intervals.stratified_variance(sampler, view, u, items, labels)
        else:
            model_variance = intervals.remainder_variance(view, u, pool.n_pool)
        final = not isinstance(sampler, ImportanceSampler) or sampler.deterministic
        if final:  # a stochastic oracle's answers are draws, not the items' labels
            window = isinstance(sampler, ImportanceSampler) and sampler.occam_window
            model = intervals.model_estimate(view, measure, known, pool.n_pool, window)
    if not design.defined:
        caveat = design.caveat
    else:
        caveat = measure.evidence_reason(_answered(sampler, view, known, codes, n_codes, C))
        modelled = model_variance is not None and np.all(np.isfinite(model_variance))
        if caveat is None and design.factor is None and not modelled:
            caveat = design.caveat  # neither the design nor the model gives a variance yet
    value = np.clip(design.value, *bounds) if design.defined else design.value
    return replace(
        design,
        value=value,
        model_variance=model_variance,
        model_value=None if model is None else model[0],
        model_spread=None if model is None else model[1],
        bounds=bounds,
        caveat=caveat,
    )


def _answered(sampler, view, known, codes, n_codes, C) -> np.ndarray:
    """The answers by code and class (codes, C): the final ones, or with a stochastic oracle
    every draw's."""
    if not isinstance(sampler, ImportanceSampler) or sampler.deterministic:
        return known
    draws = sampler.draws()
    answered = np.zeros((n_codes, C))
    np.add.at(answered, (codes[draws.items], draws.labels), draws.count)
    return answered


def _model_predictions(pool, measure, codes, items):
    """The classifier's expected loss m(x) = sum_y p(y|x) l(x, y) at ``items`` (n, d) and its
    pool mean (d,), the ingredients of the difference estimator."""
    n_codes, C = measure.n_codes(pool), pool.n_classes
    per_class = np.stack(
        [measure.loss(codes[items], np.full(len(items), y)) for y in range(C)], axis=1
    )
    predicted = np.einsum("ny,nyd->nd", pool.prob[items], per_class)
    mass = np.zeros((n_codes, C))
    for y in range(C):
        mass[:, y] = np.bincount(codes, weights=pool.prob[:, y], minlength=n_codes)
    return predicted, measure.expected_risk(mass) / pool.n_pool
