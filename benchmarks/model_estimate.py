"""The oracle model's own estimate of F1 against the design's, on the same runs (issue 13).

Every estimate carries two values: the design's (``Estimate.value``, what the app shows) and
the model's (``Estimate.model_value``: the answers where items are labelled, the averaged
recalibrated probabilities' expectation for the rest, ``intervals.model_estimate``), whose
interval joins the design's in the hull. Where the classifier's probabilities lie in the
recalibration's family (p = expit(a + b logit p̂)), the model's estimate pays only for the
unlabelled items' own randomness, while a design's pays 1 / q for each find: it should be far
more precise there, and off where the family does not hold. This measures both, and two ways
of combining them, phi D + (1 - phi) M with D, M the design's and the model's estimates:

* ``precision``: phi = V_M / (V_D + V_M), V_D the design's variance (its standard error,
  ``Estimate.design_std_error``, squared), V_M the model's (the width of its 95% interval over
  2 x 1.96, squared);
* ``composite``: the same with the model's squared bias estimated as max(0, (D - M)^2 - V_D -
  V_M) added to V_M, a composite estimator with an estimated weight (Schaible 1978): it
  leans on the design once the two disagree by more than their variances allow.

Run i is ``default_sampler.py``'s run i (seed 2021), so its design estimates are that
script's. Each run's values at 200, 500, 1000 and 2000 labels are appended to
``<out>_runs.csv`` as it finishes, keyed as that script keys its runs (``code_version``: the
engine's source, the sampler's options, the pool's data), so a rerun resumes at the next run
and runs of other code are dropped, not reused; the table,
``<out>.md``, gives each MSE with a 95% bootstrap interval over the runs and the model's
MSE over the design's with the paired bootstrap's interval.

    python benchmarks/model_estimate.py [--pools P] [--samplers ais] [--repeats 40]
        [--out benchmarks/results/model_estimate.csv]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

import evalcore as ec
from evalcore.session import informative_items

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import resumable  # noqa: E402
from default_sampler import SAMPLERS, SEED, code_version, current_runs, load  # noqa: E402

OUT = HERE / "results" / "model_estimate.csv"
POOLS = ["rare_calibrated (prob)", "over_confident (prob)", "sharp_calibrated (prob)"]
POOLS += ["abt-buy (prob)", "abt-buy", "tweets100k"]
CHECKPOINTS = (200, 500, 1000, 2000)
_Z95 = 1.959963984540054
RUN_COLUMNS = ["pool", "sampler", "run", "n_labels", "truth", "design", "design_se", "model"]
RUN_COLUMNS += ["model_low", "model_high", "weight"]
ESTIMATES = ("design", "model", "precision", "composite")


def one_run(pool, pool_name: str, name: str, index: int, truth: float) -> list[list]:
    """Run ``index`` of ``name`` to the last checkpoint (or until every item that can change
    F1 is labelled), its two estimates and their spreads at each checkpoint."""
    sampler_name, options = SAMPLERS[name]
    measure = ec.get_measure("f1", pool.n_classes)
    seed = np.random.SeedSequence(SEED, spawn_key=(index,))
    sampler = ec.make_sampler(sampler_name, pool, measure, seed, **options)
    informative = informative_items(pool, measure)
    left = np.count_nonzero(informative)
    rows = []
    while sampler.n_labels < max(CHECKPOINTS) and left > 0:
        item = sampler.propose().item
        before = sampler.n_labels
        sampler.record(pool.y_true[item])
        if sampler.n_labels == before:
            continue
        left -= bool(informative[item])
        if sampler.n_labels in CHECKPOINTS:
            estimate = ec.estimate(sampler)
            spread = estimate.model_spread
            low, high = spread.limits(0.95) if spread is not None else (np.nan, np.nan)
            model = np.nan if estimate.model_value is None else estimate.model_value[0]
            weight = np.nan if spread is None else spread.weight[0]
            rows.append(
                [pool_name, name, index, sampler.n_labels, truth, estimate.value[0]]
                + [estimate.design_std_error[0], model, np.ravel(low)[0], np.ravel(high)[0]]
                + [weight]
            )
    return rows


def combined(runs: pd.DataFrame, name: str) -> np.ndarray:
    """The estimate ``name`` of ``ESTIMATES`` per run; the design's where the model has none
    or a combination's weight is not defined (no design variance yet)."""
    design, model = runs.design.to_numpy(), runs.model.to_numpy()
    if name == "design":
        return design
    if name == "model":
        return model
    design_var = runs.design_se.to_numpy() ** 2
    model_var = ((runs.model_high - runs.model_low).to_numpy() / (2 * _Z95)) ** 2
    if name == "composite":
        model_var = model_var + np.maximum(0, (design - model) ** 2 - design_var - model_var)
    phi = model_var / (design_var + model_var)
    usable = np.isfinite(phi) & np.isfinite(model)
    return np.where(usable, phi * design + (1 - phi) * model, design)


