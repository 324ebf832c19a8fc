"""Keypress to next item, undo and reload, in a real browser, on a pool of 10^6 items.

A pool of N items resampled from abt-buy is stored in a fresh session database with an AIS
F1 session; the app runs as `streamlit run app.py` and Debian's Chromium (Playwright) opens the
label page. Each step presses the digit of the shown item's true label and stops the clock
when the progress line shows the new count (the fragment has re-rendered the next item). The
first page load (pool load + replay) is timed separately. A second session starts with
``--answers`` answers in its log (from the true labels): its first load, ``u`` (undo, clock
stopped when the count drops) and page reloads are timed, then its Convergence page: a first
visit by URL (until the estimate is drawn, and until the diagnostics are) and a revisit; then
its PR curve page, a first visit and a revisit, both from the label page's sidebar.

    python benchmarks/keypress.py [--items 1000000] [--presses 60] [--answers 2000]

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


def answered_session(store: ec.Store, other_session: str, answers: int) -> str:
    """A new AIS F1 session on ``other_session``'s pool with ``answers`` answers from the
    true labels already saved."""
    record = store.session_record(other_session)
    pool, _ = store.load_pool(record.pool_key)
    session = ec.Session(pool, "f1", "ais", seed=2, budget=BUDGET + answers)
    session_id = store.create_session(record.pool_key, session)
    for position in range(answers):
        item = session.next_item().item
        label = int(pool.y_true[item])
        store.append_answer(session_id, position, item, label)
        session.record(item, label)
    return session_id


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


def charts_shown(page, count: int) -> None:
    page.wait_for_function(
        f"() => document.querySelectorAll('.js-plotly-plot').length >= {count}", timeout=180_000
    )


def time_convergence(page, url: str) -> dict:
    """The Convergence page: a first visit by its link (its trace is a replay of the log, in a
    worker thread), until the estimate is drawn and until the proposal's diagnostics are; then,
    from the label page, a revisit by the sidebar (the trace is kept)."""
    start = time.perf_counter()
    page.goto(url)
    charts_shown(page, 1)
    first_chart = time.perf_counter() - start
    charts_shown(page, 4)  # estimate, KL, weights, ESS
    complete = time.perf_counter() - start
    page.get_by_role("link", name="Label").click()
    page.get_by_text(re.compile(r"^\d+ of \d+ labels$")).wait_for()
    wait_until_idle(page)
    start = time.perf_counter()
    page.get_by_role("link", name="Convergence").click()
    charts_shown(page, 4)
    return {"first": first_chart, "complete": complete, "revisit": time.perf_counter() - start}


def time_pr_curve(page) -> dict:
    """The PR curve page from the label page's sidebar: a first visit (the curve, its
    bootstrap curves and the true curve are estimated) and a revisit (they are cached)."""
    seconds = {}
    for visit in ("first", "revisit"):
        page.get_by_role("link", name="Label").click()
        page.get_by_text(re.compile(r"^\d+ of \d+ labels$")).wait_for()
        wait_until_idle(page)
        start = time.perf_counter()
        page.get_by_role("link", name="PR curve").click()
        page.get_by_text(re.compile(r"^Precision at -?\d")).wait_for(timeout=180_000)
        charts_shown(page, 1)
        seconds[visit] = time.perf_counter() - start
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=1_000_000)
    parser.add_argument("--presses", type=int, default=60)
    parser.add_argument("--answers", type=int, default=2000)
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
            long = answered_session(store, big, args.answers)
            start = time.perf_counter()
            page.goto(f"{url}/label?session={long}")
            wait_for_progress(page, args.answers, BUDGET + args.answers)
            long_load = time.perf_counter() - start
            undos, reloads = [], []
            for undone in range(1, 6):
                wait_until_idle(page)
                start = time.perf_counter()
                page.locator("body").press("u")
                wait_for_progress(page, args.answers - undone, BUDGET + args.answers)
                undos.append(time.perf_counter() - start)
            for _ in range(3):
                start = time.perf_counter()
                page.reload()
                wait_for_progress(page, args.answers - 5, BUDGET + args.answers)
                reloads.append(time.perf_counter() - start)
            convergence = time_convergence(page, f"{url}/convergence?session={long}")
            pr_curve = time_pr_curve(page)

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
        f"A session with {args.answers} answers on the same pool (server already running):",
        "",
        "| figure | ms |",
        "|---|---|",
        f"| first page load: replay from the seed, traced for the sparkline and Convergence | "
        f"{long_load * 1000:.0f} |",
        f"| undo (`u`), median of 5 | {np.median(undos) * 1000:.0f} |",
        f"| undo, each in order | {', '.join(f'{u * 1000:.0f}' for u in undos)} |",
        f"| reload, median of 3 | {np.median(reloads) * 1000:.0f} |",
        f"| reload, each in order | {', '.join(f'{r * 1000:.0f}' for r in reloads)} |",
        f"| Convergence, first visit by URL: the estimate drawn | "
        f"{convergence['first'] * 1000:.0f} |",
        f"| Convergence, first visit by URL: every chart drawn | "
        f"{convergence['complete'] * 1000:.0f} |",
        f"| Convergence, revisit from the label page (sidebar) | "
        f"{convergence['revisit'] * 1000:.0f} |",
        f"| PR curve, first visit from the label page (sidebar) | {pr_curve['first'] * 1000:.0f} |",
        f"| PR curve, revisit from the label page (sidebar) | {pr_curve['revisit'] * 1000:.0f} |",
        "",
        "Reproduce: `.venv/bin/python benchmarks/keypress.py`.",
        "",
    ]
    (RESULTS / "keypress.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
