"""Ranking a question on SQLite: stems, compounds, reply context, proximity, whole sessions.

The candidates come from walks as in fts_sqlite.py: each concept of the question (question.py)
is walked on its own through the stemmed index ``messages_stem`` (migration 0006), newest
matches first, with a share of the ranking budget, so a rare word is found over the whole
history however common the others are. A concept's walk matches its word in any inflection
(porter stems), and its compounds: "roadtrips" also as "road trip" when that pair of words is
in the pair index, "back yard" also as "backyard" when that word is in the index. A short reply
is indexed with the text it answers (its ``context`` column), so "A sunset over the lake." is
found by "what did Caroline paint"; and the turn after a candidate that asks, however long, is
read and scored with that question as its context (an assistant's long answer rarely repeats
the words of what it was asked).

The candidates are ranked by BM25 from the walks (as fts_sqlite does). The walks of common
words stop at their newest matches, so that score misses what an older candidate's text holds:
the best 48 per result wanted have their heads read and their score completed from the words
found there, and the best twelve of those are read whole and scored again on their text, where
more is known: a weighted sum of named features (FEATURES: the word as typed or in another
form, in the turn a reply answers, said by the person the question names, near each other, the
whole phrase, the words of its own a message has…), whose weights are learned on the recall
benchmark's tuning batch (``tests/benchmarks/recall.py --train``) and committed here. A
message that only asks ("…?") counts for less than the answer that follows it (one that tells
something first does not: an agent's user states the fact, then asks); a participant's name
counts for a third of a word of the topic (question.py), and a capitalised word that nobody in
the history speaks as ("Brightwater", a project) as a word of the topic.

Then whole conversations are ranked: the best message, plus a share of the weight of each
concept that the best message lacks and another message of the conversation has, a share of
the runner-up, and a share of each name the session holds (only in a conversation about the
topic). The card shows the best message by what it holds itself (a reply read through a
request that tells shows the request) and, when it is elsewhere in the session, the runner-up.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import math
import operator
import re
import string
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from sqlalchemy import bindparam, text

from engine.sessions.bulk import CONTEXT_CHARS
from engine.sessions.fts_sqlite import (
    FEW,
    FILTERED_RANK_BUDGET,
    K1,
    PAIR_TABLE,
    RANK_BUDGET,
    WORD_TABLE,
    Found,
    SqliteFullText,
    _Walk,
    driver_cursor,
)
from engine.sessions.fulltext import Filters, Hit
from engine.sessions.irregular import other_forms
from engine.sessions.pairs import PhraseCheck
from engine.sessions.query import WORD, fold
from engine.sessions.question import Concept, Question, as_topic, span_first
from engine.sessions.spelling import other_spellings
from engine.sessions.words import FILLER, stem

STEM_TABLE = "messages_stem"
SCAN_CHARS = 1200  # of a long message, the head is scored on its text
PRE_PER_RESULT, PRE_MIN = 12, 24  # candidates read and scored on their text, per result wanted
# Of which they are chosen, per result wanted (see Recall._narrowed), up to what the largest
# limit a search takes would read: a ranking made deep for fusion with meaning reads no more.
WIDE_PER_RESULT, WIDE_MAX = 48, 480
# Messages of concepts found whole, read and scored besides (their walks hold <= FEW each).
RARE_EXTRA = 16
# Asked for what a reply holds (Question.asks_reply), the turn after each of this many best
# candidates is read as well as after those that end in "?": a request need not ask ("Fernhill's
# webhooks fail whenever the provider hiccups."). More read more noise as well as more cost:
# other projects' replies lent the same words (chosen on agent-dev: 2 against 1-24).
REPLIES_OF_BEST = 2
POSITIONS = 16  # of a concept's places in a message, those kept for proximity
EXACT, STEMMED, CONTEXT = 1.0, 0.85, 0.5
ASKING = 0.75  # a message that asks, beside one that tells
# A message that ends in a question but first says this many words or more tells something:
# "I take levothyroxine every morning for my thyroid. Is grapefruit juice fine?" is the
# request of an agent's user, and the fact is in it. "Hey! Did you book it?" only asks.
TOLD_WORDS = 6
# A reply to a question has the question's words at the weight the question has them: the
# answer is what the asking was about.
ANSWER = ASKING
NAME_IN_SESSION = 0.65  # the rest of a name's weight, when its conversation has it anywhere
# A message that opens with a name and a colon ("Caroline: I got it!") was said by that person,
# as imported group chats write each turn: the name counts this many times more there.
SPEAKER = 2.0
NAMED = 30  # conversations checked for the names of a question
# A name's newest messages, read to tell a participant (who opens messages as ``Name: …``) from
# a capitalised word of the topic (a project, a place): one of them said by it is enough.
SPEAKER_SAMPLE = 8
# The conversations nearest in meaning to a question about a participant that are checked for
# the participant's name (Recall.said_by): far more than the fusion's depth.
SAID_CHECKED = 200
PROXIMITY = 0.3
PHRASE = 0.5  # the share of a message's score added when it holds the whole query as typed
NEAR, CHARS_PER_WORD = 4, 6.0  # words apart that still count as near
COVER, RUNNER_UP = 0.5, 0.2
B = 0.5  # length normalisation: replies are short, and a short reply is not more relevant
# Length normalisation of the first score, which only chooses what is scored on the text: the
# learned score leans on words counted without it (``flat``), and a first score that favoured
# short messages would leave out the longer ones that score wins with.
FIRST_B = 0.1
MIN_SPLIT = 3  # letters on each side of a compound's split
MAX_COMPOUND = 24  # letters: a longer "word" is noise, not two words run together
# What a candidate's score is made of, each a sum over the concepts it has (a concept's BM25
# idf × its weight × the saturation of the message, or of the turn it answers), and the weight
# of each in the score. The weights are learned on the recall benchmark's tuning batch
# (``tests/benchmarks/recall.py --train``), see docs/sessions.md.
FEATURES = (
    "exact",  # a word as typed, in the message
    "stemmed",  # another form of it (stem, compound, agent noun's verb)
    "answer",  # only in the turn the message answers, and that turn asks (or was asked of)
    "context",  # only in the turn before a short message, which does not ask
    "indexed",  # found by the index, not in the scanned head (a long message)
    "speaker",  # a name concept, where the message is said by that person (``Name: …``)
    "near",  # concepts within a few words of each other in the message
    "near_context",  # the same in the turn answered
    "phrase",  # the whole question as typed, word for word
    "all",  # every concept of the topic (names aside) is there
    "flat",  # the same two (another form at 0.85 of the typed one), not length-normalised
    "news",  # words of its own beyond the question's: an answer tells something
)
(
    _EXACT,
    _STEMMED,
    _ANSWER,
    _CONTEXT,
    _INDEXED,
    _SPEAKER_F,
    _NEAR,
    _NEAR_CONTEXT,
    _PHRASE,
    _ALL,
    _FLAT,
    _NEWS,
) = range(len(FEATURES))
# The design's own weights before they were learned (the constants above).
HAND_WEIGHTS = (
    EXACT,
    STEMMED,
    ANSWER,
    CONTEXT,
    CONTEXT,
    SPEAKER - 1,
    1.0,
    ANSWER,
    PHRASE,
    0.0,
    0.0,
    0.0,
)
SESSION_WEIGHTS_HAND = (NAME_IN_SESSION, COVER, RUNNER_UP)
SESSION_WEIGHTS = (1.5, 0.25, 0.2)
WEIGHTS = (0.0, 0.0, 0.374, 0.051, 0.104, 0.648, 0.251, 0.157, 0.104, 0.001, 0.362, 0.036)
_ID_SPAN = text("SELECT (SELECT min(id) FROM messages), (SELECT max(id) FROM messages)")
# The head of each candidate's text (a tool's output can be megabytes), whether it goes on,
# and whether it asks.
_ROWS = (
    f"SELECT m.id, m.session_id, s.root_session_id, substr(m.content, 1, {SCAN_CHARS}) AS head, "
    f"length(m.content) > {SCAN_CHARS} AS cut, substr(rtrim(m.content), -1) = '?' AS asks, "
    "c.context "
    "FROM messages AS m JOIN sessions AS s ON s.id = m.session_id "
    "LEFT JOIN messages_context AS c ON c.id = m.id WHERE m.id IN ({})"
)
# The turn after each of the given messages that ask (its answer, whatever its length), with
# the question as its context; in both backends' SQL. ``m`` and ``s`` are the answer and
# its session, so that a search's filters (Filters.sql) hold for it as for any candidate.
_ANSWERS = (
    f"SELECT m.id, m.session_id, s.root_session_id, substr(m.content, 1, {SCAN_CHARS}) AS head, "
    f"length(m.content) > {SCAN_CHARS} AS cut, "
    "substr(rtrim(m.content), length(rtrim(m.content)), 1) = '?' AS asks, "
    f"substr(q.content, 1, {CONTEXT_CHARS}) AS context "
    "FROM messages AS q JOIN messages AS m ON m.id = (SELECT min(n.id) FROM messages AS n "
    "WHERE n.session_id = q.session_id AND n.id > q.id AND n.content != '') "
    "JOIN sessions AS s ON s.id = m.session_id WHERE ({which}) AND m.role != q.role"
)
# The heads alone, for choosing among more candidates than are scored (Recall._narrowed).
_HEADS = f"SELECT id, substr(content, 1, {SCAN_CHARS}) FROM messages WHERE id IN ({{}})"
_ALPHA = re.compile(r"[a-z]+")
_SESSION_SPANS = text(
    "SELECT session_id, min(id), max(id) FROM messages WHERE session_id IN :sids "
    "GROUP BY session_id"
).bindparams(bindparam("sids", expanding=True))
_NEWEST_HEADS = (
    "SELECT substr(content, 1, 40) FROM messages WHERE id IN (SELECT rowid FROM messages_fts "
    "WHERE messages_fts MATCH ? ORDER BY rowid DESC LIMIT ?)"
)
# A message's head with the heads of the turns before and after it (Recall.said_by).
_WITH_NEIGHBOURS = text(
    f"SELECT m.id, substr(m.content, 1, {SCAN_CHARS}), "
    f"(SELECT substr(p.content, 1, {SCAN_CHARS}) FROM messages AS p WHERE p.session_id = "
    "m.session_id AND p.id < m.id ORDER BY p.id DESC LIMIT 1), "
    f"(SELECT substr(n.content, 1, {SCAN_CHARS}) FROM messages AS n WHERE n.session_id = "
    "m.session_id AND n.id > m.id ORDER BY n.id LIMIT 1) "
    "FROM messages AS m WHERE m.id IN :ids"
).bindparams(bindparam("ids", expanding=True))
_HOLDS_IN_RANGE = (
    f"SELECT 1 FROM {STEM_TABLE} WHERE {STEM_TABLE} MATCH ? AND rowid BETWEEN ? AND ? LIMIT 1"
)


Params = tuple[object, ...] | dict[str, object]


def word_variants(word: str) -> frozenset[str]:
    """The forms of a topic word that its stem does not match, on both backends: irregular
    forms (irregular.py) and the other spelling (spelling.py)."""
    return other_forms(word) | other_spellings(word)


@dataclass
class _Form:
    """How a concept can be written: single words, phrases (of stems), and the irregular forms
    and other spellings of its word (irregular.py, spelling.py), which count as another form
    of it, not as the word."""

    words: set[str] = field(default_factory=set)
    phrases: list[tuple[str, ...]] = field(default_factory=list)
    variants: frozenset[str] = frozenset()

    def match(self) -> str:
        parts = [f'"{w}"' for w in sorted(self.words | self.variants)] + [
            '"' + " ".join(p) + '"' for p in self.phrases
        ]
        return " OR ".join(parts)


@dataclass
class Ranked:
    """A conversation's match (its best message by what it holds itself), the runner-up in
    the same session, and the conversation's score."""

    hit: Hit
    second: int | None
    topical: bool = True  # some message of it has a word of the topic, not only a name


