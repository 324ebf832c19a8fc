"""Would a wider model interval lift OASIS on over_confident to target, and at what cost? (F1)

The model's interval is the quantiles of the model average F = w F_1 + (1 - w) F_0 of the
recalibrated map M1 and p̂ itself, M0 (``intervals.ModelSpread``). In the runs of OASIS on
over_confident that missed at 1000 labels (benchmarks/results/oasis_tail.md), w was
0.15-0.48, and M1's interval alone would have reached the truth in most of them. Occam's
window (Madigan & Raftery 1994, JASA 89: a model stays unless its posterior odds against the
best are below 1/20) takes the hull of the kept models' intervals: where w >= 1/21 the
model's interval is widened to M1's own, where w < 1/21 it is the model average's
(``ModelSpread.window``). OASIS's intervals take it since 2026-11-30, the other designs'
do not (README, "How the intervals are built").

Each run draws once and reads both intervals from the same answers, as coverage.py does
(seed 2026, 2,000 labels, F1 at 200 / 500 / 1000 / 2000 labels, or at 20 / 50 / 100 / 150
with ``--early``; coverage.py's sampler variants, Bernoulli sampling planning 2,000 labels),
by default on the shortfall and on calibrated pools, where w stays between 0.02 and 0.2 after
the first labels (the cost). With both ``--pools`` and ``--samplers`` every pairing of them
is run; the pools may be realisations of the synthetic ones, as in ``coverage.load``
("over_confident (prob) #4"). Each configuration's rows replace its earlier ones in
benchmarks/results/occam_window.csv (``occam_window_early.csv`` with ``--early``) as it
finishes; the table is its .md. Columns named ``now`` hold the average's interval.

    python benchmarks/occam_window.py [--repeats 200] [--jobs 2] [--pools ...] [--samplers ...]
        [--early] [--resume] [--out F]
"""

from __future__ import annotations

import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

import evalcore as ec
from evalcore.intervals import OCCAM_WINDOW
from evalcore.simulate import _finished, _options, coverage_interval

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import resumable  # noqa: E402
from coverage import BUDGET, CHECKPOINTS, EARLY, VARIANTS, load  # noqa: E402

OUT = HERE / "results" / "occam_window.csv"
EARLY_OUT = HERE / "results" / "occam_window_early.csv"
CONFIGURATIONS = [
    ("over_confident (prob)", "oasis"),
    ("rare_calibrated (prob)", "ais"),
    ("rare_calibrated (prob)", "is"),
    ("abt-buy (prob)", "ais"),
]


def intervals(estimate) -> tuple[float, float, float, float, float]:
    """The interval with the model average's limits, with Occam's window's and w, for a
    scalar measure: the engine's interval with ``ModelSpread.window`` off and on, whichever
    the design takes."""
    spread = estimate.model_spread
    if spread is None:
        low, high = estimate.confidence_interval(0.95)
        return low[0], high[0], low[0], high[0], np.nan
    low, high, wide_low, wide_high = (
        limit[0]
        for window in (False, True)
        for limit in replace(
            estimate, model_spread=replace(spread, window=window)
        ).confidence_interval(0.95)
    )
    return low, high, wide_low, wide_high, float(spread.weight[0])


def one_run(pool_name: str, sampler_name: str, seed, checkpoints) -> np.ndarray:
    """(checkpoints, 6): estimate, both intervals' limits and w."""
    pool = load(pool_name)
    measure = ec.get_measure("f1")
    kind, options = VARIANTS.get(sampler_name, (sampler_name, {}))
    sampler = ec.make_sampler(kind, pool, measure, seed, **_options(kind, BUDGET, options))
    out = np.full((len(checkpoints), 6), np.nan)
    for index, checkpoint in enumerate(checkpoints):
        # as coverage.py reads simulate()'s runs: at the checkpoint, or where the run ends (a
        # Bernoulli plan's last estimate stands for its budget)
        until = np.inf if checkpoint == BUDGET else checkpoint
        while sampler.n_labels < until and not _finished(sampler, BUDGET):
            proposal = sampler.propose()
            sampler.record(pool.y_true[proposal.item])
        estimate = ec.estimate(sampler)
        out[index] = (estimate.value[0], *intervals(estimate))
    return out


