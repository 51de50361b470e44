"""``session_search``: real messages from past sessions, never summaries.

Modes:
- ``discover``: a query → up to ``limit`` conversations (3 by default, 10 at most), best first,
  each with the matching message, a snippet, the messages around it and the session's first
  and last messages. A conversation compressed into several sessions shows once; the caller's
  own conversation is left out.
- ``scroll``: the messages around an anchor message of one session, either direction.
- ``read``: a whole session (long ones: the first 20 and the last 10 messages).
- ``browse``: recent sessions, newest first, with filters.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

from engine.sessions.fulltext import FORMS, Filters, Form, FullText, Hit, full_text_for
from engine.sessions.query import Query, parse_query
from engine.sessions.store import Message, SessionInfo, SessionStore

Mode = Literal["discover", "scroll", "read", "browse"]

DEFAULT_LIMIT, MAX_LIMIT = 3, 10
DEFAULT_WINDOW, MAX_WINDOW = 5, 20
BOOKEND = 3
READ_HEAD, READ_TAIL = 20, 10
HITS_PER_SESSION = 8  # candidate messages fetched per wanted session, before de-duplication


class SearchError(ValueError):
    pass


def clamp(value: int | None, default: int, low: int, high: int) -> int:
    if value is None:
        return default
    return max(low, min(high, int(value)))


def parse_time(value: str | float | int | None) -> float | None:
    """ISO 8601 date/time or unix seconds → unix seconds."""
    if value is None or value == "":
        return None
    if isinstance(value, int | float):
        return float(value)
    try:
        return float(value)
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as exc:
        raise SearchError(f"not a date or time: {value!r} (use ISO 8601, e.g. 2026-11-30)") from exc
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def _msg(message: Message) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": message.id,
        "role": message.role,
        "content": message.content,
        "timestamp": message.timestamp,
    }
    if message.tool_name:
        out["tool_name"] = message.tool_name
    if message.tool_calls:
        out["tool_calls"] = message.tool_calls
    return out


def _session_card(info: SessionInfo) -> dict[str, Any]:
    return {
        "session_id": info.id,
        "title": info.title,
        "source": info.source,
        "started_at": info.started_at,
        "ended_at": info.ended_at,
        "end_reason": info.end_reason,
        "parent_session_id": info.parent_session_id,
        "root_session_id": info.root_session_id,
        "message_count": info.message_count,
    }


class SessionSearch:
    def __init__(self, store: SessionStore) -> None:
        self.store = store

    def __call__(self, mode: Mode = "discover", **kwargs: Any) -> dict[str, Any]:
        handler = {
            "discover": self.discover,
            "scroll": self.scroll,
            "read": self.read,
            "browse": self.browse,
        }.get(mode)
        if handler is None:
            raise SearchError(f"unknown mode {mode!r}: use discover, scroll, read or browse")
        return handler(**kwargs)

    def _filters(
        self,
        role: str | list[str] | None,
        source: str | list[str] | None,
        since: Any,
        until: Any,
        current_session_id: str | None,
    ) -> Filters:
        def as_tuple(value: str | list[str] | None) -> tuple[str, ...]:
            if value is None:
                return ()
            return (value,) if isinstance(value, str) else tuple(value)

        exclude_root = None
        if current_session_id:
            current = self.store.get_session(current_session_id)
            exclude_root = current.root_session_id if current else None
        return Filters(
            roles=as_tuple(role),
            sources=as_tuple(source),
            since=parse_time(since),
            until=parse_time(until),
            exclude_root=exclude_root,
        )

    def discover(
        self,
        query: str = "",
        limit: int | None = None,
        role: str | list[str] | None = None,
        source: str | list[str] | None = None,
        since: Any = None,
        until: Any = None,
        order: Literal["relevance", "newest", "oldest"] = "relevance",
        current_session_id: str | None = None,
        window: int | None = None,
    ) -> dict[str, Any]:
        if order not in ("relevance", "newest", "oldest"):
            raise SearchError(f"unknown order {order!r}: use relevance, newest or oldest")
        limit = clamp(limit, DEFAULT_LIMIT, 1, MAX_LIMIT)
        window = clamp(window, DEFAULT_WINDOW, 0, MAX_WINDOW)
        filters = self._filters(role, source, since, until, current_session_id)
        parsed = parse_query(query)
        result: dict[str, Any] = {"mode": "discover", "query": query, "results": []}
        if parsed.empty:
            result["note"] = "the query has no searchable words"
            return result
        with self.store.engine.connect() as conn:
            fts = full_text_for(conn)
            hits, form = self._candidates(fts, parsed, filters, limit, order)
            chosen: list[Hit] = []
            roots: set[str] = set()
            for hit in hits:
                if hit.root_session_id in roots:
                    continue
                roots.add(hit.root_session_id)
                chosen.append(hit)
                if len(chosen) == limit:
                    break
            snippets = {h.message_id: fts.snippet(h.message_id, parsed, form) for h in chosen}
        result["matched_as"] = form
        for hit in chosen:
            result["results"].append(self._card(hit, snippets.get(hit.message_id), window))
        return result

    @staticmethod
    def _candidates(
        fts: FullText, query: Query, filters: Filters, limit: int, order: Any
    ) -> tuple[list[Hit], Form]:
        """The hits of the most precise form of the query that has any."""
        want = limit * HITS_PER_SESSION
        for form in FORMS:
            hits = fts.hits(query, form, filters, want, order)
            if hits:
                return hits, form
        return [], "substring"

    def _card(self, hit: Hit, snippet: str | None, window: int) -> dict[str, Any]:
        info = self.store.get_session(hit.session_id)
        assert info is not None
        before = self.store.messages(
            hit.session_id, before_id=hit.message_id, limit=window, newest_first=True
        )
        after = self.store.messages(hit.session_id, after_id=hit.message_id - 1, limit=window + 1)
        context = list(reversed(before)) + after
        shown = {m.id for m in context}
        head = [m for m in self.store.messages(hit.session_id, limit=BOOKEND) if m.id not in shown]
        tail = [
            m
            for m in reversed(self.store.messages(hit.session_id, limit=BOOKEND, newest_first=True))
            if m.id not in shown and m.id not in {h.id for h in head}
        ]
        return {
            **_session_card(info),
            "match_message_id": hit.message_id,
            "snippet": snippet,
            "messages": [_msg(m) for m in context],
            "first_messages": [_msg(m) for m in head],
            "last_messages": [_msg(m) for m in tail],
        }

    def scroll(
        self,
        session_id: str = "",
        anchor_id: int | None = None,
        direction: Literal["around", "forward", "backward"] = "around",
        window: int | None = None,
    ) -> dict[str, Any]:
        window = clamp(window, DEFAULT_WINDOW, 1, MAX_WINDOW)
        info = self.store.get_session(session_id)
        if info is None:
            raise SearchError(f"no session {session_id!r}")
        if anchor_id is None:
            anchor_id = 0 if direction != "backward" else 2**62
        before: list[Message] = []
        after: list[Message] = []
        if direction in ("around", "backward"):
            before = list(
                reversed(
                    self.store.messages(
                        session_id, before_id=anchor_id, limit=window, newest_first=True
                    )
                )
            )
        if direction in ("around", "forward"):
            first = anchor_id - 1 if direction == "around" else anchor_id
            after = self.store.messages(
                session_id, after_id=first, limit=window + (direction == "around")
            )
        messages = before + after
        return {
            "mode": "scroll",
            **_session_card(info),
            "anchor_id": anchor_id,
            "messages": [_msg(m) for m in messages],
            "has_earlier": bool(messages)
            and bool(self.store.messages(session_id, before_id=messages[0].id, limit=1)),
            "has_later": bool(messages)
            and bool(self.store.messages(session_id, after_id=messages[-1].id, limit=1)),
        }

    def read(self, session_id: str = "") -> dict[str, Any]:
        info = self.store.get_session(session_id)
        if info is None:
            raise SearchError(f"no session {session_id!r}")
        if info.message_count <= READ_HEAD + READ_TAIL:
            head, tail, omitted = self.store.messages(session_id), [], 0
        else:
            head = self.store.messages(session_id, limit=READ_HEAD)
            tail = list(
                reversed(self.store.messages(session_id, limit=READ_TAIL, newest_first=True))
            )
            omitted = info.message_count - len(head) - len(tail)
        return {
            "mode": "read",
            **_session_card(info),
            "messages": [_msg(m) for m in head],
            "omitted": omitted,
            "last_messages": [_msg(m) for m in tail],
        }

    def browse(
        self, limit: int | None = None, offset: int = 0, source: str | None = None
    ) -> dict[str, Any]:
        limit = clamp(limit, 10, 1, 50)
        sessions = self.store.list_sessions(limit=limit, offset=max(0, offset), source=source)
        return {"mode": "browse", "sessions": [_session_card(s) for s in sessions]}
