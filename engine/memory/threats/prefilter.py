"""Cheap prefilter: skip every pattern whose required words cannot occur in the text.

Python's regex engine tries an alternation like ``\\b(?:ignore|disregard|...)`` at every
position of the text, so a hundred patterns cost a hundred passes even over an entry that mentions
none of their words. Each pattern is analysed once (through the regex parser) for a set of
literal strings of which every match must contain at least one; a pattern is run only when the
text contains a trigram that begins one of them. The analysis is sound by construction — a
pattern it cannot reason about is always run — so the prefilter never changes a verdict, only
how much work reaching it takes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

try:  # Python 3.11+
    from re import _constants as _c  # type: ignore[attr-defined]
    from re import _parser as _p  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - older interpreters
    import sre_constants as _c  # type: ignore[no-redef]
    import sre_parse as _p  # type: ignore[no-redef]

_GRAM = 3
_REPEATS = {_c.MAX_REPEAT, _c.MIN_REPEAT, getattr(_c, "POSSESSIVE_REPEAT", _c.MAX_REPEAT)}
_Req = frozenset[str] | None


def _score(req: frozenset[str]) -> tuple[int, int]:
    # Longer shortest literal first (more selective), then fewer alternatives.
    return (min(len(s) for s in req), -len(req))


def _best(cands: list[frozenset[str]]) -> _Req:
    return max(cands, key=_score) if cands else None


def _seq(items: Sequence[tuple[object, object]]) -> _Req:
    cands: list[frozenset[str]] = []
    run: list[str] = []

    def close_run() -> None:
        if run:
            cands.append(frozenset({"".join(run).lower()}))
            run.clear()

    for op, av in items:
        if op is _c.LITERAL:
            run.append(chr(av))  # type: ignore[arg-type]
            continue
        close_run()
        req = _item(op, av)
        if req is not None:
            cands.append(req)
    close_run()
    return _best(cands)


def _item(op: object, av: object) -> _Req:
    if op is _c.SUBPATTERN:
        return _seq(av[-1])  # type: ignore[index]
    if op is getattr(_c, "ATOMIC_GROUP", None):
        return _seq(av)  # type: ignore[arg-type]
    if op is _c.BRANCH:
        union: set[str] = set()
        for branch in av[1]:  # type: ignore[index]
            req = _seq(branch)
            if req is None:
                return None
            union |= req
        return frozenset(union)
    if op in _REPEATS:
        lo, _hi, body = av  # type: ignore[misc]
        return _seq(body) if lo >= 1 else None
    return None


def required(pattern: re.Pattern[str]) -> _Req:
    """Literals of which every match contains one (lower-cased), or None if unknown."""
    try:
        parsed = _p.parse(pattern.pattern, pattern.flags & ~re.UNICODE)
    except Exception:  # an unparseable pattern is simply always run
        return None
    req = _seq(list(parsed))
    if req is None or min(len(s) for s in req) < _GRAM:
        return None
    return req


# Rough English letter frequencies: the rarest n-gram of a literal is the most selective key.
_COMMON = dict(zip("etaoinshrdlcumwfgypbvkjxqz ", range(27, 0, -1), strict=True))


def _key(literal: str) -> str:
    n = 4 if len(literal) >= 4 else _GRAM
    grams = [literal[i : i + n] for i in range(len(literal) - n + 1)]
    return min(grams, key=lambda g: sum(_COMMON.get(c, 0) for c in g))


class Gate:
    """Which of a list of patterns can possibly match a text, decided from its 3- and 4-grams."""

    def __init__(self, requirements: Sequence[_Req]) -> None:
        self.always = 0
        self.by_gram: dict[str, int] = {}
        for index, req in enumerate(requirements):
            bit = 1 << index
            if req is None:
                self.always |= bit
                continue
            for literal in req:
                gram = _key(literal)
                self.by_gram[gram] = self.by_gram.get(gram, 0) | bit
        self.short = any(len(g) == _GRAM for g in self.by_gram)

    def mask(self, lc: str) -> int:
        """Bit i is set when pattern i may match ``lc`` (already lower-cased)."""
        mask = self.always
        get = self.by_gram.get
        grams = {lc[i : i + 4] for i in range(len(lc) - 3)}
        if self.short:
            grams.update(lc[i : i + _GRAM] for i in range(len(lc) - _GRAM + 1))
        for gram in grams:
            bits = get(gram)
            if bits:
                mask |= bits
        return mask
