"""Every expected failure of a ``cairn`` command is one line on stderr and a non-zero exit,
never a traceback; a pipe closed early exits quietly; unbounded input stops with an error
naming where."""

from __future__ import annotations

import io
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from engine.cli import EXIT_INTERNAL, EXIT_PIPE_CLOSED, main
from engine.config import Config
from engine.home import Home
from engine.memory.entries import Target
from engine.memory.service import MemoryService
from tests.conftest import REPO


def run(capsys: pytest.CaptureFixture[str], home: Home, *argv: str) -> tuple[int, str, str]:
    code = main([*argv, "--home", str(home.root)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def one_line(err: str) -> str:
    assert "Traceback" not in err
    assert err.startswith("cairn: ") and err.count("\n") == 1, err[:500]
    return err


def seeded(home: Home) -> MemoryService:
    service = MemoryService(home, Config())
    service.write(Target.MEMORY, [{"action": "add", "content": "User prefers tea"}])
    return service


def test_journey_at_the_year_one_is_before_everything(
    home: Home, capsys: pytest.CaptureFixture[str]
) -> None:
    """Tried: `cairn journey list --at 0001-01-01` (a valid date the clock cannot express).
    The user sees memory as it was before the first event, exit 0 (was a ValueError
    traceback)."""
    seeded(home)
    code, out, err = run(capsys, home, "journey", "list", "--at", "0001-01-01")
    assert code == 0, err
    assert "after 0 of 1 events" in out


@pytest.mark.parametrize(
    "argv",
    [
        ["journey", "show", "memory:memory:" + "9" * 5000],
        ["journey", "show", "memory:memory:0#" + "a" * 5000],
        ["journey", "list", "--at", "#" + "9" * 5000],
        ["journey", "list", "--at", "9" * 5000],
    ],
    ids=["index", "version", "event", "bare-number"],
)
def test_a_five_thousand_digit_id_is_a_short_error(
    home: Home, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    """Tried: a journey id or event number of 5,000 digits (int() refuses past 4,300). The
    user sees one short line saying it is not an id, not the whole number echoed back."""
    seeded(home)
    code, _, err = run(capsys, home, *argv)
    assert code == 1
    assert len(one_line(err)) < 400


def test_memory_status_with_a_corrupt_fact_store_is_one_line(
    home: Home, capsys: pytest.CaptureFixture[str]
) -> None:
    """Tried: `cairn memory status` with the holographic provider on and memory_store.db
    overwritten with garbage. The user sees one line naming the file (was a FactStoreError
    traceback with SQLAlchemy's "Background on this error" line); --json gives the error."""
    assert run(capsys, home, "memory", "setup", "holographic")[0] == 0
    home.memory_store_db.write_bytes(b"this is not a database" * 100)
    code, _, err = run(capsys, home, "memory", "status")
    assert code == 1
    assert "memory_store.db" in one_line(err) and "sqlalche.me" not in err
    code, out, _ = run(capsys, home, "memory", "status", "--json")
    assert code == 1 and json.loads(out)["ok"] is False


def test_an_unexpected_error_is_one_line_with_a_debug_hint(
    home: Home, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tried: a bug (an exception no handler expects) inside a command. The user sees one line
    saying so and how to see the traceback, exit 70; CAIRN_DEBUG=1 shows the traceback."""

    def broken(self: MemoryService, target: Target) -> None:
        raise TypeError("something Cairn did not expect")

    seeded(home)
    monkeypatch.setattr(MemoryService, "read", broken)
    code, _, err = run(capsys, home, "memory", "show")
    assert code == EXIT_INTERNAL
    assert "CAIRN_DEBUG=1" in one_line(err) and "TypeError" in err
    monkeypatch.setenv("CAIRN_DEBUG", "1")
    with pytest.raises(TypeError):
        main(["memory", "show", "--home", str(home.root)])


def test_a_pipe_closed_early_exits_quietly(home: Home) -> None:
    """Tried: `cairn memory history --json -n 1000 | head -c 1`: the reader goes away while
    cairn is still writing (600 events: far more than a pipe buffer holds). Cairn exits 141
    with nothing on stderr (was a BrokenPipeError traceback and "Exception ignored" noise)."""
    service = seeded(home)
    for n in range(300):
        service.write(Target.MEMORY, [{"action": "add", "content": f"Fact number {n}"}])
        service.write(Target.MEMORY, [{"action": "remove", "old_text": f"Fact number {n}"}])
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "engine.cli",
            "memory",
            "history",
            "--json",
            "-n",
            "1000",
            "--home",
            str(home.root),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd=REPO,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.read(1) == b"{"
    proc.stdout.close()  # as head does after its first bytes
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == EXIT_PIPE_CLOSED
    assert err == b""


def test_a_negative_start_time_in_an_import_says_before_1970(
    home: Home, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Tried: `cairn sessions import` of a session with started_at -5. The user sees the line
    refused as "before 1970" (was reported as "past the year 9999")."""
    line = {"id": "s1", "source": "cli", "started_at": -5, "messages": []}
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    code, out, err = run(capsys, home, "sessions", "import", str(path))
    assert code == 1
    assert "before 1970" in out + err and "9999" not in out + err


@pytest.mark.parametrize("command", [["sessions", "import"], ["memory", "apply"]])
def test_endless_input_stops_with_an_error_naming_the_line(
    home: Home, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    """Tried: `cairn sessions import /dev/zero` and `cairn memory apply /dev/zero`: input with
    no end and no newline (both grew until MemoryError). The user sees one line saying the
    line (or document) is too large; memory stays as it was."""
    seeded(home)
    before = (home.memories_dir / "MEMORY.md").read_bytes()
    code, _, err = run(capsys, home, *command, "/dev/zero")
    assert code == 1
    assert "larger than" in one_line(err) or "longer than" in err
    if command[0] == "sessions":
        assert "line 1 " in err
    assert (home.memories_dir / "MEMORY.md").read_bytes() == before


def test_a_corrupt_session_database_is_one_line(
    home: Home, capsys: pytest.CaptureFixture[str]
) -> None:
    """Tried: `cairn sessions list` with state.db overwritten by garbage. One line, exit 1."""
    home.root.mkdir(parents=True)
    home.state_db.write_bytes(b"garbage" * 1000)
    code, _, err = run(capsys, home, "sessions", "list")
    assert code == 1
    one_line(err)
    with pytest.raises(sqlite3.DatabaseError):  # it really is not a database
        sqlite3.connect(home.state_db).execute("SELECT 1 FROM sqlite_master").fetchall()


# -- read commands create nothing --------------------------------------------------------------

READ_COMMANDS = [
    ["memory", "show"],
    ["memory", "pending"],
    ["memory", "history"],
    ["memory", "status"],
    ["memory", "scan", "hello"],
    ["sessions", "list"],
    ["sessions", "search", "tea"],
    ["skills", "list"],
    ["journey", "list"],
    ["cron", "list"],
    ["profile", "list"],
]


@pytest.mark.parametrize("argv", READ_COMMANDS, ids=lambda a: "-".join(a[:2]))
def test_a_read_command_on_a_missing_home_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    """Tried: a read-only command on a home that does not exist (it used to create state.db,
    its -wal and -shm and a lock file there). Exit 0, and the folder still does not exist."""
    home = Home(tmp_path / "nowhere")
    code, _, err = run(capsys, home, *argv)
    assert code == 0, err
    assert not home.root.exists()


@pytest.mark.parametrize(
    "argv",
    [["memory", "show"], ["memory", "history"], ["memory", "pending"], ["journey", "list"]],
    ids=lambda a: "-".join(a),
)
def test_a_read_command_in_a_home_without_a_database_creates_none(
    home: Home, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    """Tried: a read-only command in a home that holds only config.yaml and a hand-written
    MEMORY.md. It answers (the memory is shown) and no state.db, -wal or -shm appears."""
    home.memories_dir.mkdir(parents=True)
    home.config_file.write_text("memory:\n  memory_char_limit: 3000\n", encoding="utf-8")
    (home.memories_dir / "MEMORY.md").write_text("Hand-written fact", encoding="utf-8")
    before = sorted(p.name for p in home.root.rglob("*"))
    code, _, err = run(capsys, home, *argv)
    assert code == 0, err
    assert sorted(p.name for p in home.root.rglob("*")) == before


def test_a_read_command_on_a_missing_profile_is_an_error_and_creates_nothing(
    home: Home, capsys: pytest.CaptureFixture[str]
) -> None:
    """Tried: `cairn --profile wrok memory show` (a typo) in an existing home. The user sees
    one line saying there is no such profile; no profiles/wrok appears."""
    seeded(home)
    code, _, err = run(capsys, home, "--profile", "wrok", "memory", "show")
    assert code == 1 and "no profile" in one_line(err)
    assert not (home.profiles_dir / "wrok").exists()


# -- the write-ahead log ---------------------------------------------------------------------


def test_state_db_alone_holds_everything_after_an_import(
    home: Home, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Tried: import 200 sessions, then copy state.db alone (as a user backing it up would).
    The copy holds all 200 (they used to sit in state.db-wal, the copy held none) and no
    -wal is left beside state.db."""
    lines = [
        json.dumps({"id": f"s{n}", "source": "cli", "started_at": 1.7e9 + n, "messages": []})
        for n in range(200)
    ]
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, _, err = run(capsys, home, "sessions", "import", str(path))
    assert code == 0, err
    wal = home.state_db.with_name("state.db-wal")
    assert not wal.exists() or wal.stat().st_size == 0
    copy = tmp_path / "backup.db"
    copy.write_bytes(home.state_db.read_bytes())
    with sqlite3.connect(copy) as conn:
        assert conn.execute("SELECT count(*) FROM sessions").fetchone()[0] == 200


def test_an_orphan_wal_is_refused_not_overwritten(
    home: Home, capsys: pytest.CaptureFixture[str]
) -> None:
    """Tried: state.db-wal present but state.db gone (a half-restored backup). Opening a new
    database would discard the log; instead the user sees one line naming the file, and the
    -wal file is left exactly as it was."""
    home.root.mkdir(parents=True)
    wal = home.root / "state.db-wal"
    wal.write_bytes(b"wal frames the user still needs" * 100)
    before = wal.read_bytes()
    code, _, err = run(capsys, home, "sessions", "list")
    assert code == 1 and "state.db-wal exists without its database" in one_line(err)
    assert wal.read_bytes() == before and not home.state_db.exists()


def test_endless_lines_to_scan_stop_with_an_error_naming_the_line(
    home: Home, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tried: `cairn memory scan --jsonl < /dev/zero` (one line without end). One line naming
    line 1 as too long, exit 1."""
    with open("/dev/zero", "rb") as zero:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(zero))
        code, _, err = run(capsys, home, "memory", "scan", "--jsonl")
    assert code == 1 and "line 1 is longer than" in one_line(err)
