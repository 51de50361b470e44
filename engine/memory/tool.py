"""The ``memory`` tool as the model sees it: one JSON schema, one call, results as dicts.

There is no read action on purpose: the memory is already in the system prompt.
"""

from __future__ import annotations

from typing import Any

from engine.memory import threats
from engine.memory.approval import Origin
from engine.memory.entries import Target
from engine.memory.errors import MemoryToolError
from engine.memory.service import MemoryService

MAX_FAILURES_PER_TURN = 3

_OP_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": ["add", "replace", "remove"]},
        "content": {"type": "string", "description": "the new entry text (add, replace)"},
        "old_text": {
            "type": "string",
            "description": "a unique, case-sensitive part of the entry to change (replace, remove)",
        },
    },
    "required": ["action"],
}

SCHEMA: dict[str, Any] = {
    "name": "memory",
    "description": (
        "Edit your persistent memory, which is shown in the system prompt of every future "
        "session (not this one). target 'memory' holds your notes about the environment and "
        "lessons learned; 'user' holds who the user is and what they prefer. Save declarative, "
        "durable facts, in priority order: user corrections, preferences, environment facts, "
        "procedures. Never save task progress, ids, commit hashes, anything stale within days, "
        "or what context files already say. Space is bounded: when full the call fails, so "
        "consolidate with replace/remove (or one `operations` batch, checked on its final "
        "total) above 80%. A result lists the entries as they are now. Past conversations "
        "are not memory: find them with session_search."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "target": {"type": "string", "enum": ["memory", "user"], "default": "memory"},
            **_OP_SCHEMA["properties"],
            "operations": {
                "type": "array",
                "items": _OP_SCHEMA,
                "description": "several edits applied in order, all or nothing",
            },
        },
    },
}


class MemoryTool:
    """Dispatches model calls to the service and stops a model that keeps failing.

    After three failed calls in one turn the model is told to stop retrying; further calls in
    that turn are refused without touching memory.
    """

    def __init__(self, service: MemoryService, origin: Origin = "foreground") -> None:
        self.service = service
        self.origin = origin
        self.failures = 0

    def begin_turn(self) -> None:
        self.failures = 0

    def __call__(self, arguments: dict[str, Any]) -> dict[str, Any]:
        if self.failures >= MAX_FAILURES_PER_TURN:
            return MemoryToolError(
                "breaker",
                "Memory calls have failed 3 times this turn. Stop retrying: leave memory "
                "unchanged and continue with your reply.",
            ).to_dict()
        try:
            return _screened(self._dispatch(arguments))
        except MemoryToolError as exc:
            self.failures += 1
            result = _screened(exc.to_dict())
            if self.failures >= MAX_FAILURES_PER_TURN:
                result["message"] += (
                    " This was the third failed memory call this turn: stop retrying, leave "
                    "memory unchanged and continue with your reply."
                )
            return result

    def _dispatch(self, arguments: dict[str, Any]) -> dict[str, Any]:
        if not isinstance(arguments, dict):
            raise MemoryToolError("invalid", "arguments must be an object")
        args = dict(arguments)
        try:
            target = Target(args.pop("target", None) or "memory")
        except ValueError as exc:
            raise MemoryToolError("invalid", "target must be 'memory' or 'user'") from exc
        operations = args.pop("operations", None)
        if operations is None:
            if "action" not in args:
                raise MemoryToolError(
                    "invalid", "give an action (add, replace, remove) or an operations list"
                )
            operations = [args]
        elif args:
            raise MemoryToolError("invalid", "give either operations or a single action, not both")
        return self.service.write(target, operations, origin=self.origin)


def _screened(result: dict[str, Any]) -> dict[str, Any]:
    """``result`` with any listed entry the scanner blocks replaced by its placeholder, as in
    the prompt: the file may have been edited outside Cairn since the session began."""
    entries = result.get("entries")
    if isinstance(entries, list):
        shown = []
        for entry in entries:
            verdict = threats.scan(entry) if isinstance(entry, str) else None
            shown.append(threats.placeholder(verdict) if verdict and verdict.blocked else entry)
        result["entries"] = shown
    return result


_VERBS = {"add": "added", "replace": "replaced", "remove": "removed"}


def summarize(arguments: dict[str, Any], result: dict[str, Any]) -> str:
    """One line for the chat pane: ``memory: added 1 entry (62%)``."""
    label = "user profile" if arguments.get("target") == "user" else "memory"
    if not result.get("ok"):
        return f"{label}: refused ({result.get('error', 'error')})"
    if result.get("status") == "staged":
        return f"{label}: change staged for approval ({result.get('pending_id')})"
    if result.get("status") == "unchanged":
        return f"{label}: already saved"
    ops = arguments.get("operations") or [arguments]
    counts: dict[str, int] = {}
    for op in ops:
        verb = _VERBS.get(str(op.get("action")) if isinstance(op, dict) else "", "changed")
        counts[verb] = counts.get(verb, 0) + 1
    parts = [f"{verb} {n} entr{'y' if n == 1 else 'ies'}" for verb, n in counts.items()]
    percent = (result.get("usage") or {}).get("percent")
    return f"{label}: {', '.join(parts)}" + (f" ({percent}%)" if percent is not None else "")
