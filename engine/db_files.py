"""Cairn's database file, found and read without SQLAlchemy.

Every start of a command that only reads memory would otherwise import SQLAlchemy (about a
quarter of a second) to ask one question; these helpers answer it with the standard library.
:mod:`engine.db` builds on them for everything else.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from engine.home import Home

BUSY_TIMEOUT_MS = 5000
# The table that marks a database as Cairn's own (``engine.db.CairnMeta``).
META_TABLE = "cairn_meta"


class DatabaseError(RuntimeError):
    pass


def readonly_uri(path: Path) -> str:
    """A ``mode=ro`` URI for ``path``, ``immutable`` too when nobody has the database open.

    A read-only connection to a WAL database otherwise creates ``-wal``/``-shm`` files beside
    it, which it then cannot remove; with no ``-wal`` present there is nothing to replay.
    """
    wal = path.with_name(path.name + "-wal")
    params = "mode=ro" if wal.exists() else "mode=ro&immutable=1"
    return f"{path.absolute().as_uri()}?{params}"


def connect_readonly(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(readonly_uri(path), uri=True, timeout=BUSY_TIMEOUT_MS / 1000)


def tables(path: Path) -> set[str]:
    try:
        conn = connect_readonly(path)
        try:
            rows = conn.execute("SELECT name FROM sqlite_master WHERE type='table'").fetchall()
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        raise DatabaseError(f"{path} is not a readable SQLite database: {exc}") from exc
    return {row[0] for row in rows}


def database_path(home: Home) -> Path:
    """The database file Cairn owns in ``home``."""
    path = home.state_db
    if not path.exists() or path.stat().st_size == 0:
        return path
    found = tables(path)
    if not found or META_TABLE in found:
        return path
    return home.own_db
