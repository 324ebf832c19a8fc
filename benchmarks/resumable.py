"""The command line the resumable benchmarks share (``coverage.py``, ``default_sampler.py``):
each (pool, sampler) configuration's rows are written to the results file as it finishes, in
place of its earlier ones (``save``), and ``--resume`` skips those already there; and the rows
and tables of the scripts that read each run themselves (``checkpoint_row``, ``mse_table``);
and how a results file names its command's options and ``--out`` path
(``command_options``, ``shown``)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

CHECKOUT = Path(__file__).resolve().parent.parent


def shown(path: Path) -> Path:
    """``path`` as a command in a results file names it: from the checkout's root when it
    lies inside it, so the command runs from there on any machine."""
    path = path.resolve()
    return path.relative_to(CHECKOUT) if path.is_relative_to(CHECKOUT) else path


def command_options(args: argparse.Namespace, default_out: Path) -> str:
    """``--pools``, ``--samplers`` and (where it is not ``default_out``) ``--out`` as the
    first line of a results file repeats the command that made it."""
    named = (("pools", args.pools), ("samplers", args.samplers))
    options = "".join(f' --{name} "{value}"' for name, value in named if value)
    if args.out != default_out:
        options += f" --out {shown(args.out)}"
    return options


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


def checkpoint_row(pool: str, sampler: str, labels: int, runs: np.ndarray, truth: float) -> dict:
    """One configuration's row at one label count from its runs' (estimate, low, high), each
    (repeats,) in ``runs`` (repeats, 3): MSE with a 95% bootstrap interval (1,000 resamples
    of the runs, drawn with seed 0, so the same for every configuration with as many runs:
    paired), coverage and median width."""
    value, low, high = runs.T
    repeats = len(value)
    error = (value - truth) ** 2
    resamples = np.random.default_rng(0).integers(repeats, size=(1000, repeats))
    boot = error[resamples].mean(axis=1)
    return {
        "pool": pool,
        "sampler": sampler,
        "n_labels": labels,
        "repeats": repeats,
        "mse": error.mean(),
        "mse_low": np.quantile(boot, 0.025),
        "mse_high": np.quantile(boot, 0.975),
        "coverage": np.mean((low <= truth) & (truth <= high)),
        "width": np.median(high - low),
    }


def mse_table(rows: pd.DataFrame, first: str, base: str) -> list[str]:
    """Markdown lines of one pool's rows: the ``first`` column's name (what ``sampler``
    holds), then labels, runs, MSE with its interval, coverage, median width, and the ratio
    of the MSE to row ``base``'s at the same label count."""
    lines = [f"| {first} | labels | runs | MSE | 95% CI | coverage | median width | ratio |"]
    lines += ["|---|---|---|---|---|---|---|---|"]
    reference = rows[rows.sampler == base].set_index("n_labels").mse
    for row in rows.sort_values(["n_labels", "sampler"]).itertuples():
        lines.append(
            f"| {row.sampler} | {row.n_labels} | {row.repeats} | {row.mse:.2e} | "
            f"{row.mse_low:.2e}-{row.mse_high:.2e} | {row.coverage:.2f} | "
            f"{row.width:.3f} | {row.mse / reference[row.n_labels]:.3g} |"
        )
    return lines
