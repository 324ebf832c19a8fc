"""Command line: ``python -m evalcore simulate ...`` and ``python -m evalcore check ...``.

``simulate`` runs a sampler repeatedly on a pool with true labels; the last line printed to
stdout on success is a one-line JSON summary at the full budget. ``check`` validates a pool
exactly as the app does and prints a short summary. Bad arguments and bad pools exit with
status 2 and a message naming the problem and the fix, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
from tqdm import tqdm

from . import regression
from .catalog import MEASURE_DEFINITIONS, get_measure
from .measures import MeasureError
from .pool import (
    ColumnMapping,
    Pool,
    PoolValidationError,
    detect_mapping,
    pool_warnings,
)
from .regression import RegressionPool
from .simulate import simulate
from .tables import read_table, table_format

__all__ = ["main"]

SAMPLERS = {  # name: one line for --help
    "ais": "adaptive importance sampling, the default: learns the proposal from the answers",
    "ais-1": "AIS with seed 003's one-level partition into 256 blocks (the papers' ablation)",
    "is": "static importance sampling from the classifier's probabilities",
    "bernoulli": "Bernoulli sampling in rounds, each item included with its own probability",
    "oasis": "OASIS: adaptive stratified importance sampling (binary F-measures)",
    "stratified": "stratified sampling on the score, proportional allocation",
    "neyman": "stratified sampling on the score, Neyman allocation",
    "passive": "uniform random sampling",
}
MEASURE_HELP = {  # the names --measure takes, with the parameterised ones spelled out
    **{
        name: text
        for name, text in MEASURE_DEFINITIONS.items()
        if name not in ("fbeta", "pr_curve")
    },
    "fbeta:<beta>": MEASURE_DEFINITIONS["fbeta"],
    "pr_curve:<thresholds>": MEASURE_DEFINITIONS["pr_curve"],
}
REGRESSION_HELP = {  # regression pools: a numeric prediction and a numeric true value
    name: f"Regression: {text[0].lower()}{text[1:]}"
    for name, text in regression.MEASURE_DEFINITIONS.items()
}
REGRESSION_SAMPLERS = ("passive", "stratified", "is", "ais", "bernoulli")


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
    listing = "measures:\n" + "".join(
        f"  {name:<22} {text}\n" for name, text in {**MEASURE_HELP, **REGRESSION_HELP}.items()
    )
    listing += "\nsamplers:\n" + "".join(
        f"  {name:<22} {text}\n" for name, text in SAMPLERS.items()
    )
    listing += (
        "\nA regression pool (a numeric pred column and a numeric label column, optionally the "
        "model's predicted\nstandard deviation in --spread-column) takes passive, stratified, is "
        "(it needs the spread), ais and bernoulli.\n"
    )
    sim = commands.add_parser(
        "simulate",
        help="run a sampler repeatedly on a pool with true labels",
        description="Run a sampler repeatedly on a pool with true labels. Progress goes to "
        "stderr when it is a terminal; the last line on stdout is the JSON summary.",
        epilog=listing,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sim.add_argument("--pool", required=True, help="CSV, CSV.gz or Parquet file")
    sim.add_argument("--score-column")
    sim.add_argument("--pred-column")
    sim.add_argument("--prob-column")
    sim.add_argument("--label-column")
    sim.add_argument(
        "--spread-column",
        help="regression: the model's predicted standard deviation (static IS needs it)",
    )
    sim.add_argument("--measure", required=True, help="one of the measures listed below")
    sim.add_argument("--sampler", required=True, choices=list(SAMPLERS), metavar="SAMPLER")
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
    check = commands.add_parser("check", help="validate a pool as the app does; summarise it")
    check.add_argument("--pool", required=True, help="CSV, CSV.gz or Parquet file")
    for name in ("score", "id", "pred", "prob", "label"):
        check.add_argument(f"--{name}-column")
    return parser


def _read_pool(args) -> tuple[Pool, ColumnMapping, object]:
    """The pool as the app builds it: detected columns, overridden by the flags."""
    path = Path(args.pool)
    if not path.is_file():
        raise UsageError(f"--pool: the file {args.pool} does not exist")
    frame = read_table(path)
    try:
        detected = detect_mapping(frame)
    except PoolValidationError:
        if not args.score_column:
            raise
        detected = ColumnMapping(score=None)
    columns = {
        name: getattr(args, f"{name}_column", None) or getattr(detected, name)
        for name in ("score", "id", "pred", "prob", "label")
    }
    for name, column in columns.items():
        if column is not None and not isinstance(column, tuple) and column not in frame.columns:
            raise UsageError(
                f"--{name}-column: the pool has no column {column!r} "
                f"(its columns: {', '.join(map(str, frame.columns))})"
            )
    mapping = ColumnMapping(**columns, content=detected.content)
    return Pool.from_dataframe(frame, mapping), mapping, table_format(frame)


def _load_pool(args) -> Pool:
    pool, mapping, _ = _read_pool(args)
    if mapping.label is None:
        raise UsageError("--label-column: the pool has no true-label column to simulate with")
    return pool


def run_check(args) -> list[str]:
    """The summary lines of a valid pool, its warnings last."""
    pool, mapping, table_format = _read_pool(args)
    scores = mapping.score if isinstance(mapping.score, tuple) else (mapping.score,)
    used = {
        "score": ", ".join(map(str, scores)),
        "id": mapping.id or "(row number)",
        "predicted label": mapping.pred or "(from the score)",
        "probability": mapping.prob or "(from the score)",
        "true label": mapping.label or "(none)",
        "content": ", ".join(map(str, mapping.content)) or "(none)",
    }
    predicted = np.bincount(pool.y_pred, minlength=pool.n_classes) / pool.n_pool
    lines = [
        f"ok: {args.pool}",
        f"format: {table_format.describe() if table_format else 'unknown'}",
        f"rows: {pool.n_pool}",
        f"classes: {', '.join(map(str, pool.classes))}",
    ]
    if pool.n_classes == 2:
        lines.append(f"predicted positive: {predicted[1]:.2%}")
    else:
        shares = ", ".join(f"{c} {s:.1%}" for c, s in zip(pool.classes, predicted, strict=True))
        lines.append(f"predicted: {shares}")
    lines += [f"{name} column: {column}" for name, column in used.items()]
    lines += [f"warning: {text}" for text in pool_warnings(pool)]
    return lines


def _load_regression_pool(args) -> RegressionPool:
    """A regression pool as the app reads one (``regression.detect_regression_mapping``:
    the prediction, the true value, the spread and the id by their usual names), with
    ``--pred-column``, ``--label-column`` and ``--spread-column`` overriding them."""
    path = Path(args.pool)
    if not path.is_file():
        raise UsageError(f"--pool: the file {args.pool} does not exist")
    frame = read_table(path)
    try:
        detected = regression.detect_regression_mapping(frame)
    except PoolValidationError:
        detected = regression.RegressionMapping(prediction=None)

    def column(flag, found, what):
        chosen = getattr(args, f"{flag}_column") or found
        if chosen is not None and chosen not in frame.columns:
            raise UsageError(
                f"--{flag}-column: the pool has no column {chosen!r} "
                f"(its columns: {', '.join(map(str, frame.columns))})"
            )
        if chosen is None and what:
            raise UsageError(f"--{flag}-column: name the pool's column of {what}")
        return chosen

    return RegressionPool.from_dataframe(
        frame,
        prediction=column("pred", detected.prediction, "predictions"),
        label=column("label", detected.label, "true values to simulate with"),
        spread=column("spread", detected.spread, None),
        id=detected.id,
    )


def run_simulate(args) -> dict:
    if args.measure in REGRESSION_HELP:
        if args.sampler not in REGRESSION_SAMPLERS:
            raise UsageError(
                f"--sampler: a regression measure takes {', '.join(REGRESSION_SAMPLERS)}; "
                f"{args.sampler} is not built for regression pools yet"
            )
        pool = _load_regression_pool(args)
    else:
        try:
            get_measure(args.measure)
        except MeasureError as error:
            raise UsageError(f"--measure: {error}") from None
        pool = _load_pool(args)
    # repeats done, elapsed and estimated time left, on a terminal only (never in a pipe or log)
    bar = tqdm(
        total=args.repeats,
        desc=f"{args.sampler} {args.measure}",
        unit="run",
        file=sys.stderr,
        disable=not sys.stderr.isatty(),
    )
    with bar:
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
            progress=lambda done, total: bar.update(done - bar.n),
        )
    if args.out:
        result.trace().to_csv(args.out, index=False)
    return result.final()


def main(argv=None) -> int:
    try:
        args = build_parser().parse_args(argv)
        if args.command == "check":
            print("\n".join(run_check(args)))
            return 0
        summary = run_simulate(args)
    except UsageError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except (PoolValidationError, MeasureError, ValueError) as error:
        print(f"error: {str(error).splitlines()[0]}", file=sys.stderr)
        return 2
    print(json.dumps(summary))
    return 0
