"""What the engine needs from a model, whatever serves it.

Messages travel in the OpenAI chat format (``{"role", "content", "tool_calls", "tool_call_id"}``)
because every supported server speaks it; a provider that does not (the in-process GGUF model)
translates at its edge.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Sequence
from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field

ChatMessage = dict[str, Any]

ErrorKind = Literal[
    "config",  # no model configured, missing API key variable, unknown provider
    "auth",  # 401/403: retrying cannot help
    "network",  # connection refused, DNS, reset before any reply
    "timeout",  # no reply (or no next chunk) within the timeout
    "rate_limit",  # 429 after the retries
    "server",  # 5xx after the retries
    "bad_request",  # 4xx other than the above (unknown model, context too long …)
    "bad_response",  # a reply that is not valid JSON / not the chat format
    "stream_cut",  # the stream ended before the reply was complete
]


class ProviderError(RuntimeError):
    """A model call failed; ``kind`` says how, the message says what to do about it.

    ``partial`` holds what had streamed before a mid-reply failure so callers can keep it.
    """

    def __init__(
        self, kind: ErrorKind, message: str, *, status: int | None = None, partial: str = ""
    ) -> None:
        super().__init__(message)
        self.kind: ErrorKind = kind
        self.status = status
        self.partial = partial

    @property
    def transient(self) -> bool:
        """Whether the same request could succeed later (compression aborts on these)."""
        return self.kind in ("network", "timeout", "rate_limit", "server", "stream_cut", "auth")


class CancelToken:
    """Set from any thread to stop a call; the provider checks it between chunks."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], None]] = []

    def cancel(self) -> None:
        with self._lock:
            self._event.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def on_cancel(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback`` (on the cancelling thread) when cancelled, at once if already.

        Lets a provider blocked on a queue wake immediately instead of polling the flag.
        Returns a function that unregisters it; call that when the operation ends.
        """
        with self._lock:
            if not self._event.is_set():
                self._callbacks.append(callback)
                return lambda: self._forget(callback)
        callback()
        return lambda: None

    def _forget(self, callback: Callable[[], None]) -> None:
        with self._lock, contextlib.suppress(ValueError):
            self._callbacks.remove(callback)

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def wait(self, seconds: float) -> bool:
        """Sleep up to ``seconds`` unless cancelled first; True when cancelled."""
        return self._event.wait(seconds)


class ToolCall(BaseModel):
    id: str
    name: str
    # The model's raw argument text: it may be invalid JSON, which the agent reports back.
    arguments: str = ""

    def to_message(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


class Usage(BaseModel):
    input_tokens: int = 0
    output_tokens: int = 0


class Reply(BaseModel):
    content: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    finish_reason: str | None = None
    usage: Usage | None = None
    # True when the caller cancelled: ``content`` is what had arrived until then.
    cancelled: bool = False

    def to_message(self) -> ChatMessage:
        message: ChatMessage = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [call.to_message() for call in self.tool_calls]
        return message


TokenCallback = Callable[[str], None]


class ChatProvider(Protocol):
    """A chat model. Implementations must be safe to call from a worker thread."""

    @property
    def name(self) -> str:
        """Human-readable ``provider/model`` for status lines and the session record."""
        ...

    @property
    def context_length(self) -> int:
        """Tokens the model accepts (prompt + reply)."""
        ...

    def chat(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        temperature: float | None = None,
        on_token: TokenCallback | None = None,
        cancel: CancelToken | None = None,
    ) -> Reply:
        """One completion. Streams text through ``on_token`` as it arrives.

        ``tools`` are function schemas ``{"name", "description", "parameters"}``. Raises
        :class:`ProviderError`; a cancelled call returns ``Reply(cancelled=True)`` instead.
        """
        ...
