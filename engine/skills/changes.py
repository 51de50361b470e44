"""One skill change: the history record (:class:`SkillChange`), the change worked out before
commit, and the checks on its text (old text read safely, a patch's target located, sizes).
"""

from __future__ import annotations

import contextlib
import difflib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel

from engine.fsutil import decode_utf8
from engine.skills.guard import (
    GuardVerdict,
)
from engine.skills.requests import _MAX_PREVIEWS, Author, SkillRequest, _preview
from engine.skills.store import (
    SKILL_FILE,
    SKILL_MD_MAX_CHARS,
    SkillError,
)

# Texts kept in the history: a SKILL.md always fits; a bigger supporting file is noted as
# changed without its text, so the log stays a few megabytes at most.
HISTORY_TEXT_MAX = SKILL_MD_MAX_CHARS


class SkillChange(BaseModel):
    """One applied skill change: a line of ``<skills>/.history.jsonl``."""

    at: float  # unix seconds, when it was committed
    action: str  # one of ACTIONS
    skill: str  # category/name, or name
    file: str = SKILL_FILE  # the file the change wrote or removed (delete: SKILL.md)
    author: Author
    origin: str
    session_id: str | None = None
    pending_id: str | None = None
    summary: str
    before: str | None = None  # the file's text before; None when it did not exist
    after: str | None = None  # and after; None when it no longer exists
    omitted: bool = False  # a text was too long (or not UTF-8) to keep: before/after are None
    absorbed_into: str | None = None  # delete: the skill that took over this one's steps


def _kept(text: str | None) -> tuple[str | None, bool]:
    """``text`` if the history keeps it, and whether it was left out."""
    if text is None or len(text) <= HISTORY_TEXT_MAX:
        return text, False
    return None, True


@dataclass
class _Change:
    """A change worked out and checked, waiting to be committed."""

    request: SkillRequest
    ref: str
    summary: str
    commit: Callable[[], None]
    verdict: GuardVerdict | None = None
    notes: list[str] = field(default_factory=list)
    # For the history: the file changed and its text before and after.
    file: str = SKILL_FILE
    before: str | None = None
    after: str | None = None
    unreadable: bool = False  # the old text could not be read as UTF-8


def _read_text(path: Path, shown: str) -> str:
    try:
        return decode_utf8(path.read_bytes())
    except FileNotFoundError:
        raise SkillError("not_found", f"{shown} does not exist") from None
    except UnicodeDecodeError:
        raise SkillError("invalid", f"{shown} is not UTF-8 text; it cannot be patched") from None
    except IsADirectoryError:
        raise SkillError("invalid", f"{shown} is a folder, not a file") from None
    except OSError as exc:
        raise SkillError("io", f"{shown} cannot be read ({exc.strerror})") from None


def _old_text(path: Path) -> tuple[str | None, bool]:
    """For the history: ``path``'s text, and whether it existed but could not be read."""
    if path.is_symlink() or not path.is_file():
        return None, path.is_symlink()
    try:
        if path.stat().st_size > 4 * HISTORY_TEXT_MAX:
            return None, True
        return decode_utf8(path.read_bytes()), False
    except (OSError, UnicodeDecodeError):
        return None, True


def _positions(text: str, needle: str) -> list[int]:
    # Overlapping matches count: "aa" occurs twice in "aaa", so it does not name one place.
    found: list[int] = []
    start = 0
    while len(found) <= _MAX_PREVIEWS:
        index = text.find(needle, start)
        if index < 0:
            break
        found.append(index)
        start = index + 1
    return found


def _line_preview(text: str, index: int, length: int) -> str:
    """``line N: '…'``, the line(s) holding a match, cut to a window around it."""
    line = text.count("\n", 0, index) + 1
    start = text.rfind("\n", 0, index) + 1
    end = text.find("\n", index + length)
    end = len(text) if end < 0 else end
    if end - start > 90:
        start = max(start, index - 30)
        end = min(end, index + length + 30)
    return f"line {line}: {_preview(text[start:end], 90)!r}"


def _closest_lines(text: str, needle: str) -> list[str]:
    probe = needle.strip().splitlines()[0] if needle.strip() else needle
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return difflib.get_close_matches(probe.strip(), lines, n=2, cutoff=0.6)


def _check_size(new: str, old: str | None, limit: int, shown: str) -> None:
    # Growing past the limit is refused; an over-limit file (hand-edited, or another tool's)
    # may still be changed as long as the change does not make it larger.
    if len(new) > limit and (old is None or len(new) > len(old)):
        raise SkillError(
            "too_large",
            f"{shown} would be {len(new):,} chars; the limit is {limit:,}. Move detail into "
            "references/ files, which are read only when needed.",
            chars=len(new),
            limit=limit,
        )


def _require_body(body: str, shown: str) -> None:
    # A SKILL.md is its instructions; front matter alone is an index line with nothing to
    # read on demand, and other tools sharing the home refuse to load such a file.
    if not body.strip():
        raise SkillError(
            "invalid",
            f"{shown} has no instructions after its front matter; give a body (Markdown steps)",
        )


def _skill_usage(folder: Path) -> tuple[int, int]:
    """(files, bytes) of everything in a skill folder, SKILL.md included."""
    files = size = 0
    for dirpath, _dirs, names in os.walk(folder):
        for name in names:
            with contextlib.suppress(OSError):
                size += os.lstat(Path(dirpath) / name).st_size
                files += 1
    return files, size
