"""Simulation on a pool with known labels: which sampler converges fastest on it.

A sampler is run ``repeats`` times to a label budget with the pool's true labels as the
oracle. After every ``record_every``-th new label a run records the estimate, its interval
and D_KL(q* || q_t) against the asymptotically optimal proposal (designs without a proposal
record NaN). Summaries give, per number of labels, the MSE against the true value with a
bootstrap interval, the bias, the interval coverage and the mean KL: the curves of seed 003
Fig. 2-3. Seeds are spawned from one SeedSequence, so results do not depend on ``jobs`` or on
the executor.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from concurrent.futures import Executor, ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial

import numpy as np
import pandas as pd
from scipy import stats

from .bernoulli import BernoulliSampler
from .catalog import get_measure
from .diagnostics import optimal_proposal, true_risk
from .estimators import estimate
from .pool import Pool
from .regression import (
    RegressionBernoulliSampler,
    RegressionImportanceSampler,
    RegressionPool,
    get_regression_measure,
    make_regression_sampler,
)
from .regression import true_risk as regression_true_risk
from .samplers import ImportanceSampler
from .session import informative_items, make_sampler

__all__ = ["Run", "SimulationResult", "simulate", "run_once"]


@dataclass(frozen=True)
class Run:
    """One run's records, k of them: ``n_labels`` (k,), ``estimate``, ``ci_low``,
    ``ci_high`` (k, m) and ``kl`` (k,)."""

    n_labels: np.ndarray
    estimate: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    kl: np.ndarray


def run_once(
    pool: Pool | RegressionPool,
    measure_name: str,
    sampler_name: str,
    budget: int,
    seed,
    confidence_level: float = 0.95,
    record_every: int = 1,
    options: dict | None = None,
) -> Run:
    """Run one sampler to ``budget`` labels with the true labels (values) as the oracle, or
    until every item whose answer can change the measure is labelled (``informative_items``;
    the last record then holds the measure itself)."""
    if isinstance(pool, RegressionPool):
        measure = get_regression_measure(measure_name)
        sampler = make_regression_sampler(
            sampler_name, pool, measure, seed, **_options(sampler_name, budget, options)
        )
    else:
        measure = get_measure(measure_name, pool.n_classes)
        sampler = make_sampler(
            sampler_name, pool, measure, seed, **_options(sampler_name, budget, options)
        )
    proposes = isinstance(sampler, ImportanceSampler | RegressionImportanceSampler)
    q_star = optimal_proposal(pool, measure) if proposes else None
    records = ([], [], [], [], [])
    last = 0
    informative = informative_items(pool, measure)
    deterministic = (options or {}).get("deterministic", True)
    left = np.count_nonzero(informative) if deterministic else -1  # -1: never exhausted
    ended = _finished(sampler, budget)
    while not ended:
        proposal = sampler.propose()
        before = sampler.n_labels
        sampler.record(pool.y_true[proposal.item])
        n = sampler.n_labels
        if n > before and informative[proposal.item]:
            left -= 1
        ended = _finished(sampler, budget) or left == 0
        if n == last or (n % record_every and not ended):
            continue
        last = n
        est = sampler.estimate() if isinstance(pool, RegressionPool) else estimate(sampler)
        low, high = est.confidence_interval(confidence_level)
        kl = sampler.kl_from(q_star) if q_star is not None else np.nan
        for store, value in zip(records, (n, est.value, low, high, kl), strict=True):
            store.append(value)
    n_labels, values, low, high, kl = (np.asarray(r) for r in records)
    return Run(n_labels.astype(int), values, low, high, kl.astype(float))


def _options(sampler_name, budget, options):
    options = dict(options or {})
    if sampler_name == "bernoulli":
        options.setdefault("budget", budget)
    return options


def _finished(sampler, budget) -> bool:
    if isinstance(sampler, BernoulliSampler | RegressionBernoulliSampler):
        return sampler.finished
    return sampler.n_labels >= min(budget, sampler.pool.n_pool)


@dataclass(frozen=True)
class SimulationResult:
    """Runs of one sampler on one pool; ``true_value`` (m,) is the measure on the pool."""

    measure: str
    sampler: str
    budget: int
    runs: tuple[Run, ...]
    true_value: np.ndarray
    component_names: tuple[str, ...]
    confidence_level: float
    seconds: float

    @property
    def repeats(self) -> int:
        return len(self.runs)

    def squared_errors(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Per (run, label count): total squared error over the components defined in the
        estimate and the truth, coverage share, KL; NaN where the run has no record or its
        estimate is undefined. Returns (labels (L,), error (R, L), covered (R, L), kl (R, L))."""
        labels = np.unique(np.concatenate([run.n_labels for run in self.runs]))
        shape = (self.repeats, len(labels))
        error, covered, kl = np.full(shape, np.nan), np.full(shape, np.nan), np.full(shape, np.nan)
        truth = self.true_value
        known = np.isfinite(truth)
        for r, run in enumerate(self.runs):
            columns = np.searchsorted(labels, run.n_labels)
            defined = np.isfinite(run.estimate) & known
            any_defined = defined.any(axis=1)
            sq = np.where(defined, (run.estimate - truth) ** 2, 0.0).sum(axis=1)
            inside = (run.ci_low <= truth) & (truth <= run.ci_high) & defined
            share = inside.sum(axis=1) / np.maximum(defined.sum(axis=1), 1)
            error[r, columns] = np.where(any_defined, sq, np.nan)
            covered[r, columns] = np.where(any_defined, share, np.nan)
            kl[r, columns] = run.kl
        return labels, error, covered, kl

    def summary(self, n_boot: int = 1000, rng=0) -> pd.DataFrame:
        """Per label count: the runs that reached it, MSE with a bootstrap 95% interval (over
        runs), bias (scalar measures), coverage, mean KL and the share of those runs whose
        estimate is undefined."""
        labels, error, covered, kl = self.squared_errors()
        width = self._widths(labels)
        reached = np.zeros(error.shape, dtype=bool)
        for r, run in enumerate(self.runs):
            reached[r, np.searchsorted(labels, run.n_labels)] = True
        rng = np.random.default_rng(rng)
        picks = rng.integers(self.repeats, size=(n_boot, self.repeats))
        with _quiet():
            boot = np.nanmean(error[picks], axis=1)  # (n_boot, L)
            table = pd.DataFrame(
                {
                    "n_labels": labels,
                    "runs": reached.sum(axis=0),
                    "mse": np.nanmean(error, axis=0),
                    "mse_low": np.nanpercentile(boot, 2.5, axis=0),
                    "mse_high": np.nanpercentile(boot, 97.5, axis=0),
                    "coverage": np.nanmean(covered, axis=0),
                    "width": np.nanmedian(width, axis=0),
                    "kl": np.nanmean(kl, axis=0),
                    "undefined": (reached & np.isnan(error)).sum(axis=0)
                    / np.maximum(reached.sum(axis=0), 1),
                }
            )
        if len(self.true_value) == 1:
            table["bias"] = self._bias(labels)
        return table

    def _widths(self, labels):
        """Mean interval width over the defined components, per (run, label count)."""
        width = np.full((self.repeats, len(labels)), np.nan)
        for r, run in enumerate(self.runs):
            defined = np.isfinite(run.estimate)
            with _quiet():
                span = np.where(defined, run.ci_high - run.ci_low, np.nan)
                width[r, np.searchsorted(labels, run.n_labels)] = np.nanmean(span, axis=1)
        return width

    def _bias(self, labels):
        values = np.full((self.repeats, len(labels)), np.nan)
        for r, run in enumerate(self.runs):
            values[r, np.searchsorted(labels, run.n_labels)] = run.estimate[:, 0]
        with _quiet():
            return np.nanmean(values, axis=0) - self.true_value[0]

    def final(self, n_boot: int = 1000, rng=0) -> dict:
        """The JSON summary at the full budget (each run's last record)."""
        last = [run for run in self.runs if len(run.n_labels)]
        truth = self.true_value
        known = np.isfinite(truth)
        errors, covered, values, widths, undefined = [], [], [], [], 0
        for run in last:
            estimate_, low, high = run.estimate[-1], run.ci_low[-1], run.ci_high[-1]
            defined = np.isfinite(estimate_) & known
            if not defined.any():
                undefined += 1
                continue
            errors.append(np.sum((estimate_[defined] - truth[defined]) ** 2))
            covered.append(
                np.mean((low[defined] <= truth[defined]) & (truth[defined] <= high[defined]))
            )
            widths.append(np.mean(high[defined] - low[defined]))
            values.append(estimate_[0])
        undefined += self.repeats - len(last)
        errors = np.asarray(errors)
        if len(errors):
            boot = np.random.default_rng(rng).choice(errors, (n_boot, len(errors))).mean(axis=1)
            mse_ci = [float(np.percentile(boot, 2.5)), float(np.percentile(boot, 97.5))]
        else:
            mse_ci = [None, None]
        scalar = len(truth) == 1
        return {
            "measure": self.measure,
            "sampler": self.sampler,
            "budget": self.budget,
            "repeats": self.repeats,
            "true": float(truth[0]) if scalar else [_number(v) for v in truth],
            "mse": float(errors.mean()) if len(errors) else None,
            "mse_ci": mse_ci,
            "bias": float(np.mean(values) - truth[0]) if scalar and values else None,
            "coverage": float(np.mean(covered)) if covered else None,
            "coverage_ci": coverage_interval(covered),
            "width": float(np.median(widths)) if widths else None,
            "undefined": undefined / self.repeats,
            "seconds": round(self.seconds, 3),
        }

    def trace(self) -> pd.DataFrame:
        """Long table: one row per (repeat, labels used[, component]) with columns repeat,
        n_labels, [component,] estimate, ci_low, ci_high, kl, true_value."""
        frames = []
        m = len(self.true_value)
        for r, run in enumerate(self.runs):
            k = len(run.n_labels)
            frame = pd.DataFrame(
                {
                    "repeat": np.full(k * m, r),
                    "n_labels": np.repeat(run.n_labels, m),
                    "estimate": run.estimate.ravel(),
                    "ci_low": run.ci_low.ravel(),
                    "ci_high": run.ci_high.ravel(),
                    "kl": np.repeat(run.kl, m),
                    "true_value": np.tile(self.true_value, k),
                }
            )
            if m > 1:
                frame.insert(2, "component", np.tile(self.component_names, k))
            frames.append(frame)
        return pd.concat(frames, ignore_index=True)


