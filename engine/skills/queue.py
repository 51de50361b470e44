"""The skills' pending queue: staged skill changes in ``<home>/pending/skills``, in the memory
queue's record format.
"""

from __future__ import annotations

from typing import Any

from engine.home import Home
from engine.memory.approval import Origin, PendingQueue, PendingWrite
from engine.memory.errors import MemoryToolError
from engine.skills.store import (
    SkillError,
)


class SkillPendingQueue(PendingQueue):
    """The memory queue's records and rules, in ``<home>/pending/skills``."""

    SUBSYSTEM = "skills"

    def __init__(self, home: Home) -> None:
        super().__init__(home.pending_dir / self.SUBSYSTEM, self.SUBSYSTEM, home)

    def stage(
        self,
        action: str,
        summary: str,
        payload: dict[str, Any],
        origin: Origin,
        session_id: str | None = None,
    ) -> PendingWrite:
        try:
            return super().stage(action, summary, payload, origin, session_id)
        except MemoryToolError as exc:
            raise SkillError(exc.code, exc.message) from None

    def fetch(self, pending_id: str) -> PendingWrite:
        try:
            record = self.get(pending_id)
        except MemoryToolError as exc:
            raise SkillError(exc.code, exc.message) from None
        if record.subsystem != self.SUBSYSTEM:
            raise SkillError("not_found", f"pending write {pending_id!r} is not a skill write")
        return record
