"""The bounded store: MEMORY.md and USER.md on disk, read and written safely.

Writes take the file's lock, re-read it, apply the operations to what is really on disk, check
the budget, and replace the file atomically. A hand edit that Cairn could not write back verbatim
is copied aside first, and any edit made outside Cairn is entered in the history before Cairn's
own change, so the timeline never skips a state.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from engine.config import Config
from engine.fsutil import atomic_write_text, decode_utf8, locked, real_target
from engine.home import Home, HomeError
from engine.memory import threats
from engine.memory.entries import Target, is_canonical, parse, render, usage
from engine.memory.errors import MemoryToolError
from engine.memory.operations import (
    AddOp,
    RemoveOp,
    ReplaceOp,
    apply_to_entries,
    check_budget,
    find_entry,
)

if TYPE_CHECKING:
    from engine.memory.history import History
    from engine.memory.history_file import LazyHistory

log = logging.getLogger(__name__)

# Far beyond any budget, small enough that a stray multi-megabyte file is refused, not loaded.
# A store configured with a very large limit may grow to 8 bytes per allowed character (twice
# the limit in 4-byte UTF-8), so whatever Cairn may write, it can read back.
MAX_FILE_BYTES = 256 * 1024
BYTES_PER_CHAR_ALLOWED = 8

Op = AddOp | ReplaceOp | RemoveOp


@dataclass(frozen=True)
class MemoryFile:
    target: Target
    path: Path
    text: str
    entries: list[str]
    limit: int

    @property
    def chars(self) -> int:
        return usage(self.entries)

    @property
    def over_budget(self) -> bool:
        return self.chars > self.limit


@dataclass
class WriteOutcome:
    target: Target
    changed: bool
    before: MemoryFile
    entries: list[str]
    event_id: int | None = None
    backup: Path | None = None
    # Why the backup was made: "form" (a hand edit a rewrite normalises) or "foreign" (the
    # change removes or rewrites text Cairn never wrote, e.g. another tool's append).
    backup_reason: str | None = None
    warnings: list[str] = field(default_factory=list)


def read_memory_text(path: Path, max_bytes: int = MAX_FILE_BYTES) -> str:
    """The text of a memory file ("" when absent), or a ``file`` error saying what is wrong."""
    name = path.name
    try:
        if path.is_dir():
            raise MemoryToolError("file", f"{name} is a folder, not a file ({path})")
        with path.open("rb") as handle:
            data = handle.read(max_bytes + 1)
    except FileNotFoundError:
        return ""
    except OSError as exc:
        raise MemoryToolError("file", f"{name} cannot be read: {exc.strerror} ({path})") from exc
    if len(data) > max_bytes:
        raise MemoryToolError(
            "file",
            f"{name} is larger than {max_bytes // 1024:,} KiB — far beyond its memory "
            f"budget, so it was not loaded. Move it aside or trim it ({path})",
        )
    if b"\x00" in data:
        raise MemoryToolError(
            "file", f"{name} contains NUL bytes at offset {data.index(0)}; fix it ({path})"
        )
    try:
        return decode_utf8(data)
    except UnicodeDecodeError as exc:
        raise MemoryToolError(
            "file",
            f"{name} is not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
            f"re-save it as UTF-8 ({path})",
        ) from exc


def refuse_blocked(ops: list[Op], what: str) -> None:
    """Raise ``blocked`` if any text an operation would store fails the threat scan."""
    for op in ops:
        if isinstance(op, AddOp | ReplaceOp):
            verdict = threats.scan(op.content)
            if verdict.blocked:
                raise MemoryToolError(
                    "blocked",
                    f"{op.action} refused: the content looks like "
                    f"{', '.join(verdict.categories)}; nothing was {what}",
                    findings=[f.model_dump() for f in verdict.findings],
                )


def _event_entries(ops: list[Op], before: list[str]) -> tuple[str | None, str | None]:
    if len(ops) != 1:
        return None, None
    op = ops[0]
    if isinstance(op, AddOp):
        return None, op.content.strip()
    old = before[find_entry(before, op.old_text)]
    return old, (op.content.strip() if isinstance(op, ReplaceOp) else None)


class MemoryStore:
    def __init__(
        self, home: Home, config: Config, history: History | LazyHistory | None = None
    ) -> None:
        self.home = home
        self.config = config
        self.history = history

    def path(self, target: Target) -> Path:
        return self.home.memories_dir / target.filename

    def limit(self, target: Target) -> int:
        mem = self.config.memory
        return mem.memory_char_limit if target is Target.MEMORY else mem.user_char_limit

    def enabled(self, target: Target) -> bool:
        mem = self.config.memory
        return mem.memory_enabled if target is Target.MEMORY else mem.user_profile_enabled

    def read(self, target: Target) -> MemoryFile:
        path = self.path(target)
        limit = self.limit(target)
        text = read_memory_text(path, max(MAX_FILE_BYTES, BYTES_PER_CHAR_ALLOWED * limit))
        return MemoryFile(target, path, text, parse(text), limit)

    def read_noting_edits(self, target: Target) -> tuple[MemoryFile, int | None]:
        """``target`` as it is now, with an edit made outside Cairn entered in the history.

        Read under the file's lock: another Cairn process replaces the file and then records
        its event while holding it, so an unlocked look could fall between the two and take
        that write for an outside edit (a phantom remove and re-add in the timeline)."""
        path = self.path(target)
        lock = path.with_name(path.name + ".lock")
        with contextlib.ExitStack() as stack:
            # Every Cairn writer creates the lock before writing; with none there, no Cairn
            # write can be half done, and reading must not create one.
            if lock.exists():
                with contextlib.suppress(OSError):  # unopenable: look without the lock
                    stack.enter_context(locked(lock))
            current = self.read(target)
            try:
                event = self.note_external_edit(current)
            except Exception as exc:  # the history is a log; reading must not fail with it
                log.debug("could not record an external edit of %s: %s", target.filename, exc)
                event = None
        return current, event

    def note_external_edit(self, current: MemoryFile, known: str | None = None) -> int | None:
        """Enter ``current`` in the history if it differs from the last state Cairn recorded
        (an editor, another tool or a second Cairn changed the file); the new event's id.

        ``known`` is that last state when the caller already read it (under the file's lock,
        so the comparison cannot race another Cairn's write)."""
        if self.history is None:
            return None
        if known is None:
            known = self.history.last_state(current.target.value)
        state = render(current.entries)
        if known == state or (known is None and not state):
            return None
        return self.history.record(
            current.target.value,
            "external_edit",
            state_before=known,
            state_after=state,
            origin="external",
        )

    def write(
        self,
        target: Target,
        ops: list[Op],
        *,
        origin: str = "foreground",
        session_id: str | None = None,
        action: str | None = None,
        pending_id: str | None = None,
        detail: dict[str, object] | None = None,
        precondition: Callable[[list[str]], None] | None = None,
        enforce_budget: bool = True,
    ) -> WriteOutcome:
        """Apply ``ops`` to ``target`` as one all-or-nothing change.

        ``precondition`` sees the entries as re-read under the lock and may raise to refuse.
        ``enforce_budget`` off lets undo return to a state that existed, whatever the cap.
        """
        if not self.enabled(target):
            raise MemoryToolError(
                "disabled", f"{target.filename} is turned off in config.yaml; nothing written"
            )
        refuse_blocked(ops, "written")
        path = self.path(target)
        try:
            self.home.safe_folder(path.parent)
        except HomeError as exc:
            raise MemoryToolError("unsafe", f"{exc}; nothing was written") from exc
        with contextlib.ExitStack() as stack:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                stack.enter_context(locked(path.with_name(path.name + ".lock")))
            except OSError as exc:
                raise MemoryToolError(
                    "io",
                    f"cannot lock {target.filename}: {exc.strerror} ({exc.filename or path}); "
                    "nothing was written",
                ) from exc
            return self._write_locked(
                target,
                ops,
                origin,
                session_id,
                action,
                pending_id,
                detail or {},
                precondition,
                enforce_budget,
            )

    def _write_locked(
        self,
        target: Target,
        ops: list[Op],
        origin: str,
        session_id: str | None,
        action: str | None,
        pending_id: str | None,
        detail: dict[str, object],
        precondition: Callable[[list[str]], None] | None,
        enforce_budget: bool = True,
    ) -> WriteOutcome:
        before = self.read(target)
        outcome = WriteOutcome(target, False, before, before.entries)
        # What Cairn last wrote (None: nothing, or no history to ask): entries beyond it were
        # written by someone else, and a rewrite must not drop them unseen.
        known: str | None = None
        if self.history is not None:
            try:
                known = self.history.last_state(target.value)
                self.note_external_edit(before, known)
            except Exception as exc:  # the files are the truth; a broken log must not block
                log.warning("memory history unavailable: %s", exc)
                outcome.warnings.append(f"change history not recorded: {exc}")
        if precondition is not None:
            precondition(before.entries)
        after = apply_to_entries(before.entries, ops)
        if enforce_budget:
            check_budget(target, before.entries, after, before.limit, ops)
        outcome.entries = after
        if after == before.entries:
            return outcome
        ours = set(parse(known or ""))
        kept = set(after)
        if before.text and not is_canonical(before.text):
            outcome.backup, outcome.backup_reason = self._backup(before), "form"
        elif known is not None and any(e not in ours and e not in kept for e in before.entries):
            outcome.backup, outcome.backup_reason = self._backup(before), "foreign"
        new_text = render(after)
        try:
            atomic_write_text(before.path, new_text)
        except OSError as exc:
            raise MemoryToolError(
                "io", f"cannot write {target.filename}: {exc.strerror}; nothing was changed"
            ) from exc
        outcome.changed = True
        if self.history is not None and not outcome.warnings:
            entry_before, entry_after = _event_entries(ops, before.entries)
            try:
                outcome.event_id = self.history.record(
                    target.value,
                    action or (ops[0].action if len(ops) == 1 else "batch"),
                    entry_before=entry_before,
                    entry_after=entry_after,
                    state_before=render(before.entries),
                    state_after=new_text,
                    origin=origin,
                    session_id=session_id,
                    pending_id=pending_id,
                    detail={"operations": [op.model_dump() for op in ops], **detail},
                )
            except Exception as exc:
                log.warning("memory history unavailable: %s", exc)
                outcome.warnings.append(f"change history not recorded: {exc}")
        return outcome

    def _backup(self, current: MemoryFile) -> Path:
        """Keep a verbatim copy of a hand edit that the rewrite would normalise away."""
        real = real_target(current.path)
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + f"{time.time() % 1:.6f}"[1:]
        backup = real.with_name(f"{real.name}.bak.{stamp}")
        try:
            atomic_write_text(backup, current.text)
        except OSError as exc:
            raise MemoryToolError(
                "io",
                f"{current.path.name} was edited by hand in a form Cairn cannot keep verbatim, "
                f"and the backup copy could not be written ({exc.strerror}); nothing was changed",
            ) from exc
        return backup
