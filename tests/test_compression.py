"""Context compression: the split, pruning, and the summariser call over a real HTTP server.

Model calls go through the real OpenAI-compatible provider to the scripted loopback server, so
error semantics are the ones a real endpoint produces (connection refused, 500, 401, 400,
malformed bodies, streams cut short).
"""

from __future__ import annotations

import copy
import json
import random
import socket
import threading
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.compression import (
    FALLBACK_MAX_CHARS,
    LONG_TOOL_OUTPUT_CHARS,
    MIN_TAIL_MESSAGES,
    PRUNED_PREFIX,
    SUMMARY_LABEL,
    SUMMARY_SECTIONS,
    SUMMARY_TEMPERATURE,
    CompressionAborted,
    Compressor,
    estimate_tokens,
    fallback_summary,
    is_summary_message,
    needs_compression,
    plan_split,
    prune_tool_results,
    summary_token_target,
)
from engine.config import Config, ModelConfig
from engine.providers.base import CancelToken, ChatMessage, ChatProvider, Reply
from tests.scripted_server import ScriptedServer, cut, error, hang, malformed, reply

# -- transcripts ---------------------------------------------------------------------------

TOOLS = ("read_file", "shell", "search_files", "write_file")
TOPICS = ("parser", "cache", "login form", "CSV export", "retry loop", "config loader")
STATUS_OUTPUT = "On branch main\nnothing to commit, working tree clean\n" * 6


def _code_output(rng: random.Random, lines: int) -> str:
    return "\n".join(
        f"{i:4d}  def handler_{rng.randint(0, 999)}(request): return request.{rng.choice(TOPICS)}"
        for i in range(lines)
    )


def _tool_output(rng: random.Random, name: str, turn: int) -> str:
    roll = rng.random()
    if roll < 0.2:
        return "ok"
    if roll < 0.4:
        return STATUS_OUTPUT  # the same output again and again, as `git status` gives
    if roll < 0.7:
        return _code_output(rng, rng.randint(30, 120))  # well past the long-output limit
    return f"{name} turn {turn}: " + " ".join(rng.choice(TOPICS) for _ in range(rng.randint(5, 60)))


def make_session(total: int = 200, seed: int = 7) -> list[ChatMessage]:
    """A deterministic agent transcript of exactly ``total`` messages: user asks, assistant
    tool calls (one to three per message) with their results, short final answers, paths."""
    rng = random.Random(seed)
    messages: list[ChatMessage] = []
    call_number = 0
    turn = 0
    # A turn is at most 1 + 2 * (1 + 3) + 1 messages.
    while len(messages) + 10 <= total:
        topic = rng.choice(TOPICS)
        messages.append(
            {
                "role": "user",
                "content": f"Turn {turn}: fix the {topic} in src/app/module_{turn}.py, please",
            }
        )
        for _ in range(rng.randint(0, 2)):
            calls = []
            for _ in range(rng.randint(1, 3)):
                name = rng.choice(TOOLS)
                arguments = json.dumps({"path": f"src/app/module_{turn}.py", "n": call_number})
                calls.append(
                    {
                        "id": f"call_{call_number}",
                        "type": "function",
                        "function": {"name": name, "arguments": arguments},
                    }
                )
                call_number += 1
            messages.append({"role": "assistant", "content": "", "tool_calls": calls})
            for call in calls:
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": call["id"],
                        "content": _tool_output(rng, call["function"]["name"], turn),
                    }
                )
        messages.append(
            {"role": "assistant", "content": f"Fixed the {topic} for turn {turn}; tests pass."}
        )
        turn += 1
    while len(messages) < total - 1:
        messages.append({"role": "user", "content": f"Small question {len(messages)}?"})
        messages.append({"role": "assistant", "content": "A short answer."})
    if len(messages) < total:
        messages.append({"role": "user", "content": "Now update docs/CHANGES.md for all this."})
    assert len(messages) == total
    return messages


def assert_tool_pairs_intact(messages: Sequence[ChatMessage]) -> None:
    """Every tool result follows the assistant message that called it, and every call made is
    answered before the conversation moves on."""
    pending: set[str] = set()
    for message in messages:
        if message["role"] == "tool":
            assert message["tool_call_id"] in pending, f"orphan result {message}"
            pending.discard(message["tool_call_id"])
            continue
        assert not pending, f"calls {pending} lost their results"
        if message["role"] == "assistant":
            pending = {call["id"] for call in message.get("tool_calls") or ()}
    assert not pending, f"calls {pending} lost their results"


