"""Any OpenAI-compatible chat endpoint: Ollama, LM Studio, llama.cpp's server, vLLM, OpenRouter.

Every call streams. The HTTP exchange runs on a short-lived reader thread that hands chunks to
the caller's thread through a queue, so a cancel is seen at once even while the server is
still loading the model or reading a long prompt (no chunk to check between). Retries are
ours, not the SDK's, so they can honour ``Retry-After``, be interrupted by the cancel token,
and never happen once text has reached ``on_token`` (a retry would show it twice).

Servers differ in small ways this module absorbs: ``content: null`` deltas, tool-call deltas
without an ``index``, usage in a final chunk with no choices, ``reasoning_content`` deltas
(not part of the reply), an ``error`` object in the middle of the stream (OpenRouter), and
servers that refuse ``stream_options``.
"""

from __future__ import annotations

import contextlib
import email.utils
import json
import logging
import math
import queue
import random
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlsplit

import openai

from engine.providers.base import (
    CancelToken,
    ChatMessage,
    ErrorKind,
    ProviderError,
    Reply,
    TokenCallback,
    ToolCall,
    Usage,
)
from engine.providers.detect import http_json
from engine.providers.prompted_tools import (
    ReplyStream,
    plain_messages,
    tool_schema,
    translate_constrained,
)

log = logging.getLogger(__name__)

DEFAULT_CONTEXT_LENGTH = 8192
# The SDK insists on a key; servers on this machine ignore it.
NO_KEY = "not-needed"
# Probing the context length must not stall the first prompt when a server is slow to answer.
PROBE_TIMEOUT = 3.0
PROBE_BUDGET = 6.0
# A connect that takes this long will not succeed; the full timeout is for a slow reply.
CONNECT_TIMEOUT = 10.0
RETRY_AFTER_CAP = 60.0
BACKOFF_CAP = 20.0
# A probe that failed (server down, no such endpoint) is not asked again for this long: the
# window is read at every prompt rebuild and budget check, and a refused or silent server
# would otherwise cost a round of requests (up to PROBE_BUDGET) at each read.
PROBE_RETRY_AFTER = 30.0

_RETRYABLE: frozenset[ErrorKind] = frozenset(
    {"network", "timeout", "rate_limit", "server", "stream_cut"}
)
_LOOPBACK = {"localhost", "127.0.0.1", "::1", "0.0.0.0"}


def is_loopback(url: str) -> bool:
    host = (urlsplit(url).hostname or "").lower()
    return host in _LOOPBACK or host.startswith("127.") or host.endswith(".localhost")


# -- the reader thread -----------------------------------------------------------------------

_END = object()
_WOKEN = object()


@dataclass
class _Raised:
    error: Exception


class _Pump:
    """Reads a stream on its own thread; the caller takes chunks with :meth:`get`.

    Once abandoned the thread stops at its next chunk and closes the response, which tells
    the server to stop generating; it is a daemon, so a server that never answers again only
    costs a sleeping thread until the read timeout.
    """

    def __init__(self, open_stream: Callable[[], Any]) -> None:
        self._items: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._abandoned = threading.Event()
        threading.Thread(
            target=self._run, args=(open_stream,), name="cairn-model-stream", daemon=True
        ).start()

    def _run(self, open_stream: Callable[[], Any]) -> None:
        stream = None
        try:
            stream = open_stream()
            for chunk in stream:
                if self._abandoned.is_set():
                    break
                self._items.put(chunk)
            self._items.put(_END)
        except Exception as exc:  # raised again on the caller's thread, which maps it
            self._items.put(_Raised(exc))
        finally:
            if stream is not None:
                with contextlib.suppress(Exception):
                    stream.close()

    def get(self) -> object:
        item = self._items.get()
        if isinstance(item, _Raised):
            raise item.error
        return item

    def wake(self) -> None:
        self._items.put(_WOKEN)

    def abandon(self) -> None:
        self._abandoned.set()


# -- assembling a streamed reply -------------------------------------------------------------


