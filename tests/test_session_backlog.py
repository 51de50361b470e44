"""A large import leaves the trigram and word-pair indexes to catch up (SQLite): every search
gives the same results while they trail as after, writes meanwhile keep the indexes sound,
a process killed mid catch-up loses nothing, and the command line says and ends it."""

from __future__ import annotations

import io
import json
import os
import random
import select
import signal
from collections.abc import Iterator
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import inspect, text

from engine import cli
from engine.config import Config
from engine.db import dispose_engines
from engine.home import Home
from engine.sessions import backlog, maintenance
from engine.sessions.search import SessionSearch
from engine.sessions.store import SessionStore
from engine.sessions.transfer import import_sessions

WORDS = ["lantern", "harbour", "copper", "violin", "meadow", "orbit", "saffron", "glacier"]
# Text a substring scan must compare as the trigram index does: case, a letter that folds
# into ASCII (the Kelvin sign), LIKE's wildcards and escape, accents, CJK, other scripts.
ODD = [
    "ran KubeCTL apply",
    "the \u212aelvin scale",
    "100%_done at C:\\Users\\ada",
    "Café Müller on the STRASSE",
    "東京の天気は晴れ",
    "ΣΟΦΙΑ wrote σοφία",
    "we planned a road trip to Oslo",
    "upgraded to v2.14.3 and set max_retry_count",
    "the glacier notes mention v2.14.3 twice",
]
QUERIES = [
    "copper",
    "copper violin",
    '"copper violin"',
    '"lantern harbour copper"',
    "ubectl",
    "kelvin",
    "elvin scale",
    "0%_d",
    "\\Users",
    "café müller",
    "müller",
    "東京",
    "天気",
    "σοφία",
    "roadtrip",
    "what did we say about the copper violin?",
    "which roadtrip did I plan?",
    "marker7x",
    "v2.14.3",
    "max_retry_count",
    "what did the glacier notes say about v2.14.3?",
    '"copper violin" -max_retry_count',
]


