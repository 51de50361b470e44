"""The word-pair index (SQLite): phrases are found through it exactly, and it stays in step
with the messages through every way they change. Since migration 0008 it holds only the pairs
of common words, each from the message id its words became common on: every search test here
runs with no word common (the word index answers every phrase) and with every word common from
the message after its first (each phrase partly in each index)."""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from itertools import pairwise

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from sqlalchemy import text

from engine.db import upgrade
from engine.home import Home
from engine.sessions import common_words, fts_sqlite, maintenance
from engine.sessions.pairs import (
    CommonSet,
    common_pairs,
    holds_phrase,
    pair_text,
    pair_tokens,
    words_of,
)
from engine.sessions.query import WORD, parse_query
from engine.sessions.search import SessionSearch
from engine.sessions.store import NewMessage, SessionStore
from tests.conftest import open_store


@pytest.fixture(params=["rare", "common"])
def sqlite_store(
    request: pytest.FixtureRequest, home: Home, monkeypatch: pytest.MonkeyPatch
) -> SessionStore:
    if request.param == "common":
        # Every word of every message appended joins the set, from the next message on.
        monkeypatch.setattr(common_words, "threshold", lambda messages: 1)
        for name in ("MIN_SEEN", "PROMOTE_EVERY", "SAMPLE"):
            monkeypatch.setattr(common_words, name, 1)
    return open_store("sqlite", home)


def _make_common(store: SessionStore, *words: str) -> int:
    """``words`` join the set through the store's own promotion, from the next id on; that id."""
    with store.engine.begin() as conn:
        driver = conn.connection.driver_connection
        assert driver is not None
        cursor = driver.cursor()
        since = int(cursor.execute("SELECT coalesce(max(id), 0) + 1 FROM messages").fetchone()[0])
        original = common_words.threshold
        common_words.threshold = lambda messages: 1  # type: ignore[assignment]
        try:
            added = common_words.promote(cursor, Counter({w: 9 for w in words}), 9, since)
        finally:
            common_words.threshold = original  # type: ignore[assignment]
        cursor.close()
    assert sorted(added) == sorted(set(words)), "only words the word index holds can join"
    return since


def _session(store: SessionStore, *texts: str) -> str:
    session = store.create_session()
    store.append(session.id, [NewMessage(role="user", content=t) for t in texts])
    return session.id


def _found(store: SessionStore, query: str, **kw: object) -> list[str]:
    result = SessionSearch(store)("discover", query=query, **{"limit": 10, **kw})
    return [r["session_id"] for r in result["results"]]


def _indexed(store: SessionStore, pair: str) -> list[int]:
    with store.engine.connect() as conn:
        rows = conn.execute(
            text("SELECT rowid FROM messages_pairs WHERE messages_pairs MATCH :p"),
            {"p": f'"{pair}"'},
        )
        return [r[0] for r in rows]


def test_pairs_fold_case_and_accents_and_stay_one_token() -> None:
    assert pair_text("Café au LAIT", None, '{"cmd": "ls"}').split() == [
        "cafe_au",
        "au_lait",
        "cmd_ls",
    ]
    # Folding that brings in ASCII punctuation must not split a pair: ⑴ is "(1)" under NFKC.
    assert all(re.fullmatch(r"[^\s\"()]+_[^\s\"()]+", p) for p in pair_text("⑴ x ½ ﬁle").split())
    assert pair_tokens(["a", "b", "a", "b"]) == ['"a_b"', '"b_a"']  # each pair asked once


@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=60))
def test_ascii_text_is_split_as_the_word_pattern_splits_it(column: str) -> None:
    # ASCII text takes a faster way to its words than WORD: its pairs must be the same.
    words = WORD.findall(column.lower())
    expected = dict.fromkeys(f"{a}_{b}" for a, b in pairwise(words))
    assert pair_text(column, None, None) == " ".join(expected)


