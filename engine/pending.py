"""Every staged write, whichever subsystem made it: one place to list, approve and reject.

Memory, skills and the fact store each keep their own queue folder under ``<home>/pending``
(one record format, :class:`engine.memory.approval.PendingWrite`); the window, the slash
commands and the CLI settle any of them through :class:`PendingWrites`, which finds the queue
that holds an id.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from engine.config import load_config
from engine.home import Home
from engine.memory.approval import PendingWrite
from engine.memory.service import MemoryService


class _Settles(Protocol):
    def pending(self) -> list[PendingWrite]: ...
    def approve(self, pending_id: str) -> dict[str, Any]: ...
    def reject(self, pending_id: str) -> dict[str, Any]: ...


class PendingWrites:
    def __init__(self, home: Home, memory: MemoryService) -> None:
        self.home = home
        self.memory = memory

    def _owners(self) -> list[_Settles]:
        from engine.plugins.holographic.pending import FactApprovals
        from engine.skills.manage import SkillManager

        # The person settling is the reviewer: approved skill writes are theirs.
        skills = SkillManager(self.home, load_config(self.home), author="user")
        return [self.memory, skills, FactApprovals(self.home)]

    def records(self) -> list[PendingWrite]:
        """Every readable staged write, oldest first."""
        records = [r for owner in self._owners() for r in owner.pending()]
        return sorted(records, key=lambda r: (r.created_at, r.id))

    def _owner(self, pending_id: str) -> _Settles:
        for owner in self._owners():
            if any(r.id == pending_id for r in owner.pending()):
                return owner
        return self.memory  # says not_found (or why the record is unreadable) in its words

    def approve(self, pending_id: str) -> dict[str, Any]:
        return self._owner(pending_id).approve(pending_id)

    def reject(self, pending_id: str) -> dict[str, Any]:
        return self._owner(pending_id).reject(pending_id)

    def settle_all(self, approve: bool) -> list[dict[str, Any]]:
        """Approve or reject every staged write, memory's first (which also reports its
        invalid records as skipped), then the others oldest first; each outcome, failures
        included (a failed one stays queued)."""
        outcomes = self.memory.settle_all(approve)
        for owner in self._owners()[1:]:
            for record in owner.pending():
                settle: Callable[[str], dict[str, Any]] = owner.approve if approve else owner.reject
                try:
                    outcomes.append(settle(record.id))
                except Exception as exc:  # a skills or fact error: reported, the rest go on
                    to_dict = getattr(exc, "to_dict", None)
                    outcomes.append(
                        to_dict()
                        if callable(to_dict)
                        else {"ok": False, "error": "internal", "message": str(exc)}
                    )
        return outcomes
