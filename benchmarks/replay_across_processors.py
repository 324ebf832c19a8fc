"""Sessions labelled under one processor's arithmetic, replayed under another's.

A session's log holds the expert's answers only; loading it replays every proposal from the
seed. OpenBLAS picks its kernels by processor and numpy its SIMD loops, so two machines can
round a proposal differently in its last bits, and where a choice made from it (a share on a
grid, a floored cell, the draw itself) comes out otherwise, they draw other items. On a
machine with AVX-512, ``OPENBLAS_CORETYPE=Haswell`` with numpy's AVX-512 loops off
(``NPY_DISABLE_CPU_FEATURES``) reproduces a machine with AVX2 only (docs/ais_record.md,
"Both switches together emulate that machine exactly").

For each sampler, a session of ``--answers`` answers (F1, the pool's true labels as the
expert, seed 7) is made in a child process under the switches (``--env``) and saved with
``Session.to_json``; this process loads it and reports how many answers the replay took with
this machine's proposal (``Session.taken``; the first one's position, 1-based), and the
estimate and 95% interval each machine shows. Written to
benchmarks/results/replay_across_processors.{csv,md}.

    python benchmarks/replay_across_processors.py [--pool "abt-buy (prob)"] [--answers 300]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd

import evalcore as ec

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from default_sampler import load  # noqa: E402

SAMPLERS = ["ais", "ais-1", "bernoulli", "oasis", "is", "neyman", "stratified", "passive"]
SWITCHES = "OPENBLAS_CORETYPE=Haswell NPY_DISABLE_CPU_FEATURES=X86_V4,AVX512_ICL,AVX512_SPR"
OUT = HERE / "results" / "replay_across_processors.csv"


def shown(session: ec.Session) -> tuple[float, float, float]:
    estimate = session.estimate()
    low, high = estimate.confidence_interval(0.95)
    return float(estimate.value[0]), float(low[0]), float(high[0])


def labelled(pool_name: str, sampler: str, answers: int) -> str:
    """The session's JSON, made here (the child's side) and its estimate, as one line."""
    pool = load(pool_name)
    session = ec.Session(pool, "f1", sampler, seed=7)
    while session.n_labels < answers and not session.done:
        proposal = session.next_item()
        session.record(proposal.item, int(pool.y_true[proposal.item]))
    return json.dumps({"session": session.to_json(), "shown": shown(session)})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pool", default="abt-buy (prob)")
    parser.add_argument("--answers", type=int, default=300)
    parser.add_argument("--samplers", default=",".join(SAMPLERS))
    parser.add_argument("--env", default=SWITCHES, help="the other machine's variables")
    parser.add_argument("--child", help=argparse.SUPPRESS)  # a sampler, in the child
    args = parser.parse_args()
    if args.child:
        print(labelled(args.pool, args.child, args.answers))
        return
    pool = load(args.pool)
    env = {**os.environ, **dict(pair.split("=", 1) for pair in args.env.split())}
    rows = []
    for sampler in args.samplers.split(","):
        command = [sys.executable, __file__, "--pool", args.pool, "--answers", str(args.answers)]
        child = subprocess.run(
            [*command, "--child", sampler], env=env, capture_output=True, text=True, check=True
        )
        made = json.loads(child.stdout.strip().splitlines()[-1])
        session = ec.Session.from_json(made["session"], pool)
        there, here = made["shown"], shown(session)
        row = {
            "sampler": sampler,
            "answers": session.n_labels,
            "taken": len(session.taken),
            "first_taken": session.taken[0] + 1 if session.taken else "",
            "estimate_there": f"{there[0]:.12g}",
            "interval_there": f"{there[1]:.4f}-{there[2]:.4f}",
            "estimate_here": f"{here[0]:.12g}",
            "interval_here": f"{here[1]:.4f}-{here[2]:.4f}",
        }
        rows.append(row)
        print(row, flush=True)
    table = pd.DataFrame(rows)
    table.to_csv(OUT, index=False)
    lines = [
        "# Sessions labelled under another processor's arithmetic, replayed here (F1)",
        "",
        f"Made by `python benchmarks/replay_across_processors.py --pool {json.dumps(args.pool)} "
        f"--answers {args.answers}`, the sessions labelled in a child process with "
        f"`{args.env}` (seed 7, the pool's true labels as the expert). `taken`: the answers "
        "the replay took with this machine's proposal because it drew another item there "
        "(`Session.taken`); `first_taken` the first of them (1-based).",
        "",
        "| " + " | ".join(table.columns) + " |",
        "|" + "---|" * len(table.columns),
    ]
    lines += [
        "| " + " | ".join("" if pd.isna(v) else str(v) for v in row) + " |"
        for row in table.itertuples(index=False)
    ]
    OUT.with_suffix(".md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
