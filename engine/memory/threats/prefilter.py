"""Cheap prefilter: skip every pattern whose required words cannot occur in the text.

Python's regex engine tries an alternation like ``\\b(?:ignore|disregard|...)`` at every
position of the text, so a hundred patterns cost a hundred passes even over an entry that mentions
none of their words. Each pattern is analysed once (through the regex parser) for a set of
literal strings of which every match must contain at least one; a pattern is run only when the
text contains the key (the rarest 4-gram) of one of them. The analysis is sound by construction — a
pattern it cannot reason about is always run — so the prefilter never changes a verdict, only
how much work reaching it takes.
"""

from __future__ import annotations

import functools
import operator
import re
import threading
from collections.abc import Iterator, Sequence
from typing import Any, cast

import ahocorasick

_VALUE = operator.itemgetter(1)  # the automaton yields (end index, value)

try:  # Python 3.11+
    from re import _constants as _c  # type: ignore[attr-defined]
    from re import _parser as _p  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - older interpreters
    import sre_constants as _c  # type: ignore[no-redef]
    import sre_parse as _p  # type: ignore[no-redef]

_REPEATS = {_c.MAX_REPEAT, _c.MIN_REPEAT, getattr(_c, "POSSESSIVE_REPEAT", _c.MAX_REPEAT)}
_Req = frozenset[str] | None
_MIN = 2  # shorter literals (a single character) tell nothing


# Rough frequencies of characters in English text, to estimate how often a literal occurs.
_FREQ = dict(
    zip(
        "etaoinshrdlcumwfgypbvkjxqz",
        (.127, .091, .082, .075, .070, .067, .063, .061, .060, .043, .040, .028, .028, .024,
         .024, .022, .020, .020, .019, .015, .0098, .0077, .0015, .0015, .00095, .00074),
        strict=True,
    )
)  # fmt: skip
_FREQ[" "] = 0.18


def _prob(gram: str) -> float:
    prob = 1.0
    for c in gram:
        prob *= _FREQ.get(c, 0.01)
    return prob


def _key(literal: str) -> str:
    """The literal's least likely 4-gram (the whole literal when shorter)."""
    if len(literal) < 4:
        return literal
    return min((literal[i : i + 4] for i in range(len(literal) - 3)), key=_prob)


def cost(req: frozenset[str]) -> float:
    """Estimated chance that a text holds a key of ``req``: lower is more selective."""
    return sum(_prob(_key(s)) * (40.0 if len(s) < 4 else 1.0) for s in req)


def _best(cands: list[frozenset[str]]) -> _Req:
    # A single character says nothing; such a candidate is no requirement at all.
    useful = [c for c in cands if min(map(len, c)) >= _MIN]
    return min(useful, key=cost) if useful else None


def _seq(items: Sequence[tuple[object, object]]) -> _Req:
    return _best(_cands(items))


def _cands(items: Sequence[tuple[object, object]]) -> list[frozenset[str]]:
    """One requirement per part of a sequence: every match satisfies each of them."""
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
        if op is _c.IN and run:
            chars = _small_set(av)
            if chars is not None:
                # "gh[pousr]_" requires one of "ghp_", "gho_", ...: expand a short class.
                cands.append(frozenset("".join(run).lower() + c for c in chars))
        close_run()
        req = _item(op, av)
        if req is not None:
            cands.append(req)
    close_run()
    return cands


def _small_set(items: object) -> list[str] | None:
    chars = []
    for op, av in items:  # type: ignore[attr-defined]
        if op is not _c.LITERAL:
            return None
        chars.append(chr(av).lower())
    return sorted(set(chars)) if len(chars) <= 8 else None


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
        lo, _hi, body = cast(tuple[int, int, Any], av)
        return _seq(body) if lo >= 1 else None
    return None


