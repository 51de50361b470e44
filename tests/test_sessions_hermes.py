"""A Hermes Agent home's sessions: found, imported with lineage, idempotently, and their
database never written to (no byte changed, no -wal/-shm created).

The fixture is laid out as the reference program writes its state.db (REFERENCE §4: sessions
with lineage through parent_session_id, messages with tool calls as JSON text, unix-second
times, a WAL-mode database and an FTS table of its own), written here by hand."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from engine import cli
from engine.home import Home
from engine.sessions import hermes

SCHEMA = """
PRAGMA journal_mode=WAL;
CREATE TABLE schema_version (version INTEGER NOT NULL);
INSERT INTO schema_version VALUES (6);
CREATE TABLE sessions (
    id TEXT PRIMARY KEY, source TEXT NOT NULL, user_id TEXT, model TEXT, model_config TEXT,
    system_prompt TEXT, parent_session_id TEXT REFERENCES sessions(id), started_at REAL NOT NULL,
    ended_at REAL, end_reason TEXT, message_count INTEGER DEFAULT 0,
    tool_call_count INTEGER DEFAULT 0, input_tokens INTEGER DEFAULT 0,
    output_tokens INTEGER DEFAULT 0, title TEXT
);
CREATE TABLE messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL REFERENCES sessions(id),
    role TEXT NOT NULL, content TEXT, tool_call_id TEXT, tool_calls TEXT, tool_name TEXT,
    timestamp REAL NOT NULL, token_count INTEGER, finish_reason TEXT
);
CREATE VIRTUAL TABLE messages_fts USING fts5(content, content=messages, content_rowid=id);
"""

CALLS = [{"id": "c1", "type": "function", "function": {"name": "memory", "arguments": "{}"}}]


def hermes_home(root: Path) -> Home:
    home = Home(root)
    root.mkdir(parents=True)
    conn = sqlite3.connect(home.state_db)
    conn.executescript(SCHEMA)
    sessions = [
        ("h-root", "cli", None, 1_760_000_000.0, "compression", "Kestrel image service"),
        ("h-child", "cli", "h-root", 1_760_000_600.0, None, None),
        ("h-tg", "telegram", None, 1_760_100_000.0, None, "groceries"),
    ]
    for sid, source, parent, started, reason, title in sessions:
        conn.execute(
            "INSERT INTO sessions (id, source, model, parent_session_id, started_at, end_reason,"
            " title, input_tokens) VALUES (?, ?, 'hermes-3', ?, ?, ?, ?, 12)",
            (sid, source, parent, started, reason, title),
        )
    rows = [
        ("h-root", "user", "the Kestrel service resizes images on upload", None, None, None),
        ("h-root", "assistant", "", None, json.dumps(CALLS), None),
        ("h-root", "tool", '{"ok": true}', "c1", None, "memory"),
        ("h-child", "user", "where does Kestrel keep thumbnails?", None, None, None),
        ("h-child", "assistant", "In the bucket kestrel-thumbs.", None, None, None),
        ("h-tg", "user", "buy oat milk", None, None, None),
    ]
    for i, (sid, role, content, call_id, calls, tool) in enumerate(rows):
        conn.execute(
            "INSERT INTO messages (session_id, role, content, tool_call_id, tool_calls, tool_name,"
            " timestamp) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (sid, role, content, call_id, calls, tool, 1_760_000_001.0 + i),
        )
    conn.commit()
    conn.close()  # the last connection checkpoints: no -wal left, as when Hermes is not running
    return home


def files(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in root.iterdir() if p.name.startswith("state.db")}


def run(capsys: pytest.CaptureFixture[str], home: Home, *args: str) -> tuple[int, dict]:
    code = cli.main([*args, "--home", str(home.root), "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out)


def test_list_and_search_say_what_is_not_imported_then_import_copies_lineage_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = hermes_home(tmp_path / "home")
    before = files(home.root)

    code, listed = run(capsys, home, "sessions", "list")
    assert code == 0 and listed["sessions"] == []
    assert "3 sessions" in listed["hint"] and "--from-hermes" in listed["hint"]
    code, found = run(capsys, home, "sessions", "search", "Kestrel")
    assert "--from-hermes" in found["hint"]
    # Before the import their messages are still found, read-only, and marked as theirs.
    # One message a session, its newest match ("In the bucket kestrel-thumbs.").
    foreign = [(f["session_id"], f["role"]) for f in found["hermes_results"]]
    assert foreign == [("h-child", "assistant"), ("h-root", "user")]
    code = cli.main(["sessions", "search", "thumbnails", "--home", str(home.root)])
    out = capsys.readouterr().out
    assert "(Hermes Agent, not imported)" in out and "where does Kestrel keep thumbnails" in out
    code, found = run(capsys, home, "sessions", "search", "100%_off")
    assert found["hermes_results"] == [], "LIKE wildcards in a query match only themselves"

    code, report = run(capsys, home, "sessions", "import", "--from-hermes")
    assert code == 0, report
    assert (report["sessions_imported"], report["messages_imported"]) == (3, 6)
    code, again = run(capsys, home, "sessions", "import", "--from-hermes")
    assert (again["sessions_imported"], again["sessions_skipped"]) == (0, 3)

    code, shown = run(capsys, home, "sessions", "show", "h-child")
    assert shown["session"]["root_session_id"] == "h-root"
    assert shown["parent"]["id"] == "h-root"
    code, root = run(capsys, home, "sessions", "show", "h-root")
    assert root["session"]["end_reason"] == "compression"
    call = next(m for m in root["messages"] if m["role"] == "assistant")
    assert call["tool_calls"][0]["function"]["name"] == "memory"
    tool = next(m for m in root["messages"] if m["role"] == "tool")
    assert (tool["tool_call_id"], tool["tool_name"]) == ("c1", "memory")

    code, found = run(capsys, home, "sessions", "search", "thumbnails")
    assert [r["session_id"] for r in found["results"]] == ["h-child"]
    assert "hint" not in found, "everything is imported: no hint"
    assert files(home.root) == before, "their state.db is byte-identical, no -wal/-shm made"


def test_a_database_the_other_program_has_open_is_read_through_a_copy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Tried: Hermes running (its connection open, a -wal beside state.db holding the newest
    session). The import sees that session; the database and its -wal stay byte-identical
    (the -shm is SQLite's shared lock area, which any reader of a live database takes part in
    as the other program expects)."""
    home = hermes_home(tmp_path / "home")
    live = sqlite3.connect(home.state_db)
    live.execute("PRAGMA wal_autocheckpoint=0")
    live.execute(
        "INSERT INTO sessions (id, source, started_at) VALUES ('h-live', 'cli', 1760200000)"
    )
    live.execute(
        "INSERT INTO messages (session_id, role, content, timestamp)"
        " VALUES ('h-live', 'user', 'written while open', 1760200001)"
    )
    live.commit()
    try:
        before = files(home.root)
        assert "state.db-wal" in before
        code, report = run(capsys, home, "sessions", "import", "--from-hermes")
        assert code == 0 and report["sessions_imported"] == 4
        after = files(home.root)
        assert after.keys() == before.keys()
        assert (after["state.db"], after["state.db-wal"]) == (
            before["state.db"],
            before["state.db-wal"],
        )
    finally:
        live.close()


