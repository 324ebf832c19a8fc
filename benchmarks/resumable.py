"""The command line the resumable benchmarks share (``coverage.py``, ``default_sampler.py``):
each (pool, sampler) configuration's rows are written to the results file as it finishes, in
place of its earlier ones (``save``), and ``--resume`` skips those already there."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

import pandas as pd


def parse(
    description: str,
    repeats: int,
    out: Path,
    extra: Callable[[argparse.ArgumentParser], None] | None = None,
) -> argparse.Namespace:
    """The shared options; ``extra`` adds a script's own to the parser."""
    parser = argparse.ArgumentParser(description=description)
    if extra is not None:
        extra(parser)
    parser.add_argument("--repeats", type=int, default=repeats)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--pools", help="comma-separated subset of the pools")
    parser.add_argument("--samplers", help="comma-separated subset of the samplers")
    parser.add_argument("--out", type=Path, default=out)
    parser.add_argument("--resume", action="store_true")
    args = parser.parse_args()
    args.out.parent.mkdir(exist_ok=True)
    return args


def done(args: argparse.Namespace) -> set[tuple[str, str]]:
    """The (pool, sampler) configurations to skip: those in ``--out`` with ``--resume``."""
    if not (args.resume and args.out.exists()):
        return set()
    return set(pd.read_csv(args.out)[["pool", "sampler"]].itertuples(index=False))


def save(frame: pd.DataFrame, path: Path, keys: tuple[str, ...] = ("pool", "sampler")):
    """Write ``frame``'s rows to ``path`` in place of the earlier rows of its configurations
    (the ``keys`` values its rows hold), after the others; returns the whole table."""
    if path.exists():
        earlier = pd.read_csv(path)
        fresh = pd.MultiIndex.from_frame(frame[list(keys)].drop_duplicates())
        same = pd.MultiIndex.from_frame(earlier[list(keys)]).isin(fresh)
        frame = pd.concat([earlier[~same], frame], ignore_index=True)
    frame.to_csv(path, index=False)
    return frame