def last_user(messages: Sequence[ChatMessage]) -> ChatMessage:
    return next(m for m in reversed(messages) if m["role"] == "user" and not is_summary_message(m))


GOOD_SUMMARY = "\n\n".join(
    f"## {title}\nDetails about {title.lower()}." for title in SUMMARY_SECTIONS
)


def is_summary_request(body: dict[str, Any]) -> bool:
    messages = body.get("messages") or []
    return bool(messages) and "You condense" in str(messages[0].get("content"))


# -- providers -----------------------------------------------------------------------------


def provider_for(url: str, model: str, context_length: int = 8192, timeout: float = 5) -> Any:
    from engine.providers import make_provider

    config = Config(
        model=ModelConfig(
            provider="openai",
            base_url=url,
            model=model,
            context_length=context_length,
            max_retries=0,
            timeout=timeout,
        )
    )
    return make_provider(config, "compression")


@pytest.fixture
def compressor(scripted: ScriptedServer) -> Compressor:
    return Compressor(provider_for(scripted.url, scripted.model))


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# -- estimates -----------------------------------------------------------------------------


def test_estimate_counts_text_tool_arguments_and_framing() -> None:
    assert estimate_tokens([{"role": "user", "content": "x" * 400}]) == 4 + 100
    assert estimate_tokens([{"role": "user", "content": "x" * 401}]) == 4 + 101
    arguments = json.dumps({"path": "a" * 390})
    with_call = {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read", "arguments": arguments}}
        ],
    }
    assert estimate_tokens([with_call]) == 4 + 6 + -(-(4 + len(arguments)) // 4)
    parts = {"role": "user", "content": [{"type": "text", "text": "y" * 40}, {"type": "image"}]}
    assert estimate_tokens([parts]) == 4 + 10 + 256
    assert estimate_tokens([]) == 0


def test_needs_compression_at_the_threshold() -> None:
    """The threshold is a share of the room the messages have: the window less the system
    prompt and what every request reserves (tool schemas, the reply)."""
    system = "s" * 396  # 4 + 99 tokens
    # 10 messages of 4 + 100 tokens: 1,040 tokens, reaching half of a 2,080-token room.
    messages = [{"role": "user", "content": "x" * 400} for _ in range(10)]
    assert needs_compression(system, messages, context_length=2183, threshold=0.5)
    assert not needs_compression(system, messages, context_length=2185, threshold=0.5)
    assert needs_compression(system, messages, context_length=1143, threshold=1.0)
    # 500 tokens reserved for tools and the reply shrink the room by as much.
    assert needs_compression(
        system, messages, context_length=2683, threshold=0.5, reserved_tokens=500
    )
    assert not needs_compression(
        system, messages, context_length=2685, threshold=0.5, reserved_tokens=500
    )
    # A fixed part larger than the window: nothing fits, so anything asks for compression.
    assert needs_compression(system, messages[:1], context_length=600, threshold=0.5,
                             reserved_tokens=600)  # fmt: skip
    assert not needs_compression("", [], context_length=1000, threshold=0.01)
    with pytest.raises(ValueError):
        needs_compression(system, messages, context_length=1000, threshold=0)
    with pytest.raises(ValueError):
        needs_compression(system, messages, context_length=1000, threshold=1.5)
    with pytest.raises(ValueError):
        needs_compression(system, messages, context_length=0, threshold=0.5)


# -- pruning -------------------------------------------------------------------------------


def _call(call_id: str, name: str, arguments: str = "{}") -> ChatMessage:
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
        ],
    }


