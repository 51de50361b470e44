"""The Holographic memory provider: a local fact store ranked with holographic vectors."""

from engine.plugins.holographic.provider import HolographicProvider
from engine.plugins.holographic.store import FactStore, FactStoreError, NewFact

__all__ = ["FactStore", "FactStoreError", "HolographicProvider", "NewFact"]
