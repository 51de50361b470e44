"""The ``session_search`` tool as the model sees it: one JSON schema, one call, results as dicts.

Every failure comes back as ``{"ok": false, "error": ..., "message": ...}``, never as an
exception: a bad argument is something the model can read and correct. Message texts are
returned as stored, except that one longer than ``max_message_chars`` keeps its head and tail
with a marker in between, so a single huge tool output cannot flood the context (the model can
still scroll to it; ``truncated`` says how much was left out).

Results for the model are marked as stored data (``untrusted``, ``untrusted_note``), and every
message the threat scanner flags carries a ``warning`` naming the categories; the text itself
is kept, since it is what the model searched for.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, cast

from sqlalchemy.exc import SQLAlchemyError

from engine.sessions.search import (
    DEFAULT_LIMIT,
    DEFAULT_WINDOW,
    MAX_LIMIT,
    MAX_WINDOW,
    Mode,
    SearchError,
    SessionSearch,
    clamp,
)
from engine.sessions.store import ROLES

MODES = ("discover", "scroll", "read", "browse")
ORDERS = ("relevance", "newest", "oldest")
DIRECTIONS = ("around", "forward", "backward")
MAX_MESSAGE_CHARS = 4000
BROWSE_LIMIT, MAX_BROWSE = 10, 50  # as SessionSearch.browse clamps them
# The model's discover leaves out tool output and tool or sub-agent sessions unless it names
# them with role or source: they mostly repeat what a conversation already says, in bulk.
MODEL_EXCLUDES: dict[str, tuple[str, ...]] = {
    "exclude_roles": ("tool",),
    "exclude_sources": ("tool", "subagent"),
}

SCHEMA: dict[str, Any] = {
    "name": "session_search",
    "description": (
        "Search your past conversations with the user. Returns real messages exactly as they "
        "were written in earlier sessions (never summaries), with session ids and message ids "
        "you can follow up on. Modes: 'discover' (default) finds the conversations that best "
        "match `query` and shows each matching message with the messages around it; 'scroll' "
        "shows messages around `anchor_id` in `session_id` (direction around, forward or "
        "backward); 'read' shows a whole session (long ones: beginning and end); 'browse' "
        "lists recent sessions. Use it when the user refers to something from before "
        "('the docker thing last week', 'what did we decide about X') or when earlier work "
        "would help. No query lists recent sessions; a session_id alone reads that session. "
        "This conversation itself is never among discover's or browse's results."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "mode": {"type": "string", "enum": list(MODES), "default": "discover"},
            "query": {
                "type": "string",
                "description": "discover: a question in plain words, or words, names, "
                "paths, URLs, error text or quoted phrases to look for; dates in words "
                "('last week', 'in August 2023') rank that time first",
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_LIMIT,
                "description": f"discover: conversations to return (default {DEFAULT_LIMIT}); "
                "browse: sessions to list (default 10)",
            },
            "role": {
                "type": "string",
                "enum": list(ROLES),
                "description": "discover: only match messages with this role (tool output is "
                "searched only when this says tool)",
            },
            "source": {
                "type": "string",
                "description": "discover, browse: only sessions from this source (cli, gui, "
                "telegram, cron, ...; tool and subagent sessions only when named here)",
            },
            "since": {
                "type": "string",
                "description": "discover: only messages at or after this ISO 8601 date/time",
            },
            "until": {
                "type": "string",
                "description": "discover: only messages at or before this ISO 8601 date/time",
            },
            "order": {
                "type": "string",
                "enum": list(ORDERS),
                "description": "discover: best match first (relevance, the default), or by time",
            },
            "session_id": {
                "type": "string",
                "description": "scroll, read: the session, from a discover or browse result",
            },
            "anchor_id": {
                "type": "integer",
                "description": "scroll: the message id to scroll from",
            },
            "direction": {"type": "string", "enum": list(DIRECTIONS), "default": "around"},
            "window": {
                "type": "integer",
                "minimum": 0,
                "maximum": MAX_WINDOW,
                "description": f"discover, scroll: messages shown on each side (default "
                f"{DEFAULT_WINDOW})",
            },
        },
    },
}

# Which arguments each mode takes (after validation), besides ``mode``.
_MODE_ARGS: dict[str, tuple[str, ...]] = {
    "discover": ("query", "limit", "role", "source", "since", "until", "order", "window"),
    "scroll": ("session_id", "anchor_id", "direction", "window"),
    "read": ("session_id",),
    "browse": ("limit", "source"),
}


class _Invalid(ValueError):
    pass


def _failure(code: str, message: str) -> dict[str, Any]:
    return {"ok": False, "error": code, "message": message}


def _integer(name: str, value: Any) -> int:
    if isinstance(value, bool):
        raise _Invalid(f"{name} must be an integer, not a boolean")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    raise _Invalid(f"{name} must be an integer, got {value!r}"[:200])


def _text(name: str, value: Any) -> str:
    if isinstance(value, str):
        return value
    if (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and name in ("since", "until")
    ):
        return str(value)
    raise _Invalid(f"{name} must be a string, got {type(value).__name__}")


def _choice(name: str, value: Any, allowed: tuple[str, ...]) -> str:
    text = _text(name, value)
    if text not in allowed:
        raise _Invalid(f"{name} must be one of {', '.join(allowed)}; got {text!r}"[:200])
    return text


class SessionSearchTool:
    """Dispatches the model's ``session_search`` calls.

    ``current_session_id`` is the session the model is talking in: discover leaves out its
    whole lineage (compressed continuations included), which the model already has.
    """

    def __init__(
        self,
        search: SessionSearch,
        current_session_id: str | None = None,
        *,
        max_message_chars: int = MAX_MESSAGE_CHARS,
        mark_untrusted: Callable[[dict[str, Any], Iterable[dict[str, Any]]], None] | None = None,
    ) -> None:
        if max_message_chars < 8:
            raise ValueError("max_message_chars must be at least 8")
        self.search = search
        self.current_session_id = current_session_id
        self.max_message_chars = max_message_chars
        # Given by the agent (the session store knows no scanner): marks a result's messages
        # as untrusted data, with a warning on each one the threat scanner flags.
        self.mark_untrusted = mark_untrusted

    def __call__(self, arguments: Any, *, for_user: bool = False) -> dict[str, Any]:
        """One call; ``for_user`` is a person's own view (the window's session list, the
        /sessions command), where the conversation in progress belongs among the recent ones."""
        try:
            mode, kwargs, ignored = self._arguments(arguments)
            if mode == "browse" and not for_user:
                result = self._browse(kwargs)
            elif mode == "discover" and not for_user:
                result = self.search(mode, **kwargs, **MODEL_EXCLUDES)
            else:
                result = self.search(mode, **kwargs)
        except (_Invalid, SearchError) as exc:
            return _failure("invalid", str(exc))
        except SQLAlchemyError as exc:
            return _failure("unavailable", f"the session database failed: {exc.__class__.__name__}")
        except Exception as exc:  # a tool call must never raise into the agent loop
            return _failure("internal", f"session_search failed: {exc}"[:500])
        out = {"ok": True, **self._bounded(result)}
        if not for_user and self.mark_untrusted is not None:
            # Past messages are what the user asked for, so they are kept whole; but they are
            # stored text that anyone in an earlier conversation (a pasted page, a tool's
            # output) could have written, so the model is told so, message by message.
            self.mark_untrusted(out, list(_messages(out)))
        if ignored:
            out["ignored"] = ignored
            out["note"] = f"ignored for mode {mode}: {', '.join(ignored)}"
        return out

    def _arguments(self, arguments: Any) -> tuple[Mode, dict[str, Any], list[str]]:
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise _Invalid("arguments must be a JSON object")
        given = {k: v for k, v in arguments.items() if v is not None}
        mode = cast(Mode, _choice("mode", given.pop("mode", None) or self._implied(given), MODES))
        if mode == "discover" and not str(given.get("query") or "").strip():
            mode = "browse"  # nothing to look for: the recent sessions are the useful answer
            given.pop("query", None)
        wanted = _MODE_ARGS[mode]
        ignored = sorted(k for k in given if k not in wanted)
        values: dict[str, Any] = {}
        for name in wanted:
            if name not in given:
                continue
            value = given[name]
            if name in ("limit", "anchor_id", "window"):
                values[name] = _integer(name, value)
            elif name == "role":
                values[name] = _choice(name, value, ROLES)
            elif name == "order":
                values[name] = _choice(name, value, ORDERS)
            elif name == "direction":
                values[name] = _choice(name, value, DIRECTIONS)
            else:
                values[name] = _text(name, value)
        if mode == "discover":
            values["current_session_id"] = self.current_session_id
        elif mode in ("scroll", "read") and not values.get("session_id"):
            raise _Invalid(f"{mode} needs a session_id (from a discover or browse result)")
        return mode, values, ignored

    @staticmethod
    def _implied(given: dict[str, Any]) -> str:
        """The mode a call without one means: a session id alone reads it (or scrolls, with
        an anchor), a query discovers, nothing at all browses."""
        if given.get("session_id") and not str(given.get("query") or "").strip():
            return "scroll" if "anchor_id" in given else "read"
        return "discover"

    def _browse(self, values: dict[str, Any]) -> dict[str, Any]:
        """Recent sessions other than the one the model is in (its lineage included)."""
        own = (
            {s.id for s in self.search.store.lineage(self.current_session_id)}
            if self.current_session_id
            else set()
        )
        limit = clamp(values.get("limit"), BROWSE_LIMIT, 1, MAX_BROWSE)
        result = self.search("browse", **{**values, "limit": min(limit + len(own), MAX_BROWSE)})
        result["sessions"] = [c for c in result["sessions"] if c["session_id"] not in own][:limit]
        return result

    def _bounded(self, value: Any) -> Any:
        """``value`` with every message's content cut to ``max_message_chars``."""
        if isinstance(value, list):
            return [self._bounded(v) for v in value]
        if not isinstance(value, dict):
            return value
        out = {k: self._bounded(v) for k, v in value.items()}
        content = out.get("content")
        if "role" in out and isinstance(content, str) and len(content) > self.max_message_chars:
            head = self.max_message_chars * 3 // 4
            tail = self.max_message_chars - head
            omitted = len(content) - head - tail
            out["content"] = (
                f"{content[:head]}\n[… {omitted:,} characters omitted …]\n{content[-tail:]}"
            )
            out["truncated"] = omitted
        return out


def _messages(value: Any) -> Iterator[dict[str, Any]]:
    """Every message dict (one with a role and a text content) inside a result."""
    if isinstance(value, list):
        for item in value:
            yield from _messages(item)
    elif isinstance(value, dict):
        if "role" in value and isinstance(value.get("content"), str):
            yield value
        for item in value.values():
            if isinstance(item, list | dict):
                yield from _messages(item)


def summarize(arguments: dict[str, Any], result: dict[str, Any]) -> str:
    """One line for the chat pane: ``session_search: 3 sessions for "deploy"``."""
    if not result.get("ok"):
        return f"session_search: failed ({result.get('error', 'error')})"
    mode = arguments.get("mode") or "discover"
    if mode == "discover":
        found = len(result.get("results") or [])
        plural = "s" if found != 1 else ""
        return f"session_search: {found} session{plural} for {arguments.get('query', '')!r}"
    return f"session_search: {mode}"