def _result(call_id: str, content: str) -> ChatMessage:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def test_pruning_collapses_repeats_and_describes_long_outputs() -> None:
    repeated = "total 3\n-rw-r--r-- a.py\n-rw-r--r-- b.py\n" * 5  # 185 chars, short
    long_output = "Traceback (most recent call last):\n" + "  frame line\n" * 200
    messages: list[ChatMessage] = [
        {"role": "user", "content": "list the files"},
        _call("c1", "shell"),
        _result("c1", repeated),
        _call("c2", "shell"),
        _result("c2", repeated),
        _call("c3", "read_file"),
        _result("c3", long_output),
        _call("c4", "shell"),
        _result("c4", "ok"),
        _call("c5", "shell"),
        _result("c5", "ok"),
        _call("c6", "shell"),
        _result("c6", repeated),  # protected: among the last 3
        {"role": "assistant", "content": "Done."},
    ]
    before = copy.deepcopy(messages)
    pruned, count = prune_tool_results(messages, keep_recent=3)

    assert messages == before  # the caller's list and dicts are untouched
    assert count == 2
    assert len(pruned) == len(messages)
    assert pruned[2] == messages[2]  # the first of the repeats stays
    assert pruned[4]["content"].startswith(PRUNED_PREFIX)
    assert "call c1" in pruned[4]["content"] and "shell" in pruned[4]["content"]
    described = pruned[6]["content"]
    assert described.startswith(PRUNED_PREFIX) and "\n" not in described
    assert "read_file" in described and f"{len(long_output):,} chars" in described
    assert "Traceback (most recent call last):" in described
    assert pruned[8]["content"] == pruned[10]["content"] == "ok"  # a repeat too short to matter
    assert pruned[12]["content"] == repeated  # protected recent result
    for original, new in zip(messages, pruned, strict=True):
        assert new.get("tool_call_id") == original.get("tool_call_id")
        assert new["role"] == original["role"]
    assert_tool_pairs_intact(pruned)

    again, count_again = prune_tool_results(pruned, keep_recent=3)
    assert count_again == 0 and again == pruned


def test_pruning_keeps_everything_protected_and_short() -> None:
    messages = [_call("a", "shell"), _result("a", "x" * (LONG_TOOL_OUTPUT_CHARS + 1))]
    assert prune_tool_results(messages, keep_recent=1) == (messages, 0)
    assert prune_tool_results(messages, keep_recent=0)[1] == 1
    short = [_call("a", "shell"), _result("a", "x" * LONG_TOOL_OUTPUT_CHARS)]
    assert prune_tool_results(short, keep_recent=0) == (short, 0)
    with pytest.raises(ValueError):
        prune_tool_results(messages, keep_recent=-1)


# -- the split -----------------------------------------------------------------------------


def test_split_of_a_long_session() -> None:
    messages = make_session()
    plan = plan_split(messages, tail_budget_tokens=1600)
    assert plan.head_end >= 3
    assert len(plan.kept_tail(len(messages))) >= MIN_TAIL_MESSAGES
    kept = list(range(plan.head_end)) + plan.kept_tail(len(messages))
    assert sorted(kept + list(plan.middle)) == list(range(len(messages)))
    assert messages.index(last_user(messages)) in kept
    assert plan.middle


def test_head_never_ends_inside_tool_results_or_on_a_user_message() -> None:
    messages = [
        {"role": "user", "content": "start"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": f"h{i}", "type": "function", "function": {"name": "shell", "arguments": ""}}
                for i in range(3)
            ],
        },
        _result("h0", "a"),
        _result("h1", "b"),
        _result("h2", "c"),
        *make_session(40, seed=3),
    ]
    plan = plan_split(messages, tail_budget_tokens=100)
    assert plan.head_end == 5
    user_first = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}] * 30
    user_first.insert(2, {"role": "user", "content": "another"})  # user, assistant, user, user
    plan = plan_split(user_first, tail_budget_tokens=50)
    assert user_first[plan.head_end - 1]["role"] == "assistant"


def test_last_user_message_far_back_is_carried_alone() -> None:
    # One ask, then a long autonomous run of tool calls: the ask is kept, the run summarised.
    messages: list[ChatMessage] = make_session(20, seed=1)
    messages.append({"role": "user", "content": "Refactor the whole package."})
    for i in range(60):
        messages += [_call(f"run{i}", "shell"), _result(f"run{i}", "output " * 50)]
    plan = plan_split(messages, tail_budget_tokens=800)
    ask = len(messages) - 121
    assert plan.pinned_user == ask
    assert ask not in plan.middle
    assert all(messages[i]["role"] != "user" for i in range(plan.tail_start, len(messages)))
    # Close enough, the tail stretches back to it instead.
    plan = plan_split(messages, tail_budget_tokens=12_000)
    assert plan.pinned_user is None and plan.tail_start <= ask


