"""OpenAI-compatible provider, provider factory and server detection, over real loopback HTTP.

The chat tests run against the scripted server; the context-length and detection tests also
use a tiny JSON server below that answers GETs the way Ollama, LM Studio, llama.cpp and vLLM
do, since the scripted server speaks only one dialect of those.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from engine.config import AuxiliaryConfig, AuxiliaryTask, Config, ModelConfig
from engine.providers import make_provider, resolve_api_key, settings_for
from engine.providers.base import CancelToken, ProviderError, Reply
from engine.providers.detect import detect_local_servers
from engine.providers.local import LocalProvider
from engine.providers.openai_compat import OpenAICompatProvider
from tests.scripted_server import (
    ScriptedServer,
    Step,
    cut,
    error,
    hang,
    malformed,
    reply,
    tool_calls,
)

USER = [{"role": "user", "content": "hello"}]
TOOLS = [
    {
        "name": "lookup",
        "description": "Look something up.",
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
    }
]


def provider(server: ScriptedServer, **options: Any) -> OpenAICompatProvider:
    settings: dict[str, Any] = {"timeout": 5.0, "max_retries": 0, "backoff": 0.01}
    settings.update(options)
    return OpenAICompatProvider(server.url, server.model, **settings)


def wait_until(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.005)


def events(*payloads: dict[str, Any]) -> Step:
    """A stream of exactly these SSE events (after the server's opening role chunk).

    Rides on the ``malformed`` step, which writes its body verbatim after ``data: ``.
    """
    return malformed("\n\ndata: ".join(json.dumps(p) for p in payloads))


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> dict:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return {"id": "c", "object": "chat.completion.chunk", "model": "m", "choices": choices, **extra}


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# -- streaming -------------------------------------------------------------------------------


def test_tokens_stream_in_order_and_join_to_the_reply(scripted: ScriptedServer) -> None:
    text = "The quick brown fox jumps over the lazy dog."
    scripted.add(reply(text, usage={"prompt_tokens": 12, "completion_tokens": 9}))
    tokens: list[str] = []
    answer = provider(scripted).chat(USER, on_token=tokens.append)
    assert tokens == [word + " " for word in text.split()[:-1]] + ["dog."]
    assert "".join(tokens) == answer.content == text
    assert answer.finish_reason == "stop"
    assert answer.usage is not None
    assert (answer.usage.input_tokens, answer.usage.output_tokens) == (12, 9)
    sent = scripted.chat_requests()[0]
    assert sent["stream"] is True
    assert sent["stream_options"] == {"include_usage": True}
    assert sent["model"] == scripted.model
    assert sent["messages"] == USER


def test_parallel_tool_calls_are_assembled_from_split_deltas(scripted: ScriptedServer) -> None:
    scripted.add(
        tool_calls(("lookup", {"q": "weather in Oslo"}), ("lookup", {"q": "time"}), content="ok")
    )
    answer = provider(scripted).chat(USER, tools=TOOLS)
    assert answer.content == "ok"
    assert answer.finish_reason == "tool_calls"
    assert [call.name for call in answer.tool_calls] == ["lookup", "lookup"]
    assert [json.loads(call.arguments) for call in answer.tool_calls] == [
        {"q": "weather in Oslo"},
        {"q": "time"},
    ]
    assert answer.tool_calls[0].id != answer.tool_calls[1].id
    assert scripted.chat_requests()[0]["tools"] == [{"type": "function", "function": TOOLS[0]}]


def test_server_quirks_are_absorbed(scripted: ScriptedServer) -> None:
    # Null content, reasoning deltas, tool deltas without index or id on continuation,
    # and usage in a final chunk with no choices.
    scripted.add(
        events(
            chunk({"content": None, "reasoning_content": "let me think"}),
            chunk({"content": "Sure"}),
            chunk({"tool_calls": [{"id": "a1", "function": {"name": "lookup", "arguments": ""}}]}),
            chunk({"tool_calls": [{"function": {"arguments": '{"q": '}}]}),
            chunk({"tool_calls": [{"function": {"arguments": '"x"}'}}]}),
            chunk({"tool_calls": [{"id": "b2", "function": {"name": "lookup"}}]}),
            chunk({}, finish="tool_calls"),
            chunk(None, usage={"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}),
        )
    )
    tokens: list[str] = []
    answer = provider(scripted).chat(USER, tools=TOOLS, on_token=tokens.append)
    assert tokens == ["Sure"]
    assert answer.content == "Sure"
    assert [(c.id, c.name, c.arguments) for c in answer.tool_calls] == [
        ("a1", "lookup", '{"q": "x"}'),
        ("b2", "lookup", "{}"),
    ]
    assert answer.usage is not None and answer.usage.output_tokens == 4


def test_server_refusing_stream_options_is_asked_again_without(scripted: ScriptedServer) -> None:
    def refuse(body: dict[str, Any]) -> Step | None:
        if "stream_options" in body:
            return error(400, "Unrecognized request argument: stream_options")
        return None

    scripted.responders.append(refuse)
    scripted.add(reply("first"), reply("second"))
    model = provider(scripted)
    assert model.chat(USER).content == "first"
    assert model.chat(USER).content == "second"
    # Refused once, then remembered: three requests for two replies.
    assert ["stream_options" in r for r in scripted.chat_requests()] == [True, False, False]


def test_error_object_mid_stream_keeps_the_partial_reply(scripted: ScriptedServer) -> None:
    scripted.add(
        events(
            chunk({"content": "Half an "}),
            {"error": {"code": 502, "message": "upstream provider went away"}},
        )
    )
    with pytest.raises(ProviderError) as failure:
        provider(scripted, max_retries=2).chat(USER)
    assert failure.value.kind == "server"
    assert "upstream provider went away" in str(failure.value)
    assert failure.value.partial == "Half an "
    assert len(scripted.chat_requests()) == 1  # text had streamed: no retry


def test_error_object_with_a_client_code_is_a_bad_request(scripted: ScriptedServer) -> None:
    scripted.add(events({"error": {"code": 400, "message": "context length exceeded"}}))
    with pytest.raises(ProviderError) as failure:
        provider(scripted).chat(USER)
    assert failure.value.kind == "bad_request"
    assert "context length exceeded" in str(failure.value)


# -- failures and retries --------------------------------------------------------------------


def test_server_error_then_success_is_retried(scripted: ScriptedServer) -> None:
    scripted.add(error(500), error(503), reply("recovered"))
    answer = provider(scripted, max_retries=2).chat(USER)
    assert answer.content == "recovered"
    assert len(scripted.chat_requests()) == 3


def test_server_error_after_the_retries_is_kind_server(scripted: ScriptedServer) -> None:
    scripted.add(error(500, "boom"), error(500, "boom"))
    with pytest.raises(ProviderError) as failure:
        provider(scripted, max_retries=1).chat(USER)
    assert failure.value.kind == "server"
    assert failure.value.status == 500
    assert "boom" in str(failure.value)
    assert len(scripted.chat_requests()) == 2


def test_rate_limit_waits_as_long_as_retry_after_says(scripted: ScriptedServer) -> None:
    scripted.add(error(429, "slow down", headers={"Retry-After": "0.4"}), reply("done"))
    # A backoff this long would blow the bound below: only Retry-After can explain the wait.
    model = provider(scripted, max_retries=1, backoff=30)
    started = time.monotonic()
    assert model.chat(USER).content == "done"
    elapsed = time.monotonic() - started
    assert 0.4 <= elapsed < 5
    assert len(scripted.chat_requests()) == 2


def test_rate_limit_after_the_retries_is_kind_rate_limit(scripted: ScriptedServer) -> None:
    scripted.add(error(429, headers={"Retry-After": "0"}))
    with pytest.raises(ProviderError) as failure:
        provider(scripted).chat(USER)
    assert failure.value.kind == "rate_limit"
    assert failure.value.transient


def test_auth_failure_is_not_retried(scripted: ScriptedServer) -> None:
    scripted.add(error(401, "invalid api key"), reply("never sent"))
    model = provider(scripted, max_retries=3, api_key="sk-wrong", api_key_env="CAIRN_TEST_KEY")
    with pytest.raises(ProviderError) as failure:
        model.chat(USER)
    assert failure.value.kind == "auth"
    assert "$CAIRN_TEST_KEY" in str(failure.value)
    assert "sk-wrong" not in str(failure.value)
    assert len(scripted.chat_requests()) == 1


def test_other_client_errors_are_bad_requests(scripted: ScriptedServer) -> None:
    scripted.add(error(404, "model not found"))
    with pytest.raises(ProviderError) as failure:
        provider(scripted, max_retries=3).chat(USER)
    assert failure.value.kind == "bad_request"
    assert scripted.model in str(failure.value)
    assert len(scripted.chat_requests()) == 1


def test_no_reply_within_the_timeout_is_kind_timeout(scripted: ScriptedServer) -> None:
    scripted.add(hang(1.5))
    started = time.monotonic()
    with pytest.raises(ProviderError) as failure:
        provider(scripted, timeout=0.3).chat(USER)
    assert failure.value.kind == "timeout"
    assert "model.timeout" in str(failure.value)
    assert time.monotonic() - started < 1.4


def test_nothing_listening_is_kind_network() -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    with pytest.raises(ProviderError) as failure:
        OpenAICompatProvider(url, "m", max_retries=0).chat(USER)
    assert failure.value.kind == "network"
    assert f"is the server running at {url}" in str(failure.value)


def test_malformed_stream_is_bad_response(scripted: ScriptedServer) -> None:
    scripted.add(malformed("{not json"))
    with pytest.raises(ProviderError) as failure:
        provider(scripted, max_retries=2).chat(USER)
    assert failure.value.kind == "bad_response"
    assert len(scripted.chat_requests()) == 1


def test_cut_stream_is_stream_cut_with_the_partial_text(scripted: ScriptedServer) -> None:
    scripted.add(cut("one two three four five", after=2), reply("not asked for"))
    tokens: list[str] = []
    with pytest.raises(ProviderError) as failure:
        provider(scripted, max_retries=3).chat(USER, on_token=tokens.append)
    assert failure.value.kind == "stream_cut"
    assert failure.value.partial == "one two " == "".join(tokens)
    # Text had reached the caller, so a retry would have shown it twice.
    assert len(scripted.chat_requests()) == 1


# -- cancellation ----------------------------------------------------------------------------


def test_cancel_from_the_token_callback_stops_the_stream(scripted: ScriptedServer) -> None:
    scripted.add(reply("a b c d e f g h i j", chunk_delay=0.2))
    token = CancelToken()
    tokens: list[str] = []

    def on_token(text: str) -> None:
        tokens.append(text)
        if len(tokens) == 2:
            token.cancel()

    started = time.monotonic()
    answer = provider(scripted).chat(USER, on_token=on_token, cancel=token)
    assert answer.cancelled
    assert answer.content == "a b "
    assert tokens == ["a ", "b "]
    assert time.monotonic() - started < 1.2  # ten chunks would take 2 s


def test_cancel_from_another_thread_while_the_server_is_silent(
    scripted: ScriptedServer,
) -> None:
    # No chunk arrives to check the token between: the wait itself must be interruptible.
    scripted.add(hang(2.0))
    token = CancelToken()
    results: list[Reply] = []
    worker = threading.Thread(
        target=lambda: results.append(provider(scripted, timeout=10).chat(USER, cancel=token))
    )
    worker.start()
    wait_until(lambda: len(scripted.chat_requests()) == 1)
    cancelled_at = time.monotonic()
    token.cancel()
    worker.join(timeout=5)
    assert not worker.is_alive()
    assert time.monotonic() - cancelled_at < 0.5
    assert results[0].cancelled and results[0].content == ""


def test_cancel_mid_stream_from_another_thread(scripted: ScriptedServer) -> None:
    scripted.add(reply("w " * 50, chunk_delay=0.05))
    token = CancelToken()
    tokens: list[str] = []
    results: list[Reply] = []
    worker = threading.Thread(
        target=lambda: results.append(
            provider(scripted).chat(USER, on_token=tokens.append, cancel=token)
        )
    )
    worker.start()
    wait_until(lambda: len(tokens) >= 3)
    token.cancel()
    worker.join(timeout=5)
    assert not worker.is_alive()
    answer = results[0]
    assert answer.cancelled
    assert 3 <= len(answer.content) // 2 < 50
    assert answer.content == "".join(tokens)


def test_cancel_during_the_retry_backoff(scripted: ScriptedServer) -> None:
    scripted.add(error(500), reply("never asked for"))
    token = CancelToken()
    results: list[Reply] = []
    model = provider(scripted, max_retries=3, backoff=30)
    worker = threading.Thread(target=lambda: results.append(model.chat(USER, cancel=token)))
    worker.start()
    wait_until(lambda: len(scripted.chat_requests()) == 1)
    cancelled_at = time.monotonic()
    token.cancel()
    worker.join(timeout=5)
    assert not worker.is_alive()
    assert time.monotonic() - cancelled_at < 0.5
    assert results[0].cancelled
    assert len(scripted.chat_requests()) == 1


def test_an_already_cancelled_token_sends_nothing(scripted: ScriptedServer) -> None:
    token = CancelToken()
    token.cancel()
    assert provider(scripted).chat(USER, cancel=token).cancelled
    assert scripted.chat_requests() == []


# -- configuration ---------------------------------------------------------------------------


def config_for(server: ScriptedServer, **model: Any) -> Config:
    settings: dict[str, Any] = {
        "provider": "openai",
        "base_url": server.url,
        "model": server.model,
        "max_retries": 0,
        "timeout": 5,
    }
    settings.update(model)
    return Config(model=ModelConfig(**settings))


def test_api_key_from_the_named_variable_is_sent_as_bearer(
    scripted: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CAIRN_TEST_KEY", "sk-test-123")
    scripted.add(reply("hi"))
    make_provider(config_for(scripted, api_key_env="CAIRN_TEST_KEY")).chat(USER)
    headers = {k.lower(): v for k, v in scripted.chat_requests()[0]["_headers"].items()}
    assert headers["authorization"] == "Bearer sk-test-123"


def test_loopback_server_needs_no_key(scripted: ScriptedServer) -> None:
    scripted.add(reply("hi"))
    assert make_provider(config_for(scripted)).chat(USER).content == "hi"


def test_missing_key_variable_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CAIRN_TEST_MISSING_KEY", raising=False)
    with pytest.raises(ProviderError) as failure:
        resolve_api_key("CAIRN_TEST_MISSING_KEY")
    assert failure.value.kind == "config"
    assert "CAIRN_TEST_MISSING_KEY" in str(failure.value)
    assert resolve_api_key(None) is None


def test_no_model_configured_says_how_to_configure() -> None:
    for config in (Config(), Config(model=ModelConfig(provider="openai"))):
        with pytest.raises(ProviderError) as failure:
            make_provider(config)
        assert failure.value.kind == "config"
        assert "cairn model" in str(failure.value)
        assert "config.yaml" in str(failure.value)


def test_provider_names_pick_the_implementation(scripted: ScriptedServer) -> None:
    ollama = make_provider(Config(model=ModelConfig(provider="ollama", model="llama3.2")))
    assert isinstance(ollama, OpenAICompatProvider)
    assert ollama.base_url == "http://127.0.0.1:11434/v1"
    assert make_provider(config_for(scripted, provider="custom")).name == (
        f"127.0.0.1:{scripted.port}/{scripted.model}"
    )
    with pytest.raises(ProviderError, match="base_url"):
        make_provider(Config(model=ModelConfig(provider="custom", model="m")))
    local = make_provider(Config(model=ModelConfig(provider="local", gguf_path="x.gguf")))
    assert isinstance(local, LocalProvider)  # nothing is loaded until the first call


def test_auxiliary_tasks_fall_back_to_the_main_model(scripted: ScriptedServer) -> None:
    config = config_for(scripted, temperature=0.7, context_length=4096)
    config.auxiliary = AuxiliaryConfig(
        compression=AuxiliaryTask(model="small-model", timeout=30, temperature=0.1)
    )
    review = make_provider(config, "background_review")
    assert isinstance(review, OpenAICompatProvider)
    assert (review.model, review.timeout, review.temperature) == (scripted.model, 5, 0.7)
    assert review.context_length == 4096
    compression = make_provider(config, "compression")
    assert isinstance(compression, OpenAICompatProvider)
    assert compression.base_url == scripted.url
    assert (compression.model, compression.timeout, compression.temperature) == (
        "small-model",
        30,
        0.1,
    )
    # The main model's context length describes the main model, not this one.
    assert settings_for(config, "compression").context_length is None


def test_auxiliary_task_can_use_another_provider(scripted: ScriptedServer) -> None:
    config = Config(model=ModelConfig(provider="local"))
    config.auxiliary = AuxiliaryConfig(
        background_review=AuxiliaryTask(provider="openai", base_url=scripted.url, model="aux")
    )
    assert isinstance(make_provider(config), LocalProvider)
    review = make_provider(config, "background_review")
    scripted.add(reply("reviewed"))
    assert review.chat(USER).content == "reviewed"
    assert scripted.chat_requests()[0]["model"] == "aux"


def test_temperature_is_sent_only_when_set(scripted: ScriptedServer) -> None:
    scripted.add(reply("a"), reply("b"), reply("c"))
    provider(scripted).chat(USER)
    provider(scripted, temperature=0.3).chat(USER)
    provider(scripted, temperature=0.3).chat(USER, temperature=0.9)
    assert [r.get("temperature") for r in scripted.chat_requests()] == [None, 0.3, 0.9]


def test_name_is_host_and_model() -> None:
    remote = OpenAICompatProvider("https://openrouter.ai/api/v1", "meta/llama-3-8b")
    assert remote.name == "openrouter.ai/meta/llama-3-8b"


# -- context length --------------------------------------------------------------------------


class JsonServer:
    """Answers GET/POST paths with fixed JSON, on loopback; 404 elsewhere."""

    def __init__(self, routes: dict[str, Any]) -> None:
        self.routes = routes
        self.seen: list[str] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _answer(self) -> None:
                owner.seen.append(f"{self.command} {self.path}")
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                payload = owner.routes.get(f"{self.command} {self.path}")
                status = 404 if payload is None else 200
                if isinstance(payload, tuple):  # (status, body)
                    status, payload = payload
                data = json.dumps(payload if payload is not None else {"error": "no"}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = _answer
            do_POST = _answer

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def json_server() -> Iterator[Callable[[dict[str, Any]], JsonServer]]:
    servers: list[JsonServer] = []

    def start(routes: dict[str, Any]) -> JsonServer:
        servers.append(JsonServer(routes))
        return servers[-1]

    yield start
    for server in servers:
        server.stop()


def test_props_are_asked_once_per_server_start_and_failures_not_at_every_read(
    json_server: Callable[[dict[str, Any]], JsonServer],
) -> None:
    """/props answered both the window and the tool mode, each asking it again; a probe
    that failed was repeated at every read of the window (each a round of requests). Now
    /props is read once, again after the server refused a request as too long (it may have
    restarted with another window), and a probe without an answer waits 30 s."""
    server = json_server(
        {
            "GET /v1/models": {"data": [{"id": "x.gguf", "meta": {"n_ctx_train": 8192}}]},
            "GET /props": {"default_generation_settings": {"n_ctx": 4096}, "chat_template": "x"},
            "POST /v1/chat/completions": (
                400,
                {"error": {"message": "the request exceeds the available context size"}},
            ),
        }
    )
    model = OpenAICompatProvider(f"{server.url}/v1", "x.gguf", max_retries=0)
    for _ in range(3):
        assert model.context_length == 4096 and model.tool_mode() == "prompted"
    assert server.seen.count("GET /props") == 1 and server.seen.count("GET /v1/models") == 1
    with pytest.raises(ProviderError):
        model.chat([{"role": "user", "content": "hi"}])
    for _ in range(3):
        assert model.context_length == 4096 and model.tool_mode() == "prompted"
    assert server.seen.count("GET /props") == 2
    # The server now says nothing about itself: one round of probes, then the old window.
    server.routes = {"POST /v1/chat/completions": server.routes["POST /v1/chat/completions"]}
    with pytest.raises(ProviderError):
        model.chat([{"role": "user", "content": "hi"}])
    for _ in range(5):
        assert model.context_length == 4096
        model.tool_mode()
    assert server.seen.count("GET /v1/models") == 3 and server.seen.count("GET /props") == 3


def test_context_length_from_the_model_list() -> None:
    server = ScriptedServer(context_length=32768).start()
    try:
        model = provider(server)
        assert model.context_length == 32768
        assert model.context_length == 32768
        gets = [r for r in server.requests if r.get("_method") == "GET"]
        assert [r["_path"] for r in gets] == ["/v1/models"]  # asked once, then remembered
    finally:
        server.stop()


def test_configured_context_length_asks_nothing(scripted: ScriptedServer) -> None:
    assert provider(scripted, context_length=2048).context_length == 2048
    assert scripted.requests == []


@pytest.mark.parametrize(
    ("routes", "expected"),
    [
        # vLLM
        ({"GET /v1/models": {"data": [{"id": "m", "max_model_len": 16384}]}}, 16384),
        # llama.cpp: the running context (props) wins over the training one (meta)
        (
            {
                "GET /v1/models": {"data": [{"id": "x.gguf", "meta": {"n_ctx_train": 131072}}]},
                "GET /props": {"default_generation_settings": {"n_ctx": 4096}},
            },
            4096,
        ),
        ({"GET /v1/models": {"data": [{"id": "x.gguf", "meta": {"n_ctx_train": 2048}}]}}, 2048),
        # Ollama: what the loaded model runs with, else num_ctx from the Modelfile, else
        # Ollama's smallest default (never the trained maximum it would silently cut to)
        (
            {
                "POST /api/show": {"model_info": {"llama.context_length": 131072}},
                "GET /api/ps": {"models": [{"name": "m:latest", "context_length": 32768}]},
            },
            32768,
        ),
        ({"POST /api/show": {"model_info": {"llama.context_length": 131072}}}, 4096),
        ({"POST /api/show": {"model_info": {"llama.context_length": 2048}}}, 2048),
        (
            {
                "POST /api/show": {
                    "parameters": 'num_ctx                        6144\nstop "<|eot|>"',
                    "model_info": {"llama.context_length": 131072},
                }
            },
            6144,
        ),
        # LM Studio
        (
            {"GET /api/v0/models/m": {"loaded_context_length": 12000, "max_context_length": 1}},
            12000,
        ),
        # Nothing useful anywhere
        ({"GET /v1/models": {"data": [{"id": "other"}, {"id": "another"}]}}, 8192),
    ],
)
def test_context_length_probes(
    json_server: Callable[[dict[str, Any]], JsonServer], routes: dict[str, Any], expected: int
) -> None:
    server = json_server(routes)
    assert OpenAICompatProvider(f"{server.url}/v1", "m").context_length == expected


def test_context_length_defaults_when_nothing_answers() -> None:
    started = time.monotonic()
    model = OpenAICompatProvider(f"http://127.0.0.1:{closed_port()}/v1", "m")
    assert model.context_length == 8192
    assert time.monotonic() - started < 3


# -- detection -------------------------------------------------------------------------------


# What the tests that expect an answer give each probe: the default (0.3 s, for a window that
# must not wait) is shorter than a loopback answer takes on a loaded test machine, where a probe
# that gave up passed for "nothing there". Reading the answer is what these tests check.
PROBE = 3.0


def test_detect_finds_an_openai_compatible_server(scripted: ScriptedServer) -> None:
    found = detect_local_servers(
        ports={"llama.cpp": scripted.port, "LM Studio": closed_port()}, timeout=PROBE
    )
    assert [(s.name, s.base_url, s.models) for s in found] == [
        ("llama.cpp", scripted.url, [scripted.model])
    ]


def test_detect_reads_ollamas_model_list(
    json_server: Callable[[dict[str, Any]], JsonServer],
) -> None:
    tags = {"models": [{"name": "llama3.2:latest"}, {"name": "qwen2.5:7b"}]}
    server = json_server({"GET /api/tags": tags})
    found = detect_local_servers(ports={"Ollama": server.port}, timeout=PROBE)
    assert len(found) == 1
    assert found[0].name == "Ollama"
    assert found[0].base_url == f"{server.url}/v1"
    assert found[0].models == ["llama3.2:latest", "qwen2.5:7b"]


def test_detect_reads_an_old_llama_cpp_from_props(
    json_server: Callable[[dict[str, Any]], JsonServer],
) -> None:
    props = {"default_generation_settings": {"n_ctx": 4096}, "model_path": "/m/qwen.gguf"}
    server = json_server({"GET /props": props})
    found = detect_local_servers(ports={"llama.cpp": server.port}, timeout=PROBE)
    assert [(s.name, s.models) for s in found] == [("llama.cpp", ["qwen.gguf"])]


def test_detect_with_nothing_listening_is_empty_and_quick() -> None:
    ports = {"Ollama": closed_port(), "LM Studio": closed_port(), "llama.cpp": closed_port()}
    started = time.monotonic()
    assert detect_local_servers(ports=ports) == []
    assert time.monotonic() - started < 2


def test_detect_ignores_servers_that_answer_something_else(
    json_server: Callable[[dict[str, Any]], JsonServer],
) -> None:
    server = json_server({"GET /api/tags": ["not", "ollama"], "GET /v1/models": {"x": 1}})
    ports = {"Ollama": server.port, "LM Studio": server.port, "llama.cpp": server.port}
    assert detect_local_servers(ports=ports, timeout=PROBE) == []


def test_local_provider_without_llama_cpp_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model_file = tmp_path / "model.gguf"
    model_file.write_bytes(b"GGUF")
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # makes the import fail
    with pytest.raises(ProviderError) as failure:
        LocalProvider(str(model_file)).chat(USER)
    assert failure.value.kind == "config"
    # The hint installs Cairn's own extra, never a same-named project from the index.
    assert "pip install -e '.[local]'" in str(failure.value)
    assert "cairn[local]" not in str(failure.value)


def test_a_variable_that_exists_is_a_name_whatever_its_shape(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Tried: key variables named like key prefixes (ASIA_…, rk_…). Refusing them as keys
    failed every request; a variable the environment holds is a name."""
    from engine.providers import resolve_api_key

    for name in ("ASIA_PACIFIC_KEY", "rk_token"):
        monkeypatch.setenv(name, "the-key")
        assert resolve_api_key(name) == "the-key"
