"""The word-pair index (SQLite): phrases are found through it exactly, and it stays in step
with the messages through every way they change."""

from __future__ import annotations

import re
import unicodedata
from itertools import pairwise

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from sqlalchemy import text

from engine.home import Home
from engine.sessions import fts_sqlite, maintenance
from engine.sessions.pairs import holds_phrase, pair_text, pair_tokens
from engine.sessions.query import WORD, parse_query
from engine.sessions.search import SessionSearch
from engine.sessions.store import NewMessage, SessionStore
from tests.conftest import open_store


@pytest.fixture
def sqlite_store(home: Home) -> SessionStore:
    return open_store("sqlite", home)


def _session(store: SessionStore, *texts: str) -> str:
    session = store.create_session()
    store.append(session.id, [NewMessage(role="user", content=t) for t in texts])
    return session.id


def _found(store: SessionStore, query: str, **kw: object) -> list[str]:
    result = SessionSearch(store)("discover", query=query, limit=10, **kw)
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


def test_the_index_follows_inserts_edits_and_deletes(sqlite_store: SessionStore) -> None:
    sid = _session(sqlite_store, "kappa lambda mu")
    [message] = sqlite_store.messages(sid)
    assert _indexed(sqlite_store, "kappa_lambda") == [message.id]
    with sqlite_store.engine.begin() as conn:
        conn.execute(
            text("UPDATE messages SET content = 'omega psi' WHERE id = :id"), {"id": message.id}
        )
    assert _indexed(sqlite_store, "kappa_lambda") == []
    assert _indexed(sqlite_store, "omega_psi") == [message.id]
    sqlite_store.delete_session(sid)
    assert _indexed(sqlite_store, "omega_psi") == []
    assert maintenance.check(sqlite_store).fts["messages_pairs"] == "ok"


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