def _transcripts() -> st.SearchStrategy[list[ChatMessage]]:
    turn = st.one_of(
        st.tuples(st.just("user"), st.integers(0, 3000)),
        st.tuples(st.just("assistant"), st.integers(0, 3000)),
        st.tuples(st.just("calls"), st.lists(st.integers(0, 3000), min_size=1, max_size=4)),
        st.tuples(st.just("summary"), st.integers(0, 3000)),
    )

    def build(turns: list[tuple[str, Any]]) -> list[ChatMessage]:
        messages: list[ChatMessage] = []
        for number, (kind, size) in enumerate(turns):
            if kind == "calls":
                ids = [f"t{number}_{i}" for i in range(len(size))]
                messages.append(
                    {
                        "role": "assistant",
                        "content": "",
                        "tool_calls": [
                            {
                                "id": i,
                                "type": "function",
                                "function": {"name": "f", "arguments": ""},
                            }
                            for i in ids
                        ],
                    }
                )
                messages += [_result(i, "r" * chars) for i, chars in zip(ids, size, strict=True)]
            elif kind == "summary":
                messages.append({"role": "user", "content": f"{SUMMARY_LABEL} " + "s" * size})
            else:
                messages.append({"role": kind, "content": "m" * size})
        return messages

    return st.lists(turn, min_size=0, max_size=60).map(build)


class FixedSummary:
    """A ChatProvider stand-in for properties of the split, where no request matters."""

    name = "fixed/summary"
    context_length = 8192

    def chat(self, messages: Sequence[ChatMessage], **_: Any) -> Reply:
        return Reply(content=GOOD_SUMMARY)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_transcripts(), st.integers(0, 4000))
def test_any_transcript_splits_without_breaking_tool_pairs(
    messages: list[ChatMessage], budget: int
) -> None:
    plan = plan_split(messages, tail_budget_tokens=budget)
    n = len(messages)
    tail = plan.kept_tail(n)
    kept = list(range(plan.head_end)) + tail
    assert sorted(kept + list(plan.middle)) == list(range(n))
    assert plan.head_end >= min(3, n)
    assert len(tail) >= min(MIN_TAIL_MESSAGES, n - plan.head_end)
    users = [i for i, m in enumerate(messages) if m["role"] == "user"]
    if users:
        assert users[-1] in kept

    provider: ChatProvider = FixedSummary()
    snapshot = copy.deepcopy(messages)
    result = Compressor(provider, context_length=max(512, budget * 5)).compress("sys", messages)
    assert messages == snapshot
    assert_tool_pairs_intact(result.messages)
    plan = result.plan
    assert plan is not None
    tail = plan.kept_tail(n)
    if plan.middle:
        assert result.compressed and result.summarised == len(plan.middle)
        assert result.messages[: plan.head_end] == messages[: plan.head_end]
        assert result.messages[plan.head_end + 1 :] == [messages[i] for i in tail]
        assert is_summary_message(result.messages[plan.head_end])
    else:
        assert not result.compressed and result.messages == messages


# -- compress over the scripted server ------------------------------------------------------


def test_compresses_a_200_message_session(scripted: ScriptedServer, compressor: Compressor) -> None:
    scripted.responders.append(
        lambda body: reply(GOOD_SUMMARY) if is_summary_request(body) else None
    )
    messages = make_session()
    original = copy.deepcopy(messages)
    focus = "the CSV export encoding"
    extra = "Honcho notes: the user deploys on Fridays."

    result = compressor.compress("You are Cairn.", messages, focus=focus, extra_context=extra)

    assert messages == original and len(messages) == 200
    assert result.compressed and not result.fallback
    plan = result.plan
    assert plan is not None
    head, tail = plan.head_end, plan.kept_tail(len(messages))
    assert result.messages[:head] == original[:head]
    assert result.messages[head + 1 :] == [original[i] for i in tail]
    assert len(tail) >= MIN_TAIL_MESSAGES
    assert result.summarised == 200 - head - len(tail) == len(plan.middle)
    summary_message = result.messages[head]
    assert summary_message["role"] == "user"
    assert summary_message["content"].startswith(SUMMARY_LABEL)
    assert result.summary == GOOD_SUMMARY and GOOD_SUMMARY in summary_message["content"]
    assert last_user(original) in result.messages[head + 1 :]
    assert_tool_pairs_intact(result.messages)
    for before, after in zip(result.messages, result.messages[1:], strict=False):
        assert not (before["role"] == after["role"] == "user"), "roles no longer alternate"
    assert result.pruned > 0
    assert result.tokens_before == estimate_tokens(
        [{"role": "system", "content": "You are Cairn."}, *original]
    )
    assert result.tokens_after < result.tokens_before / 3

    (request,) = scripted.chat_requests()
    assert request["temperature"] == SUMMARY_TEMPERATURE
    assert not request.get("tools")
    system, user = request["messages"]
    assert system["role"] == "system" and user["role"] == "user"
    for title in SUMMARY_SECTIONS:
        assert title in system["content"]
    assert focus in user["content"] and extra in user["content"]
    # The summariser sees the middle (pruned), not the kept tail.
    assert f"#{plan.middle[0]} " in user["content"]
    assert f"#{tail[-1]} " not in user["content"]
    assert PRUNED_PREFIX in user["content"]
    assert estimate_tokens(request["messages"]) + summary_token_target(8192) <= 8192


