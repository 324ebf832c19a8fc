import signal
from contextlib import contextmanager

import numpy as np
import pytest

import evalcore as ec


def synthetic_pool(n=2000, positive_rate=0.05, seed=0, separation=2.0):
    """A binary pool with true labels: scores ~ N(+-separation/2, 1) by class (a margin)."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < positive_rate).astype(int)
    scores = rng.normal(np.where(y == 1, separation / 2, -separation / 2), 1.0)
    return ec.Pool.from_arrays(scores, y_true=y)


def multiclass_pool(n=600, n_classes=3, seed=0):
    import pandas as pd

    rng = np.random.default_rng(seed)
    y = rng.integers(n_classes, size=n)
    logits = rng.normal(size=(n, n_classes)) + 2.0 * np.eye(n_classes)[y]
    frame = pd.DataFrame({f"score_{c}": logits[:, c] for c in range(n_classes)})
    frame["label"] = y
    return ec.Pool.from_dataframe(frame)


@pytest.fixture(autouse=True)
def database(tmp_path, monkeypatch):
    """Every test's app opens its own SQLite file: without it a test that drives the app
    opens ``evaluation_sessions.db`` in the working directory, a developer's real sessions."""
    path = tmp_path / "sessions.db"
    monkeypatch.setenv("EVAL_DB", str(path))
    return path


@pytest.fixture
def pool():
    return synthetic_pool()


@pytest.fixture
def mc_pool():
    return multiclass_pool()


@contextmanager
def at_most(seconds: int):
    """Fail, not hang, when the block runs longer than ``seconds``."""

    def stop(*_):
        raise TimeoutError(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
