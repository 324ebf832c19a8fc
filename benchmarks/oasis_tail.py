"""Why OASIS's intervals miss on the over-confident pool (issue 9; coverage.md's note), and
those of another sampler (``--sampler``), e.g. the default AIS early in a session
(coverage_early.md).

At ``--labels`` (1,000) labels, per run of the sampler (OASIS) on synthetic over_confident
(F1): whether the interval covers the truth, the estimate, the interval and its two parts
(the design's alone, on the logit scale and clipped to the bounds; the model average's
quantiles), the weight w on the recalibrated map M1, M1's estimate G_1, its own 95% limits
(w = 1) and its MAP (a, b) (the truth is (0, 1/3)), and how many answers the sampler has
where logit p̂ < -6 (the tail, 99.7% of the items) and in [-6, 2) (32 items, 8 positive),
with the tail's positives found. Then the same split by whether a tail positive was found.
Written to benchmarks/results/oasis_tail.md (``--out`` for another file). ``--measure``
reads another measure than F1, the sampler proposing for it.

    python benchmarks/oasis_tail.py [--runs 48] [--first-seed 16] [--labels 1000]
        [--sampler oasis] [--measure f1] [--out FILE]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import numpy as np

import evalcore as ec
from evalcore.intervals import oracle_view
from evalcore.oracle import classifier_logit

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import resumable  # noqa: E402
from coverage import BUDGET, measure_title  # noqa: E402
from default_sampler import load  # noqa: E402

OUT = HERE / "results" / "oasis_tail.md"


def one_run(pool, measure, truth, logit_p, seed, labels, name="oasis"):
    plan = {"budget": BUDGET} if name == "bernoulli" else {}  # its rounds as coverage.py plans
    sampler = ec.make_sampler(name, pool, measure, seed, **plan)
    while sampler.n_labels < labels:
        sampler.record(pool.y_true[sampler.propose().item])
    estimate = ec.estimate(sampler)
    low, high = estimate.confidence_interval()
    design = dataclasses.replace(estimate, model_spread=None).confidence_interval()
    spread = estimate.model_spread
    model = spread.limits()
    alone = dataclasses.replace(spread, weight=np.ones_like(spread.weight)).limits()
    coef = oracle_view(sampler, sampler.codes_, measure.n_codes(pool)).model.coef_
    answered = sampler.labels_ >= 0
    tail, middle = answered & (logit_p < -6), answered & (logit_p >= -6) & (logit_p < 2)
    return {
        "seed": seed,
        "covered": bool(low[0] <= truth <= high[0]),
        "estimate": estimate.value[0],
        "interval": (low[0], high[0]),
        "design": (design[0][0], design[1][0]),
        "model": (model[0][0], model[1][0]),
        "w": spread.weight[0],
        "m1_alone": (alone[0][0], alone[1][0]),
        "m1_covers": bool(alone[0][0] <= truth <= alone[1][0]),
        "g1": spread.at_map[0],
        "coef": tuple(coef),
        "tail": int(tail.sum()),
        "tail_found": int(pool.y_true[tail].sum()),
        "middle": int(middle.sum()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=48)
    parser.add_argument("--first-seed", type=int, default=16)
    parser.add_argument("--labels", type=int, default=1000)
    parser.add_argument("--sampler", default="oasis")
    parser.add_argument("--measure", default="f1")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    out = args.out.resolve()
    pool, measure = load("over_confident (prob)"), ec.get_measure(args.measure)
    truth = float(measure.g(ec.diagnostics.true_risk(pool, measure))[0])
    logit_p = classifier_logit(pool.prob[:, 1])
    seeds = range(args.first_seed, args.first_seed + args.runs)
    runs = [
        one_run(pool, measure, truth, logit_p, seed, args.labels, args.sampler) for seed in seeds
    ]
    named = "OASIS" if args.sampler == "oasis" else f"`{args.sampler}`"
    command = f"--runs {args.runs} --first-seed {args.first_seed} --labels {args.labels}"
    if args.sampler != "oasis":
        command += f" --sampler {args.sampler}"
    if args.measure != "f1":
        command += f" --measure {args.measure}"
    if out != OUT:
        command += f" --out {resumable.shown(out)}"
    lines = [
        f"# {named} on over_confident: which runs miss ({measure_title(args.measure)})",
        "",
        f"Made by `python benchmarks/oasis_tail.py {command}`. Truth {truth:.3f}. "
        "Tail: logit p̂ < -6; middle: logit p̂ in [-6, 2) (32 items). "
        "w: the weight on the recalibrated map M1; "
        "G_1 and (a, b): M1's estimate and MAP (truth (0, 1/3)).",
        "",
        "| seed | covered | estimate | interval | design | model | w | G_1 | M1 alone "
        "| (a, b) | tail answers | tail positives found | middle answers |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for run in runs:
        lines.append(
            f"| {run['seed']} | {'yes' if run['covered'] else 'no'} | {run['estimate']:.3f} | "
            "{:.3f}-{:.3f} | {:.3f}-{:.3f} | {:.3f}-{:.3f} | ".format(
                *run["interval"], *run["design"], *run["model"]
            )
            + f"{run['w']:.2f} | {run['g1']:.3f} | "
            + "{:.3f}-{:.3f} | ".format(*run["m1_alone"])
            + f"({run['coef'][0]:.2f}, {run['coef'][1]:.2f}) "
            f"| {run['tail']} | {run['tail_found']} | {run['middle']} |"
        )
    lines += ["", "| tail positive found | runs | covered | covered by M1 alone | w "]
    lines[-1] += "| middle answers (median) |"
    lines.append("|---|---|---|---|---|---|")
    for found in (True, False):
        group = [run for run in runs if (run["tail_found"] > 0) == found]
        if not group:
            continue
        weights = [run["w"] for run in group]
        lines.append(
            f"| {'yes' if found else 'no'} | {len(group)} | "
            f"{sum(run['covered'] for run in group)} | {sum(run['m1_covers'] for run in group)} | "
            f"{min(weights):.2f}-{max(weights):.2f} | "
            f"{np.median([run['middle'] for run in group]):.1f} |"
        )
    out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines[-4:]))


if __name__ == "__main__":
    main()
