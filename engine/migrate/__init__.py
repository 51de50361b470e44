"""Importing from OpenClaw (``cairn claw migrate``) and tidying up after it (``cairn claw
cleanup``). :mod:`engine.migrate.openclaw` plans and applies a migration,
:mod:`engine.migrate.parse` turns Markdown logs into entries, :mod:`engine.migrate.dedupe`
finds duplicates, :mod:`engine.migrate.cleanup` renames the old folders."""

from engine.migrate.cleanup import CleanupReport, apply_cleanup, plan_cleanup
from engine.migrate.openclaw import (
    MigrationCancelled,
    MigrationError,
    MigrationReport,
    Options,
    apply_migration,
    find_source,
    migrate,
    plan_migration,
)

__all__ = [
    "CleanupReport",
    "MigrationCancelled",
    "MigrationError",
    "MigrationReport",
    "Options",
    "apply_cleanup",
    "apply_migration",
    "find_source",
    "migrate",
    "plan_cleanup",
    "plan_migration",
]
