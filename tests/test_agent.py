"""The turn loop end to end: a real OpenAI-compatible server on loopback (scripted per test),
the real memory files, the real session database."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from engine.agent import Agent, AgentEvent, Notice, TokenReceived, ToolFinished
from engine.compression import SUMMARY_LABEL
from engine.config import load_config, update_config
from engine.home import Home
from engine.memory.entries import Target
from engine.memory.service import MemoryService
from engine.sessions.store import SessionStore
from tests.scripted_server import (
    ScriptedServer,
    cut,
    error,
    hang,
    malformed,
    reply,
    tool_calls,
)


class Recorder:
    def __init__(self) -> None:
        self.events: list[AgentEvent] = []

    def __call__(self, event: AgentEvent) -> None:
        self.events.append(event)

    def of(self, kind: type) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]


def make_agent(home: Home, **kwargs: Any) -> tuple[Agent, Recorder]:
    recorder = Recorder()
    agent = Agent(home, source="test", listener=recorder, cwd=home.root, **kwargs)
    return agent, recorder


def stored(agent: Agent) -> list[dict[str, Any]]:
    store = SessionStore.open(agent.home)
    return [m.model_dump() for m in store.messages(agent.session_id)]


def assert_pairs_complete(messages: list[dict[str, Any]]) -> None:
    """Every tool call in the transcript has exactly one result, and no result is orphaned."""
    calls = [c["id"] for m in messages for c in (m.get("tool_calls") or [])]
    results = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    assert sorted(calls) == sorted(results)


def system_prompts(server: ScriptedServer) -> list[str]:
    return [r["messages"][0]["content"] for r in server.chat_requests()]


# -- memory across a conversation -------------------------------------------------------------


def test_memory_grows_overflows_and_is_consolidated_in_one_batch(
    model_home: Home, scripted: ScriptedServer
) -> None:
    update_config(model_home, {"memory": {"memory_char_limit": 120}})
    first = "Project builds with make release; tests need Docker running"
    scripted.add(
        tool_calls(("memory", {"action": "add", "content": first})),
        reply("Noted."),
        tool_calls(("memory", {"action": "add", "content": "x" * 90})),
        tool_calls(
            (
                "memory",
                {
                    "operations": [
                        {"action": "remove", "old_text": "make release"},
                        {"action": "add", "content": "Build: make release (Docker for tests)"},
                        {"action": "add", "content": "Deploys go out on Fridays"},
                    ]
                },
            )
        ),
        reply("Consolidated."),
    )
    agent, events = make_agent(model_home)
    assert agent.send("remember how we build").reply == "Noted."
    turn = agent.send("and remember the deploy day")
    assert turn.error is None and turn.reply == "Consolidated."

    overflow, batch = [o.result for o in turn.outcomes]
    assert overflow["ok"] is False and overflow["error"] == "overflow"
    assert batch["ok"] is True
    on_disk = MemoryService(model_home).read(Target.MEMORY).entries
    assert on_disk == ["Build: make release (Docker for tests)", "Deploys go out on Fridays"]
    # The model saw the overflow error as a tool result and answered it.
    fourth = scripted.chat_requests()[3]["messages"]
    assert "overflow" in fourth[-1]["content"] and fourth[-1]["role"] == "tool"
    transcript = stored(agent)
    assert [m["role"] for m in transcript] == [
        "user", "assistant", "tool", "assistant",
        "user", "assistant", "tool", "assistant", "tool", "assistant",
    ]  # fmt: skip
    assert_pairs_complete(transcript)
    summaries = [e.summary for e in events.of(ToolFinished)]
    assert summaries[0].startswith("memory: added 1 entry")
    assert "refused" in summaries[1]


def test_system_prompt_is_frozen_for_the_session_and_the_next_session_sees_writes(
    model_home: Home, scripted: ScriptedServer
) -> None:
    entry = "User measures distances in furlongs"
    scripted.add(
        tool_calls(("memory", {"target": "user", "action": "add", "content": entry})),
        reply("Got it."),
        reply("Second answer."),
        reply("Third answer."),
    )
    agent, _ = make_agent(model_home)
    agent.send("use metric please")
    # An edit from outside (another Cairn, an editor) mid-session does not leak in either.
    MemoryService(model_home).write(Target.MEMORY, [{"action": "add", "content": "Outside edit"}])
    agent.send("how far is it")
    prompts = system_prompts(scripted)
    assert len(prompts) == 3
    assert prompts[0].encode() == prompts[1].encode() == prompts[2].encode()
    assert entry not in prompts[0] and "Outside edit" not in prompts[0]
    assert SessionStore.open(model_home).get_session(agent.session_id).system_prompt == prompts[0]

    agent.new_session()
    agent.send("hello again")
    fresh = system_prompts(scripted)[-1]
    assert entry in fresh and "Outside edit" in fresh


# -- compression ------------------------------------------------------------------------------


def summariser(server: ScriptedServer) -> list[dict[str, Any]]:
    """Answer every request without tools (the summariser's) with a fixed summary."""
    seen: list[dict[str, Any]] = []

    def respond(body: dict[str, Any]) -> Any:
        if body.get("tools"):
            return None
        seen.append(body)
        return reply(
            "## Goal\nPlan the garden.\n## Constraints and preferences\nOrganic only.\n"
            "## Completed actions\nNone.\n## Active state\nPlanning.\n"
            "## Critical context\nThe soil is clay."
        )

    server.responders.append(respond)
    return seen


def test_long_session_compresses_into_a_child_session_with_lineage(
    model_home: Home, scripted: ScriptedServer
) -> None:
    update_config(model_home, {"model": {"context_length": 2048}})
    summaries = summariser(scripted)
    scripted.add(
        tool_calls(("memory", {"action": "add", "content": "Garden soil is heavy clay"})),
        *[reply(f"Answer {i}: " + "words " * 60) for i in range(30)],
    )
    agent, events = make_agent(model_home)
    first_session = agent.session_id
    for i in range(14):
        agent.send(f"question {i} about planting tomatoes in clay " + "detail " * 40)
    assert summaries, "compression never fired"
    assert agent.session_id != first_session
    store = SessionStore.open(model_home)
    old = store.get_session(first_session)
    assert old.end_reason == "compression"
    child = store.get_session(agent.session_id)
    assert child.parent_session_id is not None
    assert store.lineage(agent.session_id)[0].id == first_session
    # Nothing is lost: the first question is still in the parent's stored transcript.
    assert "question 0 about planting" in store.messages(first_session)[0].content
    # The rebuilt prompt shows the memory written in the first session.
    assert "Garden soil is heavy clay" in agent.prompt.text
    assert "Garden soil is heavy clay" in system_prompts(scripted)[-1]
    assert any(isinstance(e, Notice) and e.kind == "compression" for e in events.events)
    # The continuing conversation starts with the head, or, where a 2,048-token window has
    # no room for one beside the fixed prompt, with the summary; it carries the summary.
    assert agent.messages[0]["content"].startswith(("question 0", SUMMARY_LABEL))
    assert any("The soil is clay." in str(m.get("content")) for m in agent.messages)


def test_compress_command_steers_with_focus_and_network_failure_leaves_session(
    model_home: Home, scripted: ScriptedServer
) -> None:
    from engine.commands import run_command

    summaries = summariser(scripted)
    scripted.add(*[reply(f"answer {i}") for i in range(12)])
    agent, _ = make_agent(model_home)
    for i in range(12):
        agent.send(f"message {i}")
    before = agent.session_id
    outcome = run_command(agent, "/compress the database migration")
    assert outcome.ok, outcome.text
    assert "the database migration" in json.dumps(summaries[-1]["messages"])
    assert summaries[-1].get("temperature") == pytest.approx(0.3)
    assert agent.parent_session_id == before

    # The summariser's server goes away: compression aborts and nothing changes.
    current, kept = agent.session_id, list(agent.messages)
    update_config(model_home, {"auxiliary": {"compression": {"base_url": "http://127.0.0.1:9/v1"}}})
    agent.config = load_config(model_home)
    scripted.add(*[reply("more") for _ in range(3)])
    for i in range(3):
        agent.send(f"more {i}")
    kept = list(agent.messages)
    assert not run_command(agent, "/compress").ok
    assert agent.session_id == current and agent.messages == kept


# -- background review ----------------------------------------------------------------------


def test_background_review_stages_a_write_when_approval_is_on(
    model_home: Home, scripted: ScriptedServer
) -> None:
    update_config(
        model_home,
        {"memory": {"nudge_interval": 2, "write_approval": True},
         "display": {"memory_notifications": "verbose"}},
    )  # fmt: skip
    reviews: list[dict[str, Any]] = []

    def review(body: dict[str, Any]) -> Any:
        if "review a conversation" not in body["messages"][0]["content"]:
            return None
        reviews.append(body)
        if len(reviews) == 1:
            return tool_calls(
                ("memory", {"target": "user", "action": "add", "content": "Works night shifts"})
            )
        return reply("done")

    scripted.responders.append(review)
    scripted.add(reply("Hi."), reply("Noted, nights it is."), reply("Sure."))
    agent, events = make_agent(model_home)
    agent.send("hello")
    assert agent.review is not None and agent.review.runs == 0
    agent.send("I work night shifts")
    assert agent.review.wait(timeout=10)
    pending = MemoryService(model_home).pending()
    assert len(pending) == 1 and pending[0].origin == "background_review"
    assert MemoryService(model_home).read(Target.USER).entries == []
    notices = [e for e in events.of(Notice) if e.kind == "memory"]
    assert notices and pending[0].id in notices[0].text
    assert "USER + Works night shifts" in notices[0].detail
    # The review only ever offers the memory and skill tools.
    offered = {t["function"]["name"] for t in reviews[0]["tools"]}
    assert offered == {"memory", "skill_view", "skill_manage"}
    # The next turn did not wait for the review, and the review is not in the transcript.
    agent.send("thanks")
    assert all("night shifts" not in str(m.get("content")) or m["role"] != "tool"
               for m in stored(agent))  # fmt: skip


def test_background_review_notifications_off_say_nothing(
    model_home: Home, scripted: ScriptedServer
) -> None:
    update_config(
        model_home, {"memory": {"nudge_interval": 1}, "display": {"memory_notifications": "off"}}
    )

    def review(body: dict[str, Any]) -> Any:
        if "review a conversation" in body["messages"][0]["content"]:
            if body["messages"][-1]["role"] == "tool":
                return reply("done")
            return tool_calls(("memory", {"action": "add", "content": "Uses fish shell"}))
        return None

    scripted.responders.append(review)
    scripted.add(reply("ok"))
    agent, events = make_agent(model_home)
    agent.send("I use fish")
    assert agent.review is not None and agent.review.wait(timeout=10)
    assert "Uses fish shell" in MemoryService(model_home).read(Target.MEMORY).entries
    assert not [e for e in events.of(Notice) if e.kind == "memory"]


# -- failures -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("step", "kind"),
    [
        (error(500, "boom"), "server"),
        (error(429, "slow down"), "rate_limit"),
        (error(401, "bad key"), "auth"),
        (malformed(), "bad_response"),
    ],
)
def test_provider_failures_surface_clearly_with_the_transcript_intact(
    model_home: Home, scripted: ScriptedServer, step: Any, kind: str
) -> None:
    scripted.add(step, reply("recovered"))
    agent, events = make_agent(model_home)
    result = agent.send("first question")
    assert result.error_kind == kind and result.error
    assert any(isinstance(e, Notice) and e.kind == "error" for e in events.events)
    assert [m["role"] for m in stored(agent)] == ["user"]
    # The conversation goes on from a consistent state.
    assert agent.send("again").reply == "recovered"
    assert [m["role"] for m in stored(agent)] == ["user", "user", "assistant"]


