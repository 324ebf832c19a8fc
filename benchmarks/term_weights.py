"""How the default AIS weighs Des Raj's terms: the same draws, estimated three ways (F1).

The estimate is R = sum_s a_s rho_s z_s / sum_s a_s rho_s (``estimators.
estimate_is_rao_blackwellised``): a_s = 1 / (1 - q_s(L_s)), the number of draws the s-th new
item's segment is expected to hold, and rho_s = V_s^-gamma, V_s the term's variance as the
oracle model predicted it, gamma chosen from (1 - w) {1, 0.9, ..., 0} by the weighted mean's
own variance, w the weight on recalibrating the classifier (``estimators.stage_weights``).
The variants:

* ``a_s rho_s``: the default (these rows are default_sampler.py's ``ais`` rows);
* ``gamma = 1 - w``: the stage weights before 2026-11-27, the largest power always;
* ``a_s``: without the stage weights, rho_s = 1.

Each run draws once; the three estimates are read from the same answers at each checkpoint,
intervals included (the model's hull, ``intervals``). Seed 2021 and 100 runs per pool, as in
default_sampler.py. Each pool's rows replace its earlier ones in
benchmarks/results/term_weights.csv (or ``--out``) as it finishes; the table is beside it.

    python benchmarks/term_weights.py [--repeats 100] [--jobs 2] [--pools ...] [--out F]
        [--resume]
"""

from __future__ import annotations

import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from unittest import mock

import numpy as np
import pandas as pd

import evalcore as ec
from evalcore import estimators

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import resumable  # noqa: E402
from default_sampler import CHECKPOINTS, load  # noqa: E402

OUT = HERE / "results" / "term_weights.csv"
POOLS = ["sharp_calibrated (prob)", "abt-buy (prob)", "abt-buy", "tweets100k"]
POOLS += ["over_confident (prob)", "rare_calibrated (prob)"]
VARIANTS = ("a_s rho_s", "gamma = 1 - w", "a_s")
_stage_weights = estimators.stage_weights


def _largest_power(sampler, measure, risk):
    """rho_s = V_s^-(1 - w), scaled to a largest of 1, where the default would weigh at all:
    the default's rule with a grid of one power, the largest."""
    with mock.patch.object(estimators, "_EXPONENTS", 1):
        return _stage_weights(sampler, measure, risk)


WEIGHTS = {"a_s rho_s": _stage_weights, "gamma = 1 - w": _largest_power, "a_s": lambda *a: None}


def one_run(pool_name: str, seed) -> np.ndarray:
    """(checkpoints, variants, 3): estimate, low and high limits."""
    pool = load(pool_name)
    measure = ec.get_measure("f1")
    sampler = ec.make_sampler("ais", pool, measure, seed)
    out = np.full((len(CHECKPOINTS), len(VARIANTS), 3), np.nan)
    for index, checkpoint in enumerate(CHECKPOINTS):
        while sampler.n_labels < checkpoint:
            proposal = sampler.propose()
            sampler.record(pool.y_true[proposal.item])
        for column, variant in enumerate(VARIANTS):
            with mock.patch.object(estimators, "stage_weights", WEIGHTS[variant]):
                estimate = ec.estimate(sampler)
            low, high = estimate.confidence_interval(0.95)
            out[index, column] = estimate.value[0], low[0], high[0]
    return out


def rows_for(pool_name: str, repeats: int, jobs: int) -> list[dict]:
    pool, measure = load(pool_name), ec.get_measure("f1")
    truth = float(measure.g(ec.true_risk(pool, measure))[0])
    seeds = np.random.SeedSequence(2021).spawn(repeats)  # simulate()'s runs, default_sampler's
    with ProcessPoolExecutor(jobs) as executor:
        runs = np.stack(list(executor.map(one_run, [pool_name] * repeats, seeds)))
    return [
        resumable.checkpoint_row(pool_name, variant, checkpoint, runs[:, index, column], truth)
        for index, checkpoint in enumerate(CHECKPOINTS)
        for column, variant in enumerate(VARIANTS)
    ]


def write_markdown(table: pd.DataFrame, path: Path, options: str = "") -> None:
    lines = [
        "# Weighing Des Raj's terms in the default AIS (F1)",
        "",
        f"Made by `python benchmarks/term_weights.py{options}` (the script's docstring says "
        "what each weighting is). The same draws read three ways: `ratio` is the variant's "
        "MSE over the default's (`a_s rho_s`) at the same pool and budget; the 95% bootstrap "
        "intervals resample the same runs for every variant.",
    ]
    for pool_name, rows in table.groupby("pool", sort=False):
        lines += ["", f"## {pool_name}", ""]
        lines += resumable.mse_table(rows, "weights", VARIANTS[0])
    path.write_text("\n".join(lines) + "\n")


def main() -> None:
    args = resumable.parse(__doc__.splitlines()[0], 100, OUT)
    pools = args.pools.split(",") if args.pools else POOLS
    skip = {pool for pool, _ in resumable.done(args)}
    options = f" --repeats {args.repeats}" if args.repeats != 100 else ""
    if args.pools:
        options += f' --pools "{args.pools}"'
    if args.out != OUT:
        options += f" --out {resumable.shown(args.out)}"
    for pool_name in pools:
        if pool_name in skip:
            continue
        rows = pd.DataFrame(rows_for(pool_name, args.repeats, args.jobs))
        write_markdown(resumable.save(rows, args.out), args.out.with_suffix(".md"), options)
        print(f"{pool_name}: done", flush=True)


if __name__ == "__main__":
    main()