def test_the_request_fits_a_small_summariser_window(scripted: ScriptedServer) -> None:
    scripted.add(reply(GOOD_SUMMARY))
    window = 4096
    earlier = f"{SUMMARY_LABEL} " + "earlier facts " * 200 + "EARLIER-SUMMARY-END"
    huge = "word " * 8000
    messages: list[ChatMessage] = [
        {"role": "user", "content": "start " + huge},
        {"role": "assistant", "content": "ok " + huge},
        {"role": "user", "content": "go on"},
        {"role": "assistant", "content": "going"},
        {"role": "user", "content": earlier},
    ]
    for i in range(80):
        messages += [
            {"role": "user", "content": f"ask {i} " + huge},
            {"role": "assistant", "content": f"answer {i} " + huge},
        ]
    provider = provider_for(scripted.url, scripted.model, context_length=window)
    result = Compressor(provider, context_length=200_000).compress("sys", messages)

    assert result.compressed and not result.fallback
    (request,) = scripted.chat_requests()
    chars = sum(len(m["content"]) for m in request["messages"])
    # Budgeted at 3 chars a token with room for the reply: well inside the window.
    assert chars / 3 + summary_token_target(window) * 1.5 <= window
    user = request["messages"][1]["content"]
    assert "EARLIER-SUMMARY-END" in user  # an earlier summary keeps a bigger share
    assert "messages omitted here" in user
    plan = result.plan
    assert plan is not None
    assert f"#{plan.middle[-1]} " in user  # the latest of the middle survives the cut


def test_a_second_compression_folds_in_the_first_summary(
    scripted: ScriptedServer, compressor: Compressor
) -> None:
    scripted.responders.append(
        lambda body: reply(GOOD_SUMMARY) if is_summary_request(body) else None
    )
    first = compressor.compress("sys", make_session())
    grown = first.messages + make_session(120, seed=11)
    second = compressor.compress("sys", grown)
    assert second.compressed
    summaries = [m for m in second.messages if is_summary_message(m)]
    assert len(summaries) == 1  # the first summary was in the middle and got folded in
    request = scripted.chat_requests()[-1]["messages"][1]["content"]
    assert "earlier summary" in request and "Details about decisions." in request


def test_short_session_has_nothing_to_compress(
    scripted: ScriptedServer, compressor: Compressor
) -> None:
    messages = make_session(11)
    result = compressor.compress("sys", messages)
    assert not result.compressed and "nothing to compress" in result.note
    assert result.messages == messages and result.messages is not messages
    assert result.tokens_after == result.tokens_before
    assert scripted.chat_requests() == []


def test_reasoning_is_stripped_from_the_summary(
    scripted: ScriptedServer, compressor: Compressor
) -> None:
    scripted.add(reply("<think>Let me see what happened.</think>\n" + GOOD_SUMMARY))
    result = compressor.compress("sys", make_session())
    assert not result.fallback and result.summary == GOOD_SUMMARY


# -- failures --------------------------------------------------------------------------------


def test_network_error_aborts(scripted: ScriptedServer) -> None:
    provider = provider_for(f"http://127.0.0.1:{closed_port()}/v1", scripted.model)
    messages = make_session()
    original = copy.deepcopy(messages)
    with pytest.raises(CompressionAborted) as caught:
        Compressor(provider).compress("sys", messages)
    assert caught.value.kind == "network"
    assert messages == original


