"""Prop. 4's two forms at the linear AIS's own stages: the next term's variance under each (F1).

Seed 003's Prop. 4 gives the proposal for a deterministic oracle as sum_y pi(y|x) ||Dg l(x,
y)||, linear in the model's pi, and for a stochastic one as sqrt(sum_y pi(y|x) ||Dg l(x,
y)||^2). Where pi is the law of the labels, the root form minimises the next term's expected
second moment (``AISSampler._with_root_values``); the linear form gives an item of small pi a
smaller share still. Which serves a pool better is a matter of its real labels. Here the
AIS with the linear form alone (``root_component=False``, the default before 2026-11-29,
when this was measured) labels to each budget with the true labels, and at that state the
exact variance of the next Des Raj term (``estimators.estimate_is_rao_blackwellised``),
with the pool's true labels and R the truth,

    sigma^2(q') = (sum_{x in U} u(x)^2 / q'(x) - S^2) / N^2,    u(x) = Dg(R) l(x, y(x)),

(S the sum of u over the labelled items; ``exact_variance.py`` derives it) is read under:

* ``sampler``: that AIS's own proposal, restricted to the unlabelled items U;
* ``mu=0``, ``mu=0.5``, ``mu=1``: the item-level component as (1 - mu) of the linear form
  and mu of the root form (both from its item-level model at that state) mixed
  with the tree's share of 0.1, as ``root_component`` mixes them, without
  ``bound_find_effect``'s floor (so ``mu=0`` differs from ``sampler`` where that floor acts);
* ``true root``: the root form with the pool's true probabilities (synthetic pools only):
  what the model's pi could at best achieve;

and ``mu chosen``, the mu the answers would choose there (``AISSampler._root_mu``). Also the
share of the restricted proposal below logit p̂ = -20 (``tail``) under ``sampler`` and under
``true root``. Run i labels as run i of default_sampler.py (seed 2021). Written to
benchmarks/results/proposal_forms.{csv,md}, each pool as it finishes.

    python benchmarks/proposal_forms.py [--pools P] [--runs 3] [--labels 200,500,1000,2000]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

import evalcore as ec
from evalcore.oracle import classifier_logit

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import resumable  # noqa: E402
import synthetic  # noqa: E402
from default_sampler import POOLS, SEED, load  # noqa: E402

OUT = HERE / "results" / "proposal_forms.csv"
MIXES = (0.0, 0.5, 1.0)
TAIL = -20.0  # logit p̂ below which a pool's bulk is "the deep tail"
SETTLED = 1e-12  # a variance this small: every item that can move F1 is labelled


def next_term_variance(u: np.ndarray, unlabelled: np.ndarray, q: np.ndarray) -> float:
    """sigma^2 of the next Des Raj term when the next new item is drawn from ``q`` (per item,
    any scale) restricted to the ``unlabelled`` items: u over the pool, N its length."""
    restricted = q[unlabelled] / q[unlabelled].sum()
    known = u[~unlabelled].sum()
    return float((np.sum(u[unlabelled] ** 2 / restricted) - known**2) / len(u) ** 2)


def forms(sampler):
    """Per item: the linear and root forms of the item-level component, each normalised over
    the pool with the labelled items at their answers' values (``_values_under`` gives the
    linear one), and the tree's component; and the mu the answers would choose."""
    response = [sampler.cell_response(m) for m in ("item", "block")]
    item, block = (sampler._values_under(r) for r in response)
    linear = item[0] / item[2]
    root, root_total = sampler.root_form(item, response[0])
    root = root / root_total
    mu = sampler._root_mu(linear, root, item[3], block)
    cells = sampler.cell_of_
    return linear[cells], root[cells], (block[0] / block[2])[cells], mu


def true_root(pool_name, pool, measure, truth) -> np.ndarray | None:
    """The root form with the pool's true probabilities, per item (synthetic pools)."""
    source = pool_name.partition(" ")[0]
    if source not in synthetic.POOLS:
        return None
    p1 = synthetic.make_pool(source)["true_prob"].to_numpy()
    codes = measure.codes(pool)
    jacobian = measure.dense_jacobian(truth)[0]
    u = [measure.loss(codes, np.full(pool.n_pool, y)) @ jacobian for y in (0, 1)]
    return np.sqrt((1 - p1) * u[0] ** 2 + p1 * u[1] ** 2)


