"""Sessions of a Hermes Agent home, read without ever writing to its database.

In a home the reference program shares with Cairn, ``<home>/state.db`` is theirs (Cairn keeps
its own store in ``cairn.db``, see :mod:`engine.db`). Their sessions are read from it and fed
to the ordinary JSONL import, so the copy carries lineage and importing twice adds nothing.

The file is never opened for writing, and no ``-wal``/``-shm`` file is created beside it: with
no WAL present it is opened ``immutable``; when the other program has it open (a ``-wal``
exists), the database and its WAL are copied into a temporary folder and the copy is read, so
the newest committed sessions are included and their files stay exactly as they were.

Columns are read by name and only where present, so older and newer schemas of the reference
(or a hand-made test database) work; a missing ``sessions`` or ``messages`` table means the
file is not a Hermes session store.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sqlalchemy.exc import SQLAlchemyError

from engine.db import CairnMeta, readonly_uri
from engine.home import Home
from engine.sessions.store import SessionStore
from engine.sessions.transfer import DEFAULT_BATCH_SIZE, ImportReport, import_sessions

IMPORT_HINT = "`cairn sessions import --from-hermes` (or /sessions import-hermes) copies them"

_SESSION_FIELDS = (
    "source",
    "model",
    "title",
    "system_prompt",
    "parent_session_id",
    "started_at",
    "ended_at",
    "end_reason",
    "input_tokens",
    "output_tokens",
)
_MESSAGE_FIELDS = ("role", "content", "tool_call_id", "tool_calls", "tool_name", "timestamp")


class HermesError(RuntimeError):
    """The other program's database cannot be read."""


def hermes_db(home: Home) -> Path | None:
    """``<home>/state.db`` when it is another program's session store, else None."""
    path = home.state_db
    if not path.is_file() or path.stat().st_size == 0:
        return None
    try:
        tables = _tables(path)
    except HermesError:
        return None
    if CairnMeta.__tablename__ in tables or not {"sessions", "messages"} <= tables:
        return None
    return path


def _tables(path: Path) -> set[str]:
    with _reading(path) as conn:
        rows = conn.execute("SELECT name FROM sqlite_master WHERE type='table'").fetchall()
    return {row[0] for row in rows}


@contextlib.contextmanager
def _reading(path: Path) -> Iterator[sqlite3.Connection]:
    wal = path.with_name(path.name + "-wal")
    folder: str | None = None
    target = path
    try:
        if wal.exists():
            # Opening a live WAL database read-only would create -shm beside it; read a copy.
            # The copy holds someone's conversations: it stays in the home (next to the file
            # it copies, with the home's permissions), never in a shared temp folder.
            folder = tempfile.mkdtemp(prefix=".cairn-hermes-copy-", dir=path.parent)
            target = Path(folder) / path.name
            shutil.copy2(path, target)
            with contextlib.suppress(FileNotFoundError):  # checkpointed meanwhile
                shutil.copy2(wal, Path(folder) / wal.name)
        try:
            conn = sqlite3.connect(readonly_uri(target), uri=True, timeout=5)
        except sqlite3.Error as exc:
            raise HermesError(f"{path} cannot be opened: {exc}") from exc
        try:
            yield conn
        except sqlite3.DatabaseError as exc:
            raise HermesError(f"{path} cannot be read: {exc}") from exc
        finally:
            conn.close()
    except OSError as exc:
        raise HermesError(f"{path} cannot be read: {exc.strerror or exc}") from exc
    finally:
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}


def session_ids(path: Path) -> list[str]:
    """The ids of the sessions stored in the other program's database."""
    with _reading(path) as conn:
        return [str(row[0]) for row in conn.execute("SELECT id FROM sessions ORDER BY id")]


def _tool_calls(value: Any) -> list[Any] | None:
    if value in (None, ""):
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    return value if isinstance(value, list) and value else None


def _clean(record: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in record.items() if value not in (None, "")}


def export_lines(path: Path) -> Iterator[str]:
    """The other program's sessions as Cairn's JSONL import lines, oldest first."""
    with _reading(path) as conn:
        conn.row_factory = sqlite3.Row
        have = _columns(conn, "sessions")
        fields = [f for f in _SESSION_FIELDS if f in have]
        order = "started_at, id" if "started_at" in have else "id"
        message_have = _columns(conn, "messages")
        message_fields = [f for f in _MESSAGE_FIELDS if f in message_have]
        message_order = "timestamp, id" if "timestamp" in message_have else "id"
        session_sql = f"SELECT {', '.join(['id', *fields])} FROM sessions ORDER BY {order}"
        message_sql = (
            f"SELECT {', '.join(['id', *message_fields])} FROM messages "
            f"WHERE session_id = ? ORDER BY {message_order}"
        )
        for row in conn.execute(session_sql).fetchall():
            session = _clean({"id": str(row["id"]), **{f: row[f] for f in fields}})
            session.setdefault("source", "hermes")
            session.setdefault("started_at", 0)
            messages = []
            for message in conn.execute(message_sql, (row["id"],)):
                record = {f: message[f] for f in message_fields}
                record["tool_calls"] = _tool_calls(record.get("tool_calls"))
                record.setdefault("role", "user")
                record["content"] = record.get("content") or ""
                if record.get("timestamp") is None:
                    record["timestamp"] = session["started_at"]
                messages.append(_clean(record) | {"content": record["content"]})
            session["messages"] = messages
            yield json.dumps(session, ensure_ascii=False)


