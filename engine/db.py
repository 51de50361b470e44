"""Cairn's SQLite database: which file it is, how connections are set up, the shared metadata.

``<home>/state.db`` is Cairn's unless another program already owns it (a Hermes Agent home has
its own ``state.db``); then Cairn keeps its data in ``<home>/cairn.db`` and never alters theirs.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, String, create_engine, event, select, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

# Which file is Cairn's and how to read it without SQLAlchemy: in a module of its own, so a
# command that only reads (``cairn memory show``) never imports SQLAlchemy.
from engine.db_files import BUSY_TIMEOUT_MS, META_TABLE
from engine.db_files import DatabaseError as DatabaseError
from engine.db_files import database_path as database_path
from engine.db_files import readonly_uri as readonly_uri
from engine.fsutil import locked
from engine.home import Home

APP_MARKER = "cairn"
# The newest Alembic revision in engine/migrations/versions; a test keeps the two in step, so
# an up-to-date database is recognised without importing Alembic (≈0.4 s) on every start.
SCHEMA_HEAD = "0009"


class Base(DeclarativeBase):
    pass


class CairnMeta(Base):
    """Marks a database as Cairn's own: the only kind Cairn creates tables in."""

    __tablename__ = META_TABLE
    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(String(256))


def register_functions(dbapi_conn: sqlite3.Connection) -> None:
    """The SQL functions Cairn's schema calls (the word-pair index's triggers and view)."""
    from engine.sessions.pairs import FUNCTION, pair_text

    dbapi_conn.create_function(FUNCTION, 3, pair_text, deterministic=True)


def _on_connect(dbapi_conn: Any, _record: Any) -> None:
    # Let SQLAlchemy, not the driver, decide when transactions begin (see _on_begin).
    dbapi_conn.isolation_level = None
    register_functions(dbapi_conn)
    cursor = dbapi_conn.cursor()
    # busy_timeout first: switching to WAL itself needs the lock another process may hold.
    cursor.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    cursor.execute("PRAGMA journal_mode = WAL")
    cursor.execute("PRAGMA synchronous = NORMAL")
    cursor.execute("PRAGMA foreign_keys = ON")
    cursor.close()


def _on_begin(conn: Any) -> None:
    # Writers ask for IMMEDIATE so they queue on the write lock at BEGIN (where busy_timeout
    # applies) instead of failing mid-transaction when a read lock cannot be upgraded.
    immediate = conn.get_execution_options().get("sqlite_immediate", False)
    conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


_engines: dict[str, Engine] = {}
_engines_lock = threading.Lock()
_MIGRATION_LOCK_KEY = 0x636169726E  # "cairn": one advisory lock id for migrations


def sqlite_engine(path: Path) -> Engine:
    """An engine on the SQLite file ``path`` set up like Cairn's own: WAL, busy timeout, and
    ``BEGIN IMMEDIATE`` for connections with the ``sqlite_immediate`` execution option."""
    engine = create_engine(f"sqlite:///{path}")
    event.listen(engine, "connect", _on_connect)
    event.listen(engine, "begin", _on_begin)
    return engine


def check_orphan_wal(path: Path) -> None:
    """Refuse a ``-wal`` file whose database is gone (or empty): it may hold every change
    since the last checkpoint, and opening a fresh database beside it would discard it."""
    wal = path.with_name(path.name + "-wal")
    try:
        if wal.stat().st_size == 0:
            return
    except FileNotFoundError:
        return
    if not path.exists() or path.stat().st_size == 0:
        raise DatabaseError(
            f"{wal} exists without its database {path.name}: it may hold your data. Put back "
            f"the {path.name} it belongs to, or move {wal.name} aside to start afresh"
        )


def open_engine(home: Home, url: str | None = None) -> Engine:
    """The (process-wide, cached) engine for ``home``'s database — or for ``url`` (a shared
    PostgreSQL server) — migrated to the newest schema on first use."""
    if url is not None and not url.startswith("sqlite"):
        return _cached(url, lambda: create_engine(url, pool_pre_ping=True), _migrate_server)
    for candidate in (home.state_db, home.own_db):
        check_orphan_wal(candidate)
    home.root.mkdir(parents=True, exist_ok=True)
    path = database_path(home)

    def make() -> Engine:
        return sqlite_engine(path)

    def migrate(engine: Engine) -> None:
        # Several processes may open a new home at once; one migrates, the rest wait.
        with locked(path.with_name(path.name + ".migrate.lock")):
            if _revision(engine) != SCHEMA_HEAD:
                upgrade(engine)

    for attempt in range(1, _OPEN_TRIES):
        try:
            return _cached(str(path), make, migrate)
        except DBAPIError as exc:
            # Processes creating one brand-new database together: SQLite answers a few of
            # their first statements "database is locked" at once, without the busy timeout
            # (the switch to WAL, a read snapshot another process's commit made stale). Nothing
            # was kept of the failed open, and migrating again is a no-op: open again.
            if not _busy(exc):
                raise
            time.sleep(_OPEN_PAUSE * attempt)
    return _cached(str(path), make, migrate)  # the last try, whatever it raises


_OPEN_TRIES, _OPEN_PAUSE = 4, 0.05


def _busy(exc: DBAPIError) -> bool:
    message = str(exc.orig).lower()
    return isinstance(exc.orig, sqlite3.OperationalError) and (
        "locked" in message or "busy" in message
    )


def _cached(key: str, make: Callable[[], Engine], migrate: Callable[[Engine], None]) -> Engine:
    with _engines_lock:
        engine = _engines.get(key)
        if engine is None:
            engine = make()
            if _revision(engine) != SCHEMA_HEAD:
                migrate(engine)
            _engines[key] = engine
        return engine


def _migrate_server(engine: Engine) -> None:
    with engine.connect() as conn:
        conn.execute(text("SELECT pg_advisory_lock(:k)"), {"k": _MIGRATION_LOCK_KEY})
        conn.commit()
        try:
            if _revision(engine) != SCHEMA_HEAD:
                upgrade(engine)
        finally:
            conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": _MIGRATION_LOCK_KEY})
            conn.commit()


def _revision(engine: Engine) -> str | None:
    try:
        with engine.connect() as conn:
            return conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
    except DBAPIError:  # no such table yet
        return None


def upgrade(engine: Engine) -> None:
    """Bring the database to the newest schema with Alembic and mark it as Cairn's."""
    from alembic import command
    from alembic.config import Config as AlembicConfig

    config = AlembicConfig()
    config.set_main_option("script_location", "engine:migrations")
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, "head")
    with Session(engine) as session, session.begin():
        if session.scalar(select(CairnMeta).where(CairnMeta.key == "app")) is None:
            session.add(CairnMeta(key="app", value=APP_MARKER))


def checkpoint_engines() -> None:
    """Copy every SQLite write-ahead log into its database and close the connections, as a
    command ends: ``state.db`` alone then holds everything (a user copying it backs up all of
    it), and with no other process on it SQLite removes the ``-wal`` and ``-shm`` files.
    PASSIVE never waits for another process (the desktop app) that is reading."""
    with _engines_lock:
        for engine in _engines.values():
            if engine.dialect.name == "sqlite":
                with contextlib.suppress(Exception), engine.connect() as conn:
                    conn.exec_driver_sql("PRAGMA wal_checkpoint(PASSIVE)")
            engine.dispose()
        _engines.clear()


def dispose_engines() -> None:
    with _engines_lock:
        for engine in _engines.values():
            engine.dispose()
        _engines.clear()
