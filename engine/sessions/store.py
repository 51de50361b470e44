"""The session store: sessions and their messages, written as they happen.

Every write is one short transaction that begins IMMEDIATE (so concurrent writers queue on the
lock instead of failing half-way) and is retried with jitter when the database stays busy.
"""

from __future__ import annotations

import json
import random
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar, cast

from pydantic import BaseModel
from sqlalchemy import Connection, Engine, Table, delete, func, insert, select, update
from sqlalchemy.exc import OperationalError

from engine.config import Config, load_config
from engine.db import open_engine
from engine.errors import CairnError
from engine.home import Home
from engine.sessions.models import MessageRow, SessionRow

T = TypeVar("T")
ID_CHUNK = 500  # ids per IN (...) look-up, well under SQLite's parameter limit
ROLES = ("system", "user", "assistant", "tool")
WRITE_ATTEMPTS = 6

# Tables, as SQLAlchemy's insert/update/delete want them typed (``__table__`` is declared as a
# FromClause).
sessions_t = cast(Table, SessionRow.__table__)
messages_t = cast(Table, MessageRow.__table__)


class SessionNotFound(CairnError):
    """No stored session has that id or id prefix (``not_found``), or several do
    (``ambiguous``)."""


class SessionStoreError(RuntimeError):
    pass


class SessionInfo(BaseModel):
    id: str
    source: str
    platform: str | None = None
    title: str | None = None
    model: str | None = None
    system_prompt: str | None = None
    parent_session_id: str | None = None
    root_session_id: str
    started_at: float
    ended_at: float | None = None
    end_reason: str | None = None
    message_count: int = 0
    tool_call_count: int = 0
    input_tokens: int = 0
    output_tokens: int = 0


class Message(BaseModel):
    id: int
    session_id: str
    role: str
    content: str
    tool_call_id: str | None = None
    tool_calls: list[Any] | None = None
    tool_name: str | None = None
    timestamp: float
    token_count: int | None = None


class NewMessage(BaseModel):
    """A message to append; ``timestamp`` defaults to now."""

    role: str
    content: str = ""
    tool_call_id: str | None = None
    tool_calls: list[Any] | None = None
    tool_name: str | None = None
    timestamp: float | None = None
    token_count: int | None = None


def storable(value: str | None) -> str | None:
    """PostgreSQL cannot store NUL in text; both backends store U+FFFD instead, so they hold
    the same transcript."""
    return value.replace("\x00", "\ufffd") if value else value


def _message(row: Any) -> Message:
    data = dict(row._mapping)
    data["tool_calls"] = json.loads(data["tool_calls"]) if data["tool_calls"] else None
    return Message.model_validate(data)


def _session(row: Any) -> SessionInfo:
    return SessionInfo.model_validate(dict(row._mapping))


