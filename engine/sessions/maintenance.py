"""Keeping the session database sound: opening it safely, checking it, rebuilding its indexes.

Opening never writes to a file that does not look like a whole SQLite database: a file that is
not SQLite at all, or one cut short (its header promises more pages than it holds, confirmed by
a read-only ``quick_check``), raises :class:`CorruptDatabaseError` with what to do next, and the
file is left byte for byte as it was.

``--readonly`` opens go through SQLite's ``mode=ro`` URI and change nothing on disk. When no
``-wal`` file is present nobody has the database open, and the file is also opened
``immutable`` so that SQLite does not create ``-wal``/``-shm`` files next to it (which it
otherwise does even for a read-only connection to a WAL database).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic import BaseModel, Field
from sqlalchemy import Connection, Engine, create_engine, text
from sqlalchemy.exc import DatabaseError as SqlDatabaseError
from sqlalchemy.exc import OperationalError
from sqlalchemy.pool import QueuePool

from engine.db import (
    BUSY_TIMEOUT_MS,
    SCHEMA_HEAD,
    DatabaseError,
    database_path,
    readonly_uri,
    register_functions,
)
from engine.home import Home
from engine.sessions import backlog
from engine.sessions.fts_sqlite import BLOCK_BITS, BLOCKS, FILL_BLOCKS
from engine.sessions.store import SessionStore

FTS_TABLES = (
    "messages_fts",
    "messages_trigram",
    "messages_cjk",
    "messages_pairs",
    "messages_stem",
)
SQLITE_MAGIC = b"SQLite format 3\x00"
NOT_CHECKED = "not checked (read-only database)"


class SessionsDatabaseError(DatabaseError):
    """The session database cannot be used as asked; the message says why and what to do."""


class CorruptDatabaseError(SessionsDatabaseError):
    def __init__(self, path: Path, detail: str) -> None:
        self.path = path
        self.detail = detail
        super().__init__(
            f"{path} is not a valid SQLite database ({detail}). Cairn has not changed it. "
            f"To recover, move it aside (e.g. `mv {path} {path}.broken`), then run "
            "`cairn sessions import FILE` with an export, or restore a backup."
        )


def is_corruption(exc: BaseException) -> bool:
    """Whether a database error means a damaged file rather than, say, a busy one."""
    text_ = str(getattr(exc, "orig", None) or exc).lower()
    return any(
        marker in text_
        for marker in ("malformed", "not a database", "file is encrypted", "disk image")
    )


# -- opening -----------------------------------------------------------------------------------


def _header_problem(path: Path) -> str | None:
    """What the first 100 bytes say is wrong with ``path`` as a SQLite file, if anything."""
    size = path.stat().st_size
    with path.open("rb") as handle:
        head = handle.read(100)
    if len(head) < 100 or not head.startswith(SQLITE_MAGIC):
        return "it does not start with the SQLite file header"
    page_size = int.from_bytes(head[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    if page_size < 512 or page_size & (page_size - 1):
        return f"its header gives an impossible page size, {page_size}"
    change_counter = int.from_bytes(head[24:28], "big")
    pages = int.from_bytes(head[28:32], "big")
    valid_for = int.from_bytes(head[92:96], "big")
    if size % page_size:
        return f"it holds {size:,} bytes, not a whole number of {page_size}-byte pages: truncated?"
    if valid_for == change_counter and size < pages * page_size:
        return (
            f"its header promises {pages:,} pages ({pages * page_size:,} bytes) but the file "
            f"holds {size:,} bytes: truncated?"
        )
    return None


def _connect_readonly(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(
        readonly_uri(path), uri=True, timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False
    )
    conn.execute("PRAGMA query_only = 1")
    register_functions(conn)
    return conn


def _confirm_damage(path: Path, suspicion: str) -> str | None:
    """``quick_check`` through a read-only connection: the damage found, or None if it is sound
    (a header can run ahead of the file while another process is checkpointing)."""
    try:
        conn = _connect_readonly(path)
        try:
            rows = [r[0] for r in conn.execute("PRAGMA quick_check(5)")]
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        return f"{suspicion}; SQLite says: {exc}"
    if rows == ["ok"]:
        return None
    return f"{suspicion}; SQLite's quick_check says: {rows[0]}"


def inspect_database(path: Path) -> None:
    """Raise :class:`CorruptDatabaseError` if ``path`` exists and is not a whole SQLite file.

    Reads only: the header, and a read-only ``quick_check`` when the header looks wrong.
    """
    try:
        if not path.exists() or path.stat().st_size == 0:
            return
        suspicion = _header_problem(path)
    except OSError as exc:
        raise SessionsDatabaseError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if suspicion is None:
        return
    if suspicion.startswith("it does not start") or "impossible page size" in suspicion:
        raise CorruptDatabaseError(path, suspicion)
    damage = _confirm_damage(path, suspicion)
    if damage is not None:
        raise CorruptDatabaseError(path, damage)


def _locate(home: Home) -> Path:
    inspect_database(home.state_db)
    try:
        path = database_path(home)
    except DatabaseError as exc:
        # database_path read state.db read-only and SQLite refused it.
        detail = str(exc.__cause__ or exc)
        if "unable to open" in detail:
            raise SessionsDatabaseError(f"cannot open {home.state_db}: {detail}") from exc
        raise CorruptDatabaseError(home.state_db, detail) from exc
    inspect_database(path)
    return path


def readonly_engine(path: Path) -> Engine:
    """An engine that can only read ``path``; it never creates or changes a file."""
    return create_engine("sqlite://", creator=lambda: _connect_readonly(path), poolclass=QueuePool)


def open_store(home: Home, *, readonly: bool = False) -> SessionStore:
    """The session store of ``home``, after making sure the file is sound.

    ``readonly``: the database must already exist at the current schema; nothing is written.
    """
    path = _locate(home)
    if not readonly:
        try:
            return SessionStore.open(home)
        except SqlDatabaseError as exc:
            if is_corruption(exc):
                raise CorruptDatabaseError(path, str(exc.orig or exc)) from exc
            raise
    if not path.exists() or path.stat().st_size == 0:
        raise SessionsDatabaseError(f"there is no session database at {path} to open read-only")
    engine = readonly_engine(path)
    try:
        with engine.connect() as conn:
            revision = conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
    except OperationalError as exc:
        if "no such table" not in str(exc):
            raise
        revision = None
    except SqlDatabaseError as exc:
        if is_corruption(exc):
            raise CorruptDatabaseError(path, str(exc.orig or exc)) from exc
        raise
    if revision != SCHEMA_HEAD:
        engine.dispose()
        raise SessionsDatabaseError(
            f"{path} is at schema {revision or 'none'}, this Cairn reads {SCHEMA_HEAD}; open it "
            "once without --readonly to bring it up to date"
        )
    return SessionStore(engine)


# -- checking and repairing ----------------------------------------------------------------------


class CheckReport(BaseModel):
    ok: bool
    integrity: list[str]  # ["ok"] or SQLite's findings
    fts: dict[str, str] = Field(default_factory=dict)  # table → "ok" or the problem
    counters_wrong: int = 0  # sessions whose message/tool-call counts disagree with messages
    index_backlog: int = 0  # messages the trailing indexes do not hold yet (backlog.py)
    seconds: float = 0.0


class ReindexReport(BaseModel):
    tables: list[str]
    messages: int
    counters_fixed: int
    seconds: float


_MESSAGES_OF = "(SELECT count(*) FROM messages AS m WHERE m.session_id = sessions.id)"
_CALLS_OF = (
    "(SELECT coalesce(sum(CASE WHEN json_valid(m.tool_calls) "
    "THEN json_array_length(m.tool_calls) ELSE 0 END), 0) "
    "FROM messages AS m WHERE m.session_id = sessions.id AND m.tool_calls IS NOT NULL)"
)
_COUNTS_WRONG = f"message_count != {_MESSAGES_OF} OR tool_call_count != {_CALLS_OF}"


_DELETE_TRIGGERS = (
    "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'messages' "
    "AND upper(sql) LIKE '%DELETE ON MESSAGES%'"
)


def _keep_only_indexed(conn: Connection, first_id: int) -> None:
    """Inside a transaction the caller rolls back: the messages from ``first_id`` on taken
    away (their delete triggers dropped first, so that no index is touched), leaving exactly
    the messages a trailing index must hold, for FTS5 to compare it with."""
    for (name,) in conn.exec_driver_sql(_DELETE_TRIGGERS).all():
        conn.exec_driver_sql(f"DROP TRIGGER {name}")
    conn.exec_driver_sql("DELETE FROM messages WHERE id >= ?", (first_id,))


def _fts_check(conn: Connection, table: str, first_unindexed: int | None = None) -> str:
    """FTS5's check of ``table`` against the messages (those below ``first_unindexed`` for
    an index that trails), in a transaction the caller rolls back."""
    try:
        if first_unindexed is not None:
            _keep_only_indexed(conn, first_unindexed)
        # rank = 1: also compare the index with the rows of the external content table.
        conn.exec_driver_sql(f"INSERT INTO {table}({table}, rank) VALUES ('integrity-check', 1)")
    except SqlDatabaseError as exc:
        message = str(exc.orig or exc)
        if "readonly" in message:
            return NOT_CHECKED
        if "malformed" in message:
            return (
                f"the index does not match the messages ({message}); run `cairn sessions reindex`"
            )
        return message
    return "ok"


def _blocks_check(conn: Connection) -> str:
    outside = conn.exec_driver_sql(
        f"SELECT count(*) FROM messages AS m LEFT JOIN {BLOCKS} AS b "
        f"ON b.block = m.id >> {BLOCK_BITS} "
        "WHERE b.block IS NULL OR m.timestamp < b.low OR m.timestamp > b.high"
    ).scalar()
    if outside:
        return f"{outside} message(s) outside their block's time span; run `cairn sessions reindex`"
    return "ok"


def check(store: SessionStore, *, quick: bool = False) -> CheckReport:
    """SQLite's integrity check, the search indexes against the messages, and counters."""
    started = time.perf_counter()
    pragma = "quick_check" if quick else "integrity_check"
    with store.engine.connect() as conn:
        integrity = [str(r[0]) for r in conn.exec_driver_sql(f"PRAGMA {pragma}")]
        counters_wrong = int(
            conn.exec_driver_sql(f"SELECT count(*) FROM sessions WHERE {_COUNTS_WRONG}").scalar()
            or 0
        )
        blocks = _blocks_check(conn)
    fts: dict[str, str] = {}
    behind = 0
    # The FTS5 check is an INSERT command: it needs a write transaction, rolled back after.
    with store._writer.connect() as conn:
        for table in FTS_TABLES:
            with conn.begin() as transaction:
                # An index that trails holds the messages below the backlog's start: it is
                # compared with those alone.
                first = backlog.first_unindexed(conn) if table in backlog.TRAILING else None
                if first is not None:
                    behind = backlog.left(conn)
                fts[table] = _fts_check(conn, table, first)
                transaction.rollback()
    fts[BLOCKS] = blocks
    fts_ok = all(v in ("ok", NOT_CHECKED) for v in fts.values())
    ok = integrity == ["ok"] and fts_ok and not counters_wrong
    return CheckReport(
        ok=ok,
        integrity=integrity,
        fts=fts,
        counters_wrong=counters_wrong,
        index_backlog=behind,
        seconds=time.perf_counter() - started,
    )


