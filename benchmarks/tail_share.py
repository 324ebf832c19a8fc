"""Does it pay to sample the far tail at these budgets? Static IS with less proposal there (F1).

Static IS (seed 003 Prop. 4 on the classifier's probabilities) with its proposal on the
predicted negatives whose p̂ is below 1e-4 multiplied by ``scale`` (``is x1`` is static IS,
``is x0.1`` and ``is x0.01`` put a tenth and a hundredth of that mass there; the estimator is
unchanged, so the estimate stays unbiased and consistent). A find in a region of N_r items
that holds a share s of n labels counts for about N_r / (n s) false negatives: on abt-buy's
37,687 items below 1e-4, about 170 at the 226 labels static IS puts there by 1,000 labels,
while one false negative moves its F1 of 0.595 by 0.008. That is far outside the range where
the variance Prop. 4 minimises describes F1's error. This script measures whether the error
falls when the tail gets less, on

* pools with one set of labels, 100 runs each: abt-buy (``prob``), abt-buy (expit),
  ``rare_calibrated`` and ``sharp_calibrated``;
* the calibrated abt-buy family (``realisations.py``: abt-buy's ``prob`` column with labels
  drawn from it) at realisations 1-30, 25 runs each; the family's rows are averaged over the
  realisations in the table, with a bootstrap over realisations for the ratio to ``is x1``.

Seed 2021 for every configuration (the runs of ``default_sampler.py``), checkpoints 500,
1000 and 2000 labels. Each (pool, sampler) is written to benchmarks/results/tail_share.csv
as it finishes; the table is tail_share.md.

    python benchmarks/tail_share.py [--repeats 100] [--jobs 2] [--pools ...] [--resume]
"""

from __future__ import annotations

import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

import evalcore as ec
from evalcore.frozen import frozen

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import realisations  # noqa: E402
import resumable  # noqa: E402
from default_sampler import CHECKPOINTS, load  # noqa: E402

OUT = HERE / "results" / "tail_share.csv"
FAMILY = "abt-buy (prob) relabelled"
FAMILY_RUNS = 25
POOLS = ["abt-buy (prob)", "abt-buy", "rare_calibrated (prob)", "sharp_calibrated (prob)"]
POOLS += [f"{FAMILY} {r}" for r in range(1, 31)]
SCALES = (1.0, 0.1, 0.01)
TAIL = 1e-4


def pool_named(name: str) -> ec.Pool:
    if name.startswith(FAMILY):
        return realisations.make_pool(FAMILY, int(name.rsplit(" ", 1)[1]))
    return load(name)


def one_run(pool_name: str, scale: float, seed) -> np.ndarray:
    """(checkpoints, 3): estimate, low and high limits of one run."""
    pool, measure = pool_named(pool_name), ec.get_measure("f1")
    sampler = ec.make_sampler("is", pool, measure, seed)
    # a probe: the fixed proposal's values rescaled in place and its cells rebuilt, as
    # StaticISSampler.__init__ builds them
    tail = (pool.y_pred == 0) & (pool.prob[:, 1] < TAIL)
    values = np.array(sampler._values, dtype=float)
    values[tail] *= scale
    sampler._values = frozen(values)
    sampler._build_cells(np.arange(pool.n_pool), one_item_each=True)
    out = np.full((len(CHECKPOINTS), 3), np.nan)
    for index, checkpoint in enumerate(CHECKPOINTS):
        while sampler.n_labels < checkpoint:
            sampler.record(pool.y_true[sampler.propose().item])
        estimate = ec.estimate(sampler)
        low, high = estimate.confidence_interval(0.95)
        out[index] = estimate.value[0], low[0], high[0]
    return out


def rows_for(pool_name: str, scale: float, repeats: int, jobs: int) -> list[dict]:
    pool, measure = pool_named(pool_name), ec.get_measure("f1")
    truth = float(measure.g(ec.true_risk(pool, measure))[0])
    seeds = np.random.SeedSequence(2021).spawn(repeats)
    with ProcessPoolExecutor(jobs) as executor:
        runs = executor.map(one_run, [pool_name] * repeats, [scale] * repeats, seeds)
        runs = np.stack(list(runs))
    return [
        resumable.checkpoint_row(pool_name, f"is x{scale:g}", checkpoint, runs[:, index], truth)
        for index, checkpoint in enumerate(CHECKPOINTS)
    ]