class SessionStore:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._writer = engine.execution_options(sqlite_immediate=True)

    @property
    def writer(self) -> Engine:
        """The engine for writes (on SQLite, transactions that take the write lock at once)."""
        return self._writer

    @classmethod
    def open(cls, home: Home, config: Config | None = None) -> SessionStore:
        """The store ``home`` is configured for: its embedded SQLite database, or the server
        named by ``database.url``."""
        config = config if config is not None else load_config(home)
        return cls(open_engine(home, config.database.url))

    # -- writing ---------------------------------------------------------------------

    def _write(self, work: Callable[[Connection], T]) -> T:
        for attempt in range(WRITE_ATTEMPTS):
            try:
                with self._writer.connect() as conn, conn.begin():
                    return work(conn)
            except OperationalError as exc:
                busy = "locked" in str(exc) or "busy" in str(exc)
                if not busy or attempt == WRITE_ATTEMPTS - 1:
                    raise
                time.sleep(random.uniform(0.01, 0.05) * (2**attempt))
        raise AssertionError("unreachable")

    def create_session(
        self,
        *,
        session_id: str | None = None,
        source: str = "cli",
        platform: str | None = None,
        title: str | None = None,
        model: str | None = None,
        system_prompt: str | None = None,
        parent_session_id: str | None = None,
        started_at: float | None = None,
    ) -> SessionInfo:
        sid = session_id or uuid.uuid4().hex

        def work(conn: Connection) -> SessionInfo:
            root = sid
            if parent_session_id is not None:
                parent_root = conn.scalar(
                    select(sessions_t.c.root_session_id).where(sessions_t.c.id == parent_session_id)
                )
                if parent_root is None:
                    raise SessionStoreError(f"parent session {parent_session_id!r} not found")
                root = str(parent_root)
            values = {
                "id": sid,
                "source": source,
                "platform": platform,
                "title": storable(title),
                "model": model,
                "system_prompt": storable(system_prompt),
                "parent_session_id": parent_session_id,
                "root_session_id": root,
                "started_at": time.time() if started_at is None else started_at,
                "message_count": 0,
                "tool_call_count": 0,
                "input_tokens": 0,
                "output_tokens": 0,
            }
            conn.execute(insert(sessions_t).values(**values))
            return SessionInfo.model_validate(values)

        return self._write(work)

    def append(self, session_id: str, messages: Sequence[NewMessage]) -> list[int]:
        """Append messages to a session in one transaction; their ids, in order."""
        return self._write(lambda conn: self._append(conn, session_id, messages))

    def add_message(self, session_id: str, role: str, content: str = "", **fields: Any) -> int:
        return self.append(session_id, [NewMessage(role=role, content=content, **fields)])[0]

    def _append(
        self, conn: Connection, session_id: str, messages: Sequence[NewMessage]
    ) -> list[int]:
        for message in messages:
            if message.role not in ROLES:
                raise SessionStoreError(f"unknown role {message.role!r}")
        tool_calls = sum(len(m.tool_calls or []) for m in messages)
        # Counters first: it proves the session exists before any message is written.
        updated = conn.execute(
            update(sessions_t)
            .where(sessions_t.c.id == session_id)
            .values(
                message_count=sessions_t.c.message_count + len(messages),
                tool_call_count=sessions_t.c.tool_call_count + tool_calls,
            )
        )
        if updated.rowcount != 1:
            raise SessionStoreError(f"session {session_id!r} not found")
        now = time.time()
        ids = []
        for message in messages:
            result = conn.execute(
                insert(messages_t).values(
                    session_id=session_id,
                    role=message.role,
                    content=storable(message.content),
                    tool_call_id=message.tool_call_id,
                    tool_calls=json.dumps(message.tool_calls) if message.tool_calls else None,
                    tool_name=message.tool_name,
                    timestamp=now if message.timestamp is None else message.timestamp,
                    token_count=message.token_count,
                )
            )
            key = result.inserted_primary_key
            assert key is not None  # a single-row INSERT always has one
            ids.append(int(key[0]))
        return ids

    def end_session(self, session_id: str, reason: str, ended_at: float | None = None) -> None:
        self._write(
            lambda conn: conn.execute(
                update(sessions_t)
                .where(sessions_t.c.id == session_id)
                .values(ended_at=time.time() if ended_at is None else ended_at, end_reason=reason)
            )
        )

    def rename_session(self, session_id: str, title: str | None) -> bool:
        """Give a session a new title (None or blank: untitled); False if there is none."""
        clean = " ".join((title or "").split())[:200] or None
        return self._write(
            lambda conn: (
                conn.execute(
                    update(sessions_t)  # type: ignore[arg-type]
                    .where(sessions_t.c.id == session_id)
                    .values(title=clean)
                ).rowcount
                == 1
            )
        )

    def add_usage(self, session_id: str, input_tokens: int, output_tokens: int) -> None:
        """Add one model call's token counts to the session's counters."""
        self._write(
            lambda conn: conn.execute(
                update(sessions_t)
                .where(sessions_t.c.id == session_id)
                .values(
                    input_tokens=sessions_t.c.input_tokens + max(0, input_tokens),
                    output_tokens=sessions_t.c.output_tokens + max(0, output_tokens),
                )
            )
        )

    def delete_session(self, session_id: str) -> bool:
        """Delete a session and its messages; its children keep their own transcripts."""

        def work(conn: Connection) -> bool:
            conn.execute(delete(messages_t).where(messages_t.c.session_id == session_id))
            conn.execute(
                update(sessions_t)
                .where(sessions_t.c.parent_session_id == session_id)
                .values(parent_session_id=None)
            )
            return (
                conn.execute(delete(sessions_t).where(sessions_t.c.id == session_id)).rowcount == 1
            )

        return self._write(work)

    # -- reading ---------------------------------------------------------------------

    def get_session(self, session_id: str) -> SessionInfo | None:
        with self.engine.connect() as conn:
            row = conn.execute(select(sessions_t).where(sessions_t.c.id == session_id)).first()
        return _session(row) if row else None

    def has_sessions(self, ids: Iterable[str]) -> set[str]:
        """Which of ``ids`` are stored; asked in chunks (SQLite bounds a statement's
        parameters, and another program's store may hold tens of thousands)."""
        wanted = list(ids)
        found: set[str] = set()
        with self.engine.connect() as conn:
            for start in range(0, len(wanted), ID_CHUNK):
                chunk = wanted[start : start + ID_CHUNK]
                rows = conn.execute(select(sessions_t.c.id).where(sessions_t.c.id.in_(chunk)))
                found.update(r[0] for r in rows)
        return found

    def get_sessions(self, ids: Iterable[str]) -> dict[str, SessionInfo]:
        """The stored sessions among ``ids``, by id; asked in chunks like :meth:`has_sessions`."""
        wanted = sorted(set(ids))
        found: dict[str, SessionInfo] = {}
        with self.engine.connect() as conn:
            for start in range(0, len(wanted), ID_CHUNK):
                chunk = wanted[start : start + ID_CHUNK]
                for row in conn.execute(select(sessions_t).where(sessions_t.c.id.in_(chunk))):
                    found[row.id] = _session(row)
        return found

    def resolve(self, given: str) -> SessionInfo:
        """The session ``given`` names: exactly, or by a unique prefix of its id (the short
        ids lists show). Raises :class:`SessionNotFound` (``not_found`` or ``ambiguous``)."""
        info = self.get_session(given)
        if info is not None:
            return info
        if given:
            with self.engine.connect() as conn:
                ids = list(
                    conn.scalars(
                        select(sessions_t.c.id)
                        .where(sessions_t.c.id > given, sessions_t.c.id < given + "\U0010ffff")
                        .order_by(sessions_t.c.id)
                        .limit(6)
                    )
                )
            if len(ids) == 1:
                found = self.get_session(ids[0])
                if found is not None:
                    return found
            if len(ids) > 1:
                shown = ", ".join(ids[:5]) + (", ..." if len(ids) > 5 else "")
                raise SessionNotFound("ambiguous", f"{given!r} matches several sessions: {shown}")
        raise SessionNotFound("not_found", f"no session {given!r}")

    def list_sessions(
        self, limit: int = 20, offset: int = 0, source: str | None = None
    ) -> list[SessionInfo]:
        stmt = select(sessions_t).order_by(sessions_t.c.started_at.desc(), sessions_t.c.id)
        if source:
            stmt = stmt.where(sessions_t.c.source == source)
        with self.engine.connect() as conn:
            return [_session(r) for r in conn.execute(stmt.limit(limit).offset(offset))]

    def count_sessions(self) -> int:
        with self.engine.connect() as conn:
            return int(conn.scalar(select(func.count()).select_from(sessions_t)) or 0)

    def messages(
        self,
        session_id: str,
        *,
        after_id: int | None = None,
        before_id: int | None = None,
        limit: int | None = None,
        newest_first: bool = False,
    ) -> list[Message]:
        stmt = select(messages_t).where(messages_t.c.session_id == session_id)
        if after_id is not None:
            stmt = stmt.where(messages_t.c.id > after_id)
        if before_id is not None:
            stmt = stmt.where(messages_t.c.id < before_id)
        order = messages_t.c.id.desc() if newest_first else messages_t.c.id.asc()
        stmt = stmt.order_by(order)
        if limit is not None:
            stmt = stmt.limit(limit)
        with self.engine.connect() as conn:
            return [_message(r) for r in conn.execute(stmt)]

    def message(self, message_id: int) -> Message | None:
        with self.engine.connect() as conn:
            row = conn.execute(select(messages_t).where(messages_t.c.id == message_id)).first()
        return _message(row) if row else None

    def lineage(self, session_id: str) -> list[SessionInfo]:
        """Every session sharing ``session_id``'s lineage root, oldest first."""
        with self.engine.connect() as conn:
            root = conn.scalar(
                select(sessions_t.c.root_session_id).where(sessions_t.c.id == session_id)
            )
            if root is None:
                return []
            rows = conn.execute(
                select(sessions_t)
                .where(sessions_t.c.root_session_id == root)
                .order_by(sessions_t.c.started_at)
            )
            return [_session(r) for r in rows]
