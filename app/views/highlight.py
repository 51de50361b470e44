"""Syntax colours for fenced code blocks, from Pygments.

Only blocks whose fence names a language Pygments knows are coloured (```` ```python ````);
guessing the language of an unnamed block is slow and often wrong, and a wrong guess colours
prose as code. The lexer runs over the block's text as it sits in the document, so every
token maps to a document position one for one, and adjacent tokens of one colour are merged
so that a long block costs a few hundred format calls, not one per character.

Two styles, one for a light and one for a dark background: a light theme's dark blue on a
dark code box is unreadable.
"""

from __future__ import annotations

from functools import lru_cache

from pygments.lexer import Lexer
from pygments.lexers import get_lexer_by_name
from pygments.style import StyleMeta
from pygments.styles import get_style_by_name
from pygments.token import _TokenType
from pygments.util import ClassNotFound
from PySide6.QtGui import QColor, QFont, QTextCharFormat, QTextCursor

LIGHT_STYLE = "default"
DARK_STYLE = "monokai"
# Longer blocks stay plain: lexing 50 kB costs more than a streamed update may take.
MAX_CHARS = 40_000


@lru_cache(maxsize=64)
def lexer_for(info: str) -> Lexer | None:
    """The lexer a fence's info string names (``python``, ``py title=x``), or None."""
    name = info.strip().split(maxsplit=1)[0].lower() if info.strip() else ""
    if not name:
        return None
    try:
        # Offsets must match the text: no stripping of leading or trailing newlines.
        return get_lexer_by_name(name, stripnl=False, ensurenl=False, stripall=False)
    except ClassNotFound:
        return None


@lru_cache(maxsize=2)
def _style(dark: bool) -> StyleMeta:
    return get_style_by_name(DARK_STYLE if dark else LIGHT_STYLE)


@lru_cache(maxsize=1024)
def token_format(token: _TokenType, dark: bool) -> QTextCharFormat | None:
    """The character format of ``token`` in the light or dark style; None when the style
    leaves it in the text colour."""
    style = _style(dark).style_for_token(token)
    if not (style["color"] or style["bold"] or style["italic"]):
        return None
    fmt = QTextCharFormat()
    if style["color"]:
        fmt.setForeground(QColor(f"#{style['color']}"))
    if style["bold"]:
        fmt.setFontWeight(QFont.Weight.Bold)
    if style["italic"]:
        fmt.setFontItalic(True)
    return fmt


def highlight(cursor: QTextCursor, start: int, end: int, info: str, *, dark: bool) -> int:
    """Colour the code between document positions ``start`` and ``end`` as the language
    ``info`` names; returns the number of spans coloured (0: unknown language or too long)."""
    lexer = lexer_for(info)
    if lexer is None or end - start > MAX_CHARS:
        return 0
    cursor.setPosition(start)
    cursor.setPosition(end, QTextCursor.MoveMode.KeepAnchor)
    # Blocks are separated by U+2029 in the document: one character, as "\n" is for the lexer.
    text = cursor.selectedText().replace("\u2029", "\n")
    spans: list[tuple[int, int, QTextCharFormat]] = []
    for index, token, value in lexer.get_tokens_unprocessed(text):
        fmt = token_format(token, dark)
        if fmt is None or not value.strip():
            continue
        last = spans[-1] if spans else None
        if last is not None and last[2] is fmt and last[0] + last[1] == index:
            spans[-1] = (last[0], last[1] + len(value), fmt)
        else:
            spans.append((index, len(value), fmt))
    for index, length, fmt in spans:
        cursor.setPosition(start + index)
        cursor.setPosition(start + index + length, QTextCursor.MoveMode.KeepAnchor)
        cursor.mergeCharFormat(fmt)
    return len(spans)
