"""More disguises undone for the normalise layer: candidate decodings that :mod:`.unfold` keeps
as views (rescanned by every layer) when they read as more English than the text.

:mod:`.unfold` undoes the common respellings; these are the shapes it leaves: letters
interleaved with one filler character at every other position (``d*i*s*r*e*g*a*r*d``,
``i g n o r e   a l l``: words three spaces apart), letters spaced out one by one with wider gaps
between words, and leetspeak whose tokens start with a symbol or read ``1`` as ``l``
(``!gn0r3 @11``, ``ru13$``). Each decoder has a cheap gate that ordinary prose fails at once, and
views are only kept when they read as more English words than the text did.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection

# --- interleaved filler: one character at every other position ---------------------------------


def _interleaved(text: str) -> str | None:
    """``x*y*z*`` or ``x y z``: the characters at one parity are (almost) all one filler."""
    if len(text) < 12:
        return None
    for offset in (1, 0):
        fill = text[offset::2]
        if not fill:
            continue
        first = fill[0]
        if first.isalnum():
            continue
        # Cheap gate: two filler positions that do not hold the filler end it.
        if fill.count(first) < len(fill) - 2:
            continue
        kept = text[1 - offset :: 2]
        if sum(c.isalpha() for c in kept) * 2 < len(kept):
            continue
        return re.sub(r"\s+", " ", kept).strip()
    return None


# --- letters spaced one by one, words further apart --------------------------------------------

# Three or more single letters one space apart, then a wider gap or the end.
_SPACED_RUN = re.compile(r"(?<!\S)(?:[^\W\d_] ){2,}[^\W\d_](?!\S)")
# The same three letters found from the space after the first (then looking behind it): a search
# that starts at a letter enters the matcher at nearly every position of a text.
_SPACED_GATE = re.compile(r" (?<=[^\W\d_] )(?<!\S[^\W\d_] )[^\W\d_] [^\W\d_] ")


def _spaced(text: str) -> str | None:
    if _SPACED_GATE.search(text) is None:
        return None
    joined = _SPACED_RUN.sub(lambda m: m.group().replace(" ", ""), text)
    return re.sub(r"\s+", " ", joined).strip() if joined != text else None


# --- leetspeak the respeller does not read ------------------------------------------------------

# A sign before a letter or digit, or a letter, a digit or sign, and one more token character.
# Written to start at the digit or sign, the rarer character, so that the search skips quickly
# to the few places where one occurs (starting at the letter cost five times as much).
_LEET_GATE = re.compile(r"[0-9@$!|](?:(?<=[!@$|])[a-z0-9]|(?<=[a-z].)[a-z0-9@$!|])", re.IGNORECASE)
# A token of letters only or digits only reads as itself: only the mixed ones are found (a call
# back per word of a long note cost more than the rest of the decoder).
_TOKEN = re.compile(
    r"(?<![a-z0-9@$!|])(?![a-z]+(?![a-z0-9@$!|]))(?![0-9]+(?![a-z0-9@$!|]))[a-z0-9@$!|]{2,}",
    re.IGNORECASE,
)
_AS_I = str.maketrans({"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "@": "a",
                       "$": "s", "!": "i", "|": "l", "8": "b", "9": "g"})  # fmt: skip
_AS_L = str.maketrans({"0": "o", "1": "l", "3": "e", "4": "a", "5": "s", "7": "t", "@": "a",
                       "$": "s", "!": "i", "|": "l", "8": "b", "9": "g"})  # fmt: skip


def _respell(token: str, words: Collection[str]) -> str:
    if token.isalpha() or token.isdigit():
        return token
    low = token.lower()
    as_i, as_l = low.translate(_AS_I), low.translate(_AS_L)
    if as_l in words and as_i not in words:
        return as_l
    return as_i


def _leet(text: str, words: Collection[str]) -> str | None:
    if _LEET_GATE.search(text) is None:
        return None
    out = _TOKEN.sub(lambda m: _respell(m.group(), words), text)
    return out if out != text else None


_DECODERS: tuple[tuple[str, Callable[[str, Collection[str]], str | None]], ...] = (
    ("separators", lambda text, _words: _interleaved(text)),
    ("separators", lambda text, _words: _spaced(text)),
    ("leetspeak", _leet),
)


def candidates(text: str, words: Collection[str]) -> list[tuple[str, str]]:
    """``(how, decoded)`` for each of these disguises found in ``text``; ``words`` are the
    instruction words a respelled token is read as when it could be either (``1`` as i or l)."""
    out = []
    for how, decode in _DECODERS:
        decoded = decode(text, words)
        if decoded and decoded != text:
            out.append((how, decoded))
    return out
