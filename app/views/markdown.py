"""Assistant markdown as rich text: safe, styled for the palette, and fine with half a reply.

Parsing is Qt's own: ``QTextDocument.setMarkdown`` (md4c, CommonMark plus GitHub tables,
strikethrough and autolinks). Checked against what a chat needs before choosing it over a
hand-written converter:

- CommonMark closes an unclosed code fence at the end of the document, so a reply stopped
  inside a code block still renders as a finished code block; an unclosed ``**`` stays literal.
- ``MarkdownNoHTML`` turns raw HTML in the source into plain text, so model output cannot
  inject markup (``<script>``, ``<img onerror>``) into the transcript.
- It handles nesting, tables and ordered-list start numbers that a small converter would get
  wrong, and C parsing is fast (a 40 kB reply in ~11 ms here).

What it does not do is done by :func:`to_document` afterwards: links keep only the http, https
and mailto schemes (``javascript:`` or ``file:`` become plain text), images become a link to
their source (a text view must not fetch or read anything on the model's say-so), and colours
come from the palette instead of Qt's fixed blue links and unshaded code.

:class:`StreamSplitter` cuts a reply that is still arriving into pieces that render the same
alone as together, so the chat pane re-renders only the unfinished last piece per update.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

from PySide6.QtCore import QUrl
from PySide6.QtGui import (
    QColor,
    QFont,
    QPalette,
    QTextBlock,
    QTextBlockFormat,
    QTextCharFormat,
    QTextCursor,
    QTextDocument,
    QTextFormat,
    QTextFrame,
    QTextFrameFormat,
)

from app.views.highlight import highlight

FEATURES = (
    QTextDocument.MarkdownFeature.MarkdownDialectGitHub
    | QTextDocument.MarkdownFeature.MarkdownNoHTML
)
SAFE_SCHEMES = frozenset({"http", "https", "mailto"})
CODE_PAD = 6  # px around code blocks
# md4c's headings are sized for documents (h1 is xx-large); a chat reply wants them modest.
HEADING_SIZE = {1: 2, 2: 1}  # QFont size adjustment per level; deeper levels: body size


def blend(a: QColor, b: QColor, amount: float) -> QColor:
    """``a`` moved ``amount`` (0..1) of the way towards ``b``."""
    return QColor.fromRgbF(
        a.redF() + (b.redF() - a.redF()) * amount,
        a.greenF() + (b.greenF() - a.greenF()) * amount,
        a.blueF() + (b.blueF() - a.blueF()) * amount,
    )


@dataclass(frozen=True)
class Colors:
    """The transcript's colours, derived from a palette so dark themes work unchanged."""

    text: QColor
    muted: QColor
    link: QColor
    code_bg: QColor
    user_bg: QColor
    error: QColor
    dark: bool
    match_bg: QColor  # a search match in a transcript

    @classmethod
    def from_palette(cls, palette: QPalette) -> Colors:
        base = palette.color(QPalette.ColorRole.Base)
        text = palette.color(QPalette.ColorRole.Text)
        dark = base.lightnessF() < 0.5
        return cls(
            text=text,
            # 45% of the way to the background keeps ~4.5:1 contrast on white and on black.
            muted=blend(text, base, 0.45),
            link=palette.color(QPalette.ColorRole.Link),
            code_bg=blend(base, text, 0.12 if dark else 0.06),
            user_bg=blend(base, palette.color(QPalette.ColorRole.Highlight), 0.12),
            error=QColor("#f2b8b5") if dark else QColor("#b3261e"),
            dark=dark,
            match_bg=QColor("#6b5a12") if dark else QColor("#ffe58f"),
        )


CODE_BLOCK = QTextFormat.Property.UserProperty + 1  # marks a code line for wrap_code_runs


def code_char_format() -> QTextCharFormat:
    fmt = QTextCharFormat()
    fmt.setFontFamilies(["monospace"])
    fmt.setFontFixedPitch(True)
    fmt.setFontStyleHint(QFont.StyleHint.Monospace)
    return fmt


def code_block_format(*, wrap: bool = True) -> QTextBlockFormat:
    """A code line. On screen it wraps (``wrap``): one long unbreakable line would give the
    whole transcript a horizontal scroll bar, worse in a chat than a wrapped line. HTML keeps
    the lines whole, which is also what makes Qt write ``<pre>``."""
    fmt = QTextBlockFormat()
    fmt.setProperty(CODE_BLOCK, True)
    fmt.setTopMargin(0)
    fmt.setBottomMargin(0)
    fmt.setNonBreakableLines(not wrap)
    return fmt


