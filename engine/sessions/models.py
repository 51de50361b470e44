"""Tables of the session store: sessions with lineage, and their messages.

Times are unix seconds (UTC) as floats, the same on SQLite and PostgreSQL, and cheap to compare.
"""

from __future__ import annotations

from sqlalchemy import Float, ForeignKey, Index, Integer, LargeBinary, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from engine.db import Base


class SessionRow(Base):
    __tablename__ = "sessions"
    __table_args__ = (
        Index("ix_sessions_started_at", "started_at"),
        Index("ix_sessions_root", "root_session_id"),
        Index("ix_sessions_parent", "parent_session_id"),
        # What a search reads of a session per match, without the row (migration 0005).
        Index("ix_sessions_lineage", "id", "root_session_id", "source"),
    )

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    source: Mapped[str] = mapped_column(String(32), default="cli")
    platform: Mapped[str | None] = mapped_column(String(32), nullable=True)
    title: Mapped[str | None] = mapped_column(Text, nullable=True)
    model: Mapped[str | None] = mapped_column(String(128), nullable=True)
    system_prompt: Mapped[str | None] = mapped_column(Text, nullable=True)
    parent_session_id: Mapped[str | None] = mapped_column(
        String(64), ForeignKey("sessions.id", ondelete="SET NULL"), nullable=True
    )
    # The first session of a lineage: compressed continuations share it, so search can show a
    # conversation once however many times it was compressed.
    root_session_id: Mapped[str] = mapped_column(String(64))
    started_at: Mapped[float] = mapped_column(Float)
    ended_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    end_reason: Mapped[str | None] = mapped_column(String(32), nullable=True)
    message_count: Mapped[int] = mapped_column(Integer, default=0)
    tool_call_count: Mapped[int] = mapped_column(Integer, default=0)
    input_tokens: Mapped[int] = mapped_column(Integer, default=0)
    output_tokens: Mapped[int] = mapped_column(Integer, default=0)


class MessageRow(Base):
    __tablename__ = "messages"
    __table_args__ = (Index("ix_messages_session_id", "session_id", "id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    session_id: Mapped[str] = mapped_column(
        String(64), ForeignKey("sessions.id", ondelete="CASCADE")
    )
    role: Mapped[str] = mapped_column(String(16))
    content: Mapped[str] = mapped_column(Text, default="")
    tool_call_id: Mapped[str | None] = mapped_column(String(128), nullable=True)
    tool_calls: Mapped[str | None] = mapped_column(Text, nullable=True)  # JSON
    tool_name: Mapped[str | None] = mapped_column(String(128), nullable=True)
    timestamp: Mapped[float] = mapped_column(Float)
    token_count: Mapped[int | None] = mapped_column(Integer, nullable=True)


class MessageVectorRow(Base):
    """A message's sentence vector for semantic search (engine/sessions/vectors.py): 384
    float16 values, or empty for a message with nothing to embed (migration 0008)."""

    __tablename__ = "message_vectors"

    message_id: Mapped[int] = mapped_column(
        Integer, ForeignKey("messages.id", ondelete="CASCADE"), primary_key=True,
        autoincrement=False,
    )  # fmt: skip
    vector: Mapped[bytes] = mapped_column(LargeBinary)
