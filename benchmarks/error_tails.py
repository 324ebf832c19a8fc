"""How much of each sampler's F1 MSE its worst few runs make, from stored runs (issue 13).

A run that finds a rare false negative with a large weight moves F1 by much of its range, so a
few runs can carry a sampler's MSE and decide a comparison that its typical run does not. For
each pool, budget and sampler of a runs file written by ``default_sampler.py`` (or
``realisations.py``) this gives the MSE, the median squared error, the share of the MSE in the
``--worst`` runs with the largest errors (5 by default) and the mean squared error of the
other runs; and the default's (``ais``) over the best baseline's by each of the three, the
baseline being the one with the least MSE. With ``--family`` the realisations of a family
(``realisations.py`` stores them as ``"<family> #<k>"``) are taken together, their runs
pooled. Nothing is run; the table is written beside the runs file as
``<runs>_worst<k>.md``, k the ``--worst`` (``_family_worst<k>.md`` with ``--family``).

    python benchmarks/error_tails.py [--runs benchmarks/results/default_sampler_500runs_runs.csv]
        [--worst 5] [--family]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import resumable  # noqa: E402
from default_sampler import BASELINES, read_runs  # noqa: E402

RUNS = HERE / "results" / "default_sampler_500runs_runs.csv"


def tails(runs: pd.DataFrame, worst: int, family: bool = False) -> pd.DataFrame:
    """Per pool, budget and sampler: runs, MSE, median squared error, the ``worst`` runs'
    share of the MSE and the mean squared error of the others (runs whose estimate is not
    defined there left out, as the MSE leaves them); with ``family``, per family, the runs
    of its realisations pooled."""
    if family:
        runs = runs.assign(pool=runs.pool.str.replace(r" #\d+$", "", regex=True))
    rows = []
    for (pool, labels, sampler), at in runs.groupby(["pool", "n_labels", "sampler"]):
        squared = np.sort(((at.estimate - at.truth) ** 2).dropna().to_numpy())[::-1]
        rows.append(
            {
                "pool": pool,
                "n_labels": labels,
                "sampler": sampler,
                "runs": len(squared),
                "mse": squared.mean(),
                "median": np.median(squared),
                "worst_share": squared[:worst].sum() / squared.sum(),
                "others": squared[worst:].mean() if len(squared) > worst else np.nan,
            }
        )
    return pd.DataFrame(rows)


def write_markdown(table: pd.DataFrame, runs_path: Path, worst: int, family: bool = False) -> Path:
    option = " --family" if family else ""
    lines = [
        "# The worst runs' share of each F1 MSE",
        "",
        f"Made by `python benchmarks/error_tails.py --runs {resumable.shown(runs_path)} "
        f"--worst {worst}{option}` from the stored runs (the script's docstring says what "
        f"each column is). `worst {worst}`: the share of the MSE in the {worst} runs with "
        f"the largest squared errors; `others`: the mean squared error of the rest. Beside "
        "the default (`ais`), its figure over the best baseline's (the baseline with the "
        "least MSE).",
        "",
        f"| pool | labels | sampler | runs | MSE | median squared error | worst {worst} | others |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for _, at in table.groupby(["pool", "n_labels"], sort=False):
        baselines = at[at.sampler.isin(BASELINES)]
        best = baselines.loc[baselines.mse.idxmin()] if len(baselines) else None
        for row in at.itertuples():
            cells = [f"{row.mse:.2e}", f"{row.median:.2e}"]
            cells += [f"{row.worst_share:.2f}", f"{row.others:.2e}"]
            if row.sampler == "ais" and best is not None:
                cells[0] += f" (x{row.mse / best.mse:.2f} of {best.sampler})"
                cells[1] += f" (x{row.median / best['median']:.2f})"
                cells[3] += f" (x{row.others / best.others:.2f})"
            lines.append(
                f"| {row.pool} | {row.n_labels} | {row.sampler} | {row.runs} | "
                + " | ".join(cells)
                + " |"
            )
    path = runs_path.with_name(f"{runs_path.stem}{'_family' if family else ''}_worst{worst}.md")
    path.write_text("\n".join(lines) + "\n")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=Path, default=RUNS)
    parser.add_argument("--worst", type=int, default=5)
    parser.add_argument("--family", action="store_true", help="pool a family's realisations")
    args = parser.parse_args()
    table = tails(read_runs(args.runs), args.worst, args.family)
    print(write_markdown(table, args.runs, args.worst, args.family).read_text())


if __name__ == "__main__":
    main()
