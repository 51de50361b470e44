"""CJK words shorter than a trigram, and accents, on both backends (migration 0003).

A CJK run has no spaces, so the word index holds it as one token and the trigram index cannot
look up fewer than three characters: one- and two-character words are found through an index
of CJK grams that triggers (SQLite) or an expression index (PostgreSQL) keep in step.
"""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Connection, text

from engine.db import upgrade
from engine.home import Home
from engine.sessions.query import CJK_GRAM_CLASS, parse_query
from engine.sessions.search import SessionSearch
from engine.sessions.store import NewMessage, SessionStore
from tests.conftest import REPO, downgrade_to, open_store

MIGRATION = REPO / "engine" / "migrations" / "versions" / "0003_cjk_grams_unaccent.py"


def _migration() -> Any:
    spec = importlib.util.spec_from_file_location("migration_0003", MIGRATION)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _session(store: SessionStore, *texts: str) -> str:
    session = store.create_session(title="t")
    store.append(session.id, [NewMessage(role="user", content=t) for t in texts])
    return session.id


def ids(search: SessionSearch, query: str) -> list[str]:
    return [r["session_id"] for r in search("discover", query=query, limit=10)["results"]]


def test_the_query_side_uses_the_class_the_indexes_were_built_with() -> None:
    assert _migration().CJK_CLASS == CJK_GRAM_CLASS


@pytest.mark.parametrize(
    ("content", "query"),
    [
        ("数据迁移", "迁移"),  # at the very end of the text: no trigram starts there
        ("数据迁移", "移"),  # the last character alone
        ("迁移", "迁移"),  # the whole text
        ("abc迁移def", "迁移"),  # between Latin letters
        ("请看 https://example.com/数据 的说明", "数据"),
        ("サーバーを再起動しました", "サー"),  # katakana with the prolonged sound mark
        ("データベースのバックアップ", "ー"),
        ("데이터베이스 서버", "서버"),  # Hangul
        ("데이터베이스 서버", "베이"),  # inside a Korean word
        ("x" * 70_000 + " 数据迁移", "迁移"),  # past the first 65,536 bytes
    ],
)
def test_short_cjk_words_are_found(store: SessionStore, content: str, query: str) -> None:
    noise = _session(store, "天气很好，我们去吃午饭吧。", "nothing to see here")
    target = _session(store, "intro", content)
    found = ids(SessionSearch(store), query)
    assert found == [target], (found, noise)


def test_every_short_cjk_substring_is_found(store: SessionStore) -> None:
    """Each one- and two-character CJK substring of random mixed text finds exactly the
    sessions whose text holds it."""
    rng = random.Random(3)
    alphabet = "数据库迁移计划的和在服务器ーサバデタ서버배포"
    texts = []
    for _ in range(8):
        parts = [
            "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 6)))
            + rng.choice([" ", "。", "abc", "", "-"])
            for _ in range(rng.randint(1, 4))
        ]
        texts.append("".join(parts))
    sessions = [_session(store, t) for t in texts]
    search = SessionSearch(store)
    grams = {t[i : i + n] for t in texts for i in range(len(t)) for n in (1, 2)}
    grams = {g for g in grams if len(g) == len([c for c in g if c in alphabet]) > 0}
    assert len(grams) > 40
    for gram in sorted(grams):
        expected = {sid for sid, t in zip(sessions, texts, strict=True) if gram in t}
        assert set(ids(search, gram)) == expected, gram
    absent = next(a + b for a in alphabet for b in alphabet if all(a + b not in t for t in texts))
    assert ids(search, absent) == []


def test_the_snippet_marks_a_short_cjk_word(store: SessionStore) -> None:
    _session(store, "我们讨论了数据库迁移的计划，下周开始。")
    card = SessionSearch(store)("discover", query="迁移")["results"][0]
    assert "[迁移]" in card["snippet"]


def test_the_snippet_marks_accented_words_from_a_folded_query(store: SessionStore) -> None:
    _session(store, "Update the café menu, and the Résumé page too.")
    for query in ("cafe", "CAFÉ", "resume"):
        card = SessionSearch(store)("discover", query=query)["results"][0]
        assert "[café]" in card["snippet"] or "[Résumé]" in card["snippet"], card["snippet"]


