"""Bulk import on SQLite: the index entries written after the rows of each batch are what the
per-row triggers would have written, the triggers are back afterwards, and a process killed in
the middle of an import leaves every committed batch indexed and nothing half there."""

from __future__ import annotations

import json
import os
import random
import select
import signal
from collections.abc import Iterator
from contextlib import nullcontext
from pathlib import Path

import pytest
from sqlalchemy import text

from engine.config import Config
from engine.db import dispose_engines
from engine.home import Home
from engine.sessions import bulk, maintenance, transfer
from engine.sessions.search import SessionSearch
from engine.sessions.store import SessionStore
from engine.sessions.transfer import import_sessions

WORDS = ["lantern", "harbour", "copper", "violin", "meadow", "orbit", "saffron", "glacier"]


def _sessions(count: int, seed: int = 3, prefix: str = "s") -> Iterator[str]:
    """Conversations with short replies (indexed with the turn before), empty tool-call turns,
    accents, CJK, identifiers and a word that only session ``i`` has (``marker{i}x``)."""
    rng = random.Random(seed)
    for i in range(count):
        turns = []
        for j in range(rng.randint(3, 12)):
            words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 40)))
            if j % 4 == 3:
                turns.append(
                    {
                        "role": "assistant",
                        "content": "",
                        "timestamp": 1.7e9 + i * 100 + j,
                        "tool_calls": [{"name": "grep", "args": {"q": words[:20]}}],
                    }
                )
                continue
            extra = rng.choice(["", " café déjà vu", " 東京の天気", " v2.14.3 src/app.py"])
            turns.append(
                {
                    "role": "user" if j % 2 == 0 else "assistant",
                    "content": (f"marker{i}x " if j == 1 else "") + words + extra,
                    "timestamp": 1.7e9 + i * 100 + j,
                }
            )
        yield json.dumps(
            {
                "id": f"{prefix}{i}",
                "source": "cli",
                "started_at": 1.7e9 + i * 100,
                "messages": turns,
            },
            ensure_ascii=False,
        )


# A look-up in each index whose answer depends on what was indexed for every message.
PROBES = {
    "messages_fts": "copper",
    "messages_trigram": "opp",
    "messages_cjk": "東京",
    "messages_pairs": "copper_violin",
    "messages_stem": "context : lantern",
}


def _indexed(store: SessionStore) -> dict[str, list[tuple[object, ...]]]:
    """What each index holds, as rows that do not depend on how it was written."""
    out: dict[str, list[tuple[object, ...]]] = {}
    with store.engine.connect() as conn:

        def rows(sql: str, **params: object) -> list[tuple[object, ...]]:
            return [tuple(r) for r in conn.execute(text(sql), params)]

        out["context"] = rows("SELECT id, context FROM messages_context ORDER BY id")
        out["blocks"] = rows("SELECT * FROM messages_time_blocks ORDER BY block")
        for table, probe in PROBES.items():
            out[table] = rows(
                f"SELECT rowid FROM {table} WHERE {table} MATCH :q ORDER BY rowid", q=probe
            )
    return out


def _triggers(store: SessionStore) -> list[tuple[str, str]]:
    with store.engine.connect() as conn:
        return sorted(
            tuple(r)
            for r in conn.execute(
                text(  # type: ignore[misc]
                    "SELECT name, sql FROM sqlite_master WHERE type = 'trigger'"
                )
            )
        )


def test_bulk_import_indexes_as_the_triggers_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = list(_sessions(60))
    bulk_store = SessionStore.open(Home(tmp_path / "bulk"), Config())
    before = _triggers(bulk_store)
    report = import_sessions(bulk_store, lines, batch_size=7)
    assert report.sessions_imported == 60 and not report.errors
    assert _triggers(bulk_store) == before  # every trigger is back, as it was
    assert maintenance.check(bulk_store).ok

    # The same file through the triggers, row by row.
    monkeypatch.setattr(transfer, "deferred_indexing", lambda conn: nullcontext())
    row_store = SessionStore.open(Home(tmp_path / "rows"), Config())
    import_sessions(row_store, lines, batch_size=7)
    assert _indexed(bulk_store) == _indexed(row_store)
    assert all(_indexed(bulk_store).values())  # every probe found something to compare


def test_messages_written_after_a_bulk_import_are_indexed(home: Home) -> None:
    store = SessionStore.open(home, Config())
    import_sessions(store, _sessions(5))
    session = store.create_session(title="later")
    store.add_message(session.id, "user", "the quokka question")
    store.add_message(session.id, "assistant", "Yes.")
    found = SessionSearch(store)("discover", query="quokka")
    assert [r["session_id"] for r in found["results"]] == [session.id]
    assert maintenance.check(store).ok


