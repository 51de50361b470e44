"""Checking, reindexing, damaged files and read-only opens, on real SQLite files."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import text

from engine.db import dispose_engines
from engine.home import Home
from engine.sessions import maintenance
from engine.sessions.search import SessionSearch
from engine.sessions.store import NewMessage, SessionStore
from tests.conftest import insert_behind_the_index


def _filled(home: Home, sessions: int = 40) -> SessionStore:
    store = SessionStore.open(home)
    for i in range(sessions):
        session = store.create_session(session_id=f"s{i:03}", title=f"session {i}")
        store.append(
            session.id,
            [
                NewMessage(role="user", content=f"question {i} about the frobnicator " * 8),
                NewMessage(role="assistant", content=f"answer {i} with details " * 8),
            ],
        )
    return store


def _found(store: SessionStore, query: str) -> list[str]:
    return [r["session_id"] for r in SessionSearch(store)("discover", query=query)["results"]]


def _snapshot(path: Path) -> tuple[bytes, int, set[str]]:
    return path.read_bytes(), path.stat().st_mtime_ns, set(os.listdir(path.parent))


def test_healthy_database_checks_ok(home: Home) -> None:
    report = maintenance.check(_filled(home, 3))
    assert report.ok and report.integrity == ["ok"] and report.counters_wrong == 0
    assert report.fts == dict.fromkeys([*maintenance.FTS_TABLES, "messages_time_blocks"], "ok")
    assert set(maintenance.FTS_TABLES) >= {"messages_fts", "messages_trigram", "messages_pairs"}
    assert "the index" not in maintenance.describe_check(report)


def test_index_missing_a_message_is_found_and_rebuilt(home: Home) -> None:
    store = _filled(home, 3)
    message = store.messages("s001")[0]
    with store.engine.begin() as conn:  # the FTS index forgets one message
        conn.execute(
            text(
                "INSERT INTO messages_fts(messages_fts, rowid, content, tool_name, tool_calls) "
                "VALUES ('delete', :id, :content, NULL, NULL)"
            ),
            {"id": message.id, "content": message.content},
        )
        conn.execute(  # and so does the stemmed index (the first message has no context)
            text(
                "INSERT INTO messages_stem(messages_stem, rowid, content, context) "
                "VALUES ('delete', :id, :content, NULL)"
            ),
            {"id": message.id, "content": message.content},
        )
    assert _found(store, "question 1 about") != ["s001"]
    report = maintenance.check(store)
    assert not report.ok and report.fts["messages_trigram"] == "ok"
    assert "does not match" in report.fts["messages_fts"]
    assert "does not match" in report.fts["messages_stem"]
    assert "cairn sessions reindex" in maintenance.describe_check(report)
    steps: list[tuple[int, int]] = []
    done = maintenance.reindex(store, progress=lambda *a: steps.append(a))
    # Four indexes one by one, the two that may trail together, time blocks, counters.
    assert steps == [(i, 6) for i in range(1, 7)] and done.messages == 6
    assert maintenance.check(store).ok
    assert _found(store, "question 1 about")[0] == "s001"


def test_messages_written_without_triggers_are_indexed_by_reindex(home: Home) -> None:
    store = _filled(home, 2)
    with store.engine.begin() as conn:  # the stemmed index's trigger is off too
        stem_trigger = conn.execute(
            text("SELECT sql FROM sqlite_master WHERE name = 'messages_stem_ai'")
        ).scalar_one()
        conn.execute(text("DROP TRIGGER messages_stem_ai"))
    insert_behind_the_index(store, "s000", "the quokka migration plan")
    with store.engine.begin() as conn:
        conn.execute(text(stem_trigger))
    assert _found(store, "quokka") == []
    report = maintenance.check(store)
    assert not report.ok
    assert report.fts["messages_fts"] != "ok" and report.fts["messages_trigram"] != "ok"
    assert report.fts["messages_stem"] != "ok"
    assert report.counters_wrong == 1  # the row went in behind the store's back
    fixed = maintenance.reindex(store)
    assert fixed.counters_fixed == 1
    assert maintenance.check(store).ok
    assert _found(store, "quokka") == ["s000"]
    info = store.get_session("s000")
    assert info is not None and info.message_count == 3


def test_time_blocks_out_of_step_are_found_and_refilled(home: Home) -> None:
    """A message written behind the blocks' trigger would sit outside every id range a date
    bound becomes: the check says so and reindex refills the blocks."""
    store = _filled(home, 2)
    with store.engine.begin() as conn:
        conn.execute(text("DROP TRIGGER messages_time_blocks_ai"))
        conn.execute(
            text(
                "INSERT INTO messages(id, session_id, role, content, timestamp) "
                "VALUES (5000, 's000', 'user', 'the wombat census', 5.0)"
            )
        )
    search = SessionSearch(store)
    assert search("discover", query="wombat", until=10.0)["results"] == []
    report = maintenance.check(store)
    assert "outside" in report.fts["messages_time_blocks"] and not report.ok
    maintenance.reindex(store)
    assert maintenance.check(store).fts["messages_time_blocks"] == "ok"
    found = search("discover", query="wombat", until=10.0)["results"]
    assert [r["session_id"] for r in found] == ["s000"]


def _real_database(home: Home) -> Path:
    _filled(home, 60)
    dispose_engines()  # closes every connection: the WAL is checkpointed and removed
    assert home.state_db.stat().st_size > 8 * 4096
    return home.state_db


@pytest.mark.parametrize("damage", ["garbage", "truncated", "short"])
@pytest.mark.parametrize("readonly", [False, True])
def test_damaged_file_is_refused_and_never_touched(home: Home, damage: str, readonly: bool) -> None:
    path = _real_database(home)
    data = path.read_bytes()
    broken = {
        "garbage": os.urandom(1000) * 40,
        "truncated": data[: len(data) // 2],
        "short": data[:60],
    }[damage]
    path.write_bytes(broken)
    before = _snapshot(path)
    with pytest.raises(maintenance.CorruptDatabaseError) as caught:
        maintenance.open_store(home, readonly=readonly)
    message = str(caught.value)
    assert "not a valid SQLite database" in message
    assert "move it aside" in message and "cairn sessions import" in message
    assert "restore a backup" in message
    assert path.read_bytes() == broken and path.stat().st_mtime_ns == before[1]
    if readonly:
        assert set(os.listdir(path.parent)) == before[2]


def test_readonly_open_writes_nothing(home: Home) -> None:
    path = _real_database(home)
    path.chmod(0o444)  # binds only when not root; the checks below hold either way
    try:
        before = _snapshot(path)
        store = maintenance.open_store(home, readonly=True)
        assert _found(store, "question 17 about")[0] == "s017"
        assert SessionSearch(store)("read", session_id="s003")["message_count"] == 2
        assert maintenance.check(store).ok  # FTS checks are skipped, not failed
        with pytest.raises(Exception, match="readonly"):
            store.create_session(session_id="nope")
        store.engine.dispose()
        assert _snapshot(path) == before
        assert not path.with_name("state.db-wal").exists()
    finally:
        path.chmod(0o644)


def test_readonly_sees_what_a_live_writer_has_not_checkpointed(home: Home) -> None:
    writer = _filled(home, 2)
    writer.add_message("s000", "user", "fresh wombat news")  # still in the -wal file
    assert home.state_db.with_name("state.db-wal").exists()
    reader = maintenance.open_store(home, readonly=True)
    assert _found(reader, "wombat") == ["s000"]
    reader.engine.dispose()


def test_readonly_needs_an_existing_current_database(home: Home, tmp_path: Path) -> None:
    with pytest.raises(maintenance.SessionsDatabaseError, match="no session database"):
        maintenance.open_store(home, readonly=True)
    assert not home.state_db.exists()
    old = Home(tmp_path / "old")
    old.root.mkdir()
    with sqlite3.connect(old.state_db) as conn:
        conn.execute("CREATE TABLE cairn_meta (key TEXT PRIMARY KEY, value TEXT)")
    with pytest.raises(maintenance.SessionsDatabaseError, match="without --readonly"):
        maintenance.open_store(old, readonly=True)


def test_readonly_finds_cairn_db_beside_another_programs_state_db(tmp_path: Path) -> None:
    home = Home(tmp_path / "shared")
    home.root.mkdir()
    with sqlite3.connect(home.state_db) as conn:
        conn.execute("CREATE TABLE their_sessions (id TEXT)")
    store = SessionStore.open(home)  # Cairn keeps its data in cairn.db
    store.create_session(session_id="mine")
    store.add_message("mine", "user", "the shared home")
    dispose_engines()
    reader = maintenance.open_store(home, readonly=True)
    assert _found(reader, "shared home") == ["mine"]
    reader.engine.dispose()


def test_database_path_probe_leaves_no_files(home: Home) -> None:
    from engine.db import database_path

    path = _real_database(home)
    before = set(os.listdir(path.parent))
    database_path(home)
    assert set(os.listdir(path.parent)) == before
