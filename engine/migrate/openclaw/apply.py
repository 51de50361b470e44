"""Applying a plan: the backup archive first, then each memory file re-read under its lock
(refused if it changed since the plan), the file copies and the overflow file.
"""

from __future__ import annotations

import io
import json
import os
import tarfile
import time
from collections.abc import Mapping
from pathlib import Path

from engine.config import Config, load_config
from engine.fsutil import (
    TEMP_PREFIX,
    atomic_write_bytes,
    atomic_write_text,
    fsync_dir,
    locked,
)
from engine.home import Home, HomeError
from engine.memory.errors import MemoryToolError
from engine.memory.service import MemoryService
from engine.migrate.openclaw.files import _file_sha256, _leaves, _sha256, _Skip, read_source_text
from engine.migrate.openclaw.models import (
    FileCopy,
    MigrationError,
    MigrationReport,
    Options,
    Progress,
    TargetPlan,
)
from engine.migrate.openclaw.plan import _ops, plan_migration


def _stamp(folder: Path) -> Path:
    base = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    folder.mkdir(parents=True, exist_ok=True)
    for n in range(1, 1000):
        candidate = folder / (base if n == 1 else f"{base}-{n}")
        try:
            candidate.mkdir(mode=0o700)  # its files hold memory entries: the owner's only
            return candidate
        except FileExistsError:
            continue
    raise MigrationError("io", f"cannot create a run folder in {folder}")


def _backup(home: Home, report: MigrationReport, run_dir: Path) -> Path:
    """A tar.gz of every file the run may change, written (and synced) before the first one."""
    members: list[tuple[Path, str]] = []
    memories = home.memories_dir
    if memories.is_dir():
        for path in sorted(memories.iterdir()):
            name = path.name
            if name.endswith(".lock") or name.startswith(TEMP_PREFIX) or not path.is_file():
                continue
            members.append((path, f"memories/{name}"))
    if home.soul_file.is_file():
        members.append((home.soul_file, "SOUL.md"))
    for copy in report.copies:
        if copy.name == "AGENTS.md" and copy.destination and copy.destination.is_file():
            members.append((copy.destination, "workspace-target/AGENTS.md"))
    manifest = {
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "home": str(home.root),
        "files": {arc: str(path) for path, arc in members},
        "restore": "extract over the home; workspace-target/AGENTS.md belongs in the folder "
        "given as --workspace-target",
    }
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for path, arc in members:
            archive.add(path, arcname=arc, recursive=False)
        blob = json.dumps(manifest, indent=2).encode()
        info = tarfile.TarInfo("MANIFEST.json")
        info.size, info.mtime = len(blob), int(time.time())
        archive.addfile(info, io.BytesIO(blob))
    target = run_dir / "backup.tar.gz"
    atomic_write_bytes(target, buffer.getvalue(), mode=0o600)
    return target


def _overflow_markdown(report: MigrationReport, stamp: str) -> str:
    lines = [
        f"# Entries that did not fit — migration {stamp}",
        "",
        f"Source: {report.source.workspace}. Priority: {report.options.priority} first. "
        "Nothing here is in memory; add what matters with `cairn memory add`, "
        "after making room.",
    ]
    for plan in report.targets:
        rows = [
            e
            for e in report.entries
            if e.target == plan.target and e.status in ("overflow", "displaced")
        ]
        if not rows:
            continue
        lines += ["", f"## {plan.target.filename} (limit {plan.limit:,} chars)", ""]
        for entry in rows:
            where = f"{entry.file}:{entry.line}" if entry.file else f"your {plan.target.filename}"
            body = entry.text.replace("\n", "\n  ")
            lines.append(f"- {body}\n  <!-- {entry.status} from {where} -->")
    return "\n".join(lines) + "\n"


