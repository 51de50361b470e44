"""Engine operations: every call that changes a home's state, with a typed result.

Each function here goes through the subsystem's one write path (``MemoryService``,
``PendingWrites``, ``SkillManager``, ``update_config``, the migration) and returns an
:class:`OpResult`: the subsystem's own answer (``result``, the dict the model's tools and the
CLI print) and the :class:`~engine.changes.Changes` the engine saw committed while it ran.

The change set is not guessed by the caller: it is what the subsystems published on
:data:`engine.changes.events` during the call (a staged memory write names the memory queue,
an applied one its file). Writes whose subsystem does not publish for itself (skills, facts,
config) are published here, so observers hear about every committed change exactly once,
from whichever caller it came.

A refused operation raises the subsystem's error (``MemoryToolError``, ``SkillError``, …);
nothing is published for it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from engine.changes import Changes, config_keys, events

if TYPE_CHECKING:
    from engine.home import Home
    from engine.memory.entries import Target
    from engine.memory.service import MemoryService
    from engine.migrate.openclaw import MigrationReport
    from engine.pending import PendingWrites
    from engine.skills.manage import SkillManager


class OpResult(BaseModel):
    """What an operation did: the subsystem's answer and what it changed."""

    model_config = ConfigDict(frozen=True)

    ok: bool = True
    # "applied", "staged", "unchanged", "rejected", … as the subsystem said; "done" if none.
    status: str = "done"
    message: str = ""
    changes: Changes = Changes()
    result: dict[str, Any] = {}

    @classmethod
    def of(cls, result: dict[str, Any], changes: Changes) -> OpResult:
        return cls(
            ok=bool(result.get("ok", True)),
            status=str(result.get("status") or "done"),
            message=str(result.get("message") or ""),
            changes=changes,
            result=result,
        )


def collected(call: Callable[[], dict[str, Any]]) -> OpResult:
    """Run ``call`` and return its answer with the changes published meanwhile."""
    with events.collect() as seen:
        result = call()
    return OpResult.of(result, seen.changes)


def _published(result: dict[str, Any], changes: Changes, initiator: str) -> OpResult:
    events.publish(changes, initiator)
    return OpResult.of(result, changes)


# -- memory ------------------------------------------------------------------------------------


def memory_write(
    service: MemoryService,
    target: Target,
    operations: object,
    *,
    origin: str = "foreground",
    by_hand: bool = False,
    precondition: Callable[[list[str]], None] | None = None,
) -> OpResult:
    """Add, replace or remove entries: lock, scanner, limits, approval gate, history.

    ``by_hand``: a person's edit (the memory panel), recorded with no session; otherwise the
    write belongs to the session the service serves."""
    from engine.memory.service import THIS_SESSION

    return collected(
        lambda: service.write(
            target,
            operations,
            origin=origin,  # type: ignore[arg-type]  # an Origin; checked by the store
            session_id=None if by_hand else THIS_SESSION,
            precondition=precondition,
        )
    )


def memory_undo(service: MemoryService, event_id: int | None = None) -> OpResult:
    return collected(lambda: service.undo(event_id))


def memory_set_approval(service: MemoryService, on: bool) -> OpResult:
    return collected(lambda: service.set_approval(on))


# -- staged writes of every subsystem ----------------------------------------------------------


def pending_approve(pending: PendingWrites, pending_id: str) -> OpResult:
    return collected(lambda: pending.approve(pending_id))


def pending_reject(pending: PendingWrites, pending_id: str) -> OpResult:
    return collected(lambda: pending.reject(pending_id))


def pending_settle_all(pending: PendingWrites, approve: bool) -> OpResult:
    """Every staged write approved or rejected; ``result["outcomes"]`` has each one's answer
    (failures included: a failed one stays queued)."""
    return collected(lambda: {"ok": True, "outcomes": pending.settle_all(approve)})


# -- the journey -------------------------------------------------------------------------------


def journey_edit(service: MemoryService, raw_id: str, text: str, **guard: Any) -> OpResult:
    from engine.journey import edit_chunk

    return collected(lambda: edit_chunk(service, raw_id, text, **guard))


def journey_delete(service: MemoryService, raw_id: str, **guard: Any) -> OpResult:
    from engine.journey import delete_chunk

    return collected(lambda: delete_chunk(service, raw_id, **guard))


# -- config, skills, migration -----------------------------------------------------------------


def config_update(home: Home, patch: dict[str, Any], *, initiator: str = "foreground") -> OpResult:
    """Write ``patch`` into config.yaml (only its keys change); ``result["config"]`` is the
    config as it now reads."""
    from engine.config import update_config

    config = update_config(home, patch)
    return _published(
        {"ok": True, "status": "applied", "config": config},
        Changes(config=config_keys(patch)),
        initiator,
    )


def skills_write(manager: SkillManager, arguments: object) -> OpResult:
    """One ``skill_manage`` request (create, patch, edit, delete, …), staged when the manager's
    author and the approval setting say so."""
    result = manager.run(arguments)
    staged = result.get("status") == "staged"
    changes = Changes(pending=frozenset({"skills"})) if staged else Changes(skills=True)
    return _published(result, changes, manager.origin)


def migration_apply(
    home: Home, report: MigrationReport, *, initiator: str = "foreground", **options: Any
) -> OpResult:
    """Carry out a migration plan; ``result["report"]`` is the report of what was done. A
    migration may bring memory, skills, sessions and config at once: every part is named."""
    from engine.migrate.openclaw import apply_migration

    done = apply_migration(home, report, **options)
    changes = Changes.everything() if done.changed else Changes()
    return _published({"ok": True, "status": "applied", "report": done}, changes, initiator)
