"""Does the next new item cost more as the repeated draws of labelled items pile up? (issue 13)

With a deterministic oracle, once the confident items are labelled a proposal puts most of its
mass on them, and every new item comes after 1 / (1 - q(L)) draws of known ones on average.
The repeats are drawn in one step; the new item is drawn from the proposal restricted to the
unlabelled items, with the labelled items kept out of their cells (``separate_labelled``) or,
as before, by rejection. For static IS and passive sampling, both ways side by side on the
synthetic pools where the repeats pile up (benchmarks/synthetic.py), F1, one seeded run of
1,000 labels each: the time of ``propose`` per new item (median over all, mean over the last
100) and the draws made. Prints a table and writes benchmarks/results/repeats_cost.{csv,md}.

    python benchmarks/repeats_cost.py [--labels 1000]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

import evalcore as ec

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import synthetic  # noqa: E402

OUT = HERE / "results" / "repeats_cost.csv"
POOLS = ("over_confident", "sharp_calibrated")
SAMPLERS = ("is", "passive")


def timed_run(pool: ec.Pool, sampler_name: str, separate: bool, labels: int) -> dict:
    measure = ec.get_measure("f1")
    sampler = ec.make_sampler(sampler_name, pool, measure, 0, separate_labelled=separate)
    seconds = []
    while sampler.n_labels < labels:
        start = time.perf_counter()
        proposal = sampler.propose()
        seconds.append(time.perf_counter() - start)
        sampler.record(pool.y_true[proposal.item])
    seconds = np.asarray(seconds) * 1e3
    return {
        "sampler": sampler_name,
        "separate_labelled": separate,
        "labels": labels,
        "draws": sampler.n_draws,
        "median_ms": float(np.median(seconds)),
        "last_100_mean_ms": float(seconds[-100:].mean()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labels", type=int, default=1000)
    args = parser.parse_args()
    rows = []
    for pool_name in POOLS:
        frame = synthetic.make_pool(pool_name)
        mapping = ec.ColumnMapping(
            score="score", id="item_id", pred="pred", label="label", prob="prob"
        )
        pool = ec.Pool.from_dataframe(frame, mapping)
        for sampler_name in SAMPLERS:
            for separate in (True, False):
                row = {"pool": pool_name, **timed_run(pool, sampler_name, separate, args.labels)}
                print(row, flush=True)
                rows.append(row)
    table = pd.DataFrame(rows)
    table.to_csv(OUT, index=False)
    lines = [
        "# The cost of the next new item against the repeats (F1, one run each)",
        "",
        f"Made by `python benchmarks/repeats_cost.py --labels {args.labels}`. `separate` "
        "keeps the labelled items out of their cells (the default); otherwise the next "
        "unlabelled item is drawn by rejection. Times are of `propose` per new item, on a "
        "shared 2-core machine.",
        "",
        "| pool | sampler | separate | draws | median ms | mean ms, last 100 |",
        "|---|---|---|---|---|---|",
    ]
    for row in table.itertuples():
        lines.append(
            f"| {row.pool} | {row.sampler} | {row.separate_labelled} | {row.draws:,} | "
            f"{row.median_ms:.3f} | {row.last_100_mean_ms:.3f} |"
        )
    OUT.with_suffix(".md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
