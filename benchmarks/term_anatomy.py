"""Which answers make the default AIS's error on a pool: the terms of Des Raj's average that move
its F1 estimate most, run by run, beside those of the default before 2026-11-26
(``ais-adaptive``: the depth-8 tree in the mixture, its share chosen after every answer) and
of the block-level AIS on the same seeds.

The estimate is R = sum_s a_s z_s / sum_s a_s (``estimators.estimate_is_rao_blackwellised``),
so its error is sum_s a_s (z_s - R) / sum_s a_s. Projected on Dg at the true R, each term's share
of the F1 error is Dg(R) a_s (z_s - R) / sum_s a_s (the plain terms: without stage weights or
control variates, which change little where the error is a rare find, README). For every run
the script lists the three terms with the largest share: the item it found, its label, p̂, the
importance weight w = p / q of the draw, the proposal's mass q(L) on the labelled items then,
and the share. Run i uses seed 2021 + i. Written to benchmarks/results/term_anatomy.md.

    python benchmarks/term_anatomy.py [--pool "abt-buy (prob)"] [--runs 16] [--labels 1000]
        [--samplers ais,ais-adaptive,ais-block] [--out FILE]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

import evalcore as ec
from evalcore import estimators

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import resumable  # noqa: E402
from default_sampler import ADAPTIVE, load  # noqa: E402

OUT = HERE / "results" / "term_anatomy.md"
SAMPLERS = {"ais": {}, "ais-adaptive": ADAPTIVE, "ais-block": {"oracle_model": "block"}}
TOP = 3


def plain_terms(pool, measure, seed, n_labels, options=None):
    """An AIS run to ``n_labels`` labels with the true labels, and its Des Raj terms:
    (sampler, items, weight, share, z (n, d), a (n,)) of ``first_draws`` and
    ``estimators.rao_blackwell_terms``."""
    sampler = ec.make_sampler("ais", pool, measure, seed, **(options or {}))
    while sampler.n_labels < n_labels:
        sampler.record(pool.y_true[sampler.propose().item])
    items, weight, share = sampler.first_draws()
    losses = measure.loss(sampler.codes_[items], sampler.labels_[items])
    terms, a = estimators.rao_blackwell_terms(losses, weight, share, pool.n_pool)
    return sampler, items, weight, share, terms, a


def largest_terms(pool, measure, truth, seed, n_labels, options) -> tuple[float, list[str]]:
    """The run's F1 error (linearised) and its ``TOP`` terms, as table cells."""
    _, items, weight, share, terms, a = plain_terms(pool, measure, seed, n_labels, options)
    jacobian = measure.dense_jacobian(truth)
    contribution = (a[:, None] * (terms - truth)) @ jacobian[0] / a.sum()
    cells = []
    for stage in np.argsort(-np.abs(contribution))[:TOP]:
        item = items[stage]
        cells.append(
            f"stage {stage}: y {pool.y_true[item]}, p̂ {pool.prob[item, 1]:.1e}, "
            f"w {weight[stage]:.2f}, q(L) {share[stage]:.2f}, {contribution[stage]:+.3f}"
        )
    return float(contribution.sum()), cells


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pool", default="abt-buy (prob)")
    parser.add_argument("--runs", type=int, default=16)
    parser.add_argument("--labels", type=int, default=1000)
    parser.add_argument("--samplers", default=",".join(SAMPLERS))
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    names = args.samplers.split(",")
    out = args.out.resolve()
    command = f'--pool "{args.pool}" --runs {args.runs} --labels {args.labels}'
    if names != list(SAMPLERS):
        command += f" --samplers {args.samplers}"
    if out != OUT:
        command += f" --out {resumable.shown(out)}"
    pool, measure = load(args.pool), ec.get_measure("f1")
    truth = ec.true_risk(pool, measure)
    lines = [
        f"# The terms that make the F1 error: {args.pool}, {args.labels} labels",
        "",
        f"Made by `python benchmarks/term_anatomy.py {command}` (run i: seed 2021 + i). "
        "`error`: the run's F1 error, "
        "linearised at the truth (plain terms). Each cell: the term's stage, its item's label "
        "and p̂, the draw's weight w = p / q, the proposal's mass q(L) on the labelled items "
        "then, and the term's share of the error.",
        "",
        "| run | sampler | error | largest term | second | third |",
        "|---|---|---|---|---|---|",
    ]
    squared = {name: [] for name in names}
    for run in range(args.runs):
        for name in names:
            error, cells = largest_terms(
                pool, measure, truth, 2021 + run, args.labels, SAMPLERS[name]
            )
            squared[name].append(error**2)
            row = f"| {run} | {name} | {error:+.3f} | " + " | ".join(cells) + " |"
            lines.append(row)
            print(row, flush=True)
    lines += ["", "Mean squared error (linearised, plain terms) over the runs:", ""]
    lines += [f"- {name}: {np.mean(values):.2e}" for name, values in squared.items()]
    out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