@dataclass
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class _Assembly:
    """One attempt's reply as it streams in."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.calls: list[_PartialCall] = []
        self._by_index: dict[int, _PartialCall] = {}
        self._by_id: dict[str, _PartialCall] = {}
        self.finish_reason: str | None = None
        self.usage: Usage | None = None
        # Anything reached the caller (text or a tool call): from here on, no retry.
        self.started = False

    @property
    def content(self) -> str:
        return "".join(self.parts)

    def add(self, chunk: object) -> str:
        """Fold one chunk in and return its new text. Raises ValueError on a foreign shape."""
        if not isinstance(chunk, dict):
            raise ValueError(f"a stream event that is not a chat chunk: {chunk!r:.200}")
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self.usage = Usage(
                input_tokens=int(usage.get("prompt_tokens") or 0),
                output_tokens=int(usage.get("completion_tokens") or 0),
            )
        text = ""
        choices = chunk.get("choices") or ()
        for choice in choices:
            # We never ask for n > 1; a server numbering its only choice oddly is still read.
            if len(choices) > 1 and (choice.get("index") or 0) != 0:
                continue
            delta = choice.get("delta")
            if isinstance(delta, dict):
                piece = delta.get("content")
                if isinstance(piece, str):
                    text += piece
                for call in delta.get("tool_calls") or ():
                    self._add_call(call)
            reason = choice.get("finish_reason")
            if reason:
                self.finish_reason = str(reason)
        if text:
            self.parts.append(text)
            self.started = True
        return text

    def _add_call(self, delta: dict[str, Any]) -> None:
        self.started = True
        slot = self._slot(_int_or_none(delta.get("index")), str(delta.get("id") or ""))
        function = delta.get("function")
        if not isinstance(function, dict):
            return
        name = function.get("name")
        # Most servers send the name once; some repeat it in every delta.
        if isinstance(name, str) and name and name != slot.name:
            slot.name += name
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            slot.arguments.append(arguments)
        elif arguments is not None:
            # A few servers send the arguments as an object rather than JSON text.
            slot.arguments.append(_json_text(arguments))

    def _slot(self, index: int | None, call_id: str) -> _PartialCall:
        if call_id and call_id in self._by_id:
            return self._by_id[call_id]
        if index is not None and index in self._by_index:
            slot = self._by_index[index]
            # Some servers number every call 0 but give each its own id.
            if not call_id or not slot.id:
                slot.id = slot.id or call_id
                if call_id:
                    self._by_id[call_id] = slot
                return slot
        elif index is None and not call_id and self.calls:
            return self.calls[-1]  # a continuation with neither index nor id
        slot = _PartialCall(id=call_id)
        self.calls.append(slot)
        self._by_index[len(self.calls) - 1 if index is None else index] = slot
        if call_id:
            self._by_id[call_id] = slot
        return slot

    def tool_calls(self) -> list[ToolCall]:
        calls = []
        for slot in self.calls:
            if not slot.name and not slot.arguments:
                continue
            calls.append(
                ToolCall(
                    id=slot.id or f"call_{uuid.uuid4().hex[:16]}",
                    name=slot.name,
                    # A call without parameters may stream no argument text at all.
                    arguments="".join(slot.arguments) or "{}",
                )
            )
        return calls

    def reply(self) -> Reply:
        return Reply(
            content=self.content,
            tool_calls=self.tool_calls(),
            finish_reason=self.finish_reason,
            usage=self.usage,
        )

    def cancelled(self) -> Reply:
        # A half-streamed tool call must never run, so a cancelled reply keeps only text.
        return Reply(content=self.content, cancelled=True, usage=self.usage)


def _json_text(value: Any) -> str:
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return str(value)


# -- the provider ----------------------------------------------------------------------------


class _Failed(Exception):
    """An attempt failed: the error to report and how long the server asked us to wait."""

    def __init__(self, error: ProviderError, retry_after: float | None = None) -> None:
        super().__init__(str(error))
        self.error = error
        self.retry_after = retry_after


class OpenAICompatProvider:
    """A model behind an OpenAI-compatible ``/chat/completions`` endpoint."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        api_key_env: str | None = None,
        context_length: int | None = None,
        timeout: float = 120.0,
        max_retries: int = 3,
        temperature: float | None = None,
        backoff: float = 0.5,
        max_tokens: int | None = None,
    ) -> None:
        """``api_key_env`` only names the key's variable in error messages; ``backoff`` is the
        first retry's delay in seconds (doubling, with jitter, up to 20 s); ``max_tokens``
        caps every reply (None: the server's limit)."""
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.timeout = float(timeout)
        self.max_retries = max(0, int(max_retries))
        self.temperature = temperature
        self.backoff = backoff
        self.max_tokens = max_tokens
        self._api_key = api_key
        self._api_key_env = api_key_env
        self._configured_context = context_length
        self._probed_context: int | None = None
        # Set when the server went away or refused a request as too long: it may come back
        # with another window (llama-server restarted with a different -c).
        self._context_stale = False
        self._context_found = False
        self._probe_lock = threading.Lock()
        # When the window was last asked without an answer (monotonic), for PROBE_RETRY_AFTER.
        self._context_failed_at: float | None = None
        # llama.cpp's /props, asked once (the window and the tool mode both read it) and
        # again only after the server went away: (answer or None, monotonic time asked).
        self._props: tuple[Any, float] | None = None
        self._props_lock = threading.Lock()
        # Set when the server refused the tools field outright (llama-server without --jinja).
        self._tools_refused = False
        self._said_prompted = False
        # Cleared the first time a server refuses the option, so later calls skip the 400.
        self._send_stream_options = True
        self._client = openai.OpenAI(
            base_url=self.base_url,
            api_key=api_key or NO_KEY,
            timeout=openai.Timeout(self.timeout, connect=min(self.timeout, CONNECT_TIMEOUT)),
            max_retries=0,
        )

    # -- identity ------------------------------------------------------------------------

    @property
    def name(self) -> str:
        parts = urlsplit(self.base_url)
        host = (parts.hostname or "server").lower()
        for prefix in ("www.", "api."):
            host = host.removeprefix(prefix)
        if parts.port is not None:
            host = f"{host}:{parts.port}"
        return f"{host}/{self.model}"

    def close(self) -> None:
        self._client.close()

    def __repr__(self) -> str:
        return f"OpenAICompatProvider({self.base_url!r}, {self.model!r})"

    # -- chat ----------------------------------------------------------------------------

    # -- tools ---------------------------------------------------------------------------

    def tool_mode(self) -> str:
        """``native`` (the server's ``tools`` field) or ``prompted``: the server's chat
        template cannot render tools (llama.cpp says so at ``/props``), so they are described
        in the prompt and the reply is held to a JSON schema instead."""
        prompted = self._tools_refused or template_drops_tools(self._server_props())
        if prompted and not self._said_prompted:
            self._said_prompted = True
            log.info("%s: the chat template has no tool support; tools go in the prompt", self.name)
        return "prompted" if prompted else "native"

    def _server_props(self) -> Any:
        """llama.cpp's ``/props`` answer, or None (not llama.cpp, or not answering).

        Asked once per server start: again only after the server went away (a restart may
        change its template and window), and a failure not before PROBE_RETRY_AFTER.
        """
        with self._props_lock:
            now = time.monotonic()
            if self._props is not None:
                answer, asked = self._props
                if answer is not None or now - asked < PROBE_RETRY_AFTER:
                    return answer
            answer = None
            with contextlib.suppress(Exception):
                answer = http_json(
                    f"{self.base_url.removesuffix('/v1')}/props",
                    timeout=PROBE_TIMEOUT,
                    headers=self._auth_headers(),
                    direct=is_loopback(self.base_url),
                )
            if not isinstance(answer, Mapping):
                answer = None
            self._props = (answer, time.monotonic())
            return answer

    def _auth_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}

    def _server_changed(self) -> None:
        """The server went away or refused a request as too long: what it said about itself
        (window, template) is asked again at the next read."""
        self._context_stale = True
        self._context_failed_at = None
        with self._props_lock:
            self._props = None

    def chat(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        temperature: float | None = None,
        on_token: TokenCallback | None = None,
        cancel: CancelToken | None = None,
    ) -> Reply:
        if tools and self.tool_mode() == "prompted":
            return self._prompted_chat(messages, tools, temperature, on_token, cancel)
        try:
            return self._chat(messages, tools, temperature, on_token, cancel)
        except ProviderError as exc:
            # llama-server without --jinja refuses the tools field outright ("tools param
            # requires --jinja flag"): the same fallback as a template without tools.
            if not tools or exc.partial or "jinja" not in str(exc).lower():
                raise
            log.info("%s refuses tools without --jinja; tools go in the prompt", self.name)
            self._tools_refused = True
            return self._prompted_chat(messages, tools, temperature, on_token, cancel)

    def _prompted_chat(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[dict[str, Any]],
        temperature: float | None,
        on_token: TokenCallback | None,
        cancel: CancelToken | None,
    ) -> Reply:
        """Tools described in the prompt, the reply constrained to a reply or one call."""
        functions = [_tool_param(tool)["function"] for tool in tools]
        shown = ReplyStream()

        def visible(piece: str) -> None:
            text = shown.feed(piece)
            if text and on_token is not None:
                on_token(text)

        schema = {"name": "reply_or_tool_call", "schema": tool_schema(functions)}
        try:
            reply = self._chat(
                plain_messages(messages, functions),
                None,
                temperature,
                visible,
                cancel,
                extra={"response_format": {"type": "json_schema", "json_schema": schema}},
            )
        except ProviderError as exc:
            exc.partial = shown.sent  # the reply's text, not its JSON
            raise
        if reply.cancelled:
            return Reply(content=shown.sent, cancelled=True, usage=reply.usage)
        usage = reply.usage or Usage()
        return translate_constrained(reply.content, shown, reply.finish_reason, usage, on_token)

    def _chat(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[dict[str, Any]] | None,
        temperature: float | None,
        on_token: TokenCallback | None,
        cancel: CancelToken | None,
        extra: dict[str, Any] | None = None,
    ) -> Reply:
        request: dict[str, Any] = {"model": self.model, "messages": list(messages)}
        if self.max_tokens is not None:
            request["max_tokens"] = self.max_tokens
        request.update(extra or {})
        if tools:
            request["tools"] = [_tool_param(tool) for tool in tools]
        chosen = temperature if temperature is not None else self.temperature
        if chosen is not None:
            request["temperature"] = chosen
        attempt = 0
        while True:
            if cancel is not None and cancel.cancelled:
                return Reply(cancelled=True)
            assembly = _Assembly()
            try:
                return self._attempt(request, assembly, on_token, cancel)
            except _Failed as failed:
                error = failed.error
                if assembly.started or attempt >= self.max_retries or error.kind not in _RETRYABLE:
                    raise error from failed.__cause__
                delay = self._delay(attempt, failed.retry_after)
                attempt += 1
                log.info(
                    "%s: %s; retry %d of %d in %.1f s",
                    self.name,
                    error,
                    attempt,
                    self.max_retries,
                    delay,
                )
            if cancel is not None:
                if cancel.wait(delay):
                    return Reply(cancelled=True)
            else:
                time.sleep(delay)

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(RETRY_AFTER_CAP, max(0.0, retry_after))
        # Jitter spreads out clients that failed together (a restarted server).
        return min(BACKOFF_CAP, self.backoff * 2**attempt) * random.uniform(0.5, 1.0)

    def _open(self, request: dict[str, Any]) -> Any:
        # Chunks come back as plain dicts (cast_to=object): building the SDK's typed models
        # costs about 0.25 ms per chunk, most of the time a token spends in this process.
        def post(body: dict[str, Any]) -> Any:
            return self._client.post(
                "/chat/completions",
                cast_to=object,
                body=body,
                stream=True,
                stream_cls=openai.Stream[object],
            )

        if self._send_stream_options:
            try:
                return post({**request, "stream": True, "stream_options": {"include_usage": True}})
            except openai.APIStatusError as exc:
                # 400 from most servers, 422 from those validating with pydantic.
                mentioned = "stream_options" in f"{exc} {exc.body}"
                if exc.status_code not in (400, 422) or not mentioned:
                    raise
                log.info("%s refuses stream_options; asking again without", self.base_url)
                self._send_stream_options = False
        return post({**request, "stream": True})

    def _attempt(
        self,
        request: dict[str, Any],
        assembly: _Assembly,
        on_token: TokenCallback | None,
        cancel: CancelToken | None,
    ) -> Reply:
        pump = _Pump(lambda: self._open(request))
        stop_waking = cancel.on_cancel(pump.wake) if cancel is not None else None
        try:
            while True:
                try:
                    item = pump.get()
                except Exception as exc:
                    if cancel is not None and cancel.cancelled:
                        return assembly.cancelled()  # a failure after the stop is no news
                    raise self._failure(exc, assembly) from exc
                if cancel is not None and cancel.cancelled:
                    return assembly.cancelled()
                if item is _END:
                    break
                if item is _WOKEN:
                    continue
                try:
                    text = assembly.add(item)
                except (ValueError, TypeError, AttributeError) as exc:
                    raise _Failed(self._bad_response(exc, assembly)) from exc
                if text and on_token is not None:
                    on_token(text)
                    # The callback is where a UI-side stop often lands: honour it at once.
                    if cancel is not None and cancel.cancelled:
                        return assembly.cancelled()
        finally:
            pump.abandon()
            if stop_waking is not None:
                stop_waking()
        if assembly.finish_reason is None:
            raise _Failed(
                ProviderError(
                    "stream_cut",
                    f"the reply from {self.base_url} stopped before it was complete "
                    "(the server closed the stream); ask again, and check the server's log "
                    "if it keeps happening",
                    partial=assembly.content,
                )
            )
        if assembly.finish_reason == "error":
            raise _Failed(
                ProviderError(
                    "server",
                    f"{self.base_url} ended the reply with an error; ask again or try another "
                    "model",
                    partial=assembly.content,
                )
            )
        return assembly.reply()

    # -- errors --------------------------------------------------------------------------

    def _bad_response(self, exc: Exception, assembly: _Assembly) -> ProviderError:
        return ProviderError(
            "bad_response",
            f"{self.base_url} sent something that is not an OpenAI chat reply ({exc}); "
            "is base_url the server's OpenAI-compatible endpoint (usually ending in /v1)?",
            partial=assembly.content,
        )

    def _key_hint(self) -> str:
        if self._api_key_env:
            return f"check the API key in ${self._api_key_env}"
        return (
            "this server wants an API key: put it in an environment variable and name that "
            "variable in model.api_key_env (or run `cairn model`)"
        )

    def _failure(self, exc: Exception, assembly: _Assembly) -> _Failed:
        where = self.base_url
        partial = assembly.content
        if isinstance(exc, openai.APITimeoutError):
            what = "stopped sending mid-reply" if assembly.started else "did not answer"
            return _Failed(
                ProviderError(
                    "timeout",
                    f"{where} {what} for {self.timeout:g} s; the model may still be loading or "
                    "the machine is busy: ask again, or raise model.timeout in config.yaml",
                    partial=partial,
                )
            )
        if isinstance(exc, openai.APIConnectionError):
            if assembly.started:
                return _Failed(
                    ProviderError(
                        "stream_cut",
                        f"the connection to {where} broke mid-reply; ask again",
                        partial=partial,
                    )
                )
            self._server_changed()
            return _Failed(
                ProviderError(
                    "network",
                    f"cannot reach {where}: is the server running at {where}? "
                    "(check model.base_url in config.yaml or run `cairn model`)",
                )
            )
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            detail = _server_message(exc.body, exc.message)
            retry_after = _retry_after(exc.response.headers)
            kind, advice = self._status_advice(status)
            if status == 400 and "context" in detail.lower():
                self._server_changed()  # "exceeds the context size": ask again next time
            if "jinja" in detail.lower():
                kind = "bad_request"  # a server setting, not a passing failure: no retries
            return _Failed(
                ProviderError(
                    kind, f"{where} answered HTTP {status}: {detail}; {advice}", status=status
                ),
                retry_after,
            )
        if isinstance(exc, openai.APIResponseValidationError):
            return _Failed(self._bad_response(exc, assembly))
        if isinstance(exc, openai.APIError):
            # An error object inside the stream (OpenRouter reports upstream failures so).
            body = exc.body if isinstance(exc.body, Mapping) else {}
            stream_status = _int_or_none(body.get("code") or body.get("status"))
            detail = _server_message(exc.body, exc.message)
            kind, advice = self._status_advice(stream_status if stream_status is not None else 500)
            return _Failed(
                ProviderError(
                    kind,
                    f"{where} reported an error mid-reply: {detail}; {advice}",
                    status=stream_status,
                    partial=partial,
                )
            )
        if isinstance(exc, ValueError):  # an event that is not JSON
            return _Failed(self._bad_response(exc, assembly))
        if isinstance(exc, openai.OpenAIError):
            return _Failed(ProviderError("bad_request", f"{where}: {exc}", partial=partial))
        raise exc

    def _status_advice(self, status: int) -> tuple[ErrorKind, str]:
        if status in (401, 403):
            return "auth", self._key_hint()
        if status == 429:
            return "rate_limit", "the server is rate-limiting; wait a minute and ask again"
        if status == 408:
            return "timeout", "ask again"
        if status >= 500:
            return "server", "the server failed; ask again, or check its log"
        if status == 404:
            return (
                "bad_request",
                f"check that the model {self.model!r} exists there and that base_url ends "
                "where the server's /chat/completions is (usually /v1)",
            )
        return (
            "bad_request",
            "the server refused the request (a model name it does not know, or a "
            "conversation longer than its context?)",
        )

    # -- context length ------------------------------------------------------------------

    @property
    def context_length(self) -> int:
        if self._configured_context:
            return self._configured_context
        with self._probe_lock:
            failed_at = self._context_failed_at
            recently_failed = (
                failed_at is not None and time.monotonic() - failed_at < PROBE_RETRY_AFTER
            )
            if self._probed_context is None or (self._context_stale and not recently_failed):
                try:
                    found = self._probe_context()
                except Exception:  # a property the UI reads must not raise
                    log.debug("context length probe failed", exc_info=True)
                    found = None
                if found:
                    self._context_stale = False
                    self._context_found = True
                    self._context_failed_at = None
                else:
                    self._context_failed_at = time.monotonic()
                # A server still down keeps the window it had, not the 8,192 default.
                self._probed_context = found or self._probed_context or DEFAULT_CONTEXT_LENGTH
                log.info("%s: context length %d", self.name, self._probed_context)
            return self._probed_context

    @property
    def context_source(self) -> str:
        """Where :attr:`context_length` comes from: ``config``, ``server`` or ``default``."""
        if self._configured_context:
            return "config"
        _ = self.context_length
        return "server" if self._context_found else "default"

    def _probe_context(self) -> int | None:
        deadline = time.monotonic() + PROBE_BUDGET
        root = self.base_url.removesuffix("/v1")
        headers = self._auth_headers()
        direct = is_loopback(self.base_url)

        def fetch(url: str, payload: Any = None) -> Any:
            left = deadline - time.monotonic()
            if left <= 0.05:
                return None
            try:
                return http_json(
                    url,
                    timeout=min(PROBE_TIMEOUT, left),
                    payload=payload,
                    headers=headers,
                    direct=direct,
                )
            except Exception:
                return None

        entry = _model_entry(fetch(f"{self.base_url}/models"), self.model)
        # OpenRouter and the scripted server say context_length; vLLM says max_model_len.
        found = _first_int(entry, ("context_length",), ("max_model_len",))
        if found:
            return found
        # llama.cpp: the context the server was started with, which may be below training's.
        found = _first_int(
            self._server_props(), ("default_generation_settings", "n_ctx"), ("n_ctx",)
        )
        if found:
            return found
        show = fetch(f"{root}/api/show", {"model": self.model})
        if isinstance(show, Mapping):  # only Ollama answers this
            return _ollama_context(show, fetch(f"{root}/api/ps"), self.model)
        found = _first_int(
            fetch(f"{root}/api/v0/models/{quote(self.model, safe='/')}"),
            ("loaded_context_length",),
            ("max_context_length",),
        )
        if found:
            return found
        return _first_int(entry, ("meta", "n_ctx_train"))