def test_holds_phrase_compares_words_not_characters() -> None:
    assert holds_phrase(["The Café au lait, please"], ["cafe", "au", "lait"])
    assert holds_phrase([None, "x = result_is-none"], ["result", "is", "none"])
    assert not holds_phrase(["cafes au lait"], ["cafe", "au", "lait"])  # not inside a word
    assert not holds_phrase(["cafe au", "lait"], ["cafe", "au", "lait"])  # not across columns


def test_phrase_of_common_words_is_found_only_where_the_words_stand_together(
    sqlite_store: SessionStore,
) -> None:
    together = _session(sqlite_store, "please rotate the staging keys before friday")
    apart = _session(sqlite_store, "rotate the keys, please; staging before friday")
    # Both pairs of "the staging keys" but never the three words in a row.
    pairs_only = _session(sqlite_store, "the staging area, then staging keys")
    assert _found(sqlite_store, '"the staging keys"') == [together]
    # Unquoted: the sessions where the words stand together first, then the others that have
    # them, up to the limit.
    loose = _found(sqlite_store, "staging keys")
    assert set(loose[:2]) == {together, pairs_only} and loose[2:] == [apart], loose
    assert apart in _found(sqlite_store, "rotate friday")
    assert _found(sqlite_store, '"the staging keys"', order="oldest") == [together]


def test_excluded_phrase_and_single_words_beside_a_phrase(sqlite_store: SessionStore) -> None:
    both = _session(sqlite_store, "the billing queue stalled on the nightly export")
    other = _session(sqlite_store, "the billing queue is fine, the nightly job ran")
    assert _found(sqlite_store, '"billing queue" export') == [both]
    assert _found(sqlite_store, '"billing queue" -nightly.export') == [other]  # a phrase
    assert _found(sqlite_store, '"billing queue" -stalled') == [other]


@pytest.mark.parametrize("probe", [1, 2, 200])
def test_phrase_with_words_finds_the_same_whichever_index_leads(
    sqlite_store: SessionStore, monkeypatch: pytest.MonkeyPatch, probe: int
) -> None:
    """A phrase with single words is walked through the pair index, the word index, or (when
    both have many matches) the word index's own phrase matching: the answer is the same."""
    monkeypatch.setattr(fts_sqlite, "PROBE", probe)
    rare = _session(sqlite_store, "the nightly export of the billing queue to zanzibar")
    common = [_session(sqlite_store, f"billing queue export number {i}") for i in range(3)]
    _session(sqlite_store, "billing and a queue, zanzibar")  # the words, not the phrase
    _session(sqlite_store, "export the queue for billing")
    assert _found(sqlite_store, '"billing queue" zanzibar') == [rare]
    assert _found(sqlite_store, '"the billing" export') == [rare]
    assert set(_found(sqlite_store, 'export "billing queue"')) == {rare, *common}
    assert set(_found(sqlite_store, 'export "billing queue" -zanzibar')) == set(common)
    assert _found(sqlite_store, '"export of the billing" nightly') == [rare]  # confirmed


def test_only_pairs_of_two_common_words_are_indexed_in_ascii_text() -> None:
    columns = ("The Cafe au LAIT, the lait", None, '{"cmd": "ls"}')
    assert sorted(common_pairs({"the", "cafe", "au", "lait"}, *columns).split()) == [
        "au_lait",
        "cafe_au",
        "lait_the",
        "the_cafe",
        "the_lait",
    ]
    assert common_pairs(set(), *columns) == ""
    every = pair_text(*columns).split()
    words = words_of(*columns)
    assert words == {"the", "cafe", "au", "lait", "cmd", "ls"}
    assert sorted(common_pairs(words, *columns).split()) == sorted(every)
    # Other text keeps every pair: the word index does not always split it as pairs.py does.
    other = ("The Café au LAIT", "00¼ x", "cmd ls")
    assert sorted(common_pairs(set(), *other).split()) == [
        "001_4",
        "4_x",
        "au_lait",
        "cafe_au",
        "the_cafe",
    ]