def coverage_interval(covered, confidence_level: float = 0.95) -> list[float | None]:
    """Wilson score interval for the share of runs whose interval held (Wilson 1927); runs of
    a vector measure count with the share of their components covered."""
    if not len(covered):
        return [None, None]
    n, share = len(covered), float(np.mean(covered))
    z = stats.norm.ppf(0.5 + confidence_level / 2)
    centre = (share + z**2 / (2 * n)) / (1 + z**2 / n)
    half = z / (1 + z**2 / n) * np.sqrt(share * (1 - share) / n + z**2 / (4 * n**2))
    return [float(max(centre - half, 0.0)), float(min(centre + half, 1.0))]


def _number(value):
    return float(value) if np.isfinite(value) else None


@contextmanager
def _quiet():
    """nanmean over runs that are all undefined is NaN by design: silence its warning."""
    with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def simulate(
    pool: Pool | RegressionPool,
    measure: str,
    sampler: str,
    budget: int,
    repeats: int,
    seed: int = 0,
    jobs: int = 1,
    executor: Executor | None = None,
    confidence_level: float = 0.95,
    record_every: int = 1,
    options: dict | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> SimulationResult:
    """Run ``sampler`` ``repeats`` times to ``budget`` labels on ``pool`` (true labels needed;
    a ``RegressionPool`` takes the regression measures and samplers).

    ``jobs`` > 1 runs repeats in worker processes; ``executor`` (anything with the
    ``concurrent.futures`` interface) overrides it, e.g. a cluster executor. ``progress`` is
    called with (runs done, repeats) as runs finish.
    """
    if pool.y_true is None:
        raise ValueError("simulation needs the pool's true labels; map a label column.")
    regression = isinstance(pool, RegressionPool)
    if int(budget) != budget or budget < 1:
        raise ValueError(f"`budget` must be a positive integer, got {budget!r}.")
    if int(repeats) != repeats or repeats < 1:
        raise ValueError(f"`repeats` must be a positive integer, got {repeats!r}.")
    if regression:
        measure_obj = get_regression_measure(measure)
        truth = measure_obj.g(regression_true_risk(pool, measure_obj))
    else:
        measure_obj = get_measure(measure, pool.n_classes)
        measure_obj.check_pool(pool)
        truth = measure_obj.g(true_risk(pool, measure_obj))
    seeds = np.random.SeedSequence(seed).spawn(int(repeats))
    task = partial(
        run_once,
        pool,
        measure,
        sampler,
        int(budget),
        confidence_level=confidence_level,
        record_every=record_every,
        options=options,
    )
    start = time.perf_counter()
    runs: list[Run | None] = [None] * int(repeats)
    own_executor = executor is None and jobs > 1
    if own_executor:
        executor = ProcessPoolExecutor(max_workers=jobs)
    try:
        if executor is None:
            for index, child in enumerate(seeds):
                runs[index] = task(child)
                if progress:
                    progress(index + 1, int(repeats))
        else:
            futures = {executor.submit(task, child): index for index, child in enumerate(seeds)}
            for done, future in enumerate(as_completed(futures), start=1):
                runs[futures[future]] = future.result()
                if progress:
                    progress(done, int(repeats))
    finally:
        if own_executor:
            executor.shutdown()
    return SimulationResult(
        measure,
        sampler,
        int(budget),
        tuple(runs),
        truth,
        measure_obj.component_names,
        confidence_level,
        time.perf_counter() - start,
    )
