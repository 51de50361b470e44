"""Reading the workspace: which files there are (the bounded files, the daily logs), their
text read safely (size, links, encoding) and cleaned into candidate entries.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import os
import re
import stat
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from engine.fsutil import (
    link_target,
    resolves_inside,
)
from engine.memory.entries import Target, clean_entry
from engine.migrate.dedupe import Record
from engine.migrate.openclaw.models import (
    _CONTEXT_PREFIX,
    _FILLER,
    DAILY_NAME,
    HEADING_CHARS,
    MAX_FILE_BYTES,
    NOT_MIGRATED,
    MigrationError,
    SourceFile,
)
from engine.migrate.openclaw.source import _is_dir


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
