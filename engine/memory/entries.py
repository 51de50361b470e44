"""The on-disk and in-prompt format of a bounded memory file.

A file is its entries joined by ``"\\n§\\n"``; usage is the length of exactly that string, so the
delimiters count against the budget just as they cost prompt space.
"""

from __future__ import annotations

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
    def title(self) -> str:
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
            f"{target.title} [OVER BUDGET {pct}% — {figures}] "
            "— only writes that shrink it are accepted: consolidate now"
        )
    line = f"{target.title} [{pct}% — {figures}]"
    if chars > limit * CONSOLIDATE_AT:
        line += " — above 80%: consolidate (merge or remove entries) before adding more"
    return line


def prompt_block(target: Target, entries: list[str], limit: int, chars: int | None = None) -> str:
    """The block shown in the system prompt; an empty store renders nothing.

    ``chars`` is the usage to report when ``entries`` differ from the file (withheld entries
    are shown as placeholders but still count against the budget).
    """
    if not entries:
        return ""
    used = usage(entries) if chars is None else chars
    return "\n".join([RULE, header(target, used, limit), RULE, render(entries)])
