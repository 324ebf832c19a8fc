"""Where the default AIS's error on sharp_calibrated is made: the variance of the next new item's
Des Raj term, given the true labels, after the first answers; and how well the answers can
choose the tree's share of the proposal.

``evalcore.diagnostics.next_term_variance``: once every positive is labelled it is 0, every
later term is exact, and the estimate's error is what the first terms left. Medians over
``--repeats`` runs (seeds 1000+) for the default AIS, ``ais-1``, the default before
2026-11-26 (``ais-adaptive``: the depth-8 tree in the mixture, its share chosen after every
answer) and that with the tree's share fixed small or capped at w (``cap_block_share``), chosen
by the other criterion (``share_criterion="next_term"``), or the item-level model alone.

The second table follows ``ais-adaptive`` on sharp_calibrated and on abt-buy with its `prob`
column and, at each checkpoint, evaluates the next term's variance at every share of the
criterion's grid (``diagnostics.next_term_variance_by_share``): the share where it is
smallest, the shares the two criteria (``AISSampler.share_moments``) choose from the same
answers, and the variance at each of those over the smallest. Both written to
benchmarks/results/term_variance.md.

    python benchmarks/term_variance.py [--repeats 12]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

import evalcore as ec

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from default_sampler import ADAPTIVE, load  # noqa: E402

OUT = HERE / "results" / "term_variance.md"
CHECKPOINTS = (5, 10, 25, 50, 75, 100)
VARIANTS = {  # row: (sampler, options)
    "ais (default: one-level tree, share 0.1)": ("ais", {}),
    "ais-adaptive (the default before: depth-8 tree, share chosen)": ("ais", ADAPTIVE),
    "ais-1": ("ais-1", {}),
    "ais-adaptive, block share fixed at 0.02": ("ais", {**ADAPTIVE, "block_share": 0.02}),
    "ais-adaptive, block share fixed at 0.1": ("ais", {**ADAPTIVE, "block_share": 0.1}),
    "ais, item-level model alone": ("ais", {"oracle_model": "item"}),
    "ais-adaptive, block share capped at w": ("ais", {**ADAPTIVE, "cap_block_share": True}),
    "ais-adaptive, share by the next term's criterion": (
        "ais",
        {**ADAPTIVE, "share_criterion": "next_term"},
    ),
}
SHARE_POOLS = {"sharp_calibrated": (10, 25, 50), "abt-buy (prob)": (10, 50, 250, 1000)}
CRITERIA = ("draws", "next_term")


def share_rows(pool_name: str, repeats: int) -> list[str]:
    """The second table's rows for one pool: medians over the runs per checkpoint."""
    pool, measure = load(pool_name), ec.get_measure("f1")
    table = {checkpoint: [] for checkpoint in SHARE_POOLS[pool_name]}
    for seed in range(repeats):
        sampler = ec.make_sampler("ais", pool, measure, 1000 + seed, **ADAPTIVE)
        for checkpoint in table:
            while sampler.n_labels < checkpoint:
                sampler.record(pool.y_true[sampler.propose().item])
            sampler.pmf_of(np.arange(1))  # refreshes the proposal after the last answer
            doubt = sampler.item_model_.recalibration_weight_
            grid = np.linspace(0.1 * doubt, 0.9, 33)
            variance = ec.diagnostics.next_term_variance_by_share(sampler, grid)
            best = int(np.argmin(variance))
            row = [grid[best]]
            for criterion in CRITERIA:
                chosen = int(np.argmin(sampler.share_moments(grid, criterion=criterion)))
                row += [grid[chosen], variance[chosen] / max(variance[best], 1e-300)]
            table[checkpoint].append(row)
    lines = []
    for checkpoint, rows in table.items():
        medians = np.median(rows, axis=0)
        lines.append(
            f"| {pool_name} | {checkpoint} | {medians[0]:.2f} | {medians[1]:.2f} | "
            f"{medians[2]:.2g} | {medians[3]:.2f} | {medians[4]:.2g} |"
        )
        print(lines[-1], flush=True)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=12)
    args = parser.parse_args()
    pool = load("sharp_calibrated")
    measure = ec.get_measure("f1")
    lines = [
        "# Variance of the next Des Raj term on sharp_calibrated (F1)",
        "",
        f"Made by `python benchmarks/term_variance.py --repeats {args.repeats}` (seeds 1000+;",
        "medians over the runs). Columns: labels so far. 0 means every positive is labelled:",
        "every later term is exact.",
        "",
        "| sampler | " + " | ".join(str(c) for c in CHECKPOINTS) + " |",
        "|---|" + "---|" * len(CHECKPOINTS),
    ]
    for row, (name, options) in VARIANTS.items():
        table = []
        for seed in range(args.repeats):
            sampler = ec.make_sampler(name, pool, measure, 1000 + seed, **options)
            variances = []
            for checkpoint in CHECKPOINTS:
                while sampler.n_labels < checkpoint:
                    sampler.record(pool.y_true[sampler.propose().item])
                variances.append(ec.diagnostics.next_term_variance(sampler))
            table.append(variances)
        medians = np.median(table, axis=0)
        lines.append(f"| {row} | " + " | ".join(f"{v:.2g}" for v in medians) + " |")
        print(lines[-1], flush=True)
    lines += [
        "",
        "## Choosing the tree's share from the answers",
        "",
        "Along ais-adaptive's runs (same seeds): the share of the grid [0.1 w, 0.9] where",
        "the next term's variance given the true labels is smallest, the share each criterion",
        "chooses from the same answers, and the variance there over the smallest (1: the",
        "best share; medians over the runs).",
        "",
        "| pool | labels | best share | `draws` (ais-adaptive's) | its variance / best | "
        "`next_term` | its variance / best |",
        "|---|---|---|---|---|---|---|",
    ]
    for pool_name in SHARE_POOLS:
        lines += share_rows(pool_name, args.repeats)
    OUT.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