def family_rows(table: pd.DataFrame) -> pd.DataFrame:
    """The family's rows averaged over its realisations, with a bootstrap over realisations
    (2,000 resamples) of each sampler's mean MSE over ``is x1``'s."""
    family = table[table.pool.str.startswith(FAMILY)]
    rows = []
    rng = np.random.default_rng(0)
    for checkpoint, at in family.groupby("n_labels"):
        mse = at.pivot_table(index="pool", columns="sampler", values="mse").dropna()
        if mse.empty:
            continue
        resamples = rng.integers(len(mse), size=(2000, len(mse)))
        base = mse["is x1"].to_numpy()[resamples].mean(axis=1)
        for sampler in mse.columns:
            boot = mse[sampler].to_numpy()[resamples].mean(axis=1)
            mine = at[at.sampler == sampler]
            rows.append(
                {
                    "sampler": sampler,
                    "n_labels": checkpoint,
                    "realisations": len(mse),
                    "mse": mse[sampler].mean(),
                    "ratio": mse[sampler].mean() / mse["is x1"].mean(),
                    "ratio_low": np.quantile(boot / base, 0.025),
                    "ratio_high": np.quantile(boot / base, 0.975),
                    "coverage": mine.coverage.mean(),
                    "width": mine.width.mean(),
                }
            )
    return pd.DataFrame(rows)


def write_markdown(table: pd.DataFrame, path: Path) -> None:
    lines = [
        "# Less proposal on the far tail: static IS (F1)",
        "",
        "Made by `python benchmarks/tail_share.py` (the script's docstring says what each row "
        f"is). `is xS` is static IS with its proposal on the predicted negatives below p̂ = "
        f"{TAIL:g} multiplied by S; `ratio` is the MSE over `is x1`'s at the same budget.",
    ]
    for pool_name, rows in table[~table.pool.str.startswith(FAMILY)].groupby("pool", sort=False):
        lines += ["", f"## {pool_name}", ""]
        lines += resumable.mse_table(rows, "sampler", "is x1")
    family = family_rows(table)
    if not family.empty:
        lines += ["", f"## {FAMILY}, {FAMILY_RUNS} runs per realisation", ""]
        lines += [
            "Mean over the realisations of each one's MSE, coverage and median width; the "
            "ratio's 95% interval resamples realisations."
        ]
        lines += ["", "| sampler | labels | realisations | mean MSE | ratio | 95% CI | "]
        lines[-1] += "coverage | median width |"
        lines += ["|---|---|---|---|---|---|---|---|"]
        family = family.sort_values(["n_labels", "sampler"], ascending=[True, False])
        for row in family.itertuples():
            lines.append(
                f"| {row.sampler} | {row.n_labels} | {row.realisations} | {row.mse:.2e} | "
                f"{row.ratio:.2f} | {row.ratio_low:.2f}-{row.ratio_high:.2f} | "
                f"{row.coverage:.2f} | {row.width:.3f} |"
            )
    path.write_text("\n".join(lines) + "\n")


def main() -> None:
    args = resumable.parse(__doc__.splitlines()[0], 100, OUT)
    pools = args.pools.split(",") if args.pools else POOLS
    skip = resumable.done(args)
    for pool_name in pools:
        repeats = FAMILY_RUNS if pool_name.startswith(FAMILY) else args.repeats
        for scale in SCALES:
            if (pool_name, f"is x{scale:g}") in skip:
                continue
            rows = pd.DataFrame(rows_for(pool_name, scale, repeats, args.jobs))
            table = resumable.save(rows, args.out)
            write_markdown(table, args.out.with_suffix(".md"))
            print(f"{pool_name} x{scale:g}: " + " ".join(f"{m:.2e}" for m in rows.mse), flush=True)


if __name__ == "__main__":
    main()
