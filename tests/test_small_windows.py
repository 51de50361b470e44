"""Models with small windows, as a llama.cpp server started with ``-c 512`` (or 1,024, 2,048)
presents them: the window is asked of the server (never configured), requests go over real
HTTP on loopback, and every request the server receives is checked against that window."""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from typing import Any

import pytest

from engine import cli
from engine.agent import Agent, AgentEvent, Notice, SessionStarted
from engine.compression import estimate_tokens, is_summary_message
from engine.config import update_config
from engine.home import Home
from engine.sessions.store import SessionStore
from engine.window import schema_tokens
from tests.scripted_server import ScriptedServer, reply

COMPACT_SUMMARY = (
    "## Goal\nPlan the vegetable garden.\n## Constraints and preferences\nOrganic only.\n"
    "## Active state\nChoosing tomato varieties.\n## Pending user asks\nNone"
)


class Recorder:
    def __init__(self) -> None:
        self.events: list[AgentEvent] = []

    def __call__(self, event: AgentEvent) -> None:
        self.events.append(event)

    def notices(self, kind: str) -> list[str]:
        return [e.text for e in self.events if isinstance(e, Notice) and e.kind == kind]


def serve(window: int, **kwargs: Any) -> ScriptedServer:
    server = ScriptedServer(context_length=window, **kwargs).start()
    # The summariser's requests carry neither tools nor a reply schema; the main ones do.
    server.responders.append(
        lambda body: (
            None if body.get("tools") or body.get("response_format") else reply(COMPACT_SUMMARY)
        )
    )
    return server


@pytest.fixture
def servers() -> Iterator[list[ScriptedServer]]:
    started: list[ScriptedServer] = []
    yield started
    for server in started:
        server.stop()


def point_at(home: Home, server: ScriptedServer) -> Home:
    # No context_length: the window is what the server says, as with a real llama-server.
    update_config(
        home,
        {
            "model": {
                "provider": "openai",
                "base_url": server.url,
                "model": server.model,
                "timeout": 10,
                "max_retries": 0,
            }
        },
    )
    return home


def assert_every_request_fits(server: ScriptedServer, window: int) -> None:
    for request in server.chat_requests():
        tokens = estimate_tokens(request["messages"]) + schema_tokens(
            [t["function"] for t in request.get("tools") or []]
        )
        assert tokens < window, f"a request of ~{tokens} tokens went to a {window}-token window"


def test_a_512_token_window_is_refused_upfront_with_figures(
    home: Home, servers: list[ScriptedServer], capsys: pytest.CaptureFixture[str]
) -> None:
    """A 512-token server used to fail every message with HTTP 400 and "nothing to
    compress". Now the first message gets one clear error naming what does not fit; nothing
    is sent to the model and nothing is stored."""
    server = serve(512)
    servers.append(server)
    point_at(home, server)
    assert cli.main(["chat", "-q", "hello there", "--home", str(home.root)]) == 1
    err = capsys.readouterr().err
    # Said once with the figures when the session opens, then briefly for the message.
    assert err.count("window (512 tokens) cannot hold") == 1
    assert "nothing was sent: the model's window (512 tokens) is too small" in err
    assert re.search(r"system prompt ~\d+ tokens", err) and "tool schemas ~" in err
    assert "llama-server -c" in err
    assert server.chat_requests() == []
    assert SessionStore.open(home).list_sessions() == []


@pytest.mark.parametrize(("window", "turns"), [(1024, 6), (2048, 10)])
def test_a_small_window_keeps_a_working_compressed_conversation(
    home: Home, servers: list[ScriptedServer], window: int, turns: int
) -> None:
    """At 1,024 and 2,048 tokens every turn gets its reply: the prompt is the compact one,
    compression starts as soon as the room is half used (not after 13 messages), and no
    request the server receives is larger than its window."""
    server = serve(window)
    servers.append(server)
    point_at(home, server)
    server.add(*[reply(f"Answer {i}: " + "plant them deep " * 10) for i in range(turns)])
    events = Recorder()
    agent = Agent(home, source="test", listener=events, cwd=home.root, background_review=False)
    assert agent.window.window == window and agent.window.compact
    first = agent.session_id
    compressed_at = None
    for turn in range(turns):
        result = agent.send(f"question {turn} about tomatoes: " + "more detail " * 12)
        assert result.error is None, result.error
        assert result.reply.startswith(f"Answer {turn}:")
        if compressed_at is None and agent.session_id != first:
            compressed_at = turn
    # Exchanges of ~90 tokens fill half of a 2,048-token window's ~720-token room in four
    # turns: compression runs by the fifth (it used to wait for 13 messages, the seventh).
    assert compressed_at is not None and compressed_at <= 4
    assert any(is_summary_message(m) for m in agent.messages)
    assert_every_request_fits(server, window)
    # The stored lineage still holds the first question in full.
    store = SessionStore.open(home)
    assert store.messages(first)[0].content.startswith("question 0 about tomatoes")
    agent.close()