@dataclass
class _Scored:
    id: int
    session_id: str
    root: str
    score: float
    matched: dict[int, float]  # concept index → match strength
    topical: bool = True  # a concept other than a name matched
    # The part of the score a request that also tells lent it: as the conversation's match,
    # a message counts ``score - lent`` (_conversations).
    lent: float = 0.0


class _Candidate(NamedTuple):
    """A row of ``rows_sql``: what a candidate is scored on."""

    id: int
    session_id: str
    root_session_id: str
    head: str | None
    cut: int
    asks: int
    context: str | None


def _id_list(ids: Iterable[int]) -> str:
    return ", ".join(str(int(i)) for i in ids)


class _Read(NamedTuple):
    """A candidate's row as read for scoring, with its text and its context folded."""

    row: _Candidate
    folded: str
    folded_context: str
    # Whether the index counted the context in the candidate's length (a short reply's context
    # column on SQLite), or it was read for scoring only (Recall._answers).
    context_indexed: bool = True


def _patterns(question: Question, forms: list[_Form]) -> list[_Patterns]:
    """Each concept's forms as the text check sees them."""
    patterns = [
        _Patterns.of(c.term.words if c.single else (), form)
        for c, form in zip(question.concepts, forms, strict=True)
    ]
    for c, p in zip(question.concepts, patterns, strict=True):
        if not c.single:
            p.add_phrase(c.term.words)
    return patterns


