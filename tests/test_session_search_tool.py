"""The session_search tool as the model calls it: schema, dispatch, errors as results."""

from __future__ import annotations

import json
from typing import Any

import pytest

from engine.home import Home
from engine.sessions.search import SessionSearch
from engine.sessions.store import NewMessage, SessionStore
from engine.sessions.tool import SCHEMA, SessionSearchTool


@pytest.fixture
def tool(store: SessionStore) -> SessionSearchTool:
    """Three sessions: "old" continued as "now" (the caller's lineage), and "other" from cron
    with one very long tool output."""
    t0 = 1_700_000_000.0
    store.create_session(session_id="old", source="cli", started_at=t0)
    store.append(
        "old",
        [
            NewMessage(role="user", content="where do the vault keys live?", timestamp=t0),
            NewMessage(role="assistant", content="The vault keys live in ops.", timestamp=t0 + 1),
        ],
    )
    store.create_session(session_id="now", parent_session_id="old", started_at=t0 + 100)
    store.add_message("now", "user", "still on the vault keys", timestamp=t0 + 100)
    store.create_session(session_id="other", source="cron", started_at=t0 + 50)
    store.append(
        "other",
        [
            NewMessage(role="user", content="rotate the vault keys", timestamp=t0 + 50),
            NewMessage(role="tool", content="x" * 10_000, tool_name="terminal", timestamp=t0 + 51),
        ],
    )
    return SessionSearchTool(SessionSearch(store), current_session_id="now")


def test_schema_is_a_plain_json_tool_definition() -> None:
    assert SCHEMA["name"] == "session_search"
    assert "real messages" in SCHEMA["description"] and "summaries" in SCHEMA["description"]
    props = SCHEMA["parameters"]["properties"]
    assert set(props) == {
        "mode",
        "query",
        "limit",
        "role",
        "source",
        "since",
        "until",
        "order",
        "session_id",
        "anchor_id",
        "direction",
        "window",
    }
    assert props["mode"]["enum"] == ["discover", "scroll", "read", "browse"]
    json.dumps(SCHEMA)  # serialisable as is


def test_discover_leaves_out_the_callers_lineage(tool: SessionSearchTool) -> None:
    result = tool({"query": "vault keys", "limit": 10})
    assert result["ok"] is True
    assert [r["session_id"] for r in result["results"]] == ["other"]
    everyone = SessionSearchTool(tool.search)({"query": "vault keys", "limit": 10})
    found = [r["session_id"] for r in everyone["results"]]
    assert len(found) == 2 and "other" in found  # plus one of the lineage "old" → "now"


def test_filters_and_string_numbers_from_the_model(tool: SessionSearchTool) -> None:
    found = SessionSearchTool(tool.search)(
        {"mode": "discover", "query": "vault", "role": "assistant", "limit": "5", "until": 3e9}
    )
    assert [r["session_id"] for r in found["results"]] == ["old"]
    none = SessionSearchTool(tool.search)({"query": "vault", "since": "2100-01-01"})
    assert none["ok"] and none["results"] == []


def test_what_a_call_without_a_mode_or_query_means(
    tool: SessionSearchTool, store: SessionStore
) -> None:
    """Tried as a model calls it: no arguments, a blank query, discover with no query, a
    session id alone, a session id with an anchor."""
    for arguments in ({}, None, {"query": "  "}, {"mode": "discover"}):
        result = tool(arguments)
        assert result["ok"] and result["mode"] == "browse", arguments
        # The caller's own lineage ("now", continued from "old") is never listed.
        assert [s["session_id"] for s in result["sessions"]] == ["other"]
    read = tool({"session_id": "other"})
    assert read["ok"] and read["mode"] == "read"
    first = store.messages("other")[0]
    scrolled = tool({"session_id": "other", "anchor_id": first.id})
    assert scrolled["ok"] and scrolled["mode"] == "scroll"


def test_an_anchor_that_does_not_exist_or_is_elsewhere_is_an_error(
    tool: SessionSearchTool, store: SessionStore
) -> None:
    """Tried: a hallucinated message id, and a real id from another session. Both used to
    return messages as if the anchor were there."""
    missing = tool({"mode": "scroll", "session_id": "old", "anchor_id": 999_999})
    assert missing["ok"] is False and "no message 999999" in missing["message"]
    elsewhere = store.messages("other")[0].id
    wrong = tool({"mode": "scroll", "session_id": "old", "anchor_id": elsewhere})
    assert wrong["ok"] is False and "belongs to session other" in wrong["message"]