def _command(store: SessionStore, tables: Sequence[str], command: str) -> None:
    """One FTS5 command ('rebuild', 'optimize') on each of ``tables``, in one transaction."""

    def work(conn: Connection) -> None:
        for table in tables:
            conn.exec_driver_sql(f"INSERT INTO {table}({table}) VALUES ('{command}')")
        if command == "rebuild" and set(backlog.TRAILING) <= set(tables):
            backlog.forget(conn)  # they hold every message now

    store._write(work)


def _rebuild_steps() -> list[tuple[str, ...]]:
    """The tables rebuilt together: the trailing ones in one transaction, which also ends
    their backlog (rebuilt apart, one would hold messages from the backlog on while a write
    meanwhile took them to be absent)."""
    steps = [(table,) for table in FTS_TABLES if table not in backlog.TRAILING]
    return [*steps, backlog.TRAILING]


def reindex(
    store: SessionStore, progress: Callable[[int, int], None] | None = None
) -> ReindexReport:
    """Rebuild the search indexes from the messages, and recount every session.

    ``progress(steps_done, steps_total)`` after each step; each step is one transaction.
    """
    started = time.perf_counter()
    rebuilds = _rebuild_steps()
    steps = len(rebuilds) + 2
    set_automerge(store, AUTOMERGE)  # in case an import was killed while it was raised
    for done, tables in enumerate(rebuilds, start=1):
        _command(store, tables, "rebuild")
        if progress is not None:
            progress(done, steps)

    def refill_blocks(conn: Connection) -> None:
        conn.exec_driver_sql(f"DELETE FROM {BLOCKS}")
        conn.exec_driver_sql(FILL_BLOCKS)

    store._write(refill_blocks)
    if progress is not None:
        progress(steps - 1, steps)

    def recount(conn: Connection) -> int:
        result = conn.exec_driver_sql(
            f"UPDATE sessions SET message_count = {_MESSAGES_OF}, tool_call_count = {_CALLS_OF} "
            f"WHERE {_COUNTS_WRONG}"
        )
        return int(result.rowcount)

    fixed = store._write(recount)
    if progress is not None:
        progress(steps, steps)
    with store.engine.connect() as conn:
        messages = int(conn.exec_driver_sql("SELECT count(*) FROM messages").scalar() or 0)
    return ReindexReport(
        tables=[*FTS_TABLES, BLOCKS],
        messages=messages,
        counters_fixed=fixed,
        seconds=time.perf_counter() - started,
    )