def rows_for(pool_name, sampler_name, repeats, jobs, checkpoints=CHECKPOINTS) -> list[dict]:
    pool, measure = load(pool_name), ec.get_measure("f1")
    truth = float(measure.g(ec.true_risk(pool, measure))[0])
    seeds = np.random.SeedSequence(2026).spawn(repeats)  # simulate()'s runs, coverage.py's
    with ProcessPoolExecutor(jobs) as executor:
        runs = np.stack(
            list(
                executor.map(
                    one_run,
                    [pool_name] * repeats,
                    [sampler_name] * repeats,
                    seeds,
                    [checkpoints] * repeats,
                )
            )
        )
    rows = []
    for index, checkpoint in enumerate(checkpoints):
        value, low, high, wide_low, wide_high, weight = runs[:, index].T
        defined = np.isfinite(value)
        row = {"pool": pool_name, "sampler": sampler_name, "n_labels": checkpoint}
        row |= {"repeats": repeats, "mse": np.mean((value[defined] - truth) ** 2)}
        for name, (lo, hi) in {"now": (low, high), "window": (wide_low, wide_high)}.items():
            covered = (lo[defined] <= truth) & (truth <= hi[defined])
            row[f"coverage_{name}"] = covered.mean()
            row[f"coverage_{name}_ci"] = "-".join(f"{x:.3f}" for x in coverage_interval(covered))
            row[f"width_{name}"] = np.median(hi[defined] - lo[defined])
        row["median_w"] = np.nanmedian(weight)
        row["share_in_window"] = np.mean(weight >= OCCAM_WINDOW)
        rows.append(row)
    return rows


def write_markdown(table: pd.DataFrame, path: Path, early: bool = False, options: str = "") -> None:
    """The table beside ``path``; ``options`` the command's further options, as they appear
    in its first line (``resumable.command_options``)."""
    command = "python benchmarks/occam_window.py" + (" --early" if early else "") + options
    lines = [
        "# The model's interval widened to Occam's window (F1)",
        "",
        f"Made by `{command}` (the script's docstring says what the "
        "window is). The same runs read two ways: `now`, the model average's quantiles "
        "(coverage.md's construction, but for OASIS's since 2026-11-30); `window`, their "
        "hull with M1's own interval wherever w >= 1/21 (OASIS's since then). Target "
        "coverage 0.92-0.98. `w`: the median weight on M1; `in window`: the share of runs "
        "whose interval the window widens.",
        "",
        "| pool | sampler | labels | runs | MSE | coverage now | width now | "
        "coverage window | width window | w | in window |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in table.itertuples():
        lines.append(
            f"| {row.pool} | {row.sampler} | {row.n_labels} | {row.repeats} | {row.mse:.2e} | "
            f"{row.coverage_now:.3f} ({row.coverage_now_ci}) | {row.width_now:.3f} | "
            f"{row.coverage_window:.3f} ({row.coverage_window_ci}) | {row.width_window:.3f} | "
            f"{row.median_w:.2f} | {row.share_in_window:.2f} |"
        )
    path.write_text("\n".join(lines) + "\n")


def main() -> None:
    def early(parser):
        parser.add_argument("--early", action="store_true", help="read at 20-150 labels")

    args = resumable.parse(__doc__.splitlines()[0], 200, OUT, early)
    if args.early and args.out == OUT:
        args.out = EARLY_OUT
    skip = resumable.done(args)
    pools = args.pools.split(",") if args.pools else None
    samplers = args.samplers.split(",") if args.samplers else None
    configurations = CONFIGURATIONS
    if pools and samplers:
        configurations = [(pool, sampler) for pool in pools for sampler in samplers]
    options = resumable.command_options(args, EARLY_OUT if args.early else OUT)
    for pool_name, sampler_name in configurations:
        chosen = (pools is None or pool_name in pools) and (
            samplers is None or sampler_name in samplers
        )
        if not chosen or (pool_name, sampler_name) in skip:
            continue
        checkpoints = EARLY if args.early else CHECKPOINTS
        rows = pd.DataFrame(rows_for(pool_name, sampler_name, args.repeats, args.jobs, checkpoints))
        table = resumable.save(rows, args.out)
        write_markdown(table, args.out.with_suffix(".md"), args.early, options)
        print(f"{pool_name}, {sampler_name}: done", flush=True)


if __name__ == "__main__":
    main()
