"""Do the stage weights' predicted variances hold? The default AIS's V_s against its terms (F1).

``estimators.stage_weights`` weighs the s-th Des Raj term by V_s^-gamma, gamma at most
1 - w, V_s the oracle model's prediction, before the draw, of the term's variance after
projection on Dg(R) (the draws, and so V_s and the terms, do not depend on gamma). Here
R is the truth, so the projected term t_s = Dg(R) z_s has mean 0 (F1 is homogeneous of degree
0 in R) and t_s^2 is what V_s predicts. Over ``--runs`` runs of ``--labels`` labels (run i:
seed 2021 + i, as in default_sampler.py) and by range of s, the script prints the mean of
t_s^2, the mean of V_s, their ratio, and the share of the range's sum of t_s^2 that its
largest term holds (a ratio above 1 made by one find is a rare event the model under-weighs,
not a steady under-prediction). Written to benchmarks/results/stage_variance.md.

    python benchmarks/stage_variance.py [--runs 30] [--labels 2000] [--pools ...]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

import evalcore as ec

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from default_sampler import load  # noqa: E402
from term_anatomy import plain_terms  # noqa: E402

OUT = HERE / "results" / "stage_variance.md"
POOLS = ["abt-buy (prob)", "rare_calibrated (prob)", "sharp_calibrated (prob)"]
RANGES = [(0, 50), (50, 200), (200, 500), (500, 1000), (1000, 2000)]


def one_run(pool, measure, truth, seed, labels) -> tuple[np.ndarray, np.ndarray, float]:
    """t_s^2 and V_s (labels,) of one run, and w at its end."""
    sampler, *_, terms, _ = plain_terms(pool, measure, seed, labels)
    projected = (terms - truth) @ measure.dense_jacobian(truth)[0]
    moments, recalibration = sampler.stage_moments()
    sq_norm = measure.sq_norm_dg_loss(truth, sampler.n_codes_, pool.n_classes)
    return projected**2, np.einsum("scy,cy->s", moments, sq_norm), recalibration


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--labels", type=int, default=2000)
    parser.add_argument("--pools", default=",".join(POOLS))
    args = parser.parse_args()
    measure = ec.get_measure("f1")
    command = f"--runs {args.runs} --labels {args.labels}"
    if args.pools != ",".join(POOLS):
        command += f' --pools "{args.pools}"'
    lines = [
        "# The stage weights' predicted variances against the terms (F1, the default AIS)",
        "",
        f"Made by `python benchmarks/stage_variance.py {command}` (run i: seed 2021 + i). "
        "Per range of the "
        "stage s: the mean over runs and stages of t_s^2 (the term's squared error after "
        "projection on Dg at the truth) and of V_s (its prediction), their ratio, and the "
        "largest single t_s^2's share of the range's sum.",
        "",
    ]
    for pool_name in args.pools.split(","):
        pool = load(pool_name)
        truth = ec.true_risk(pool, measure)
        runs = [one_run(pool, measure, truth, 2021 + i, args.labels) for i in range(args.runs)]
        realised = np.stack([run[0] for run in runs])
        predicted = np.stack([run[1] for run in runs])
        weights = [run[2] for run in runs]
        block = [
            f"## {pool_name}",
            "",
            f"w at {args.labels} labels: {min(weights):.2f}-{max(weights):.2f}.",
            "",
            "| stages | mean t_s^2 | mean V_s | ratio | largest term's share |",
            "|---|---|---|---|---|",
        ]
        for low, high in RANGES:
            if low >= args.labels:
                continue
            seen, model = realised[:, low:high], predicted[:, low:high]
            largest = f"{seen.max() / seen.sum():.2f}" if seen.sum() > 0 else "none"
            block.append(
                f"| {low}-{min(high, args.labels)} | {seen.mean():.2e} | {model.mean():.2e} | "
                f"{seen.mean() / model.mean():.1e} | {largest} |"
            )
        block.append("")
        print("\n".join(block), flush=True)
        lines += block
    OUT.write_text("\n".join(lines))


if __name__ == "__main__":
    main()
