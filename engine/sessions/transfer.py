"""Sessions in and out as JSONL: one session a line, with its messages.

    {"id": "...", "source": "cli", "title": "...", "started_at": 1700000000.0,
     "messages": [{"role": "user", "content": "...", "timestamp": 1700000001.5}, ...]}

Optional session fields: ``parent_session_id``, ``model``, ``platform``, ``system_prompt``,
``ended_at``, ``end_reason``, ``input_tokens``, ``output_tokens``. Optional message fields:
``tool_name``, ``tool_calls`` (a list), ``tool_call_id``, ``token_count``. Times are ISO 8601
(a time without a zone is UTC) or unix seconds; fields not listed here are ignored.

Import streams: lines are read one at a time and written in batches, each batch one
transaction of bulk inserts, whose messages are indexed together at the end of the batch
rather than by a trigger per row (bulk.py); a batch is committed whole or not at all. The
trigram and word-pair indexes are left to a catch-up (backlog.py), run before the import
returns when the store is then ``backlog.INLINE`` messages behind or fewer: every message is
found meanwhile. A malformed
line is reported with its number and the rest of the file is still imported. A session whose id
is already stored is skipped, so importing the same file twice adds nothing. A child whose
parent comes later in the file is linked once the whole file is in.

Export writes the same format, parents before their children, times as unix seconds (exact),
so export → import into an empty home → export gives the same lines.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime
from typing import IO, Annotated, Any, Literal, TextIO

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError
from sqlalchemy import Connection, insert, select, update
from sqlalchemy.exc import DataError, IntegrityError

from engine import fsutil
from engine.sessions import backlog, maintenance
from engine.sessions.bulk import deferred_indexing
from engine.sessions.store import SessionStore, messages_t, sessions_t, storable

DEFAULT_BATCH_SIZE = 500
# An import this large leaves the full-text indexes in many segments: merge them afterwards.
OPTIMIZE_AFTER = 50_000
# A batch is also cut when it holds this many messages, so a file of a few huge sessions
# does not sit in memory all at once.
MAX_BATCH_MESSAGES = 20_000
MAX_REPORTED_ERRORS = 1000
# Unix seconds beyond the year 9999 are almost certainly milliseconds.
MAX_TIMESTAMP = 253_402_300_800.0
_ID_CHUNK = 500  # ids per IN (...) query, well under SQLite's variable limit


def _timestamp(value: Any) -> float:
    if isinstance(value, bool):
        raise ValueError("expected ISO 8601 text or unix seconds, got a boolean")
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(
                f"not an ISO 8601 time or unix seconds: {value[:40]!r} "
                "(e.g. 2026-01-31T09:30:00Z or 1769851800)"
            ) from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        seconds = moment.timestamp()
    else:
        raise ValueError("expected ISO 8601 text or unix seconds")
    if not math.isfinite(seconds):
        raise ValueError("time must be a finite number")
    if seconds < 0:
        raise ValueError(f"{str(value)[:40]} is before 1970: a session time cannot be negative")
    if seconds >= MAX_TIMESTAMP:
        raise ValueError(f"{value} is past the year 9999: unix seconds expected, not milliseconds")
    return seconds


Timestamp = Annotated[float, BeforeValidator(_timestamp)]
Role = Literal["system", "user", "assistant", "tool"]


class MessageIn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    role: Role
    content: str | None = ""
    timestamp: Timestamp
    tool_name: str | None = Field(default=None, max_length=128)
    tool_calls: list[Any] | None = None
    tool_call_id: str | None = Field(default=None, max_length=128)
    token_count: int | None = None


class SessionIn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    id: str = Field(min_length=1, max_length=64)
    source: str = Field(default="import", min_length=1, max_length=32)
    title: str | None = None
    started_at: Timestamp
    messages: list[MessageIn]
    parent_session_id: str | None = Field(default=None, min_length=1, max_length=64)
    model: str | None = Field(default=None, max_length=128)
    platform: str | None = Field(default=None, max_length=32)
    system_prompt: str | None = None
    ended_at: Timestamp | None = None
    end_reason: str | None = Field(default=None, max_length=32)
    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)


class LineError(BaseModel):
    line: int
    message: str


class ImportReport(BaseModel):
    sessions_imported: int = 0
    messages_imported: int = 0
    sessions_skipped: int = 0  # already stored (or earlier in the same file)
    lines_read: int = 0
    parents_missing: int = 0  # children imported without the parent they named
    errors_total: int = 0
    errors: list[LineError] = Field(default_factory=list)  # the first MAX_REPORTED_ERRORS
    seconds: float = 0.0
    # Messages the substring and word-pair indexes do not hold yet (backlog.py): found all the
    # same, substrings more slowly, until ``cairn sessions reindex --catch-up`` or a cron tick
    # (the app's own, or ``cairn cron tick``) has indexed them.
    index_backlog: int = 0

    @property
    def messages_per_second(self) -> float:
        return self.messages_imported / self.seconds if self.seconds > 0 else 0.0


def _location(loc: Sequence[int | str]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part.startswith(("function-", "literal[", "nullable[")) or part in (
            "str",
            "float",
            "int",
            "list[any]",
        ):
            continue  # pydantic's name for a union branch, not a field
        else:
            out += f".{part}" if out else part
    return out


def describe(exc: ValidationError, shown: int = 3) -> str:
    """A validation failure in one line, naming the fields, without echoing the input."""
    errors = exc.errors(include_url=False, include_input=False, include_context=False)
    parts = []
    for error in errors[:shown]:
        where = _location(error["loc"])
        text = error["msg"].removeprefix("Value error, ")
        if error["type"] == "json_invalid":
            text = text.replace("Invalid JSON", "not valid JSON")
        elif error["type"] == "model_type":
            text = "a line must be a JSON object (one session)"
        parts.append(f"{where}: {text}" if where else text)
    if len(errors) > shown:
        parts.append(f"and {len(errors) - shown} more")
    return "; ".join(parts)


class _Importer:
    def __init__(self, store: SessionStore, report: ImportReport) -> None:
        self.store = store
        self.report = report
        self.late_parents: list[tuple[str, str]] = []  # (child, parent) to link at the end

    def error(self, line: int, message: str) -> None:
        self.report.errors_total += 1
        if len(self.report.errors) < MAX_REPORTED_ERRORS:
            self.report.errors.append(LineError(line=line, message=message))

    def flush(self, batch: list[tuple[int, SessionIn]]) -> None:
        if not batch:
            return
        try:
            self._commit(batch)
        except (IntegrityError, DataError):
            # Something the checks did not foresee; find the line(s) at fault one by one.
            for item in batch:
                try:
                    self._commit([item])
                except (IntegrityError, DataError) as exc:
                    detail = str(exc.orig) if exc.orig is not None else str(exc)
                    self.error(item[0], f"the database refused this session: {detail}")

    def _commit(self, batch: list[tuple[int, SessionIn]]) -> None:
        counts, late = self.store._write(lambda conn: self._insert(conn, batch))
        self.report.sessions_imported += counts[0]
        self.report.messages_imported += counts[1]
        self.report.sessions_skipped += counts[2]
        self.late_parents.extend(late)

    @staticmethod
    def _roots(conn: Connection, ids: Iterable[str]) -> dict[str, str]:
        wanted = list(dict.fromkeys(ids))
        found: dict[str, str] = {}
        for start in range(0, len(wanted), _ID_CHUNK):
            chunk = wanted[start : start + _ID_CHUNK]
            rows = conn.execute(
                select(sessions_t.c.id, sessions_t.c.root_session_id).where(
                    sessions_t.c.id.in_(chunk)
                )
            )
            found.update((r[0], r[1]) for r in rows)
        return found

    def _insert(
        self, conn: Connection, batch: list[tuple[int, SessionIn]]
    ) -> tuple[tuple[int, int, int], list[tuple[str, str]]]:
        stored = self._roots(
            conn,
            [s.id for _, s in batch]
            + [s.parent_session_id for _, s in batch if s.parent_session_id],
        )
        existing = set(stored) & {s.id for _, s in batch}
        new_roots: dict[str, str] = {}
        session_rows: list[dict[str, Any]] = []
        message_rows: list[dict[str, Any]] = []
        late: list[tuple[str, str]] = []
        skipped = 0
        for _, s in batch:
            if s.id in existing or s.id in new_roots:
                skipped += 1
                continue
            parent, root = s.parent_session_id, s.id
            if parent is not None:
                parent_root = new_roots.get(parent) or stored.get(parent)
                if parent_root is None:
                    late.append((s.id, parent))
                    parent = None
                else:
                    root = parent_root
            new_roots[s.id] = root
            tool_calls = 0
            for m in s.messages:
                tool_calls += len(m.tool_calls or ())
                message_rows.append(
                    {
                        "session_id": s.id,
                        "role": m.role,
                        "content": storable(m.content or ""),
                        "tool_call_id": m.tool_call_id,
                        "tool_calls": json.dumps(m.tool_calls) if m.tool_calls else None,
                        "tool_name": m.tool_name,
                        "timestamp": m.timestamp,
                        "token_count": m.token_count,
                    }
                )
            session_rows.append(
                {
                    "id": s.id,
                    "source": s.source,
                    "platform": s.platform,
                    "title": storable(s.title),
                    "model": s.model,
                    "system_prompt": storable(s.system_prompt),
                    "parent_session_id": parent,
                    "root_session_id": root,
                    "started_at": s.started_at,
                    "ended_at": s.ended_at,
                    "end_reason": s.end_reason,
                    "message_count": len(s.messages),
                    "tool_call_count": tool_calls,
                    "input_tokens": s.input_tokens,
                    "output_tokens": s.output_tokens,
                }
            )
        if session_rows:
            conn.execute(insert(sessions_t), session_rows)
        if message_rows:
            with deferred_indexing(conn):
                conn.execute(insert(messages_t), message_rows)
        return (len(session_rows), len(message_rows), skipped), late

    def link_late_parents(self) -> None:
        """Children seen before their parent: link those whose parent arrived later."""
        if not self.late_parents:
            return

        def work(conn: Connection) -> int:
            missing = 0
            for child, parent in self.late_parents:
                parent_root = self._roots(conn, [parent]).get(parent)
                if parent_root is None or parent_root == child:  # absent, or a cycle
                    missing += 1
                    continue
                conn.execute(
                    update(sessions_t)
                    .where(sessions_t.c.id == child)
                    .values(parent_session_id=parent)
                )
                # The child was its own root, so its whole subtree joins the parent's lineage.
                conn.execute(
                    update(sessions_t)
                    .where(sessions_t.c.root_session_id == child)
                    .values(root_session_id=parent_root)
                )
            return missing

        self.report.parents_missing += self.store._write(work)


# One session per line: the longest a real one gets (thousands of long messages) is a few
# megabytes; a line past this is not a session (``/dev/zero``, a binary file) and reading on
# would only grow until memory runs out.
MAX_LINE_BYTES = 64 * 1024 * 1024


def bounded_lines(handle: IO[bytes], limit: int = MAX_LINE_BYTES) -> Iterator[bytes]:
    """The lines of an export file, none longer than ``limit``: see :func:`fsutil.bounded_lines`."""
    return fsutil.bounded_lines(handle, limit, "session in a JSONL export")


def import_sessions(
    store: SessionStore,
    lines: Iterable[str | bytes],
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    progress: Callable[[int, int], None] | None = None,
) -> ImportReport:
    """Import JSONL sessions streamed from ``lines`` (text or bytes, one session each).

    ``progress(lines_read, messages_imported)`` is called after every committed batch.
    """
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    started = time.perf_counter()
    report = ImportReport()
    importer = _Importer(store, report)
    batch: list[tuple[int, SessionIn]] = []
    batch_messages = 0
    merging_less = False
    try:
        for number, raw in enumerate(lines, start=1):
            report.lines_read = number
            if number == 1:
                raw = (
                    raw.removeprefix(b"\xef\xbb\xbf")
                    if isinstance(raw, bytes)
                    else raw.removeprefix("\ufeff")
                )
            if not raw.strip():
                continue  # blank lines are allowed, as in most JSONL writers' output
            try:
                session = SessionIn.model_validate_json(raw)
            except ValidationError as exc:
                importer.error(number, describe(exc))
                continue
            batch.append((number, session))
            batch_messages += len(session.messages)
            if len(batch) >= batch_size or batch_messages >= MAX_BATCH_MESSAGES:
                importer.flush(batch)
                batch, batch_messages = [], 0
                if not merging_less:
                    # More than a batch: merge less along the way (merged whole at the end
                    # when it is large, put back to the usual otherwise).
                    maintenance.set_automerge(store, maintenance.BULK_AUTOMERGE)
                    merging_less = True
                if progress is not None:
                    progress(number, report.messages_imported)
        importer.flush(batch)
        importer.link_late_parents()
        if store.engine.dialect.name == "sqlite":
            with store.engine.connect() as conn:
                behind = backlog.left(conn)
            if behind <= backlog.INLINE:  # a second or two: not worth leaving for later
                report.index_backlog = maintenance.catch_up(store).left
            else:
                report.index_backlog = behind
        if report.messages_imported >= OPTIMIZE_AFTER:
            maintenance.optimize(store)  # which also merges as usual again
            merging_less = False
    finally:
        if merging_less:  # not merged at the end (smaller, or stopped by an error): as usual
            maintenance.set_automerge(store, maintenance.AUTOMERGE)
    if progress is not None:
        progress(report.lines_read, report.messages_imported)
    report.seconds = time.perf_counter() - started
    return report


# -- export ----------------------------------------------------------------------------------

_SESSION_OPTIONAL = (
    "parent_session_id",
    "model",
    "platform",
    "system_prompt",
    "ended_at",
    "end_reason",
)
_MESSAGE_OPTIONAL = ("tool_name", "tool_calls", "tool_call_id", "token_count")


def _parents_first(rows: Iterable[tuple[str, str | None]]) -> Iterator[str]:
    """Session ids in the given order, except that a parent always comes before its child."""
    ordered = list(rows)
    parent_of = dict(ordered)
    done: set[str] = set()
    for sid, _ in ordered:
        chain = []
        current: str | None = sid
        while current is not None and current in parent_of and current not in done:
            if current in chain:  # a cycle: stop climbing
                break
            chain.append(current)
            current = parent_of[current]
        for item in reversed(chain):
            done.add(item)
            yield item


def _session_header(row: Any) -> dict[str, Any]:
    header: dict[str, Any] = {
        "id": row.id,
        "source": row.source,
        "title": row.title,
        "started_at": row.started_at,
    }
    for name in _SESSION_OPTIONAL:
        value = getattr(row, name)
        if value is not None:
            header[name] = value
    for name in ("input_tokens", "output_tokens"):
        if getattr(row, name):
            header[name] = getattr(row, name)
    return header


def _message_out(row: Any) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": row.role,
        "content": row.content,
        "timestamp": row.timestamp,
    }
    for name in _MESSAGE_OPTIONAL:
        value = getattr(row, name)
        if name == "tool_calls" and value:
            value = json.loads(value)
        if value is not None:
            message[name] = value
    return message


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def export_sessions(
    store: SessionStore, out: TextIO, session_ids: Iterable[str] | None = None
) -> int:
    """Write sessions as JSONL to ``out`` (all of them, or ``session_ids``); how many."""
    wanted = None if session_ids is None else list(dict.fromkeys(session_ids))
    written = 0
    with store.engine.connect() as conn, conn.begin():  # one snapshot for the whole export
        stmt = select(sessions_t.c.id, sessions_t.c.parent_session_id).order_by(
            sessions_t.c.started_at, sessions_t.c.id
        )
        if wanted is None:
            rows = [(r[0], r[1]) for r in conn.execute(stmt)]
        else:
            rows = []
            for start in range(0, len(wanted), _ID_CHUNK):
                chunk = wanted[start : start + _ID_CHUNK]
                rows += [(r[0], r[1]) for r in conn.execute(stmt.where(sessions_t.c.id.in_(chunk)))]
        for sid in _parents_first(rows):
            row = conn.execute(select(sessions_t).where(sessions_t.c.id == sid)).one()
            # Written piece by piece: a session of many messages is never one string in memory.
            out.write(_dumps(_session_header(row))[:-1] + ', "messages": [')
            messages = conn.execute(
                select(messages_t).where(messages_t.c.session_id == sid).order_by(messages_t.c.id)
            )
            for index, message in enumerate(messages):
                out.write((", " if index else "") + _dumps(_message_out(message)))
            out.write("]}\n")
            written += 1
    return written
