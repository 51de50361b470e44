"""Turn anything a user can type into safe full-text queries.

User text is never passed to FTS syntax as is: it is split into terms, each term becomes a
quoted phrase of its word parts (so `v2.14.3`, `me@example.com`, `src/app.py` or `snake_case`
match as the sequence of their parts), and the operators are ours. A lone quote, parentheses,
`AND`/`OR`/`NOT`, `*`, `-`, emoji or 2,000 characters of noise therefore cannot raise a syntax
error.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

MAX_TERMS = 32
# unicode61 splits on everything that is not a letter or digit, underscore included.
WORD = re.compile(r"[^\W_]+")
_CHUNK = re.compile(r'"([^"]*)"|(\S+)')
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_OPERATORS = {"AND", "OR", "NOT", "NEAR"}
# The characters the gram indexes split into one- and two-character grams (migration 0003 holds
# the same class for SQLite's GLOB and PostgreSQL's regular expressions; a test keeps them
# equal).
CJK_GRAM_CLASS = (
    "[\u3005\u3041-\u3096\u309d-\u309f\u30a1-\u30fa\u30fc-\u30ff\u3105-\u312f\u31f0-\u31ff"
    "\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7a3\uf900-\ufaff]"
)
_GRAM_TERM = re.compile(CJK_GRAM_CLASS + "{1,2}")


def fold(word: str) -> str:
    """What unicode61 with remove_diacritics does to a token, near enough to compare words
    outside the index."""
    if word.isascii():  # most words, and already decomposed: a snippet folds every word
        return word.lower()
    decomposed = unicodedata.normalize("NFKD", word.lower())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def _is_cjk(ch: str) -> bool:
    name = unicodedata.name(ch, "")
    return name.startswith(("CJK", "HIRAGANA", "KATAKANA", "HANGUL")) or "IDEOGRAPH" in name


@dataclass(frozen=True)
class Term:
    words: tuple[str, ...]  # word parts, matched as a phrase
    raw: str  # the text as typed, for substring (trigram) search
    prefix: bool = False

    def fts(self) -> str:
        phrase = '"' + " ".join(self.words) + '"'
        return phrase + "*" if self.prefix else phrase


@dataclass(frozen=True)
class Query:
    terms: tuple[Term, ...]
    excluded: tuple[Term, ...] = ()
    cjk: bool = False
    phrases: tuple[Term, ...] = field(default=())  # quoted by the user

    @property
    def empty(self) -> bool:
        return not self.terms

    def phrase_term(self) -> Term | None:
        """All terms as one phrase, the most precise form; None when it would add nothing."""
        if len(self.terms) < 2 or any(t.prefix for t in self.terms):
            return None
        words = tuple(w for t in self.terms for w in t.words)
        return Term(words=words, raw=" ".join(t.raw for t in self.terms))

    def substrings(self) -> list[str]:
        """Terms for the trigram index (three characters or more), as quoted strings."""
        out = []
        for term in self.terms:
            text = term.raw.replace('"', "")
            if len(text) >= 3:
                out.append('"' + text + '"')
        return out

    def grams(self) -> list[str]:
        """CJK terms of one or two characters, too short for trigrams: looked up in the gram
        index instead."""
        out = []
        for term in self.terms:
            text = term.raw.replace('"', "")
            if _GRAM_TERM.fullmatch(text) and text not in out:
                out.append(text)
        return out

    def literals(self) -> list[str]:
        """What the substring form looks for, as plain text: trigram terms, then grams."""
        return [part.strip('"') for part in self.substrings()] + self.grams()


def parse_query(text: str) -> Query:
    if not isinstance(text, str):
        raise TypeError("query must be text")
    terms: list[Term] = []
    excluded: list[Term] = []
    phrases: list[Term] = []
    negate_next = False
    # Control characters carry no searchable meaning (and PostgreSQL refuses NUL outright).
    clean = _CONTROL.sub(" ", unicodedata.normalize("NFKC", text))
    for match in _CHUNK.finditer(clean):
        quoted, bare = match.group(1), match.group(2)
        chunk = quoted if quoted is not None else bare
        if bare is not None and bare in _OPERATORS:
            negate_next = bare == "NOT"
            continue
        negate = negate_next or (bare is not None and bare.startswith("-") and len(bare) > 1)
        negate_next = False
        prefix = bare is not None and bare.endswith("*")
        raw = chunk.strip("-*()") if bare is not None else chunk
        words = tuple(w.lower() for w in WORD.findall(raw))
        if not words:
            continue
        term = Term(words=words, raw=raw, prefix=prefix and len(words) == 1)
        if negate:
            excluded.append(term)
        else:
            terms.append(term)
            if quoted is not None:
                phrases.append(term)
        if len(terms) + len(excluded) >= MAX_TERMS:
            break
    cjk = any(_is_cjk(ch) for ch in text[:4096])
    return Query(tuple(terms), tuple(excluded), cjk, tuple(phrases))
