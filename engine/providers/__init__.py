"""Model providers: build the one ``config.yaml`` describes.

The SDK and llama.cpp bindings are imported only when a provider is made (the ``openai``
package alone takes most of a second to import), so the engine starts without them.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Literal

from engine.config import AuxiliaryTask, Config, ModelConfig
from engine.providers.base import (
    CancelToken,
    ChatMessage,
    ChatProvider,
    ProviderError,
    Reply,
    ToolCall,
    Usage,
)

if TYPE_CHECKING:
    from engine.providers.local import LocalProvider
    from engine.providers.openai_compat import OpenAICompatProvider

__all__ = [
    "CancelToken",
    "ChatMessage",
    "ChatProvider",
    "LocalProvider",
    "OpenAICompatProvider",
    "ProviderError",
    "Reply",
    "Task",
    "ToolCall",
    "Usage",
    "make_provider",
    "resolve_api_key",
    "settings_for",
]

Task = Literal["main", "compression", "background_review"]

# Where a provider name with no base_url points. Names other agents write into a shared home
# (``openrouter``, ``ollama``) are honoured; ``custom`` needs an explicit base_url.
DEFAULT_BASE_URLS = {
    "openai": "https://api.openai.com/v1",
    "openrouter": "https://openrouter.ai/api/v1",
    "ollama": "http://127.0.0.1:11434/v1",
    "lmstudio": "http://127.0.0.1:1234/v1",
    "lm-studio": "http://127.0.0.1:1234/v1",
    "llamacpp": "http://127.0.0.1:8080/v1",
    "llama.cpp": "http://127.0.0.1:8080/v1",
    "llama-cpp": "http://127.0.0.1:8080/v1",
    "vllm": "http://127.0.0.1:8000/v1",
}

_HOW_TO_CONFIGURE = (
    "run `cairn model` to choose one, or set model.provider, model.base_url and model.model "
    "in config.yaml"
)


def resolve_api_key(api_key_env: str | None) -> str | None:
    """The API key from the variable ``api_key_env`` names; None when no variable is named.

    A named variable that is unset or empty is a configuration error (the key itself never
    appears in a message).
    """
    if not api_key_env:
        return None
    from engine.providers.secrets import looks_like_secret

    if api_key_env not in os.environ and looks_like_secret(api_key_env):
        # Written by hand or by another tool: never used as a name, never echoed back. A
        # variable that exists is a name, whatever its shape (ASIA_PACIFIC_KEY).
        raise ProviderError(
            "config",
            "model.api_key_env in config.yaml holds what looks like a key, not the name of "
            "an environment variable: remove it from the file, put the key in a variable "
            "(export MY_API_KEY=<your key>) and run `cairn model set --api-key-env MY_API_KEY`",
        )
    value = os.environ.get(api_key_env, "").strip()
    if not value:
        raise ProviderError(
            "config",
            f"the API key variable ${api_key_env} (model.api_key_env in config.yaml) is not "
            f"set: export {api_key_env}=<your key> before starting Cairn, or run `cairn model`",
        )
    return value


def settings_for(config: Config, task: Task = "main") -> ModelConfig:
    """The main model's settings with the task's overrides applied.

    Two settings do not carry over when the override changes what they describe: a main
    base_url is not used for a different provider, and a main context_length is not used for
    a different model.
    """
    main = config.model
    if task == "main":
        return main
    aux = getattr(config.auxiliary, task)
    overrides: dict[str, Any] = {
        key: value for key in AuxiliaryTask.model_fields if (value := getattr(aux, key)) is not None
    }
    merged = main.model_copy(update=overrides)
    if aux.provider is not None and aux.provider != main.provider and aux.base_url is None:
        merged = merged.model_copy(update={"base_url": None})
    if aux.model is not None and aux.model != main.model and aux.context_length is None:
        merged = merged.model_copy(update={"context_length": None})
    return merged


def make_provider(config: Config, task: Task = "main") -> ChatProvider:
    """The provider for ``task``; raises :class:`ProviderError` ``config`` when none is set up."""
    settings = settings_for(config, task)
    provider = (settings.provider or "none").strip().lower()
    where = "model" if task == "main" else f"auxiliary.{task} (or model)"
    if provider in ("", "none") and settings.base_url:
        provider = "openai"  # an address with no provider named is an OpenAI-compatible one
    if provider in ("", "none", "embedded"):
        from engine import builtin_model as builtin

        fallback = provider != "embedded"
        if fallback and (problem := builtin.missing(settings.gguf_path)) is not None:
            # Nothing configured and the built-in model is not installed either.
            raise ProviderError(
                "config", f"no model is configured: {_HOW_TO_CONFIGURE}; or {problem}"
            )
        from engine.providers.embedded import EmbeddedProvider

        return EmbeddedProvider(
            settings.gguf_path,
            context_length=settings.context_length,
            temperature=settings.temperature,
            timeout=settings.timeout,
            max_tokens=settings.max_tokens,
            builtin=fallback,
        )
    if provider == "local":
        from engine.providers.local import LocalProvider

        return LocalProvider(
            settings.gguf_path,
            context_length=settings.context_length,
            temperature=settings.temperature,
            max_tokens=settings.max_tokens or 1024,
        )
    if not settings.model:
        raise ProviderError(
            "config",
            f"{where}.model is not set: name the model to use ({_HOW_TO_CONFIGURE})",
        )
    base_url = settings.base_url or DEFAULT_BASE_URLS.get(provider)
    if not base_url:
        raise ProviderError(
            "config",
            f"{where}.base_url is not set for provider {settings.provider!r}: give the "
            "server's OpenAI-compatible address (like http://127.0.0.1:8080/v1), or run "
            "`cairn model`",
        )
    api_key = resolve_api_key(settings.api_key_env)
    from engine.providers.openai_compat import OpenAICompatProvider

    return OpenAICompatProvider(
        base_url,
        settings.model,
        api_key=api_key,
        api_key_env=settings.api_key_env,
        context_length=settings.context_length,
        timeout=settings.timeout,
        max_retries=settings.max_retries,
        temperature=settings.temperature,
        max_tokens=settings.max_tokens,
    )


def __getattr__(name: str) -> Any:
    # The provider classes load their heavy dependencies on first use, not on import.
    if name == "OpenAICompatProvider":
        from engine.providers.openai_compat import OpenAICompatProvider

        return OpenAICompatProvider
    if name == "LocalProvider":
        from engine.providers.local import LocalProvider

        return LocalProvider
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
