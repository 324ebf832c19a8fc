"""SQLite persistence: every answer saved in order, resumable in a new process, two windows
cannot interleave, and a failed write is reported."""

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import evalcore as ec
from evalcore.store import SessionConflict, Store, StoreError

ROOT = Path(__file__).resolve().parents[1]
PRODUCTS = ROOT / "sample_data" / "products.csv"


@pytest.fixture
def store(tmp_path):
    return Store(tmp_path / "sessions.db")


def stored_pool(store):
    data = PRODUCTS.read_bytes()
    mapping = ec.detect_mapping(ec.read_table(PRODUCTS))
    key = store.save_pool("products", PRODUCTS.name, data, mapping)
    pool, _ = store.load_pool(key)
    return key, pool


def label_and_save(store, session_id, session, n):
    for _ in range(n):
        proposal = session.next_item()
        label = int(session.pool.y_true[proposal.item])
        store.append_answer(session_id, session.n_labels, proposal.item, label)
        session.record(proposal.item, label)


def test_the_pool_round_trips_with_its_mapping(store):
    key, pool = stored_pool(store)
    direct = ec.Pool.from_dataframe(ec.read_table(PRODUCTS))
    assert ec.pool_fingerprint(pool) == ec.pool_fingerprint(direct)
    np.testing.assert_array_equal(pool.y_true, direct.y_true)
    assert list(pool.content.columns) == list(direct.content.columns)
    # the same file and mapping are stored once
    assert (
        store.save_pool(
            "again",
            PRODUCTS.name,
            PRODUCTS.read_bytes(),
            ec.detect_mapping(ec.read_table(PRODUCTS)),
        )
        == key
    )


RESUME_SCRIPT = """
import json, sys
from evalcore.store import Store
store = Store(sys.argv[1])
record = store.session_record(sys.argv[2])
pool, _ = store.load_pool(record.pool_key)
session = store.load_session(sys.argv[2], pool)
estimate = session.estimate()
print(json.dumps({"log": session.log, "value": estimate.value.tolist(),
                  "covariance": estimate.covariance.tolist(), "next": session.next_item().item}))
"""


