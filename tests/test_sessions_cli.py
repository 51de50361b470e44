"""`cairn sessions` as a user would try it, through the real entry point in child processes."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine import cli
from engine.db import dispose_engines
from engine.home import Home
from engine.sessions.store import NewMessage, SessionStore
from tests.conftest import insert_behind_the_index, run_cairn


def _ok(proc: subprocess.CompletedProcess[str], code: int = 0) -> subprocess.CompletedProcess[str]:
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    return proc


def _json(proc: subprocess.CompletedProcess[str], code: int = 0) -> dict:
    return json.loads(_ok(proc, code).stdout)


def _main(capsys: pytest.CaptureFixture[str], home: Home, *args: str) -> tuple[int, str, str]:
    """The same entry point in this process, for the cases that need no child of their own."""
    code = cli.main([*args, "--home", str(home.root)])
    out, err = capsys.readouterr()
    return code, out, err


def _line(sid: str, *texts: str, **fields: object) -> str:
    messages = [{"role": "user", "content": t, "timestamp": 1.7e9 + i} for i, t in enumerate(texts)]
    session = {"id": sid, "source": "cli", "title": sid, "started_at": 1.7e9, "messages": messages}
    return json.dumps({**session, **fields})


def _fill(home: Home) -> SessionStore:
    store = SessionStore.open(home)
    store.create_session(session_id="root-0001", title="Kubernetes ingress", started_at=1.7e9)
    store.append(
        "root-0001",
        [NewMessage(role="user", content=f"step {i} of the ingress setup") for i in range(6)],
    )
    store.end_session("root-0001", "compression")
    store.create_session(session_id="child-0002", parent_session_id="root-0001", title="Ingress 2")
    store.append(
        "child-0002",
        [
            NewMessage(role="user", content="the annotation for TLS redirect"),
            NewMessage(role="assistant", content="", tool_calls=[{"id": "c1"}]),
            NewMessage(role="tool", content="ok", tool_name="terminal", tool_call_id="c1"),
        ],
    )
    store.create_session(session_id="grand-0003", parent_session_id="child-0002")
    store.create_session(session_id="other-0004", title="Lunch", source="telegram")
    store.add_message("other-0004", "user", "sandwich options near the office")
    return store


def test_import_reports_bad_lines_and_never_duplicates(home: Home, tmp_path: Path) -> None:
    lines = [
        _line("a", "first"),
        "{broken",
        "",
        json.dumps({"id": "b", "started_at": 1, "messages": [{"role": "robot", "timestamp": 1}]}),
        _line("c", "third", "fourth"),
    ]
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    proc = _ok(run_cairn("sessions", "import", str(path), home=home))
    assert "imported 2 sessions (3 messages)" in proc.stdout
    assert "line 2: not valid JSON" in proc.stdout
    assert "line 4: messages[0].role: Input should be" in proc.stdout
    assert "\r" not in proc.stderr and "[#" not in proc.stderr  # no bar when not a terminal
    again = _json(
        run_cairn("sessions", "import", str(path), "--batch-size", "1", "--json", home=home)
    )
    assert (again["sessions_imported"], again["sessions_skipped"]) == (0, 2)
    assert [e["line"] for e in again["errors"]] == [2, 4]
    listed = _json(run_cairn("sessions", "list", "--json", home=home))
    assert sorted(s["id"] for s in listed["sessions"]) == ["a", "c"]
    assert {s["id"]: s["message_count"] for s in listed["sessions"]} == {"a": 1, "c": 2}


def test_import_refusals_and_usage_errors(
    home: Home, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = _json(
        run_cairn("sessions", "import", str(tmp_path / "nope.jsonl"), "--json", home=home), 1
    )
    assert missing["error"] == "file" and "cannot read" in missing["message"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{}\nnot json\n", encoding="utf-8")
    proc = _ok(run_cairn("sessions", "import", str(bad), home=home), 1)
    assert "line 1: id: Field required" in proc.stdout and "line 2:" in proc.stdout
    code, _, err = _main(capsys, home, "sessions", "search", "--mode", "scroll")
    assert code == 2 and "needs --session" in err
    code, _, err = _main(capsys, home, "sessions", "search", "   ")
    assert code == 2 and "needs a QUERY" in err


def test_show_search_and_lineage(home: Home, capsys: pytest.CaptureFixture[str]) -> None:
    store = _fill(home)
    anchor = store.messages("root-0001")[3].id
    dispose_engines()
    shown = _ok(run_cairn("sessions", "show", "child", home=home)).stdout  # a unique prefix
    assert "session  child-0002" in shown and "title    Ingress 2" in shown
    assert "parent   root-0001  Kubernetes ingress" in shown
    assert "child    grand-0003" in shown and "lineage  root-0001" in shown
    assert "the annotation for TLS redirect" in shown and "tool (terminal)" in shown
    assert 'tool calls: [{"id": "c1"}]' in shown

    found = _json(run_cairn("sessions", "search", "ingress setup", "--json", home=home))
    assert [r["session_id"] for r in found["results"]] == ["root-0001"]
    scrolled = _json(
        run_cairn(
            "sessions", "search", "--mode", "scroll", "--session", "root-0001",
            "--anchor", str(anchor), "--window", "1", "--json", home=home,
        )
    )  # fmt: skip
    assert [m["content"] for m in scrolled["messages"]] == [
        f"step {i} of the ingress setup" for i in (2, 3, 4)
    ]
    code, out, _ = _main(
        capsys, home, "sessions", "search", "--mode", "browse", "--source", "telegram", "--json"
    )
    assert code == 0 and [s["session_id"] for s in json.loads(out)["sessions"]] == ["other-0004"]
    code, out, _ = _main(capsys, home, "sessions", "search", "--mode", "read", "--session", "oth")
    assert code == 0 and "sandwich options near the office" in out


def test_delete_needs_yes_without_a_terminal(
    home: Home, capsys: pytest.CaptureFixture[str]
) -> None:
    _fill(home)
    dispose_engines()
    refused = _ok(run_cairn("sessions", "delete", "other-0004", home=home, stdin="y\n"), 1)
    assert "without --yes" in refused.stderr
    code, out, _ = _main(capsys, home, "sessions", "delete", "other-0004", "--yes", "--json")
    assert code == 0 and json.loads(out) == {"ok": True, "deleted": "other-0004", "messages": 1}
    store = SessionStore.open(home)
    assert store.get_session("other-0004") is None
    assert store.get_session("root-0001") is not None


def test_delete_asks_on_a_terminal(home: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    store = _fill(home)
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True, raising=False)
    answers = iter(["n", "yes"])
    monkeypatch.setattr("builtins.input", lambda prompt: next(answers))
    argv = ["sessions", "delete", "other", "--home", str(home.root)]
    assert cli.main(argv) == 1  # answered no
    assert store.get_session("other-0004") is not None
    assert cli.main(argv) == 0
    assert store.get_session("other-0004") is None


def test_export_import_export_is_identical(home: Home, tmp_path: Path) -> None:
    _fill(home)
    dispose_engines()
    first = tmp_path / "first.jsonl"
    written = _json(run_cairn("sessions", "export", "--out", str(first), "--json", home=home))
    assert written["exported"] == 4 and len(first.read_text("utf-8").splitlines()) == 4
    fresh = Home(tmp_path / "fresh")
    _ok(run_cairn("sessions", "import", str(first), home=fresh))
    again = _ok(run_cairn("sessions", "export", home=fresh))
    assert again.stdout == first.read_text("utf-8")
    assert "exported 4 sessions" in again.stderr


def test_reindex_check_finds_and_fixes_a_stale_index(home: Home) -> None:
    store = _fill(home)
    insert_behind_the_index(store, "other-0004", "the pangolin budget")
    dispose_engines()
    report = _json(run_cairn("sessions", "reindex", "--check", "--json", home=home), 1)
    assert report["ok"] is False and report["integrity"] == ["ok"]
    assert "does not match" in report["fts"]["messages_fts"]
    fixed = _ok(run_cairn("sessions", "reindex", home=home))
    tables = (
        "messages_fts, messages_trigram, messages_cjk, messages_pairs, messages_stem, "
        "messages_time_blocks"
    )
    assert f"rebuilt {tables}" in fixed.stdout
    found = _json(run_cairn("sessions", "search", "pangolin", "--json", home=home))
    assert [r["session_id"] for r in found["results"]] == ["other-0004"]


def test_damaged_database_gives_a_recovery_hint(
    home: Home, capsys: pytest.CaptureFixture[str]
) -> None:
    home.root.mkdir(parents=True)
    garbage = b"\x00garbage, not SQLite\xff" * 500
    home.state_db.write_bytes(garbage)
    proc = _ok(run_cairn("sessions", "list", home=home), 1)
    assert "state.db is not a valid SQLite database" in proc.stderr
    assert "cairn sessions import" in proc.stderr and "restore a backup" in proc.stderr
    assert "Traceback" not in proc.stderr
    code, out, _ = _main(capsys, home, "sessions", "search", "anything", "--json")
    assert code == 1 and json.loads(out)["error"] == "corrupt_database"
    assert home.state_db.read_bytes() == garbage


def test_readonly_search_of_another_profile(home: Home) -> None:
    other = home.profile("other")
    _fill(other)
    dispose_engines()
    path = other.state_db
    path.chmod(0o444)
    try:
        before = (path.read_bytes(), path.stat().st_mtime_ns, sorted(os.listdir(other.root)))
        found = _json(
            run_cairn("sessions", "search", "sandwich", "--profile", "other", "--readonly",
                      "--json", home=home)
        )  # fmt: skip
        assert [r["session_id"] for r in found["results"]] == ["other-0004"]
        after = (path.read_bytes(), path.stat().st_mtime_ns, sorted(os.listdir(other.root)))
        assert after == before and not path.with_name("state.db-wal").exists()
    finally:
        path.chmod(0o644)


def test_progress_bar_only_on_a_terminal(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(_line(f"s{i}", "hello") for i in range(5)), encoding="utf-8")

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    err = Terminal()
    monkeypatch.setattr(sys, "stderr", err)
    argv = ["sessions", "import", str(path), "--batch-size", "2", "--home", str(home.root)]
    assert cli.main(argv) == 0
    assert "\rimporting [" in err.getvalue() and "100%" in err.getvalue()