def apply_migration(
    home: Home,
    report: MigrationReport,
    *,
    config: Config | None = None,
    progress: Progress | None = None,
) -> MigrationReport:
    """Carry out a plan from :func:`plan_migration`; the report of what was done.

    A plan that changes nothing (and whose overflow an earlier run already recorded) writes
    nothing at all, so running a migration twice is safe.
    """
    # Shallow: the entry lists are large and only read; what applying changes is copied.
    done = report.model_copy()
    done.copies = [c.model_copy() for c in report.copies]
    done.warnings = list(report.warnings)
    done.event_ids = []
    done.applied = True
    if not report.writes_anything:
        return done
    config = config if config is not None else load_config(home)
    try:
        home.safe_folder(home.migration_dir).mkdir(parents=True, exist_ok=True)
    except HomeError as exc:
        raise MigrationError("unsafe", f"{exc}; nothing was changed") from exc
    with locked(home.migration_dir / ".lock"):
        run_dir = _stamp(home.migration_dir)
        stamp = run_dir.name
        done.migration_dir = run_dir
        steps = 2 + len(report.targets) + len(report.copies)
        step = 0

        def advance() -> None:
            nonlocal step
            step += 1
            if progress is not None:
                progress("write", step, steps)

        try:
            done.backup = _backup(home, report, run_dir)
        except OSError as exc:
            raise MigrationError(
                "io", f"cannot write the backup archive ({exc.strerror}); nothing was changed"
            ) from exc
        advance()
        service = MemoryService(home, config)
        written: list[str] = []
        for plan in done.targets:
            if plan.changes:
                done.event_ids += _write_target(service, plan, report, stamp, done, written)
                written.append(plan.target.filename)
                done.changed = True
            advance()
        for copy in done.copies:
            if copy.changes:
                _write_copy(copy, done)
                done.changed = done.changed or copy.changes
            advance()
        if done.overflowing:
            done.overflow_file = run_dir / "overflow.md"
            atomic_write_text(done.overflow_file, _overflow_markdown(done, stamp), mode=0o600)
        done.report_file = run_dir / "report.json"
        # Owner only, like the backup: both hold every memory entry the run saw.
        atomic_write_text(done.report_file, done.model_dump_json(indent=2), mode=0o600)
        fsync_dir(run_dir)
        advance()
    return done


def _write_target(
    service: MemoryService,
    plan: TargetPlan,
    report: MigrationReport,
    stamp: str,
    done: MigrationReport,
    written: list[str],
) -> list[int]:
    def unchanged_since_plan(entries: list[str]) -> None:
        if entries != plan.existing:
            raise MemoryToolError(
                "conflict",
                f"{plan.target.filename} changed after the migration was planned; run it again",
            )

    try:
        outcome = service.store.write(
            plan.target,
            _ops(plan),
            # The standard action names ("batch", or "add" for one entry): the history only
            # counts those as commits when it looks for edits made outside Cairn.
            origin="migration",
            detail={
                "migration": stamp,
                "source": str(report.source.workspace),
                "added": len(plan.add),
                "removed": len(plan.remove),
            },
            precondition=unchanged_since_plan,
        )
    except MemoryToolError as exc:
        already = f" ({', '.join(written)} was already updated)" if written else ""
        raise MigrationError(
            exc.code,
            f"{plan.target.filename} was not changed: {exc.message}{already}. The backup is "
            f"{done.backup}",
        ) from exc
    done.warnings += outcome.warnings
    if outcome.backup is not None:
        done.warnings.append(
            f"{plan.target.filename} had been edited by hand; that version was kept as "
            f"{outcome.backup.name}"
        )
    return [outcome.event_id] if outcome.event_id is not None else []


def _write_copy(copy: FileCopy, done: MigrationReport) -> None:
    assert copy.destination is not None
    tree = Path(os.path.realpath(done.source.workspace))
    target = done.options.workspace_target if copy.name == "AGENTS.md" else None
    if _leaves(copy.destination, target):
        copy.action, copy.reason = "skipped", "the destination became a link meanwhile"
        done.warnings.append(f"{copy.name} not copied: {copy.reason}")
        return
    try:
        data = read_source_text(copy.source, done.options.max_file_bytes, tree)[0].encode("utf-8")
    except _Skip as exc:
        data, reason = b"", str(exc)
    else:
        reason = "the source changed after planning; run again"
    if _sha256(data) != copy.source_sha256:
        copy.action, copy.reason = "skipped", reason
        done.warnings.append(f"{copy.name} not copied: {copy.reason}")
        return
    if _file_sha256(copy.destination) != copy.destination_sha256:
        copy.action, copy.reason = "skipped", "the destination changed after planning; run again"
        done.warnings.append(f"{copy.name} not copied: {copy.reason}")
        return
    copy.destination.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(copy.destination, data)


def migrate(
    home: Home,
    options: Options | None = None,
    *,
    dry_run: bool = False,
    progress: Progress | None = None,
    user_home: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> MigrationReport:
    """Plan, and unless ``dry_run`` apply: the whole ``cairn claw migrate`` in one call."""
    report = plan_migration(home, options, progress=progress, user_home=user_home, environ=environ)
    return report if dry_run else apply_migration(home, report, progress=progress)
