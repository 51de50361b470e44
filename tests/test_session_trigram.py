"""Substrings through the trigram index without positions (SQLite, migration 0007): the
messages found are those a phrase of trigrams over a positional index finds, case folding
included, and an existing history is indexed again when it is brought to this schema."""

from __future__ import annotations

import random
import sqlite3

import pytest
from sqlalchemy import text

from engine.db import upgrade
from engine.home import Home
from engine.sessions import maintenance
from engine.sessions.fts_sqlite import SqliteFullText
from engine.sessions.fulltext import Filters
from engine.sessions.query import parse_query
from engine.sessions.search import SessionSearch
from engine.sessions.store import NewMessage, SessionStore
from tests.conftest import downgrade_to, open_store

# Letters whose case Python and FTS5 fold differently (µ, ſ, ς and ϐ are folded by FTS5 but
# kept by str.lower; Cherokee and Georgian capitals are lowered by Python only), beside ASCII,
# accents, CJK and punctuation.
ALPHABET = "abcAB Cxyz-_.µΜμſSsςσΣϐβᏣꮳႠⴀéÉ数据库迁移 \t"


@pytest.fixture
def sqlite_store(home: Home) -> SessionStore:
    return open_store("sqlite", home)


def _positional(texts: list[str]) -> sqlite3.Connection:
    """The same messages in a trigram index with positions, as the index was before."""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(content, tokenize='trigram')")
    db.executemany("INSERT INTO t(rowid, content) VALUES (?, ?)", enumerate(texts, start=1))
    return db


def _walked(store: SessionStore, query: str) -> list[int]:
    with store.engine.connect() as conn:
        fts = SqliteFullText(conn)
        walk = fts._substring_walk(parse_query(query))
        assert walk is not None
        return [i for i, _ in fts._walk(walk, Filters(), 10_000)]


def test_substrings_find_what_a_phrase_of_trigrams_found(sqlite_store: SessionStore) -> None:
    rng = random.Random(7)
    texts = ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(3, 40))) for _ in range(300)]
    session = sqlite_store.create_session()
    ids = sqlite_store.append(session.id, [NewMessage(role="user", content=t) for t in texts])
    assert ids == list(range(1, len(texts) + 1))
    positional = _positional(texts)
    literals = set()
    for t in texts:  # pieces of the messages, and the same pieces in other cases
        start = rng.randrange(len(t))
        piece = t[start : start + rng.randint(3, 8)]
        literals |= {piece, piece.upper(), piece.lower(), piece.swapcase()}
    literals |= {
        "".join(rng.choice(ALPHABET) for _ in range(rng.randint(3, 6))) for _ in range(200)
    }
    checked = 0
    for literal in sorted(literals):
        term = parse_query(f'"{literal}"')
        if len(term.terms) != 1 or len(term.substrings()) != 1 or term.grams():
            continue  # not a single substring term once parsed
        phrase = term.substrings()[0]
        expected = [
            r[0]
            for r in positional.execute(
                "SELECT rowid FROM t WHERE t MATCH ? ORDER BY rowid DESC", (phrase,)
            )
        ]
        assert _walked(sqlite_store, f'"{literal}"') == expected, literal
        checked += 1
    assert checked > 300


def test_the_index_keeps_no_positions_and_stays_in_step(sqlite_store: SessionStore) -> None:
    with sqlite_store.engine.connect() as conn:
        sql = conn.exec_driver_sql(
            "SELECT sql FROM sqlite_master WHERE name = 'messages_trigram'"
        ).scalar_one()
    assert "detail='none'" in sql
    session = sqlite_store.create_session()
    sqlite_store.append(
        session.id,
        [NewMessage(role="user", content=c) for c in ("the abcdef line", "abc then def")],
    )
    search = SessionSearch(sqlite_store)
    found = search("discover", query="bcde")["results"]
    assert [r["match_message_id"] for r in found] == [1]  # not the one with the trigrams apart
    with sqlite_store.engine.begin() as conn:
        conn.execute(text("UPDATE messages SET content = 'xbcdex' WHERE id = 2"))
        conn.execute(text("DELETE FROM messages WHERE id = 1"))
    assert [r["match_message_id"] for r in search("discover", query="bcde")["results"]] == [2]
    # Every index against the messages (the session's counters were left behind on purpose).
    assert set(maintenance.check(sqlite_store).fts.values()) == {"ok"}


def test_upgrade_indexes_the_messages_already_there(sqlite_store: SessionStore) -> None:
    """A history written before 0007 (and 0007 undone, to check its downgrade) is found by
    substrings once upgraded, and every index checks out."""
    downgrade_to(sqlite_store, "0006")
    with sqlite_store.engine.connect() as conn:
        sql = conn.exec_driver_sql(
            "SELECT sql FROM sqlite_master WHERE name = 'messages_trigram'"
        ).scalar_one()
        assert "detail" not in sql
    session = sqlite_store.create_session()
    sqlite_store.append(
        session.id,
        [NewMessage(role="user", content=c) for c in ("Ticket QX-7734 is blocked", "σίσυφος")],
    )
    upgrade(sqlite_store.engine)
    search = SessionSearch(sqlite_store)
    assert [r["match_message_id"] for r in search("discover", query="x-773")["results"]] == [1]
    assert [r["match_message_id"] for r in search("discover", query="ΊΣΥΦ")["results"]] == [2]
    assert maintenance.check(sqlite_store).ok
