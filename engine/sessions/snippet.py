"""The snippet shown with a search hit, cut from the message already fetched.

Built here rather than by the database so both backends show the same thing and no second
pass through the full-text index is needed: the stretch of the message with the most query
words, those words in brackets.
"""

from __future__ import annotations

import bisect

from engine.sessions.fulltext import Form
from engine.sessions.query import WORD, Query, fold

WIDTH = 24  # tokens
CONTEXT_CHARS = 60


def _around_substring(content: str, query: Query) -> str | None:
    low = content.lower()
    for part in query.literals():
        needle = part.lower()
        at = low.find(needle)
        if at < 0:
            continue
        start, end = max(0, at - CONTEXT_CHARS), at + len(needle)
        stop = end + CONTEXT_CHARS
        return (
            ("…" if start else "")
            + f"{content[start:at]}[{content[at:end]}]{content[end:stop]}"
            + ("…" if stop < len(content) else "")
        )
    return None


def snippet(content: str, query: Query, form: Form) -> str:
    if form == "substring":
        return _around_substring(content, query) or content[: CONTEXT_CHARS * 2]
    tokens = list(WORD.finditer(content))
    if not tokens:
        return content[: CONTEXT_CHARS * 2]
    # Folded on both sides: "CAFÉ" finds "café" on either backend, so it is marked too.
    words = {fold(w) for t in query.terms for w in t.words}
    prefixes = tuple(fold(t.words[0]) for t in query.terms if t.prefix)
    marked = {
        i
        for i, m in enumerate(tokens)
        if (f := fold(m.group())) in words or (prefixes and f.startswith(prefixes))
    }
    ordered = sorted(marked)
    first, best = 0, -1
    for hit in ordered:  # the window holding the most marked tokens, starting near one
        start = max(0, hit - 2)
        count = bisect.bisect_left(ordered, start + WIDTH) - bisect.bisect_left(ordered, start)
        if count > best:
            best, first = count, start
    last = min(len(tokens), first + WIDTH)
    out, pos = [], tokens[first].start()
    for i in range(first, last):
        token = tokens[i]
        out.append(content[pos : token.start()])
        out.append(f"[{token.group()}]" if i in marked else token.group())
        pos = token.end()
    return ("…" if first else "") + "".join(out) + ("…" if last < len(tokens) else "")