def _df(found: Found, budget: int, span: tuple[int, int]) -> float:
    """How many messages hold a term, from its walk (as fts_sqlite._idf estimates it)."""
    low, high = span
    total = max(1, high - low + 1)
    if len(found) < budget:
        return float(len(found))
    return min(total, len(found) * total / max(1, high - found[-1][0] + 1))


class Recall:
    rows_sql = _ROWS  # the candidates' text, context and whether they ask
    # Whether a candidate's length (from the index) counts the context indexed with it: the
    # stemmed index holds a short reply's context in a column of its own, so its words are
    # taken off to leave the reply's own length.
    lengths_hold_context = True
    weights: tuple[float, ...] = WEIGHTS
    # A conversation's own terms: the rest of a name's weight when the session has the name,
    # each concept another message covers, and the runner-up message.
    session_weights: tuple[float, float, float] = SESSION_WEIGHTS
    # Called with each round's candidates and their features (id, features + whether it
    # asks): how tests/benchmarks/recall.py --train sees what the score is made of.
    observer: Callable[[list[tuple[int, tuple[float, ...]]]], None] | None = None

    def __init__(self, fts: SqliteFullText) -> None:
        self.fts = fts
        self.conn = fts.conn

    # -- variants ------------------------------------------------------------------------

    def _exists(self, table: str, token: str) -> bool:
        """Whether ``token`` is in ``table`` at all: one seek, straight on the driver (a
        statement through SQLAlchemy costs more than the seek)."""
        return self._first(f"SELECT 1 FROM {table} WHERE {table} MATCH ? LIMIT 1", (token,))

    def _first(self, sql: str, params: tuple[object, ...]) -> bool:
        """Whether a statement of one row at most (``LIMIT 1``) has it."""
        return bool(self._fetch(sql, params))

    def _splits(self, word: str, behind: int | None = None) -> list[tuple[str, ...]]:
        """``word`` as two words that stand together somewhere ("roadtrips": road trips),
        asked of the pair index and, for the messages from ``behind`` on that it does not hold
        yet (backlog.py), of the word index's phrases."""
        if not 2 * MIN_SPLIT <= len(word) <= MAX_COMPOUND or not _ALPHA.fullmatch(word):
            return []
        candidates: list[list[tuple[str, str]]] = []
        for i in range(MIN_SPLIT, len(word) - MIN_SPLIT + 1):
            head, tail = word[:i], word[i:]
            tails = [tail] + ([tail[:-1]] if tail.endswith("s") and len(tail) > MIN_SPLIT else [])
            candidates.append([(head, t) for t in tails])

        def stand_together(pairs: Sequence[tuple[str, str]]) -> bool:
            if self._exists(PAIR_TABLE, " OR ".join(f'"{h}_{t}"' for h, t in pairs)):
                return True
            return behind is not None and self._first(
                f"SELECT 1 FROM {WORD_TABLE} WHERE {WORD_TABLE} MATCH ? AND rowid >= ? LIMIT 1",
                (" OR ".join(f'"{h} {t}"' for h, t in pairs), behind),
            )

        # Most words are no compound: one look-up for all the splits says so.
        if not stand_together([pair for pairs in candidates for pair in pairs]):
            return []
        found: list[tuple[str, ...]] = []
        for pairs in candidates:
            for head, t in pairs:
                if stand_together([(head, t)]):
                    found.append((head, t))
                    break
        return found

    def _agent_base(self, word: str) -> str | None:
        """The verb of an agent noun that the messages hold ("runner": run, "baker": bake),
        which Porter's stems keep apart."""
        if len(word) < 5 or not word.endswith(("er", "ers")):
            return None
        base = word[: -3 if word.endswith("ers") else -2]
        # runner → run, baker → bake, gardener → garden
        for candidate in dict.fromkeys(
            [base[:-1] if len(base) > 2 and base[-1] == base[-2] else base, base + "e", base]
        ):
            if len(candidate) >= 3 and self._exists(STEM_TABLE, f'"{candidate}"'):
                return candidate
        return None

    def _forms(self, question: Question) -> list[_Form]:
        forms = []
        behind = self.fts.behind()
        for c in question.concepts:
            form = _Form()
            if c.single:
                word = c.term.words[0]
                form.words.add(word)
                form.phrases.extend(self._splits(word, behind))
                if not c.as_typed:
                    form.variants = word_variants(word)
                    if base := self._agent_base(word):
                        form.words.add(base)
            elif all(_ALPHA.fullmatch(w) for w in c.term.words) and len(c.term.words) <= 3:
                form.phrases.append(c.term.words)  # "road-trip", "two-bedroom"
                joined = "".join(c.term.words)
                if self._exists(STEM_TABLE, f'"{joined}"'):
                    form.words.add(joined)
            forms.append(form)
        # Two words typed apart that are one word in the messages ("back yard": backyard).
        for i in range(len(question.concepts) - 1):
            a, b = question.concepts[i], question.concepts[i + 1]
            if a.single and b.single:
                joined = a.term.words[0] + b.term.words[0]
                if _ALPHA.fullmatch(joined) and self._exists(STEM_TABLE, f'"{joined}"'):
                    forms[i].words.add(joined)
                    forms[i + 1].words.add(joined)
        return forms

    # -- candidates ----------------------------------------------------------------------

    def _walks(self, question: Question, forms: list[_Form], own_words: bool) -> list[list[_Walk]]:
        """Each concept's walks. With ``own_words`` (a role filter: the message itself must
        say it), a reply's context is not matched."""
        walks = []
        for c, form in zip(question.concepts, forms, strict=True):
            mine = []
            if form.words or form.phrases:
                match = f"content : ({form.match()})" if own_words else form.match()
                mine.append(_Walk(STEM_TABLE, match, STEM_TABLE))
            if not c.single and not form.phrases:
                # An identifier (v2.14.3, snake_case, a path): its exact parts, in order.
                mine.append(self.fts._sparser(self.fts._all_of([c.term], ())))
            walks.append(mine)
        return walks

    def participants(self, question: Question) -> Question:
        """The question with each name that nobody in the history speaks as weighed as a word
        of the topic. A name counts for a third of a word because a participant's name is in
        every message they wrote ("Caroline: …", as imported chats are written); in an agent's
        own sessions, or any history whose messages carry no names, a capitalised word
        ("Brightwater", "Lisbon") is what the question is about, and often its rarest word."""
        topic = [
            k
            for k, c in enumerate(question.concepts)
            if c.name and not self._speaks(fold(c.term.words[0]))
        ]
        return as_topic(question, topic) if topic else question

    def speakers(self, question: Question) -> list[Concept]:
        """The names of the question that someone in the history speaks as."""
        return [c for c in self.participants(question).concepts if c.name]

    def said_by(self, names: Sequence[Concept], hits: Sequence[Hit]) -> list[Hit]:
        """The first SAID_CHECKED of ``hits`` (one a conversation, best first) where every
        one of ``names`` is in the message or in the turn before or after it: what a question
        about a participant asks of is in that participant's conversations, and in a chat
        written ``Name: text`` every other turn is theirs. One statement, whatever the size
        of the conversations (a seek per session for the name cost 50 ms for 200 hits at 10^5
        messages on SQLite, 220 ms on PostgreSQL)."""
        if not names:
            return list(hits)
        hits = hits[:SAID_CHECKED]
        if not hits:
            return []
        near = {
            int(mid): _folded(" ".join(part or "" for part in parts))
            for mid, *parts in self.conn.execute(
                _WITH_NEIGHBOURS, {"ids": [h.message_id for h in hits]}
            )
        }
        words = [re.compile(rf"{_EDGE}{re.escape(fold(c.term.words[0]))}(?![^\W_])") for c in names]
        return [h for h in hits if all(w.search(near.get(h.message_id, "")) for w in words)]

    def _speaks(self, name: str) -> bool:
        """Whether any of the newest messages that hold ``name`` is said by it."""
        return any(_speaker(_folded(head)) == name for head in self._newest_heads(name))

    def _newest_heads(self, word: str) -> list[str]:
        return [str(r[0]) for r in self._fetch(_NEWEST_HEADS, (f'"{word}"', SPEAKER_SAMPLE))]

    def rank(self, question: Question, filters: Filters, limit: int) -> list[Ranked]:
        question = self.participants(question)
        forms = self._forms(question)
        walks = self._walks(question, forms, bool(filters.roles))
        return self._in_rounds(
            question,
            filters,
            limit,
            lambda round_filters: self._round(question, forms, walks, round_filters, limit),
        )

    @staticmethod
    def _in_rounds(
        question: Question,
        filters: Filters,
        limit: int,
        one_round: Callable[[Filters], Iterable[Ranked]],
    ) -> list[Ranked]:
        """The best conversations, one card per lineage: with a time span in the question,
        the span first, then the rest of the history to fill up to the limit."""
        out: list[Ranked] = []
        seen: set[str] = set()
        for round_filters in span_first(question, filters):
            for ranked in one_round(round_filters):
                if ranked.hit.root_session_id not in seen:
                    seen.add(ranked.hit.root_session_id)
                    out.append(ranked)
            if len(out) >= limit:
                break
        return out[:limit]

    def _round(
        self,
        question: Question,
        forms: list[_Form],
        walks: list[list[_Walk]],
        filters: Filters,
        limit: int,
    ) -> list[Ranked]:
        budget = FILTERED_RANK_BUDGET if filters.sql()[0] else RANK_BUDGET
        count = sum(len(w) for w in walks) or 1
        share = max(FEW, budget // count)
        id_range = self.fts._id_range(filters)
        found: list[list[Found]] = [
            [self.fts._walk(w, filters, share, ids=id_range) for w in mine] for mine in walks
        ]
        if not any(f for mine in found for f in mine):
            return []
        low, high = (x or 0 for x in self.conn.execute(_ID_SPAN).one())
        span = (int(low), int(high))
        total = max(1, span[1] - span[0] + 1)
        idf = []
        for mine in found:
            df = sum(_df(f, share, span) for f in mine)
            idf.append(math.log(1 + (total - df + 0.5) / (df + 0.5)))
        # BM25 from the walks: which candidates hold which concept, and their lengths.
        holds: dict[int, set[int]] = defaultdict(set)
        lengths: dict[int, int] = {}
        for k, mine in enumerate(found):
            for f in mine:
                for i, tokens in f:
                    holds[i].add(k)
                    lengths[i] = tokens
        weights = question.weights
        average = max(1.0, sum(lengths.values()) / len(lengths))
        worth = [idf[k] * weights[k] for k in range(len(idf))]
        flat, per_token = 1 - FIRST_B, FIRST_B / average
        scores = [
            (sum(map(worth.__getitem__, held)) / (flat + per_token * lengths[i]), i)
            for i, held in holds.items()
        ]
        # A concept walked whole (few matches) names every message that has it; the others'
        # walks stop at their newest matches, so an older message with the rare word would
        # lose to newer ones that only seem to hold more (see _ranked).
        rare = {i for mine in found for f in mine if len(f) <= FEW for i, _ in f}
        return self._ranked(
            question, forms, scores, holds, idf, lengths, limit, filters,
            said=lambda k: {i for f in found[k] for i, _ in f}, rare=rare,
        )  # fmt: skip

    def _ranked(
        self,
        question: Question,
        forms: list[_Form],
        scores: list[tuple[float, int]],
        holds: dict[int, set[int]],
        idf: list[float],
        lengths: dict[int, int],
        limit: int,
        filters: Filters,
        said: Callable[[int], set[int]],
        rare: Collection[int] = (),
    ) -> list[Ranked]:
        """A round's end, on either backend: the best candidates by their first score are
        scored on their text, grouped into conversations, and names checked per session
        (``said(k)``: the messages concept ``k`` was found in).

        ``rare``: the messages of the concepts found whole (few matches). The first score only
        knows what the walks saw, and the walks of common words stop at their newest matches:
        an older message that holds the rare word and the common ones would rank below newer
        ones that are only known to hold more. They are scored on their text as well (with
        more than one concept: alone, the first score already has them all). For the others
        the first score is completed from the text of four times as many as are scored
        (``_narrowed``).
        """
        patterns = _patterns(question, forms)
        want = max(PRE_MIN, PRE_PER_RESULT * limit)
        wide_count = max(want, min(WIDE_MAX, WIDE_PER_RESULT * limit))
        wide = heapq.nlargest(wide_count, scores)
        pre = self._narrowed(patterns, wide, holds, idf, question.weights, want)
        if rare and len(question.concepts) > 1:
            chosen, wanted = set(pre), set(rare)
            extra = (x for x in scores if x[1] in wanted and x[1] not in chosen)
            pre += [i for _, i in heapq.nlargest(RARE_EXTRA, extra)]
        reads = self._read(pre)
        best = pre[:REPLIES_OF_BEST] if question.asks_reply else ()
        answers = {a.row.id: a for a in self._answers(reads, filters, best)}
        # A candidate that answers one that asks (or, asked for a reply, a request among the
        # best) is scored with the question as its context (a short reply has it, indexed).
        read_ids = {r.row.id for r in reads}
        reads = [r if r.row.context else answers.get(r.row.id, r) for r in reads]
        reads += [a for i, a in answers.items() if i not in read_ids]
        scored = self._rescore(question, patterns, reads, holds, idf, lengths)
        names = [k for k, c in enumerate(question.concepts) if c.name]
        ranked = _conversations(scored, idf, question.weights, names, self.session_weights)
        if names:
            named = {k: sorted(said(k)) for k in names}
            ranked = self._named(ranked[:NAMED], [(k, forms[k]) for k in names], idf, named)
        return [r for _, r in ranked[:limit]]

    def _named(
        self,
        ranked: list[tuple[float, Ranked]],
        names: list[tuple[int, _Form]],
        idf: list[float],
        said: dict[int, list[int]],
    ) -> list[tuple[float, Ranked]]:
        """Session-level evidence for names: a conversation whose session has the name said
        anywhere (a participant's name is in every message they wrote) gets the rest of the
        name's weight. One seek per session and name, in the range of the session's ids."""
        sids = sorted({r.hit.session_id for _, r in ranked})
        if not sids:
            return ranked
        spans = {
            sid: (low, high) for sid, low, high in self.conn.execute(_SESSION_SPANS, {"sids": sids})
        }
        out = []
        for score, r in ranked:
            low, high = spans.get(r.hit.session_id, (0, -1))
            for k, form in names:
                if not r.topical:
                    break  # the name picks among conversations about the topic, no others
                # The name's own walk already saw some of its messages (``said``, in id
                # order): no seek for those.
                at = bisect.bisect_left(said[k], low)
                known = at < len(said[k]) and said[k][at] <= high
                if known or self._said_in(form, r.hit.session_id, low, high):
                    score += self.session_weights[0] * idf[k]
            out.append((score, r))
        out.sort(key=lambda x: (x[0], x[1].hit.message_id), reverse=True)
        return out

    def _said_in(self, form: _Form, session_id: str, low: int, high: int) -> bool:
        """Whether the session (its messages are the ids ``low``..``high``) has ``form``."""
        return self._first(_HOLDS_IN_RANGE, (form.match(), low, high))

    # -- scoring on the text ---------------------------------------------------------------

    def _read(self, ids: Sequence[int]) -> list[_Read]:
        """The candidates' rows (head, context, whether they ask), their text folded."""
        if not ids:
            return []
        rows = map(_Candidate._make, self._fetch(self.rows_sql.format(_id_list(ids))))
        return [_Read(row, _folded(row.head or ""), _folded(row.context or "")) for row in rows]

    def _answers(
        self, reads: Sequence[_Read], filters: Filters, also: Collection[int] = ()
    ) -> list[_Read]:
        """The turn after each candidate that asks (said by the other side), as a candidate
        of its own with the question as its context. A short reply is indexed with the turn
        it answers; a long one is not, and in an agent's sessions the answer to "Should
        Brightwater move to another database?" is a long reply that says "stay with SQLite in
        WAL mode" without naming the project or the database: the question's words are in the
        question only. The answer is held to the search's filters as any candidate is.

        The turn after each user's turn in ``also`` is read too, whether it asks or not (the
        best few, when the search asks for what a reply holds: REPLIES_OF_BEST)."""
        asking = [r.row.id for r in reads if r.row.asks]
        requests = [r.row.id for r in reads if r.row.id in also and not r.row.asks]
        if not (asking or requests) or filters.roles:
            return []  # with a role filter the message itself must say it (Recall._walks)
        which = [f"q.id IN ({_id_list(asking)})"] if asking else []
        if requests:
            # Only a user's turn is a request whose reply answers it: the turn after the
            # assistant's reply is the user's next message, not what was asked for.
            which.append(f"(q.id IN ({_id_list(requests)}) AND q.role = 'user')")
        where, params = filters.sql()
        sql = _ANSWERS.format(which=" OR ".join(which)) + where
        rows = map(_Candidate._make, self._fetch(sql, params))
        return [
            _Read(row, _folded(row.head or ""), _folded(row.context or ""), False) for row in rows
        ]

    def _fetch(self, sql: str, params: Params = ()) -> list[tuple[Any, ...]]:
        """A statement's rows, straight from the driver's cursor: a seek or hundreds of rows,
        many times a question (fts_sqlite.driver_cursor). ``params`` by position (``?``) or,
        as Filters.sql() gives them, by name (``:since``)."""
        with driver_cursor(self.conn) as cursor:
            return list(cursor.execute(sql, params))

    def _narrowed(
        self,
        patterns: list[_Patterns],
        wide: list[tuple[float, int]],
        holds: dict[int, set[int]],
        idf: list[float],
        weights: Sequence[float],
        want: int,
    ) -> list[int]:
        """Of the ``wide`` best candidates by their first score (score, id), the ``want`` best
        by that score completed from their text. A walk of a common word stops at its newest
        matches, so an older candidate is known to hold only what the rarer walks saw, though
        its text may have the rest: each concept's words and stems as substrings of its head,
        a guess, but cheap enough (the head alone, no joins) for four times the candidates
        that are then scored on their text."""
        if len(wide) <= want:
            return [i for _, i in wide]
        # A phrase's (a compound's) first stem stands for it.
        needles = [(*p.words, *p.stems, *(stems[0] for stems, _ in p.phrases)) for p in patterns]
        # The first score is what it holds over its length's normalisation: completed, what it
        # holds and what its head adds, over the same.
        first = {i: score for score, i in wide}
        worth = [idf[k] * weights[k] for k in range(len(patterns))]
        completed = []
        concepts = range(len(patterns))
        empty: set[int] = set()
        for i, head in self._fetch(_HEADS.format(_id_list(first))):
            # Lower case only: folding accents costs ~0.1 ms for a head of non-ASCII text,
            # hundreds of times a question; a word written with its accent is missed here and
            # stays a candidate by its first score.
            folded = (head or "").lower()
            held = holds.get(i, empty)
            base = gained = 0.0
            for k in concepts:  # a loop, not generators: hundreds of heads a question
                if k in held:
                    base += worth[k]
                    continue
                for w in needles[k]:
                    if w in folded:
                        gained += worth[k]
                        break
            completed.append((first[i] * (1 + gained / (base or 1.0)), i))
        return [i for _, i in heapq.nlargest(want, completed)]

    def _rescore(
        self,
        question: Question,
        patterns: list[_Patterns],
        reads: Sequence[_Read],
        holds: dict[int, set[int]],
        idf: list[float],
        lengths: dict[int, int],
    ) -> list[_Scored]:
        if not reads:
            return []
        weights = question.weights
        scanner = _Scanner(patterns)
        names = {k: fold(c.term.words[0]) for k, c in enumerate(question.concepts) if c.name}
        # The whole question as typed, word for word, when it has more than one concept.
        whole = (
            PhraseCheck([w for c in question.concepts for w in c.term.words])
            if len(question.concepts) > 1
            else None
        )
        scanned = []
        for row, folded, folded_context, context_indexed in reads:
            context = row.context or ""
            context_tokens = len(WORD.findall(context)) if context else 0
            held = context_tokens if self.lengths_hold_context and context_indexed else 0
            if row.id in lengths:
                body = max(1, lengths[row.id] - held)
            else:  # an answer read for the question before it (_answers), never walked
                body = max(1, len(WORD.findall(row.head or "")))
            scanned.append(
                (row, folded, context, folded_context, context_tokens, body, context_indexed)
            )
        average = max(1.0, sum(x[5] for x in scanned) / len(scanned))
        out = []
        recorded: list[tuple[int, tuple[float, ...]]] = []
        topic = [k for k in range(len(patterns)) if k not in names]
        topic_worth = sum(idf[k] * weights[k] for k in topic)
        # What a turn that tells something is worth; a question of names and a date alone
        # ("What did Ana say in June?") has no topic, and news still picks among their turns.
        news_worth = topic_worth or sum(idf[k] * weights[k] for k in names)
        for row, folded, context, folded_context, context_tokens, body, indexed in scanned:
            answers = context.rstrip().endswith("?") or (question.asks_reply and not indexed)
            cut = bool(row.cut)
            matched: dict[int, float] = {}
            where: dict[int, list[int]] = {}
            said_before: dict[int, list[int]] = {}  # positions in the context
            in_body = scanner.find(folded)
            seen = scanner.seen  # before the context's scan replaces it
            in_context = scanner.find(folded_context) if folded_context else None
            saturation = _saturation(body, average)
            # A concept found in the context counts as it would in the message it answers.
            by_context = _saturation(max(1, context_tokens), average)
            if not any(
                in_body[k][0]
                or (in_context is not None and in_context[k][0])
                or k in holds.get(row.id, ())
                for k in topic
            ):
                # Only a name: how short a message is says nothing of how much it is about the
                # topic, so "Mood." does not win over a turn with news in it (news decides).
                saturation = by_context = 1.0
            speaker = _speaker(folded)
            f = [0.0] * len(FEATURES)
            for k in range(len(patterns)):
                worth = idf[k] * weights[k]
                strength, at = in_body[k]
                if strength:
                    f[_EXACT if strength == EXACT else _STEMMED] += worth * saturation
                    f[_FLAT] += worth * strength
                    where[k] = at
                elif in_context is not None and in_context[k][0]:
                    strength = ANSWER if answers else CONTEXT
                    f[_ANSWER if answers else _CONTEXT] += worth * by_context
                    said_before[k] = in_context[k][1]
                elif k in holds.get(row.id, ()):
                    # The index found it where the text check did not (past the scanned
                    # head of a long message, or a word the two stemmers see apart).
                    strength = STEMMED if cut else CONTEXT
                    f[_INDEXED] += worth * by_context
                if not strength:
                    continue
                matched[k] = strength
                if speaker is not None and names.get(k) == speaker:
                    # Said by the person the question names, not only to them.
                    f[_SPEAKER_F] += worth * (saturation if k in where else by_context)
            f[_NEAR] = _proximity(where, idf, weights) * saturation
            # The words of the turn answered stand together there as they do in that turn.
            f[_NEAR_CONTEXT] = _proximity(said_before, idf, weights) * by_context
            if whole is not None and whole(folded):
                # The whole question as typed, word for word: what the phrase form used to
                # return alone comes first, and the rest fills up to the limit.
                f[_PHRASE] = sum(idf[k] * weights[k] for k in matched) * saturation
            if topic and all(k in matched for k in topic):
                # Every word of the topic, in the message or the turn it answers.
                f[_ALL] = topic_worth
            if matched:
                f[_NEWS] = news_worth * _news(folded, seen) / NEWS_CAP
            score = sum(map(operator.mul, self.weights, f))
            lent = 0.0
            if answers and not question.asks_reply and not only_asks(context):
                # "Brightwater is on Fly.io. How do I stop the health check failing?": the
                # reply counts for its conversation, but as its match the request that said
                # it is shown, unless the search asks for what the reply holds.
                lent = self.weights[_ANSWER] * f[_ANSWER]
                lent += self.weights[_NEAR_CONTEXT] * f[_NEAR_CONTEXT]
            asks = bool(row.asks) and only_asks(row.head or "")
            if asks:
                score *= ASKING
                lent *= ASKING
            if self.observer is not None:
                recorded.append((row.id, (*f, float(asks))))
            topical = any(k not in names for k in matched)
            out.append(
                _Scored(row.id, row.session_id, row.root_session_id, score, matched, topical, lent)
            )
        if self.observer is not None:
            self.observer(recorded)
        return out


_SPEAKER = re.compile(r"\s*([^\W\d_]{2,24}):\s")


def _speaker(folded: str) -> str | None:
    """Who said a message written as ``Name: text``, folded; None when it is not so written."""
    found = _SPEAKER.match(folded)
    return found.group(1) if found else None


def _folded(content: str) -> str:
    """Text compared as the index compares words: case and accents folded."""
    return content.lower() if content.isascii() else fold(content)


_EDGE = r"(?<![^\W_])"


@dataclass
class _Patterns:
    """A concept's forms as the text check sees them: words as typed (folded), their stems,
    and phrases (of stems) with a regular expression that finds where they may be."""

    words: frozenset[str]
    stems: set[str]
    phrases: list[tuple[tuple[str, ...], re.Pattern[str]]] = field(default_factory=list)

    @classmethod
    def of(cls, words: tuple[str, ...], form: _Form) -> _Patterns:
        exact = frozenset(fold(w) for w in (*words, *form.words))
        made = cls(exact, {stem(w) for w in (*exact, *form.variants)})
        for phrase in form.phrases:
            made.add_phrase(phrase)
        return made

    def add_phrase(self, words: tuple[str, ...]) -> None:
        stems = tuple(stem(fold(w)) for w in words)
        gap = r"[^\W_]*[\W_]+"
        body = gap.join(re.escape(s[:3]) for s in stems)
        self.phrases.append((stems, re.compile(_EDGE + body + r"[^\W_]*")))


NEWS_CHARS, NEWS_CAP = 200, 8  # of a message's head, its words of its own counted (up to)
# Punctuation and digits to spaces (an apostrophe too: "don't" is "don" and "t", as the
# filler list has them).
_NOT_LETTERS = str.maketrans(dict.fromkeys(string.punctuation + string.digits + "’“”…", " "))


_SENTENCE_ENDS = tuple(mark + space for mark in ".!?…" for space in " \n")


def only_asks(text: str) -> bool:
    """Whether a message that ends in a question mark does nothing but ask: fewer than
    TOLD_WORDS words before its last sentence. Asked of every candidate that ends in "?", so
    it looks back from the end (``rfind``) and counts words only until it has enough."""
    body = text.rstrip()
    end = max(body.rfind(mark) for mark in _SENTENCE_ENDS)
    if end < 0:
        return True
    words = WORD.finditer(body, 0, end + 1)
    return next(itertools.islice(words, TOLD_WORDS - 1, None), None) is None


def _news(folded: str, seen: set[str]) -> int:
    """How many words of its own a message has, beyond filler and the words the scanner
    looked at as maybe the question's (``seen``), counted in its first NEWS_CHARS characters,
    up to NEWS_CAP: "Went to see Coldplay live downtown" tells something, "Gotta go, bye!" does
    not. All in C: translate, split, set differences."""
    own = set(folded[:NEWS_CHARS].translate(_NOT_LETTERS).split())
    own -= FILLER
    own -= seen
    return min(NEWS_CAP, len(own))


def _saturation(length: int, average: float) -> float:
    """BM25's term-frequency part for one occurrence in a message of ``length`` tokens."""
    return (K1 + 1) / (1 + K1 * (1 - B + B * length / average))


class _Scanner:
    """Every concept's forms found in one pass over a text: a word that starts like one of
    their stems is looked at, the rest skipped at C speed."""

    def __init__(self, patterns: list[_Patterns]) -> None:
        self.patterns = patterns
        heads = sorted(
            {w[:3] for p in patterns for w in (*p.words, *p.stems)}, key=len, reverse=True
        )
        self.seen: set[str] = set()
        self.word = (
            re.compile(_EDGE + "(?:" + "|".join(map(re.escape, heads)) + r")[^\W_]*")
            if heads
            else None
        )

    def find(self, folded: str) -> list[tuple[float, list[int]]]:
        exact: list[list[int]] = [[] for _ in self.patterns]
        stemmed: list[list[int]] = [[] for _ in self.patterns]
        self.seen = seen = set()  # the words looked at, for _news
        if self.word is not None and folded:
            for m in self.word.finditer(folded):
                token, stemmed_token = m.group(), None
                seen.add(token)
                for k, p in enumerate(self.patterns):
                    if token in p.words:
                        if len(exact[k]) < POSITIONS:
                            exact[k].append(m.start())
                        continue
                    if stemmed_token is None:
                        stemmed_token = stem(token)
                    if stemmed_token in p.stems and len(stemmed[k]) < POSITIONS:
                        stemmed[k].append(m.start())
        out = []
        for k, p in enumerate(self.patterns):
            if exact[k]:
                out.append((EXACT, exact[k]))
                continue
            at = stemmed[k]
            for stems, pattern in p.phrases:
                for m in pattern.finditer(folded):
                    if tuple(stem(w) for w in WORD.findall(m.group())) == stems:
                        at.append(m.start())
            out.append((STEMMED, at) if at else (0.0, []))
        return out


def _proximity(where: dict[int, list[int]], idf: list[float], weights: Sequence[float]) -> float:
    """A bonus for concepts close together in a message: the nearer, the more (``where``
    holds character offsets; a word and its separator are about six characters)."""
    bonus = 0.0
    keys = sorted(where)
    for x, a in enumerate(keys):
        for b in keys[x + 1 :]:
            gap = min(abs(i - j) for i in where[a] for j in where[b]) / CHARS_PER_WORD
            if 0 < gap <= NEAR:
                bonus += PROXIMITY * min(idf[a] * weights[a], idf[b] * weights[b]) / max(1.0, gap)
    return bonus


def _conversations(
    scored: list[_Scored],
    idf: list[float],
    weights: Sequence[float],
    names: list[int],
    session_weights: Sequence[float] = (NAME_IN_SESSION, COVER, RUNNER_UP),
) -> list[tuple[float, Ranked]]:
    """Conversations by their best message and what their other messages add (names are
    counted per session instead: see Recall._named). The match shown is the message of the
    best one's session with the most by what it holds itself (``score - lent``): a reply read
    through a request that tells counts in full for its conversation, and the request, which
    said the words the reply was lent, is usually shown."""
    by_root: dict[str, list[_Scored]] = defaultdict(list)
    for s in scored:
        by_root[s.root].append(s)
    ranked = []
    for messages in by_root.values():
        messages.sort(key=lambda s: (s.score, s.id), reverse=True)
        best = messages[0]
        extra = 0.0
        others = {k for m in messages[1:] for k in m.matched} - set(best.matched) - set(names)
        for k in others:
            strength = max(m.matched.get(k, 0.0) for m in messages[1:])
            extra += session_weights[1] * idf[k] * weights[k] * strength
        if len(messages) > 1:
            extra += session_weights[2] * messages[1].score
        total = best.score + extra
        # Within the best message's session: a reply and the request it was read through
        # are neighbours, and the names are checked in that session (Recall._named).
        shown = max(
            (m for m in messages if m.session_id == best.session_id),
            key=lambda s: (s.score - s.lent, s.id),
        )
        second = next(
            (m for m in messages if m is not shown and m.session_id == shown.session_id), None
        )
        hit = Hit(shown.id, shown.session_id, shown.root, total)
        topical = any(m.topical for m in messages)
        ranked.append((total, Ranked(hit, second.id if second else None, topical)))
    ranked.sort(key=lambda r: (r[0], r[1].hit.message_id), reverse=True)
    return ranked