def test_no_hermes_store_is_a_clear_refusal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = Home(tmp_path / "plain")
    code = cli.main(["sessions", "import", "--from-hermes", "--home", str(home.root)])
    err = capsys.readouterr().err
    assert code != 0
    assert "not a Hermes Agent session store" in err
    assert len(err.strip().splitlines()) == 1
    assert hermes.hermes_db(home) is None


def chat_texts(window: object, kind: str) -> list[str]:
    from app.models.transcript_model import Role

    model = window.chat.model  # type: ignore[attr-defined]
    rows = [model.index(r) for r in range(model.rowCount())]
    return [str(i.data(Role.TEXT)) for i in rows if i.data(Role.KIND) == kind]


def test_the_window_offers_the_import_and_the_slash_command_runs_it(
    tmp_path: Path, qtbot: object
) -> None:
    """Tried as a user would: open the desktop app on a Hermes home. A notice says how many
    sessions are not imported and how; typing /sessions import-hermes copies them."""
    from PySide6.QtCore import Qt

    from tests.test_app_window import open_window

    home = hermes_home(tmp_path / "home")
    window = open_window(qtbot, home)  # type: ignore[arg-type]
    qtbot.waitUntil(  # type: ignore[attr-defined]
        lambda: any("3 sessions" in t for t in chat_texts(window, "notice")), timeout=10_000
    )
    notice = next(t for t in chat_texts(window, "notice") if "3 sessions" in t)
    assert "/sessions import-hermes" in notice

    pane = window.chat
    pane.input.setFocus()
    qtbot.keyClicks(pane.input, "/sessions import-hermes")  # type: ignore[attr-defined]
    qtbot.keyClick(pane.input, Qt.Key.Key_Return)  # type: ignore[attr-defined]
    qtbot.waitUntil(  # type: ignore[attr-defined]
        lambda: any("copied 3 sessions" in t for t in chat_texts(window, "command")),
        timeout=10_000,
    )
    window.close()


def test_search_reads_the_other_database_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hint and the not-yet-imported matches come from one read of their database (one
    copy of it while the other program has it open), not one read for each."""
    home = hermes_home(tmp_path / "home")
    reads: list[Path] = []
    real = hermes._reading

    def counted(path: Path):  # type: ignore[no-untyped-def]
        reads.append(path)
        return real(path)

    monkeypatch.setattr(hermes, "_reading", counted)
    code, found = run(capsys, home, "sessions", "search", "Kestrel")
    assert code == 0 and found["hermes_results"] and "--from-hermes" in found["hint"]
    assert reads == [home.state_db]
    reads.clear()
    code, listed = run(capsys, home, "sessions", "search", "--mode", "browse")
    assert code == 0 and "--from-hermes" in listed["hint"] and len(reads) == 1
