"""Every staged write, whichever subsystem made it: one place to list, approve and reject.

Memory, skills and the fact store each keep their own queue folder under ``<home>/pending``
(one record format, :class:`engine.memory.approval.PendingWrite`); the window, the slash
commands and the CLI settle any of them through :class:`PendingWrites`, which finds the queue
that holds an id.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from engine.changes import Changes, events
from engine.errors import CairnError
from engine.home import Home
from engine.memory.approval import PendingQueue, PendingWrite
from engine.memory.service import MemoryService


class _Settles(Protocol):
    @property
    def queue(self) -> PendingQueue: ...

    def pending(self) -> list[PendingWrite]: ...
    def approve(self, pending_id: str) -> dict[str, Any]: ...
    def reject(self, pending_id: str) -> dict[str, Any]: ...


class PendingWrites:
    def __init__(self, home: Home, memory: MemoryService) -> None:
        from engine.plugins.holographic.pending import FactApprovals
        from engine.skills.manage import SkillManager

        self.home = home
        self.memory = memory
        # The person settling is the reviewer: approved skill writes are theirs. Memory's
        # config, already read, serves the skill manager too: a config.yaml broken since must
        # not keep memory's own records from being settled.
        skills = SkillManager(home, memory.config, author="user")
        self._all: list[_Settles] = [memory, skills, FactApprovals(home)]

    def _owners(self) -> list[_Settles]:
        return self._all

    def records(self) -> list[PendingWrite]:
        """Every readable staged write, oldest first."""
        records = [r for owner in self._owners() for r in owner.pending()]
        return sorted(records, key=lambda r: (r.created_at, r.id))

    def invalid(self) -> list[dict[str, str]]:
        """Records no queue can read, each with its subsystem and the reason."""
        return [
            {**bad, "subsystem": owner.queue.subsystem}
            for owner in self._owners()
            for bad in owner.queue.invalid()
        ]

    def _owner(self, pending_id: str) -> _Settles:
        # The queue whose folder holds the file, readable or not (an unreadable one is then
        # refused or cleared in its own words).
        for owner in self._owners():
            if (
                PendingQueue.valid_id(pending_id)
                and (owner.queue.folder / f"{pending_id}.json").exists()
            ):
                return owner
        return self.memory  # says not_found in its words

    def approve(self, pending_id: str) -> dict[str, Any]:
        owner = self._owner(pending_id)
        return self._announced(owner, owner.approve(pending_id), applied=True)

    def reject(self, pending_id: str) -> dict[str, Any]:
        owner = self._owner(pending_id)
        return self._announced(owner, owner.reject(pending_id), applied=False)

    def _announced(
        self, owner: _Settles, result: dict[str, Any], *, applied: bool
    ) -> dict[str, Any]:
        # Memory publishes its own changes (its writes come from more places than this);
        # the skill library and the fact store are announced here, once settled.
        subsystem = owner.queue.subsystem
        if owner is not self.memory:
            changes = Changes(pending=frozenset({subsystem}))
            if applied and subsystem == "skills":
                changes = changes | Changes(skills=True)
            elif applied:
                changes = changes | Changes(facts=True)
            events.publish(changes, "foreground")
        return result

    def settle_all(self, approve: bool) -> list[dict[str, Any]]:
        """Approve or reject every staged write, memory's first (which also reports its
        invalid records as skipped), then the others oldest first; each outcome, failures
        included (a failed one stays queued)."""
        outcomes = self.memory.settle_all(approve)
        for owner in self._owners()[1:]:
            for record in owner.pending():
                settle: Callable[[str], dict[str, Any]] = owner.approve if approve else owner.reject
                try:
                    outcomes.append(self._announced(owner, settle(record.id), applied=approve))
                except CairnError as exc:  # a skills or fact refusal: reported, the rest go on
                    outcomes.append(exc.to_dict())
                except Exception as exc:
                    outcomes.append({"ok": False, "error": "internal", "message": str(exc)})
        return outcomes
