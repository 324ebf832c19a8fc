"""A real Streamlit server and Debian's Chromium under Playwright, for the browser test and
the keypress benchmark. Playwright never downloads a browser here: it drives
/usr/bin/chromium (installed by `make test`)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(database: Path, port: int, secrets: Path | None = None, timeout=60.0):
    """``streamlit run app.py`` on ``port`` with ``EVAL_DB=database`` (and the secrets file
    ``secrets``, if given), once it answers its health check."""
    env = {**os.environ, "EVAL_DB": str(database), "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "0"}
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            str(ROOT / "app.py"),
            "--server.headless=true",
            f"--server.port={port}",
            "--server.address=127.0.0.1",
            *([f"--secrets.files={secrets}"] if secrets else []),
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(
                f"http://127.0.0.1:{port}/_stcore/health", timeout=2
            ) as response:
                if response.status == 200:
                    return server
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                server.kill()
                raise RuntimeError(
                    "the Streamlit server did not start: " + server.stderr.read().decode()
                ) from None
            time.sleep(0.2)


def stop_server(server) -> None:
    server.terminate()
    try:
        server.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.kill()


@contextmanager
def running_app(database: Path, timeout: float = 60.0, secrets: Path | None = None):
    """A server as ``start_server`` makes it on a free port; yields the base URL and stops
    the server afterwards."""
    port = free_port()
    server = start_server(database, port, secrets, timeout)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        stop_server(server)


@contextmanager
def chromium_page(width: int = 1400, height: int = 900):
    """A Playwright page in Debian's headless Chromium."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_FLAGS
        )
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            page.set_default_timeout(30_000)
            yield page
        finally:
            browser.close()


def progress_text(page) -> str:
    """The label page's progress line, e.g. '15 of 500 labels'."""
    return page.get_by_text(" labels", exact=False).filter(has_text=" of ").first.inner_text()


def wait_for_progress(page, labels: int, budget: int) -> None:
    page.get_by_text(f"{labels} of {budget} labels", exact=True).wait_for()


def wait_until_idle(page, timeout_ms: float = 60_000) -> None:
    """Wait until no script run is in progress (Streamlit's running indicator is gone; a key
    pressed during a full-page run is not delivered to the fragment), no element is still
    stale (a fragment shows its new progress before its new item), and the label page's
    item has been on screen long enough for its press guard to take a press."""
    page.wait_for_function(
        "() => document.querySelector('[data-testid=\"stStatusWidget\"]') === null"
        " && document.querySelector('[data-stale=\"true\"]') === null"
        " && (window.__evalItemShownAt === undefined"
        " || performance.now() - window.__evalItemShownAt > 350)",
        timeout=timeout_ms,
    )