def code_frame_format(colors: Colors) -> QTextFrameFormat:
    fmt = QTextFrameFormat()
    fmt.setBackground(colors.code_bg)
    fmt.setPadding(CODE_PAD)
    fmt.setBorder(0)
    fmt.setTopMargin(4)
    fmt.setBottomMargin(4)
    return fmt


def wrap_code_runs(doc: QTextDocument, colors: Colors) -> None:
    """Put each run of consecutive code lines (marked by :func:`code_block_format`) in a
    shaded, padded frame: a block background alone paints only behind the text, leaving the
    code glued to the edges of its box."""
    runs: list[tuple[int, int, QTextBlockFormat]] = []
    block = doc.begin()
    while block.isValid():
        if block.blockFormat().boolProperty(CODE_BLOCK):
            start, first_format = block.position(), block.blockFormat()
            while block.next().isValid() and block.next().blockFormat().boolProperty(CODE_BLOCK):
                block = block.next()
            runs.append((start, block.position() + block.length() - 1, first_format))
        block = block.next()
    _frame_runs(doc, runs, colors)


def _frame_runs(
    doc: QTextDocument, runs: list[tuple[int, int, QTextBlockFormat]], colors: Colors
) -> None:
    cursor = QTextCursor(doc)
    for start, end, first_format in reversed(runs):  # back to front: a frame shifts what follows
        cursor.setPosition(start)
        cursor.setPosition(end, QTextCursor.MoveMode.KeepAnchor)
        frame = cursor.insertFrame(code_frame_format(colors))
        # Moving the selection into the frame merges its first line into the frame's own
        # first block, which keeps that block's (plain) format: give the line its own back.
        cursor.setPosition(frame.firstPosition())
        cursor.setBlockFormat(first_format)
        collapse_around(frame)


def collapsed_block_format() -> QTextBlockFormat:
    fmt = QTextBlockFormat()
    fmt.setLineHeight(0, QTextBlockFormat.LineHeightTypes.FixedHeight.value)
    fmt.setTopMargin(0)
    fmt.setBottomMargin(0)
    return fmt


def collapse_block(block: QTextBlock) -> None:
    """Make an empty block take no height."""
    if block.isValid() and not block.text():
        cursor = QTextCursor(block)
        cursor.setBlockFormat(collapsed_block_format())
        tiny = QTextCharFormat()
        tiny.setFontPointSize(1)
        cursor.setBlockCharFormat(tiny)


def collapse_around(frame: QTextFrame) -> None:
    # A frame always sits between two empty blocks of its parent; left alone each shows as a
    # blank line. Spacing comes from frame margins instead.
    doc = frame.document()
    collapse_block(doc.findBlock(frame.firstPosition() - 1))
    collapse_block(doc.findBlock(frame.lastPosition() + 1))


def _is_code_block(fmt: QTextBlockFormat) -> bool:
    return fmt.nonBreakableLines() or fmt.hasProperty(QTextFormat.Property.BlockCodeFence)


def _is_fixed_pitch(fmt: QTextCharFormat) -> bool:
    return fmt.fontFixedPitch() or "monospace" in (fmt.fontFamilies() or [])


def safe_link(href: str) -> bool:
    return QUrl(href).scheme().lower() in SAFE_SCHEMES


def to_document(
    source: str, colors: Colors, *, wrap_code: bool = True, syntax: bool = True
) -> QTextDocument:
    """``source`` parsed and made safe: no raw HTML, only http(s)/mailto links, no images.
    ``syntax`` colours code blocks that name their language (:mod:`app.views.highlight`)."""
    doc = QTextDocument()
    doc.setUndoRedoEnabled(False)
    doc.setMarkdown(source, FEATURES)
    if "![" in source:  # walking every fragment for images costs more than the parse
        _replace_images(doc)
    _style(doc, colors, wrap_code, syntax)
    return doc


def to_html(source: str, colors: Colors) -> str:
    """The same rendering as HTML (Qt's rich-text subset), e.g. for export or a clipboard.
    Code stays uncoloured: the colours suit one background, the reader's may be another."""
    return to_document(source, colors, wrap_code=False, syntax=False).toHtml()


