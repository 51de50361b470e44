"""A query read as a question: the words it is about, how much each counts, and when.

"What did Caroline paint for the art show in August 2023?" is about ``paint``, ``art`` and
``show``, said by (or to) ``Caroline``, in a span of dates. The rest makes it a sentence. Both
backends search for the concepts only; SQLite also matches their stems and compounds
(recall.py).

A query is read this way when it looks like words typed loosely: no quoted phrase, no
exclusion, no prefix, no CJK, and either more than one word left once the filler is gone, or
filler that went (a one-word keyword query such as ``OOMKilled`` keeps the exact path).
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection
from dataclasses import dataclass, replace

from engine.sessions.fulltext import Filters
from engine.sessions.query import Query, Term, parse_query
from engine.sessions.when import Span, find_span
from engine.sessions.words import (
    QUESTION_WORDS,
    is_bare_number,
    is_filler,
    looks_like_name,
    stem,
)

NAME_WEIGHT = 0.35  # a participant's name, beside a word of the topic
NUMBER_WEIGHT = 0.35  # a bare number ("7", "2"): an id now and then, by accident more often
QUESTION_NOUN_WEIGHT = 0.5  # "a talk", "the list": a question word that is a noun of the topic
DETERMINERS = frozenset(
    {"a", "an", "the", "my", "his", "her", "their", "our", "your", "this", "that", "these", "those"}
)
# "Caroline's" is about Caroline; "don't" is two words of filler.
_POSSESSIVE = re.compile(r"(?<=[^\W_])['’]s\b")
_APOSTROPHE = re.compile(r"(?<=[^\W_])['’](?=[^\W_])")
# "why …", "how …" (after a lead-in such as "so" or "remind me"), but not "how many / long /
# tall …" (a count or a measure, which a request can state), and the one who was asked as the
# subject: "did you suggest", "you recommended", "your advice".
_MEASURES = (
    "many|much|long|often|frequently|old|far|big|soon|tall|fast|large|high|wide|deep|heavy|"
    "expensive"
)
_ASKS_REPLY = re.compile(
    r"^\W*(?:(?:so|and|but|then|remind me|tell me|explain)\W+)?"
    rf"(?:why\b|how\b(?!\s+(?:{_MEASURES})\b))"
    r"|\b(?:did|do|would|could|can|will|should|have|had)\s+(?:you|we)\b"
    r"|\b(?:you|we)\s+(?:suggested|recommended|advised|proposed|said|told|thought|agreed|decided"
    r"|chose|settled|picked)\b"
    r"|\byour\s+(?:advice|suggestion|recommendation|plan|fix)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Concept:
    """One thing the question is about: a word (or a word of several parts, such as
    ``road-trip`` or ``v2.14``) and how much a match on it counts."""

    term: Term
    weight: float = 1.0
    name: bool = False  # a participant's name: also weighed per session (recall.py)

    @property
    def single(self) -> bool:
        return len(self.term.words) == 1

    @property
    def as_typed(self) -> bool:
        """A name or a bare number: searched in the form typed, not in its other forms."""
        return self.single and (self.name or is_bare_number(self.term.words[0]))

    @property
    def stems(self) -> tuple[str, ...]:
        return tuple(stem(w) for w in self.term.words)


@dataclass(frozen=True)
class Question:
    concepts: tuple[Concept, ...]
    span: Span | None
    query: Query  # the concepts as a plain query, for the exact indexes and PostgreSQL
    keywords: bool = False  # typed as keywords: no filler, name, number or date in it
    # It asks what was explained or advised, which the reply to a request holds, not the
    # request: "Why did Tidepool go down?", "What did you suggest for the retries?".
    asks_reply: bool = False

    @property
    def weights(self) -> tuple[float, ...]:
        return tuple(c.weight for c in self.concepts)


def _keep(term: Term) -> bool:
    if len(term.words) > 1:
        return not all(is_filler(w) for w in term.words)
    return not is_filler(term.words[0])


def _nouns(terms: tuple[Term, ...]) -> set[int]:
    """The question words that stand after a determiner, and so are nouns of the topic: "giving
    a talk", "the list she made", not "talk about" or "what kind of"."""
    return {
        i
        for i in range(1, len(terms))
        if len(terms[i].words) == 1
        and terms[i].words[0] in QUESTION_WORDS
        and len(terms[i - 1].words) == 1
        and terms[i - 1].words[0] in DETERMINERS
    }


