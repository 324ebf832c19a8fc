"""What each part of the interval contributes (F1, issue 9): the design's interval alone, the
oracle model's alone, and their hull (the interval the app shows), and what the answers can
say against the model's hidden positives.

``evalcore.Estimate.confidence_interval`` is the hull of the design's interval (on the logit
scale; for importance sampling and Bernoulli designs their variance plus the model's remainder
variance, for stratified designs the model's stratum variances where they are larger than the
sample's, so there the model is in the design's interval too) and the model average's
quantiles (``intervals.ModelSpread``). Per pool of ``coverage.py`` (and ``sharp_calibrated``),
``--repeats`` runs of a sampler (the default AIS unless ``--samplers``), read at 20 to 2,000
labels: the coverage and median width of each of the three, where F1 has an interval.
Bernoulli sampling plans its rounds for 2,000 labels, as in ``coverage.py``; its row at 2,000
labels reads each run where its rounds end.

The false-negative check: the hull reaches beyond the design's interval where the model
expects false negatives that the design has not met. Per run, with the recalibrated map (its
MAP, ``RecalibratedProbabilities``): the false negatives it expects among the unlabelled
predicted negatives, against the truth; and whether the answers could have told. Take the
predicted negatives at or below the logit p̂ under which the map puts half of its hidden
false negatives (where the rest of them lie is where the answers are, so the map fits there by
construction): how many of them are labelled, how many positives the map expects among those
and how many they hold, and the Poisson chance of finding no more if the map were right.
Where that chance is not small, the answers cannot rule the map's hidden false negatives out,
and an interval that leaves them out holds on this pool only because the pool hides fewer.

Each (pool, sampler) is written to ``benchmarks/results/interval_parts.csv`` as it finishes
(``--resume`` skips those there); ``interval_parts.md`` is rewritten each time. Each row
records the level of the recalibration's region it was measured with (``region_level``,
``coverage.region_level()``); the table notes the sections measured before it changed. ``--early``
reads at 20, 50, 100 and 150 labels instead, ``coverage_early.md``'s label counts, into
``interval_parts_early.csv``; its pools may be realisations of the synthetic ones, as in
``coverage.load`` ("over_confident (prob) #4").

    python benchmarks/interval_parts.py [--repeats 100] [--jobs 2] [--pools a,b]
        [--samplers ais] [--early] [--out F] [--resume]
"""

from __future__ import annotations

import dataclasses
import functools
import sys
import time
from multiprocessing import Pool as Processes
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats
from scipy.special import expit

import evalcore as ec
from evalcore.intervals import oracle_view
from evalcore.oracle import classifier_logit

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import resumable  # noqa: E402
from coverage import (  # noqa: E402
    BUDGET,
    EARLY,
    EARLY_POOLS,
    VARIANTS,
    early_option,
    load,
    region_level,
)

OUT = HERE / "results" / "interval_parts.csv"
EARLY_OUT = HERE / "results" / "interval_parts_early.csv"
CHECKPOINTS = (20, 50, 100, 200, 500, 1000, 2000)
PARTS = ("design", "model", "hull")
FIRST_SEED = 7000
pool_named = functools.cache(load)  # once per process, not once per run


def one_run(task) -> list[dict]:
    """One run's rows, a row per checkpoint (``task``: pool name, sampler name, seed,
    checkpoints)."""
    pool_name, name, seed, checkpoints = task
    pool, measure = pool_named(pool_name), ec.get_measure("f1")
    sampler_name, options = VARIANTS.get(name, (name, {}))
    if sampler_name == "bernoulli":
        options = {**options, "budget": BUDGET}
    sampler = ec.make_sampler(sampler_name, pool, measure, seed, **options)
    logit_p = classifier_logit(pool.prob[:, 1])
    order = np.argsort(logit_p)
    negative = pool.y_pred == 0
    rows = []
    for labels in checkpoints:
        # Bernoulli sampling's rounds may end a few labels short of the budget
        while sampler.n_labels < labels and not getattr(sampler, "finished", False):
            sampler.record(pool.y_true[sampler.propose().item])
        estimate = ec.estimate(sampler)
        row = {"n_labels": labels, "value": float(estimate.value[0])}
        row["hull"] = [float(v[0]) for v in estimate.confidence_interval()]
        design = dataclasses.replace(estimate, model_spread=None).confidence_interval()
        row["design"] = [float(v[0]) for v in design]
        spread = estimate.model_spread
        has_model = spread is not None and estimate.caveat is None
        model = spread.limits() if has_model else (np.full(1, np.nan),) * 2
        row["model"] = [float(v[0]) for v in model]
        row["interval"] = estimate.defined and estimate.caveat is None
        calibration = oracle_view(sampler, sampler.codes_, measure.n_codes(pool)).model
        labelled = sampler.labels_ >= 0
        mapped = expit(calibration.coef_[0] + calibration.coef_[1] * logit_p)
        hidden_by_map = np.where(~labelled & negative, mapped, 0.0)
        mass = np.cumsum(hidden_by_map[order])
        cut = logit_p[order][np.searchsorted(mass, mass[-1] / 2)]
        checked = labelled & negative & (logit_p <= cut)
        expected = float(mapped[checked].sum())
        found = int(pool.y_true[checked].sum())
        row |= {
            "checked": int(checked.sum()),
            "fn_expected": expected,
            "fn_found": found,
            "fn_chance": float(stats.poisson.cdf(found, expected)),
            "hidden_by_map": float(hidden_by_map.sum()),
            "hidden": int(pool.y_true[~labelled & negative].sum()),
            "w": float(calibration.recalibration_weight_),
        }
        rows.append(row)
    return rows


