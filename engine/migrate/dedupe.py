"""Duplicate and near-duplicate detection for migrated entries.

Daily logs repeat themselves: an agent notes the same preference on many days, with a different
capital, a final full stop, an extra "the". Two tests, both on the entry's body (its context
prefix aside, so the same fact logged on two dates is one fact):

- **exact**: equal after normalisation (NFKC, case folded, Markdown emphasis marks dropped,
  whitespace collapsed, trailing punctuation stripped);
- **near**: word-set Jaccard similarity of at least 0.8, *and* an order-aware ratio of the word
  sequences (twice their longest common subsequence over their total length) of at least 0.8,
  *and* no differing word that carries a number or flips the meaning (``not``, ``never``,
  ``always``, ``off`` …).

Why those numbers. 0.8 lets one word in five differ: "Deploys go through CI" and "Deploys go
through the CI." merge, "Prefers concise answers" and "Prefers concise answers, no fluff" (two
new words of five) do not. Jaccard alone ignores order ("run lint before tests" equals "run tests
before lint"), hence the sequence ratio; and a long entry can differ in the one token that is
the fact ("staging is 10.0.0.5" vs "10.0.0.6", "always" vs "never"), hence the guard words.
The price of 0.8: an entry of four or five words absorbs a copy with one word more ("Prefers
tea with milk" and "… with oat milk"); the copy kept is the one the priority offers first.

Near-duplicate search is the exact prefix-filtering join (as in the All-Pairs / PPJoin
algorithms): words are ordered rarest first, and two sets with Jaccard ≥ t must share a word
among the first ``n − ⌈t·n⌉ + 1`` of each, so only entries sharing such a word are compared.
That keeps ten thousand entries well under a second instead of fifty million comparisons.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from difflib import SequenceMatcher

# Jaccard threshold as a fraction so the prefix arithmetic is exact integers.
NEAR_NUM, NEAR_DEN = 4, 5
ORDER_RATIO = 0.8

_EMPHASIS = str.maketrans("", "", "*_`")
_TRAILING = " \t\n.,;:!?…。！？、"
_TOKEN = re.compile(r"\w+(?:['’./:-]\w+)*")
# Words whose presence on one side only changes what an entry says, however similar the rest.
_POLARITY_WORDS = """
    not no never none nothing nobody cannot can't don't doesn't didn't isn't aren't wasn't
    weren't won't wouldn't shouldn't mustn't without avoid avoids stop stopped always only
    on off yes true false enable enabled disable disabled allow allowed deny denied before
    after more less min max increase decrease above below
"""
POLARITY = frozenset(_POLARITY_WORDS.split())


def normalise(text: str) -> str:
    """The comparison key of an entry body."""
    folded = unicodedata.normalize("NFKC", text).casefold().translate(_EMPHASIS)
    return " ".join(folded.split()).rstrip(_TRAILING)


def tokens(key: str) -> list[str]:
    return [t.replace("’", "'") for t in _TOKEN.findall(key)]


_DIGIT = re.compile(r"\d")


def _significant(word: str) -> bool:
    return word in POLARITY or _DIGIT.search(word) is not None


@dataclass
class Record:
    key: str
    seq: list[str]
    words: frozenset[str]
    # Near duplicates never differ in a significant word, so only records with the same set
    # of them are ever compared: with ticket numbers and dates in most log lines, that alone
    # leaves most records without a single comparison.
    significant: frozenset[str]
    order: list[str] = field(default_factory=list)  # ``words``, rarest first
    # near() answers by the other record's key: a plan compares the same pairs twice.
    near_to: dict[str, bool] = field(default_factory=dict)

    @classmethod
    def of(cls, body: str) -> Record:
        key = normalise(body)
        seq = tokens(key)
        words = frozenset(seq)
        return cls(key, seq, words, frozenset(w for w in words if _significant(w)))


def _need(size: int) -> int:
    """The overlap a set of ``size`` words needs with another to reach the threshold."""
    return (NEAR_NUM * size + NEAR_DEN - 1) // NEAR_DEN


def near(a: Record, b: Record) -> bool:
    """Whether two records with different keys say the same thing (see the module notes)."""
    inter = len(a.words & b.words)
    union = len(a.words) + len(b.words) - inter
    if union == 0 or inter * NEAR_DEN < NEAR_NUM * union:
        return False
    if any(_significant(w) for w in a.words ^ b.words):
        return False
    return order_ratio(a.seq, b.seq) >= ORDER_RATIO


def order_ratio(a: list[str], b: list[str]) -> float:
    """2·LCS(a, b) / (|a| + |b|): how much of both sequences survives in the same order."""
    if not a or not b:
        return 1.0 if a == b else 0.0
    total = len(a) + len(b)
    # Near duplicates mostly differ in a word or two: what they share at both ends is part of
    # every longest common subsequence, so only the middle needs the table.
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    a, b = a[head : len(a) - tail], b[head : len(b) - tail]
    if not a or not b:
        return 2 * (head + tail) / total
    if len(a) * len(b) > 40_000:
        # Long paragraphs: difflib's matching blocks, a lower bound of the LCS found in
        # about linear time, instead of a table of 40,000+ cells.
        matched = sum(
            m.size for m in SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks()
        )
        return 2 * (head + tail + matched) / total
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0]
        for j, y in enumerate(b):
            current.append(previous[j] + 1 if x == y else max(previous[j + 1], current[j]))
        previous = current
    return 2 * (head + tail + previous[-1]) / total


class Index:
    """The entries kept so far, searchable for an exact or near duplicate of a new one.

    ``frequencies`` (how many records hold each word, over everything that will be looked up)
    fixes the rarest-first order; words it does not know count as rarest.
    """

    def __init__(self, frequencies: Counter[str] | None = None) -> None:
        self.freq = frequencies or Counter()
        self.exact: dict[str, int] = {}
        self.records: dict[int, Record] = {}
        self.postings: dict[tuple[frozenset[str], str], list[int]] = {}

    @staticmethod
    def count(records: Iterable[Record]) -> Counter[str]:
        counter: Counter[str] = Counter()
        for record in records:
            counter.update(record.words)
        return counter

    def _prefix(self, record: Record) -> list[str]:
        if not record.order and record.words:
            record.order = sorted(record.words, key=lambda w: (self.freq[w], w))
        size = len(record.order)
        return record.order[: size - _need(size) + 1]

    def find(self, record: Record) -> tuple[int, bool] | None:
        """``(id, exact)`` of a kept record ``record`` duplicates, or None."""
        if record.key in self.exact:
            return self.exact[record.key], True
        size = len(record.words)
        low, high = _need(size), size * NEAR_DEN // NEAR_NUM
        seen: set[int] = set()
        for word in self._prefix(record):
            for other_id in self.postings.get((record.significant, word), ()):
                if other_id in seen:
                    continue
                seen.add(other_id)
                other = self.records[other_id]
                if not low <= len(other.words) <= high:
                    continue
                same = record.near_to.get(other.key)
                if same is None:
                    same = record.near_to[other.key] = near(record, other)
                if same:
                    return other_id, False
        return None

    def add(self, record: Record, record_id: int) -> None:
        self.exact.setdefault(record.key, record_id)
        self.records[record_id] = record
        for word in self._prefix(record):
            self.postings.setdefault((record.significant, word), []).append(record_id)