class Requirement(frozenset[str]):
    """Literals of which every match contains one; ``also`` holds more such sets, from other
    parts of the same sequence, that every match satisfies as well.

    "keep ... from the user" must contain "keep" (or "hide", "conceal") *and* "from": the gate
    runs the pattern only when both are present, where one rare set alone would let every text
    with "from" through.

    A pattern that is one alternation (``A|B|C``) also keeps each branch's own requirement in
    ``branches``: the pattern can match only where one branch can, which is far more selective
    than the union of their literals with every branch's ``also`` left out.
    """

    also: tuple[frozenset[str], ...] = ()
    branches: tuple[Requirement, ...] = ()


# Conditions a gate checks besides the most selective one (each costs a look-up per scan).
_MAX_ALSO = 2


def _requirement(items: list[Any]) -> Requirement | None:
    cands = [c for c in _cands(items) if min(map(len, c)) >= _MIN]
    if not cands:
        return None
    cands.sort(key=cost)
    req = Requirement(cands[0])
    req.also = tuple(c for c in cands[1 : 1 + _MAX_ALSO] if c != cands[0])
    return req


def required(pattern: re.Pattern[str]) -> Requirement | None:
    """Literals of which every match contains one (lower-cased), or None if unknown."""
    try:
        parsed = _p.parse(pattern.pattern, pattern.flags & ~re.UNICODE)
    except Exception:  # an unparseable pattern is simply always run
        return None
    items = list(parsed)
    # A pattern wrapped in one group is the sequence inside it.
    while len(items) == 1 and items[0][0] is _c.SUBPATTERN:
        items = list(items[0][1][-1])  # type: ignore[index]
    req = _requirement(items)
    # The parser hoists what every branch shares out of the alternation ("\b(?:a|b)" for
    # "\ba|\bb"): the pattern is still one branch or another, each with the shared parts.
    at = [i for i, (op, _av) in enumerate(items) if op is _c.BRANCH]
    if req is not None and len(at) == 1:
        before, after = items[: at[0]], items[at[0] + 1 :]
        branches = [_requirement([*before, *branch, *after]) for branch in items[at[0]][1][1]]
        if all(b is not None for b in branches):
            req.branches = tuple(cast(list[Requirement], branches))
    return req


class Gate:
    """Which of a list of patterns can possibly match a text.

    A literal of four characters or more is keyed by its rarest 4-gram; shorter literals (few:
    "pw", "](", "sk_") are keys themselves. Every key is looked for in the text by one shared
    search (:func:`_found`), and a pattern may match when one of its keys was found.

    Each requirement to meet is a *term*: a pattern's own, or one per branch of an alternation.
    A term has up to three conditions (its literals and up to ``_MAX_ALSO`` more sets), each a
    bit in its own bank: term ``j`` holds bits ``j``, ``T + j`` and ``2T + j`` of the gate's
    mask, and a condition a term lacks is always set. The terms whose every condition holds are
    then ``m & m >> T & m >> 2T``: three operations on the whole mask, whatever the number of
    terms, instead of a check per term.
    """

    def __init__(self, requirements: Sequence[_Req]) -> None:
        count = len(requirements)
        terms: list[tuple[int, Requirement]] = []  # (pattern, requirement) per term
        direct: set[int] = set()  # patterns that are a single term
        self.unknown = 0  # patterns nothing is known about: always run
        for index, req in enumerate(requirements):
            if req is None:
                self.unknown |= 1 << index
                continue
            req = req if isinstance(req, Requirement) else Requirement(req)
            if not req.branches:
                direct.add(index)
            terms.extend((index, branch) for branch in req.branches or (req,))
        # A pattern with one term is that term's bit; the branch terms of an alternation come
        # after all patterns, each owned by its pattern.
        banks = count  # the slots of a bank: one per pattern, then one per branch term
        self.owner: dict[int, int] = {}
        slot: dict[int, int] = {}
        for t, (index, _req) in enumerate(terms):
            if index in direct:
                slot[t] = index
            else:
                slot[t] = banks
                self.owner[1 << banks] = 1 << index
                banks += 1
        self.banks = banks
        self.direct = sum(1 << i for i in direct)
        self.branch_terms = ((1 << banks) - 1) & ~((1 << count) - 1)
        self.terms = (1 << banks) - 1
        self.always = 0
        self.by_key: dict[str, int] = {}

        def key_for(literals: frozenset[str], bit: int) -> None:
            for literal in literals:
                key = literal if len(literal) < 4 else _key(literal)
                self.by_key[key] = self.by_key.get(key, 0) | bit

        for t, (_index, req) in enumerate(terms):
            conditions = [req, *req.also][: 1 + _MAX_ALSO]
            for bank in range(1 + _MAX_ALSO):
                bit = 1 << (bank * banks + slot[t])
                if bank < len(conditions):
                    key_for(conditions[bank], bit)
                else:
                    self.always |= bit
        self.width = (1 + _MAX_ALSO) * banks
        self.own = (1 << self.width) - 1  # this gate's range, once shifted down
        self.offset = _register(self)

    def mask(self, lc: str) -> int:
        """Bit i is set when pattern i may match ``lc`` (already lower-cased)."""
        m = (_found(lc) >> self.offset) & self.own | self.always
        banks = self.banks
        met = m & self.terms
        for bank in range(1, 1 + _MAX_ALSO):
            met &= m >> bank * banks
        mask = (met & self.direct) | self.unknown
        pending = met & self.branch_terms
        owner = self.owner
        while pending:
            low = pending & -pending
            pending ^= low
            mask |= owner[low]
        return mask


