"""What the views show, read on the engine thread: one query per kind of view.

Each query returns a :class:`ChangeSet` with only its own parts filled in (the views'
``apply_changes`` touch the parts present and leave the rest), so a view is handed exactly
the data it shows. The queries are run by :class:`app.ops.Refresher` when an operation's
changes name that data.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from app.worker import EngineWorker
    from engine.changes import Changes

log = logging.getLogger(__name__)

SESSION_PAGE = 50  # sessions in a page of the session list


@dataclass
class ChangeSet:
    """Parts of the engine's state for the views; ``None`` parts are not included.

    ``memory``: ``{"memory"|"user": {target, chars, limit, percent, entries, items, error}}``.
    ``pending``: staged writes as dicts (``id, action, summary, origin, created_at, payload``).
    ``snapshot``: ``{"changes": N, "diff": {target: {"added": [...], "removed": [...]}}}`` —
    how far the files on disk have moved from the running session's frozen prompt.
    ``sessions``: recent session cards (``session_id, title, started_at, parent_session_id …``).
    ``model``: ``{"configured": bool, "builtin": bool, "name", "error", "notifications"}``
    (``builtin``: the built-in tiny model answers; the last is ``display.memory_notifications``).
    ``approval``: whether memory writes are staged for approval.
    """

    memory: dict[str, Any] | None = None
    pending: list[dict[str, Any]] | None = None
    snapshot: dict[str, Any] | None = None
    sessions: list[dict[str, Any]] | None = None
    model: dict[str, Any] | None = None
    approval: bool | None = None
    sessions_total: int | None = None  # how many sessions are stored (the list pages on)


# -- which changes concern which view ----------------------------------------------------------


def memory_changed(changes: Changes) -> bool:
    # The limits live in config; a new session has a new frozen snapshot to compare with.
    return bool(changes.targets) or changes.config_under("memory") or changes.session


def pending_changed(changes: Changes) -> bool:
    return bool(changes.pending)


def pending_or_memory_changed(changes: Changes) -> bool:
    # The dialog previews a staged edit against the entries as they are now.
    return bool(changes.pending or changes.targets)


def approval_changed(changes: Changes) -> bool:
    return changes.config_under("memory.write_approval")


def journey_changed(changes: Changes) -> bool:
    return bool(changes.targets or changes.skills or changes.facts)


def sessions_changed(changes: Changes) -> bool:
    return changes.sessions or changes.session


def model_changed(changes: Changes) -> bool:
    return changes.session or changes.config_under("model") or changes.config_under("display")


# -- the queries (engine thread) ---------------------------------------------------------------


def memory_entries(worker: EngineWorker) -> dict[str, Any]:
    from engine.memory.entries import Target
    from engine.memory.errors import MemoryToolError
    from engine.memory.service import usage_of

    service = worker.memory()
    memory: dict[str, Any] = {}
    for target in Target:
        try:
            current = service.read(target)
            memory[target.value] = {
                **usage_of(target, current.entries, current.limit),
                "items": current.entries,
                "error": None,
            }
        except MemoryToolError as exc:
            memory[target.value] = {"target": target.value, "items": [], "error": exc.message}
    return memory


def snapshot_of(worker: EngineWorker) -> dict[str, Any] | None:
    if worker.agent is None:
        return None
    diff = worker.agent.memory_changes_since_start()
    count = sum(len(d["added"]) + len(d["removed"]) for d in diff.values())
    return {"changes": count, "diff": diff}


def pending_records(worker: EngineWorker) -> list[dict[str, Any]]:
    try:  # staged memory, skill and fact writes wait in the same dialog
        return [p.model_dump() for p in worker.pending().records()]
    except Exception as exc:
        log.warning("staged writes could not be read: %s", exc)
        return [p.model_dump() for p in worker.memory().pending()]


def memory_state(worker: EngineWorker) -> ChangeSet:
    """The memory panel: both files and how far they are from the session's snapshot."""
    return ChangeSet(memory=memory_entries(worker), snapshot=snapshot_of(worker))


def pending_state(worker: EngineWorker) -> ChangeSet:
    """The pending dialog: the queue, and the entries its previews are made against."""
    return ChangeSet(memory=memory_entries(worker), pending=pending_records(worker))


def pending_count_state(worker: EngineWorker) -> ChangeSet:
    """The pending badge: the queue."""
    return ChangeSet(pending=pending_records(worker))


def approval_state(worker: EngineWorker) -> ChangeSet:
    return ChangeSet(approval=bool(worker.memory().config.memory.write_approval))


def journey_state(worker: EngineWorker) -> ChangeSet:
    """The journey view: the entries its editor shows (it reloads the journey itself)."""
    return ChangeSet(memory=memory_entries(worker))


def sessions_state(worker: EngineWorker) -> ChangeSet:
    """The session list: the first page of the listing and how many sessions there are."""
    if worker.agent is None:
        return ChangeSet()
    page = session_page(worker, 0, SESSION_PAGE)
    return ChangeSet(sessions=page["cards"], sessions_total=page["total"])


def model_state(worker: EngineWorker) -> ChangeSet:
    agent = worker.agent
    if agent is None:
        return ChangeSet()
    notifications = agent.config.display.memory_notifications
    try:
        name, error = agent.provider.name, None
    except Exception as exc:  # not configured, or a key variable missing: say which
        name, error = None, str(exc)
    return ChangeSet(
        model={
            "configured": name is not None,
            # Nothing chosen: the built-in tiny model answers (the setup panel says so).
            "builtin": name is not None and bool(getattr(agent.provider, "builtin", False)),
            "name": name,
            "error": error,
            "notifications": notifications,
        }
    )


# -- the session list's pages (engine thread) ----------------------------------------------------


def session_card(info: Any) -> dict[str, Any]:
    """A stored session as the session list shows it."""
    return {
        "session_id": info.id,
        "title": info.title,
        "started_at": info.started_at,
        "ended_at": info.ended_at,
        "end_reason": info.end_reason,
        "parent_session_id": info.parent_session_id,
        "root_session_id": info.root_session_id,
        "message_count": info.message_count,
        "source": info.source,
    }


def session_page(worker: EngineWorker, offset: int, limit: int) -> dict[str, Any]:
    """Sessions ``offset … offset + limit`` newest first, and how many there are."""
    store = worker.need_agent().store
    infos = store.list_sessions(limit=limit, offset=offset)
    return {
        "offset": offset,
        "total": store.count_sessions(),
        "cards": [session_card(info) for info in infos],
    }


def session_signature(worker: EngineWorker) -> tuple[int, str | None, str | None]:
    """Enough to tell that another program added, removed or renamed the newest session."""
    store = worker.need_agent().store
    newest = store.list_sessions(limit=1)
    return (
        store.count_sessions(),
        newest[0].id if newest else None,
        newest[0].title if newest else None,
    )
