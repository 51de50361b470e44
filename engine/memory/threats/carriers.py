"""Unwrap the carriers an entry may be written in, so the model reads what is said.

An instruction can sit inside a config value (``note: "ignore your rules"``), a JSON string, a
code or HTML comment, a commit message, a mail header, a CSV cell or a chat transcript turn
(``System: ...``, ``<|im_start|>system``). Read as one line, the carrier's syntax — keys,
quotes, comment marks — dilutes the words that matter and the model abstains. This module cuts
an entry into the statements the model judges (lines, then sentences), strips the carrier from
each, splits JSON objects into their string values, and notes structural marks the model scores
as features of their own:

- ``role_system``: the statement is a transcript turn of a system, developer or admin role
  (a label, a chat-template marker, a heading) — in a memory entry that is itself a signal;
- ``role_turn``: a turn of the user or the assistant (benign transcripts are common notes);
- ``value``: the statement was a value under a key;
- ``comment``: it was a code, HTML or markdown comment.

Spans index the normalised lower-cased text the scanner works on.
"""

from __future__ import annotations

import re
from typing import NamedTuple


class Segment(NamedTuple):
    start: int
    end: int
    text: str
    marks: tuple[str, ...]


_SYSTEM_ROLES = frozenset(
    {"system", "developer", "sys", "admin", "administrator", "root", "operator", "system prompt",
     "system message", "instructions"}
)  # fmt: skip
_TURN_ROLES = frozenset({"user", "assistant", "human", "ai", "bot", "model", "customer", "agent",
                         "q", "a", "me", "you"})  # fmt: skip

# A chat-template marker or heading alone on its line names the role of what follows.
_ROLE_LINE = re.compile(
    r"""^\W{0,6}(?:<\|\s{0,2}im_start\s{0,2}\|>\s{0,2}|<\|\s{0,2})?\[?
    (system|developer|user|assistant|human)\]?\s{0,2}(?:\|>|>)?\s{0,2}:?\W{0,6}$""",
    re.VERBOSE,
)
# "System: ...", "[SYSTEM]: ...", "<|im_start|>system ...", "### System: ...", "key = ...".
_LABEL = re.compile(
    r"""^[\s>*#\-+|/;]{0,8}(?:<\|\s{0,2}im_start\s{0,2}\|>\s{0,2}|<\|\s{0,2})?[\[(<"']?
    (?P<key>[a-z][\w .@/-]{0,38}?)[\])>"']?\s{0,2}(?:\|>)?\s{0,2}(?:[:=](?!//)|::)
    \s{0,2}[|>]?\s{0,2}""",
    re.VERBOSE,
)
_COMMENT = re.compile(r"""^\s{0,8}(?:<!--|/\*+|//+|\#+(?!\w)|--\s|;+|\*+\s|rem\s)\s{0,3}""")
_BULLET = re.compile(r"""^\s{0,8}(?:[-*+>|]+|\d{1,3}[.)]|\[[ x]\])\s{1,3}""")
_TRAILER = re.compile(r"""\s{0,3}(?:-->|\*/|\|)\s{0,3}$""")
_QUOTES = "\"'`,;{}[]() "
_JSON_STRING = re.compile(r'"((?:[^"\\\n]|\\.){12,2000})"')
# A sentence ends after ".", "!" or "?" followed by white space, or after a CJK full stop, which
# needs none. The cut is matched from the punctuation mark (a pattern that starts with a
# character class is searched fast; one that starts with a look-behind is tried at every
# position) and begins one character after it: the white space, or nothing after "。".
_SENTENCE_END = re.compile(r"[.!?。！？]\s+|[。！？]")
_TEMPLATE_END = re.compile(r"<\|\s{0,2}im_end\s{0,2}\|>|<\|\s{0,2}end\s{0,2}\|>")
# Only lines that start with one of these, or hold a key-value mark, need unwrapping.
_NEEDS_UNWRAP = re.compile(r"""^\s{0,8}[^\w\s]|^[\w .@/-]{1,40}\s{0,2}[:=]""")
# A long entry is judged on its first statements only: the other layers read all of it, and a
# 250 KB blob must not cost thousands of model calls.
_MAX_SEGMENTS = 64


def _split_sentences(text: str, start: int, marks: tuple[str, ...], out: list[Segment]) -> None:
    if _SENTENCE_END.search(text) is None:
        if text.strip():
            out.append(Segment(start, start + len(text), text, marks))
        return
    pos = 0
    for m in [*_SENTENCE_END.finditer(text), None]:
        if len(out) >= _MAX_SEGMENTS:
            return
        end = m.start() + 1 if m is not None else len(text)
        piece = text[pos:end]
        if piece.strip():
            out.append(Segment(start + pos, start + end, piece, marks))
        if m is not None:
            pos = m.end()


def _unwrap_line(line: str, pending: str | None) -> tuple[str, int, tuple[str, ...], str | None]:
    """(content, offset of content in line, marks, role set for the next line)."""
    marks: list[str] = []
    if pending is not None:
        marks.append(pending)
    offset = 0
    role = _ROLE_LINE.match(line)
    if role is not None:
        name = role.group(1)
        return "", len(line), (), "role_system" if name in _SYSTEM_ROLES else "role_turn"
    if "<|" in line:
        line = _TEMPLATE_END.sub(" ", line)
    for _ in range(3):
        m = _COMMENT.match(line, offset)
        if m is not None and m.end() > offset:
            marks.append("comment")
            offset = m.end()
            continue
        m = _LABEL.match(line, offset)
        if m is not None and m.end() > offset and m.end() < len(line):
            key = m.group("key").strip()
            if key in _SYSTEM_ROLES:
                marks.append("role_system")
            elif key in _TURN_ROLES:
                marks.append("role_turn")
            else:
                marks.append("value")
            offset = m.end()
            continue
        m = _BULLET.match(line, offset)
        if m is not None and m.end() > offset:
            offset = m.end()
            continue
        break
    content = _TRAILER.sub("", line[offset:])
    stripped = content.strip(_QUOTES)
    offset += content.find(stripped[:1]) if stripped else 0
    return stripped, offset, tuple(dict.fromkeys(marks)), None


def segments(lc: str) -> list[Segment]:
    """The statements of a normalised, lower-cased entry, carriers stripped."""
    out: list[Segment] = []
    pos = 0
    pending: str | None = None
    for line in lc.split("\n"):
        start = pos
        pos += len(line) + 1
        if not line.strip():
            continue
        if len(out) >= _MAX_SEGMENTS:
            break
        if '":' in line or '" :' in line:
            values = [m for m in _JSON_STRING.finditer(line) if " " in m.group(1)]
            if values:
                for m in values:
                    _split_sentences(m.group(1), start + m.start(1), ("value",), out)
                continue
        if _NEEDS_UNWRAP.match(line) is None and pending is None:
            _split_sentences(line, start, (), out)
            continue
        content, offset, marks, pending = _unwrap_line(line, pending)
        if content:
            _split_sentences(content, start + offset, marks, out)
    return out
