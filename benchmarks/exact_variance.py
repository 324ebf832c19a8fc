"""The F1 error an AIS run can expect, from the exact variance of each of its stages (F1).

A run's error is a rare find's luck as much as its proposal's quality: 100 runs of the
default AIS on abt-buy (`prob`) at 2000 labels measure its MSE to about +-25%, and the
comparisons of issue 13 hinge on less than that. Here the luck of each draw is averaged out
exactly, with the pool's true labels. Before the s-th new item is drawn, from the proposal
restricted to the unlabelled items U_s, q'_s, the projected Des Raj term
t_s = Dg(R) (z_s - R) (``estimators.estimate_is_rao_blackwellised``, R the truth) has mean 0
and variance

    sigma_s^2 = (sum_{x in U_s} u(x)^2 / q'_s(x) - S_s^2) / N^2,    u(x) = Dg(R) l(x, y(x)),

S_s the sum of u over the items labelled before (F1 is homogeneous of degree 0, so
Dg(R) R = 0 and sum_x u(x) = 0). The t_s are martingale differences with predictable
weights a_s rho_s, so the weighted mean's linearised error has variance

    E[ sum_s (a_s rho_s)^2 sigma_s^2 / (sum_s a_s rho_s)^2 ],

estimated by its mean over runs: what is left random is the path (which items were found
when), not the draw at each stage. A term's share of the error is capped at the largest error
the estimate can make, c = max(G - low, high - G) for G the truth in the measure's range
[low, high]: E_s[min(v_s^2 t_s^2, c^2)] with v_s = a_s rho_s / sum_r a_r rho_r in place
of v_s^2 sigma_s^2: early in a session the default's proposal gives a false negative at p̂ 4e-4
a twentieth of the uniform mass, and the uncapped variance counts its find, some 1e-4 likely
by 100 labels, as an F1 error of hundreds where the estimate's bounds hold it to less than
one (``estimators._with_model``). ``plain``: rho_s = 1; ``weighted``: rho_s the stage
weights the estimate chose at that budget (``estimators.stage_weights``, at the plain
terms' R; the control variates are left out, within 3% of the MSE on abt-buy, README). The
realised squared errors of the same runs are printed beside it: of the plain and weighted
means, and of the estimate the app shows (``ec.estimate``). ``by stage`` splits each weighted
figure into the shares of stages 0-200, 200-500, 500-1000 and 1000-2000. Checked once by a
one-off script: over 60 stages of a default session on rare_calibrated, the term each draw
realised is a value of the law recorded before it, at the item drawn. Run i uses seed
2021 + i, as in default_sampler.py. A pool is one of default_sampler.py's, or a realisation
of a family of realisations.py, named as its runs are stored there ("<family> #<k>", e.g.
"abt-buy (prob) relabelled #18"). Written to
benchmarks/results/exact_variance.{csv,md}, each (pool, sampler) as it finishes.

    python benchmarks/exact_variance.py [--pools "abt-buy (prob)"] [--samplers ais,ais-block]
        [--runs 20] [--labels 500,1000,2000] [--out FILE]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

import evalcore as ec
from evalcore import estimators

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import realisations  # noqa: E402
import resumable  # noqa: E402
from default_sampler import SAMPLERS, load  # noqa: E402

OUT = HERE / "results" / "exact_variance.csv"
STAGE_RANGES = ((0, 200), (200, 500), (500, 1000), (1000, 2000))


def stage_terms(sampler, u: np.ndarray, n_labels: int, checkpoints, on_checkpoint) -> None:
    """Label to ``n_labels`` with the true labels. Before each new item's draw, record the
    law of its projected term t_s over the unlabelled items: the restricted proposal's mass
    and t_s at each item whose u is not 0, and the mass of the others with their common
    t_s = S_s / N. Calls ``on_checkpoint(sampler, stages)`` at each budget."""
    pool = sampler.pool
    n = pool.n_pool
    stages = []
    while sampler.n_labels < n_labels:
        unlabelled = sampler.labels_ < 0
        q = sampler.pmf()[unlabelled]
        restricted = q / q.sum()
        known = u[~unlabelled].sum()
        moving = u[unlabelled] != 0
        mass = restricted[moving]
        term = (known + u[unlabelled][moving] / mass) / n
        stages.append((mass, term, 1.0 - mass.sum(), known / n))
        before = sampler.n_labels
        while sampler.n_labels == before:
            sampler.record(pool.y_true[sampler.propose().item])
        if sampler.n_labels in checkpoints:
            on_checkpoint(sampler, stages)


def capped_variances(stages, share: np.ndarray, cap: float) -> np.ndarray:
    """E_s[min(v_s^2 t_s^2, cap)] per stage, v_s = ``share`` (the stage's weight over the
    weights' sum)."""
    return np.array(
        [
            mass @ np.minimum((v * term) ** 2, cap) + rest * min((v * common) ** 2, cap)
            for (mass, term, rest, common), v in zip(stages, share, strict=True)
        ]
    )


def one_run(pool, measure, truth, u, name, seed, checkpoints) -> list[dict]:
    kind, options = SAMPLERS[name]
    sampler = ec.make_sampler(kind, pool, measure, seed, **options)
    jacobian = measure.dense_jacobian(truth)[0]
    value, (low, high) = measure.g(truth)[0], measure.value_range
    cap = max(value - low, high - value) ** 2
    rows = []

    def on_checkpoint(sampler, stages):
        items, weight, share = sampler.first_draws()
        losses = measure.loss(sampler.codes_[items], sampler.labels_[items])
        terms, a = estimators.rao_blackwell_terms(losses, weight, share, pool.n_pool)
        projected = (terms - truth) @ jacobian
        rho = estimators.stage_weights(sampler, measure, a @ terms / a.sum())
        rho = np.ones(len(a)) if rho is None else rho
        row = {"sampler": name, "seed": seed, "n_labels": sampler.n_labels}
        for label, weights in (("plain", a), ("weighted", a * rho)):
            total = weights.sum()
            parts = capped_variances(stages, weights / total, cap)
            row[f"expected_{label}"] = float(parts.sum())
            row[f"error_{label}"] = float(weights @ projected / total)
            for low, high in STAGE_RANGES:
                row[f"{label}_{low}_{high}"] = float(parts[low:high].sum())
        shown = ec.estimate(sampler)
        row["error_estimate"] = float(shown.value[0] - measure.g(truth)[0])
        rows.append(row)

    stage_terms(sampler, u, max(checkpoints), set(checkpoints), on_checkpoint)
    return rows


def load_pool(name: str) -> ec.Pool:
    """default_sampler.py's pool ``name``, or realisation k of a family of realisations.py
    where ``name`` is "<family> #<k>"."""
    family, marker, realisation = name.rpartition(" #")
    if marker and family in realisations.FAMILIES:
        return realisations.make_pool(family, int(realisation))
    return load(name)


def configuration_rows(pool_name, name, runs, checkpoints) -> pd.DataFrame:
    pool = load_pool(pool_name)
    measure = ec.get_measure("f1")
    truth = ec.true_risk(pool, measure)
    codes = measure.codes(pool)
    u = measure.loss(codes, pool.y_true) @ measure.dense_jacobian(truth)[0]
    rows = []
    for i in range(runs):
        rows += one_run(pool, measure, truth, u, name, 2021 + i, checkpoints)
    frame = pd.DataFrame(rows)
    frame.insert(0, "pool", pool_name)
    return frame


def bootstrap(values: np.ndarray, rng) -> tuple[float, float]:
    means = rng.choice(values, (2000, len(values))).mean(axis=1)
    return float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))