def read_question(
    text: str, parsed: Query, anchor: float | None, keyword: bool = False
) -> Question | None:
    """``text`` as a question, or None when it should be searched as typed. With ``keyword``,
    a lone keyword is read too (for its other forms, once the exact ones are known)."""
    if parsed.cjk or parsed.phrases or parsed.excluded or any(t.prefix for t in parsed.terms):
        return None
    span = None
    rest = _APOSTROPHE.sub(" ", _POSSESSIVE.sub("", text))
    if anchor is not None:
        span, rest = find_span(rest, anchor)
    parsed = parse_query(rest)
    nouns = _nouns(parsed.terms)
    kept = [t for i, t in enumerate(parsed.terms) if _keep(t) or i in nouns]
    if not kept:
        # Nothing but filler (or only the date): searched as typed, without the date words.
        return None if span is None or parsed.empty else _as_question(parsed.terms, span, parsed)
    if len(kept) == 1 and span is None and not keyword:
        # One keyword, or one number among filler ("what about 42"): the exact path answers
        # it, and it alone means filler (kept there) counts for nothing.
        lone = kept[0].words
        if len(parsed.terms) == 1 or (len(lone) == 1 and is_bare_number(lone[0])):
            return None
    question = _as_question(kept, span, parsed)
    if _ASKS_REPLY.search(text):
        question = replace(question, asks_reply=True)
    plain = len(kept) == len(parsed.terms) and span is None
    if plain and all(c.weight == 1.0 for c in question.concepts):  # no name, number, noun
        question = replace(question, keywords=True)
    return question


def _as_question(
    terms: list[Term] | tuple[Term, ...], span: Span | None, parsed: Query
) -> Question:
    first = parsed.terms[0] if parsed.terms else None
    concepts = []
    seen: set[tuple[str, ...]] = set()
    for term in terms:
        if term.words in seen:
            continue
        seen.add(term.words)
        single = len(term.words) == 1
        weight = 1.0
        if single and is_bare_number(term.words[0]):
            weight = NUMBER_WEIGHT
        elif single and looks_like_name(term.raw, term is first):
            weight = NAME_WEIGHT
        elif single and term.words[0] in QUESTION_WORDS:
            weight = QUESTION_NOUN_WEIGHT
        concepts.append(Concept(term, weight, name=weight == NAME_WEIGHT and single))
    query = Query(tuple(c.term for c in concepts))
    return Question(tuple(concepts), span, query)


def as_topic(question: Question, which: Collection[int]) -> Question:
    """The question with the names at ``which`` weighed as words of the topic, in every form:
    a capitalised word that nobody in the history speaks as ("Where is Brightwater hosted?")
    is what the question is about, not who said it."""
    concepts = tuple(Concept(c.term) if k in which else c for k, c in enumerate(question.concepts))
    return replace(question, concepts=concepts)


def without_names(text: str, names: Collection[str]) -> str:
    """``text`` with each of ``names`` (as typed in it) put as "they", or "their" for "Gina's":
    what the question asks of a participant, for the meaning ranking. A participant's name
    is in every message they wrote ("Gina: …", as imported chats are written), and a
    sentence vector weighs it far above the words of the topic: the nearest messages of
    "Did Gina change careers?" are Gina's, whatever they are about."""
    for name in names:
        typed = re.escape(name)
        text = re.sub(rf"(?<![^\W_]){typed}['’]s\b", "their", text, flags=re.IGNORECASE)
        text = re.sub(rf"(?<![^\W_]){typed}(?![^\W_])", "they", text, flags=re.IGNORECASE)
    return text


def span_first(question: Question, filters: Filters) -> list[Filters]:
    """The filters a question's answers are looked for under, in turn: with a time span in the
    question, the span first, then the rest of the history to fill up to the limit."""
    if question.span is None:
        return [filters]
    since = max(filters.since or -math.inf, question.span.since)
    until = min(filters.until or math.inf, question.span.until)
    return [replace(filters, since=since, until=until), filters]