# FTS5 merges a level's segments once it has this many (its default); a large import raises it
# to BULK_AUTOMERGE while it runs, since it merges everything at the end anyway.
AUTOMERGE, BULK_AUTOMERGE = 4, 16


def set_automerge(store: SessionStore, segments: int) -> None:
    """How many segments of a level FTS5 lets gather before merging them (SQLite only).

    Every merge rewrites what it merges: during a large import, whose indexes are merged into
    one segment each at the end (:func:`optimize`), merging 16 at a time instead of 4 saves
    about a fifth of the import's time. The setting is stored in each index's ``_config``
    table; an import killed before it ends leaves 16, which changes no result (queries read a
    few more segments) and is put back by the next large import or by ``reindex``.
    """
    if store.engine.dialect.name != "sqlite":
        return

    def work(conn: Connection) -> None:
        for table in FTS_TABLES:
            conn.exec_driver_sql(
                f"INSERT INTO {table}({table}, rank) VALUES ('automerge', {int(segments)})"
            )

    store._write(work)


def optimize(store: SessionStore, tables: Sequence[str] = FTS_TABLES) -> None:
    """Merge each full-text index of ``tables`` into a single segment (SQLite only), merging
    as usual again from then on.

    Bulk imports leave many segments behind, and every query reads each one; merged, the
    common-term and phrase queries of a large history read one b-tree per term instead.
    """
    if store.engine.dialect.name != "sqlite":
        return
    set_automerge(store, AUTOMERGE)
    for table in tables:
        _command(store, [table], "optimize")
    # The merged indexes are rewritten into the WAL; until it is folded back into the
    # database file, every read goes through a WAL index as large as the indexes themselves.
    # Outside any transaction: an open one on this connection would hold the WAL in place.
    raw = store.engine.raw_connection()
    try:
        driver = raw.driver_connection
        assert driver is not None  # a pooled SQLite connection always has one
        driver.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        raw.close()