@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=60))
def test_with_every_word_common_ascii_text_has_every_pair(column: str) -> None:
    assert set(common_pairs(words_of(column), column).split()) == set(pair_text(column).split())

    # The set as of each message id: a word counts from its "since" on.
    common = CommonSet([("cafe", 1), ("au", 5), ("lait", 5), ("the", 9)])
    assert common.at(0) == set() and common.at(4) == {"cafe"}
    assert common.at(5) == common.at(8) == {"cafe", "au", "lait"}
    assert common.at(10**9) == {"cafe", "au", "lait", "the"}


def test_the_index_follows_inserts_edits_and_deletes(home: Home) -> None:
    store = open_store("sqlite", home)
    _session(store, "kappa lambda omega psi")  # the words exist, so that they can join
    since = _make_common(store, "kappa", "lambda", "omega", "psi")
    sid = _session(store, "kappa lambda mu")
    [message] = store.messages(sid)
    assert message.id >= since
    assert _indexed(store, "kappa_lambda") == [message.id]  # not the message before "since"
    assert _indexed(store, "lambda_mu") == []  # mu is not common
    with store.engine.begin() as conn:
        conn.execute(
            text("UPDATE messages SET content = 'omega psi' WHERE id = :id"), {"id": message.id}
        )
    assert _indexed(store, "kappa_lambda") == []
    assert _indexed(store, "omega_psi") == [message.id]
    store.delete_session(sid)
    assert _indexed(store, "omega_psi") == []
    assert maintenance.check(store).fts["messages_pairs"] == "ok"


def test_a_word_joining_the_common_set_keeps_phrase_search_correct(home: Home) -> None:
    """Messages before the words joined hold the phrase in the word index only, those after in
    the pair index: a search walks both, in id order, and finds each message once."""
    store = open_store("sqlite", home)
    old = [_session(store, f"the billing queue stalled, ticket {i}") for i in range(3)]
    apart_old = _session(store, "billing stalled, the queue ran, ticket 7")
    since = _make_common(store, "the", "billing", "queue", "stalled")
    new = [_session(store, f"the billing queue stalled again, ticket {i}") for i in range(3)]
    apart_new = _session(store, "billing stalled, the queue ran again, ticket 8")
    assert all(i >= since for i in _indexed(store, "billing_queue"))
    assert len(_indexed(store, "billing_queue")) == 3
    newest_first = [*reversed(new), *reversed(old)]
    assert _found(store, '"billing queue"', order="newest") == newest_first
    assert _found(store, '"billing queue"', order="oldest") == [*old, *new]
    assert _found(store, '"billing queue"', order="newest", limit=4) == newest_first[:4]
    assert set(_found(store, '"billing queue"')) == {*old, *new}
    assert set(_found(store, '"the billing queue stalled"')) == {*old, *new}  # confirmed
    assert set(_found(store, '"billing queue" -again')) == set(old)
    assert set(_found(store, "ticket -billing.queue")) == {apart_old, apart_new}  # a phrase
    assert set(_found(store, '"billing queue" ticket')) == {*old, *new}
    assert apart_old not in _found(store, '"billing queue"') and apart_new in _found(
        store, "billing queue again"
    )
    # Undone and redone: every message keeps the pairs it was given, deletes included.
    store.delete_session(old[0])
    store.delete_session(new[0])
    assert set(_found(store, '"billing queue"')) == {*old[1:], *new[1:]}
    assert maintenance.check(store).ok
    maintenance.reindex(store)
    assert len(_indexed(store, "billing_queue")) == 2
    assert maintenance.check(store).ok


