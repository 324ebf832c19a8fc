"""Step time against the number of answers.

``speed.py`` times a step against the pool's size over the first 300 answers; this script
times it as a session grows, where the default AIS refits its item-level model to every
answer so far (``ItemLevelModel``). One session per pool (seed 0, the default AIS, F1) to
``--labels`` answers with the true labels; each step is timed in two parts, the next item
(propose + record) and what the app shows after it (the estimate and its interval), and
the script reports each part's median over every ``--window`` answers. ``--code`` names the
evalcore the run imported (run it with PYTHONPATH at another checkout to compare two
versions side by side); its rows replace the earlier rows of the same pool and code.

    python benchmarks/answer_speed.py [--pools P,...] [--labels 2000] [--code NAME]

Writes benchmarks/results/answer_speed.{csv,md}.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

import evalcore as ec

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import coverage  # noqa: E402  (the benchmarks' named pools)
import resumable  # noqa: E402

OUT = HERE / "results" / "answer_speed.csv"
POOLS = ("hard_classifier (prob)", "abt-buy (prob)", "over_confident (prob)")


def time_session(pool: ec.Pool, n_labels: int) -> tuple[np.ndarray, np.ndarray]:
    """Milliseconds per answer: the next item (propose + record) and the estimate with its
    interval after it."""
    sampler = ec.make_sampler("ais", pool, ec.get_measure("f1"), 0)
    next_item, shown = np.zeros(n_labels), np.zeros(n_labels)
    for answer in range(n_labels):
        start = time.perf_counter()
        proposal = sampler.propose()
        sampler.record(pool.y_true[proposal.item])
        middle = time.perf_counter()
        ec.estimate(sampler).confidence_interval()
        next_item[answer], shown[answer] = middle - start, time.perf_counter() - middle
    return next_item * 1e3, shown * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pools", default=",".join(POOLS))
    parser.add_argument("--labels", type=int, default=2000)
    parser.add_argument("--window", type=int, default=250)
    parser.add_argument("--code", default="HEAD", help="a name for the evalcore imported")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    for pool_name in args.pools.split(","):
        next_item, shown = time_session(coverage.load(pool_name), args.labels)
        rows = [
            {
                "pool": pool_name,
                "code": args.code,
                "answers": f"{first + 1}-{min(first + args.window, args.labels)}",
                "next_item_ms": round(float(np.median(next_item[first : first + args.window])), 2),
                "estimate_ms": round(float(np.median(shown[first : first + args.window])), 2),
            }
            for first in range(0, args.labels, args.window)
        ]
        table = resumable.save(pd.DataFrame(rows), args.out, keys=("pool", "code"))
        write_markdown(table, args.out)
        print(pd.DataFrame(rows).to_string(index=False), flush=True)


def write_markdown(table: pd.DataFrame, out: Path) -> None:
    """Per pool and code, the medians per window of answers: next item · estimate (ms)."""
    windows = list(dict.fromkeys(table["answers"]))
    lines = [
        "# Step time against the number of answers (the default AIS, F1, one session, seed 0)",
        "",
        "Median milliseconds per answer over each window of answers: the next item (propose +",
        "record) · the estimate and its interval after it. Made by `python",
        "benchmarks/answer_speed.py`; `code` names the evalcore the run imported.",
        "",
        "| pool | code | " + " | ".join(windows) + " |",
        "|---|---|" + "---|" * len(windows),
    ]
    for (pool_name, code), rows in table.groupby(["pool", "code"], sort=False):
        cells = {
            row.answers: f"{row.next_item_ms:g} · {row.estimate_ms:g}" for row in rows.itertuples()
        }
        lines.append(
            f"| {pool_name} | {code} | " + " | ".join(cells.get(w, "") for w in windows) + " |"
        )
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