def test_timeout_surfaces_as_timeout(model_home: Home, scripted: ScriptedServer) -> None:
    update_config(model_home, {"model": {"timeout": 0.5}})
    scripted.add(hang(3))
    agent, _ = make_agent(model_home)
    result = agent.send("are you there")
    assert result.error_kind == "timeout"
    assert [m["role"] for m in stored(agent)] == ["user"]


def test_stream_cut_mid_token_keeps_the_partial_reply(
    model_home: Home, scripted: ScriptedServer
) -> None:
    scripted.add(cut("The answer is forty two and more", after=3))
    agent, events = make_agent(model_home)
    result = agent.send("what is the answer")
    assert result.error_kind == "stream_cut"
    transcript = stored(agent)
    assert [m["role"] for m in transcript] == ["user", "assistant"]
    assert transcript[1]["content"] == "The answer is "
    assert "".join(e.text for e in events.of(TokenReceived)) == "The answer is "


def test_invalid_tool_arguments_and_unknown_tools_go_back_to_the_model(
    model_home: Home, scripted: ScriptedServer
) -> None:
    scripted.add(
        tool_calls(("memory", '{"action": "add", "content": "unterminated'), ("teleport", {})),
        reply("Sorry, let me answer plainly."),
    )
    agent, _ = make_agent(model_home)
    result = agent.send("do things")
    assert result.error is None and result.reply == "Sorry, let me answer plainly."
    bad_json, unknown = [o.result for o in result.outcomes]
    assert bad_json["error"] == "invalid_arguments"
    assert unknown["error"] == "unknown_tool" and "memory" in unknown["message"]
    transcript = stored(agent)
    assert_pairs_complete(transcript)
    # Nothing was written to memory by the broken call.
    assert MemoryService(model_home).read(Target.MEMORY).entries == []


