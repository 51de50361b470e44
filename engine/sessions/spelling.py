"""British and American spellings of one word: "colour" and "color", "organise" and "organize".

People write as they learnt to, and an archive holds both: a question typed "What is Jon's
favorite restaurant?" must find "my favourite restaurant", and Porter's stems keep the two
apart ("favourit", "favorit"). The productive differences (-ise/-ize, -yse/-yze) are rules;
the others (-our, -re, -ogue, -ence, a few whole words) belong to a closed set of words, which
is listed. A spelling no message has costs one seek of the index and finds nothing. Like
irregular forms, another spelling counts as another form of the word, below the form as typed.
"""

from __future__ import annotations

import re
from functools import lru_cache

# (British, American) endings that are productive, each tried both ways on the end of a word.
# Longest first, so that "-isation" is not taken for "-ise" plus a tail.
_ENDINGS = (
    ("isations", "izations"),
    ("isation", "ization"),
    ("ising", "izing"),
    ("isers", "izers"),
    ("ised", "ized"),
    ("ises", "izes"),
    ("iser", "izer"),
    ("ise", "ize"),
    ("ysing", "yzing"),
    ("ysed", "yzed"),
    ("yses", "yzes"),
    ("yse", "yze"),
)
# Below this many letters before "-ise"/"-ize", the ending is the word ("rise", "size").
_MIN_HEAD = 4
# The other differences belong to a closed set of words, so they are listed: British stems
# with what American spelling makes of them. A listed stem at the start of a word takes its
# endings along ("favourite", "coloured", "theatres", "catalogued").
_OUR = """
    ardour armour behaviour candour clamour colour endeavour favour fervour flavour glamour
    harbour honour humour labour neighbour odour parlour rancour rigour rumour savour saviour
    splendour valour vapour vigour
    """.split()  # noqa: SIM905 - a list of words reads better as prose
_STEMS = {british: british.replace("our", "or") for british in _OUR} | {
    "centre": "center",
    "theatre": "theater",
    "metre": "meter",
    "litre": "liter",
    "fibre": "fiber",
    "calibre": "caliber",
    "sombre": "somber",
    "spectre": "specter",
    "meagre": "meager",
    "lustre": "luster",
    "sabre": "saber",
    "manoeuvre": "maneuver",
    "catalogue": "catalog",
    "dialogue": "dialog",
    "analogue": "analog",
    "prologue": "prolog",
    "defence": "defense",
    "offence": "offense",
    "licence": "license",
    "pretence": "pretense",
    "grey": "gray",
    "mum": "mom",
    "plough": "plow",
    "tyre": "tire",
    "cheque": "check",
    "programme": "program",
    "jewellery": "jewelry",
    "aluminium": "aluminum",
    "pyjamas": "pajamas",
    "moustache": "mustache",
    "doughnut": "donut",
}
_ALPHA = re.compile(r"[a-z]+")
# A listed word and what may follow it; longer tails ("-ites") are the word's own.
_TAILS = ("", "s", "es", "d", "ed", "ing", "ite", "ites", "ful", "able", "ably", "ers", "er", "ry")


# Each listed pair both ways: a word in either spelling finds the other.
_BOTH_WAYS = (*_STEMS.items(), *((american, british) for british, american in _STEMS.items()))


def _listed(word: str) -> set[str]:
    found = set()
    for one, other in _BOTH_WAYS:
        if word.startswith(one) and word[len(one) :] in _TAILS:
            found.add(other + word[len(one) :])
    return found


@lru_cache(maxsize=4096)
def other_spellings(word: str) -> frozenset[str]:
    """The other spelling(s) of a lower-case ``word`` ("colour": color; "organized":
    organised); empty for a word with no such difference."""
    if not _ALPHA.fullmatch(word):
        return frozenset()
    found = _listed(word)
    for british, american in _ENDINGS:
        for have, other in ((british, american), (american, british)):
            head = word[: -len(have)]
            if word.endswith(have) and len(head) >= _MIN_HEAD:
                found.add(head + other)
                break
        else:
            continue
        break  # one ending a word: the longest that fits
    found.discard(word)
    return frozenset(found)