def write_markdown(path: Path, command: str) -> None:
    frame = pd.read_csv(path)
    rng = np.random.default_rng(0)
    lines = [
        "# The F1 error AIS runs can expect, from the exact variance of their stages",
        "",
        f"Made by `python benchmarks/exact_variance.py {command}` (run i: seed 2021 + i; the "
        "script's docstring says what each column is). `expected`: the mean over runs of "
        "sum_s (a_s rho_s)^2 sigma_s^2 / (sum_s a_s rho_s)^2, with a 95% bootstrap interval "
        "over the runs; `realised`: the mean squared linearised error of the same runs; "
        "`shown`: the squared error of the estimate the app shows. `by stage`: the weighted "
        "figure's shares of stages 0-200 / 200-500 / 500-1000 / 1000-2000.",
        "",
    ]
    for pool_name, by_pool in frame.groupby("pool", sort=False):
        lines += [
            f"## {pool_name}",
            "",
            "| sampler | labels | runs | expected, plain | expected, weighted | realised, "
            "plain / weighted | shown | by stage |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for (name, n_labels), cell in by_pool.groupby(["sampler", "n_labels"], sort=False):
            low, high = bootstrap(cell["expected_weighted"].to_numpy(), rng)
            parts = [cell[f"weighted_{a}_{b}"].mean() for a, b in STAGE_RANGES if a < n_labels]
            shares = " / ".join(f"{p / cell['expected_weighted'].mean():.2f}" for p in parts)
            lines.append(
                f"| {name} | {n_labels} | {len(cell)} | {cell['expected_plain'].mean():.2e} "
                f"| {cell['expected_weighted'].mean():.2e} ({low:.2e}-{high:.2e}) "
                f"| {np.mean(cell['error_plain'] ** 2):.2e} / "
                f"{np.mean(cell['error_weighted'] ** 2):.2e} "
                f"| {np.mean(cell['error_estimate'] ** 2):.2e} | {shares} |"
            )
        lines.append("")
    path.with_suffix(".md").write_text("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pools", default="abt-buy (prob)")
    parser.add_argument("--samplers", default="ais,ais-block")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--labels", default="500,1000,2000")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    checkpoints = tuple(int(n) for n in args.labels.split(","))
    command = (
        f'--pools "{args.pools}" --samplers {args.samplers} --runs {args.runs} '
        f"--labels {args.labels}"
    )
    if args.out.resolve() != OUT:
        command += f" --out {resumable.shown(args.out)}"
    for pool_name in args.pools.split(","):
        for name in args.samplers.split(","):
            resumable.save(configuration_rows(pool_name, name, args.runs, checkpoints), args.out)
            write_markdown(args.out, command)
            print(f"{pool_name} {name}: done", flush=True)


if __name__ == "__main__":
    main()