def test_parallel_tool_calls_each_get_their_result_in_order(
    model_home: Home, scripted: ScriptedServer
) -> None:
    scripted.add(
        tool_calls(
            ("session_search", {"mode": "browse"}),
            ("session_search", {"query": "anything at all"}),
        ),
        reply("done"),
    )
    agent, _ = make_agent(model_home)
    result = agent.send("search twice")
    assert [o.call.name for o in result.outcomes] == ["session_search", "session_search"]
    sent = scripted.chat_requests()[1]["messages"]
    ids = [c["id"] for c in sent[-3]["tool_calls"]]
    assert [m["tool_call_id"] for m in sent[-2:]] == ids


def test_iteration_limit_stops_a_looping_model_with_a_consistent_transcript(
    model_home: Home, scripted: ScriptedServer
) -> None:
    update_config(model_home, {"agent": {"max_iterations": 3}})
    scripted.add(*[tool_calls(("session_search", {"mode": "browse"})) for _ in range(5)])
    agent, _ = make_agent(model_home)
    result = agent.send("loop forever")
    assert result.error_kind == "iteration_limit" and result.iterations == 3
    assert scripted.remaining == 2
    assert_pairs_complete(stored(agent))


def test_cancel_mid_stream_keeps_what_arrived_and_the_next_turn_works(
    model_home: Home, scripted: ScriptedServer
) -> None:
    scripted.add(
        reply("one two three four five six seven eight nine ten", chunk_delay=0.05),
        reply("fine"),
    )
    recorder = Recorder()
    holder: dict[str, Agent] = {}

    def listener(event: AgentEvent) -> None:
        recorder(event)
        if isinstance(event, TokenReceived) and len(recorder.of(TokenReceived)) == 2:
            holder["agent"].cancel()

    agent = Agent(model_home, source="test", listener=listener, cwd=model_home.root)
    holder["agent"] = agent
    result = agent.send("count to ten slowly")
    assert result.cancelled and result.error is None
    assert result.reply.startswith("one two") and "ten" not in result.reply
    assert [m["role"] for m in stored(agent)] == ["user", "assistant"]
    assert agent.send("ok").reply == "fine"


