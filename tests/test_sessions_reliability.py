"""The session store under crashes and concurrent writers: nothing committed is ever lost.

Writers are forked from this already-imported process (no interpreter start-up per trial) and
report each committed message on a pipe; the parent kills them with SIGKILL at random moments.
"""

from __future__ import annotations

import json
import os
import random
import select
import signal
import sqlite3
from pathlib import Path

import pytest

from engine.config import Config
from engine.db import database_path, dispose_engines
from engine.home import Home
from engine.sessions.store import NewMessage, SessionStore

TRIALS = 100


def _writer(home: Home, session_id: str, tag: str, out: int, count: int | None) -> None:
    """Append forever (or ``count`` times), acknowledging each committed message. Never
    returns: the process exits or is killed."""
    try:
        store = SessionStore.open(home, Config())
        n = 0
        while count is None or n < count:
            batch = [
                NewMessage(role="user", content=f"{tag} message {n} alpha"),
                NewMessage(
                    role="tool", content=f"{tag} output {n} " + "x" * (n % 50), tool_name="t"
                ),
            ]
            ids = store.append(session_id, batch)
            os.write(out, (json.dumps({"ids": ids, "n": n}) + "\n").encode())
            n += 1
        os._exit(0)
    except BaseException:
        os._exit(3)


def _fork_writer(
    home: Home, session_id: str, tag: str, count: int | None = None
) -> tuple[int, int]:
    dispose_engines()  # never carry an open SQLite connection across fork
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        _writer(home, session_id, tag, write_end, count)
    os.close(write_end)
    return pid, read_end


def _read_acks(fd: int, block: bool) -> list[dict]:
    chunks = b""
    while True:
        ready, _, _ = select.select([fd], [], [], 30 if block else 0)
        if not ready:
            break
        data = os.read(fd, 65536)
        if not data:
            break
        chunks += data
        if block and chunks.endswith(b"\n"):
            break
    return [json.loads(line) for line in chunks.decode().splitlines() if line.strip()]


def _integrity(path: Path) -> tuple[str, bool]:
    with sqlite3.connect(path) as conn:
        check = conn.execute("PRAGMA integrity_check").fetchone()[0]
        try:
            conn.execute(
                "INSERT INTO messages_fts(messages_fts, rank) VALUES('integrity-check', 1)"
            )
            fts_ok = True
        except sqlite3.DatabaseError:
            fts_ok = False
    conn.close()
    return check, fts_ok


@pytest.mark.slow
def test_sigkill_of_a_transcript_writer_loses_no_committed_message(home: Home) -> None:
    """Tried: 100 SIGKILLs of a process appending two messages per transaction, each at a
    random moment after 1-20 acknowledgements. After every kill: integrity_check is ok, the
    word index agrees with the table, every acknowledged message is present, and no
    transaction is half there (messages come in complete pairs)."""
    rng = random.Random(7)
    store = SessionStore.open(home, Config())
    session = store.create_session(title="crash")
    db = database_path(home)
    acked: set[int] = set()
    for trial in range(TRIALS):
        pid, fd = _fork_writer(home, session.id, f"t{trial}")
        wanted = rng.randint(1, 20)
        got: list[dict] = []
        while len(got) < wanted:
            more = _read_acks(fd, block=True)
            assert more, f"trial {trial}: writer stopped acknowledging"
            got += more
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        got += _read_acks(fd, block=False)
        os.close(fd)
        for ack in got:
            acked.update(ack["ids"])
        check, fts_ok = _integrity(db)
        assert check == "ok" and fts_ok, f"trial {trial}: {check}, fts ok: {fts_ok}"
        stored = SessionStore.open(home, Config()).messages(session.id)
        ids = {m.id for m in stored}
        missing = acked - ids
        assert not missing, f"trial {trial}: lost acknowledged messages {sorted(missing)[:5]}"
        assert len(stored) % 2 == 0, f"trial {trial}: a transaction was half committed"
    info = SessionStore.open(home, Config()).get_session(session.id)
    assert info is not None and info.message_count == len(ids)


def test_two_processes_appending_lose_nothing(home: Home) -> None:
    """Tried: two forked processes each appending 150 two-message transactions to the same
    session at once, plus this process reading meanwhile."""
    store = SessionStore.open(home, Config())
    session = store.create_session(title="shared")
    writers = [_fork_writer(home, session.id, tag, count=150) for tag in ("a", "b")]
    acks: list[dict] = []
    for pid, fd in writers:
        _, status = os.waitpid(pid, 0)
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
        acks += _read_acks(fd, block=False)
        os.close(fd)
    assert len(acks) == 300
    messages = SessionStore.open(home, Config()).messages(session.id)
    assert len(messages) == 600
    assert {i for a in acks for i in a["ids"]} == {m.id for m in messages}
    for tag in ("a", "b"):
        mine = [
            int(m.content.split()[2]) for m in messages if m.content.startswith(f"{tag} message")
        ]
        assert mine == list(range(150)), "a writer's messages are out of order or missing"
    info = SessionStore.open(home, Config()).get_session(session.id)
    assert info is not None and info.message_count == 600