def runs_for(pool_name: str, name: str, repeats: int, path: Path) -> pd.DataFrame:
    """Runs 0 .. ``repeats`` - 1, those stored in ``path`` by the same code on the same pool
    reused, the others run and appended as each finishes."""
    pool = load(pool_name)
    code = code_version(name, pool)
    stored = current_runs(read(path), pool_name, name, code, path)
    mine = (stored.pool == pool_name) & (stored.sampler == name)
    missing = [i for i in range(repeats) if i not in set(stored.run[mine])]
    if missing:
        measure = ec.get_measure("f1", pool.n_classes)
        truth = float(measure.g(ec.true_risk(pool, measure))[0])
        for index in missing:
            rows = pd.DataFrame(one_run(pool, pool_name, name, index, truth), columns=RUN_COLUMNS)
            rows.insert(2, "code", code)
            rows.to_csv(path, mode="a", header=not path.exists(), index=False)
            print(f"# {pool_name} {name} run {index}", flush=True)
        stored = read(path)
    mine = (stored.pool == pool_name) & (stored.sampler == name) & (stored.run < repeats)
    return stored[mine].sort_values(["run", "n_labels"])


def read(path: Path) -> pd.DataFrame:
    """The stored runs, each with the ``code`` that made it."""
    if not path.exists():
        return pd.DataFrame(columns=[*RUN_COLUMNS[:2], "code", *RUN_COLUMNS[2:]])
    return pd.read_csv(path, dtype={"code": str})


def rows_for(runs: pd.DataFrame) -> list[dict]:
    """Per checkpoint: each estimate's MSE with its 95% bootstrap interval, and the model's
    MSE over the design's with the paired bootstrap's (1,000 resamples of the runs, seed 0)."""
    rows = []
    for labels, at in runs.groupby("n_labels"):
        truth = float(at.truth.iloc[0])
        errors = {name: (combined(at, name) - truth) ** 2 for name in ESTIMATES}
        resamples = np.random.default_rng(0).integers(len(at), size=(1000, len(at)))
        boot = {name: error[resamples].mean(axis=1) for name, error in errors.items()}
        row = {"pool": at.pool.iloc[0], "sampler": at.sampler.iloc[0], "n_labels": labels}
        row |= {"runs": len(at), "weight": float(at.weight.median())}
        for name in ESTIMATES:
            row[name] = errors[name].mean()
            row[f"{name}_low"], row[f"{name}_high"] = np.percentile(boot[name], [2.5, 97.5])
        ratio = boot["model"] / boot["design"]
        row["model_over_design"] = row["model"] / row["design"]
        row["ratio_low"], row["ratio_high"] = np.percentile(ratio, [2.5, 97.5])
        rows.append(row)
    return rows


def write_markdown(table: pd.DataFrame, path: Path) -> None:
    lines = [
        "# The oracle model's own estimate against the design's (F1)",
        "",
        f"Made by `python benchmarks/model_estimate.py --out {resumable.shown(path)}` (seed "
        "2021, the runs of `default_sampler.py`; the script's docstring says what each "
        "estimate is). Each cell is the MSE with its 95% bootstrap interval over the runs; "
        "`model / design` the ratio of the two MSEs with the paired bootstrap's interval; "
        "`w` the median weight on the recalibrated map.",
        "",
        "| pool | sampler | labels | runs | design | model | model / design | precision "
        "| composite | w |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in table.itertuples():
        cells = [
            f"{getattr(row, name):.2e} ({getattr(row, name + '_low'):.1e}-"
            f"{getattr(row, name + '_high'):.1e})"
            for name in ESTIMATES
        ]
        ratio = f"{row.model_over_design:.3g} ({row.ratio_low:.3g}-{row.ratio_high:.3g})"
        lines.append(
            f"| {row.pool} | {row.sampler} | {row.n_labels} | {row.runs} | {cells[0]} | "
            f"{cells[1]} | {ratio} | {cells[2]} | {cells[3]} | {row.weight:.2f} |"
        )
    path.with_suffix(".md").write_text("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pools", help="comma-separated subset of the pools")
    parser.add_argument("--samplers", help="comma-separated names of default_sampler.py")
    parser.add_argument("--repeats", type=int, default=40)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    pools = args.pools.split(",") if args.pools else POOLS
    samplers = args.samplers.split(",") if args.samplers else ["ais"]
    runs_path = args.out.with_name(args.out.stem + "_runs.csv")
    for pool_name in pools:
        for name in samplers:
            frame = pd.DataFrame(rows_for(runs_for(pool_name, name, args.repeats, runs_path)))
            table = resumable.save(frame, args.out)
            write_markdown(table, args.out)
            print(frame.to_string(index=False), flush=True)


if __name__ == "__main__":
    main()