def test_a_message_too_long_for_the_window_is_refused_before_it_is_stored(
    home: Home, servers: list[ScriptedServer], capsys: pytest.CaptureFixture[str]
) -> None:
    """A 20,000-character message to an 8,192-token model used to be stored and then
    rejected with HTTP 400. It is now refused with the size that would fit; nothing is sent
    or stored, and a message that fits still goes through."""
    server = serve(8192)
    servers.append(server)
    point_at(home, server)
    assert cli.main(["chat", "-q", "word " * 4000, "--home", str(home.root)]) == 1
    err = capsys.readouterr().err
    assert "this message is ~5,004 tokens" in err and "Shorten it to under ~" in err
    assert server.chat_requests() == []
    assert SessionStore.open(home).list_sessions() == []
    server.add(reply("fine"))
    assert cli.main(["chat", "-q", "word " * 400, "--home", str(home.root)]) == 0


def test_the_window_is_asked_again_after_the_server_restarts(
    home: Home, servers: list[ScriptedServer]
) -> None:
    """The window was read once per process: a llama-server restarted with a smaller -c
    was still sent requests sized for the old one. After the server goes away the next
    turn asks again, says what changed and sizes requests for the new window."""
    first = serve(8192)
    servers.append(first)
    point_at(home, first)
    first.add(reply("hello from the big window"))
    events = Recorder()
    agent = Agent(home, source="test", listener=events, cwd=home.root, background_review=False)
    assert agent.send("hi").error is None and agent.window.window == 8192
    port = first.port
    first.stop()
    servers.remove(first)
    assert agent.send("are you there?").error_kind == "network"
    second = serve(2048, port=port)
    servers.append(second)
    second.add(reply("hello from the small window"))
    result = agent.send("and now?")
    assert result.error is None and result.reply == "hello from the small window"
    assert agent.window.window == 2048
    assert any("window is now 2,048 tokens (was 8,192)" in t for t in events.notices("info"))
    assert_every_request_fits(second, 2048)
    agent.close()


def test_a_window_that_shrinks_mid_session_continues_in_a_child_session(
    home: Home, servers: list[ScriptedServer]
) -> None:
    """When a server came back with a window too small for the session's prompt, the
    shorter prompt replaced it in place: the stored session kept the prompt it started with
    while its later requests carried another one, rebuilt from memory as it was on disk by
    then (a write of this session, a terminal's edit). The shorter prompt now starts a child
    session with lineage; the first session's stored prompt is what its requests carried."""
    first = serve(8192)
    servers.append(first)
    point_at(home, first)
    first.add(reply("hello from the big window"))
    events = Recorder()
    agent = Agent(home, source="test", listener=events, cwd=home.root, background_review=False)
    assert agent.send("hi").error is None
    first_id, first_prompt = agent.session_id, agent.prompt.text
    assert first.chat_requests()[-1]["messages"][0]["content"] == first_prompt
    # Written from a terminal while the session runs: the frozen prompt must not show it.
    memories = home.memories_dir
    memories.mkdir(parents=True, exist_ok=True)
    (memories / "MEMORY.md").write_text("The deploy key rotates on Fridays", encoding="utf-8")
    port = first.port
    first.stop()
    servers.remove(first)
    assert agent.send("are you there?").error_kind == "network"
    second = serve(1024, port=port)
    servers.append(second)
    second.add(reply("hello from the small window"))
    result = agent.send("and now?")
    assert result.error is None and result.reply == "hello from the small window"
    assert agent.prompt.text != first_prompt, "the 1,024-token window needs the compact prompt"
    assert_every_request_fits(second, 1024)

    store = SessionStore.open(home)
    old = store.get_session(first_id)
    assert old is not None and old.end_reason == "window"
    assert old.system_prompt == first_prompt and "deploy key" not in old.system_prompt
    assert agent.session_id != first_id and agent.parent_session_id == first_id
    child = store.get_session(agent.session_id)
    assert child is not None and child.parent_session_id == first_id
    assert child.system_prompt == agent.prompt.text
    assert second.chat_requests()[-1]["messages"][0]["content"] == child.system_prompt
    carried = [m.content for m in store.messages(agent.session_id)]
    assert "hi" in carried and "hello from the big window" in carried and "and now?" in carried
    started = [e for e in events.events if isinstance(e, SessionStarted)]
    assert started[-1].reason == "window" and started[-1].parent_session_id == first_id
    agent.close()


