"""``cairn claw …``: OpenClaw migration and cleanup from a terminal or a script.

Both commands show exactly what they would do first. ``--dry-run`` stops there; otherwise a
terminal asks for confirmation, and without a terminal ``--yes`` is required (the command
refuses rather than guess). ``--json`` prints the full report. Exit status: 0 done (or nothing
to do), 1 refused or failed (nothing changed unless the message says so), 2 usage error.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engine.cli_output import emit as _emit
from engine.errors import CairnError
from engine.migrate.cleanup import CleanupReport, apply_cleanup, plan_cleanup
from engine.migrate.openclaw import (
    MigrationReport,
    Options,
    apply_migration,
    plan_migration,
)

SHOWN = 10  # blocked / overflow / skipped lines on a terminal before "… and N more"
PREVIEW = 90


def register(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    claw = sub.add_parser("claw", parents=[common], help="import from OpenClaw, then tidy up")
    cmds = claw.add_subparsers(dest="claw_command", required=True, metavar="COMMAND")

    migrate = cmds.add_parser(
        "migrate", parents=[common], help="import an OpenClaw workspace into this home"
    )
    migrate.set_defaults(handler=_guarded(cmd_migrate))
    migrate.add_argument("--source", type=Path, help="OpenClaw folder (default: ~/.openclaw …)")
    migrate.add_argument("--dry-run", action="store_true", help="show what would change, only")
    migrate.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")
    migrate.add_argument(
        "--overwrite",
        action="store_true",
        help="migrated entries and files win over existing ones (which go to the backup "
        "and the overflow file)",
    )
    migrate.add_argument(
        "--workspace-target", type=Path, help="project folder to copy the workspace AGENTS.md to"
    )
    migrate.add_argument(
        "--priority",
        choices=["newest", "oldest"],
        default="newest",
        help="which daily-log entries get the room when not all fit (default: newest)",
    )

    cleanup = cmds.add_parser(
        "cleanup", parents=[common], help="rename leftover OpenClaw folders to *.pre-migration"
    )
    cleanup.set_defaults(handler=_guarded(cmd_cleanup))
    cleanup.add_argument("--dry-run", action="store_true", help="show what would be renamed")
    cleanup.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")
    cleanup.add_argument(
        "--source",
        type=Path,
        action="append",
        help="a folder to rename instead of the usual ones (repeatable)",
    )


# -- plumbing ------------------------------------------------------------------------------------


class _Refused(CairnError):
    """The command stopped before changing anything; ``payload`` is what --json adds (the
    plan that was not applied)."""

    def __init__(self, code: str, message: str, payload: dict[str, Any] | None = None) -> None:
        super().__init__(code, message)
        self.payload = payload or {}


def _guarded(handler: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    @functools.wraps(handler)
    def run(args: argparse.Namespace) -> int:
        try:
            return handler(args)
        except CairnError as exc:  # MigrationError, CleanupError, _Refused
            payload = {"ok": False, "error": exc.code, "message": exc.message}
            payload.update(getattr(exc, "payload", {}) or exc.details)
            if args.json:
                print(json.dumps(payload, ensure_ascii=False, indent=2, default=str))
            else:
                print(f"cairn: {exc.message}", file=sys.stderr)
            return 1

    return run


class _Bar:
    """A one-line progress bar on stderr, only on a terminal and only for long stages."""

    def __init__(self) -> None:
        self.labels = {"read": "reading", "scan": "scanning", "write": "writing"}
        self.enabled = sys.stderr.isatty()
        self.drawn = False

    def __call__(self, stage: str, done: int, total: int) -> None:
        if not self.enabled or total < 100:
            return
        filled = int(30 * done / total) if total else 30
        label = self.labels.get(stage, stage)
        sys.stderr.write(f"\r{label:<9} [{'#' * filled}{'.' * (30 - filled)}] {done:,}/{total:,}")
        sys.stderr.flush()
        self.drawn = True

    def close(self) -> None:
        if self.drawn:
            sys.stderr.write("\n")
            sys.stderr.flush()
            self.drawn = False


def _confirm(args: argparse.Namespace, question: str, what: str) -> None:
    if args.yes:
        return
    if not sys.stdin.isatty():
        raise _Refused(
            "confirm", f"not {what} without --yes (stdin is not a terminal); nothing changed"
        )
    answer = input(f"{question} [y/N] ")
    if answer.strip().lower() not in ("y", "yes"):
        raise _Refused("cancelled", "nothing changed")


def visible(text: str) -> str:
    """``text`` with invisible and direction-changing characters spelled out, so a hostile
    entry cannot reorder or hide what a report shows (``invoice\u202egpj.exe``)."""
    return "".join(
        f"\\u{ord(ch):04x}" if unicodedata.category(ch) in ("Cf", "Cc") and ch != "\n" else ch
        for ch in text
    )


def _full(text: str) -> str:
    """An entry as it will be stored, continuation lines indented under the marker."""
    return visible(text).replace("\n", "\n    ")


def _line(text: str) -> str:
    flat = " ".join(visible(text).split())
    return flat if len(flat) <= PREVIEW else flat[: PREVIEW - 1] + "…"


# -- migrate -------------------------------------------------------------------------------------


def describe(report: MigrationReport) -> str:
    """The report as a person reads it: what was found, what happens to it, where it goes."""
    src = report.source
    verb = "" if report.applied else "would "
    lines = [f"Source: {src.workspace} (found as {src.found_by})"]
    for other in src.others:
        lines.append(f"  also present, not read: {other}")
    daily = [f for f in report.files if f.kind == "daily"]
    skipped = [f for f in report.files if f.status == "skipped"]
    empty = [f for f in report.files if f.status == "empty"]
    c = report.counts
    lines.append(
        f"Read {len(daily) - sum(1 for f in daily if f.status == 'skipped'):,} daily logs "
        f"and {sum(1 for f in report.files if f.kind in ('memory', 'user')):,} memory files: "
        f"{c.parsed:,} entries ({len(skipped):,} files skipped, {len(empty):,} empty)"
    )
    lines.append("")
    for plan in report.targets:
        change = f"+{len(plan.add):,} entries"
        if plan.remove:
            change += f", -{len(plan.remove):,} replaced"
        off = "" if plan.enabled else "  (turned off in config.yaml)"
        lines.append(
            f"{plan.target.filename:<10} {plan.chars_before:,} → {plan.chars_after:,} / "
            f"{plan.limit:,} chars: {change}{off}"
        )
    for copy in report.copies:
        action = {"create": f"{verb}create", "replace": f"{verb}replace"}.get(
            copy.action, copy.action
        )
        where = f" {copy.destination}" if copy.destination else ""
        why = f": {copy.reason}" if copy.reason else ""
        lines.append(f"{copy.name:<10} {action}{where}{why}")
    lines += [
        "",
        f"Entries: {c.parsed:,} = {c.imported:,} {'imported' if report.applied else 'to import'}"
        f" + {c.already_present:,} "
        f"already there + {c.duplicate:,} duplicates + {c.near_duplicate:,} near duplicates + "
        f"{c.blocked:,} blocked + {c.invalid:,} invalid + {c.overflow:,} overflow",
    ]
    if c.displaced:
        lines.append(f"Existing entries pushed out by --overwrite: {c.displaced:,}")

    def section(title: str, rows: list[str], limit: int | None = SHOWN) -> None:
        if not rows:
            return
        lines.extend(["", title])
        lines.extend("  " + r for r in rows[:limit])
        if limit is not None and len(rows) > limit:
            lines.append(f"  … and {len(rows) - SHOWN:,} more (--json lists them all)")

    section(
        "Blocked by the threat scanner (not imported):",
        [
            f"{e.file}:{e.line} [{', '.join(e.categories)}] {_line(e.text)}"
            for e in report.outcomes("blocked")
        ],
    )
    section(
        "Invalid (cannot be one entry):",
        [f"{e.file}:{e.line} {e.reason}" for e in report.outcomes("invalid")],
    )
    section("Skipped files:", [f"{f.path}: {f.reason}" for f in skipped])
    section("Links leading out of their folder (not followed):", report.refused_links, None)
    overflow = report.outcomes("overflow") + report.outcomes("displaced")
    if overflow:
        if report.overflow_file:
            dest = str(report.overflow_file)
        elif report.overflow_recorded:
            dest = f"already recorded in {report.overflow_recorded}"
        else:
            dest = "<home>/migration/<timestamp>/overflow.md"
        section(
            f"Did not fit ({len(overflow):,}, priority {report.options.priority} first) → {dest}:",
            [f"{e.file or 'existing'}:{e.line or '-'} {_line(e.text)}" for e in overflow],
        )
    for plan in report.targets:
        section(
            f"{'Added to' if report.applied else 'Would add to'} {plan.target.filename}:",
            [f"+ {_full(t)}" for t in plan.add],
            limit=None,  # the change itself: always in full
        )
        section(
            f"{'Removed from' if report.applied else 'Would remove from'} {plan.target.filename}:",
            [f"- {_full(t)}" for t in plan.remove],
            limit=None,
        )
    for warning in report.warnings:
        lines.append(f"warning: {warning}")
    lines.append("")
    if report.applied:
        if report.migration_dir is None:
            lines.append("Nothing changed: everything is already migrated.")
        else:
            lines.append(f"Backup of the previous state: {report.backup}")
            lines.append(f"Report: {report.report_file}")
            lines.append("New memories take effect in the next session.")
    elif not report.writes_anything:
        lines.append("Nothing to change: everything is already migrated.")
    return "\n".join(lines)


def _payload(report: MigrationReport, dry_run: bool) -> dict[str, Any]:
    return {
        "ok": True,
        "dry_run": dry_run,
        "changes": report.changes,
        **report.model_dump(mode="json"),
    }


def cmd_migrate(args: argparse.Namespace) -> int:
    options = Options(
        source=args.source,
        workspace_target=args.workspace_target,
        overwrite=args.overwrite,
        priority=args.priority,
    )
    bar = _Bar()
    try:
        report = plan_migration(args.home_path, options, progress=bar)
    finally:
        bar.close()
    if args.dry_run or not report.writes_anything:
        text = describe(report)
        if args.dry_run and report.writes_anything:
            text += "\nDry run: nothing was changed."
        _emit(args, _payload(report, args.dry_run), text)
        return 0
    if not args.json:
        print(describe(report))
    try:
        _confirm(args, "Apply this migration?", "migrating")
    except _Refused as exc:
        exc.payload = _payload(report, True) | {"ok": False}
        raise
    try:
        done = apply_migration(args.home_path, report, progress=bar)
    finally:
        bar.close()
    if args.json:
        _emit(args, _payload(done, False), "")
    else:
        print(
            f"\nDone: {sum(len(t.add) for t in done.targets):,} entries imported. "
            f"Backup: {done.backup}. Report: {done.report_file}."
        )
        for warning in done.warnings[len(report.warnings) :]:
            print(f"warning: {warning}")
    return 0


# -- cleanup -------------------------------------------------------------------------------------


def describe_cleanup(report: CleanupReport) -> str:
    if not report.renames:
        return "No OpenClaw folders found; nothing to clean up."
    lines = []
    for r in report.renames:
        if r.status in ("planned", "renamed"):
            verb = "renamed" if r.status == "renamed" else "would rename"
            lines.append(f"{verb}: {r.source} → {r.destination}")
        else:
            lines.append(f"{r.status}: {r.source}: {r.reason}")
            lines.extend(f"    {p}" for p in r.processes)
    lines.extend(f"note: {n}" for n in report.notes)
    if not report.applied and report.planned:
        lines.append("Nothing is deleted; undo with mv.")
    return "\n".join(lines)


def cmd_cleanup(args: argparse.Namespace) -> int:
    report = plan_cleanup(sources=args.source)
    payload: dict[str, Any] = {"ok": True, "dry_run": args.dry_run}
    if args.dry_run or not report.planned:
        _emit(args, payload | report.model_dump(mode="json"), describe_cleanup(report))
        return 1 if any(r.status == "refused" for r in report.renames) else 0
    if not args.json:
        print(describe_cleanup(report))
    try:
        _confirm(args, "Rename these folders?", "renaming")
    except _Refused as exc:
        exc.payload = report.model_dump(mode="json")
        raise
    done = apply_cleanup(report)
    failed = [r for r in done.renames if r.status in ("failed", "refused")]
    payload |= done.model_dump(mode="json")
    payload["ok"] = not failed
    if args.json:
        _emit(args, payload, "")
    else:
        print("\n".join(f"renamed: {r.source} → {r.destination}" for r in done.renames
                        if r.status == "renamed"))  # fmt: skip
        for r in failed:
            print(f"cairn: {r.source} was not renamed: {r.reason}", file=sys.stderr)
    return 1 if failed else 0
