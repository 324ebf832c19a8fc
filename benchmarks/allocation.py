"""Where each sampler spends its labels on a pool, by the classifier's probability (F1).

Per range of p̂: the pool's items, the sum of p̂ (the positives the probabilities expect) and
the positives; then per sampler, averaged over the runs at ``--labels`` labels, the new labels
spent there, the positives found, and the median of (1 - q_s(L_s)) w_s over the positives
found there (the weight of a find in Des Raj's term, 1 / (N q'_s(x)),
``estimators.estimate_is_rao_blackwellised``: the smaller, the less one find moves the
estimate). Seed 2021 as in default_sampler.py. Written to benchmarks/results/allocation.md.

    python benchmarks/allocation.py [--pool "abt-buy (prob)"] [--runs 10] [--labels 1000]
        [--samplers ais,ais-item,ais-block,is] [--out FILE]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

import evalcore as ec

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import resumable  # noqa: E402
from default_sampler import SAMPLERS, load  # noqa: E402

OUT = HERE / "results" / "allocation.md"
EDGES = np.array([0, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 0.1, 0.5, 1.0])


def ranges(prob: np.ndarray) -> np.ndarray:
    """Each item's range of p̂ (index into ``EDGES``' intervals, the last one closed)."""
    return np.clip(np.searchsorted(EDGES, prob, side="right") - 1, 0, len(EDGES) - 2)


def spend(pool, name: str, runs: int, labels: int):
    """Mean labels and finds per range, and the finds' weights, over ``runs`` runs."""
    sampler_name, options = SAMPLERS[name]
    measure = ec.get_measure("f1")
    where = ranges(pool.prob[:, 1])
    n_ranges = len(EDGES) - 1
    spent, found = np.zeros(n_ranges), np.zeros(n_ranges)
    weights = [[] for _ in range(n_ranges)]
    for seed in np.random.SeedSequence(2021).spawn(runs):
        sampler = ec.make_sampler(sampler_name, pool, measure, seed, **options)
        while sampler.n_labels < labels:
            proposal = sampler.propose()
            sampler.record(pool.y_true[proposal.item])
        items, weight, share = sampler.first_draws()
        positive = pool.y_true[items] == 1
        spent += np.bincount(where[items], minlength=n_ranges)
        found += np.bincount(where[items[positive]], minlength=n_ranges)
        finds = zip(where[items[positive]], ((1 - share) * weight)[positive], strict=True)
        for index, term_weight in finds:
            weights[index].append(term_weight)
    medians = [f"{np.median(w):.3f}" if w else "" for w in weights]
    return spent / runs, found / runs, medians


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pool", default="abt-buy (prob)")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--labels", type=int, default=1000)
    parser.add_argument("--samplers", default="ais,ais-item,ais-block,is")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    pool = load(args.pool)
    prob, where = pool.prob[:, 1], ranges(pool.prob[:, 1])
    n_ranges = len(EDGES) - 1
    names = [f"[{EDGES[i]:g}, {EDGES[i + 1]:g})" for i in range(n_ranges)]
    names[-1] = names[-1][:-1] + "]"
    lines = [
        f"# Where the labels go: {args.pool}, {args.labels} labels",
        "",
        f'Made by `python benchmarks/allocation.py --pool "{args.pool}" --runs {args.runs} '
        f"--labels {args.labels} --samplers {args.samplers}"
        + ("" if args.out == OUT else f" --out {resumable.shown(args.out)}")
        + "` (seed 2021; the script's "
        "docstring says what each row is). Means over the runs.",
        "",
        "| | " + " | ".join(names) + " |",
        "|---" * (n_ranges + 1) + "|",
        "| items | " + " | ".join(str(c) for c in np.bincount(where, minlength=n_ranges)) + " |",
        "| sum of p̂ | "
        + " | ".join(f"{s:.2f}" for s in np.bincount(where, prob, minlength=n_ranges))
        + " |",
        "| positives | "
        + " | ".join(str(int(c)) for c in np.bincount(where, pool.y_true, minlength=n_ranges))
        + " |",
    ]
    for name in args.samplers.split(","):
        spent, found, medians = spend(pool, name, args.runs, args.labels)
        lines.append(f"| {name}: labels | " + " | ".join(f"{x:.0f}" for x in spent) + " |")
        lines.append(f"| {name}: found | " + " | ".join(f"{x:.1f}" for x in found) + " |")
        lines.append(f"| {name}: weight of a find | " + " | ".join(medians) + " |")
        print(name, "done", flush=True)
    args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
