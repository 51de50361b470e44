"""The data of a migration: where OpenClaw keeps its files, the options, the plan and report
models, and the errors a migration raises.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from engine.errors import CairnError
from engine.memory.entries import Target

# Where OpenClaw keeps its state, newest name first: it was called Clawdbot, then Moltbot.
STATE_DIR_NAMES = (".openclaw", ".clawdbot", ".moltbot", ".moldbot")
CONFIG_NAMES = ("openclaw.json", "clawdbot.json", "moltbot.json")
STATE_DIR_ENV = "OPENCLAW_STATE_DIR"
WORKSPACE_ENV = "OPENCLAW_WORKSPACE_DIR"
PROFILE_ENV = "OPENCLAW_PROFILE"
# Workspace files with no Cairn counterpart: reported, left where they are.
NOT_MIGRATED = ("IDENTITY.md", "TOOLS.md", "HEARTBEAT.md", "BOOT.md", "BOOTSTRAP.md")
# A daily log of a mebibyte is hundreds of pages; anything bigger is not a log worth parsing
# into a 2,200-character file, and scanning it would take minutes.
MAX_FILE_BYTES = 1024 * 1024
DAILY_NAME = re.compile(r"^(\d{4})-(\d{2})-(\d{2})(?:[-_ T.][^/]*)?\.md$", re.IGNORECASE)
HEADING_CHARS = 40
# Headings that only name the file ("# 2024-03-05", "## Daily log", "# User", "# Long-term
# memory") say nothing the date prefix or the target file does not; they would only cost room.
_FILLER_WORDS = (
    "daily log logs notes note journal memory memories day today user profile long term md"
)
_FILLER = frozenset([*_FILLER_WORDS.split(), "about", "me", "my", "the"])
_CONTEXT_PREFIX = re.compile(r"^\[(?!BLOCKED:)[^\]\n]{1,160}\] ")

Priority = Literal["newest", "oldest"]
Status = Literal[
    "imported",
    "already_present",
    "duplicate",
    "near_duplicate",
    "blocked",
    "invalid",
    "overflow",
    "displaced",
]
FileKind = Literal["daily", "memory", "user", "soul", "agents", "other"]
CopyAction = Literal["create", "replace", "unchanged", "kept", "blocked", "skipped"]
Progress = Callable[[str, int, int], None]


class MigrationError(CairnError):
    """The migration was refused or stopped; ``code`` is stable, ``message`` says why and
    what to do. Nothing was changed unless the message says otherwise."""


class MigrationCancelled(MigrationError):
    def __init__(self) -> None:
        super().__init__("cancelled", "migration cancelled; nothing was changed")


class Options(BaseModel):
    source: Path | None = None
    workspace_target: Path | None = None
    overwrite: bool = False
    priority: Priority = "newest"
    max_file_bytes: int = Field(default=MAX_FILE_BYTES, ge=1)


class Source(BaseModel):
    root: Path  # the OpenClaw folder (state dir), or the workspace when given directly
    workspace: Path
    found_by: str
    config_file: Path | None = None
    others: list[Path] = Field(default_factory=list)  # further OpenClaw folders that exist


class Counts(BaseModel):
    parsed: int = 0
    imported: int = 0
    already_present: int = 0
    duplicate: int = 0
    near_duplicate: int = 0
    blocked: int = 0
    invalid: int = 0
    overflow: int = 0
    displaced: int = 0  # existing entries pushed out (only with --overwrite)

    @classmethod
    def of(cls, tally: Counter[str]) -> Counts:
        return cls(parsed=sum(n for s, n in tally.items() if s != "displaced"), **tally)

    def merge(self, other: Counts) -> None:
        for name in Counts.model_fields:
            setattr(self, name, getattr(self, name) + getattr(other, name))


class SourceFile(BaseModel):
    path: str  # relative to the workspace
    kind: FileKind
    date: str | None = None
    status: Literal["parsed", "empty", "skipped", "copy"]
    reason: str | None = None
    bytes: int | None = None
    code_blocks: int = 0
    tables: int = 0
    counts: Counts = Field(default_factory=Counts)


class EntryOutcome(BaseModel):
    target: Target
    status: Status
    text: str
    file: str | None = None  # None: an entry already in the Cairn home
    line: int | None = None
    date: str | None = None
    reason: str | None = None
    duplicate_of: str | None = None
    categories: list[str] = Field(default_factory=list)


class TargetPlan(BaseModel):
    target: Target
    path: Path
    limit: int
    enabled: bool
    existing: list[str]  # as read when planning; applying refuses if the file moved on
    chars_before: int
    add: list[str] = Field(default_factory=list)  # in the order they will be written
    remove: list[str] = Field(default_factory=list)
    chars_after: int
    counts: Counts = Field(default_factory=Counts)

    @property
    def changes(self) -> bool:
        return bool(self.add or self.remove)


class FileCopy(BaseModel):
    name: str  # SOUL.md or AGENTS.md
    source: Path
    destination: Path | None
    action: CopyAction
    reason: str | None = None
    source_sha256: str | None = None
    destination_sha256: str | None = None  # as planned; None: absent
    categories: list[str] = Field(default_factory=list)

    @property
    def changes(self) -> bool:
        return self.action in ("create", "replace")


class MigrationReport(BaseModel):
    """The plan, and after :func:`apply_migration` also what was done."""

    home: Path
    source: Source
    options: Options
    applied: bool = False
    changed: bool = False
    targets: list[TargetPlan]
    copies: list[FileCopy]
    files: list[SourceFile]
    entries: list[EntryOutcome]  # everything but exact duplicates (counted per file only)
    counts: Counts
    # Every entry that did not fit is already in this earlier run's overflow file.
    overflow_recorded: Path | None = None
    migration_dir: Path | None = None
    backup: Path | None = None
    overflow_file: Path | None = None
    report_file: Path | None = None
    event_ids: list[int] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    # Links in the source (or at the AGENTS.md destination) that lead out of their tree and
    # were not followed: "path -> where it leads".
    refused_links: list[str] = Field(default_factory=list)

    @property
    def changes(self) -> bool:
        """Whether applying would change the memory files, SOUL.md or AGENTS.md."""
        return any(t.changes for t in self.targets) or any(c.changes for c in self.copies)

    @property
    def writes_anything(self) -> bool:
        return self.changes or (bool(self.overflowing) and self.overflow_recorded is None)

    @property
    def overflowing(self) -> list[EntryOutcome]:
        return [e for e in self.entries if e.status in ("overflow", "displaced")]

    def outcomes(self, status: Status) -> list[EntryOutcome]:
        return [e for e in self.entries if e.status == status]


def _check_stop(should_stop: Callable[[], bool] | None) -> None:
    if should_stop is not None and should_stop():
        raise MigrationCancelled()
