"""What approving a staged write would do, for whoever asks before approving it.

One builder for every queue (memory, skills, facts), in the engine so that any client shows
the same thing (the window's pending dialog draws its lines). A record is the
:class:`engine.pending.PendingWrites` record as a dict (``subsystem``, ``action``,
``summary``, ``payload`` …); the preview of a memory write is worked out from the file's
current entries with the engine's own operation semantics, so a write that would be
refused (its entry changed meanwhile, over the limit) says so before anyone approves it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Any

from engine.memory.entries import Target, percent, usage
from engine.memory.errors import MemoryToolError

# (sign, text): "+", "-", " " for entries (added, removed, kept); "!" a note about the write.
DiffLine = tuple[str, str]


# A dataclass, not a pydantic model: the window imports this module before its engine loads
# (pydantic is tenths of a second of every start).
@dataclass(frozen=True)
class Preview:
    heading: str
    lines: list[DiffLine]


def entry_diff(before: Sequence[str], after: Sequence[str]) -> list[DiffLine]:
    """The file after a change, entry by entry: kept ``" "``, added ``"+"``, removed ``"-"``."""
    lines: list[DiffLine] = []
    matcher = SequenceMatcher(None, list(before), list(after), autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            lines += [(" ", entry) for entry in before[i1:i2]]
            continue
        lines += [("-", entry) for entry in before[i1:i2]]
        lines += [("+", entry) for entry in after[j1:j2]]
    return lines


def usage_text(chars: int, limit: int, share: int) -> str:
    return f"{chars:,} / {limit:,} chars ({share}%)"


def file_of(record: dict[str, Any]) -> str:
    """What the write changes, as a person reads it: ``MEMORY.md``, ``skill NAME``, …"""
    payload = record.get("payload") or {}
    if record.get("subsystem") == "skills":
        request = payload.get("request") or {}
        return f"skill {request.get('name', '?')}"
    if record.get("subsystem") == "facts":
        return "fact store"
    target = payload.get("target", "memory")
    try:
        return Target(target).filename
    except ValueError:
        return str(target)


def preview_of(record: dict[str, Any], state: dict[str, Any] | None) -> Preview:
    """A heading and the lines of what approving ``record`` now would do.

    ``state`` is the target file as it is (``items``, ``limit``, ``error``), needed for a
    memory write only; None when it is not known yet.
    """
    if record.get("subsystem") == "skills":
        return _skill_preview(record)
    if record.get("subsystem") == "facts":
        return _fact_preview(record)
    return _memory_preview(record, state)


def _memory_preview(record: dict[str, Any], state: dict[str, Any] | None) -> Preview:
    from engine.memory.approval import payload_operations
    from engine.memory.operations import apply_to_entries, check_budget, parse_operations

    payload = record.get("payload") or {}
    filename = file_of(record)
    if state is None:
        return Preview(heading=filename, lines=[("!", "Current memory has not been loaded yet.")])
    if state.get("error"):
        return Preview(
            heading=filename, lines=[("!", f"{filename} cannot be read: {state['error']}")]
        )
    before: list[str] = list(state.get("items") or [])
    limit = int(state.get("limit") or 0)
    try:
        ops = parse_operations(payload_operations(payload))
        after = apply_to_entries(before, ops)
    except MemoryToolError as exc:
        return Preview(
            heading=filename,
            lines=[
                ("!", f"This write no longer applies to {filename}: {exc.message}"),
                ("!", "Approving it will fail; reject it or edit memory directly."),
            ],
        )
    lines = entry_diff(before, after)
    chars = usage(after)
    heading = f"{filename} after approval"
    if limit:
        heading += " — " + usage_text(chars, limit, percent(chars, limit))
        try:
            check_budget(Target(payload.get("target", "memory")), before, after, limit, ops)
        except (MemoryToolError, ValueError) as exc:
            message = exc.message if isinstance(exc, MemoryToolError) else str(exc)
            lines.insert(0, ("!", f"Approving it will be refused: {message}"))
    if before == after:
        lines.insert(0, ("!", "No change: the file already looks like this."))
    return Preview(heading=heading, lines=lines)


def _skill_preview(record: dict[str, Any]) -> Preview:
    """A staged skill write: what it would write, line by line."""
    request = (record.get("payload") or {}).get("request") or {}
    name = request.get("name") or "a skill"
    heading = f"Skill {name}: {record.get('action', 'change')} — {record.get('summary', '')}"
    lines: list[DiffLine] = []
    if request.get("find"):
        lines += [("-", line) for line in str(request["find"]).splitlines()]
    for key in ("content", "replace", "body"):
        if request.get(key):
            lines += [("+", line) for line in str(request[key]).splitlines()]
    if not lines:
        lines.append(("!", "Nothing to show for this change; approve applies it as summarised."))
    return Preview(heading=heading, lines=lines)


def _fact_preview(record: dict[str, Any]) -> Preview:
    """A staged fact store write: the fact it adds, the new text, or what it removes."""
    request = (record.get("payload") or {}).get("request") or {}
    lines: list[DiffLine] = []
    if request.get("content"):
        lines += [("+", line) for line in str(request["content"]).splitlines()]
    if request.get("entities"):
        lines.append(("+", "about: " + ", ".join(map(str, request["entities"]))))
    if not lines:
        lines.append(("!", "Approve applies it as summarised."))
    return Preview(heading=f"Fact store: {record.get('summary', '')}", lines=lines)
