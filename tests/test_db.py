"""Cairn's database never alters another program's state.db, and a broken one never blocks
memory: the files are the source of truth."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from engine.config import Config
from engine.db import database_path, open_engine
from engine.home import Home
from engine.memory.entries import Target
from engine.memory.service import MemoryService


def _hermes_state_db(home: Home) -> bytes:
    home.root.mkdir(parents=True)
    with sqlite3.connect(home.state_db) as conn:
        conn.executescript(
            "CREATE TABLE schema_version (version INTEGER);"
            "CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT);"
            "CREATE TABLE messages (id INTEGER PRIMARY KEY, session_id TEXT, content TEXT);"
            "INSERT INTO sessions VALUES ('s1', 'cli');"
        )
    conn.close()
    return home.state_db.read_bytes()


def test_fresh_home_uses_state_db(home: Home) -> None:
    assert database_path(home) == home.state_db
    open_engine(home)
    assert database_path(home) == home.state_db  # now marked as Cairn's


def test_another_programs_state_db_is_left_alone(home: Home) -> None:
    original = _hermes_state_db(home)
    assert database_path(home) == home.own_db
    service = MemoryService(home, Config())
    service.write(Target.MEMORY, [{"action": "add", "content": "shared home fact"}])
    assert home.state_db.read_bytes() == original
    assert [e.action for e in service.events()] == ["add"]
    assert home.own_db.exists()


def test_corrupt_database_does_not_block_memory(home: Home) -> None:
    """Tried: state.db full of garbage bytes. Memory writes still succeed and say the history
    was not recorded; the garbage file is not touched."""
    home.root.mkdir(parents=True)
    garbage = b"this is not sqlite" * 100
    home.state_db.write_bytes(garbage)
    service = MemoryService(home, Config())
    result = service.write(Target.MEMORY, [{"action": "add", "content": "still saved"}])
    assert result["status"] == "applied"
    assert any("history not recorded" in w for w in result["warnings"])
    assert service.read(Target.MEMORY).entries == ["still saved"]
    assert home.state_db.read_bytes() == garbage


def test_schema_head_matches_the_migrations() -> None:
    from alembic.config import Config as AlembicConfig
    from alembic.script import ScriptDirectory

    from engine.db import SCHEMA_HEAD

    config = AlembicConfig()
    config.set_main_option("script_location", "engine:migrations")
    assert ScriptDirectory.from_config(config).get_current_head() == SCHEMA_HEAD


def test_migrations_build_exactly_the_declared_schema(home: Home) -> None:
    """Autogenerate finds no difference between the migrated database and the models."""
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext

    from engine.db import Base
    from engine.memory.history import MemoryEventRow
    from engine.sessions.models import MessageRow

    assert MemoryEventRow.__table__.metadata is MessageRow.__table__.metadata is Base.metadata
    with open_engine(home).connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    # The full-text tables are SQLite virtual tables that the models do not declare.
    diff = [d for d in diff if not (d[0] == "remove_table" and d[1].name.startswith("messages_"))]
    assert diff == []


def test_a_new_database_locked_at_once_is_opened_again(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Tried: the first two opens of a brand-new home fail with "database is locked", as SQLite
    answers some statements of processes creating one database together without waiting; the
    third opens it. Any other error is raised at once, and a lock that lasts is reported."""
    from sqlalchemy.exc import OperationalError

    import engine.db as db

    real = db._cached
    failures = iter([True, True])

    def flaky(*args, **kwargs):  # type: ignore[no-untyped-def]
        if next(failures, False):
            raise OperationalError("PRAGMA", {}, sqlite3.OperationalError("database is locked"))
        return real(*args, **kwargs)

    monkeypatch.setattr(db, "_cached", flaky)
    engine = db.open_engine(Home(tmp_path / "a"))
    assert db._revision(engine) == db.SCHEMA_HEAD

    def broken(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise OperationalError("SELECT", {}, sqlite3.OperationalError("no such table: x"))

    monkeypatch.setattr(db, "_cached", broken)
    with pytest.raises(OperationalError, match="no such table"):
        db.open_engine(Home(tmp_path / "b"))
    calls = []

    def always_locked(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        raise OperationalError("PRAGMA", {}, sqlite3.OperationalError("database is locked"))

    monkeypatch.setattr(db, "_cached", always_locked)
    with pytest.raises(OperationalError, match="locked"):
        db.open_engine(Home(tmp_path / "c"))
    assert len(calls) == db._OPEN_TRIES