def test_cancel_from_another_thread_during_tools_answers_every_call(
    model_home: Home, scripted: ScriptedServer
) -> None:
    gate = threading.Event()
    release = threading.Event()
    agent, _ = make_agent(model_home)
    real = agent.tools.get("memory")
    assert real is not None

    def slow_memory(arguments: dict[str, Any]) -> dict[str, Any]:
        gate.set()
        release.wait(5)
        return real.handler(arguments)

    from dataclasses import replace

    agent.tools.unregister("memory")
    agent.tools.register(replace(real, handler=slow_memory))
    scripted.add(
        tool_calls(
            ("memory", {"action": "add", "content": "first"}),
            ("memory", {"action": "add", "content": "second"}),
        )
    )
    box: dict[str, Any] = {}
    worker = threading.Thread(target=lambda: box.setdefault("r", agent.send("save two")))
    worker.start()
    assert gate.wait(5)
    agent.cancel()
    release.set()
    worker.join(10)
    result = box["r"]
    assert result.cancelled
    first, second = [o.result for o in result.outcomes]
    assert first["ok"] and second["error"] == "cancelled"
    assert_pairs_complete(stored(agent))
    assert MemoryService(model_home).read(Target.MEMORY).entries == ["first"]


def test_no_model_configured_is_a_clear_error_and_commands_still_work(home: Home) -> None:
    from engine.commands import run_command

    agent, _ = make_agent(home)
    result = agent.send("hello")
    assert result.error_kind == "config" and "model" in (result.error or "")
    assert run_command(agent, "/memory").ok
    assert run_command(agent, "/help").ok


