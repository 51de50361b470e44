"""Planning: every candidate entry's fate (imported, present, duplicate, near duplicate,
blocked, invalid, overflow) and every file copy's, decided without writing a byte.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from engine.config import Config, ConfigError, load_config
from engine.fsutil import (
    link_target,
)
from engine.home import Home
from engine.memory import threats
from engine.memory.entries import DELIMITER, EntryError, Target, usage
from engine.memory.errors import MemoryToolError
from engine.memory.operations import AddOp, RemoveOp, ReplaceOp, apply_to_entries
from engine.memory.store import MemoryFile, MemoryStore
from engine.migrate.dedupe import Index, Record
from engine.migrate.openclaw.files import (
    OUTSIDE,
    _Candidate,
    _clean,
    _context,
    _daily_files,
    _file_sha256,
    _leaves,
    _sha256,
    _Skip,
    _workspace_files,
    body_of,
    read_source_text,
)
from engine.migrate.openclaw.models import (
    Counts,
    EntryOutcome,
    FileCopy,
    FileKind,
    MigrationError,
    MigrationReport,
    Options,
    Progress,
    SourceFile,
    Status,
    TargetPlan,
    _check_stop,
)
from engine.migrate.openclaw.scan import _read_and_parse, _Scanner, _Workers
from engine.migrate.openclaw.source import _is_dir, find_source
from engine.migrate.parse import Block


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


def _ops(plan: TargetPlan) -> list[AddOp | ReplaceOp | RemoveOp]:
    ops: list[AddOp | ReplaceOp | RemoveOp] = [
        RemoveOp(action="remove", old_text=t) for t in plan.remove
    ]
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
