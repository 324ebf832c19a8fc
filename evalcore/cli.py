"""Command line: ``python -m evalcore simulate ...`` (see ``python -m evalcore simulate -h``).

Bad arguments exit with status 2 and a one-line message naming the problem; the last line
printed to stdout on success is a one-line JSON summary at the full budget.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .catalog import get_measure
from .measures import MeasureError
from .pool import ColumnMapping, Pool, PoolValidationError, detect_mapping, read_table
from .simulate import simulate

__all__ = ["main"]

SIMULATION_SAMPLERS = (
    "passive",
    "stratified",
    "neyman",
    "is",
    "ais",
    "ais-1",
    "oasis",
    "bernoulli",
)


class UsageError(Exception):
    """A bad argument: reported on one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)


def _positive_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _level(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1), got {text!r}") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1), got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m evalcore", description="Label-efficient evaluation.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    sim = commands.add_parser(
        "simulate", help="run a sampler repeatedly on a pool with true labels"
    )
    sim.add_argument("--pool", required=True, help="CSV, CSV.gz or Parquet file")
    sim.add_argument("--score-column")
    sim.add_argument("--pred-column")
    sim.add_argument("--prob-column")
    sim.add_argument("--label-column")
    sim.add_argument("--measure", required=True, help="f1, accuracy, pr_curve:1024, ...")
    sim.add_argument("--sampler", required=True, choices=SIMULATION_SAMPLERS)
    sim.add_argument("--budget", required=True, type=_positive_int)
    sim.add_argument("--repeats", required=True, type=_positive_int)
    sim.add_argument("--seed", type=int, default=0)
    sim.add_argument("--jobs", type=_positive_int, default=1)
    sim.add_argument("--confidence", type=_level, default=0.95)
    sim.add_argument(
        "--every",
        type=_positive_int,
        default=1,
        help="record every K-th label (default 1: every label)",
    )
    sim.add_argument("--out", help="write one row per (repeat, labels used) to this CSV")
    return parser


def _load_pool(args) -> Pool:
    path = Path(args.pool)
    if not path.exists():
        raise UsageError(f"--pool: the file {args.pool} does not exist")
    frame = read_table(path)
    try:
        detected = detect_mapping(frame)
    except PoolValidationError:
        if not args.score_column:
            raise
        detected = None
    mapping = ColumnMapping(
        score=args.score_column or detected.score,
        id=detected.id if detected else None,
        pred=args.pred_column or (detected.pred if detected else None),
        prob=args.prob_column or (detected.prob if detected else None),
        label=args.label_column or (detected.label if detected else None),
    )
    if mapping.label is None:
        raise UsageError("--label-column: the pool has no true-label column to simulate with")
    return Pool.from_dataframe(frame, mapping)


def run_simulate(args) -> dict:
    try:
        get_measure(args.measure)
    except MeasureError as error:
        raise UsageError(f"--measure: {error}") from None
    pool = _load_pool(args)
    result = simulate(
        pool,
        args.measure,
        args.sampler,
        args.budget,
        args.repeats,
        seed=args.seed,
        jobs=args.jobs,
        confidence_level=args.confidence,
        record_every=args.every,
    )
    if args.out:
        result.trace().to_csv(args.out, index=False)
    return result.final()


def main(argv=None) -> int:
    try:
        args = build_parser().parse_args(argv)
        summary = run_simulate(args)
    except UsageError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except (PoolValidationError, MeasureError, ValueError) as error:
        print(f"error: {str(error).splitlines()[0]}", file=sys.stderr)
        return 2
    print(json.dumps(summary))
    return 0
