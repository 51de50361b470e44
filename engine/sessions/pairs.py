"""Word pairs: what makes a phrase of common words cheap to find on SQLite.

FTS5 finds ``"cai to"`` by walking every message that holds both words and checking their
positions: tens of thousands of messages when both words are common, 10-20 ms at a million
messages, however few of them hold the phrase. So each message's adjacent word pairs are also
indexed as single tokens (``cai_to``) in ``messages_pairs`` (migration 0004): a phrase of two
words is one lookup there, a longer one the few messages that hold all of its pairs.

Words are split as the word index splits them (runs of letters and digits) after the NFKC
normalisation queries get (so an accent written as a separate mark stays inside its word), and
folded (case, accents) as the word index folds them; the same functions build a query's pairs,
so a query finds what was indexed whatever the index's tokenizer makes of a character. Three words
can have both of their pairs in a message without standing together, so a longer phrase found
through pairs is confirmed on the message text (``holds_phrase``) before it is returned.
"""

from __future__ import annotations

import re
import sqlite3
import unicodedata
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence, Set
from functools import lru_cache
from itertools import compress, islice, pairwise
from operator import and_

from engine.sessions.query import WORD, fold

FUNCTION = "cairn_pairs"  # the SQL function the pair index's view and triggers call
COMMON_TABLE = "messages_common_words"  # the words whose pairs are indexed, and since when
# ASCII punctuation and controls: the pair index's ascii tokenizer splits on them.
_ASCII_SEPARATORS = re.compile(r"[\x00-\x2f\x3a-\x40\x5b-\x60\x7b-\x7f]+")


def _pair_word(word: str) -> str:
    """A word as the pair index holds it: folded here, because the index's tokenizer ('ascii'
    with '_' as a token character) keeps everything else as written. Folding can bring in
    ASCII punctuation (⑴ is "(1)"), which is dropped so that a pair stays one token."""
    if word.isascii():
        return word.lower()
    return _ASCII_SEPARATORS.sub("", fold(word))


def _pairs(words: Sequence[str]) -> Iterator[str]:
    """Each word with the next, as pair tokens; ``words`` already as _pair_word makes them."""
    return map("_".join, pairwise(words))


# ASCII text's words, lower-cased, by one translation and a split: what WORD finds in it,
# at a third of the cost (this runs for every message written).
_ASCII_WORDS = str.maketrans({c: (chr(c).lower() if chr(c).isalnum() else " ") for c in range(128)})


def _column_words(column: str) -> list[str]:
    if column.isascii():  # most text: nothing to normalise or fold but case
        return column.translate(_ASCII_WORDS).split()
    words = map(_pair_word, WORD.findall(unicodedata.normalize("NFKC", column)))
    return [w for w in words if w]


def pair_text(*columns: str | None) -> str:
    """The distinct adjacent word pairs of each column, as ``a_b`` tokens separated by spaces
    (a phrase never spans two columns). Runs in the triggers of every message insert."""
    pairs: dict[str, None] = {}
    for column in columns:
        if column:
            pairs.update(dict.fromkeys(_pairs(_column_words(column))))
    return " ".join(pairs)


def words_of(*columns: str | None) -> set[str]:
    """The distinct words of the columns, as the pair index sees them (split, then folded)."""
    return {word for column in columns if column for word in _column_words(column)}


def common_pairs(common: Set[str], *columns: str | None) -> str:
    """What the pair index holds for a message since migration 0008: the distinct adjacent
    pairs of each column, in no particular order (the index keeps no positions); in ASCII
    text only the pairs of two words of ``common``, in other text every pair, because there
    the word index does not always split words as this module does (NFKC, its older Unicode
    tables), so it cannot answer their phrases alone. Iterators all the way, no Python code
    per word: this runs for every message written."""
    pairs: set[str] = set()
    contains = common.__contains__
    for column in columns:
        if not column:
            continue
        if not column.isascii():
            pairs.update(_pairs(_column_words(column)))
            continue
        words = column.translate(_ASCII_WORDS).split()
        kept = list(map(contains, words))
        both = map(and_, kept, islice(kept, 1, None))
        pairs.update(map("_".join, compress(pairwise(words), both)))
    return " ".join(pairs)


def pair_words(words: Sequence[str]) -> list[str]:
    """A phrase's words as the pair index holds them, those that fold away left out."""
    return [w for w in map(_pair_word, words) if w]


def pair_tokens(words: Sequence[str]) -> list[str]:
    """The pair tokens a message holds when it holds the phrase ``words`` (two or more), each
    quoted for FTS5, each once."""
    kept = pair_words(words)
    return list(dict.fromkeys(f'"{pair}"' for pair in _pairs(kept)))


@lru_cache(maxsize=64)
def _phrase_pattern(words: tuple[str, ...]) -> re.Pattern[str]:
    # The words with only separators between them, and not inside longer words.
    return re.compile(r"(?<![^\W_])" + r"[\W_]+".join(map(re.escape, words)) + r"(?![^\W_])")


def holds_phrase(columns: Sequence[str | None], words: Sequence[str]) -> bool:
    """Whether one of ``columns`` has ``words`` next to each other, as the pair index sees
    words (split, then folded)."""
    wanted = [w for w in map(_pair_word, words) if w]
    size = len(wanted)
    for column in columns:
        if not column:
            continue
        if column.isascii():  # one regular expression over the text
            if _phrase_pattern(tuple(wanted)).search(column.lower()):
                return True
            continue
        have = _column_words(column)
        if any(have[i : i + size] == wanted for i in range(len(have) - size + 1)):
            return True
    return False


# -- the pairs of common words (migration 0008, common_words.py) ----------------------------


class CommonSet:
    """The set as of each message id: the words whose ``since`` is at or below it."""

    def __init__(self, rows: Iterable[tuple[str, int]]) -> None:
        by_since: dict[int, list[str]] = {}
        for word, since in rows:
            by_since.setdefault(since, []).append(word)
        # Few distinct ids (one per promotion): the set at each, growing.
        self._ids = sorted(by_since)
        self._sets: list[frozenset[str]] = []
        words: set[str] = set()
        for since in self._ids:
            words.update(by_since[since])
            self._sets.append(frozenset(words))

    def at(self, message_id: int) -> frozenset[str]:
        level = bisect_right(self._ids, message_id)
        return self._sets[level - 1] if level else frozenset()

    @classmethod
    def read(cls, cursor: sqlite3.Connection | sqlite3.Cursor) -> CommonSet:
        return cls(cursor.execute(f"SELECT word, since FROM {COMMON_TABLE}"))


class CommonWords:
    """A connection's copy of the set for its pair function, read again when the version it
    is given changes."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self._version: object = ()  # never a version: read on first use
        self._set = CommonSet(())

    def pair_text(
        self,
        message_id: int,
        content: str | None,
        tool_name: str | None,
        tool_calls: str | None,
        version: object,
    ) -> str:
        if version != self._version:
            self._set = CommonSet.read(self._conn)
            self._version = version
        return common_pairs(self._set.at(message_id), content, tool_name, tool_calls)