def test_accents_are_folded_both_ways(store: SessionStore) -> None:
    plain = _session(store, "the naive approach works")
    accented = _session(store, "a naïve approach, the Zürich office")
    search = SessionSearch(store)
    assert set(ids(search, "naive")) == {plain, accented}
    assert set(ids(search, "naïve")) == {plain, accented}
    assert ids(search, "zurich") == [accented]


def _execute(store: SessionStore, sql: str, **params: object) -> None:
    with store.engine.begin() as conn:
        conn.execute(text(sql), params)


def test_grams_follow_updates_and_deletes(store: SessionStore) -> None:
    session = store.create_session(title="t")
    (first, second) = store.append(
        session.id,
        [
            NewMessage(role="user", content="数据迁移"),
            NewMessage(role="user", content="plain text"),
        ],
    )
    search = SessionSearch(store)
    assert ids(search, "迁移") == [session.id]
    _execute(store, "UPDATE messages SET content = '服务器' WHERE id = :id", id=first)
    assert ids(search, "迁移") == []
    assert ids(search, "服务") == [session.id]
    _execute(store, "UPDATE messages SET content = '备份' WHERE id = :id", id=second)
    assert ids(search, "备份") == [session.id]
    _execute(store, "UPDATE messages SET content = 'no longer' WHERE id = :id", id=second)
    assert ids(search, "备份") == []
    assert store.delete_session(session.id)
    assert ids(search, "服务") == []
    if store.engine.dialect.name == "sqlite":
        _check_gram_index(store)


def _check_gram_index(store: SessionStore) -> None:
    """FTS5's own check of the gram index against its view; raises when they differ."""
    with store.engine.connect() as conn:
        conn.exec_driver_sql(
            "INSERT INTO messages_cjk(messages_cjk, rank) VALUES ('integrity-check', 1)"
        )
        conn.rollback()


def test_upgrade_indexes_the_messages_already_there(store: SessionStore) -> None:
    """A history written before 0003 (and 0003 undone, to check its downgrade) is searchable
    by short CJK words and without accents once upgraded."""
    downgrade_to(store, "0002")
    with store.engine.connect() as conn:
        if store.engine.dialect.name == "sqlite":
            left = "SELECT name FROM sqlite_master WHERE name LIKE 'messages_cjk%'"
        else:
            left = "SELECT cfgname FROM pg_ts_config WHERE cfgname = 'cairn'"
        assert conn.exec_driver_sql(left).all() == []
    cjk = _session(store, "旧的数据迁移记录")
    accented = _session(store, "the café order")
    upgrade(store.engine)
    search = SessionSearch(store)
    assert ids(search, "迁移") == [cjk]
    assert ids(search, "cafe") == [accented]


# -- SQLite ----------------------------------------------------------------------------------


def _indexed(conn: Connection) -> int:
    return int(conn.exec_driver_sql("SELECT count(*) FROM messages_cjk_docsize").scalar() or 0)


def test_sqlite_indexes_only_messages_with_cjk(home: Home) -> None:
    store = open_store("sqlite", home)
    _session(
        store,
        "plain ascii",
        "café au lait",
        "emoji 🚀 and … dashes — “quotes”",
        "\ua000\ua001 Yi syllables, between Hangul and the compatibility ideographs",
        "\uff21\uff22 fullwidth letters",
        "数据",
        "\uf900\uf901",  # compatibility ideographs: in the class
    )
    with store.engine.connect() as conn:
        # The byte prefilter lets the Yi and fullwidth lines through (lead bytes 0xEA, 0xEF);
        # they are indexed with no grams. The ASCII, accented and emoji ones never get there.
        assert _indexed(conn) == 4
        grams = conn.exec_driver_sql("SELECT grams FROM messages_cjk_source ORDER BY id").all()
    assert [g for (g,) in grams] == [None, None, "数据 据", "\uf900\uf901 \uf901"]