class CatchUp(BaseModel):
    messages: int  # indexed by this catch-up
    left: int  # still to index (0 when caught up)
    seconds: float


def catch_up(
    store: SessionStore,
    *,
    chunk: int = backlog.CHUNK,
    progress: Callable[[int, int], None] | None = None,
    keep_going: Callable[[], bool] = lambda: True,
) -> CatchUp:
    """Index what the trailing indexes lack (backlog.py), a chunk per transaction, while
    ``keep_going()``; ``progress(indexed, left)`` after each chunk. A large catch-up ends by
    merging the two indexes, as a large import merges its own."""
    started = time.perf_counter()
    if store.engine.dialect.name != "sqlite":
        return CatchUp(messages=0, left=0, seconds=0.0)
    with store.engine.connect() as conn:
        remaining = backlog.left(conn)
        # A backlog whose messages were all deleted since still ends by a step (which finds
        # nothing to index).
        more = backlog.first_unindexed(conn) is not None
    indexed = 0
    large = remaining > backlog.INLINE
    if large:  # merged whole at the end: merge less on the way, as a large import does
        set_automerge(store, BULK_AUTOMERGE)
    try:
        while more and keep_going():
            done, more = store._write(lambda conn: backlog.step(conn, chunk))
            indexed += done
            remaining = max(0, remaining - done) if more else 0
            if progress is not None:
                progress(indexed, remaining)
        if not more and large:
            optimize(store, backlog.TRAILING)  # which also merges as usual again
            large = False
    finally:
        if large:  # stopped before the end: as usual
            set_automerge(store, AUTOMERGE)
    if more:  # messages written meanwhile count too
        with store.engine.connect() as conn:
            remaining = backlog.left(conn)
    return CatchUp(messages=indexed, left=remaining, seconds=time.perf_counter() - started)


def describe_check(report: CheckReport) -> str:
    lines = [
        "integrity: " + ("ok" if report.integrity == ["ok"] else "; ".join(report.integrity[:5]))
    ]
    lines += [f"{table}: {state}" for table, state in report.fts.items()]
    if report.index_backlog:
        lines.append(
            f"catching up: {report.index_backlog:,} message(s) not yet in the substring and "
            "phrase indexes (found all the same); `cairn sessions reindex --catch-up` ends it"
        )
    lines.append(
        "counters: ok"
        if not report.counters_wrong
        else f"counters: {report.counters_wrong} session(s) with wrong message counts; "
        "run `cairn sessions reindex`"
    )
    return "\n".join(lines)
