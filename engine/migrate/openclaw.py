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
"""

from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import io
import json
import multiprocessing
import os
import re
import stat
import sys
import tarfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from engine.config import Config, ConfigError, load_config
from engine.errors import CairnError
from engine.fsutil import (
    TEMP_PREFIX,
    atomic_write_bytes,
    atomic_write_text,
    fsync_dir,
    link_target,
    locked,
    resolves_inside,
)
from engine.home import Home, HomeError
from engine.memory import threats
from engine.memory.entries import DELIMITER, EntryError, Target, clean_entry, usage
from engine.memory.errors import MemoryToolError
from engine.memory.operations import AddOp, RemoveOp, apply_to_entries
from engine.memory.service import MemoryService
from engine.memory.store import MemoryFile, MemoryStore
from engine.migrate.dedupe import Index, Record
from engine.migrate.parse import Block, Parsed, parse_markdown

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


# -- models --------------------------------------------------------------------------------------


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


# -- finding the source --------------------------------------------------------------------------


def _config_workspace(config_file: Path, user_home: Path) -> Path | None:
    """The workspace ``openclaw.json`` names, if any. The file is JSON5 in practice, so a
    strict parse is tried first and a tolerant search for the key second."""
    try:
        raw = config_file.read_text("utf-8", errors="replace")
    except OSError:
        return None
    value: Any = None
    try:
        data = json.loads(raw)
        for path in (("agents", "defaults", "workspace"), ("agent", "workspace")):
            node: Any = data
            for key in path:
                node = node.get(key) if isinstance(node, dict) else None
            if isinstance(node, str) and node.strip():
                value = node
                break
    except ValueError:
        match = re.search(r"""["']?\bworkspace["']?\s*:\s*["']([^"'\n]+)["']""", raw)
        value = match.group(1) if match else None
    if not value:
        return None
    text = value.strip()
    if text == "~" or text.startswith("~/"):
        return user_home / text[2:]
    return Path(text)


def _looks_like_workspace(folder: Path) -> bool:
    names = ("memory", "MEMORY.md", "memory.md", "USER.md", "SOUL.md", "AGENTS.md")
    return any((folder / name).exists() for name in names)


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:  # a symlink loop, a permission problem
        return False


def find_source(
    given: Path | None = None,
    *,
    user_home: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> Source:
    """Where the OpenClaw data is: ``given``, else ``$OPENCLAW_STATE_DIR``, else the first of
    ``~/.openclaw``, ``~/.clawdbot``, ``~/.moltbot``, ``~/.moldbot`` that exists."""
    env = os.environ if environ is None else environ
    user_home = user_home if user_home is not None else Path.home()
    candidates: list[tuple[Path, str]] = []
    if given is not None:
        given = given.expanduser()
        if not _is_dir(given):
            raise MigrationError("no_source", f"--source {given} is not a folder")
        candidates.append((given.absolute(), "--source"))
    else:
        if env.get(STATE_DIR_ENV):
            candidates.append((Path(env[STATE_DIR_ENV]).expanduser(), f"${STATE_DIR_ENV}"))
        candidates += [(user_home / name, f"~/{name}") for name in STATE_DIR_NAMES]
    existing = [(path, how) for path, how in candidates if _is_dir(path)]
    if not existing:
        looked = ", ".join(how for _, how in candidates)
        raise MigrationError(
            "no_source", f"no OpenClaw folder found (looked at {looked}); name one with --source"
        )
    root, found_by = existing[0]
    others = [path for path, _ in existing[1:] if path != root]
    config_file = next((root / n for n in CONFIG_NAMES if (root / n).is_file()), None)

    workspace: Path | None = None
    if given is None and env.get(WORKSPACE_ENV):
        workspace = Path(env[WORKSPACE_ENV]).expanduser()
    elif _is_dir(root / "workspace"):
        workspace = root / "workspace"
    elif config_file is not None:
        workspace = _config_workspace(config_file, user_home)
    if workspace is None and given is None:
        profile = env.get(PROFILE_ENV, "")
        if profile and profile != "default" and _is_dir(root / f"workspace-{profile}"):
            workspace = root / f"workspace-{profile}"
    if workspace is None and _looks_like_workspace(root):
        workspace = root  # the workspace folder itself was given
    if workspace is None or not _is_dir(workspace):
        raise MigrationError(
            "no_source",
            f"{root} has no OpenClaw workspace (no workspace/ folder, none named in its "
            "config, and no MEMORY.md, USER.md, SOUL.md, AGENTS.md or memory/ in it)",
        )
    return Source(
        root=root,
        workspace=workspace.absolute(),
        found_by=found_by,
        config_file=config_file,
        others=others,
    )


# -- reading -------------------------------------------------------------------------------------


class _Skip(Exception):
    """A source file that is not read; the message is the reason shown in the report."""


def _leaves(path: Path, tree: Path | None) -> bool:
    return tree is not None and not resolves_inside(path, tree)


OUTSIDE = ", outside "  # in the reason of every link refused for leaving its tree


def _refusal(path: Path) -> str:
    return f"a link to {link_target(path)}, outside the source folder: not followed"


def read_source_text(
    path: Path, max_bytes: int = MAX_FILE_BYTES, tree: Path | None = None
) -> tuple[str, int]:
    """A source file's text and size, or :class:`_Skip` with a reason a user can act on.

    With ``tree``, a file reached through a link that leads outside it is refused: a workspace
    whose SOUL.md links to /etc/passwd must not put that file in every system prompt.
    """
    if _leaves(path, tree):
        raise _Skip(_refusal(path))
    try:
        info = path.stat()
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _Skip("symlink loop: the link never reaches a file") from exc
        if path.is_symlink():
            raise _Skip("dangling symlink: its target does not exist") from exc
        raise _Skip(f"cannot be read: {exc.strerror}") from exc
    if not stat.S_ISREG(info.st_mode):
        raise _Skip("not a regular file")
    if info.st_size > max_bytes:
        raise _Skip(
            f"too large ({info.st_size:,} bytes; the limit is {max_bytes:,}): "
            "split or trim it and run again"
        )
    try:
        with path.open("rb") as handle:
            data = handle.read(max_bytes + 1)
    except OSError as exc:
        raise _Skip(f"cannot be read: {exc.strerror}") from exc
    if len(data) > max_bytes:
        raise _Skip(f"grew past {max_bytes:,} bytes while being read")
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16"), len(data)
        except UnicodeDecodeError as exc:
            raise _Skip(f"not valid UTF-16 despite its byte-order mark ({exc.reason})") from exc
    if b"\x00" in data:
        raise _Skip(f"binary (a NUL byte at offset {data.index(0):,})")
    try:
        return data.decode("utf-8-sig"), len(data)
    except UnicodeDecodeError as exc:
        raise _Skip(
            f"not UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start:,}): "
            "re-save it as UTF-8 and run again"
        ) from exc


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _file_sha256(path: Path) -> str | None:
    try:
        return _sha256(path.read_bytes())
    except FileNotFoundError:
        return None


@functools.lru_cache(maxsize=4096)
def _context(date_text: str | None, headings: tuple[str, ...]) -> str:
    """The prefix that keeps where an entry came from: ``[2024-03-05 · Work › Deploys] ``."""
    path = []
    for heading in headings:
        if date_text:
            heading = heading.replace(date_text, " ").strip(" -–—:·|,()[]")
        if all(w.casefold() in _FILLER for w in re.findall(r"\w+", heading)):
            continue
        heading = heading.replace("]", ")").replace("[", "(")
        if len(heading) > HEADING_CHARS:
            heading = heading[: HEADING_CHARS - 1].rstrip() + "…"
        path.append(heading)
    parts = [p for p in (date_text, " › ".join(path)) if p]
    return f"[{' · '.join(parts)}] " if parts else ""


_NEEDS_CHECK = re.compile("[\x00-\x08\x0b-\x1f\ud800-\udfff§]")


def _clean(text: str) -> str:
    """``clean_entry``, skipped for the common text that has nothing it could object to."""
    stripped = text.strip()
    if stripped and not _NEEDS_CHECK.search(stripped):
        return stripped
    return clean_entry(text)


def body_of(entry: str) -> str:
    """An entry without the context prefix a migration gave it (for comparison)."""
    return _CONTEXT_PREFIX.sub("", entry, count=1)


@dataclass
class _Candidate:
    target: Target
    file: str | None
    line: int | None
    date: str | None
    text: str
    record: Record
    order: tuple[Any, ...]
    existing: bool = False


def _workspace_files(workspace: Path) -> dict[str, list[Path]]:
    """The workspace's migratable files by kind (case variants of MEMORY.md both count)."""
    found: dict[str, list[Path]] = {"soul": [], "agents": [], "memory": [], "user": []}
    names = {"SOUL.md": "soul", "AGENTS.md": "agents", "MEMORY.md": "memory", "USER.md": "user"}
    try:
        listing = sorted(os.listdir(workspace))
    except OSError as exc:
        raise MigrationError("no_source", f"cannot list {workspace}: {exc.strerror}") from exc
    for name in listing:
        kind = names.get(name) or ("memory" if name == "memory.md" else None)
        if kind is not None:
            found[kind].append(workspace / name)
    if len(found["memory"]) == 2:
        with contextlib.suppress(OSError):
            if os.path.samefile(*found["memory"]):  # a case-insensitive file system
                found["memory"] = found["memory"][:1]
    found["other"] = [workspace / n for n in listing if n in NOT_MIGRATED]
    return found


def _daily_files(
    workspace: Path, files: list[SourceFile], tree: Path | None = None
) -> list[tuple[Path, str]]:
    folder = workspace / "memory"
    if os.path.lexists(folder) and _leaves(folder, tree):
        files.append(
            SourceFile(path="memory/", kind="daily", status="skipped", reason=_refusal(folder))
        )
        return []
    try:
        names = sorted(os.listdir(folder))
    except FileNotFoundError:
        return []
    except OSError as exc:
        reason = "symlink loop" if exc.errno == errno.ELOOP else exc.strerror
        files.append(SourceFile(path="memory/", kind="daily", status="skipped", reason=reason))
        return []
    daily: list[tuple[Path, str]] = []
    for name in names:
        rel = f"memory/{name}"
        path = folder / name
        match = DAILY_NAME.match(name)
        if _is_dir(path):
            link = path.is_symlink()
            files.append(
                SourceFile(
                    path=rel if link else rel + "/",
                    kind="other",
                    status="skipped",
                    reason=("a link to a folder, not followed" if link else "a folder")
                    + "; only date-named .md files directly in memory/ are daily logs",
                )
            )
            continue
        if match is None:
            files.append(
                SourceFile(
                    path=rel, kind="other", status="skipped", reason="not a date-named .md file"
                )
            )
            continue
        try:
            day = date(int(match.group(1)), int(match.group(2)), int(match.group(3)))
        except ValueError:
            files.append(
                SourceFile(path=rel, kind="other", status="skipped", reason="not a real date")
            )
            continue
        daily.append((path, day.isoformat()))
    return daily


# -- planning ------------------------------------------------------------------------------------


def _check_stop(should_stop: Callable[[], bool] | None) -> None:
    if should_stop is not None and should_stop():
        raise MigrationCancelled()


def _recorded_overflow(home: Home, wanted: set[tuple[str, str]]) -> Path | None:
    """The newest earlier run whose overflow file already holds every entry of ``wanted``."""
    try:
        runs = sorted(p for p in home.migration_dir.iterdir() if (p / "report.json").is_file())
    except OSError:
        return None
    for run in reversed(runs):
        try:
            data = json.loads((run / "report.json").read_text("utf-8"))
            held = {
                (e["target"], e["text"])
                for e in data.get("entries", [])
                if e.get("status") in ("overflow", "displaced")
            }
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            continue  # a damaged report proves nothing; the overflow is written again
        if wanted <= held and (run / "overflow.md").is_file():
            return run / "overflow.md"
    return None


def plan_migration(
    home: Home,
    options: Options | None = None,
    *,
    config: Config | None = None,
    progress: Progress | None = None,
    should_stop: Callable[[], bool] | None = None,
    user_home: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> MigrationReport:
    """Decide everything a migration would do, writing nothing."""
    options = options or Options()
    source = find_source(options.source, user_home=user_home, environ=environ)
    if options.workspace_target is not None and not _is_dir(options.workspace_target):
        raise MigrationError(
            "invalid", f"--workspace-target {options.workspace_target} is not a folder"
        )
    try:
        config = config if config is not None else load_config(home)
    except ConfigError as exc:
        raise MigrationError("config", str(exc)) from exc
    workspace = source.workspace
    # Every file read must resolve inside the workspace as it really is (the workspace itself
    # may be a link, e.g. into a synced folder); links leading elsewhere are refused.
    tree = Path(os.path.realpath(workspace))
    files: list[SourceFile] = []
    found = _workspace_files(workspace)
    daily = _daily_files(workspace, files, tree)
    for path in found["other"]:
        files.append(
            SourceFile(
                path=path.name,
                kind="other",
                status="skipped",
                reason="no Cairn counterpart; left where it is",
            )
        )

    # Read and parse every entry-bearing file.
    to_read: list[tuple[Path, FileKind, str | None]] = []
    to_read += [(p, "memory", None) for p in found["memory"]]
    to_read += [(p, "user", None) for p in found["user"]]
    to_read += [(p, "daily", day) for p, day in daily]
    candidates: dict[Target, list[_Candidate]] = {Target.MEMORY: [], Target.USER: []}
    file_of: dict[str, SourceFile] = {}
    for number, (path, kind, day) in enumerate(to_read):
        if number % 50 == 0:
            _check_stop(should_stop)
            if progress is not None:
                progress("read", number, len(to_read))
        rel = path.relative_to(workspace).as_posix()
        record = SourceFile(path=rel, kind=kind, date=day, status="parsed")
        files.append(record)
        file_of[rel] = record
        skipped, size, parsed = _read_and_parse(path, options.max_file_bytes, tree)
        if parsed is None:
            record.status, record.reason = "skipped", skipped
            continue
        record.bytes = size
        record.code_blocks, record.tables = parsed.code_blocks, parsed.tables
        if not parsed.blocks:
            record.status = "empty"
        target = Target.USER if kind == "user" else Target.MEMORY
        rank = 0 if kind in ("memory", "user") else 1
        for block in parsed.blocks:
            candidates[target].append(_candidate(target, rel, day, block, rank, number))
    if progress is not None:
        progress("read", len(to_read), len(to_read))

    # Reading only: no history (a dry run must not even create the database).
    store = MemoryStore(home, config, None)
    current = {target: _read_target(store, target) for target in Target}
    total = sum(len(c) for c in candidates.values())
    scanner = _Scanner(total, progress, should_stop)
    with _Workers(len(to_read)) as workers:
        parallel = workers.parallel
        if parallel:
            # A first pass with every text taken as clean finds the distinct texts the real
            # pass will ask about; the workers scan them while the pass goes on.
            for target in Target:
                _plan_target(
                    store, current[target], candidates[target], options, workers.scan, False
                )
            scanner.collect(workers)
    targets: list[TargetPlan] = []
    outcomes: list[EntryOutcome] = []
    for target in Target:
        plan, target_outcomes, per_file = _plan_target(
            store,
            current[target],
            candidates[target],
            options,
            scanner,
            tick=None if parallel else scanner.tick,  # after the workers, this pass is quick
        )
        targets.append(plan)
        outcomes += target_outcomes
        for name, tally in per_file.items():
            file_of[name].counts = Counts.of(tally)
    if progress is not None:
        progress("scan", total, total)
    # Listed in file order, as a person reads them, not in the order the priority chose.
    outcomes = sorted(
        outcomes,
        key=lambda o: (o.target != Target.MEMORY, o.file or "", o.line or 0),
    )

    agents_to = options.workspace_target / "AGENTS.md" if options.workspace_target else None
    planned = [
        _plan_copy("SOUL.md", found["soul"], home.soul_file, options, tree),
        _plan_copy("AGENTS.md", found["agents"], agents_to, options, tree),
    ]
    copies = [c for c in planned if c is not None]
    for copy in copies:
        files.append(
            SourceFile(
                path=copy.source.name,
                kind="soul" if copy.name == "SOUL.md" else "agents",
                status="copy",
                reason=copy.reason,
            )
        )
    counts = Counts()
    for plan in targets:
        counts.merge(plan.counts)
    refused = [f"{f.path} -> {f.reason}" for f in files if f.reason and OUTSIDE in f.reason]
    refused += [
        f"{c.destination} -> {c.reason}" for c in copies if c.reason and OUTSIDE in c.reason
    ]
    report = MigrationReport(
        home=home.root,
        source=source,
        options=options,
        targets=targets,
        copies=copies,
        files=sorted(files, key=lambda f: f.path),
        entries=outcomes,
        counts=counts,
        refused_links=refused,
    )
    if report.overflowing:
        wanted = {(e.target.value, e.text) for e in report.overflowing}
        report.overflow_recorded = _recorded_overflow(home, wanted)
    for plan in targets:
        if not plan.enabled and plan.counts.overflow:
            report.warnings.append(
                f"{plan.target.filename} is turned off in config.yaml: its "
                f"{plan.counts.overflow} entries go to the overflow file only"
            )
    return report


def _candidate(
    target: Target, rel: str, day: str | None, block: Block, rank: int, file_number: int
) -> _Candidate:
    text = _context(day, block.headings) + block.text
    return _Candidate(
        target=target,
        file=rel,
        line=block.line,
        date=day,
        text=text,
        record=Record.of(block.text),
        order=(rank, day or "", file_number, block.line),
    )


# Below this many files a process pool costs more than it saves.
PARALLEL_FROM = 100
SCAN_BATCH = 200


def _parallel_ok(files: int) -> bool:
    # Forking copies only the calling thread; with other threads alive (the desktop app's
    # engine thread, Qt's own) a child could inherit a lock held forever, so work serially.
    # Linux only: macOS system libraries are not fork-safe (Python defaults to spawn there).
    return (
        files >= PARALLEL_FROM
        and (os.cpu_count() or 1) > 1
        and threading.active_count() == 1
        and sys.platform.startswith("linux")
    )


def _read_and_parse(
    path: Path, max_bytes: int, tree: Path | None = None
) -> tuple[str | None, int, Parsed | None]:
    """One file's blocks and its size, or the reason it is skipped."""
    try:
        text, size = read_source_text(path, max_bytes, tree)
    except _Skip as exc:
        return str(exc), 0, None
    return None, size, parse_markdown(text)


_CLEAN = threats.Verdict(blocked=False, findings=[])


def _scan_chunk(texts: list[str]) -> list[threats.Verdict | None]:
    # Clean verdicts all look alike: send None and spare pickling thousands of them.
    return [verdict if (verdict := threats.scan(text)).blocked else None for text in texts]


class _Workers:
    """Threat scans on every core when that is safe and worth it. (Reading and parsing in the
    pool too was measured: shipping the parsed blocks back cost what it saved.) A context
    manager: the pool is always shut down, and killed if the plan fails or is cancelled."""

    def __init__(self, files: int) -> None:
        self.pool: Any = None
        self.batches: list[tuple[list[str], Any]] = []
        self.buffer: list[str] = []
        self.seen: set[str] = set()
        if _parallel_ok(files):
            try:
                self.pool = multiprocessing.get_context("fork").Pool(min(os.cpu_count() or 1, 8))
            except OSError:
                self.pool = None  # no process pool here (a sandbox without /dev/shm)

    @property
    def parallel(self) -> bool:
        return self.pool is not None

    def __enter__(self) -> _Workers:
        return self

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        if self.pool is None:
            return
        if error is None:
            self.pool.close()
        else:
            self.pool.terminate()
        self.pool.join()

    def scan(self, text: str) -> None:
        """Queue ``text`` for scanning (the first pass's ``scan``: it answers "clean")."""
        if text in self.seen:
            return None
        self.seen.add(text)
        self.buffer.append(text)
        if len(self.buffer) >= SCAN_BATCH:
            self.flush()
        return None

    def flush(self) -> None:
        if self.buffer and self.pool is not None:
            self.batches.append((self.buffer, self.pool.map_async(_scan_chunk, [self.buffer])))
        self.buffer = []


class _Scanner:
    """Threat-scan verdicts, each distinct text scanned once, with progress as it goes."""

    def __init__(
        self, total: int, progress: Progress | None, should_stop: Callable[[], bool] | None
    ) -> None:
        self.total = total
        self.done = 0
        self.progress = progress
        self.should_stop = should_stop
        self.cache: dict[str, threats.Verdict] = {}

    def tick(self) -> None:
        self.done += 1
        if self.done % 100 == 0:
            _check_stop(self.should_stop)
            if self.progress is not None:
                self.progress("scan", min(self.done, self.total), self.total)

    def __call__(self, text: str) -> threats.Verdict:
        verdict = self.cache.get(text)
        if verdict is None:
            verdict = self.cache[text] = threats.scan(text)
        return verdict

    def collect(self, workers: _Workers) -> None:
        """Wait for the workers' verdicts and keep them for the real pass."""
        workers.flush()
        done = 0
        total = sum(len(texts) for texts, _ in workers.batches)
        for texts, pending in workers.batches:
            while True:
                try:
                    [verdicts] = pending.get(timeout=0.2)
                    break
                except multiprocessing.TimeoutError:
                    _check_stop(self.should_stop)
            for text, verdict in zip(texts, verdicts, strict=True):
                self.cache[text] = _CLEAN if verdict is None else verdict
            done += len(texts)
            _check_stop(self.should_stop)
            if self.progress is not None:
                self.progress("scan", done, total)


def _read_target(store: MemoryStore, target: Target) -> MemoryFile:
    try:
        return store.read(target)
    except MemoryToolError as exc:
        raise MigrationError(
            "file", f"cannot merge into {target.filename}: {exc.message}; nothing was changed"
        ) from exc


def _plan_target(
    store: MemoryStore,
    current: MemoryFile,
    migrated: list[_Candidate],
    options: Options,
    scan: Callable[[str], threats.Verdict | None],
    collect: bool = True,
    tick: Callable[[], None] | None = None,
) -> tuple[TargetPlan, list[EntryOutcome], dict[str, Counter[str]]]:
    """Every candidate's fate for one target file. ``scan`` returning None means "take it as
    clean" (the first of two passes, which only collects what to scan, with ``collect``
    off: no per-entry outcomes)."""
    target = current.target
    enabled = store.enabled(target)
    limit = current.limit if enabled else 0
    # Curated files first (their entries were chosen by hand), then the daily logs in the
    # order the priority gives: newest first by default, so a full file keeps recent facts.
    curated = [c for c in migrated if c.order[0] == 0]
    daily = sorted((c for c in migrated if c.order[0] == 1), key=lambda c: c.order)
    if options.priority == "newest":
        daily.reverse()
    existing = [
        _Candidate(target, None, None, None, e, Record.of(body_of(e)), (-1, i), existing=True)
        for i, e in enumerate(current.entries)
    ]
    existing_by_text = {c.text: c for c in reversed(existing)}
    offered = [*curated, *daily]
    index = Index(Index.count(c.record for c in [*existing, *offered]))
    admitted: list[_Candidate] = []
    kept: list[_Candidate] = []
    reserved: set[str] = set()  # --overwrite: existing entries a migrated one confirmed
    chars = 0

    def admit(cand: _Candidate) -> None:
        index.add(cand.record, len(admitted))
        admitted.append(cand)

    def keep(cand: _Candidate, force: bool = False) -> bool:
        nonlocal chars
        grown = chars + (len(DELIMITER) if kept else 0) + len(cand.text)
        if grown > limit and not force:
            return False
        kept.append(cand)
        chars = grown
        return True

    if options.overwrite:
        stream = [*offered, *existing]
    else:
        # Existing entries stay whatever their size: a file already over budget takes nothing.
        for cand in existing:
            admit(cand)
            keep(cand, force=True)
        stream = offered
    tally: Counter[str] = Counter()
    per_file: dict[str, Counter[str]] = {}
    outcomes: list[EntryOutcome] = []
    displaced: list[str] = []

    def outcome(cand: _Candidate, status: Status, **extra: Any) -> None:
        tally[status] += 1
        if not collect:
            return
        if cand.file is not None:
            per_file.setdefault(cand.file, Counter())[status] += 1
        if status == "duplicate":
            return  # counted, not listed: they are the bulk, and say nothing new
        outcomes.append(
            EntryOutcome(
                target=target,
                status=status,
                text=cand.text,
                file=cand.file,
                line=cand.line,
                date=cand.date,
                **extra,
            )
        )

    def displace(cand: _Candidate, reason: str, duplicate_of: str | None = None) -> None:
        displaced.append(cand.text)
        outcome(cand, "displaced", reason=reason, duplicate_of=duplicate_of)

    for cand in stream:
        if cand.existing:  # only with --overwrite, after every migrated entry
            if cand.text in reserved:
                reserved.discard(cand.text)
                continue
            hit = index.find(cand.record)
            if hit is not None:
                displace(cand, "a migrated entry says the same", admitted[hit[0]].text)
                continue
            admit(cand)
            if not keep(cand):
                displace(cand, "no room left after the migrated entries")
            continue
        if tick is not None:
            tick()
        try:
            cand.text = _clean(cand.text)
        except EntryError as exc:
            outcome(cand, "invalid", reason=str(exc))
            continue
        same = existing_by_text.get(cand.text)
        if same is not None:
            outcome(cand, "already_present", reason="the same entry is already there")
            if options.overwrite and cand.text not in reserved:
                reserved.add(cand.text)
                admit(same)
                keep(same, force=True)
            continue
        hit = index.find(cand.record)
        if hit is not None:
            other, exact = admitted[hit[0]], hit[1]
            status: Status = (
                "already_present"
                if other.existing and exact
                else ("duplicate" if exact else "near_duplicate")
            )
            outcome(cand, status, duplicate_of=other.text)
            continue
        verdict = scan(cand.text)
        if verdict is not None and verdict.blocked:
            outcome(cand, "blocked", categories=verdict.categories)
            continue
        admit(cand)
        if keep(cand):
            outcome(cand, "imported")
        else:
            too_long = len(cand.text) > limit
            reason = (
                f"longer than the file's whole limit ({len(cand.text):,} > {limit:,} chars)"
                if too_long
                else "no room left"
            )
            outcome(cand, "overflow", reason=reason)

    # New entries are written in time order, whatever order the priority chose them in.
    new = sorted((c for c in kept if not c.existing), key=lambda c: c.order)
    plan = TargetPlan(
        target=target,
        path=current.path,
        limit=current.limit,
        enabled=enabled,
        existing=current.entries,
        chars_before=usage(current.entries),
        add=[c.text for c in new],
        remove=displaced,
        chars_after=0,
        counts=Counts.of(tally),
    )
    plan.chars_after = usage(apply_to_entries(current.entries, _ops(plan)))
    return plan, outcomes, per_file


def _ops(plan: TargetPlan) -> list[AddOp | RemoveOp]:
    ops: list[AddOp | RemoveOp] = [RemoveOp(action="remove", old_text=t) for t in plan.remove]
    return ops + [AddOp(action="add", content=t) for t in plan.add]


def _plan_copy(
    name: str,
    sources: list[Path],
    destination: Path | None,
    options: Options,
    tree: Path | None = None,
) -> FileCopy | None:
    if not sources:
        return None
    source = sources[0]
    copy = FileCopy(name=name, source=source, destination=destination, action="skipped")
    try:
        text, _ = read_source_text(source, options.max_file_bytes, tree)
    except _Skip as exc:
        copy.reason = str(exc)
        return copy
    # What gets written is the text as UTF-8 (a UTF-16 file would not load as a persona).
    copy.source_sha256 = _sha256(text.encode("utf-8"))
    if destination is None:
        copy.reason = "give --workspace-target DIR to copy it into that project folder"
        return copy
    if not text.strip():
        copy.reason = "empty"
        return copy
    if name == "AGENTS.md" and _leaves(destination, options.workspace_target):
        # A link there (dangling or not) would be written through to a file elsewhere.
        copy.reason = (
            f"{destination} is a link to {link_target(destination)}, outside "
            f"--workspace-target: not written through"
        )
        return copy
    verdict = threats.scan(text)
    if verdict.blocked:
        copy.action, copy.categories = "blocked", verdict.categories
        copy.reason = f"the threat scanner flagged it ({', '.join(verdict.categories)})"
        return copy
    try:
        copy.destination_sha256 = _file_sha256(destination)
    except OSError as exc:
        copy.reason = f"{destination} cannot be read: {exc.strerror}"
        return copy
    if copy.destination_sha256 is None:
        copy.action = "create"
    elif copy.destination_sha256 == copy.source_sha256:
        copy.action, copy.reason = "unchanged", "already identical"
    elif options.overwrite:
        copy.action = "replace"
    else:
        copy.action, copy.reason = "kept", f"{destination} exists; --overwrite replaces it"
    return copy


# -- applying ------------------------------------------------------------------------------------


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


__all__ = [
    "MAX_FILE_BYTES",
    "Counts",
    "EntryOutcome",
    "FileCopy",
    "MigrationCancelled",
    "MigrationError",
    "MigrationReport",
    "Options",
    "Source",
    "SourceFile",
    "TargetPlan",
    "apply_migration",
    "body_of",
    "find_source",
    "migrate",
    "plan_migration",
    "read_source_text",
]
