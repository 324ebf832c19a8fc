"""Sessions that cannot lose work: pools, sessions and every answer in one SQLite file.

Each answer is its own transaction, written before the caller shows the next item. An answer
carries its position in the log, and the insert succeeds only when exactly that many answers
precede it, so two windows on one session cannot interleave: the second writer gets a
``SessionConflict`` and must reload. A pool is stored as the bytes of the file it came from,
with its column mapping, so a session can be resumed after a restart without the upload.
An answer is a class code, or for a regression pool a number (SQLite keeps a fractional one
as REAL in the ``label`` column, exactly).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sqlite3
import uuid
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from .pool import ColumnMapping, Pool
from .regression import RegressionMapping, RegressionPool
from .session import RENAMED_MEASURES, Session, log_digest, saved_options, stored_answer
from .tables import frame_from_bytes

__all__ = ["Store", "StoreError", "SessionConflict", "mapping_to_json", "mapping_from_json"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS pools (
    key TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    file_name TEXT NOT NULL,
    mapping TEXT NOT NULL,
    data BLOB NOT NULL,
    created TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    pool_key TEXT NOT NULL REFERENCES pools(key),
    measure TEXT NOT NULL,
    sampler TEXT NOT NULL,
    seed INTEGER NOT NULL,
    budget INTEGER,
    options TEXT NOT NULL,
    confidence REAL NOT NULL,
    created TEXT NOT NULL,
    updated TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS answers (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    item INTEGER NOT NULL,
    label INTEGER NOT NULL,
    answered TEXT NOT NULL,
    PRIMARY KEY (session_id, position)
);
"""


class StoreError(RuntimeError):
    """The database cannot be read or written; the message says what to do."""


class SessionConflict(StoreError):
    """The session changed in the database since this window last read it."""


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def mapping_to_json(mapping: ColumnMapping | RegressionMapping) -> str:
    fields = dataclasses.asdict(mapping)
    if isinstance(mapping, RegressionMapping):
        fields["kind"] = "regression"
    return json.dumps(fields, sort_keys=True)


def mapping_from_json(text: str) -> ColumnMapping | RegressionMapping:
    fields = json.loads(text)
    if fields.pop("kind", None) == "regression":
        return RegressionMapping(**{**fields, "content": tuple(fields.get("content", ()))})
    for name in ("content", "classes"):
        if fields.get(name) is not None:
            fields[name] = tuple(fields[name])
    if isinstance(fields["score"], list):
        fields["score"] = tuple(fields["score"])
    return ColumnMapping(**fields)


@dataclasses.dataclass(frozen=True)
class SessionRecord:
    """A saved session's settings and progress, as listed on the start page."""

    id: str
    pool_key: str
    pool_name: str
    measure: str
    sampler: str
    seed: int
    budget: int | None
    options: dict
    confidence: float
    created: str
    updated: str
    n_answers: int


