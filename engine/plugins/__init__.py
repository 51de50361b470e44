"""External memory providers: the interface, the manager that runs one, the built-ins.

See ``docs/memory-providers.md``.
"""

from engine.plugins.base import MemoryProvider
from engine.plugins.manager import (
    ENTRY_POINT_GROUP,
    ProviderInfo,
    ProviderLoadError,
    ProviderManager,
    available_providers,
    load_provider,
)

__all__ = [
    "ENTRY_POINT_GROUP",
    "MemoryProvider",
    "ProviderInfo",
    "ProviderLoadError",
    "ProviderManager",
    "available_providers",
    "load_provider",
]
