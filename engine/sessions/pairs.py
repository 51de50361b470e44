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
import unicodedata
from collections.abc import Iterator, Sequence
from functools import lru_cache
from itertools import pairwise

from engine.sessions.query import WORD, fold

FUNCTION = "cairn_pairs"  # the SQL function migration 0004's view and triggers call
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


def pair_tokens(words: Sequence[str]) -> list[str]:
    """The pair tokens a message holds when it holds the phrase ``words`` (two or more), each
    quoted for FTS5, each once."""
    kept = [w for w in map(_pair_word, words) if w]
    return list(dict.fromkeys(f'"{pair}"' for pair in _pairs(kept)))


@lru_cache(maxsize=64)
def _phrase_pattern(words: tuple[str, ...]) -> re.Pattern[str]:
    # The words with only separators between them, and not inside longer words.
    return re.compile(r"(?<![^\W_])" + r"[\W_]+".join(map(re.escape, words)) + r"(?![^\W_])")


class PhraseCheck:
    """Whether a text has ``words`` next to each other, as the pair index sees words (split,
    then folded): the words made and the pattern compiled once, for checking many texts."""

    def __init__(self, words: Sequence[str]) -> None:
        self.wanted = [w for w in map(_pair_word, words) if w]
        self.pattern = _phrase_pattern(tuple(self.wanted))

    def __call__(self, column: str | None) -> bool:
        if not column:
            return False
        if column.isascii():  # one regular expression over the text
            return self.pattern.search(column.lower()) is not None
        have, wanted, size = _column_words(column), self.wanted, len(self.wanted)
        return any(have[i : i + size] == wanted for i in range(len(have) - size + 1))


def holds_phrase(columns: Sequence[str | None], words: Sequence[str]) -> bool:
    """Whether one of ``columns`` has ``words`` next to each other (a phrase never spans two
    columns)."""
    check = PhraseCheck(words)
    return any(map(check, columns))
