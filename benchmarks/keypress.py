"""Keypress to next item, in a real browser, on a pool of 10^6 items.

A pool of N items resampled from abt-buy is stored in a fresh session database with an AIS
F1 session; the app runs as `streamlit run app.py` and Debian's Chromium (Playwright) opens the
label page. Each step presses the digit of the shown item's true label and stops the clock
when the progress line shows the new count (the fragment has re-rendered the next item). The
first page load (pool load + replay) is timed separately.

    python benchmarks/keypress.py [--items 1000000] [--presses 60]

Writes benchmarks/results/keypress.md.
"""

from __future__ import annotations

import argparse
import io
import re
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from live_app import chromium_page, running_app, wait_for_progress, wait_until_idle  # noqa: E402

import evalcore as ec  # noqa: E402

DATA = HERE.parent.parent / "shared" / "data" / "abt-buy.csv.gz"
RESULTS = HERE / "results"
BUDGET = 2000


def resampled_pool(n_items: int, seed: int = 0) -> pd.DataFrame:
    source = pd.read_csv(DATA)
    rows = np.random.default_rng(seed).integers(len(source), size=n_items)
    frame = source.iloc[rows][["score", "pred", "label"]].reset_index(drop=True)
    frame.insert(0, "item_id", np.arange(n_items))
    return frame


def stored_session(store: ec.Store, frame: pd.DataFrame, name: str, file_name: str, data: bytes):
    mapping = ec.detect_mapping(frame)
    key = store.save_pool(name, file_name, data, mapping)
    pool, _ = store.load_pool(key)
    return store.create_session(key, ec.Session(pool, "f1", "ais", seed=1, budget=BUDGET))


def shown_item(page) -> str:
    heading = page.get_by_role("heading", name=re.compile(r"^Item ")).first.inner_text()
    return heading.removeprefix("Item ").strip()


def time_presses(page, labels_by_id: dict, presses: int) -> list[float]:
    seconds = []
    for labelled in range(1, presses + 1):
        wait_until_idle(page)
        key = str(int(labels_by_id[shown_item(page)]) + 1)
        start = time.perf_counter()
        page.locator("body").press(key)
        wait_for_progress(page, labelled, BUDGET)
        seconds.append(time.perf_counter() - start)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=1_000_000)
    parser.add_argument("--presses", type=int, default=60)
    args = parser.parse_args()
    RESULTS.mkdir(exist_ok=True)

    with tempfile.TemporaryDirectory() as tmp:
        database = Path(tmp) / "sessions.db"
        store = ec.Store(database)
        frame = resampled_pool(args.items)
        buffer = io.BytesIO()
        frame.to_parquet(buffer, index=False)
        big = stored_session(store, frame, "abt-buy resampled", "pool.parquet", buffer.getvalue())
        with running_app(database) as url, chromium_page() as page:
            start = time.perf_counter()
            page.goto(f"{url}/label?session={big}")
            wait_for_progress(page, 0, BUDGET)
            first_load = time.perf_counter() - start
            labels = dict(zip(frame.item_id.astype(str), frame.label, strict=True))
            seconds = np.array(time_presses(page, labels, args.presses)) * 1000

    steady = seconds[5:]  # the first presses warm up the fragment's code paths
    lines = [
        "# Keypress to next item in a real browser",
        "",
        f"Pool of {args.items:,} items resampled from abt-buy, AIS (depth-8 tree), F1, "
        f"deterministic oracle; `streamlit run app.py` and Debian Chromium (headless) on "
        f"this machine; {args.presses} presses, each the digit of the item's true label.",
        "",
        "| figure | ms |",
        "|---|---|",
        f"| median, presses 6-{args.presses} | {np.median(steady):.0f} |",
        f"| 90th percentile | {np.percentile(steady, 90):.0f} |",
        f"| slowest | {steady.max():.0f} |",
        f"| first 5 presses (median) | {np.median(seconds[:5]):.0f} |",
        f"| first page load incl. pool load and replay | {first_load * 1000:.0f} |",
        "",
        "Reproduce: `.venv/bin/python benchmarks/keypress.py`.",
        "",
    ]
    (RESULTS / "keypress.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
