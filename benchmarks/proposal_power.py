"""Which proposal do a pool's own labels favour, and which does its model favour (issue 13)?

A simplified model of the part of the F1 error that matters on rare-positive pools: the count
of false negatives among the predicted negatives, estimated by Des Raj's terms (one per new
label, labelled items exact, the next item drawn from the proposal over the unlabelled ones,
U_s) averaged with weights 1 / V_s, the inverse of each term's variance predicted from p̂,
as the default AIS weighs its terms by their predicted variance. The proposal over U_s is
q(x) ∝ p̂(x)^gamma:

* gamma = 1 is seed 003 Prop. 4's deterministic form with pi = p̂ (for a predicted negative
  only a positive answer has a non-zero loss, so the value is p̂(x) ||Dg l||);
* gamma = 1/2 minimises each term's variance expected under p̂, sum_U p̂ / q - (sum_U p̂)^2
  (Cauchy-Schwarz); seed 003's form for a stochastic oracle, sqrt(sum_y pi ||Dg l||^2);
* gamma > 1 puts the labels on the likelier items faster than p̂ does.

For each gamma and budget the estimate's variance is sum_s (1/V_s)^2 var_s / (sum_s 1/V_s)^2
along an order in which the items are labelled (the terms' errors are martingale differences;
three orders drawn from the proposal, averaged), with var_s the s-th term's variance given the
labels and the items then unlabelled. The labels: the pool's real ones, and 1,000 sets redrawn
from p̂ (their mean is the variance p̂ itself expects; the median, what a typical pool drawn
from p̂ gets). "F1 units" multiplies by (dF1/dFN)^2 at the
pool's true counts (the linearisation), to set beside default_sampler.md's MSEs. No sampler of
the engine runs here. The pools are default_sampler.py's whose p̂ claims to be calibrated:
abt-buy (prob), sharp_calibrated, and over_confident (true), the over-confident pool with the
probabilities its labels were drawn from. Written to
benchmarks/results/proposal_power.{csv,md} as each pool finishes.

    python benchmarks/proposal_power.py [--pools ...]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import resumable  # noqa: E402
from default_sampler import load  # noqa: E402

OUT = HERE / "results" / "proposal_power.csv"
POOLS = ["abt-buy (prob)", "sharp_calibrated (prob)", "over_confident (true)"]
GAMMAS = (0.5, 0.75, 1.0, 1.25, 1.5, 2.0)
BUDGETS = (500, 1000, 2000)
ORDERS, REDRAWS = 3, 1000


def labelling_order(prob, gamma, budget, rng):
    """Draw ``budget`` items one by one from q ∝ prob^gamma over those not yet drawn.

    Returns the stage weights 1 / V_s (V_s: the term's variance expected under ``prob``),
    the items in the order drawn, and per item A(x) = sum over the stages at which x was
    unlabelled of (1 / V_s)^2 / q_s(x), so that sum_x y(x) A(x) is the first part of the
    weighted terms' variance for any labels y."""
    unlabelled = np.ones(len(prob), dtype=bool)
    value = prob**gamma
    stage_weight, order = np.empty(budget), np.empty(budget, dtype=np.int64)
    per_item = np.zeros(len(prob))
    for s in range(budget):
        q = np.where(unlabelled, value, 0.0)
        q /= q.sum()
        p_u, q_u = prob[unlabelled], q[unlabelled]
        stage_weight[s] = 1.0 / (np.sum(p_u / q_u) - p_u.sum() ** 2)
        per_item[unlabelled] += stage_weight[s] ** 2 / q_u
        order[s] = rng.choice(len(prob), p=q)
        unlabelled[order[s]] = False
    return stage_weight, order, per_item


def variance(labels, stage_weight, order, per_item):
    """The weighted estimate's variance for each row of ``labels`` (K, N): the term at
    stage s has variance sum_U y / q_s - (sum_U y)^2."""
    drawn = labels[:, order]
    found_before = np.cumsum(drawn, axis=1) - drawn
    remaining = labels.sum(axis=1, keepdims=True) - found_before
    second = labels @ per_item - (remaining**2 * stage_weight**2).sum(axis=1)
    return second / stage_weight.sum() ** 2


def rows_for(pool_name):
    pool = load(pool_name)
    negative = pool.y_pred == 0
    prob = np.clip(pool.prob[negative, 1], 1e-300, None)
    real = pool.y_true[negative][None, :].astype(float)
    tp = int(np.sum((pool.y_pred == 1) & (pool.y_true == 1)))
    fp, fn = int(np.sum(pool.y_pred == 1)) - tp, int(real.sum())
    f1 = 2 * tp / (2 * tp + fp + fn)
    to_f1 = (f1 / (2 * tp + fp + fn)) ** 2  # (dF1/dFN)^2
    seeds = np.random.SeedSequence(2021).spawn(ORDERS + 1)
    redrawn = (np.random.default_rng(seeds[0]).random((REDRAWS, len(prob))) < prob).astype(float)
    rows = []
    for budget in BUDGETS:
        for gamma in GAMMAS:
            on_real, on_redrawn = [], []
            for seed in seeds[1:]:
                order = labelling_order(prob, gamma, budget, np.random.default_rng(seed))
                on_real.append(variance(real, *order)[0])
                on_redrawn.append(variance(redrawn, *order))
            on_redrawn = np.mean(on_redrawn, axis=0)
            rows.append(
                {
                    "pool": pool_name,
                    "n_labels": budget,
                    "gamma": gamma,
                    "predicted_negatives": int(negative.sum()),
                    "false_negatives": fn,
                    "expected_false_negatives": float(prob.sum()),
                    "real": float(np.mean(on_real)),
                    "redrawn_mean": float(on_redrawn.mean()),
                    "redrawn_median": float(np.median(on_redrawn)),
                    "redrawn_90": float(np.quantile(on_redrawn, 0.9)),
                    "real_rank": float(np.mean(on_redrawn <= np.mean(on_real))),
                    "to_f1": to_f1,
                }
            )
    return pd.DataFrame(rows)


def write_markdown(path: Path = OUT) -> None:
    table = pd.read_csv(path)
    lines = [
        "# Which proposal a pool's labels favour, and which its probabilities favour",
        "",
        "Made by `python benchmarks/proposal_power.py` (seed 2021; the script's docstring says",
        "what is computed). Variance of the stage-weighted Des Raj estimate of the false",
        "negatives' count under q ∝ p̂^gamma over the unlabelled predicted negatives: on the",
        "pool's real labels, and over 1,000 label sets redrawn from p̂ (mean, median, 90th",
        "percentile). The smallest of each column at each budget is in bold. F1 units: times",
        "(dF1/dFN)^2 at the pool's true counts. Rank: the share of the redrawn label sets",
        "whose variance is at most the real labels' (the real pool's place among the pools",
        "drawn from p̂).",
        "",
    ]
    columns = ["real", "redrawn_mean", "redrawn_median", "redrawn_90"]
    header = "| labels | gamma | real labels | (F1 units) | redrawn: mean | median | 90% | rank |"
    for pool_name, group in table.groupby("pool", sort=False):
        first = group.iloc[0]
        lines += [
            f"## {pool_name}",
            "",
            f"{first.predicted_negatives} predicted negatives, {first.false_negatives} false "
            f"negatives, {first.expected_false_negatives:.2f} expected by p̂.",
            "",
            header,
            "|---|---|---|---|---|---|---|---|",
        ]
        for _, rows in group.groupby("n_labels"):
            for row in rows.itertuples():
                cells = [f"{getattr(row, c):.3g}" for c in columns]
                best = [getattr(row, c) == rows[c].min() for c in columns]
                cells = [f"**{x}**" if b else x for x, b in zip(cells, best, strict=True)]
                lines.append(
                    f"| {row.n_labels} | {row.gamma} | {cells[0]} | {row.real * row.to_f1:.2g} | "
                    f"{cells[1]} | {cells[2]} | {cells[3]} | {row.real_rank:.3f} |"
                )
        lines.append("")
    path.with_suffix(".md").write_text("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pools", help="comma-separated subset of the pools")
    args = parser.parse_args()
    for pool_name in args.pools.split(",") if args.pools else POOLS:
        resumable.save(rows_for(pool_name), OUT, keys=("pool",))
        write_markdown()
        print(f"# {pool_name} done", flush=True)


if __name__ == "__main__":
    main()