class Store:
    """The SQLite file at ``path`` (created with its tables when missing)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.timeout = 10.0  # seconds to wait for another writer's lock
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._connect() as db:
                db.executescript(_SCHEMA)
                self._migrate(db)
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(
                f"The session database {self.path} cannot be opened ({exc}). "
                "Point EVAL_DB to a writable file."
            ) from None

    @staticmethod
    def _migrate(db) -> None:
        """Bring a database written by an older version up to date (``PRAGMA user_version``).

        1: ``macro_f1`` named seed 004's harmonic mean of macro precision and recall until it
        became scikit-learn's mean of per-class F1; older sessions keep the measure they
        sampled for under its new name.
        """
        if db.execute("PRAGMA user_version").fetchone()[0] < 1:
            db.execute(
                "UPDATE sessions SET measure = ? WHERE measure = 'macro_f1'",
                (RENAMED_MEASURES["macro_f1"],),
            )
            db.execute("PRAGMA user_version = 1")

    @contextmanager
    def _connect(self):
        """One connection per operation, committed on success, rolled back on error."""
        db = sqlite3.connect(self.path, timeout=self.timeout)
        try:
            db.execute("PRAGMA foreign_keys = ON")
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = FULL")
            with db:
                yield db
        finally:
            db.close()

    @contextmanager
    def _writing(self, what: str):
        try:
            yield
        except SessionConflict:
            raise
        except sqlite3.Error as exc:
            raise StoreError(
                f"Could not save {what} to {self.path} ({exc}). Nothing was lost: the "
                "database holds every answer saved before this one. Free disk space or "
                "check the file's permissions, then try again."
            ) from None

    # -- pools ---------------------------------------------------------------------------
    def save_pool(
        self, name: str, file_name: str, data: bytes, mapping: ColumnMapping | RegressionMapping
    ) -> str:
        """Store a pool's source file and mapping; returns its key (same file + mapping, same
        key, stored once)."""
        mapping_text = mapping_to_json(mapping)
        key = hashlib.sha256(data + mapping_text.encode()).hexdigest()[:16]
        with self._writing("the pool"), self._connect() as db:
            db.execute(
                "INSERT OR IGNORE INTO pools VALUES (?, ?, ?, ?, ?, ?)",
                (key, name, file_name, mapping_text, sqlite3.Binary(data), _now()),
            )
        return key

    def load_pool(self, key: str) -> tuple[Pool | RegressionPool, str]:
        """The pool stored under ``key`` (a regression pool when its mapping is one) and its
        display name."""
        with self._connect() as db:
            row = db.execute(
                "SELECT name, file_name, mapping, data FROM pools WHERE key = ?", (key,)
            ).fetchone()
        if row is None:
            raise StoreError(f"No pool {key} in {self.path}; open the data again.")
        name, file_name, mapping_text, data = row
        frame = frame_from_bytes(bytes(data), file_name)
        mapping = mapping_from_json(mapping_text)
        if isinstance(mapping, RegressionMapping):
            return RegressionPool.from_dataframe(frame, **dataclasses.asdict(mapping)), name
        return Pool.from_dataframe(frame, mapping), name

    # -- sessions ------------------------------------------------------------------------
    def create_session(self, pool_key: str, session: Session, confidence: float = 0.95) -> str:
        """Save a new (empty) session on a stored pool; returns its id."""
        session_id = uuid.uuid4().hex[:12]
        now = _now()
        with self._writing("the new session"), self._connect() as db:
            db.execute(
                "INSERT INTO sessions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    session_id,
                    pool_key,
                    session.measure_name,
                    session.sampler_name,
                    int(session.seed),
                    session.budget,
                    json.dumps(session.options, sort_keys=True),
                    float(confidence),
                    now,
                    now,
                ),
            )
            for position, (item, label) in enumerate(session.log):
                db.execute(
                    "INSERT INTO answers VALUES (?, ?, ?, ?, ?)",
                    (session_id, position, int(item), stored_answer(label), now),
                )
        return session_id

    def sessions(self, session_id: str | None = None) -> list[SessionRecord]:
        """All saved sessions (or the one with ``session_id``), most recently changed first."""
        with self._connect() as db:
            rows = db.execute(
                """SELECT s.id, s.pool_key, p.name, s.measure, s.sampler, s.seed, s.budget,
                          s.options, s.confidence, s.created, s.updated,
                          (SELECT COUNT(*) FROM answers a WHERE a.session_id = s.id)
                   FROM sessions s JOIN pools p ON p.key = s.pool_key
                   WHERE ? IS NULL OR s.id = ?
                   ORDER BY s.updated DESC""",
                (session_id, session_id),
            ).fetchall()
        return [self._record(row) for row in rows]

    def session_record(self, session_id: str) -> SessionRecord:
        matches = self.sessions(session_id)
        if not matches:
            raise StoreError(
                f"There is no saved session {session_id!r}; it may have been deleted. "
                "Pick one on the start page."
            )
        return matches[0]

    @staticmethod
    def _record(row) -> SessionRecord:
        values = list(row)
        values[7] = json.loads(values[7])
        return SessionRecord(*values)

    def answers(self, session_id: str) -> list[tuple[int, int | float]]:
        with self._connect() as db:
            return self._log(db, session_id)

    def answer_times(self, session_id: str) -> list[str]:
        with self._connect() as db:
            rows = db.execute(
                "SELECT answered FROM answers WHERE session_id = ? ORDER BY position",
                (session_id,),
            ).fetchall()
        return [answered for (answered,) in rows]

    def load_session(self, session_id: str, pool: Pool) -> Session:
        """Rebuild a session on its (already loaded) pool and replay its log."""
        session = self.unanswered_session(self.session_record(session_id), pool)
        session.replay_log(self.answers(session_id))
        return session

    @staticmethod
    def unanswered_session(record: SessionRecord, pool: Pool) -> Session:
        """The saved session's sampler as built from its seed, before any answer (replay the
        log with ``Session.replay_log``, which can also give its history)."""
        options = saved_options(record.sampler, record.options, pool)
        return Session(pool, record.measure, record.sampler, record.seed, record.budget, options)

    def append_answer(
        self,
        session_id: str,
        position: int,
        item: int,
        label: int | float,
        expected: str | None = None,
    ) -> None:
        """Save the answer at ``position`` (0-based) in its own transaction.

        ``expected`` is the digest (``session.log_digest``) of the log the answer was given
        against; the write is refused with ``SessionConflict`` unless the saved log is exactly
        that log (another window answered or undid in the meantime, even to the same length)
        and has ``position`` answers. ``StoreError`` when the write fails.
        """
        with self._writing("your answer"), self._connect() as db:
            db.execute("BEGIN IMMEDIATE")  # the check and the insert see one state
            saved = self._log(db, session_id)
            exists = db.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone()
            if (
                exists is None
                or len(saved) != position
                or (expected is not None and log_digest(saved) != expected)
            ):
                raise SessionConflict(
                    "This session was changed in another tab or window (or deleted) since "
                    "this page loaded it; your last answer was not saved. The page now shows "
                    "the saved state: answer the item it shows."
                )
            db.execute(
                "INSERT INTO answers (session_id, position, item, label, answered) "
                "VALUES (?, ?, ?, ?, ?)",
                (session_id, position, int(item), stored_answer(label), _now()),
            )
            db.execute("UPDATE sessions SET updated = ? WHERE id = ?", (_now(), session_id))

    def remove_last_answer(
        self, session_id: str, position: int, expected: str | None = None
    ) -> None:
        """Undo: delete the answer at ``position``, which must be the last one saved; with
        ``expected``, only when the saved log is exactly the log with that digest (so a stale
        window cannot delete another window's newest answer)."""
        with self._writing("the undo"), self._connect() as db:
            db.execute("BEGIN IMMEDIATE")
            saved = self._log(db, session_id)
            if len(saved) != position + 1 or (
                expected is not None and log_digest(saved) != expected
            ):
                raise SessionConflict(
                    "This session was changed in another tab or window since this page "
                    "loaded it; nothing was undone. The page now shows the saved state."
                )
            db.execute(
                "DELETE FROM answers WHERE session_id = ? AND position = ?", (session_id, position)
            )
            db.execute("UPDATE sessions SET updated = ? WHERE id = ?", (_now(), session_id))

    @staticmethod
    def _log(db, session_id: str) -> list[tuple[int, int | float]]:
        rows = db.execute(
            "SELECT item, label FROM answers WHERE session_id = ? ORDER BY position",
            (session_id,),
        ).fetchall()
        return [(int(item), stored_answer(label)) for item, label in rows]

    def truncate_answers(self, session_id: str, keep: int) -> None:
        """Keep the first ``keep`` answers and delete the rest (a log that fails to replay)."""
        with self._writing("the repair"), self._connect() as db:
            db.execute(
                "DELETE FROM answers WHERE session_id = ? AND position >= ?", (session_id, keep)
            )
            db.execute("UPDATE sessions SET updated = ? WHERE id = ?", (_now(), session_id))

    def delete_session(self, session_id: str) -> None:
        """Delete a session and its answers, and its pool when no other session uses it."""
        with self._writing("the deletion"), self._connect() as db:
            row = db.execute("SELECT pool_key FROM sessions WHERE id = ?", (session_id,)).fetchone()
            db.execute("DELETE FROM answers WHERE session_id = ?", (session_id,))
            db.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
            if row is not None:
                db.execute(
                    "DELETE FROM pools WHERE key = ? AND NOT EXISTS "
                    "(SELECT 1 FROM sessions WHERE pool_key = ?)",
                    (row[0], row[0]),
                )