def _foreign_ids(conn: sqlite3.Connection) -> list[str] | None:
    """The session ids of an open database that is another program's store, else None."""
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    if CairnMeta.__tablename__ in tables or not {"sessions", "messages"} <= tables:
        return None
    return [str(r[0]) for r in conn.execute("SELECT id FROM sessions")]


def _candidate(home: Home) -> Path | None:
    path = home.state_db
    return path if path.is_file() and path.stat().st_size > 0 else None


def missing(home: Home, store: SessionStore) -> int:
    """How many of the other program's sessions Cairn's store does not hold (0 when the home
    has no such database, or it cannot be read: this only feeds a hint)."""
    path = _candidate(home)
    if path is None:
        return 0
    try:
        # One read (one copy while the other program has it open): its kind, then its ids.
        with _reading(path) as conn:
            ids = _foreign_ids(conn)
        return 0 if ids is None else len(ids) - len(store.has_sessions(ids))
    except (HermesError, SQLAlchemyError):
        return 0


def _hint(count: int) -> str | None:
    if count <= 0:
        return None
    return (
        f"{count:,} session{'s' if count != 1 else ''} of the Hermes Agent state.db in this home "
        f"{'are' if count != 1 else 'is'} not in Cairn's store; {IMPORT_HINT} (their database "
        "is only read)"
    )


def hint(home: Home, store: SessionStore) -> str | None:
    """One line for a user whose shared home holds sessions Cairn has not copied."""
    return _hint(missing(home, store))


def import_from(
    home: Home, store: SessionStore, *, batch_size: int = DEFAULT_BATCH_SIZE
) -> ImportReport:
    """Copy the other program's sessions into ``store``; those already copied are skipped."""
    path = hermes_db(home)
    if path is None:
        raise HermesError(
            f"{home.state_db} is not a Hermes Agent session store (no such file, or it is "
            "Cairn's own)"
        )
    return import_sessions(store, export_lines(path), batch_size=batch_size)


FOREIGN_RESULTS = 5
_WORD = re.compile(r"\w[\w.-]*", re.UNICODE)


def search(
    home: Home, store: SessionStore, query: str, limit: int = FOREIGN_RESULTS
) -> tuple[str | None, list[dict[str, Any]]]:
    """The hint (as :func:`hint`) and the messages of the other program's sessions that Cairn
    has not copied holding every word of ``query`` (case-insensitive), newest first: read-only,
    beside Cairn's own results until the user imports them. One read of that database (one
    copy while the other program has it open) for both. (None, []) when there is no such
    database or nothing is missing."""
    path = _candidate(home)
    if path is None:
        return None, []
    words = [w.lower() for w in _WORD.findall(query)][:8]
    try:
        with _reading(path) as conn:
            ids = _foreign_ids(conn)
            if ids is None:
                return None, []
            copied = store.has_sessions(ids)
            if len(copied) == len(ids) or not words:
                return _hint(len(ids) - len(copied)), []
            order = "m.timestamp DESC" if "timestamp" in _columns(conn, "messages") else "m.id DESC"
            where = " AND ".join("lower(m.content) LIKE ? ESCAPE '\\'" for _ in words)
            params = [f"%{_escape_like(w)}%" for w in words]
            rows = conn.execute(
                f"SELECT m.session_id, m.id, m.role, m.content FROM messages m "
                f"WHERE {where} ORDER BY {order} LIMIT ?",
                [*params, (limit + len(copied)) * 4],
            ).fetchall()
    except (HermesError, SQLAlchemyError):
        return None, []
    found: list[dict[str, Any]] = []
    for session_id, message_id, role, content in rows:
        if str(session_id) in copied or any(f["session_id"] == str(session_id) for f in found):
            continue
        found.append(
            {
                "session_id": str(session_id),
                "message_id": message_id,
                "role": role,
                "content": str(content or "")[:300],
            }
        )
        if len(found) == limit:
            break
    return _hint(len(ids) - len(copied)), found


def _escape_like(word: str) -> str:
    return word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