def pool_rows(pool_name: str, runs: int, checkpoints) -> pd.DataFrame:
    pool = load(pool_name)
    measure = ec.get_measure("f1")
    truth = ec.true_risk(pool, measure)
    u = measure.loss(measure.codes(pool), pool.y_true) @ measure.dense_jacobian(truth)[0]
    best = true_root(pool_name, pool, measure, truth)
    tail = classifier_logit(pool.prob[:, 1]) < TAIL
    rows = []
    for index in range(runs):
        seed = np.random.SeedSequence(SEED, spawn_key=(index,))
        sampler = ec.make_sampler("ais", pool, measure, seed, root_component=False)
        while sampler.n_labels < max(checkpoints):
            before = sampler.n_labels
            while sampler.n_labels == before:
                sampler.record(pool.y_true[sampler.propose().item])
            if sampler.n_labels not in checkpoints:
                continue
            unlabelled = sampler.labels_ < 0
            own = sampler.pmf()
            linear, root, tree, mu = forms(sampler)
            share = sampler.block_share
            row = {"pool": pool_name, "run": index, "n_labels": sampler.n_labels}
            row["sampler"] = next_term_variance(u, unlabelled, own)
            for mix in MIXES:
                q = (1 - share) * ((1 - mix) * linear + mix * root) + share * tree
                row[f"mu={mix:g}"] = next_term_variance(u, unlabelled, q)
            row["true root"] = np.nan if best is None else next_term_variance(u, unlabelled, best)
            row["mu chosen"] = mu
            row["tail, sampler"] = own[unlabelled & tail].sum() / own[unlabelled].sum()
            row["tail, true root"] = (
                np.nan if best is None else best[unlabelled & tail].sum() / best[unlabelled].sum()
            )
            rows.append(row)
    return pd.DataFrame(rows)


def write_markdown(path: Path, command: str) -> None:
    frame = pd.read_csv(path)
    forms = ["sampler", *(f"mu={mix:g}" for mix in MIXES), "true root"]
    lines = [
        "# Prop. 4's two forms at the linear AIS's stages (F1)",
        "",
        f"Made by `python benchmarks/proposal_forms.py {command}` (the script's docstring says "
        "what each column is). The next Des Raj term's exact variance with the true labels, "
        "the median over the runs; after `sampler`, each form's as a multiple of the "
        "sampler's (the median of the runs' ratios); `mu chosen` (median and range over "
        "the runs) is the root form's share the answers would choose; `tail`: the proposal's "
        f"share below logit p̂ = {TAIL:g} (median), where the pool has items there. A "
        "variance of 0 (to rounding) means every item that can move F1 is labelled, and no "
        "form can differ.",
        "",
        "| pool | labels | runs | sampler | mu=0 | mu=0.5 | mu=1 | true root | mu chosen "
        "| tail: sampler / true root |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (pool_name, n_labels), cell in frame.groupby(["pool", "n_labels"], sort=False):
        settled = cell["sampler"] <= SETTLED * cell["sampler"].abs().max() + 1e-300
        ratios = [
            ""
            if cell[f].isna().all() or settled.all()
            else f"x{np.median(cell[f][~settled] / cell['sampler'][~settled]):.2f}"
            for f in forms[1:]
        ]
        chosen = cell["mu chosen"]
        tails = ""
        if cell["tail, sampler"].max() > 0 or cell["tail, true root"].max() > 0:
            tails = f"{cell['tail, sampler'].median():.3g}"
            if not cell["tail, true root"].isna().all():
                tails += f" / {cell['tail, true root'].median():.3g}"
        variance = max(cell["sampler"].median(), 0.0)
        lines.append(
            f"| {pool_name} | {n_labels} | {len(cell)} | {variance:.3g} | "
            + " | ".join(ratios)
            + f" | {chosen.median():.1f} ({chosen.min():.1f}-{chosen.max():.1f}) | {tails} |"
        )
    path.with_suffix(".md").write_text("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pools", default=",".join(p for p in POOLS if "(true)" not in p))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--labels", default="200,500,1000,2000")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    checkpoints = tuple(int(n) for n in args.labels.split(","))
    command = f"--runs {args.runs} --labels {args.labels}"
    if args.out.resolve() != OUT:
        command += f" --out {resumable.shown(args.out)}"
    for pool_name in args.pools.split(","):
        resumable.save(pool_rows(pool_name, args.runs, checkpoints), args.out, ("pool",))
        write_markdown(args.out, command)
        print(f"{pool_name}: done", flush=True)


if __name__ == "__main__":
    main()
