"""``cairn journey …``: every memory chunk with its real history, from a terminal or a script.

``list`` prints versioned ids (``memory:memory:3#a1b2c3``); ``show``, ``edit`` and ``delete``
take them, and refuse one whose entry changed since it was listed. Every command takes
``--json``; a refusal exits 1 with the reason, a usage error 2.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

from engine.cli_output import clip
from engine.cli_output import emit as _emit
from engine.fsutil import decode_utf8, read_text
from engine.journey import (
    Chunk,
    Journey,
    delete_chunk,
    edit_chunk,
    load_journey,
    parse_node_id,
    resolve,
)
from engine.memory.entries import Target
from engine.memory.errors import MemoryToolError
from engine.memory.operations import preview
from engine.memory.service import MemoryService

TARGETS = [t.value for t in Target]


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    journey = sub.add_parser(
        "journey", parents=[common], help="memory chunks with their history: view, edit, delete"
    )
    cmds = journey.add_subparsers(dest="journey_command", required=True, metavar="COMMAND")

    def command(name: str, help_text: str) -> argparse.ArgumentParser:
        parser = cmds.add_parser(name, parents=[common], help=help_text)
        parser.set_defaults(handler=globals()[f"cmd_{name}"])
        return parser

    listing = command("list", "chunks in memory now (or --at a past moment), with their ids")
    listing.add_argument("--target", "-t", choices=TARGETS)
    listing.add_argument(
        "--at", metavar="WHEN", help="memory as it was then: an event number (#42) or a time"
    )
    listing.add_argument("--removed", action="store_true", help="also chunks removed since")
    command("show", "one chunk: text, times, sessions, every version").add_argument("id")
    edit = command("edit", "edit a chunk in $EDITOR (or give the new text)")
    edit.add_argument("id")
    edit.add_argument("text", nargs="?", help="new text ('-': read stdin; omitted: $EDITOR)")
    edit.add_argument("--expect", metavar="TEXT", help="refuse unless the entry contains TEXT")
    delete = command("delete", "remove a chunk from memory")
    delete.add_argument("id")
    delete.add_argument("--expect", metavar="TEXT", help="refuse unless the entry contains TEXT")


def _when(stamp: float | None) -> str:
    return datetime.fromtimestamp(stamp).strftime("%Y-%m-%d %H:%M") if stamp else "-"


def chunk_payload(chunk: Chunk, journey: Journey) -> dict[str, Any]:
    return {
        "id": chunk.node_id,
        "key": chunk.key,
        "target": chunk.target.value,
        "index": chunk.index,
        "text": chunk.text,
        "learned_at": chunk.learned_at,
        "changed_at": chunk.changed_at,
        "removed_at": chunk.removed_at,
        "origin": chunk.origin,
        "session_id": chunk.session_id,
        "sessions": chunk.session_ids,
        "versions": [v.model_dump() for v in chunk.versions],
        "related": [
            {"key": other.key, "id": other.node_id, "terms": edge.terms}
            for edge in journey.edges
            if edge.kind == "terms" and chunk.key in (edge.source, edge.target)
            for other in [journey.chunk(edge.target if edge.source == chunk.key else edge.source)]
            if other is not None
        ],
    }


def _position(journey: Journey, when: str) -> int:
    usage = f"--at {clip(when)}: give an event number (#42) or a time (2026-05-01 14:30)"
    if when.startswith("#") or when.isdigit():
        number = when.lstrip("#")
        if not number.isdigit() or len(number) > 18:
            raise MemoryToolError("invalid", usage)
        try:
            return journey.position_of(int(number))
        except KeyError as exc:
            raise MemoryToolError("not_found", f"no recorded event {when}") from exc
    try:
        moment = datetime.fromisoformat(when)
    except ValueError as exc:
        raise MemoryToolError("invalid", usage) from exc
    try:
        stamp = moment.timestamp()
    except (ValueError, OverflowError, OSError):
        # A valid date the clock cannot express (0001-01-01 in local time): before or after
        # every event Cairn can have recorded.
        stamp = float("-inf") if moment.year < 1970 else float("inf")
    return journey.position_at(stamp)


def cmd_list(args: argparse.Namespace) -> int:
    service: MemoryService = args.service_factory()
    journey = load_journey(service)
    targets = [Target(args.target)] if args.target else list(Target)
    lines: list[str] = []
    payload: dict[str, Any] = {"ok": True, "events": len(journey.events)}
    if args.at is not None:
        position = _position(journey, args.at)
        payload["position"] = position
        state = journey.state_at(position)
        for target in targets:
            keys = journey.order_at(target, position)
            payload[target.value] = [
                {"key": key, "index": i, "text": text}
                for i, (key, text) in enumerate(zip(keys, state[target.value], strict=False))
            ]
            lines.append(f"{target.filename} after {position} of {len(journey.events)} events")
            lines += [f"  [{i}] {preview(text, 90)}" for i, text in enumerate(state[target.value])]
        _emit(args, payload, "\n".join(lines))
        return 0
    unreadable = [journey.unreadable[t.value] for t in targets if t.value in journey.unreadable]
    if unreadable:
        # What memory holds now is unknown: say why, never "memory is empty".
        raise MemoryToolError("file", "; ".join(unreadable))
    chunks = [c for c in journey.chunks if c.target in targets and (c.alive or args.removed)]
    chunks.sort(key=lambda c: (not c.alive, TARGETS.index(c.target.value), c.index or 0))
    payload["chunks"] = [chunk_payload(c, journey) for c in chunks]
    width = max((len(c.node_id or "") for c in chunks), default=10)
    lines.append(f"{'ID':<{width}}  {'LEARNED':<16}  {'CHANGED':<16}  SESSION   TEXT")
    for chunk in chunks:
        ident = chunk.node_id or f"(removed {_when(chunk.removed_at)})"
        session = (chunk.session_id or "-")[:8]
        lines.append(
            f"{ident:<{width}}  {_when(chunk.learned_at):<16}  {_when(chunk.changed_at):<16}  "
            f"{session:<8}  {preview(chunk.text, 70)}"
        )
    if journey.history_error:
        lines.append(f"warning: change history unavailable: {journey.history_error}")
    _emit(args, payload, "\n".join(lines) if chunks else "memory is empty")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    service: MemoryService = args.service_factory()
    found = resolve(service, args.id)  # refuses a stale id before anything is shown
    journey = load_journey(service)
    chunk = journey.find(found.node_id)
    if chunk is None:  # changed between the two reads: say so rather than guess
        raise MemoryToolError("stale", f"{args.id} changed while it was being read; try again")
    payload = {"ok": True, **chunk_payload(chunk, journey)}
    sessions = {s.id: s for s in journey.sessions}
    lines = [
        f"{chunk.node_id}  ({chunk.target.filename}, entry {chunk.index})",
        "",
        chunk.text,
        "",
        f"learned  {_when(chunk.learned_at)}" + (f" ({chunk.origin})" if chunk.origin else ""),
        f"changed  {_when(chunk.changed_at)}",
    ]
    for sid in chunk.session_ids:
        title = sessions[sid].title if sid in sessions else None
        lines.append(f"session  {sid}" + (f"  {title}" if title else ""))
    lines.append("")
    lines.append(f"{len(chunk.versions)} version{'s' if len(chunk.versions) != 1 else ''}:")
    for version in chunk.versions:
        event = f"#{version.event_id}" if version.event_id else "unrecorded"
        lines.append(
            f"  {_when(version.at)}  {event:<7} {version.action:<13} {preview(version.text, 60)}"
        )
    if payload["related"]:
        lines.append("related:")
        for rel in payload["related"]:
            lines.append(f"  {rel['id'] or rel['key']}  ({', '.join(rel['terms'])})")
    _emit(args, payload, "\n".join(lines))
    return 0


def _editor_text(text: str) -> str:
    """``text`` as the user left it in their editor ($VISUAL, $EDITOR, else vi)."""
    command = shlex.split(os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi")
    handle, name = tempfile.mkstemp(prefix="cairn-journey-", suffix=".md")
    path = Path(name)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text + "\n")
        try:
            code = subprocess.run([*command, str(path)], check=False).returncode
        except OSError as exc:
            raise MemoryToolError(
                "invalid", f"cannot start the editor {command[0]!r}: {exc.strerror}"
            ) from exc
        if code != 0:
            raise MemoryToolError("invalid", f"the editor exited with {code}; nothing changed")
        try:
            return read_text(path)
        except UnicodeDecodeError as exc:
            raise MemoryToolError("invalid", "the edited text is not valid UTF-8") from exc
    finally:
        path.unlink(missing_ok=True)


def _report(args: argparse.Namespace, result: dict[str, Any]) -> int:
    text = result["message"]
    if result.get("new_id"):
        text += f"\nnew id: {result['new_id']}"
    if result.get("event_id"):
        text += f"\nundo with: cairn memory undo {result['event_id']}"
    for warning in result.get("warnings") or []:
        text += f"\nwarning: {warning}"
    _emit(args, result, text)
    return 0


def cmd_edit(args: argparse.Namespace) -> int:
    service: MemoryService = args.service_factory()
    if args.text is not None:
        if args.text == "-":
            data = sys.stdin.buffer.read()
            try:
                new_text = decode_utf8(data)
            except UnicodeDecodeError as exc:
                raise MemoryToolError("invalid", "the new text on stdin is not UTF-8") from exc
        else:
            new_text = args.text
        result = edit_chunk(service, args.id, new_text, expect=args.expect)
        return _report(args, result)
    parse_node_id(args.id)
    found = resolve(service, args.id)
    if args.expect is not None and args.expect.strip() not in found.text:
        raise MemoryToolError(
            "stale", f"{args.id} does not contain {preview(args.expect)!r}; nothing changed"
        )
    edited = _editor_text(found.text).strip()
    if not edited:
        raise MemoryToolError(
            "invalid",
            f"the edited text is empty; nothing changed (to remove the entry: "
            f"cairn journey delete {found.node_id})",
        )
    if edited == found.text:
        _emit(args, {"ok": True, "status": "unchanged", "id": found.node_id}, "nothing changed")
        return 0
    # The user saw the entry in the editor, so the id need not have been versioned; the
    # write still checks, under the lock, that the entry is what the editor showed.
    result = edit_chunk(service, found.node_id, edited)
    return _report(args, result)


def cmd_delete(args: argparse.Namespace) -> int:
    result = delete_chunk(args.service_factory(), args.id, expect=args.expect)
    return _report(args, result)
