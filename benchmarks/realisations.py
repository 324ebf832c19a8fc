"""Is the default AIS behind a baseline on a pool because of the sampler or because of the pool?

``default_sampler.py`` compares the samplers on one realisation of each pool: one set of labels.
Where the default is behind there (abt-buy with its calibrated ``prob`` column), the gap may be
how that pool's few hidden false negatives happen to fall, which a sampler tuned to it would
only fit. Here every family of pools is redrawn from its own model, and the samplers are
compared realisation by realisation and on average (the expected MSE over pools drawn from the
family):

* ``abt-buy (prob) relabelled``: abt-buy's scores, predictions and ``prob`` column, with
  labels drawn from ``prob`` (so the probabilities are calibrated by construction);
* ``sharp_calibrated`` and ``over_confident``: ``synthetic.make_pool`` with seeds 1, 2, ...
  (seed 0 is the pool of ``default_sampler.py``).

Samplers: the default (``ais``) and the baselines of ``default_sampler.py`` (ais-block, ais-1,
is); with ``--samplers`` also its candidates, among them ``ais-item``, the default's
item-level model alone (``oracle_model="item"``). F1, seed 2021 for the runs of every
realisation, checkpoints 500 / 1000 / 2000 labels. Each (family, realisation, sampler) is
appended to benchmarks/results/realisations.csv (or ``--out``) as it finishes (``--resume``
skips those done), and the Markdown table beside it is rewritten. Each run is stored in
``<out>_runs.csv`` as it finishes (``default_sampler.runs_for``, the pool named
``"<family> #<realisation>"``), so an interrupted configuration resumes at its next run.

    python benchmarks/realisations.py [--realisations 6 | --which 1,3] [--repeats 25]
        [--jobs 2] [--pools ...] [--samplers ...] [--out F] [--resume]
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

import evalcore as ec

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import default_sampler  # noqa: E402
import label_efficiency  # noqa: E402
import resumable  # noqa: E402
import synthetic  # noqa: E402

OUT = HERE / "results" / "realisations.csv"
FAMILIES = ["abt-buy (prob) relabelled", "sharp_calibrated", "over_confident"]
DEFAULT = "ais"
SAMPLERS, BASELINES = default_sampler.SAMPLERS, default_sampler.BASELINES
CHECKPOINTS = default_sampler.CHECKPOINTS


def make_frame(family: str, realisation: int) -> tuple[pd.DataFrame, str, np.ndarray]:
    """The pool's table, the name of its probability column and each item's true probability
    of being positive (the one its label was drawn from)."""
    if family == "abt-buy (prob) relabelled":
        source, prob = label_efficiency.POOLS["abt-buy (prob)"]
        frame = pd.read_csv(label_efficiency.DATA / source)
        rng = np.random.default_rng(realisation)
        frame["label"] = (rng.random(len(frame)) < frame[prob]).astype(int)
        return frame, prob, frame[prob].to_numpy()
    frame = synthetic.make_pool(family, seed=realisation)
    return frame, "prob", frame["true_prob"].to_numpy()


def make_pool(family: str, realisation: int) -> ec.Pool:
    return pool_from(*make_frame(family, realisation)[:2])


def pool_from(frame: pd.DataFrame, prob: str) -> ec.Pool:
    mapping = ec.ColumnMapping(score="score", id="item_id", pred="pred", label="label", prob=prob)
    return ec.Pool.from_dataframe(frame, mapping)


@functools.cache
def block_over_item(family: str, realisation: int) -> float:
    """How much the best static proposal loses by being constant within blocks: with every
    item's true probability p, F1's u = Dg(R) l(x, y) at the true R and v(x) = E[u^2 | x], the
    variance per draw of the best proposal at item level is (sum_x sqrt(v(x)))^2 (seed 003,
    Prop. 4, with replacement) and of the best one constant on each of the 256 CSF blocks
    (sum_k n_k sqrt(mean_k v))^2; their ratio, at least 1 by Jensen's inequality."""
    frame, prob, truth = make_frame(family, realisation)
    pool = pool_from(frame, prob)
    measure = ec.get_measure("f1")
    jacobian = measure.jacobian(ec.true_risk(pool, measure))[0]  # (d,)
    codes = measure.codes(pool)
    u = np.stack([measure.loss(codes, np.full(pool.n_pool, y)) @ jacobian for y in (0, 1)], axis=1)
    v = (1 - truth) * u[:, 0] ** 2 + truth * u[:, 1] ** 2
    block = ec.partition_pool(pool).block
    size = np.bincount(block)
    mean = np.bincount(block, weights=v) / np.maximum(size, 1)
    return float((size @ np.sqrt(mean)) ** 2 / np.sqrt(v).sum() ** 2)