def test_the_terminal_says_continuing_once_and_keeps_the_outline_out(
    home: Home,
    servers: list[ScriptedServer],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """At 1,792 tokens the REPL printed "(continuing in session …)" twice per compression
    and dumped the summary into the chat. Now each compression prints one line."""
    server = serve(1024)
    servers.append(server)
    point_at(home, server)
    server.add(*[reply(f"Answer {i}: " + "plant them deep " * 5) for i in range(5)])
    lines = "".join(f"question {i}: " + "more detail " * 6 + "\n" for i in range(5))
    monkeypatch.setattr("sys.stdin", io.StringIO(lines))
    assert cli.main(["chat", "--home", str(home.root)]) == 0
    out = capsys.readouterr().out
    sessions = SessionStore.open(home).list_sessions()
    compressions = sum(1 for s in sessions if s.end_reason == "compression")
    assert compressions >= 1
    assert out.count("continuing in session") == compressions
    assert "## Goal" not in out and "Plan the vegetable garden" not in out


def test_a_reply_cut_at_the_length_limit_is_marked(
    home: Home, servers: list[ScriptedServer], capsys: pytest.CaptureFixture[str]
) -> None:
    """finish_reason "length" was shown as a complete reply. It is now marked as cut,
    with the way to get the rest, in the terminal and in --json."""
    server = serve(8192)
    servers.append(server)
    point_at(home, server)
    server.add(
        reply("The story begins", finish="length"), reply("The story begins", finish="length")
    )
    assert cli.main(["chat", "-q", "tell a story", "--home", str(home.root)]) == 0
    captured = capsys.readouterr()
    assert "cut at the model's length limit" in captured.out + captured.err
    assert "`continue`" in captured.out + captured.err
    assert cli.main(["chat", "-q", "tell a story", "--json", "--home", str(home.root)]) == 0
    payload = __import__("json").loads(capsys.readouterr().out)
    assert payload["truncated"] is True and payload["reply"] == "The story begins"


def test_session_started_events_follow_compression(
    home: Home, servers: list[ScriptedServer]
) -> None:
    """Each automatic compression in a small window announces its session once."""
    server = serve(1024)
    servers.append(server)
    point_at(home, server)
    server.add(*[reply(f"Answer {i}: " + "plant them deep " * 5) for i in range(4)])
    events = Recorder()
    agent = Agent(home, source="test", listener=events, cwd=home.root, background_review=False)
    for turn in range(4):
        agent.send(f"question {turn}: " + "more detail " * 6)
    started = [e for e in events.events if isinstance(e, SessionStarted)]
    compressions = [e for e in started if e.reason == "compression"]
    assert len(compressions) == len(events.notices("compression")) >= 1
    agent.close()


# -- a chat template without tools -----------------------------------------------------------

PLAIN_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{{ message['content'] }}<|im_end|>\n{% endfor %}<|im_start|>assistant\n"
)


