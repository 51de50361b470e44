"""``cairn memory …``: the bounded memory from a terminal or a script.

Every command takes ``--json``; a refused operation exits 1 with the reason, a usage error 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from engine.cli_output import emit as _emit
from engine.fsutil import bounded_lines, decode_utf8
from engine.memory import threats
from engine.memory.entries import Target
from engine.memory.errors import MemoryToolError
from engine.memory.service import MemoryService, usage_of
from engine.plugins import cli as plugins_cli

if TYPE_CHECKING:
    from engine.memory.approval import PendingWrite
    from engine.pending import PendingWrites

TARGETS = [t.value for t in Target]


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    memory = sub.add_parser("memory", parents=[common], help="bounded memory (MEMORY.md, USER.md)")
    cmds = memory.add_subparsers(dest="memory_command", required=True, metavar="COMMAND")

    def command(name: str, help_text: str) -> argparse.ArgumentParser:
        parser = cmds.add_parser(name, parents=[common], help=help_text)
        parser.set_defaults(handler=globals()[f"cmd_{name}"])
        return parser

    def with_target(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
        parser.add_argument("--target", "-t", choices=TARGETS, default="memory")
        return parser

    show = command("show", "entries and usage of both files")
    show.add_argument("--target", "-t", choices=TARGETS)
    show.add_argument("--prompt", action="store_true", help="print the block the prompt gets")
    with_target(command("add", "add an entry")).add_argument(
        "content", nargs="?", help="entry text ('-' or omitted: read stdin)"
    )
    replace = with_target(command("replace", "replace the entry containing OLD"))
    replace.add_argument("old_text")
    replace.add_argument("content", nargs="?", help="new text ('-' or omitted: read stdin)")
    with_target(command("remove", "remove the entry containing OLD")).add_argument("old_text")
    with_target(command("apply", "apply an operations batch, all or nothing")).add_argument(
        "file", nargs="?", default="-", help="JSON file of operations ('-' = stdin)"
    )
    scan = command("scan", "check text with the threat scanner")
    scan.add_argument("text", nargs="?", help="text to scan ('-' or omitted: read stdin)")
    scan.add_argument("--jsonl", action="store_true", help="stdin holds one JSON string a line")
    command("pending", "list writes waiting for approval")
    command("approve", "apply a staged write").add_argument("id", help="pending id, or 'all'")
    command("reject", "discard a staged write").add_argument("id", help="pending id, or 'all'")
    command("approval", "turn write approval on or off").add_argument(
        "state", nargs="?", choices=["on", "off"]
    )
    history = command("history", "the change history, newest first")
    history.add_argument("--target", "-t", choices=TARGETS)
    history.add_argument("--limit", "-n", type=int, default=20)
    command("undo", "undo the newest change, or change ID").add_argument(
        "event_id", nargs="?", type=int
    )
    plugins_cli.register(cmds, common)  # setup | status | off: the external provider


# Far above any real batch (memory files are bounded to kilobytes); reading /dev/zero or a
# disk image must stop here with an error, not grow until memory runs out.
MAX_INPUT_BYTES = 4 * 1024 * 1024


def _read_bounded(handle: BinaryIO, what: str, source: str) -> str:
    # Bytes, decoded strictly: in UTF-8 mode (C/POSIX locales) Python would otherwise turn
    # invalid bytes into lone surrogates that fail much later, far from the cause.
    data = handle.read(MAX_INPUT_BYTES + 1)
    if len(data) > MAX_INPUT_BYTES:
        raise MemoryToolError(
            "too_large",
            f"the {what} in {source} are larger than {MAX_INPUT_BYTES // (1024 * 1024)} MiB, "
            "far beyond any memory file; nothing was read or written",
        )
    try:
        return decode_utf8(data)
    except UnicodeDecodeError as exc:
        raise MemoryToolError(
            "invalid",
            f"the {what} in {source} is not valid UTF-8 (byte 0x{data[exc.start]:02x} at "
            f"offset {exc.start})",
        ) from exc


def _read_stdin(what: str) -> str:
    return _read_bounded(sys.stdin.buffer, what, "stdin")


def _text_arg(value: str | None, what: str) -> str:
    if value is not None and value != "-":
        return value
    if value is None and sys.stdin.isatty():
        raise MemoryToolError("invalid", f"give the {what} as an argument or on stdin")
    return _read_stdin(what)


def _write(args: argparse.Namespace, operations: Any) -> int:
    service = args.service_factory()
    result = service.write(Target(args.target), operations)
    text = result["message"]
    for warning in result.get("warnings") or []:
        text += f"\nwarning: {warning}"
    _emit(args, result, text)
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    service: MemoryService = args.service_factory()
    service.rescan()
    if args.prompt:
        snapshot = service.prompt_snapshot()
        _emit(args, {"ok": True, "prompt": snapshot}, snapshot or "(memory is empty)")
        return 0
    targets = [Target(args.target)] if args.target else list(Target)
    payload: dict[str, Any] = {"ok": True}
    lines: list[str] = []
    for target in targets:
        current = service.read(target)
        use = usage_of(target, current.entries, current.limit)
        payload[target.value] = {**use, "path": str(current.path), "items": current.entries}
        flag = "  OVER BUDGET" if current.over_budget else ""
        lines.append(
            f"{target.filename}  {use['chars']:,}/{use['limit']:,} chars "
            f"({use['percent']}%), {use['entries']} entries{flag}"
        )
        for index, entry in enumerate(current.entries):
            body = entry.replace("\n", "\n      ")
            lines.append(f"  [{index}] {body}")
        lines.append("")
    pending = len(service.pending())
    approval = service.config.memory.write_approval
    payload.update(pending=pending, write_approval=approval)
    lines.append(f"write approval: {'on' if approval else 'off'}; pending writes: {pending}")
    _emit(args, payload, "\n".join(lines))
    return 0


def cmd_add(args: argparse.Namespace) -> int:
    content = _text_arg(args.content, "entry text")
    return _write(args, [{"action": "add", "content": content}])


def cmd_replace(args: argparse.Namespace) -> int:
    content = _text_arg(args.content, "new text")
    return _write(args, [{"action": "replace", "old_text": args.old_text, "content": content}])


def cmd_remove(args: argparse.Namespace) -> int:
    return _write(args, [{"action": "remove", "old_text": args.old_text}])


def cmd_apply(args: argparse.Namespace) -> int:
    source = "stdin" if args.file == "-" else args.file
    try:
        if args.file == "-":
            raw = _read_stdin("operations")
        else:
            with Path(args.file).open("rb") as handle:
                raw = _read_bounded(handle, "operations", source)
    except OSError as exc:
        raise MemoryToolError("invalid", f"cannot read operations from {source}: {exc}") from exc
    try:
        operations = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise MemoryToolError(
            "invalid",
            f"operations in {source} are not valid JSON: {exc.msg} at line {exc.lineno} "
            f"column {exc.colno}",
        ) from exc
    return _write(args, operations)


def _verdict_text(verdict: threats.Verdict) -> str:
    if not verdict.blocked:
        return "clean"
    found = [
        f"  {f.category} ({f.id}) at {f.start}-{f.end}: {f.excerpt!r}" for f in verdict.findings
    ]
    return "blocked\n" + "\n".join(found)


def cmd_scan(args: argparse.Namespace) -> int:
    if not args.jsonl:
        verdict = threats.scan(_text_arg(args.text, "text to scan"))
        _emit(args, verdict.model_dump(), _verdict_text(verdict))
        return 1 if verdict.blocked else 0
    failed = False
    lines = bounded_lines(sys.stdin.buffer, MAX_INPUT_BYTES, "text to scan")
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            text = json.loads(decode_utf8(raw))
            if not isinstance(text, str):
                raise ValueError("expected a JSON string")
        except ValueError as exc:
            failed = True
            print(json.dumps({"line": number, "error": f"not a JSON string: {exc}"}), flush=True)
            continue
        # Flushed line by line: a caller piping entries in reads each verdict as it is made.
        print(json.dumps(threats.scan(text).model_dump()), flush=True)
    return 1 if failed else 0


def _pending(service: MemoryService) -> PendingWrites:
    # Staged memory, skill and fact writes: `cairn memory pending|approve|reject` settles any.
    from engine.pending import PendingWrites

    return PendingWrites(service.home, service)


def _where(record: PendingWrite) -> str:
    """What a staged write changes, in a few letters: memory, user, skills or facts."""
    if record.subsystem != "memory":
        return record.subsystem[:6]
    return str(record.payload.get("target", "memory"))[:6]


def cmd_pending(args: argparse.Namespace) -> int:
    service: MemoryService = args.service_factory()
    records = _pending(service).records()
    invalid = _pending(service).invalid()
    lines = [f"{r.id}  {r.when()}  {r.origin:<17} {_where(r):<6} {r.summary}" for r in records]
    lines += [f"invalid  {bad['file']}: {bad['reason']}" for bad in invalid]
    _emit(
        args,
        {"ok": True, "pending": [r.model_dump() for r in records], "invalid": invalid},
        "\n".join(lines) or "no pending writes",
    )
    return 0


def _settle(args: argparse.Namespace, approve: bool) -> int:
    pending = _pending(args.service_factory())
    if args.id != "all":
        result = pending.approve(args.id) if approve else pending.reject(args.id)
        _emit(args, result, result["message"])
        return 0
    outcomes = pending.settle_all(approve)
    failed = [o for o in outcomes if not o.get("ok")]
    lines = [("ok: " if o.get("ok") else "failed: ") + o["message"] for o in outcomes]
    _emit(
        args,
        {"ok": not failed, "results": outcomes},
        "\n".join(lines) or "no pending writes",
    )
    return 1 if failed else 0


def cmd_approve(args: argparse.Namespace) -> int:
    return _settle(args, approve=True)


def cmd_reject(args: argparse.Namespace) -> int:
    return _settle(args, approve=False)


def cmd_approval(args: argparse.Namespace) -> int:
    service: MemoryService = args.service_factory()
    if args.state is None:
        on = service.config.memory.write_approval
        _emit(args, {"ok": True, "write_approval": on}, f"write approval: {'on' if on else 'off'}")
        return 0
    result = service.set_approval(args.state == "on")
    _emit(args, result, result["message"])
    return 0


def cmd_history(args: argparse.Namespace) -> int:
    target = Target(args.target) if args.target else None
    service: MemoryService = args.service_factory()
    service.rescan()  # so an edit made outside Cairn shows up before it is asked about
    events = service.events(target, args.limit)
    lines = []
    for event in events:
        when = datetime.fromtimestamp(event.at).strftime("%Y-%m-%d %H:%M:%S")
        what = event.entry_after or event.entry_before or event.detail.get("summary") or ""
        lines.append(
            f"#{event.id:<5} {when}  {event.target:<6} {event.action:<13} {event.origin:<17} "
            f"{' '.join(str(what).split())[:60]}"
        )
    _emit(
        args,
        {"ok": True, "events": [e.model_dump() for e in events]},
        "\n".join(lines) or "no recorded changes",
    )
    return 0


def cmd_undo(args: argparse.Namespace) -> int:
    result = args.service_factory().undo(args.event_id)
    _emit(args, result, result["message"])
    return 0