def test_messages_appended_one_by_one_promote_their_common_words(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(common_words, "PROMOTE_EVERY", 8)
    monkeypatch.setattr(common_words, "COMMON_MIN", 4)
    monkeypatch.setattr(common_words, "SAMPLE", 1)
    store = open_store("sqlite", home)
    sid = _session(store, *[f"rotate the staging keys, batch {i}" for i in range(7)])
    with store.engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM messages_common_words")).scalar() == 0
    store.append(sid, [NewMessage(role="user", content="rotate the staging keys, batch 7")])
    with store.engine.connect() as conn:
        rows = dict(conn.execute(text("SELECT word, since FROM messages_common_words")).all())
    # In every message: common from the next id on; the batch numbers are in one each.
    assert rows == dict.fromkeys(["rotate", "the", "staging", "keys", "batch"], 9)
    later = _session(store, "rotate the staging keys now")
    assert _indexed(store, "staging_keys") == [store.messages(later)[0].id]
    found = SessionSearch(store)("discover", query='"staging keys"', limit=10, order="newest")
    assert [r["session_id"] for r in found["results"]] == [later, sid]
    assert maintenance.check(store).ok


_WORDY = st.text(
    alphabet=st.characters(
        categories=["Lu", "Ll", "Lo", "Nd", "No", "Mn", "Zs", "Po", "Pd", "So"],
        exclude_characters="\x00",
    ),
    min_size=3,
    max_size=60,
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(body=_WORDY, start=st.integers(0, 20), size=st.integers(2, 5))
def test_a_quoted_run_of_a_message_finds_that_message(
    sqlite_store: SessionStore, body: str, start: int, size: int
) -> None:
    """Whatever the characters, a phrase cut from a message finds it: index and query are split
    and folded by the same code."""
    words = WORD.findall(unicodedata.normalize("NFKC", body))
    run = words[start : start + size]
    if len(run) < 2:
        return
    query = '"' + " ".join(run) + '"'
    assume(not parse_query(query).cjk)  # CJK is searched by substring, as tested elsewhere
    sid = _session(sqlite_store, body)
    assert sid in _found(sqlite_store, query, order="newest"), (body, query)


def _to_revision(store: SessionStore, revision: str) -> None:
    from alembic import command
    from alembic.config import Config as AlembicConfig

    config = AlembicConfig()
    config.set_main_option("script_location", "engine:migrations")
    with store.engine.begin() as conn:
        config.attributes["connection"] = conn
        command.downgrade(config, revision)


def test_upgrade_keeps_the_pairs_of_the_words_common_by_then(home: Home) -> None:
    """A history written with every pair indexed (0007, reached by undoing 0008) keeps, once
    upgraded, the pairs of its common words for every message and every pair of its non-ASCII
    text; its phrases are found as before and every index checks out."""
    store = open_store("sqlite", home)
    _to_revision(store, "0007")
    common = [_session(store, f"rotate the staging keys for tenant{i}") for i in range(60)]
    rare = _session(store, "the zebra crossing keys, no staging")
    accented = _session(store, "déjà vu zebra crossing")
    assert _indexed(store, "zebra_crossing") == [61, 62]  # 0007: every pair
    upgrade(store.engine)
    with store.engine.connect() as conn:
        rows = dict(conn.execute(text("SELECT word, since FROM messages_common_words")).all())
    assert rows == dict.fromkeys(["rotate", "the", "staging", "keys", "for"], 0)
    assert len(_indexed(store, "staging_keys")) == 60
    assert _indexed(store, "zebra_crossing") == [62]  # the non-ASCII message only
    assert _indexed(store, "the_zebra") == []
    assert set(_found(store, '"staging keys"', limit=10)) <= set(common)
    assert len(_found(store, '"staging keys"', order="oldest", limit=10)) == 10
    assert _found(store, '"zebra crossing"', order="oldest") == [rare, accented]
    assert _found(store, '"crossing keys"') == [rare]
    assert _found(store, '"staging keys" -tenant7') != []
    assert maintenance.check(store).ok
    # And back: 0008's downgrade indexes every pair again.
    _to_revision(store, "0007")
    assert _indexed(store, "the_zebra") == [61]
    upgrade(store.engine)
    assert maintenance.check(store).ok
