"""Viewing, editing and deleting the chunk an id names, through memory's write path."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from engine.journey.model import NodeRef, node_id, parse_node_id, version_of
from engine.memory.errors import MemoryToolError
from engine.memory.operations import preview
from engine.memory.service import MemoryService

# -- view, edit, delete ----------------------------------------------------------------------


class Resolved(BaseModel):
    ref: NodeRef
    text: str
    node_id: str  # versioned, as it is now


def resolve(service: MemoryService, raw_id: str) -> Resolved:
    """The entry ``raw_id`` names now; refuses an id whose entry changed since it was shown."""
    ref = parse_node_id(raw_id)
    entries = service.read(ref.target).entries
    return _check(ref, entries)


def _where_now(ref: NodeRef, entries: list[str]) -> str:
    if ref.version is None:
        return ""
    moved = [i for i, e in enumerate(entries) if version_of(e) == ref.version]
    if moved:
        return f"; that entry is now {node_id(ref.target, moved[0], entries[moved[0]])}"
    return "; that entry is no longer in memory"


def _check(ref: NodeRef, entries: list[str]) -> Resolved:
    name = ref.target.filename
    if ref.index >= len(entries):
        raise MemoryToolError(
            "stale" if ref.version else "not_found",
            f"{ref.base} does not exist: {name} has {len(entries)} "
            f"entr{'y' if len(entries) == 1 else 'ies'} now{_where_now(ref, entries)}. "
            "Memory changed since the id was shown; list it again (`cairn journey list`).",
            id=ref.base,
        )
    text = entries[ref.index]
    if ref.version is not None and version_of(text) != ref.version:
        raise MemoryToolError(
            "stale",
            f"{ref.base}#{ref.version} is stale: entry {ref.index} of {name} is now "
            f"{preview(text)!r}{_where_now(ref, entries)}. Memory changed since the id was "
            "shown; nothing was changed. List it again (`cairn journey list`).",
            id=ref.base,
            current_id=node_id(ref.target, ref.index, text),
        )
    return Resolved(ref=ref, text=text, node_id=node_id(ref.target, ref.index, text))


def _guard(
    ref: NodeRef, raw_id: str, expect: str | None, require_version: bool, entries: list[str]
) -> Resolved:
    if ref.version is None and expect is None and require_version:
        raise MemoryToolError(
            "invalid",
            f"{raw_id} names a position, not an entry: give the id with its version as "
            "`cairn journey list` prints it (memory:memory:3#a1b2c3), or --expect TEXT, so "
            "memory that changed since cannot turn this into a change of another entry",
        )
    found = _check(ref, entries)
    if expect is not None and expect.strip() not in found.text:
        raise MemoryToolError(
            "stale",
            f"{ref.base} is {preview(found.text)!r}, which does not contain "
            f"{preview(expect)!r}; nothing was changed",
            id=ref.base,
        )
    return found


def _mutate(
    service: MemoryService,
    raw_id: str,
    operation: dict[str, Any],
    *,
    expect: str | None,
    require_version: bool,
) -> dict[str, Any]:
    ref = parse_node_id(raw_id)
    found = _guard(ref, raw_id, expect, require_version, service.read(ref.target).entries)
    operation = {**operation, "old_text": found.text}

    def still_there(entries: list[str]) -> None:
        # Runs under the file's lock, on the entries re-read there: the write applies only if
        # the entry is exactly where and what it was when the id was resolved. (Staging
        # skips it; an approval later applies the operation by the entry's exact text.)
        _check(parse_node_id(found.node_id), entries)

    # A person's edit: it belongs to no conversation (not the chat that happens to be open).
    result = service.write(
        ref.target, [operation], origin="foreground", session_id=None, precondition=still_there
    )
    result["id"] = found.node_id
    if result.get("status") == "applied" and operation["action"] == "replace":
        result["new_id"] = node_id(ref.target, ref.index, operation["content"].strip())
    return result


def edit_chunk(
    service: MemoryService,
    raw_id: str,
    text: str,
    *,
    expect: str | None = None,
    require_version: bool = True,
) -> dict[str, Any]:
    """Replace the entry ``raw_id`` names with ``text``: lock, scanner, limits, approval gate,
    history; undoable with ``cairn memory undo``."""
    return _mutate(
        service,
        raw_id,
        {"action": "replace", "content": text},
        expect=expect,
        require_version=require_version,
    )


def delete_chunk(
    service: MemoryService,
    raw_id: str,
    *,
    expect: str | None = None,
    require_version: bool = True,
) -> dict[str, Any]:
    """Remove the entry ``raw_id`` names; same path and guarantees as :func:`edit_chunk`."""
    return _mutate(
        service, raw_id, {"action": "remove"}, expect=expect, require_version=require_version
    )