# --- the shared key search ----------------------------------------------------------------------
#
# Building the set of a text's 4-grams cost more than the patterns it let the scanner skip: each
# gram is a new string to hash. Every gate's keys go into one Aho-Corasick automaton instead,
# which reports every key occurring in the text, overlapping ones and prefixes of longer ones
# included, in one pass in C (a regular expression holding the keys as a trie, tried at every
# position, cost 3.6x as much). Each gate has its own range of bits in one shared mask, and a
# key's value in the automaton is its bits in every gate: the bits of a text are the union of
# its keys' values, taken in C. The rules and the signals gate the same normalised text one
# after the other, so the last answer is kept.

_gates: list[Gate] = []
_automaton: list[Any] = [None]
# Scans run on several threads: a gate registers (and the automaton is rebuilt) under the lock,
# and the last answer is one (text, automaton, bits) triple, read and replaced whole, so that
# one text's bits, or bits found by an automaton missing a gate, are never given to another.
_lock = threading.Lock()
_last: list[tuple[str | None, Any, int]] = [(None, None, 0)]


def _register(gate: Gate) -> int:
    """Give ``gate`` its range of bits (the offset returned) in the shared mask."""
    with _lock:
        offset = sum(g.width for g in _gates)
        _gates.append(gate)
        _automaton[0] = None
        return offset


def _current_automaton() -> Any:
    automaton = _automaton[0]
    if automaton is None:
        with _lock:
            automaton = _automaton[0]
            if automaton is None:
                values: dict[str, int] = {}
                for gate in _gates:
                    for key, bits in gate.by_key.items():
                        values[key] = values.get(key, 0) | bits << gate.offset
                automaton = ahocorasick.Automaton()
                for key, bits in values.items():
                    automaton.add_word(key, bits)
                if values:
                    automaton.make_automaton()
                _automaton[0] = automaton
    return automaton


def _found(lc: str) -> int:
    """The bits, in every gate's range, of the keys that occur in ``lc``."""
    automaton = _current_automaton()
    text, used, found = _last[0]
    if text is not lc or used is not automaton:
        found = (
            functools.reduce(operator.or_, map(_VALUE, automaton.iter(lc)), 0)
            if automaton.kind == ahocorasick.AHOCORASICK
            else 0
        )
        _last[0] = (lc, automaton, found)
    return found


def indices(mask: int) -> Iterator[int]:
    """The positions of the set bits of ``mask``, lowest first (gates are sparse)."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low