@pytest.mark.parametrize(
    ("step", "kind"),
    [
        (error(500, "upstream exploded"), "server"),
        (error(401, "bad key"), "auth"),
        (error(429, "slow down"), "rate_limit"),
        (cut("## Goal\nHalf a summ", after=3), "stream_cut"),
    ],
)
def test_transient_failures_abort(
    scripted: ScriptedServer, compressor: Compressor, step: Any, kind: str
) -> None:
    scripted.add(step)
    messages = make_session()
    original = copy.deepcopy(messages)
    with pytest.raises(CompressionAborted) as caught:
        compressor.compress("sys", messages)
    assert caught.value.kind == kind
    assert messages == original
    assert len(scripted.chat_requests()) == 1  # max_retries=0: one attempt, then give up


def test_timeout_aborts(scripted: ScriptedServer) -> None:
    scripted.add(hang(5))
    provider = provider_for(scripted.url, scripted.model, timeout=0.5)
    with pytest.raises(CompressionAborted) as caught:
        Compressor(provider).compress("sys", make_session())
    assert caught.value.kind == "timeout"


@pytest.mark.parametrize(
    ("step", "note"),
    [
        (malformed(), "bad_response"),
        (error(400, "context length exceeded"), "bad_request"),
        (reply("Sure! I fixed the CSV export, anything else?"), "0 of the 9"),
        (reply(""), "empty"),
        (reply("<think>The summary should cover"), "reasoning"),
    ],
)
def test_other_failures_fall_back_to_an_outline(
    scripted: ScriptedServer, compressor: Compressor, step: Any, note: str
) -> None:
    scripted.add(step)
    messages = make_session()
    result = compressor.compress("sys", messages, extra_context="memory says: ship on Friday")

    assert result.compressed and result.fallback
    assert note in result.note
    plan = result.plan
    assert plan is not None
    middle = [messages[i] for i in plan.middle]
    assert result.messages[: plan.head_end] == messages[: plan.head_end]
    assert result.messages[plan.head_end + 1 :] == [
        messages[i] for i in plan.kept_tail(len(messages))
    ]
    assert_tool_pairs_intact(result.messages)
    summary = result.summary
    assert len(summary) <= FALLBACK_MAX_CHARS
    assert "without a model" in result.messages[plan.head_end]["content"]
    asks = [m["content"] for m in middle if m["role"] == "user"]
    assert asks[0] in summary and asks[-1] in summary
    used = {c["function"]["name"] for m in middle for c in m.get("tool_calls") or ()}
    assert all(f"{name} ×" in summary for name in used)
    assert "src/app/module_" in summary
    last_statement = next(
        m["content"] for m in reversed(middle) if m["role"] == "assistant" and m["content"]
    )
    assert last_statement in summary
    assert "ship on Friday" in summary


def test_fallback_summary_stays_bounded() -> None:
    huge: list[ChatMessage] = []
    for i in range(500):
        huge.append({"role": "user", "content": f"ask {i} /srv/data/file_{i}.csv " + "z" * 2000})
        huge.append({"role": "assistant", "content": "answer " + "y" * 5000})
    huge.insert(0, {"role": "user", "content": f"{SUMMARY_LABEL} " + "old " * 5000})
    text = fallback_summary(huge, extra_context="n" * 10_000, reason="r" * 10_000)
    assert len(text) <= FALLBACK_MAX_CHARS
    assert "ask 0 " in text and "ask 499 " in text and "/srv/data/file_0.csv" in text
    assert "Earlier summary" in text


def test_cancel_before_the_call_sends_nothing(
    scripted: ScriptedServer, compressor: Compressor
) -> None:
    cancel = CancelToken()
    cancel.cancel()
    with pytest.raises(CompressionAborted) as caught:
        compressor.compress("sys", make_session(), cancel=cancel)
    assert caught.value.kind == "cancelled"
    assert scripted.chat_requests() == []


def test_cancel_during_the_call_aborts(scripted: ScriptedServer, compressor: Compressor) -> None:
    cancel = CancelToken()
    arrived = threading.Event()

    def stall(body: dict[str, Any]) -> Any:
        # The request is in flight when the user cancels; the server would answer much later.
        arrived.set()
        cancel.cancel()
        return hang(4)

    scripted.responders.append(stall)
    messages = make_session()
    original = copy.deepcopy(messages)
    with pytest.raises(CompressionAborted) as caught:
        compressor.compress("sys", messages, cancel=cancel)
    assert arrived.is_set()
    assert caught.value.kind == "cancelled"
    assert messages == original