# -- slash commands -----------------------------------------------------------------------------


def test_memory_commands_stage_list_approve_and_reject(
    model_home: Home, scripted: ScriptedServer
) -> None:
    from engine.commands import run_command

    agent, _ = make_agent(model_home)
    assert run_command(agent, "/memory approval on").ok
    scripted.add(
        tool_calls(("memory", {"action": "add", "content": "Staged fact one"})),
        tool_calls(("memory", {"action": "add", "content": "Staged fact two"})),
        reply("staged both"),
    )
    agent.send("remember two things")
    listing = run_command(agent, "/memory pending")
    ids = [p["id"] for p in listing.data["pending"]]
    assert len(ids) == 2 and listing.action == "pending"
    assert run_command(agent, f"/memory approve {ids[0]}").ok
    assert run_command(agent, f"/memory reject {ids[1]}").ok
    assert MemoryService(model_home).read(Target.MEMORY).entries == ["Staged fact one"]
    assert not run_command(agent, "/memory approve nope1234").ok
    assert not run_command(agent, "/memory approval maybe").ok
    assert "MEMORY.md" in run_command(agent, "/memory").text
    journey = run_command(agent, "/journey")
    assert journey.action == "journey" and "Staged fact one" in journey.text
    unknown = run_command(agent, "/teleport")
    assert not unknown.ok and "/help" in unknown.text


def test_sessions_and_new_commands(model_home: Home, scripted: ScriptedServer) -> None:
    from engine.commands import run_command

    scripted.add(reply("Kubernetes answer"), reply("second session"))
    agent, _ = make_agent(model_home)
    agent.send("how do I drain a kubernetes node")
    first = agent.session_id
    new = run_command(agent, "/new")
    assert new.ok and agent.session_id != first
    assert SessionStore.open(model_home).get_session(first).end_reason == "new_session"
    agent.send("something else")
    found = run_command(agent, "/sessions kubernetes")
    assert found.ok and first[:8] in found.text
    recent = run_command(agent, "/sessions")
    assert first[:8] in recent.text


def test_a_model_repeating_the_same_calls_is_asked_for_an_answer_without_tools(
    model_home: Home, scripted: ScriptedServer
) -> None:
    looping = ("session_search", {"mode": "browse"})
    scripted.add(tool_calls(looping), tool_calls(looping), reply("Here is my answer."))
    agent, _ = make_agent(model_home)
    result = agent.send("find my sessions")
    assert result.error is None and result.reply == "Here is my answer."
    offered = [bool(r.get("tools")) for r in scripted.chat_requests()]
    assert offered == [True, True, False]
    assert_pairs_complete(stored(agent))


def test_a_tool_result_that_is_not_json_still_answers_its_call(
    model_home: Home, scripted: ScriptedServer
) -> None:
    from pathlib import Path

    from engine.tools import Tool

    schema = {"name": "where", "description": "a path", "parameters": {"type": "object"}}
    tool = Tool("where", schema, lambda _args: {"ok": True, "path": Path("/srv/data")})
    scripted.add(tool_calls(("where", {})), reply("It is in /srv/data."))
    agent, _ = make_agent(model_home, extra_tools=[tool])
    assert agent.send("where is it").reply == "It is in /srv/data."
    transcript = stored(agent)
    assert_pairs_complete(transcript)
    assert "/srv/data" in transcript[2]["content"]


