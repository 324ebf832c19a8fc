"""Where the default AIS's error on sharp_calibrated is made: the variance of the next new item's
Des Raj term, given the true labels, after the first answers.

``evalcore.diagnostics.next_term_variance``: once every positive is labelled it is 0, every
later term is exact, and the estimate's error is what the first terms left. Medians over
``--repeats`` runs (seeds 1000+) for the default AIS, ``ais-1`` and the default with the tree's
share fixed small or capped at w (``cap_block_share``), or the item-level model alone; written
to benchmarks/results/term_variance.md.

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
import synthetic  # noqa: E402

OUT = HERE / "results" / "term_variance.md"
CHECKPOINTS = (5, 10, 25, 50, 75, 100)
VARIANTS = {  # row: (sampler, options)
    "ais (default)": ("ais", {}),
    "ais-1": ("ais-1", {}),
    "ais, block share fixed at 0.02": ("ais", {"block_share": 0.02}),
    "ais, block share fixed at 0.1": ("ais", {"block_share": 0.1}),
    "ais, item-level model alone": ("ais", {"oracle_model": "item"}),
    "ais, block share capped at w": ("ais", {"cap_block_share": True}),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=12)
    args = parser.parse_args()
    frame = synthetic.make_pool("sharp_calibrated")
    mapping = ec.ColumnMapping(score="score", id="item_id", pred="pred", label="label", prob="prob")
    pool = ec.Pool.from_dataframe(frame, mapping)
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
    OUT.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
