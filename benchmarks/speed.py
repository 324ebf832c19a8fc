"""Speed of one labelling step against pool size.

Pools of N = 10^4 ... 10^7 items are made by resampling the abt-buy pool (scores, predictions
and labels, with replacement). For each configuration the script times the set-up (building
the sampler from a pool) and then S steps, each = propose + record the true label +
re-estimate, and reports the median and 90th percentile step time and the peak resident
memory of a fresh process. Prints a table and writes benchmarks/results/speed.{csv,md}.

    python benchmarks/speed.py [--sizes 1e4,1e5,1e6,1e7] [--steps 300]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
DATA = HERE.parent.parent / "shared" / "data" / "abt-buy.csv.gz"
ROW_FORMAT = (
    "{sampler:>9} {measure:>14} N={n_pool:>9,}  pool {pool_s:6.2f}s  setup {setup_s:6.3f}s"
    "  step median {step_median_ms:7.2f} ms  p90 {step_p90_ms:7.2f} ms"
    "  allocation {allocation_ms:6.2f} ms"
    "  peak {peak_rss_mb:7.1f} MB"
)
CONFIGS = [
    ("ais", "f1"),
    ("ais", "pr_curve:1024"),
    ("is", "f1"),
    ("bernoulli", "f1"),
    ("ais", "r2"),  # a regression pool (issue 11): synthetic.make_regression_pool, resampled
]
REGRESSION_MEASURES = ("mae", "mse", "rmse", "r2")


def measure_one(sampler_name: str, measure_name: str, n_pool: int, steps: int) -> dict:
    import evalcore as ec
    from evalcore import regression

    regressing = measure_name in REGRESSION_MEASURES
    sys.path.insert(0, str(HERE))
    import synthetic

    source = synthetic.make_regression_pool() if regressing else pd.read_csv(DATA)
    rng = np.random.default_rng(0)
    rows = rng.integers(len(source), size=n_pool)
    t0 = time.perf_counter()
    if regressing:
        pool = regression.RegressionPool.from_dataframe(
            source.iloc[rows], prediction="pred", label="label", spread="sd"
        )
    else:
        pool = ec.Pool.from_arrays(
            source["score"].to_numpy()[rows],
            y_pred=source["pred"].to_numpy()[rows],
            y_true=source["label"].to_numpy()[rows],
        )
    t1 = time.perf_counter()
    if regressing:
        measure = regression.get_regression_measure(measure_name)
        sampler = regression.make_regression_sampler(sampler_name, pool, measure, 0)
    else:
        measure = ec.get_measure(measure_name)
        options = {"round_size": 50} if sampler_name == "bernoulli" else {}
        sampler = ec.make_sampler(sampler_name, pool, measure, 0, **options)
    t2 = time.perf_counter()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        proposal = sampler.propose()
        sampler.record(pool.y_true[proposal.item])
        # what the app shows after every label
        (sampler.estimate() if regressing else ec.estimate(sampler)).confidence_interval()
        times.append(time.perf_counter() - start)
    times = np.array(times) * 1e3
    allocation_ms = float("nan")
    if sampler_name == "bernoulli":  # water-filling for one round, at the cells' level
        allocation = []
        for _ in range(20):
            start = time.perf_counter()
            sampler.inclusion_probabilities(50.0)
            allocation.append(time.perf_counter() - start)
        allocation_ms = round(float(np.median(allocation)) * 1e3, 2)
    return {
        "sampler": sampler_name,
        "measure": measure_name,
        "n_pool": n_pool,
        "pool_s": round(t1 - t0, 3),
        "setup_s": round(t2 - t1, 3),
        "step_median_ms": round(float(np.median(times)), 2),
        "step_p90_ms": round(float(np.percentile(times, 90)), 2),
        "allocation_ms": allocation_ms,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1e4,1e5,1e6,1e7")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--one", help=argparse.SUPPRESS)  # sampler,measure,n in a child
    args = parser.parse_args()
    if args.one:
        sampler_name, measure_name, n_pool = args.one.split(",")
        print(json.dumps(measure_one(sampler_name, measure_name, int(n_pool), args.steps)))
        return
    rows = []
    for n_pool in [int(float(size)) for size in args.sizes.split(",")]:
        for sampler_name, measure_name in CONFIGS:
            child = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--one",
                    f"{sampler_name},{measure_name},{n_pool}",
                    "--steps",
                    str(args.steps),
                ],
                capture_output=True,
                text=True,
                check=True,
            )
            row = json.loads(child.stdout.strip().splitlines()[-1])
            rows.append(row)
            print(ROW_FORMAT.format(**row), flush=True)
    table = pd.DataFrame(rows)
    (HERE / "results").mkdir(exist_ok=True)
    table.to_csv(HERE / "results" / "speed.csv", index=False)
    write_markdown(table, args.steps)


def write_markdown(table: pd.DataFrame, steps: int) -> None:
    lines = [
        f"# Step time against pool size ({steps} steps each: propose + record + re-estimate)",
        "",
        "| " + " | ".join(table.columns) + " |",
        "|" + "---|" * len(table.columns),
    ]
    lines += [
        "| " + " | ".join(f"{v:,}" if isinstance(v, int) else str(v) for v in row) + " |"
        for row in table.itertuples(index=False)
    ]
    (HERE / "results" / "speed.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
