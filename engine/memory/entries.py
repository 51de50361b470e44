"""The on-disk and in-prompt format of a bounded memory file.

A file is its entries joined by ``"\\n§\\n"``; usage is the length of exactly that string, so the
delimiters count against the budget just as they cost prompt space.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

DELIMITER = "\n§\n"
RULE = "═" * 46
CONSOLIDATE_AT = 0.8


class Target(StrEnum):
    MEMORY = "memory"
    USER = "user"

    @property
    def filename(self) -> str:
        return "MEMORY.md" if self is Target.MEMORY else "USER.md"

    @property
    def heading(self) -> str:
        # Not `title`: a str enum member would shadow str.title with a different signature.
        return (
            "MEMORY (your personal notes)"
            if self is Target.MEMORY
            else "USER PROFILE (who the user is)"
        )


class EntryError(ValueError):
    """Text that cannot be stored as one entry without breaking the file format."""


def parse(text: str) -> list[str]:
    """Entries of a file's text: split on the full delimiter line, strip, drop empties.

    A bare ``§`` inside an entry is kept; only a line holding nothing but ``§`` separates.
    """
    text = text.replace("\r\n", "\n")
    return [part.strip() for part in text.split(DELIMITER) if part.strip()]


def render(entries: list[str]) -> str:
    return DELIMITER.join(entries)


def usage(entries: list[str]) -> int:
    return len(render(entries))


def is_canonical(text: str) -> bool:
    """True when rewriting ``text`` from its parsed entries would change nothing but a final
    newline (which editors add on save)."""
    canonical = render(parse(text))
    return text in (canonical, canonical + "\n")


def clean_entry(content: str) -> str:
    """The entry ``content`` becomes when stored, or :class:`EntryError` saying why it cannot."""
    if not isinstance(content, str):
        raise EntryError(f"content must be text, not {type(content).__name__}")
    entry = content.replace("\r\n", "\n").strip()
    if not entry or not entry.replace("§", "").strip():
        raise EntryError("content is empty (only whitespace or § delimiters)")
    bad = next((ch for ch in entry if ord(ch) < 32 and ch not in "\n\t"), None)
    if bad is not None:
        raise EntryError(f"content contains the control character U+{ord(bad):04X}")
    lone = next((ch for ch in entry if 0xD800 <= ord(ch) <= 0xDFFF), None)
    if lone is not None:
        raise EntryError(
            f"content contains U+{ord(lone):04X}, half of a surrogate pair: not valid text"
        )
    if any(line == "§" for line in entry.split("\n")):
        raise EntryError("content contains a line holding only '§', which is the entry delimiter")
    return entry


def percent(chars: int, limit: int) -> int:
    return chars * 100 // limit


def header(target: Target, chars: int, limit: int) -> str:
    pct = percent(chars, limit)
    figures = f"{chars:,}/{limit:,} chars"
    if chars > limit:
        return (
            f"{target.heading} [OVER BUDGET {pct}% — {figures}] "
            "— only writes that shrink it are accepted: consolidate now"
        )
    line = f"{target.heading} [{pct}% — {figures}]"
    if chars > limit * CONSOLIDATE_AT:
        line += " — above 80%: consolidate (merge or remove entries) before adding more"
    return line


# A file over its limit (edited by hand, written by another tool) is shown in the prompt up
# to its limit plus this share of it; the rest is withheld behind a marker, so a 250 KB file
# costs the window no more than a full one would.
OVER_BUDGET_SHOWN = 0.25
# An entry cut to fit shows at least this much of its start; less would be no use to merge.
MIN_CUT_CHARS = 200
CUT_MARK = " [… this entry continues beyond what the prompt shows]"


@dataclass(frozen=True)
class PromptView:
    """The entries the prompt shows of a file, and what it leaves out."""

    entries: list[str] = field(default_factory=list)
    withheld_entries: int = 0  # entries left out, or shown only in part
    withheld_chars: int = 0


def prompt_view(entries: list[str], limit: int) -> PromptView:
    """The entries of a file as the prompt shows them: all of them up to ``limit`` plus
    25%, in file order; past that the entry that does not fit is cut (when at least 200
    characters of it fit, or it is the first) and the rest are withheld."""
    room = limit + int(limit * OVER_BUDGET_SHOWN)
    if usage(entries) <= room:
        return PromptView(list(entries))
    shown: list[str] = []
    used = 0
    for index, entry in enumerate(entries):
        gap = len(DELIMITER) if shown else 0
        if used + gap + len(entry) <= room:
            shown.append(entry)
            used += gap + len(entry)
            continue
        left = room - used - gap - len(CUT_MARK)
        if left >= MIN_CUT_CHARS or not shown:
            # Shown in part; still counted among the withheld entries.
            shown.append(entry[: max(left, MIN_CUT_CHARS)].rstrip() + CUT_MARK)
            used += gap + max(left, MIN_CUT_CHARS)
        return PromptView(shown, len(entries) - index, max(0, usage(entries) - used))
    return PromptView(shown)


def withheld_marker(target: Target, view: PromptView) -> str:
    return (
        f"[… {view.withheld_chars:,} more characters of {target.filename} "
        f"({view.withheld_entries:,} entries, in whole or in part) are not shown: the file is "
        "far over its limit. Consolidate it: merge related entries above into fewer with "
        "replace and drop outdated ones with remove; what is withheld shows here as room "
        "frees up. The user can also edit the file or run `cairn memory show`.]"
    )


def prompt_block(
    target: Target,
    entries: list[str],
    limit: int,
    chars: int | None = None,
    *,
    view: PromptView | None = None,
) -> str:
    """The block shown in the system prompt; an empty store renders nothing.

    ``chars`` is the usage to report when ``entries`` differ from the file (withheld entries
    are shown as placeholders but still count against the budget). ``view`` says what
    :func:`prompt_view` left out when the caller already bounded ``entries``; without it
    ``entries`` are bounded here.
    """
    if not entries:
        return ""
    used = usage(entries) if chars is None else chars
    if view is None:
        view = prompt_view(entries, limit)
        entries = view.entries
    lines = [RULE, header(target, used, limit), RULE, render(entries)]
    if view.withheld_entries:
        lines.append(withheld_marker(target, view))
    return "\n".join(lines)
