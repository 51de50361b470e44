"""OpenClaw Markdown memory files → candidate memory entries.

OpenClaw's daily logs (``workspace/memory/YYYY-MM-DD.md``) and its curated ``MEMORY.md`` are
free Markdown, appended to by an agent over months. A bounded store wants facts, one per entry,
so the parser keeps what reads as a statement and drops what does not fit one entry:

- a list item (with its continuation lines and nested items) is one entry;
- a paragraph (soft-wrapped lines joined) is one entry, and so is a block quote;
- headings are not entries: the path of headings above a block is kept as its context;
- fenced and indented code blocks, tables, front matter and thematic breaks are skipped and
  counted, because a code listing or a table row is not a self-contained fact.

Everything else, HTML comments included, stays in the text, so that the threat scanner sees
what the agent would have seen (a hidden ``<!-- … -->`` instruction is blocked, not silently
stripped). The parser never fails on odd input: a stray fence runs to the end of the file, a
ragged table is still recognised by its pipes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from engine.memory.entries import DELIMITER

BlockKind = Literal["bullet", "paragraph", "quote", "entry"]

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_BREAK = re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_FENCE = re.compile(r"^([ \t]*)(`{3,}|~{3,})(.*)$")
_ITEM = re.compile(r"^([ \t]*)([-*+]|\d{1,9}[.)])(?:[ \t]+(.*)|[ \t]*)$")
_QUOTE = re.compile(r"^ {0,3}>[ \t]?")
_TABLE_DELIM = re.compile(r"^[ \t]*\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$")
_TASK = re.compile(r"^\[[ xX]\][ \t]+")


# Plain dataclasses, not pydantic models: these never cross a boundary (the report copies what
# it needs into its own models), and a thousand logs make tens of thousands of them.
@dataclass(frozen=True, slots=True)
class Block:
    """One candidate entry as found in a file: its text, the headings above it, where it is."""

    text: str
    line: int  # 1-based line of the block's first line
    kind: BlockKind
    headings: tuple[str, ...] = ()


@dataclass(slots=True)
class Parsed:
    """What a file held: its blocks, and how many blocks were skipped as not entry-shaped."""

    blocks: list[Block]
    code_blocks: int = 0
    tables: int = 0
    delimited: bool = False  # the file was already in the §-delimited memory format


def _indent(line: str) -> int:
    if "\t" in line:
        line = line.expandtabs(4)
    return len(line) - len(line.lstrip(" "))


def _is_table_row(line: str) -> bool:
    return line.lstrip().startswith("|")


@dataclass
class _Item:
    line: int
    marker_indent: int
    parts: list[str] = field(default_factory=list)  # the item's own text, soft-wrapped
    nested: list[str] = field(default_factory=list)  # nested items, each "  - text"
    blank: bool = False  # a blank line was seen inside the item

    def text(self) -> str:
        head = " ".join(p for p in self.parts if p)
        head = _TASK.sub("", head).strip()
        lines = [head] if head else []
        lines += self.nested
        return "\n".join(lines)


class _Parser:
    def __init__(self, text: str) -> None:
        self.lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        self.blocks: list[Block] = []
        self.code_blocks = 0
        self.tables = 0
        self.headings: list[tuple[int, str]] = []
        self.para: list[str] = []
        self.para_line = 0
        self.para_kind: BlockKind = "paragraph"
        self.item: _Item | None = None

    # -- emitting --------------------------------------------------------------------------

    def _emit(self, text: str, line: int, kind: BlockKind) -> None:
        text = text.strip()
        if text:
            path = tuple(h for _, h in self.headings)
            self.blocks.append(Block(text=text, headings=path, line=line, kind=kind))

    def flush_para(self) -> None:
        if self.para:
            self._emit(" ".join(p.strip() for p in self.para), self.para_line, self.para_kind)
        self.para = []

    def flush_item(self) -> None:
        if self.item is not None:
            self._emit(self.item.text(), self.item.line, "bullet")
        self.item = None

    def flush(self) -> None:
        self.flush_para()
        self.flush_item()

    # -- the walk ----------------------------------------------------------------------------

    def run(self) -> Parsed:
        lines = self.lines
        i = self._front_matter()
        while i < len(lines):
            i = self._line(i)
        self.flush()
        return Parsed(blocks=self.blocks, code_blocks=self.code_blocks, tables=self.tables)

    def _front_matter(self) -> int:
        # YAML front matter is metadata about the file, not something the agent noted.
        if not self.lines or self.lines[0].strip() != "---":
            return 0
        for end in range(1, min(len(self.lines), 200)):
            if self.lines[end].strip() in ("---", "..."):
                return end + 1
        return 0

    def _skip_fence(self, i: int, fence: str) -> int:
        char, size = fence[0], len(fence)
        self.code_blocks += 1
        i += 1
        while i < len(self.lines):
            stripped = self.lines[i].strip()
            if stripped.startswith(char * size) and not stripped.strip(char):
                return i + 1
            i += 1
        return i  # an unclosed fence runs to the end of the file, as in CommonMark

    def _skip_table(self, i: int) -> int:
        self.tables += 1
        while i < len(self.lines) and self.lines[i].strip() and "|" in self.lines[i]:
            i += 1
        return i

    def _heading(self, level: int, text: str) -> None:
        self.flush()
        while self.headings and self.headings[-1][0] >= level:
            self.headings.pop()
        text = " ".join(text.strip().strip("#").split())
        if text:
            self.headings.append((level, text))

    def _line(self, i: int) -> int:
        line = self.lines[i]
        stripped = line.strip()
        indent = _indent(line)
        item = self.item

        if not stripped:
            self.flush_para()
            if item is not None:
                item.blank = True
            return i + 1

        if indent < 4 and stripped[0].isalpha() and "|" not in line:
            # Most lines are prose: no marker, fence, heading or table can start with a
            # letter, so only the list-item continuation question is left.
            if item is not None:
                if not item.blank or indent > item.marker_indent:
                    return self._continue_item(item, stripped, i)
                self.flush_item()
            return self._text(i, stripped)

        fence = _FENCE.match(line)
        if fence and not (fence.group(2)[0] == "`" and "`" in fence.group(3)):
            if item is not None and indent > item.marker_indent:
                return self._skip_fence(i, fence.group(2))  # code inside the item: drop it
            self.flush()
            return self._skip_fence(i, fence.group(2))

        if _is_table_row(line) or (
            "|" in line
            and i + 1 < len(self.lines)
            and "|" in self.lines[i + 1]
            and "-" in self.lines[i + 1]
            and _TABLE_DELIM.match(self.lines[i + 1])
        ):
            if item is None or indent <= item.marker_indent:
                self.flush()
            else:
                self.flush_para()
            return self._skip_table(i)

        heading = _ATX.match(line)
        if heading and indent < 4:
            self._heading(len(heading.group(1)), heading.group(2) or "")
            return i + 1

        setext = _SETEXT.match(line)
        if setext and self.para and item is None and self.para_kind == "paragraph":
            text = " ".join(p.strip() for p in self.para)
            self.para = []
            self._heading(1 if setext.group(1)[0] == "=" else 2, text)
            return i + 1

        if _BREAK.match(line):
            self.flush()
            return i + 1

        bullet = _ITEM.match(line)
        if bullet:
            body = (bullet.group(3) or "").strip()
            if item is not None and indent > item.marker_indent:
                self.flush_para()
                if body:
                    depth = 1 + max(0, (indent - item.marker_indent - 1) // 2)
                    item.nested.append("  " * depth + "- " + _TASK.sub("", body))
                return i + 1
            self.flush()
            self.item = _Item(line=i + 1, marker_indent=indent, parts=[body])
            return i + 1

        if item is not None:
            if not item.blank or indent > item.marker_indent:
                return self._continue_item(item, stripped, i)
            self.flush_item()

        if indent >= 4 and not self.para:
            # An indented code block: it cannot interrupt a paragraph, and it ends at the
            # first line that is indented less.
            self.code_blocks += 1
            while i < len(self.lines) and (
                not self.lines[i].strip() or _indent(self.lines[i]) >= 4
            ):
                i += 1
            return i

        quote = _QUOTE.match(line)
        if quote:
            body = line
            while _QUOTE.match(body):
                body = _QUOTE.sub("", body, count=1)
            if self.para and self.para_kind != "quote":
                self.flush_para()
            if not body.strip():
                self.flush_para()
                return i + 1
            if not self.para:
                self.para_line, self.para_kind = i + 1, "quote"
            self.para.append(body)
            return i + 1

        return self._text(i, stripped)

    @staticmethod
    def _continue_item(item: _Item, stripped: str, i: int) -> int:
        if item.nested:
            item.nested[-1] += " " + stripped
        else:
            item.parts.append(stripped)
        return i + 1

    def _text(self, i: int, stripped: str) -> int:
        if self.para and self.para_kind == "quote":
            self.para.append(stripped)  # a lazy continuation of the quote
            return i + 1
        if not self.para:
            self.para_line, self.para_kind = i + 1, "paragraph"
        self.para.append(stripped)
        return i + 1


def parse_markdown(text: str) -> Parsed:
    """The candidate entries of a Markdown memory file, in file order.

    A file that already uses the bounded store's format (entries separated by a line holding
    only ``§``) is split on that delimiter instead: its entries are kept whole.
    """
    normal = text.replace("\r\n", "\n").replace("\r", "\n")
    if DELIMITER in f"\n{normal}\n":
        return _parse_delimited(normal)
    return _Parser(text).run()


def _parse_delimited(text: str) -> Parsed:
    blocks: list[Block] = []
    # The leading newline lets a delimiter on the first line split too; line 0 is that newline.
    line = 0
    for part in ("\n" + text).split(DELIMITER):
        lead = len(part) - len(part.lstrip("\n"))
        if part.strip():
            blocks.append(Block(text=part.strip(), line=line + lead, kind="entry"))
        line += part.count("\n") + 2
    return Parsed(blocks=blocks, delimited=True)
