"""How much of static IS's error can 100 runs see? Its false negatives that it almost never draws.

Static IS draws from one fixed proposal q (seed 003 Prop. 4 on the classifier's
probabilities), and keeps labelled items apart, so its s-th new item is drawn from q
restricted to the unlabelled items, q(x) / (1 - Q_s), Q_s the mass of the items labelled
before it. A rarely drawn item x is then among the first n new items with a chance of about
1 - exp(-q(x) H_n), H_n = sum_{s < n} 1 / (1 - Q_s), and if it is found its Des Raj term
(``estimators.rao_blackwell_terms``: z_s weighed by a_s = 1 / (1 - Q_s)) moves the estimate of
R by l(x) / (N q(x) H_n). H_n is averaged over 20 orders of successive sampling from q
(exponential keys, seeded). Where the probabilities are falsely sure, some false negatives
have a chance far below 1 / runs: a benchmark of 100 runs rarely sees one drawn, but when a
run does, F1 falls to about g(R + l(x) / (N q(x) H_n)) (clipped to [0, 1]). Per pool and
label count this prints, for the false negatives each with a chance below 1% by then: how
many there are, the chance that a run draws at least one, the F1 the likeliest such find
leaves, and sum_x P(x drawn) (g(R after the find) - g(R))^2, the part of the MSE those rare
runs carry (to first order in the chance, one find per run), which a benchmark of 100 runs
sees in a few runs at most. Written to benchmarks/results/unseen_false_negatives.md.

    python benchmarks/unseen_false_negatives.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import evalcore as ec
from evalcore.samplers import StaticISSampler

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import default_sampler  # noqa: E402

OUT = HERE / "results" / "unseen_false_negatives.md"
LABELS = (500, 1000, 2000)
RARE_CHANCE = 0.01


def successive_hazard(q: np.ndarray, orders: int = 20) -> np.ndarray:
    """H_n = sum_{s < n} 1 / (1 - Q_s) for n = 1..max(LABELS), averaged over ``orders``
    orders of successive sampling from ``q`` (the items by increasing Exp(1) / q(x))."""
    rng = np.random.default_rng(0)
    n = max(LABELS)
    drawable = np.flatnonzero(q > 0)
    total = np.zeros(n)
    for _ in range(orders):
        keys = rng.exponential(size=len(drawable)) / q[drawable]
        first = drawable[np.argsort(keys)[:n]]
        labelled_mass = np.concatenate([[0.0], np.cumsum(q[first])[:-1]])
        total += np.cumsum(1 / (1 - labelled_mass))
    return total / orders


def rows_for(pool_name: str) -> list[str]:
    pool = default_sampler.load(pool_name)
    measure = ec.get_measure("f1", pool.n_classes)
    q = StaticISSampler(pool, measure, rng=np.random.default_rng(0)).pmf()
    risk = ec.true_risk(pool, measure)
    truth = float(measure.g(risk)[0])
    false_negative = np.flatnonzero((pool.y_true == 1) & (pool.y_pred == 0))
    loss = measure.loss(measure.codes(pool)[false_negative], pool.y_true[false_negative])
    hazard = successive_hazard(q)
    rows = []
    for n in LABELS:
        chance = -np.expm1(-q[false_negative] * hazard[n - 1])
        rare = chance < RARE_CHANCE
        unseen, p = false_negative[rare], chance[rare]
        moved = risk + loss[rare] / (pool.n_pool * q[unseen, None] * hazard[n - 1])
        after = np.clip(np.nan_to_num([measure.g(r)[0] for r in moved], nan=0.0), 0, 1)
        any_drawn = -np.expm1(np.log1p(-p).sum()) if len(p) else 0.0
        likeliest = f"{after[np.argmax(p)]:.3f}" if len(p) else ""
        mse_part = float(np.sum(p * (after - truth) ** 2))
        rows.append(
            f"| {pool_name} | {n} | {len(false_negative)} | {len(unseen)} | {any_drawn:.3f} | "
            f"{truth:.3f} | {likeliest} | {mse_part:.1e} |"
        )
    return rows


def main() -> None:
    lines = [
        "# Static IS's false negatives that 100 runs rarely see (F1)",
        "",
        "Made by `python benchmarks/unseen_false_negatives.py` (from static IS's fixed "
        "proposal on each pool of `default_sampler.py`, with H_n from 20 seeded orders of "
        "successive sampling, the script's docstring). `unseen`: the false "
        f"negatives each drawn by then with a chance below {RARE_CHANCE:.0%}; `P(any drawn)`: "
        "the chance that a run draws at least one of them; `F1 after the likeliest`: the "
        "estimate that drawing the likeliest of them leaves; `MSE part`: the sum over them of "
        "the chance times the squared error that find leaves, the MSE that a few rare runs "
        "carry (compare with `default_sampler.md`, measured on 100 runs).",
        "",
        "| pool | labels | false negatives | unseen | P(any drawn) | F1 | "
        "F1 after the likeliest | MSE part |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for pool_name in default_sampler.POOLS:
        rows = rows_for(pool_name)
        print("\n".join(rows), flush=True)
        lines += rows
    OUT.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