def _sessions(count: int, seed: int = 5, prefix: str = "s") -> Iterator[str]:
    rng = random.Random(seed)
    for i in range(count):
        turns = []
        for j in range(rng.randint(3, 9)):
            words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 25)))
            odd = rng.choice(ODD) if rng.random() < 0.3 else ""
            turns.append(
                {
                    "role": "user" if j % 2 == 0 else "assistant",
                    "content": (f"marker{i}x " if j == 1 else "") + f"{words} {odd}".strip(),
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


def _trailing_store(home: Home, monkeypatch: pytest.MonkeyPatch, count: int = 80) -> SessionStore:
    """A store whose import left the two indexes behind (as one past ``INLINE`` messages)."""
    monkeypatch.setattr(backlog, "INLINE", 0)
    store = SessionStore.open(home, Config())
    report = import_sessions(store, _sessions(count), batch_size=9)
    assert report.index_backlog == report.messages_imported > 0
    return store


def _left(store: SessionStore) -> int:
    with store.engine.connect() as conn:
        return backlog.left(conn)


def _automerge(store: SessionStore) -> set[object]:
    with store.engine.connect() as conn:
        return {
            str(
                conn.execute(
                    text(f"SELECT v FROM {table}_config WHERE k = 'automerge'")
                ).scalar_one_or_none()
            )
            for table in maintenance.FTS_TABLES
        }


def _answers(store: SessionStore) -> list[Any]:
    search = SessionSearch(store)
    out: list[Any] = []
    for query in QUERIES:
        for order in ("relevance", "newest", "oldest"):
            out.append(search("discover", query=query, order=order, limit=5))
        out.append(search("discover", query=query, role=["assistant"], limit=5))
        out.append(search("discover", query=query, since="2023-11-14T23:00:00Z", limit=5))
    return out


def test_searches_give_the_same_results_while_the_indexes_trail_as_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each query, in each order and with filters, on the trailing store, then on the same
    store caught up, and on a store whose import indexed everything itself."""
    store = _trailing_store(Home(tmp_path / "trailing"), monkeypatch)
    behind = _left(store)
    trailing = _answers(store)
    assert maintenance.check(store).ok
    assert sum(bool(a["results"]) for a in trailing) > len(trailing) // 2  # they find things
    done = maintenance.catch_up(store, chunk=37)
    assert done.left == 0 and done.messages == behind and _left(store) == 0
    assert _automerge(store) == {str(maintenance.AUTOMERGE)}  # merged whole, then as usual
    assert _answers(store) == trailing
    monkeypatch.setattr(backlog, "INLINE", 10**9)
    whole = SessionStore.open(Home(tmp_path / "whole"), Config())
    assert import_sessions(whole, _sessions(80), batch_size=9).index_backlog == 0
    assert _answers(whole) == trailing


def test_messages_are_indexed_in_one_range_below_the_backlog_and_never_twice(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A catch-up stopped after one chunk holds the chunk; a second import meanwhile trails
    too; writes, updates and deletes meanwhile leave every index sound."""
    store = _trailing_store(home, monkeypatch)
    before = _left(store)
    chunks = iter([True, False])
    merging: list[set[object]] = []
    partial = maintenance.catch_up(
        store,
        chunk=50,
        keep_going=lambda: next(chunks),
        progress=lambda *_: merging.append(_automerge(store)),
    )
    assert partial.messages == 50 and partial.left == before - 50 == _left(store)
    # Merging less while a large catch-up runs; stopped early, as usual again.
    assert merging == [{str(maintenance.BULK_AUTOMERGE)}]
    assert _automerge(store) == {str(maintenance.AUTOMERGE)}
    assert maintenance.check(store).ok

    later = import_sessions(store, _sessions(10, seed=9, prefix="t"))
    assert later.messages_imported and later.index_backlog == _left(store) > partial.left
    session = store.create_session(title="meanwhile")
    store.add_message(session.id, "user", "the quokka rode a ferry to Oslo")
    with store.engine.begin() as conn:
        indexed_id = conn.execute(text("SELECT min(id) FROM messages")).scalar_one()
        trailing_id = conn.execute(text("SELECT max(id) - 3 FROM messages")).scalar_one()
        for message_id in (indexed_id, trailing_id):
            conn.execute(
                text("UPDATE messages SET content = 'an ocelot at the STRASSE' WHERE id = :i"),
                {"i": message_id},
            )
    assert store.delete_session("s3") and store.delete_session("t4")
    assert maintenance.check(store).ok

    found = SessionSearch(store)
    for query in ("ocelot", "celot", "quokka", "okka", '"ferry to oslo"'):
        assert found("discover", query=query)["results"], query
    maintenance.catch_up(store)
    assert _left(store) == 0
    report = maintenance.check(store)
    assert report.ok and report.index_backlog == 0, report
    for query in ("ocelot", "celot", "quokka", "okka", '"ferry to oslo"'):
        assert found("discover", query=query)["results"], query


def _catch_up_part_then_delete(
    store: SessionStore, *, chunks: int, chunk: int, below: int
) -> tuple[int, list[str]]:
    """Catch up ``chunks`` chunks, then delete every session with a message from ``below``
    ids under the backlog's start on: (that start, the sessions deleted)."""
    going = iter([True] * chunks + [False])
    maintenance.catch_up(store, chunk=chunk, keep_going=lambda: next(going))
    with store.engine.connect() as conn:
        first = backlog.first_unindexed(conn)
        assert first is not None
        doomed = list(
            conn.execute(
                text("SELECT DISTINCT session_id FROM messages WHERE id >= :f"),
                {"f": first - below},
            ).scalars()
        )
    for session_id in doomed:
        assert store.delete_session(session_id)
    return first, doomed


def test_an_import_after_the_newest_messages_were_deleted_keeps_the_lower_start(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ids are given out again once the newest messages are gone: a catch-up stopped part way,
    the newest sessions deleted, the same file imported again to bring them back."""
    store = _trailing_store(home, monkeypatch)
    first, doomed = _catch_up_part_then_delete(store, chunks=2, chunk=150, below=40)
    again = import_sessions(store, _sessions(80), batch_size=9)
    assert again.sessions_imported == len(doomed)
    with store.engine.connect() as conn:
        assert backlog.first_unindexed(conn) < first  # the re-imported ids are behind too
    assert maintenance.check(store).ok
    maintenance.catch_up(store)
    assert maintenance.check(store).ok
    for session_id in doomed:  # back, and found by a substring of the word only it has
        found = SessionSearch(store)("discover", query=f"arker{session_id[1:]}x")["results"]
        assert [r["session_id"] for r in found] == [session_id]


def test_a_backlog_whose_messages_were_all_deleted_ends(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _trailing_store(home, monkeypatch)
    _catch_up_part_then_delete(store, chunks=1, chunk=100, below=0)
    assert _left(store) == 0
    assert maintenance.catch_up(store).messages == 0
    with store.engine.connect() as conn:
        assert backlog.first_unindexed(conn) is None
    assert maintenance.check(store).ok


def test_the_check_compares_a_trailing_index_with_the_messages_below_its_backlog(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An index holding a message of the backlog (what a broken start would leave) is found
    while the backlog lasts, not only after the catch-up."""
    store = _trailing_store(home, monkeypatch)
    assert maintenance.check(store).ok
    with store.engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO messages_trigram(rowid, content) "
                "SELECT id, content FROM messages ORDER BY id DESC LIMIT 1"
            )
        )
    report = maintenance.check(store)
    assert not report.ok and "does not match" in report.fts["messages_trigram"]
    assert report.fts["messages_pairs"] == "ok" and report.index_backlog == _left(store)


def test_reindex_ends_the_backlog_and_a_downgrade_fills_it_first(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.conftest import downgrade_to

    store = _trailing_store(home, monkeypatch)
    maintenance.reindex(store)
    assert _left(store) == 0 and maintenance.check(store).ok

    store = _trailing_store(Home(home.root / "second"), monkeypatch)
    downgrade_to(store, "0008")  # whose triggers take both indexes to hold every message
    with store.engine.connect() as conn:
        for table in backlog.TRAILING:  # raises if an index and the messages differ
            conn.exec_driver_sql(
                f"INSERT INTO {table}({table}, rank) VALUES ('integrity-check', 1)"
            )
        assert "messages_backlog" not in inspect(conn).get_table_names()


def _catcher(home: Home, out: int) -> None:
    """Catch up a chunk at a time, saying so after each. Never returns: exits, or is killed."""
    try:
        store = SessionStore.open(home, Config())
        maintenance.catch_up(store, chunk=25, progress=lambda *_: os.write(out, b"chunk\n"))
        os._exit(0)
    except BaseException:
        os._exit(3)


def test_sigkill_mid_catch_up_leaves_the_indexes_holding_exactly_the_messages_below(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _trailing_store(home, monkeypatch, count=300)
    total = _left(store)
    dispose_engines()  # never carry an open SQLite connection across fork
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        _catcher(home, write_end)
    os.close(write_end)
    seen = 0
    while seen < 3:
        ready, _, _ = select.select([read_end], [], [], 60)
        assert ready, "the catch-up stopped reporting"
        data = os.read(read_end, 4096)
        assert data, "the catch-up ended before it was killed"
        seen += data.count(b"chunk\n")
    os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    os.close(read_end)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL

    store = SessionStore.open(home, Config())
    left = _left(store)
    assert 0 < left <= total - 3 * 25
    with store.engine.connect() as conn:
        first = backlog.first_unindexed(conn)
        held = conn.execute(text("SELECT count(*), max(rowid) FROM messages_trigram_docsize")).one()
        below = conn.execute(
            text("SELECT count(*) FROM messages WHERE id < :f"), {"f": first}
        ).scalar_one()
    assert first is not None and held[0] == below and held[1] < first
    assert maintenance.check(store).ok
    assert maintenance.catch_up(store).left == 0 and maintenance.check(store).ok


def test_a_cron_tick_ends_the_backlog_unless_asked_to_stop(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The app's scheduler and ``cairn cron tick`` run the catch-up after the due jobs."""
    from engine import cron

    store = _trailing_store(home, monkeypatch)
    behind = _left(store)
    assert cron.tick(home, should_stop=lambda: True).indexed == 0
    assert _left(store) == behind
    code, out = _cairn_json(home, ["cron", "tick"])
    assert code == 0 and out["homes"][0]["indexed"] == behind and _left(store) == 0
    assert maintenance.check(store).ok
    assert cron.tick(home).indexed == 0  # nothing left


def test_a_cron_tick_catches_up_for_a_while_and_despite_a_broken_jobs_file(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    from engine import cron
    from engine.cron import runner

    store = _trailing_store(home, monkeypatch)
    behind = _left(store)
    monkeypatch.setattr(runner, "CATCH_UP_SECONDS", 0.0)  # its share of a tick is spent
    assert cron.tick(home).indexed == 0 and _left(store) == behind
    monkeypatch.setattr(runner, "CATCH_UP_SECONDS", 60.0)
    home.cron_dir.mkdir(parents=True, exist_ok=True)
    (home.cron_dir / "jobs.yaml").write_text("jobs: [unclosed\n", encoding="utf-8")
    report = cron.tick(home)
    assert report.problems and report.indexed == behind and _left(store) == 0


def _cairn_json(home: Home, argv: list[str]) -> tuple[int, dict[str, Any]]:
    out = io.StringIO()
    with redirect_stdout(out):
        code = cli.main(["--home", str(home.root), *argv, "--json"])
    return code, json.loads(out.getvalue())


def _cairn(home: Home, *args: str) -> tuple[int, dict[str, Any]]:
    return _cairn_json(home, ["sessions", *args])


def test_the_command_line_says_what_trails_and_ends_it(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(backlog, "INLINE", 0)
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("\n".join(_sessions(40)) + "\n", encoding="utf-8")
    code, imported = _cairn(home, "import", str(corpus))
    assert code == 0 and imported["index_backlog"] == imported["messages_imported"] > 0
    code, checked = _cairn(home, "reindex", "--check")
    assert code == 0 and checked["ok"] and checked["index_backlog"] == imported["index_backlog"]
    code, caught = _cairn(home, "reindex", "--catch-up")
    assert code == 0 and caught["messages"] == imported["messages_imported"]
    assert caught["left"] == 0
    code, checked = _cairn(home, "reindex", "--check")
    assert code == 0 and checked["ok"] and checked["index_backlog"] == 0
    assert cli.main(["--home", str(home.root), "sessions", "reindex", "--check", "--catch-up"])


SUBSTRINGS = ["kel", "KELVIN", "elvin", "ubectl", "UBECTL", "0%_d", "%_do", "\\users", "C:\\U"]
SUBSTRINGS += ["ΣΟΦ", "σοφία", "東京の", "CAFÉ", "müll", "MÜLLER", "strasse", "oad tri", "KER7X"]
SUBSTRINGS += ["ntern", "pper vio"]  # in many messages: ranked by length too


def _substring_hits(store: SessionStore) -> dict[str, list[list[tuple[int, float]]]]:
    """What the substring form alone finds for each literal, in each order and filtered."""
    from engine.sessions.fts import full_text_for
    from engine.sessions.fulltext import Filters
    from engine.sessions.query import parse_query

    out: dict[str, list[list[tuple[int, float]]]] = {}
    with store.engine.connect() as conn:
        fts = full_text_for(conn)
        for literal in SUBSTRINGS:
            query = parse_query(literal)
            out[literal] = [
                [
                    (h.message_id, round(h.score, 9))
                    for h in fts.hits(query, "substring", filters, 50, order) or []
                ]
                for order in ("relevance", "newest", "oldest")
                for filters in (Filters(), Filters(roles=["assistant"]))
            ]
    return out


def test_a_substring_is_found_in_the_text_not_yet_indexed_as_the_index_finds_it(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Literals whose folding SQLite's LIKE does not do alone (the Kelvin sign, Greek and
    accented capitals), LIKE's own wildcards and escape, and CJK, before and after. Half the
    messages are indexed, so that each order reads both the index and the text."""
    store = _trailing_store(home, monkeypatch)
    once = iter([True, False])
    assert maintenance.catch_up(store, chunk=_left(store) // 2, keep_going=lambda: next(once)).left
    trailing = _substring_hits(store)
    maintenance.catch_up(store)
    assert _substring_hits(store) == trailing
    found = {literal for literal, runs in trailing.items() if runs[0]}
    assert found == set(SUBSTRINGS), set(SUBSTRINGS) - found
