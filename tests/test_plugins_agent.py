"""External memory providers inside the real turn loop: a scripted OpenAI-compatible server on
loopback, real HTTP, the real stores."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.agent import Agent, Notice
from engine.config import update_config
from engine.home import Home
from engine.plugins.holographic.store import FactStore
from engine.plugins.manager import FENCE_TAG
from tests.scripted_server import ScriptedServer, reply, tool_calls
from tests.test_agent import Recorder, make_agent, stored, summariser
from tests.test_plugins import (
    THIRD_PARTY,
    Faulty,
    Recording,
    Stuck,
    echo_tool,
    install_distribution,
)


def last_user(request: dict[str, Any]) -> str:
    return next(m["content"] for m in reversed(request["messages"]) if m["role"] == "user")


def test_hooks_fire_in_the_documented_order_during_full_turns(
    model_home: Home, scripted: ScriptedServer
) -> None:
    summaries = summariser(scripted)
    entry = "Garden beds are raised, 40 cm deep"
    later = [f"question {i} about the garden" for i in range(2, 11)]
    scripted.add(
        tool_calls(("memory", {"action": "add", "content": entry})),
        reply("Noted the beds."),
        *[reply(f"answer {i}") for i in range(2, 11)],
    )
    provider = Recording(recall="Recalled: the garden is in Lisbon ({query}).")
    agent, events = make_agent(model_home, memory_provider=provider, background_review=False)
    first_session = agent.session_id
    assert provider.hooks() == ["tools", "system_prompt_block"]
    assert "Recording provider block." in agent.prompt.text

    # Between turns the test waits for the background hooks, so the order it reads is the
    # order the agent asked for (the next turn's prefetch may otherwise overtake them).
    assert agent.external_memory is not None
    for text in ["remember my raised beds", *later]:
        assert agent.send(text).error is None
        assert agent.external_memory.drain(5)
    assert agent.compress() is True
    assert agent.external_memory.drain(5)
    agent.close(provider_timeout=5)

    assert provider.hooks() == [
        "tools", "system_prompt_block",                                # session start
        "prefetch", "on_memory_write", "sync_turn", "queue_prefetch",  # turn 1 (a tool round)
        *["prefetch", "sync_turn", "queue_prefetch"] * len(later),     # turns 2..10
        "on_pre_compress", "system_prompt_block", "on_session_end",    # compression
        "on_session_end", "shutdown",                                  # close
    ]  # fmt: skip
    assert provider.args("prefetch")[:2] == [
        ("remember my raised beds", first_session),
        ("question 2 about the garden", first_session),
    ]
    assert provider.args("on_memory_write") == [("add", "memory", entry)]
    assert provider.args("sync_turn")[:2] == [
        ("remember my raised beds", "Noted the beds.", first_session),
        ("question 2 about the garden", "answer 2", first_session),
    ]
    assert [a[0] for a in provider.args("queue_prefetch")] == ["remember my raised beds", *later]
    compressed = provider.args("on_pre_compress")[0][0]
    assert [m["content"] for m in compressed if m["role"] == "user"] == [
        "remember my raised beds",
        *later,
    ]
    ended = [a[0] for a in provider.args("on_session_end")]
    assert len(ended[0]) == len(compressed)  # the session compression ended
    assert agent.session_id != first_session and len(ended[1]) == len(agent.messages)
    # The provider's notes reached the summariser.
    assert "the user's garden is in Lisbon" in json.dumps(summaries[-1]["messages"])
    assert [e for e in events.of(Notice) if e.kind == "provider"] == []


def test_recall_goes_into_each_request_of_the_turn_and_never_into_the_transcript(
    model_home: Home, scripted: ScriptedServer
) -> None:
    scripted.add(
        tool_calls(("session_search", {"query": "garden"})),
        reply("Found nothing older."),
        reply("Second answer."),
    )
    provider = Recording(recall="Recalled fact for: {query}")
    agent, _ = make_agent(model_home, memory_provider=provider, background_review=False)
    agent.send("did we talk about the garden?")
    agent.send("and the roses?")
    first, second, third = scripted.chat_requests()
    for request in (first, second):  # both model calls of the tool round carry the recall
        text = last_user(request)
        assert text.startswith(f'<{FENCE_TAG} provider="recording">')
        assert "Recalled fact for: did we talk about the garden?" in text
        assert text.endswith("\n\ndid we talk about the garden?")
    # Next turn: the new message carries the new recall; the old message is plain again.
    assert "Recalled fact for: and the roses?" in last_user(third)
    earlier = next(m["content"] for m in third["messages"] if m["role"] == "user")
    assert earlier == "did we talk about the garden?"
    # Nothing recalled was kept: not in the conversation, not in the store.
    assert FENCE_TAG not in json.dumps(agent.messages)
    assert FENCE_TAG not in json.dumps(stored(agent))
    # The system prompt stays byte-identical across the calls (cacheable).
    assert len({r["messages"][0]["content"] for r in (first, second, third)}) == 1
    agent.close()


def timed_turns(agent: Agent, texts: list[str]) -> list[float]:
    times = []
    for text in texts:
        started = time.monotonic()
        result = agent.send(text)
        times.append(time.monotonic() - started)
        assert result.error is None, result.error
    return times


@pytest.fixture
def stuck() -> Iterator[Stuck]:
    provider = Stuck("sleepy")
    yield provider
    provider.release.set()


def test_a_provider_that_raises_or_sleeps_10s_does_not_delay_the_turn(
    model_home: Home, scripted: ScriptedServer, stuck: Stuck
) -> None:
    texts = ["first question", "second question", "third question"]

    def script(run: int) -> None:
        entry = f"Likes short answers (run {run})"
        scripted.add(
            tool_calls(("memory", {"action": "add", "content": entry})),
            reply("answer one"),
            reply("answer two"),
            reply("answer three"),
        )

    script(1)
    baseline_agent, _ = make_agent(model_home, background_review=False)
    baseline = timed_turns(baseline_agent, texts)
    baseline_agent.close()

    script(2)
    faulty = Faulty("faulty")
    agent, events = make_agent(model_home, memory_provider=faulty, background_review=False)
    with_faults = timed_turns(agent, texts)
    agent.close(provider_timeout=5)
    warned = [e.text for e in events.of(Notice) if e.kind == "provider"]
    assert any("prefetch failed" in t for t in warned)
    assert any("sync_turn failed" in t for t in warned)
    assert any("on_memory_write failed" in t for t in warned)

    script(3)
    started = time.monotonic()
    agent, events = make_agent(model_home, memory_provider=stuck, background_review=False)
    startup = time.monotonic() - started
    with_sleeper = timed_turns(agent, texts)
    started = time.monotonic()
    agent.close(provider_timeout=0.5)
    closing = time.monotonic() - started

    # Each turn costs at most the prefetch budget (50 ms) more than without a provider;
    # allow a generous second for a loaded machine, far below the 10 s the provider sleeps.
    slack = 1.0
    for times in (with_faults, with_sleeper):
        for turn, took in enumerate(times):
            assert took < baseline[turn] + slack, (times, baseline)
            assert took < 3.0
    # Start-up waits for the prompt block and tools at most once (1 s), then no more.
    assert startup < 3.0
    assert closing < 2.0
    assert any("gave no answer" in e.text for e in events.of(Notice) if e.kind == "provider")
    # The model still answered every turn and memory was written as asked.
    assert [e for e in stored(agent) if e["role"] == "assistant"][-1]["content"] == "answer three"


def test_provider_tools_are_offered_but_cannot_shadow_core_tools(
    model_home: Home, scripted: ScriptedServer
) -> None:
    scripted.add(reply("ok"))
    provider = Recording(
        tools=[echo_tool("memory"), echo_tool("session_search"), echo_tool("notes")]
    )
    agent, events = make_agent(model_home, memory_provider=provider, background_review=False)
    assert agent.tools.names()[-1] == "notes"
    assert agent.tools.get("memory").schema["description"].startswith("Edit your persistent")
    agent.send("hi")
    offered = [t["function"]["name"] for t in scripted.chat_requests()[0]["tools"]]
    assert offered.count("memory") == 1 and "notes" in offered
    warned = [e.text for e in events.of(Notice) if e.kind == "provider"]
    assert len(warned) == 1 and "('memory', 'session_search')" in warned[0]
    assert agent.external_memory is not None
    assert agent.external_memory.refused_tools == ["memory", "session_search"]
    agent.close()


def test_a_configured_provider_that_cannot_load_leaves_built_in_memory_working(
    model_home: Home, scripted: ScriptedServer
) -> None:
    update_config(model_home, {"memory": {"provider": "nonexistent"}})
    scripted.add(reply("still here"))
    agent, events = make_agent(model_home, background_review=False)
    assert agent.external_memory is None
    assert "memory" in agent.tools
    assert agent.send("hello").reply == "still here"
    [notice] = [e for e in events.of(Notice) if e.kind == "provider"]
    assert "nonexistent" in notice.text and "built-in memory only" in notice.text
    agent.close()


def test_a_third_party_provider_is_selected_by_config(
    model_home: Home, scripted: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = install_distribution(
        tmp_path / "site", "cairn-notebook", {"notebook": "cairn_notebook:Notebook"}, THIRD_PARTY
    )
    monkeypatch.syspath_prepend(str(root))
    update_config(model_home, {"memory": {"provider": "notebook"}})
    scripted.add(reply("ok"))
    agent, _ = make_agent(model_home, background_review=False)
    assert agent.external_memory is not None and agent.external_memory.name == "notebook"
    agent.send("where are my keys")
    assert "notebook recall: where are my keys" in last_user(scripted.chat_requests()[0])
    agent.close()


def test_holographic_end_to_end_through_the_model(
    model_home: Home, scripted: ScriptedServer
) -> None:
    update_config(model_home, {"memory": {"provider": "holographic"}})
    fact = "Kestrel deploys to production on Tuesdays and Thursdays."
    scripted.add(
        tool_calls(
            ("fact_store", {"action": "add", "content": fact, "entities": ["Kestrel"]}),
            ("memory", {"action": "add", "content": "User works on the Kestrel team"}),
        ),
        reply("Saved."),
        reply("Tuesdays and Thursdays."),
    )
    recorder = Recorder()
    agent = Agent(model_home, source="test", listener=recorder, cwd=model_home.root)
    assert {"fact_store", "fact_feedback"} <= set(agent.tools.names())
    assert "Fact store: empty." in agent.prompt.text
    first = agent.send("remember when Kestrel deploys")
    assert first.error is None and first.outcomes[0].result["status"] == "added"
    assert agent.external_memory is not None and agent.external_memory.drain(5)

    agent.send("When does Kestrel deploy?")
    asked = last_user(scripted.chat_requests()[-1])
    assert asked.startswith(f'<{FENCE_TAG} provider="holographic">')
    assert fact in asked and asked.endswith("When does Kestrel deploy?")
    # The mirrored built-in entry is already in the prompt's memory; recall leaves it out.
    assert "User works on the Kestrel team" not in asked
    assert FENCE_TAG not in json.dumps(stored(agent))
    agent.close()

    store = FactStore(model_home.memory_store_db)
    mirrored = store.list(source="builtin:memory")
    assert [f.content for f in mirrored] == ["User works on the Kestrel team"]
    assert store.probe("Kestrel").facts[0].content == fact
    store.close()
    # The next session's frozen prompt counts the facts.
    scripted.add(reply("hi"))
    again = Agent(model_home, source="test", cwd=model_home.root)
    assert "Fact store: 2 facts" in again.prompt.text
    again.close()