@pytest.mark.parametrize(
    "props",
    [
        {"chat_template": PLAIN_TEMPLATE, "default_generation_settings": {"n_ctx": 8192}},
        {
            "chat_template": "{{ messages }} {% if tools %}{{ tools }}{% endif %}",
            "chat_template_caps": {"supports_tools": False},
        },
    ],
    ids=["template-without-tools", "caps-say-no-tools"],
)
def test_a_template_that_drops_tools_is_detected_and_tools_go_in_the_prompt(
    home: Home, servers: list[ScriptedServer], props: dict[str, Any]
) -> None:
    """llama-server --jinja with a GGUF's own template that has no tool support dropped the
    `tools` field: the model could never call memory, and nothing said so. The template at
    /props is now read, the user is told, and tools are described in the prompt with the
    reply held to a JSON schema; a call in that form still reaches the memory tool."""
    from engine.memory.entries import Target

    server = serve(8192, props=props)
    servers.append(server)
    point_at(home, server)
    call = '{"tool": "memory", "arguments": {"action": "add", "content": "Drinks green tea"}}'
    server.add(reply(call), reply('{"reply": "Noted: green tea."}'))
    events = Recorder()
    streamed: list[str] = []

    def listen(event: AgentEvent) -> None:
        events(event)
        if type(event).__name__ == "TokenReceived":
            streamed.append(event.text)  # type: ignore[union-attr]

    agent = Agent(home, source="test", listener=listen, cwd=home.root, background_review=False)
    result = agent.send("remember that I drink green tea")
    assert result.error is None and result.reply == "Noted: green tea."
    assert agent.memory.read(Target.MEMORY).entries == ["Drinks green tea"]
    assert "".join(streamed) == "Noted: green tea."  # the JSON itself never shows
    assert any("no tool support" in t for t in events.notices("provider"))
    first, second = server.chat_requests()
    for request in (first, second):
        assert "tools" not in request
        assert request["response_format"]["type"] == "json_schema"
        assert "memory" in request["messages"][0]["content"]  # described in the prompt
    # The tool result went back as a plain turn the template can render.
    assert any("Result of the tool memory" in m["content"] for m in second["messages"])
    agent.close()


def test_a_template_with_tool_support_gets_the_tools_field(
    home: Home, servers: list[ScriptedServer]
) -> None:
    """The usual case is untouched: a template that renders tools gets `tools`."""
    props = {"chat_template": "{% if tools %}{{ tools | tojson }}{% endif %}{{ messages }}"}
    server = serve(8192, props=props)
    servers.append(server)
    point_at(home, server)
    server.add(reply("hello"))
    events = Recorder()
    agent = Agent(home, source="test", listener=events, cwd=home.root, background_review=False)
    assert agent.send("hi").error is None
    (request,) = server.chat_requests()
    assert request["tools"] and "response_format" not in request
    assert not events.notices("provider")
    agent.close()


def test_a_window_the_server_does_not_state_refuses_nothing(
    home: Home, servers: list[ScriptedServer], capsys: pytest.CaptureFixture[str]
) -> None:
    """Cloud APIs rarely say their window, so the 8,192 default is a guess: a long message
    to such a server is sent, not refused, and the full prompt is kept."""
    server = serve(8192, advertise_window=False)
    servers.append(server)
    point_at(home, server)
    server.add(reply("read it all"))
    assert cli.main(["chat", "-q", "word " * 4000, "--home", str(home.root)]) == 0
    (request,) = server.chat_requests()
    assert "<tool_guidance>" in request["messages"][0]["content"]
    assert "session_search: your past conversations" in request["messages"][0]["content"]
    assert "cannot hold" not in capsys.readouterr().err


def test_a_server_refusing_tools_without_jinja_falls_back_to_the_prompt(
    home: Home, servers: list[ScriptedServer]
) -> None:
    """llama-server started without --jinja answers a request with tools by an error
    ("tools param requires --jinja flag"); the request is made again with the tools in the
    prompt, and later ones go that way at once."""
    from tests.scripted_server import error

    server = serve(8192)
    servers.append(server)
    point_at(home, server)
    update_config(home, {"model": {"max_retries": 3}})  # a setting is not retried
    server.add(
        error(500, "tools param requires --jinja flag"),
        reply('{"reply": "Hello."}'),
        reply('{"reply": "Again."}'),
    )
    events = Recorder()
    agent = Agent(home, source="test", listener=events, cwd=home.root, background_review=False)
    assert agent.send("hi").reply == "Hello."
    assert agent.send("once more").reply == "Again."
    first, second, third = server.chat_requests()
    assert first.get("tools") and "tools" not in second and "tools" not in third
    assert second["response_format"]["type"] == "json_schema"
    agent.close()