def test_sqlite_gram_index_rebuilds_from_its_view(home: Home) -> None:
    """'rebuild' reads the view the triggers read, so it gives back the same index."""
    store = open_store("sqlite", home)
    sid = _session(store, "数据库迁移", "サーバー", "plain")
    with store.engine.begin() as conn:
        conn.exec_driver_sql("DELETE FROM messages_cjk")  # empty it behind the triggers' back
    assert ids(SessionSearch(store), "迁移") == []
    with store.engine.begin() as conn:
        conn.exec_driver_sql("INSERT INTO messages_cjk(messages_cjk) VALUES ('rebuild')")
        assert _indexed(conn) == 2
    assert ids(SessionSearch(store), "迁移") == [sid]
    _check_gram_index(store)


# -- PostgreSQL ------------------------------------------------------------------------------


def test_postgres_grams_match_the_sqlite_grams(home: Home, tmp_path: Path) -> None:
    """Each backend splits text into the same one- and two-character grams."""
    pg = open_store("postgresql", home)
    lite = open_store("sqlite", Home(tmp_path / "other"))
    samples = [
        "我们讨论了数据库迁移的计划，下周开始。",
        "設定ファイルの場所",
        "데이터베이스 서버",
        "abc迁移def 々 ー",
        "plain",
    ]
    for sample in samples:
        _session(lite, sample)
    with lite.engine.connect() as conn:
        rows = conn.exec_driver_sql("SELECT grams FROM messages_cjk_source ORDER BY id").all()
    sqlite_grams = {g for (grams,) in rows for g in grams.split()}
    with pg.engine.connect() as conn:
        pg_grams = {
            g
            for sample in samples
            for g in conn.execute(text("SELECT cairn_cjk_grams(:t)"), {"t": sample}).scalar_one()
        }
    # SQLite keeps a character alone only at the end of a run (prefix queries find the
    # rest); PostgreSQL keeps every character: the pairs must agree, and each lone one too.
    assert {g for g in sqlite_grams if len(g) == 2} == {g for g in pg_grams if len(g) == 2}
    assert {g for g in sqlite_grams if len(g) == 1} <= pg_grams
    assert {g[0] for g in pg_grams} == {g[0] for g in sqlite_grams}


def test_postgres_short_cjk_query_uses_the_gram_index(home: Home) -> None:
    store = open_store("postgresql", home)
    _session(store, "数据迁移")
    with store.engine.connect() as conn:
        conn.exec_driver_sql("SET enable_seqscan = off")
        plan = "\n".join(
            r[0]
            for r in conn.execute(
                text(
                    "EXPLAIN SELECT id FROM messages AS m "
                    "WHERE cairn_cjk_grams(m.content) @> ARRAY[CAST(:g AS text)]"
                ),
                {"g": "迁移"},
            )
        )
    assert "ix_messages_cjk_grams" in plan, plan


def test_postgres_configuration_folds_accents(home: Home) -> None:
    store = open_store("postgresql", home)
    with store.engine.connect() as conn:
        folded = conn.execute(text("SELECT to_tsvector('cairn', 'Café Résumé naïve')")).scalar()
    assert folded == "'cafe':1 'naive':3 'resume':2"


def test_postgres_without_unaccent_still_searches(home: Home) -> None:
    """A server without unaccent (or a role that may not create it) gets the configuration
    without it: accents are then kept, and the rest works."""
    store = open_store("postgresql", home)
    downgrade_to(store, "0002")
    migration = _migration()
    migration._unaccent_schema = lambda conn: None
    with store.engine.begin() as conn:
        migration._upgrade_postgres(conn)
    accented = _session(store, "the café order", "数据迁移")
    search = SessionSearch(store)
    assert ids(search, "café") == [accented]
    assert ids(search, "cafe") == []
    assert ids(search, "迁移") == [accented]


def test_a_query_with_only_short_latin_terms_has_no_gram_form() -> None:
    assert parse_query("db ok").grams() == []
    assert parse_query("迁移 db 迁移").grams() == ["迁移"]
    assert parse_query('"数据" 库').grams() == ["数据", "库"]