def test_a_new_process_resumes_with_the_identical_log_and_estimate(store):
    key, pool = stored_pool(store)
    session = ec.Session(pool, "f1", "ais", seed=5, budget=100, options={"depth": 4})
    session_id = store.create_session(key, session)
    label_and_save(store, session_id, session, 30)
    estimate = session.estimate()
    expected_next = session.next_item().item
    del session

    result = subprocess.run(
        [sys.executable, "-c", RESUME_SCRIPT, str(store.path), session_id],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    resumed = json.loads(result.stdout)
    assert [tuple(pair) for pair in resumed["log"]] == store.answers(session_id)
    assert len(resumed["log"]) == 30
    assert resumed["value"] == estimate.value.tolist()
    assert resumed["covariance"] == estimate.covariance.tolist()
    assert resumed["next"] == expected_next


def test_a_second_window_cannot_interleave_answers_or_undo(store):
    key, pool = stored_pool(store)
    first = ec.Session(pool, "f1", "is", seed=2, budget=50)
    session_id = store.create_session(key, first)
    second = store.load_session(session_id, pool)
    label_and_save(store, session_id, first, 3)
    # the second window still believes the log is empty
    proposal = second.next_item()
    with pytest.raises(SessionConflict, match="another tab"):
        store.append_answer(session_id, second.n_labels, proposal.item, 0)
    with pytest.raises(SessionConflict):
        store.remove_last_answer(session_id, 0)
    assert store.answers(session_id) == first.log
    # after reloading it continues where the first window stopped
    second = store.load_session(session_id, pool)
    label_and_save(store, session_id, second, 1)
    store.remove_last_answer(session_id, 3)
    assert store.answers(session_id) == first.log


def test_a_failed_write_is_reported_and_loses_nothing(tmp_path):
    store = Store(tmp_path / "sessions.db")
    key, pool = stored_pool(store)
    session = ec.Session(pool, "f1", "passive", seed=1, budget=20)
    session_id = store.create_session(key, session)
    label_and_save(store, session_id, session, 2)
    impatient = Store(tmp_path / "sessions.db")
    impatient.timeout = 0.05
    # another connection holds the write lock: the answer cannot be written
    blocker = sqlite3.connect(tmp_path / "sessions.db", isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(StoreError, match="Could not save your answer.*Nothing was lost"):
            impatient.append_answer(session_id, 2, session.next_item().item, 1)
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert store.answers(session_id) == session.log


def test_sessions_are_listed_and_deleted_with_their_unused_pool(store):
    key, pool = stored_pool(store)
    keep = store.create_session(key, ec.Session(pool, "f1", "ais", seed=1, budget=10))
    drop = store.create_session(key, ec.Session(pool, "precision", "is", seed=2, budget=5))
    listed = {record.id: record for record in store.sessions()}
    assert set(listed) == {keep, drop}
    assert listed[drop].measure == "precision" and listed[drop].budget == 5
    assert listed[keep].pool_name == "products" and listed[keep].n_answers == 0
    store.delete_session(drop)
    assert [record.id for record in store.sessions()] == [keep]
    store.load_pool(key)  # still used by `keep`
    store.delete_session(keep)
    with pytest.raises(StoreError, match="open the data again"):
        store.load_pool(key)
    with pytest.raises(StoreError, match="no saved session"):
        store.session_record(keep)


def test_an_unwritable_database_path_gives_a_clear_error(tmp_path):
    (tmp_path / "file").write_text("not a directory")
    with pytest.raises(StoreError, match="cannot be opened.*EVAL_DB"):
        Store(tmp_path / "file" / "sessions.db")


def test_a_write_against_another_log_of_the_same_length_is_refused(store):
    # regression: the check compared answer counts only, so a stale window could append
    # after an undo-and-reanswer elsewhere and leave a log that no longer replays
    key, pool = stored_pool(store)
    session = ec.Session(pool, "accuracy", "passive", seed=1)
    sid = store.create_session(key, session)
    first = session.next_item().item
    store.append_answer(sid, 0, first, 0, expected=ec.log_digest([]))
    seen_by_stale_window = ec.log_digest([(first, 0)])
    store.remove_last_answer(sid, 0, expected=seen_by_stale_window)
    store.append_answer(sid, 0, first, 1, expected=ec.log_digest([]))  # answered again: 1
    with pytest.raises(SessionConflict):
        store.append_answer(sid, 1, 3, 0, expected=seen_by_stale_window)
    with pytest.raises(SessionConflict):
        store.remove_last_answer(sid, 0, expected=seen_by_stale_window)
    assert store.answers(sid) == [(first, 1)]


def test_a_database_from_before_the_macro_f1_rename_keeps_each_sessions_measure(tmp_path):
    path = tmp_path / "sessions.db"
    store = Store(path)
    frame = ec.read_table(ROOT / "sample_data" / "sentiment3.csv")
    key = store.save_pool(
        "three", "sentiment3.csv", frame.to_csv(index=False).encode(), ec.detect_mapping(frame)
    )
    pool, _ = store.load_pool(key)
    session = ec.Session(pool, "macro_f1_harmonic", "ais", seed=2, budget=40)
    session_id = store.create_session(key, session)
    label_and_save(store, session_id, session, 20)
    with sqlite3.connect(path) as db:  # as an older version wrote it
        db.execute("UPDATE sessions SET measure = 'macro_f1'")
        db.execute("PRAGMA user_version = 0")
    reopened = Store(path)
    assert reopened.session_record(session_id).measure == "macro_f1_harmonic"
    resumed = reopened.load_session(session_id, pool)
    assert resumed.log == session.log
    np.testing.assert_array_equal(resumed.estimate().value, session.estimate().value)
    newer = reopened.create_session(key, ec.Session(pool, "macro_f1", "ais", seed=2))
    assert Store(path).session_record(newer).measure == "macro_f1"  # migrated once only