def _replace_images(doc: QTextDocument) -> None:
    # Collected first: replacing text while walking the fragments would invalidate the walk.
    images: list[tuple[int, str, str]] = []
    block = doc.begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            fragment = it.fragment()
            fmt = fragment.charFormat()
            if fmt.isImageFormat():
                image = fmt.toImageFormat()
                alt = image.stringProperty(QTextFormat.Property.ImageAltText)
                for offset in range(fragment.length()):
                    images.append((fragment.position() + offset, image.name(), alt))
            it += 1
        block = block.next()
    cursor = QTextCursor(doc)
    for position, src, alt in reversed(images):
        cursor.setPosition(position)
        cursor.setPosition(position + 1, QTextCursor.MoveMode.KeepAnchor)
        label = f"[image: {alt or src}]"
        fmt = QTextCharFormat()
        if safe_link(src):
            fmt.setAnchor(True)
            fmt.setAnchorHref(src)
        cursor.insertText(label, fmt)


def _style(doc: QTextDocument, colors: Colors, wrap_code: bool, syntax: bool) -> None:
    cursor = QTextCursor(doc)
    runs: list[tuple[int, int, QTextBlockFormat]] = []
    block = doc.begin()
    while block.isValid():
        block_fmt = block.blockFormat()
        if _is_code_block(block_fmt):
            # A whole run of code lines at once: most lines of a long reply are code, and a
            # call per line (or per fragment) costs a Python round trip each.
            first = block
            while block.next().isValid() and _is_code_block(block.next().blockFormat()):
                block = block.next()
            start, end = first.position(), block.position() + block.length() - 1
            language = first.blockFormat().stringProperty(QTextFormat.Property.BlockCodeLanguage)
            cursor.setPosition(start)
            cursor.setPosition(end, QTextCursor.MoveMode.KeepAnchor)
            cursor.mergeBlockFormat(code_block_format(wrap=wrap_code))
            cursor.mergeCharFormat(code_char_format())
            if syntax:
                highlight(cursor, start, end, language, dark=colors.dark)
            runs.append((start, end, doc.findBlock(start).blockFormat()))
            block = block.next()
            continue
        if block_fmt.headingLevel():
            level = block_fmt.headingLevel()
            heading = QTextBlockFormat()
            heading.setTopMargin(10)
            heading.setBottomMargin(4)
            cursor.setPosition(block.position())
            cursor.mergeBlockFormat(heading)
            size = QTextCharFormat()
            size.setProperty(QTextFormat.Property.FontSizeAdjustment, HEADING_SIZE.get(level, 0))
            size.setFontWeight(QFont.Weight.Bold)
            _select_text(cursor, block)
            cursor.mergeCharFormat(size)
        elif block_fmt.intProperty(QTextFormat.Property.BlockQuoteLevel):
            quote = QTextBlockFormat()
            quote.setLeftMargin(16 * block_fmt.intProperty(QTextFormat.Property.BlockQuoteLevel))
            cursor.setPosition(block.position())
            cursor.mergeBlockFormat(quote)
            muted = QTextCharFormat()
            muted.setForeground(colors.muted)
            _select_text(cursor, block)
            cursor.mergeCharFormat(muted)
        _style_fragments(cursor, block, colors)
        block = block.next()
    _frame_runs(doc, runs, colors)


def _select_text(cursor: QTextCursor, block: QTextBlock) -> None:
    cursor.setPosition(block.position())
    cursor.setPosition(block.position() + block.length() - 1, QTextCursor.MoveMode.KeepAnchor)


def _style_fragments(cursor: QTextCursor, block: QTextBlock, colors: Colors) -> None:
    spans: list[tuple[int, int, QTextCharFormat]] = []
    it = block.begin()
    while not it.atEnd():
        fragment = it.fragment()
        fmt = fragment.charFormat()
        change: QTextCharFormat | None = None
        if fmt.isAnchor() and fmt.anchorHref():
            href = fmt.anchorHref()
            change = QTextCharFormat(fmt)
            if safe_link(href):
                change.setForeground(colors.link)
                change.setFontUnderline(True)
                change.setToolTip(href)
            else:
                # The text stays, the link goes: no javascript:, file: or in-app URLs.
                change.setAnchor(False)
                change.setAnchorHref("")
                change.clearForeground()
                change.setFontUnderline(False)
        elif _is_fixed_pitch(fmt):  # inline code
            change = QTextCharFormat(fmt)
            change.merge(code_char_format())
            change.setBackground(colors.code_bg)
        if change is not None:
            spans.append((fragment.position(), fragment.length(), change))
        it += 1
    for position, length, fmt in spans:
        cursor.setPosition(position)
        cursor.setPosition(position + length, QTextCursor.MoveMode.KeepAnchor)
        cursor.setCharFormat(fmt)


