"""Undo and reload at 10^6 items with 2000 answers: replay from the seed against the
checkpoints and snapshots that shorten it (engine side, no browser).

A pool of N items resampled from abt-buy, an AIS F1 session answered from the true labels.
Timed, each as the median of ``--repeats`` runs measured in one process:

* replay: ``Session(..., log)`` from the seed, what undo and a reload cost before;
* undo: ``session.undo()`` from the latest checkpoint (every ``CHECKPOINT_EVERY`` answers),
  worst case (the checkpoint is ``CHECKPOINT_EVERY - 1`` answers back) and best case;
* reload: what the app does for a new tab: copy the last published snapshot and record the
  answers since (up to ``CHECKPOINT_EVERY - 1``);
* the Convergence page's trace (200 points): a first visit replays the log, a revisit after
  more answers traces only those (one run each).

    python benchmarks/undo_reload.py [--items 1000000] [--answers 2000] [--repeats 5]

Writes benchmarks/results/undo_reload.md.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from keypress import resampled_pool

import evalcore as ec
from evalcore import insight

RESULTS = Path(__file__).resolve().parent / "results"


def timed(action) -> float:
    start = time.perf_counter()
    action()
    return (time.perf_counter() - start) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=1_000_000)
    parser.add_argument("--answers", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    every = ec.session.CHECKPOINT_EVERY
    frame = resampled_pool(args.items)
    pool = ec.Pool.from_dataframe(frame, ec.detect_mapping(frame))
    session = ec.Session(pool, "f1", "ais", seed=0, budget=args.answers + 10)
    snapshot = None
    answers = args.answers - 1  # the latest checkpoint is then every - 1 answers back
    for _ in range(answers):
        item = session.next_item().item
        session.record(item, int(pool.y_true[item]))
        if session.n_labels % every == 0:
            snapshot = session.snapshot()  # as the label page publishes it
    log = list(session.log)

    def redo() -> None:
        item, label = log[len(session.log)]
        session.record(item, label)

    figures = {}
    figures["replay from the seed"] = [
        timed(lambda: ec.Session(pool, "f1", "ais", 0, args.answers + 10, {}, log))
        for _ in range(args.repeats)
    ]
    worst, best = [], []
    for _ in range(args.repeats):
        worst.append(timed(session.undo))  # the checkpoint every - 2 answers back
        redo()
    for _ in range(args.repeats):
        while session.n_labels % every != 1:
            session.undo()
        best.append(timed(session.undo))  # one answer after a checkpoint
        redo()
    figures[f"undo, {every - 2} answers after the checkpoint"] = worst
    figures["undo, 1 answer after the checkpoint"] = best

    def reload() -> None:
        tab = snapshot.copy()
        for item, label in log[len(snapshot.log) :]:
            tab.record(item, label)

    figures[f"reload: copy the snapshot, record {len(log) - len(snapshot.log)} answers"] = [
        timed(reload) for _ in range(args.repeats)
    ]
    stride = -(-len(log) // 200)
    builder = insight.Trace(session, 0.95, stride)
    figures[f"Convergence trace, first visit ({len(log) - every} answers, 200 points)"] = [
        timed(lambda: builder.extend(log[: len(log) - every]) and builder.table())
    ]
    figures[f"Convergence trace, revisit after {every} more answers"] = [
        timed(lambda: builder.extend(log) and builder.table())
    ]
    lines = [
        "# Undo and reload at 10^6 items",
        "",
        f"Pool of {args.items:,} items resampled from abt-buy, AIS (depth-8 tree, the default "
        f"oracle model), F1, {answers} answers from the true labels; checkpoints every {every} "
        f"answers. Median of {args.repeats} runs in one process, this machine (2 cores, shared; "
        "timings move with the load).",
        "",
        "| operation | median ms | runs (ms) |",
        "|---|---|---|",
    ]
    for name, times in figures.items():
        runs = ", ".join(f"{t:.0f}" for t in times)
        lines.append(f"| {name} | {statistics.median(times):.0f} | {runs} |")
    lines += ["", "Reproduce: `.venv/bin/python benchmarks/undo_reload.py`.", ""]
    (RESULTS / "undo_reload.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