def test_a_call_left_without_result_by_a_crash_is_answered_before_the_next_turn(
    model_home: Home, scripted: ScriptedServer
) -> None:
    scripted.add(reply("first"), reply("second"))
    agent, _ = make_agent(model_home)
    agent.send("hello")
    # What a crash between a tool call and its result leaves behind.
    dangling = {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": "call_x", "type": "function",
             "function": {"name": "session_search", "arguments": "{}"}}
        ],
    }  # fmt: skip
    agent._record(dangling)
    assert agent.send("again").reply == "second"
    assert_pairs_complete(stored(agent))
    sent = scripted.chat_requests()[-1]["messages"]
    assert [m["role"] for m in sent[-3:]] == ["assistant", "tool", "user"]


def test_compress_works_after_a_stopped_reply(model_home: Home, scripted: ScriptedServer) -> None:
    from engine.commands import run_command

    # No background review: after the tenth turn it would take one of the scripted replies,
    # the next turn's or the stopped one's, depending on which thread asks first.
    update_config(model_home, {"memory": {"nudge_interval": 0}})
    summariser(scripted)
    scripted.add(*[reply(f"answer {i}") for i in range(12)])
    scripted.add(reply("a long reply that will be stopped " * 5, chunk_delay=0.02))
    holder: dict[str, Agent] = {}

    def stop_on_token(event: AgentEvent) -> None:
        if isinstance(event, TokenReceived) and "stopped" in event.text:
            holder["agent"].cancel()

    agent = Agent(model_home, source="test", listener=stop_on_token, cwd=model_home.root)
    holder["agent"] = agent
    for i in range(12):
        agent.send(f"message {i}")
    assert agent.send("talk at length").cancelled
    outcome = run_command(agent, "/compress")
    assert outcome.ok, outcome.text


def test_text_starting_with_a_slash_is_a_message_unless_it_names_a_command(
    model_home: Home, scripted: ScriptedServer
) -> None:
    from engine.commands import as_message, is_command

    assert is_command("/help") and is_command("/memory pending")
    assert not is_command("/etc/hosts is wrong") and not is_command("//help")
    assert as_message("//help me") == "/help me"
    scripted.add(reply("Let me look at /etc/hosts."))
    agent, _ = make_agent(model_home)
    agent.send(as_message("/etc/hosts is wrong"))
    assert scripted.chat_requests()[0]["messages"][-1]["content"] == "/etc/hosts is wrong"


def test_a_failed_automatic_compression_is_not_retried_before_every_call(
    model_home: Home, scripted: ScriptedServer
) -> None:
    update_config(
        model_home,
        {"model": {"context_length": 1024},
         "auxiliary": {"compression": {"base_url": "http://127.0.0.1:9/v1"}}},
    )  # fmt: skip
    scripted.add(
        *[tool_calls(("session_search", {"mode": "browse", "limit": i + 1})) for i in range(4)],
        reply("done"),
    )
    agent, events = make_agent(model_home)
    # Within the 1,024-token window's room, past half of it: compression is due at once.
    agent.send("long question " + "word " * 100)
    skipped = [e for e in events.of(Notice) if e.kind == "compression"]
    assert len(skipped) == 1, [e.text for e in skipped]


def test_after_a_long_task_the_model_is_asked_to_offer_a_skill_not_stored(
    model_home: Home, scripted: ScriptedServer
) -> None:
    scripted.add(
        *[tool_calls(("session_search", {"mode": "browse", "limit": i + 1})) for i in range(5)],
        reply("Done. Want me to save this as a skill?"),
        reply("short"),
    )
    agent, _ = make_agent(model_home)
    agent.send("do the long thing")
    last = scripted.chat_requests()[5]["messages"]
    assert last[-1]["role"] == "system" and "skill" in last[-1]["content"]
    assert all("as a skill" not in (m.get("content") or "") or m["role"] == "assistant"
               for m in stored(agent))  # fmt: skip
    agent.send("a short one")
    assert scripted.chat_requests()[6]["messages"][-1]["role"] == "user"