RARE = 0.01  # false negatives at a true probability below this are the ones hard to find


@functools.cache
def rare_false_negatives(family: str, realisation: int) -> tuple[float, int]:
    """Among the predicted negatives whose true probability is below ``RARE``: the positives
    the true probabilities expect, and those the pool has."""
    frame, _, truth = make_frame(family, realisation)
    rare = (frame["pred"].to_numpy() == 0) & (truth < RARE)
    return float(truth[rare].sum()), int(frame["label"].to_numpy()[rare].sum())


def rows_for(family, realisation, pool, name, repeats, jobs, path: Path):
    """``default_sampler.rows_for``'s rows, with the realisation and its pool's counts; the
    runs are stored in ``path`` under the pool name ``"<family> #<realisation>"``, so the
    realisations of a family keep their runs apart."""
    counts = {
        "pool": family,
        "realisation": realisation,
        "positives": int(pool.y_true.sum()),
        "false_negatives": int(((pool.y_true == 1) & (pool.y_pred == 0)).sum()),
    }
    stored_as = f"{family} #{realisation}"
    rows = default_sampler.rows_for(stored_as, pool, name, repeats, jobs, path)
    return [{**row, **counts} for row in rows]


def ratio_of_means_interval(mse: pd.DataFrame, name: str, baselines: list[str]):
    """95% bootstrap interval of ``name``'s mean MSE over the least of the ``baselines``'
    mean MSEs, ``mse`` (realisations, samplers): the realisations resampled (2,000 times,
    seed 0), as a pool drawn from the family is."""
    rng = np.random.default_rng(0)
    picks = rng.integers(len(mse), size=(2000, len(mse)))
    means = {column: mse[column].to_numpy()[picks].mean(axis=1) for column in mse}
    ratio = means[name] / np.min([means[b] for b in baselines], axis=0)
    return np.quantile(ratio, [0.025, 0.975])


