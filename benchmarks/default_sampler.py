"""Is the default AIS at or below the best of {block-level AIS, ais-1, static IS} (issue 13)?

F1 MSE (95% bootstrap interval), coverage and median interval width at 500, 1000 and 2000
labels, seed 003's setup (2^8 CSF blocks, deterministic oracle, seed 2021), on the real pools
(abt-buy with its probability column and with expit(score), tweets100k with expit(score)) and
on the synthetic pools of benchmarks/synthetic.py (sharp_calibrated: calibrated, sharp, a few
false negatives at moderate probability; over_confident: probabilities far too sure; and, for
reference, "over_confident (true)": the same pool, ranking and predictions with the
probabilities its labels were drawn from, what a calibrated classifier would report; and
rare_calibrated: rare positives, calibrated probabilities).
Samplers:

* ``ais``: the default, AIS on a mixture of the item-level and block-level proposals, the
  block-level one on seed 003's one-level tree of the 256 leaves (``flat_tree``), at a fixed
  share of 0.1 (``block_share``), the item-level model averaged with the identity map by the
  evidence (``oracle.ItemLevelModel``), the item-level component kept to its floor where one
  find would carry the estimate past F1's range (``bound_find_effect``), the recalibrated
  map's block intercepts integrated out (``integrate_offsets="recalibrated"``, since
  2026-11-27), their sd fitted by empirical Bayes in the blocks with answers and the
  prior's in the others (``fit_block_sd="recalibrated"``, ``unanswered_sd="prior"``, since
  2026-11-28; its rows were ``ais-split``'s, a candidate, until then); its rows before
  2026-11-26 were those of ``ais-flat-0.1``, a candidate then;
* ``ais-prior-sd``: the default before 2026-11-28, the block intercepts' sd at the
  prior's everywhere; its rows were ``ais``'s then;
* ``ais-map``: the default before 2026-11-27, the item-level model read at its MAP
  (``integrate_offsets="none"``); its rows were ``ais``'s then, and the candidates below
  were measured with it;
* ``ais-unbounded``: the default without ``bound_find_effect``, the default earlier on
  2026-11-26 (its rows were ``ais``'s then, measured before the control variates were
  dropped where they carry F1 out of [0, 1], ``estimators._within_range``);
* ``ais-adaptive``: the default before 2026-11-26, the depth-8 binary tree in the mixture
  and its share chosen after every answer (``AISSampler._block_share``); variants of it
  measured earlier (the recalibration's MAP alone; a fixed share of one half; the item-level
  model alone) are in this file's history;
* candidates measured against it and not adopted (README, issue 13), each with its
  options: ``ais-cap``, the tree's share capped at w (``cap_block_share``); ``ais-next``,
  the share chosen by the next Des Raj term's estimated second moment
  (``share_criterion="next_term"``); ``ais-sd6``, the item-level model's block intercepts
  with prior sd 6 instead of 1 (``block_sd``), and ``ais-next-sd6`` both; ``ais-flat``, the
  one-level tree in place of the depth-8 one, its share still chosen after every answer
  (it goes to 0.9), and ``ais-flat-sd6`` with the block intercepts' prior sd 6 too;
  ``ais-item``, the item-level model alone, without the tree (measured on redrawn pools by
  ``realisations.py``); ``ais-plain``, ``ais-adaptive`` without the item-level model's
  predictions as control variates (``control_variate=False``: the same draws, Des Raj's
  terms alone, as the default estimated before);
* ``ais-offsets``: the default with both maps' block intercepts integrated out
  (``integrate_offsets="both"``), a candidate (2026-11-27; its rows are in
  default_sampler_offsets.csv beside ``ais-map``'s and ``ais``'s);
* ``ais-eb``: ``ais-prior-sd`` with the item-level model's block intercepts' sd fitted by
  empirical Bayes for both maps (``fit_block_sd="both"``), a candidate (2026-11-27), and
  ``ais-eb1`` for the recalibrated map alone, whose intercepts are integrated out
  (``fit_block_sd="recalibrated"``; 2026-11-28), both with the fitted sd in the blocks
  without answers too; ``ais-split-w``, the default with the maps weighed at the prior's
  sd (``weight_at_block_sd=True``; 2026-11-28);
* ``ais-deep``: the default with the depth-8 binary tree in the mixture in place of the
  one-level one, at the same fixed share (``flat_tree=False``), a candidate (2026-11-28,
  stop 57; screened by exact_variance.py);
* ``ais-block``: seed 003's block-level Dirichlet-tree AIS (the default before issue 13);
* ``ais-1`` and ``is``: as in the app.

Every sampler runs here on every pool with the same seed, so the rows are side by side. Each
configuration's rows replace its earlier ones in benchmarks/results/default_sampler.csv as
soon as it finishes (``--resume`` skips those done); the Markdown table compares ``ais``
(and the candidates above) with the best of ais-block, ais-1 and is. Where this script has not run
a baseline on a real pool yet, the table falls back to label_efficiency.csv's row (the same
setup, older code), marked.

    python benchmarks/default_sampler.py [--repeats 50] [--jobs 2] [--pools ...]
        [--samplers ...] [--resume]
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

import pandas as pd

import evalcore as ec

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import label_efficiency  # noqa: E402
import resumable  # noqa: E402
import synthetic  # noqa: E402

OUT = HERE / "results" / "default_sampler.csv"
POOLS = ["over_confident (prob)", "over_confident (true)", "sharp_calibrated (prob)"]
POOLS += ["abt-buy (prob)", "abt-buy", "tweets100k", "rare_calibrated (prob)"]
# the default before 2026-11-26: the depth-8 tree in the mixture, its share chosen after
# every answer (AISSampler._block_share); the candidates below measured against it keep it
# and every candidate measured before 2026-11-27 read the item-level model at its MAP,
# and every candidate measured before 2026-11-28 had the block intercepts' sd at the prior's
PRIOR_SD = {"fit_block_sd": "none", "unanswered_sd": "fitted"}
MAP = {"integrate_offsets": "none", **PRIOR_SD}
ADAPTIVE = {"flat_tree": False, "block_share": None, **MAP}
SAMPLERS = {  # name in the table: (sampler, options)
    "ais": ("ais", {}),
    "ais-prior-sd": ("ais", PRIOR_SD),
    "ais-map": ("ais", MAP),
    "ais-adaptive": ("ais", ADAPTIVE),
    "ais-plain": ("ais", {**ADAPTIVE, "control_variate": False}),
    "ais-cap": ("ais", {**ADAPTIVE, "cap_block_share": True}),
    "ais-next": ("ais", {**ADAPTIVE, "share_criterion": "next_term"}),
    "ais-next-sd6": ("ais", {**ADAPTIVE, "share_criterion": "next_term", "block_sd": 6.0}),
    "ais-sd6": ("ais", {**ADAPTIVE, "block_sd": 6.0}),
    "ais-flat": ("ais", {"block_share": None, **MAP}),
    "ais-flat-sd6": ("ais", {"block_share": None, "block_sd": 6.0, **MAP}),
    "ais-item": ("ais", {"oracle_model": "item", **MAP}),
    "ais-unbounded": ("ais", {"bound_find_effect": False, **MAP}),
    "ais-offsets": ("ais", {"integrate_offsets": "both", **PRIOR_SD}),
    "ais-eb": ("ais", {**PRIOR_SD, "fit_block_sd": "both"}),
    "ais-eb1": ("ais", {**PRIOR_SD, "fit_block_sd": "recalibrated"}),
    "ais-split-w": ("ais", {"weight_at_block_sd": True}),
    "ais-deep": ("ais", {"flat_tree": False}),
    "ais-block": ("ais", {"oracle_model": "block"}),
    "ais-1": ("ais-1", {}),
    "is": ("is", {}),
}
BASELINES = ("ais-block", "ais-1", "is")
# rows given a ratio to the best baseline
CANDIDATES = ("ais", "ais-adaptive", "ais-cap", "ais-next", "ais-next-sd6", "ais-sd6")
CANDIDATES += ("ais-flat", "ais-flat-sd6", "ais-item", "ais-plain", "ais-unbounded", "ais-offsets")
CANDIDATES += ("ais-prior-sd", "ais-map", "ais-eb", "ais-eb1", "ais-split-w", "ais-deep")
CHECKPOINTS = (500, 1000, 2000)


def load(name: str) -> ec.Pool:
    if name in label_efficiency.POOLS:
        return label_efficiency.load(name)
    source, _, variant = name.partition(" ")
    frame = synthetic.make_pool(source)
    prob = "true_prob" if variant == "(true)" else "prob"
    mapping = ec.ColumnMapping(score="score", id="item_id", pred="pred", label="label", prob=prob)
    return ec.Pool.from_dataframe(frame, mapping)


def rows_for(pool_name, pool, name, repeats, jobs):
    sampler, options = SAMPLERS[name]
    result = ec.simulate(  # estimates read at the checkpoints only (they draw no numbers)
        pool,
        "f1",
        sampler,
        max(CHECKPOINTS),
        repeats,
        seed=2021,
        jobs=jobs,
        options=options,
        record_every=math.gcd(*CHECKPOINTS),
    )
    summary = result.summary()
    rows = []
    for labels in CHECKPOINTS:
        row = summary[summary.n_labels == labels].iloc[0]
        rows.append(
            {
                "pool": pool_name,
                "sampler": name,
                "n_labels": labels,
                "repeats": repeats,
                **{k: row[k] for k in ("mse", "mse_low", "mse_high", "coverage", "width")},
                "seconds": round(result.seconds, 1),
            }
        )
    return rows


def label_efficiency_rows() -> pd.DataFrame:
    """The real pools' baselines from label_efficiency.csv (block-level AIS is its ``ais``):
    the fallback for those this script has not run."""
    table = pd.read_csv(label_efficiency.OUT)
    table = table[(table.measure == "f1") & table.n_labels.isin(CHECKPOINTS)]
    table = table[table.sampler.isin(["ais", "ais-1", "is"])].copy()
    table["sampler"] = table.sampler.replace({"ais": "ais-block"})
    table["source"] = "label_efficiency.csv"
    return table[
        ["pool", "sampler", "n_labels", "repeats", "mse", "mse_low", "mse_high"]
        + ["coverage", "width", "seconds", "source"]
    ]


def write_markdown(path: Path = OUT) -> None:
    """``path``'s table as Markdown beside it; the main results file falls back to
    label_efficiency.csv's baselines, another ``--out`` file (e.g. a rerun with more
    repeats) compares only with the baselines it holds."""
    path = path.resolve()
    table = pd.read_csv(path)
    table["source"] = "this script"
    if path == OUT:
        fallback = label_efficiency_rows()
        ran = pd.MultiIndex.from_frame(table[["pool", "sampler"]])
        fallback = fallback[~pd.MultiIndex.from_frame(fallback[["pool", "sampler"]]).isin(ran)]
        table = pd.concat([table, fallback], ignore_index=True)
    table = table[table.pool.isin(POOLS)]
    command_out = "" if path == OUT else f" --out {resumable.shown(path)}"
    fallback_note = (
        "Rows marked * are label_efficiency.csv's (same setup, 100 runs, older code: seed "
        "003's eq. 1 and the intervals before issue 9), used where this script has not run "
        "that baseline yet."
        if path == OUT
        else "Only the baselines run into this file are compared."
    )
    lines = [
        "# The default AIS against the best of the others (F1)",
        "",
        f"Made by `python benchmarks/default_sampler.py{command_out}` (seeded, seed 2021; every "
        "sampler on every",
        "pool with the same seed, side by side). `ratio` is the MSE of the default (and of",
        "its variants, the script's docstring) over the lowest MSE",
        "of ais-block, ais-1 and is at the same budget (below 1: the default is better; target: at",
        "most 1 everywhere, at most 0.8 on half). With a deterministic oracle, passive, static IS",
        "and AIS estimate with repeated draws of labelled items replaced by their expectation",
        "(README, departures from the papers).",
        fallback_note,
        "On over_confident the rows of",
        "ais-cap, ais-next, ais-sd6 and ais-next-sd6 were measured with logit p̂ clipped at",
        "1e-9 (README, the item-level model) and await a rerun. The default (`ais`) mixes the",
        "item-level proposal with the one-level tree's at a fixed share of 0.1 since",
        "2026-11-26, the item-level one kept to its floor where one find would carry F1 past",
        "its range (`bound_find_effect`; `ais-unbounded` is the default without it, whose rows",
        "predate the control variates' range guard, README), and since 2026-11-27 the",
        "recalibrated map's block intercepts integrated out (`integrate_offsets`; `ais-map` is",
        "the default before, the item-level model at its MAP: the rows of `ais` until then,",
        "where this file has no `ais` rows yet the default awaits a rerun here), and since",
        "2026-11-28 their sd fitted in the blocks with answers (`fit_block_sd`,",
        "`unanswered_sd`; `ais-prior-sd` is the default before, whose rows were `ais`'s,",
        "and the rows of `ais` were `ais-split`'s, a candidate, until then);",
        "`ais-adaptive` is the default before 2026-11-26 (the depth-8 tree, its share chosen",
        "after every answer), and the candidates below it were measured against it. Both add",
        "the item-level model's predictions as control variates (README, departures from the",
        "papers); `ais-plain` is `ais-adaptive`'s draws without them (the control variates do",
        "not change the draws, a test checks it). The other candidates were measured without",
        "them.",
        "",
    ]
    for pool_name in [name for name in POOLS if name in set(table.pool)]:
        group = table[table.pool == pool_name]
        lines += [
            f"## {pool_name}",
            "",
            "| sampler | labels | repeats | MSE | 95% CI | coverage | median width | ratio |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for row in group.sort_values(["n_labels", "sampler"]).itertuples():
            others = group[(group.n_labels == row.n_labels) & group.sampler.isin(BASELINES)]
            ratio = ""
            if row.sampler in CANDIDATES and len(others):
                best = others.loc[others.mse.idxmin()]
                ratio = row.mse / best.mse
                ratio = f"{ratio:.2f}" if ratio >= 0.01 else f"{ratio:.1e}"
                ratio += f" (vs {best.sampler})"
            width = "" if pd.isna(row.width) else f"{row.width:.3f}"
            mark = "*" if row.source != "this script" else ""
            lines.append(
                f"| {row.sampler}{mark} | {row.n_labels} | {row.repeats} | {row.mse:.2e} | "
                f"{row.mse_low:.2e}-{row.mse_high:.2e} | {row.coverage:.2f} | "
                f"{width} | {ratio} |"
            )
        lines.append("")
    path.with_suffix(".md").write_text("\n".join(lines))


def main() -> None:
    args = resumable.parse(__doc__.splitlines()[0], 50, OUT)
    pools = args.pools.split(",") if args.pools else POOLS
    samplers = args.samplers.split(",") if args.samplers else list(SAMPLERS)
    done = resumable.done(args)
    for pool_name in pools:
        pool = None
        for name in samplers:
            if (pool_name, name) in done:
                continue
            pool = pool or load(pool_name)
            start = time.perf_counter()
            frame = pd.DataFrame(rows_for(pool_name, pool, name, args.repeats, args.jobs))
            frame = resumable.save(frame, args.out)
            for row in frame.tail(len(CHECKPOINTS)).to_dict("records"):
                print(json.dumps(row), flush=True)
            print(f"# {pool_name} {name}: {time.perf_counter() - start:.0f} s", flush=True)
            write_markdown(args.out)


if __name__ == "__main__":
    main()
