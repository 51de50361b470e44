"""What a word of a question is worth: stopwords, question words, names, numbers, stems.

An agent asks session_search in sentences ("What did Caroline paint for the art show?"). The
words that make it a sentence match nearly every message, and messages that are themselves
questions most of all, so they are left out of the search unless they are all there is or
were quoted. A participant's name is in every message of a chat that shows who speaks, so it
counts for little. A bare small number ("3", "2") matches by accident; a version, an id or a
year next to a month carries meaning and is kept.

Stems are Porter's, as FTS5's porter tokenizer makes them for ``messages_stem`` (migration
0006), through PyStemmer (the Snowball project's C implementation).
"""

from __future__ import annotations

import re
from functools import lru_cache

import Stemmer

# English function words, and the words that only say a sentence is a question or a request.
STOPWORDS = frozenset(
    """
    a about above after again against all also am an and any are aren't as at be because been
    before being below between both but by can cannot could couldn't did didn't do does doesn't
    doing done don't down during each either else ever few for from further get gets got had hadn't
    has hasn't have haven't having he he'd he'll he's her here here's hers herself him himself
    his i i'd i'll i'm i've if in into is isn't it it's its itself just let's like me might
    more most much must my myself no nor not now of off on once one only or other ought our ours
    ourselves out over own per quite rather really same shall she she'd she'll she's should
    shouldn't so some such than that that's the their theirs them themselves then there there's
    these they they'd they'll they're they've this those though through thus to too under until
    up upon us very was wasn't we we'd we'll we're we've were weren't what what's whatever when
    when's where where's whether which while who who's whom whose why why's will with won't
    would wouldn't yet you you'd you'll you're you've your yours yourself yourselves
    s t d ll m re ve don doesn didn isn wasn aren weren won wouldn couldn shouldn haven hasn
    hadn
    """.split()  # noqa: SIM905 - a list of words reads better as prose
)
QUESTION_WORDS = frozenset(
    """
    ask asked tell told remind recall remember mention mentioned mentions say said talk talked
    discuss discussed know find list many kind sort type thing things something anything
    anyone someone somebody everything happen happened likely probably ever time times way
    please give explain describe name named
    """.split()  # noqa: SIM905
)
FILLER = STOPWORDS | QUESTION_WORDS
# A number is kept when it looks like an id or a version; a bare one of up to this many
# digits is dropped (a year is kept only next to a month, which the date parser takes).
BARE_NUMBER_DIGITS = 4
_NUMBER = re.compile(r"\d+")

_PUNCTUATION = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~’“”…"
_STEMMER = Stemmer.Stemmer("porter")


@lru_cache(maxsize=4096)
def stem(word: str) -> str:
    """Porter's stem of a lower-case word, as FTS5's porter tokenizer indexes it."""
    return _STEMMER.stemWord(word)


def is_filler(word: str) -> bool:
    """A word that makes a sentence or a question but says nothing of what it is about."""
    return word in FILLER


def is_bare_number(word: str) -> bool:
    return bool(_NUMBER.fullmatch(word)) and len(word) <= BARE_NUMBER_DIGITS


def looks_like_name(raw: str, first: bool) -> bool:
    """A capitalised word that is not the first of the query and not an acronym: in a chat
    archive, usually a participant ("Caroline"), whose name is in every message they wrote."""
    raw = raw.strip(_PUNCTUATION)
    if first or len(raw) < 2 or not raw[0].isupper() or raw.isupper():
        return False
    return raw[1:].islower() and raw.isalpha()