def write_markdown(path: Path = OUT) -> None:
    table = pd.read_csv(path)
    command_out = "" if path.resolve() == OUT else f" --out {resumable.shown(path)}"
    lines = [
        "# The default AIS on redrawn pools (F1)",
        "",
        f"Made by `python benchmarks/realisations.py{command_out}` (the script's docstring "
        "says how each family is redrawn). Per family and budget: each sampler's MSE averaged "
        "over the realisations (the expected MSE over pools of the family), then for the "
        "default (`ais`) the ratio of its average to the best baseline's average (of "
        "ais-block, ais-1 and is) with a 95% bootstrap interval over the realisations, the "
        "geometric mean over realisations of its ratio to that "
        "realisation's best baseline, and on how many realisations it is at or below that "
        "best. Coverage and median width are averaged over the realisations.",
        "",
    ]
    for family in FAMILIES:
        part = table[table.pool == family]
        if part.empty:
            continue
        lines += [f"## {family}", ""]
        realisations = sorted(part.realisation.unique())
        counts = part.drop_duplicates("realisation")[["positives", "false_negatives"]]
        ratios = [block_over_item(family, int(r)) for r in realisations]
        lines += [
            f"Realisations {', '.join(map(str, realisations))}; positives "
            f"{counts.positives.min()}-{counts.positives.max()}, false negatives "
            f"{counts.false_negatives.min()}-{counts.false_negatives.max()}. With the true "
            "probabilities the best static proposal constant on each of the 256 CSF blocks has "
            f"{min(ratios):.3f}-{max(ratios):.3f} times the variance per draw of the best one "
            "item by item (`block_over_item`).",
            "",
            "| labels | sampler | realisations | runs each | mean MSE | coverage | median width "
            "| ratio of means | geometric mean ratio | at or below the best |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for labels in CHECKPOINTS:
            at = part[part.n_labels == labels]
            wide = at.pivot(index="realisation", columns="sampler", values="mse")
            complete = wide[[c for c in (DEFAULT, *BASELINES) if c in wide]].dropna()
            for name in sorted(at.sampler.unique()):
                rows = at[at.sampler == name]
                cells = ["", "", ""]
                baselines = [b for b in BASELINES if b in complete]
                if name == DEFAULT and baselines and len(complete):
                    best = complete[baselines].min(axis=1)
                    best_mean = complete[baselines].mean().min()
                    ratio = complete[name] / best
                    low, high = ratio_of_means_interval(complete, name, baselines)
                    cells = [
                        f"{complete[name].mean() / best_mean:.2f} ({low:.2f}-{high:.2f})",
                        f"{np.exp(np.log(ratio).mean()):.2f}",
                        f"{int((ratio <= 1).sum())} of {len(ratio)}",
                    ]
                lines.append(
                    f"| {labels} | {name} | {len(rows)} | {rows.repeats.min()} "
                    f"| {rows.mse.mean():.2e} | {rows.coverage.mean():.2f} "
                    f"| {rows.width.mean():.3f} | " + " | ".join(cells) + " |"
                )
        names = sorted(part.sampler.unique())
        lines += [
            "",
            "Coverage per realisation at " + " / ".join(map(str, CHECKPOINTS)) + " labels, "
            f"beside the pool's false negatives at a true probability below {RARE}: as many "
            "as its true probabilities expect, and as many as it has (an interval that leans "
            "on calibrated probabilities is short where a pool holds more than they expect).",
            "",
            "| realisation | rare false negatives expected | rare false negatives | "
            + " | ".join(names)
            + " |",
            "|---|---|---|" + "---|" * len(names),
        ]
        for realisation in realisations:
            own = part[part.realisation == realisation]
            cells = []
            for name in names:
                rows = own[own.sampler == name].sort_values("n_labels")
                cells.append(" / ".join(f"{c:.2f}" for c in rows.coverage))
            expected, actual = rare_false_negatives(family, int(realisation))
            lines.append(
                f"| {realisation} | {expected:.1f} | {actual} | " + " | ".join(cells) + " |"
            )
        lines.append("")
    path.with_suffix(".md").write_text("\n".join(lines))


def which_realisations(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--realisations", type=int, default=6, help="realisations 1..K")
    parser.add_argument("--which", help="comma-separated realisations instead of 1..K")


def main() -> None:
    args = resumable.parse(__doc__.splitlines()[0], 25, OUT, which_realisations)
    families = args.pools.split(",") if args.pools else FAMILIES
    which = [int(r) for r in args.which.split(",")] if args.which else None
    which = which or list(range(1, args.realisations + 1))
    samplers = args.samplers.split(",") if args.samplers else [DEFAULT, *BASELINES]
    runs = default_sampler.runs_path(args.out)
    done = set()
    if args.resume and args.out.exists():
        old = pd.read_csv(args.out)
        done = set(old[["pool", "realisation", "sampler"]].itertuples(index=False))
    for family in families:
        for realisation in which:
            pool = None
            for name in samplers:
                if (family, realisation, name) in done:
                    continue
                if pool is None:
                    pool = make_pool(family, realisation)
                start = time.perf_counter()
                rows = pd.DataFrame(
                    rows_for(family, realisation, pool, name, args.repeats, args.jobs, runs)
                )
                if args.out.exists():
                    old = pd.read_csv(args.out)
                    keep = ~(
                        (old.pool == family)
                        & (old.realisation == realisation)
                        & (old.sampler == name)
                    )
                    rows = pd.concat([old[keep], rows], ignore_index=True)
                rows.to_csv(args.out, index=False)
                for row in rows.tail(len(CHECKPOINTS)).to_dict("records"):
                    print(json.dumps(row), flush=True)
                elapsed = time.perf_counter() - start
                print(f"# {family} {realisation} {name}: {elapsed:.0f} s", flush=True)
                write_markdown(args.out)


if __name__ == "__main__":
    main()