def template_drops_tools(props: Any) -> bool:
    """Whether a llama.cpp ``/props`` answer shows a chat template that cannot render tools.

    Newer servers state it (``chat_template_caps.supports_tools``); otherwise a Jinja
    template that never mentions ``tools`` has nowhere to put them. Anything else (no
    ``/props``, no template) is taken to handle tools itself.
    """
    if not isinstance(props, Mapping):
        return False
    caps = props.get("chat_template_caps")
    if isinstance(caps, Mapping) and isinstance(caps.get("supports_tools"), bool):
        return not caps["supports_tools"]
    template = props.get("chat_template")
    return isinstance(template, str) and bool(template.strip()) and "tools" not in template


def _tool_param(tool: Mapping[str, Any]) -> dict[str, Any]:
    if tool.get("type") == "function" and "function" in tool:
        return dict(tool)
    function = {key: tool[key] for key in ("name", "description", "parameters") if key in tool}
    return {"type": "function", "function": function}


def _server_message(body: object, fallback: str) -> str:
    if isinstance(body, Mapping):
        message = body.get("message")
        if not message and isinstance(body.get("error"), Mapping):
            message = body["error"].get("message")
        if isinstance(message, str) and message:
            return message
        if isinstance(body.get("error"), str):
            return body["error"]
    if isinstance(body, str) and body.strip():
        return body.strip()[:500]
    return fallback