def fenced(text: str, info: str = "") -> str:
    """``text`` as a fenced code block whose fence no line of ``text`` can close."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text}\n{fence}\n"


def escape(text: str) -> str:
    """``text`` shown literally by a markdown renderer (every ASCII punctuation escaped)."""
    return re.sub(r"([!-/:-@\[-`{-~])", r"\\\1", text)


def plain_html(text: str) -> str:
    """Plain text as HTML, for places that take rich text (tool tips)."""
    return html.escape(text).replace("\n", "<br>")


# -- streaming -----------------------------------------------------------------------------

_FENCE_OPEN = re.compile(r"^([ \t]*)(`{3,}|~{3,})(.*)$")
_LIST_MARKER = re.compile(r"^(?:[-+*]|\d{1,9}[.)])(?:[ \t]|$)")


def _closes(line: str, char: str, length: int) -> bool:
    stripped = line.strip()
    return len(stripped) >= length and set(stripped) == {char}


class StreamSplitter:
    """Cuts a growing markdown text into pieces that render alone as they would together.

    A piece ends only where CommonMark starts a new top-level block whatever came before:
    before a line at the margin that follows a blank line (not a list marker, which could
    continue a loose list), before a code fence at the margin, or after its closing fence.
    A long code block at the margin is cut every :attr:`FENCE_LINES` lines, each part closed
    and the next reopened with the same fence, so a 2,000-line block streams as cheaply as
    prose. Fences anywhere else (in a list item) are only tracked, so a blank line inside one
    is never taken for a boundary.

    ``feed(text)`` returns the pieces finished since the last call (``text`` must extend the
    text fed before); ``tail(text)`` is the unfinished rest, itself valid markdown.
    """

    FENCE_LINES = 40

    def __init__(self) -> None:
        self._scanned = 0  # offset of the first line not looked at yet
        self._start = 0  # offset where the unfinished piece begins
        self._reopen = ""  # fence line to put in front of the unfinished piece
        self._fence: tuple[str, int, str] | None = None  # char, length, opening line
        self._fence_at_margin = False
        self._fence_lines = 0
        self._after_blank = False

    def feed(self, text: str) -> list[str]:
        pieces: list[str] = []
        while True:
            end = text.find("\n", self._scanned)
            if end < 0:
                return pieces
            start, self._scanned = self._scanned, end + 1
            piece = self._line(text, start, text[start:end])
            if piece is not None and piece.strip():
                pieces.append(piece)

    def tail(self, text: str) -> str:
        return self._reopen + text[self._start :]

    def _cut(self, text: str, at: int, suffix: str = "") -> str:
        piece = self._reopen + text[self._start : at] + suffix
        self._start, self._reopen = at, ""
        return piece

    def _line(self, text: str, start: int, line: str) -> str | None:
        after = start + len(line) + 1
        if self._fence is not None:
            char, length, opening = self._fence
            if _closes(line, char, length):
                self._fence = None
                self._after_blank = False
                return self._cut(text, after) if self._fence_at_margin else None
            self._fence_lines += 1
            if self._fence_at_margin and self._fence_lines >= self.FENCE_LINES:
                self._fence_lines = 0
                piece = self._cut(text, after, char * length + "\n")
                self._reopen = opening + "\n"
                return piece
            return None
        opening_match = _FENCE_OPEN.match(line)
        if opening_match and not (
            opening_match.group(2)[0] == "`" and "`" in opening_match.group(3)
        ):
            indent, fence = opening_match.group(1), opening_match.group(2)
            self._fence = (fence[0], len(fence), line)
            self._fence_at_margin = indent == ""
            self._fence_lines = 0
            self._after_blank = False
            return self._cut(text, start) if self._fence_at_margin else None
        blank = not line.strip()
        piece = None
        if (
            self._after_blank
            and not blank
            and line[0] not in " \t"
            and not _LIST_MARKER.match(line)
            and start > self._start
        ):
            piece = self._cut(text, start)
        self._after_blank = blank
        return piece
