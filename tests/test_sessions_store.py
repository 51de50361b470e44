"""The session store on a real SQLite file: lineage, counters, ordering, deletion."""

from __future__ import annotations

import pytest

from engine.sessions.store import NewMessage, SessionStore, SessionStoreError


def test_messages_are_stored_whole_and_in_order(store: SessionStore) -> None:
    session = store.create_session(title="t", source="gui", model="m", system_prompt="sp")
    long_text = "x" * 100_000 + " end"
    ids = store.append(
        session.id,
        [
            NewMessage(role="user", content="hello"),
            NewMessage(
                role="assistant",
                content="",
                tool_calls=[{"id": "c1", "name": "memory", "arguments": {"action": "add"}}],
            ),
            NewMessage(role="tool", content=long_text, tool_name="memory", tool_call_id="c1"),
        ],
    )
    assert ids == sorted(ids)
    messages = store.messages(session.id)
    assert [m.role for m in messages] == ["user", "assistant", "tool"]
    assert messages[1].tool_calls == [
        {"id": "c1", "name": "memory", "arguments": {"action": "add"}}
    ]
    assert messages[2].content == long_text
    info = store.get_session(session.id)
    assert info is not None
    assert (info.message_count, info.tool_call_count) == (3, 1)
    assert (info.model, info.system_prompt, info.source) == ("m", "sp", "gui")


def test_lineage_shares_the_root(store: SessionStore) -> None:
    first = store.create_session()
    store.end_session(first.id, "compression")
    second = store.create_session(parent_session_id=first.id)
    third = store.create_session(parent_session_id=second.id)
    assert third.root_session_id == first.id
    assert [s.id for s in store.lineage(third.id)] == [first.id, second.id, third.id]
    ended = store.get_session(first.id)
    assert ended is not None and ended.end_reason == "compression" and ended.ended_at


def test_unknown_parent_session_and_role_are_refused(store: SessionStore) -> None:
    with pytest.raises(SessionStoreError, match="parent session"):
        store.create_session(parent_session_id="nope")
    session = store.create_session()
    with pytest.raises(SessionStoreError, match="unknown role"):
        store.add_message(session.id, "wizard", "hi")
    with pytest.raises(SessionStoreError, match="not found"):
        store.add_message("missing", "user", "hi")
    assert store.messages(session.id) == []


def test_delete_keeps_children(store: SessionStore) -> None:
    parent = store.create_session()
    store.add_message(parent.id, "user", "parent words")
    child = store.create_session(parent_session_id=parent.id)
    store.add_message(child.id, "user", "child words")
    assert store.delete_session(parent.id)
    assert store.get_session(parent.id) is None
    kept = store.get_session(child.id)
    assert kept is not None and kept.parent_session_id is None
    assert [m.content for m in store.messages(child.id)] == ["child words"]
    assert not store.delete_session(parent.id)


def test_list_newest_first_with_source_filter(store: SessionStore) -> None:
    for i, source in enumerate(["cli", "cron", "cli"]):
        store.create_session(session_id=f"s{i}", source=source, started_at=1000.0 + i)
    assert [s.id for s in store.list_sessions()] == ["s2", "s1", "s0"]
    assert [s.id for s in store.list_sessions(source="cli")] == ["s2", "s0"]
    assert store.count_sessions() == 3


def test_nul_characters_are_stored_as_replacement_characters(store: SessionStore) -> None:
    """Tried: NUL inside a title and a message (PostgreSQL rejects NUL in text)."""
    session = store.create_session(title="a\x00b")
    store.add_message(session.id, "user", "before\x00after")
    assert store.messages(session.id)[0].content == "before\ufffdafter"
    info = store.get_session(session.id)
    assert info is not None and info.title == "a\ufffdb"