def _retry_after(headers: Mapping[str, str]) -> float | None:
    value = headers.get("retry-after-ms")
    if value is not None:
        with contextlib.suppress(ValueError):
            return float(value) / 1000
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        return max(0.0, when.timestamp() - time.time())
    return seconds if math.isfinite(seconds) else None


def _int_or_none(value: object) -> int | None:
    try:
        return int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return None


def _model_entry(payload: Any, model: str) -> Mapping[str, Any] | None:
    data = payload.get("data") if isinstance(payload, Mapping) else None
    if not isinstance(data, list):
        return None
    entries = [item for item in data if isinstance(item, Mapping)]
    for item in entries:
        if item.get("id") == model:
            return item
    # llama.cpp serves one model under its file name, whatever name the config uses.
    return entries[0] if len(entries) == 1 else None


def _first_int(payload: Any, *paths: tuple[str, ...]) -> int | None:
    for path in paths:
        value = payload
        for key in path:
            value = value.get(key) if isinstance(value, Mapping) else None
        number = _int_or_none(value)
        if number is not None and number > 0:
            return number
    return None


# Ollama runs a model with a context of its own choosing (4,096 tokens on a machine with
# under 24 GiB of VRAM, more on bigger ones) unless num_ctx is set, and silently drops the start
# of a longer prompt, so the model's trained maximum would be a dangerous answer.
OLLAMA_SMALLEST_DEFAULT_CONTEXT = 4096


def _ollama_context(show: Mapping[str, Any], running: Any, model: str) -> int | None:
    # A loaded model: Ollama says what it actually runs with.
    names = {model, f"{model}:latest"}
    for entry in (running.get("models") if isinstance(running, Mapping) else None) or ():
        if isinstance(entry, Mapping) and (
            entry.get("name") in names or entry.get("model") in names
        ):
            number = _int_or_none(entry.get("context_length"))
            if number:
                return number
    # A num_ctx set in the Modelfile is what the next load will use.
    parameters = show.get("parameters")
    if isinstance(parameters, str):
        for line in parameters.splitlines():
            words = line.split()
            if len(words) == 2 and words[0] == "num_ctx":
                number = _int_or_none(words[1])
                if number:
                    return number
    trained = None
    info = show.get("model_info")
    if isinstance(info, Mapping):
        for key, value in info.items():
            if str(key).endswith(".context_length"):
                trained = _int_or_none(value)
                break
    return min(trained or OLLAMA_SMALLEST_DEFAULT_CONTEXT, OLLAMA_SMALLEST_DEFAULT_CONTEXT)
