"""``cairn claw migrate``: bring an OpenClaw workspace into a Cairn home.

Mapping (REFERENCE §10): ``SOUL.md`` → ``<home>/SOUL.md``; the workspace's ``AGENTS.md`` → the
folder given as ``--workspace-target``; ``MEMORY.md`` and ``USER.md`` → ``<home>/memories/``;
the daily logs ``memory/YYYY-MM-DD*.md`` → parsed into entries and consolidated into the one
bounded ``MEMORY.md``.

The work is split in two so that a preview is exact: :func:`plan_migration` reads everything and
decides every entry's fate without writing a byte; :func:`apply_migration` carries out that plan
and nothing else. Applying re-reads each memory file under its lock and refuses if it changed
since the plan, so a preview never goes stale silently.

Every candidate entry ends in exactly one bucket: imported, already present, duplicate, near
duplicate, blocked (the threat scanner flagged it), invalid (it cannot be one entry, e.g. a
control character) or overflow (no room left). Entries go through :class:`MemoryStore`, so the
lock, the scanner, the budget and the change history (origin ``migration``) apply to them as to
any other write. Existing memories stay unless ``--overwrite``; whatever does not fit is written
to ``<home>/migration/<timestamp>/overflow.md``; a backup archive of everything the run may
change is written before the first change. A run that would change nothing writes nothing.

The package, one job per module: ``models`` (options, plan and report, errors), ``source``
(finding the OpenClaw folders), ``files`` (reading the workspace's files safely), ``scan``
(reading and scanning many files, in parallel when it pays), ``plan`` (every entry's and file's
fate) and ``apply`` (carrying out a plan). Names with a leading underscore are shared inside
the package only.
"""

from __future__ import annotations

from engine.migrate.openclaw.apply import apply_migration, migrate
from engine.migrate.openclaw.files import OUTSIDE, body_of, read_source_text
from engine.migrate.openclaw.models import (
    CONFIG_NAMES,
    DAILY_NAME,
    HEADING_CHARS,
    MAX_FILE_BYTES,
    NOT_MIGRATED,
    PROFILE_ENV,
    STATE_DIR_ENV,
    STATE_DIR_NAMES,
    WORKSPACE_ENV,
    CopyAction,
    Counts,
    EntryOutcome,
    FileCopy,
    FileKind,
    MigrationCancelled,
    MigrationError,
    MigrationReport,
    Options,
    Priority,
    Progress,
    Source,
    SourceFile,
    Status,
    TargetPlan,
)
from engine.migrate.openclaw.plan import plan_migration
from engine.migrate.openclaw.scan import PARALLEL_FROM, SCAN_BATCH
from engine.migrate.openclaw.source import find_source

__all__ = [
    "CONFIG_NAMES",
    "DAILY_NAME",
    "HEADING_CHARS",
    "MAX_FILE_BYTES",
    "NOT_MIGRATED",
    "OUTSIDE",
    "PARALLEL_FROM",
    "PROFILE_ENV",
    "SCAN_BATCH",
    "STATE_DIR_ENV",
    "STATE_DIR_NAMES",
    "WORKSPACE_ENV",
    "CopyAction",
    "Counts",
    "EntryOutcome",
    "FileCopy",
    "FileKind",
    "MigrationCancelled",
    "MigrationError",
    "MigrationReport",
    "Options",
    "Priority",
    "Progress",
    "Source",
    "SourceFile",
    "Status",
    "TargetPlan",
    "apply_migration",
    "body_of",
    "find_source",
    "migrate",
    "plan_migration",
    "read_source_text",
]