def rows_for(pool_name: str, name: str, repeats: int, jobs: int, checkpoints) -> list[dict]:
    pool, measure = pool_named(pool_name), ec.get_measure("f1")
    truth = float(measure.g(ec.diagnostics.true_risk(pool, measure))[0])
    tasks = [(pool_name, name, FIRST_SEED + r, checkpoints) for r in range(repeats)]
    start = time.perf_counter()
    with Processes(jobs) as processes:
        runs = processes.map(one_run, tasks)
    seconds = time.perf_counter() - start
    rows = []
    for index, labels in enumerate(checkpoints):
        at = [run[index] for run in runs]
        shown = [row for row in at if row["interval"]]
        row = {"pool": pool_name, "sampler": name, "n_labels": labels, "runs": len(at)}
        row["with_interval"] = len(shown)
        defined = [r["value"] for r in at if np.isfinite(r["value"])]
        row["mse"] = float(np.mean((np.array(defined) - truth) ** 2)) if defined else np.nan
        for part in PARTS:
            limits = np.array([r[part] for r in shown]).reshape(-1, 2)
            covered = (limits[:, 0] <= truth) & (truth <= limits[:, 1])
            row[f"{part}_coverage"] = float(covered.mean()) if len(limits) else np.nan
            row[f"{part}_width"] = (
                float(np.median(np.diff(limits, axis=1))) if len(limits) else np.nan
            )
        for key in ("checked", "fn_expected", "fn_found", "fn_chance"):
            row[key] = float(np.median([r[key] for r in at]))
        row["fn_chance_below_5pct"] = float(np.mean([r["fn_chance"] < 0.05 for r in at]))
        for key in ("hidden_by_map", "hidden", "w"):
            row[key] = float(np.median([r[key] for r in at]))
        row["seconds"] = round(seconds, 1)
        row["region_level"] = region_level()
        rows.append(row)
    return rows


def write_markdown(table: pd.DataFrame, path: Path, early: bool = False) -> None:
    default = EARLY_OUT if early else OUT
    options = " --early" if early else ""
    if path.resolve() != default:
        options += f" --out {resumable.shown(path)}"
    lines = [
        "# The interval's parts (F1)" + (", early in a session" if early else ""),
        "",
        f"Each section made by the command under its title (runs seeded {FIRST_SEED}, "
        f"{FIRST_SEED} + 1, ...; the script's docstring says what each column is). Coverage "
        "and median width are over the runs where F1 has an interval (`with interval`), "
        "the MSE over those where it is defined. `checked`: the labelled predicted "
        "negatives at or below the logit p̂ under which the recalibrated map puts half of "
        "its hidden false negatives; `expected / found`: the map's expected positives among "
        "them, and how many they hold; `chance`: the Poisson chance of finding no more if "
        "the map were right (medians over the runs; `< 5%`: the share of runs where it is "
        "below 5%); `hidden`: the false negatives left among the unlabelled predicted "
        "negatives by the map and in truth (medians); `w`: the weight on the recalibrated "
        "map (median).",
    ]
    for (pool, sampler), rows in table.groupby(["pool", "sampler"], sort=False):
        lines += [
            "",
            f"## {pool}: `{sampler}`",
            "",
            f"`python benchmarks/interval_parts.py --repeats {rows.runs.iloc[0]} --pools "
            f'"{pool}" --samplers {sampler}{options}`',
            "",
        ]
        if rows.region_level.iloc[0] != region_level():
            lines += [
                f"Measured with the recalibration's region at c = {rows.region_level.iloc[0]}"
                " (one degree of freedom), before 2026-11-27.",
                "",
            ]
        lines += [
            "| labels | with interval | MSE | design: coverage, width | model: coverage, width "
            "| hull: coverage, width | checked | expected / found | chance (< 5%) "
            "| hidden: map / truth | w |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for row in rows.itertuples():
            parts = " | ".join(
                f"{getattr(row, f'{p}_coverage'):.2f}, {getattr(row, f'{p}_width'):.3f}"
                for p in PARTS
            )
            lines.append(
                f"| {row.n_labels} | {row.with_interval}/{row.runs} | {row.mse:.1e} | {parts} "
                f"| {row.checked:.0f} | {row.fn_expected:.2f} / {row.fn_found:.0f} "
                f"| {row.fn_chance:.2f} ({row.fn_chance_below_5pct:.2f}) "
                f"| {row.hidden_by_map:.1f} / {row.hidden:.0f} | {row.w:.2f} |"
            )
    path.with_suffix(".md").write_text("\n".join(lines) + "\n")


def main() -> None:
    args = resumable.parse(__doc__.splitlines()[0], 100, OUT, early_option)
    if args.early and args.out == OUT:
        args.out = EARLY_OUT
    checkpoints = EARLY if args.early else CHECKPOINTS
    pools = args.pools.split(",") if args.pools else list(EARLY_POOLS)
    samplers = args.samplers.split(",") if args.samplers else ["ais"]
    skip = resumable.done(args)
    for pool_name in pools:
        for name in samplers:
            if (pool_name, name) in skip:
                continue
            table = resumable.save(
                pd.DataFrame(rows_for(pool_name, name, args.repeats, args.jobs, checkpoints)),
                args.out,
            )
            write_markdown(table, args.out, args.early)
            print(f"# {pool_name} {name} done", flush=True)


if __name__ == "__main__":
    main()
