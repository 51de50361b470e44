"""External memory providers: the interface, the manager that runs one, the built-ins.

See ``docs/memory-providers.md``. The names below load on first use: ``cairn memory show``
registers the provider commands without importing the manager (entry points, the scanner).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engine.plugins.base import MemoryProvider
    from engine.plugins.manager import (
        ENTRY_POINT_GROUP,
        ProviderInfo,
        ProviderLoadError,
        ProviderManager,
        available_providers,
        load_provider,
    )

_WHERE = {
    "MemoryProvider": "engine.plugins.base",
    "ENTRY_POINT_GROUP": "engine.plugins.manager",
    "ProviderInfo": "engine.plugins.manager",
    "ProviderLoadError": "engine.plugins.manager",
    "ProviderManager": "engine.plugins.manager",
    "available_providers": "engine.plugins.manager",
    "load_provider": "engine.plugins.manager",
}

__all__ = [
    "ENTRY_POINT_GROUP",
    "MemoryProvider",
    "ProviderInfo",
    "ProviderLoadError",
    "ProviderManager",
    "available_providers",
    "load_provider",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'engine.plugins' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
