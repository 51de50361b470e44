"""The memory change history: an append-only ``memory_events`` table.

The files stay the source of truth; this log records how they got there (every committed write,
every staging, approval and rejection, every external edit noticed) so the journey timeline can
replay it and ``undo`` can invert a change.
"""

from __future__ import annotations

import json
import time
from typing import Any

from pydantic import BaseModel
from sqlalchemy import (
    Engine,
    Float,
    Index,
    Integer,
    String,
    Text,
    bindparam,
    func,
    insert,
    select,
)
from sqlalchemy.orm import Mapped, Session, mapped_column

from engine.db import Base

COMMITTING_ACTIONS = ("add", "replace", "remove", "batch", "approved", "undo", "external_edit")


class MemoryEventRow(Base):
    __tablename__ = "memory_events"
    __table_args__ = (Index("ix_memory_events_target_id", "target", "id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    at: Mapped[float] = mapped_column(Float)  # unix seconds, UTC
    target: Mapped[str] = mapped_column(String(16))
    action: Mapped[str] = mapped_column(String(32))
    entry_before: Mapped[str | None] = mapped_column(Text, nullable=True)
    entry_after: Mapped[str | None] = mapped_column(Text, nullable=True)
    state_before: Mapped[str | None] = mapped_column(Text, nullable=True)
    state_after: Mapped[str | None] = mapped_column(Text, nullable=True)
    origin: Mapped[str] = mapped_column(String(32), default="foreground")
    session_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    pending_id: Mapped[str | None] = mapped_column(String(16), nullable=True)
    detail: Mapped[str | None] = mapped_column(Text, nullable=True)  # JSON


class MemoryEvent(BaseModel):
    id: int
    at: float
    target: str
    action: str
    entry_before: str | None
    entry_after: str | None
    state_before: str | None
    state_after: str | None
    origin: str
    session_id: str | None
    pending_id: str | None
    detail: dict[str, Any]

    @classmethod
    def of(cls, row: MemoryEventRow) -> MemoryEvent:
        return cls(
            id=row.id,
            at=row.at,
            target=row.target,
            action=row.action,
            entry_before=row.entry_before,
            entry_after=row.entry_after,
            state_before=row.state_before,
            state_after=row.state_after,
            origin=row.origin,
            session_id=row.session_id,
            pending_id=row.pending_id,
            detail=json.loads(row.detail) if row.detail else {},
        )


# Built once: these run on every memory write, where building statements showed in profiles.
_EVENTS = MemoryEventRow.__table__
_INSERT = insert(_EVENTS)
_LAST_STATE = (
    select(_EVENTS.c.state_after)
    .where(_EVENTS.c.target == bindparam("target"))
    .where(_EVENTS.c.action.in_(COMMITTING_ACTIONS))
    .order_by(_EVENTS.c.id.desc())
    .limit(1)
)


class History:
    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._writer = engine.execution_options(sqlite_immediate=True)

    def record(
        self,
        target: str,
        action: str,
        *,
        entry_before: str | None = None,
        entry_after: str | None = None,
        state_before: str | None = None,
        state_after: str | None = None,
        origin: str = "foreground",
        session_id: str | None = None,
        pending_id: str | None = None,
        detail: dict[str, Any] | None = None,
    ) -> int:
        values = {
            "at": time.time(),
            "target": target,
            "action": action,
            "entry_before": entry_before,
            "entry_after": entry_after,
            "state_before": state_before,
            "state_after": state_after,
            "origin": origin,
            "session_id": session_id,
            "pending_id": pending_id,
            "detail": json.dumps(detail, ensure_ascii=False) if detail else None,
        }
        # Core, not the ORM: the unit of work cost more than the insert itself.
        with self._writer.begin() as conn:
            return int(conn.execute(_INSERT, values).inserted_primary_key[0])

    def settled(self, pending_id: str) -> str | None:
        """``approved`` or ``rejected`` if the staged write ``pending_id`` was already settled
        (its file may have outlived a crash), else None."""
        stmt = (
            select(_EVENTS.c.action)
            .where(_EVENTS.c.pending_id == pending_id)
            .where(_EVENTS.c.action.in_(("approved", "rejected")))
            .limit(1)
        )
        with self._engine.connect() as conn:
            return conn.execute(stmt).scalar()

    def last_state(self, target: str) -> str | None:
        """The file text as of the newest recorded change of ``target``; None if never seen."""
        with self._engine.connect() as conn:
            return conn.execute(_LAST_STATE, {"target": target}).scalar()

    def events(
        self, target: str | None = None, limit: int | None = None, newest_first: bool = True
    ) -> list[MemoryEvent]:
        stmt = select(MemoryEventRow)
        if target:
            stmt = stmt.where(MemoryEventRow.target == target)
        order = MemoryEventRow.id.desc() if newest_first else MemoryEventRow.id.asc()
        stmt = stmt.order_by(order)
        if limit:
            stmt = stmt.limit(limit)
        with Session(self._engine) as session:
            return [MemoryEvent.of(row) for row in session.scalars(stmt)]

    def events_after(self, last_id: int) -> list[MemoryEvent] | None:
        """Events with an id above ``last_id``, oldest first; None when the history no longer
        reaches ``last_id`` (the database was replaced), so a reader replaying it incrementally
        must start over."""
        with Session(self._engine) as session:
            if last_id and (session.scalar(select(func.max(MemoryEventRow.id))) or 0) < last_id:
                return None
            stmt = select(MemoryEventRow).where(MemoryEventRow.id > last_id)
            return [MemoryEvent.of(r) for r in session.scalars(stmt.order_by(MemoryEventRow.id))]

    def get(self, event_id: int) -> MemoryEvent | None:
        with Session(self._engine) as session:
            row = session.get(MemoryEventRow, event_id)
            return MemoryEvent.of(row) if row else None

    def undoable(self) -> list[MemoryEvent]:
        """Committed changes not yet undone, newest first. External edits are not Cairn's to
        undo, and an undo is not itself undoable: undoing again steps further back."""
        events = self.events()
        undone = {e.detail.get("undoes") for e in events if e.action == "undo"}
        return [
            e
            for e in events
            if e.state_after is not None
            and e.action not in ("external_edit", "undo")
            and e.id not in undone
        ]
