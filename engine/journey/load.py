"""Loading a home's journey: memory's events through History, session titles through the
session store, provider facts through the providers' journey hook."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Sequence

from engine.journey.builder import JourneyBuilder
from engine.journey.layers import HomeLayers, journey_providers
from engine.journey.model import Journey, SessionNode
from engine.memory.entries import Target
from engine.memory.errors import MemoryToolError
from engine.memory.history import MemoryEvent
from engine.memory.service import MemoryService
from engine.plugins.base import MemoryProvider


def session_nodes(service: MemoryService, ids: Iterable[str]) -> dict[str, SessionNode]:
    """Title and start time of the sessions ``ids`` (missing or unreadable ones are skipped)."""
    wanted = set(ids)
    if not wanted:
        return {}
    try:
        from engine.sessions.store import SessionStore

        store = SessionStore.open(service.home, service.config)
        return {
            info.id: SessionNode(
                id=info.id, title=info.title, started_at=info.started_at, source=info.source
            )
            for info in store.get_sessions(wanted).values()
        }
    except Exception:  # the journey is about memory; session titles are a courtesy
        return {}


def _events_after(service: MemoryService, last_id: int) -> list[MemoryEvent] | None:
    assert service.history is not None
    return service.history.events_after(last_id)


def load_journey(
    service: MemoryService,
    *,
    rescan: bool = True,
    builder: JourneyBuilder | None = None,
    layers: bool = True,
    providers: Sequence[MemoryProvider] | None = None,
) -> Journey:
    """The journey of ``service``'s home, noting edits made outside Cairn first (so they get
    a real time) unless ``rescan`` is False. With a ``builder`` kept from an earlier load,
    only the events recorded since are replayed. With ``layers``, skills and provider facts
    are part of it: the facts of ``providers`` (by default the local fact store and the
    configured provider, :func:`journey_providers`)."""
    if rescan:
        service.rescan()
    current: dict[Target, list[str]] = {}
    unreadable: dict[str, str] = {}
    for target in Target:
        try:
            current[target] = service.read(target).entries
        except MemoryToolError as exc:
            unreadable[target.value] = exc.message  # the history still tells its story
            continue
    builder = builder if builder is not None else JourneyBuilder()
    error = service.history_error
    if layers and providers is None:
        providers = journey_providers(service.home, service.config)
    sources = HomeLayers(service.home, providers) if layers else None
    new: list[MemoryEvent] = []
    if service.history is not None:
        try:
            found = _events_after(service, builder.last_id)
            if found is None:
                builder.reset()
                found = _events_after(service, 0) or []
            new = found
        except Exception as exc:
            error = str(exc)
    if not builder.extend(new, sources):
        # Something new belongs before what was replayed: replay everything in order.
        builder.reset()
        everything: list[MemoryEvent] = []
        if service.history is not None and error is None:
            with contextlib.suppress(Exception):  # reported above if it fails again
                everything = _events_after(service, 0) or []
        builder.extend(everything, sources)
    journey = builder.journey(
        current, session_nodes(service, builder.session_ids), history_error=error
    )
    journey.unreadable = unreadable
    return journey
