"""Screenshots of every page for the README, taken in Debian's Chromium on a demo session.

Opens the product-pairs demo pool, starts an AIS session for F1, auto-labels 150 items and
visits each page. Writes benchmarks/results/screenshots/<page>.png.

    python benchmarks/screenshots.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from live_app import chromium_page, running_app, wait_for_progress, wait_until_idle  # noqa: E402

OUT = HERE / "results" / "screenshots"


def shoot(page, name: str) -> None:
    wait_until_idle(page)
    page.wait_for_timeout(1500)  # let plotly finish drawing
    page.screenshot(path=OUT / f"{name}.png", full_page=True)
    print(OUT / f"{name}.png")


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, running_app(Path(tmp) / "s.db") as url:
        with chromium_page(1400, 1000) as page:
            page.goto(url)
            page.get_by_role("button", name="Open").first.wait_for()
            shoot(page, "start")
            page.get_by_role("button", name="Open").first.click()
            page.get_by_role("button", name="Start labelling").wait_for()
            shoot(page, "setup")
            page.get_by_role("button", name="Start labelling").click()
            wait_for_progress(page, 0, 500)
            wait_until_idle(page)
            page.get_by_label("Items").fill("50")
            page.get_by_label("Items").press("Enter")
            for labelled in (50, 100, 150):
                wait_until_idle(page)
                page.get_by_role("button", name="Auto-label").click()
                wait_for_progress(page, labelled, 500)
            shoot(page, "label")
            for link, name in [
                ("Convergence", "convergence"),
                ("PR curve", "pr_curve"),
                ("All measures", "measures"),
                ("Export", "export"),
            ]:
                page.get_by_role("link", name=link).click()
                page.get_by_role(
                    "heading", name=link if link != "PR curve" else "Precision-recall curve"
                ).first.wait_for()
                if name == "convergence":  # its diagnostics come from a replay
                    page.get_by_text("Effective sample size").first.wait_for(timeout=300_000)
                shoot(page, name)
            page.get_by_role("link", name="Compare samplers").click()
            page.get_by_role("button", name="Run").wait_for()
            page.get_by_role("button", name="Run").click()
            page.get_by_role("button", name="All results are ready").wait_for(timeout=600_000)
            shoot(page, "compare")


if __name__ == "__main__":
    main()