def test_unknown_insert_triggers_are_left_to_do_their_work(home: Home) -> None:
    """A schema with an insert trigger this code does not know is imported row by row."""
    store = SessionStore.open(home, Config())
    with store.engine.begin() as conn:
        conn.execute(text("CREATE TABLE seen (id INTEGER)"))
        conn.execute(
            text(
                "CREATE TRIGGER messages_seen_ai AFTER INSERT ON messages "
                "BEGIN INSERT INTO seen VALUES (new.id); END"
            )
        )
    report = import_sessions(store, _sessions(4))
    with store.engine.connect() as conn:
        seen = conn.execute(text("SELECT count(*) FROM seen")).scalar_one()
    assert seen == report.messages_imported > 0
    assert maintenance.check(store).ok


def _importer(home: Home, corpus: Path, out: int) -> None:
    """Import ``corpus``, writing how many sessions are committed after each batch. Never
    returns: exits, or is killed."""
    try:
        store = SessionStore.open(home, Config())
        with corpus.open(encoding="utf-8") as lines:
            import_sessions(
                store,
                lines,
                batch_size=40,
                progress=lambda _lines, _messages: os.write(out, b"batch\n"),
            )
        os._exit(0)
    except BaseException:
        os._exit(3)


def _wait_for_batches(fd: int, wanted: int) -> int:
    seen = 0
    while seen < wanted:
        ready, _, _ = select.select([fd], [], [], 60)
        assert ready, "the importer stopped reporting"
        data = os.read(fd, 4096)
        assert data, "the importer ended before it was killed"
        seen += data.count(b"batch\n")
    return seen


@pytest.mark.parametrize("batches", [1, 3])
def test_sigkill_mid_import_leaves_every_committed_batch_indexed(
    home: Home, tmp_path: Path, batches: int
) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("\n".join(_sessions(2000)) + "\n", encoding="utf-8")
    store = SessionStore.open(home, Config())
    triggers = _triggers(store)
    dispose_engines()  # never carry an open SQLite connection across fork
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        _importer(home, corpus, write_end)
    os.close(write_end)
    committed = _wait_for_batches(read_end, batches)
    os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    os.close(read_end)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL

    store = SessionStore.open(home, Config())
    assert _triggers(store) == triggers
    report = maintenance.check(store)
    assert report.ok, report
    with store.engine.connect() as conn:
        stored = sorted(int(r[0][1:]) for r in conn.execute(text("SELECT id FROM sessions")))
        counted = conn.execute(text("SELECT sum(message_count) FROM sessions")).scalar_one()
        messages = conn.execute(text("SELECT count(*) FROM messages")).scalar_one()
    # Whole batches only, in file order, at least those reported, and not the whole file.
    assert len(stored) % 40 == 0 and len(stored) >= 40 * committed
    assert stored == list(range(len(stored))) and len(stored) < 2000
    assert counted == messages
    search = SessionSearch(store)
    for i in random.Random(1).sample(stored, 25):
        found = search("discover", query=f"marker{i}x")["results"]
        assert [r["session_id"] for r in found] == [f"s{i}"]
    # And the next import picks up where it stopped, indexing the rest.
    with corpus.open(encoding="utf-8") as lines:
        rest = import_sessions(store, lines)
    assert rest.sessions_imported == 2000 - len(stored)
    assert maintenance.check(store).ok
    assert bulk.INSERT_TRIGGERS  # the module under test was the one used


def _automerge(store: SessionStore) -> set[object]:
    with store.engine.connect() as conn:
        return {
            conn.execute(
                text(f"SELECT v FROM {table}_config WHERE k = 'automerge'")
            ).scalar_one_or_none()
            for table in maintenance.FTS_TABLES
        }


def test_a_large_import_merges_less_while_it_runs_and_as_usual_after(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(transfer, "OPTIMIZE_AFTER", 100)  # "large" for a test
    store = SessionStore.open(home, Config())
    during: list[set[object]] = []
    import_sessions(
        store, _sessions(80), batch_size=10, progress=lambda *_: during.append(_automerge(store))
    )
    assert during[0] == {maintenance.BULK_AUTOMERGE}  # raised from the first batch on
    assert _automerge(store) == {maintenance.AUTOMERGE}
    assert maintenance.check(store).ok

    # Several batches, but too few messages to be merged whole: put back, unmerged.
    monkeypatch.setattr(transfer, "OPTIMIZE_AFTER", 10**9)
    during.clear()
    import_sessions(
        store,
        _sessions(30, seed=5, prefix="u"),
        batch_size=10,
        progress=lambda *_: during.append(_automerge(store)),
    )
    assert during[0] == {maintenance.BULK_AUTOMERGE}
    assert _automerge(store) == {maintenance.AUTOMERGE}
    assert maintenance.check(store).ok

    def failing() -> Iterator[str]:
        yield from _sessions(60, seed=9, prefix="t")
        raise OSError("the disk went away")

    during.clear()
    with pytest.raises(OSError):
        import_sessions(
            store, failing(), batch_size=10, progress=lambda *_: during.append(_automerge(store))
        )
    assert {maintenance.BULK_AUTOMERGE} in during
    assert _automerge(store) == {maintenance.AUTOMERGE}  # put back, though nothing was merged
    assert maintenance.check(store).ok