def test_scroll_read_browse(tool: SessionSearchTool, store: SessionStore) -> None:
    first = store.messages("old")[0]
    scrolled = tool(
        {"mode": "scroll", "session_id": "old", "anchor_id": first.id, "direction": "forward"}
    )
    second = store.messages("old")[1]
    assert scrolled["ok"] and [m["id"] for m in scrolled["messages"]] == [second.id]
    read = tool({"mode": "read", "session_id": "other"})
    assert read["ok"] and read["message_count"] == 2
    long = read["messages"][1]
    assert len(long["content"]) < 4100 and long["truncated"] == 10_000 - 4000
    assert "characters omitted" in long["content"]
    browsed = tool({"mode": "browse", "source": "cron"})
    assert [s["session_id"] for s in browsed["sessions"]] == ["other"]


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        ("not a dict", "JSON object"),
        ({"mode": "teleport"}, "mode must be one of"),
        ({"mode": "read"}, "needs a session_id"),
        ({"mode": "scroll", "session_id": "missing"}, "no session"),
        ({"query": "x", "limit": "lots"}, "limit must be an integer"),
        ({"query": "x", "limit": True}, "not a boolean"),
        ({"query": "x", "role": "robot"}, "role must be one of"),
        ({"query": "x", "order": "random"}, "order must be one of"),
        ({"query": "x", "since": "last tuesday"}, "not a date"),
        ({"query": ["x"]}, "query must be a string"),
        ({"mode": "scroll", "session_id": "old", "direction": "sideways"}, "direction"),
    ],
)
def test_bad_arguments_come_back_as_results(
    tool: SessionSearchTool, arguments: object, fragment: str
) -> None:
    result = tool(arguments)  # type: ignore[arg-type]
    assert result["ok"] is False and result["error"] == "invalid"
    assert fragment in result["message"]


def test_arguments_of_other_modes_and_nulls_are_noted_not_fatal(tool: SessionSearchTool) -> None:
    result = tool({"mode": "browse", "query": "vault", "anchor_id": 3, "role": None})
    assert result["ok"] and result["ignored"] == ["anchor_id", "query"]
    assert "ignored for mode browse" in result["note"]
    assert "ignored" not in tool({"query": "vault", "session_id": None})


def test_database_failure_is_a_result(home: Home, store: SessionStore) -> None:
    if store.engine.dialect.name != "sqlite":
        pytest.skip("replaces the embedded database file")
    tool = SessionSearchTool(SessionSearch(store))
    store.engine.dispose()
    home.state_db.unlink()
    home.state_db.write_bytes(b"not a database at all" * 100)
    result = tool({"query": "vault"})
    assert result["ok"] is False and result["error"] == "unavailable"


def test_the_model_searches_past_tool_output_and_sub_agents_unless_it_names_them(
    store: SessionStore,
) -> None:
    """Tried: the same rare word in a user message, in a tool result, and in a sub-agent's
    session. The model's plain query finds only the conversation; role=tool and
    source=subagent reach the others; a person's own search sees everything."""
    t0 = 1_700_000_000.0
    store.create_session(session_id="chat", source="cli", started_at=t0)
    store.add_message("chat", "user", "the zephyrine build broke again", timestamp=t0)
    store.create_session(session_id="tools", source="cli", started_at=t0 + 10)
    store.append(
        "tools",
        [
            NewMessage(role="user", content="run the build", timestamp=t0 + 10),
            NewMessage(
                role="tool",
                content="error: zephyrine missing",
                tool_name="terminal",
                timestamp=t0 + 11,
            ),
        ],
    )
    store.create_session(session_id="helper", source="subagent", started_at=t0 + 20)
    store.add_message("helper", "assistant", "zephyrine is the codec", timestamp=t0 + 20)
    tool = SessionSearchTool(SessionSearch(store))

    def found(arguments: dict[str, Any], **kwargs: Any) -> set[str]:
        result = tool({"query": "zephyrine", **arguments}, **kwargs)
        assert result["ok"], result
        return {card["session_id"] for card in result["results"]}

    assert found({}) == {"chat"}
    assert found({"role": "tool"}) == {"tools"}
    assert found({"source": "subagent"}) == {"helper"}
    assert found({}, for_user=True) == {"chat", "tools", "helper"}
