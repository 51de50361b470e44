"""Full-text search on SQLite FTS5, with a bounded cost per query.

Ranking every match costs time in proportion to the number of matches: a common word in a
million messages means hundreds of thousands of them. So a query reads each term's newest
``RANK_BUDGET`` matches straight off an index in id order (a walk that stops after the budget,
or after a smaller one when filters make every match cost a join) and ranks those. Rare terms
therefore rank over the whole history, common ones over recent history, where "the docker
thing" most likely means the recent one. When the matches of a precise form are few, they are
all returned, newest first, without ranking.

Which index is walked depends on the term: single words go to the word index, phrases (quoted
text, identifiers such as ``snake_case`` or ``v2.14.3``, the whole query tried as a phrase) to
the word-pair index ``messages_pairs`` (see pairs.py), substrings to the trigram index (three
characters or more) and, for CJK words of one or two characters, to the gram index
``messages_cjk``. A query that needs two indexes walks one and asks the other about each
message it finds. After a large import the trigram and pair indexes may trail the messages
(backlog.py): a walk of either reads it for the messages it holds, and for the newer ones
the text (substrings) or the word index (phrases, which it matches itself).

The ranking is BM25 computed here rather than by FTS5's bm25(): bm25() weighs each phrase by
counting its matches over the whole table on every query (half a million index entries for a
word in half the messages: 12 ms at 10^6 messages, however few rows are ranked). The walks
already hold what the weights need: how common a term is (exactly, when its walk reached the
oldest match; else from the density of its matches among the ids it covered), which candidates
hold which term, and each candidate's length in tokens. A term counts once per message: chat
messages are short, and length normalisation still puts the message that is about a term above
one that mentions it in passing.
"""

from __future__ import annotations

import functools
import heapq
import math
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, text

from engine.sessions import backlog
from engine.sessions.fulltext import Filters, Form, Hit, Order
from engine.sessions.pairs import holds_phrase, pair_tokens
from engine.sessions.query import Query, Term

RANK_BUDGET = 500
FILTERED_RANK_BUDGET = 250
FEW = 24  # this many matches or fewer are all precise enough to return without ranking
PROBE = 200  # newest matches read to tell which of two indexes has the fewer
K1, B = 1.2, 0.75  # BM25's usual term saturation and length normalisation
WORD_TABLE, TRIGRAM_TABLE, GRAM_TABLE = "messages_fts", "messages_trigram", "messages_cjk"
PAIR_TABLE = "messages_pairs"
# Migration 0005: the time span of each block of 1,024 message ids.
BLOCKS, BLOCK_BITS = "messages_time_blocks", 10
FILL_BLOCKS = (
    f"INSERT INTO {BLOCKS}(block, low, high) SELECT id >> {BLOCK_BITS}, min(timestamp), "
    f"max(timestamp) FROM messages GROUP BY id >> {BLOCK_BITS}"
)
_JOIN_MESSAGES = " JOIN messages AS m ON m.id = f.rowid"
_JOIN_SESSIONS = " JOIN sessions AS s ON s.id = m.session_id"
_ID_SPAN = text("SELECT (SELECT min(id) FROM messages), (SELECT max(id) FROM messages)")
_BLOCK_SPAN = text(
    f"SELECT (SELECT min(block) FROM {BLOCKS} WHERE high >= :since), "
    f"(SELECT max(block) FROM {BLOCKS} WHERE low <= :until)"
)
_TEXTS = "SELECT id, content, tool_name, tool_calls FROM messages WHERE id IN ({})"

Found = list[tuple[int, int]]  # (message id, length in tokens), in walk order


@dataclass(frozen=True)
class _Walk:
    """One walk through an index: ``match`` on ``table``, with ``also`` conditions on each
    message found (``f.rowid``), and lengths from ``sizes``'s table of document sizes."""

    table: str
    match: str
    sizes: str
    also: str = ""
    params: dict[str, object] = field(default_factory=dict)
    confirm: tuple[tuple[str, ...], ...] = ()  # phrases of 3+ words to confirm on the text
    flip: _Walk | None = None  # the same matches, walked through the other index
    fallback: _Walk | None = None  # the same matches, for when both indexes have many
    substrings: tuple[str, ...] = ()  # the substrings a trigram walk looks for (see below)
    # The same matches through the word index alone, for the messages the pair index does not
    # hold yet (set on every walk that reads the pair index).
    unindexed: _Walk | None = None

    @property
    def contains(self) -> tuple[str, ...]:
        """The substrings each match of the index must be confirmed to hold: a literal of
        three characters is one trigram, which the index alone answers."""
        return tuple(literal for literal in self.substrings if len(literal) > 3)


def _holds(table: str, tokens: Sequence[str], params: dict[str, object]) -> str:
    """A condition on the message found (``f``): ``table`` has each of ``tokens`` for it.

    One look-up per token: FTS5 answers a single token for one rowid with a seek, but an
    expression of several by searching for its next match from that rowid on, which for a
    rare combination can mean the rest of the index."""
    conditions = []
    for token in tokens:
        name = f"t{len(params)}"
        params[name] = token
        conditions.append(
            f"EXISTS (SELECT 1 FROM {table} WHERE {table} MATCH :{name} AND rowid = f.rowid)"
        )
    return "(" + " AND ".join(conditions) + ")"


@contextmanager
def driver_cursor(conn: Connection) -> Iterator[sqlite3.Cursor]:
    """A cursor of SQLite's own driver under an SQLAlchemy connection, for statements run
    many times a search, where SQLAlchemy would cost more than SQLite spends answering them.
    In the connection's transaction, so that every read of one search sees one snapshot."""
    if not conn.in_transaction():
        conn.begin()
    driver = conn.connection.driver_connection
    assert driver is not None  # an open SQLAlchemy connection always has one
    cursor = driver.cursor()
    try:
        yield cursor
    finally:
        cursor.close()


def _token_count(sizes: bytes) -> int:
    """The tokens of a row, summed over the columns: FTS5's docsize blob is one varint per
    column (SQLite's big-endian base-128 form), almost always a byte each."""
    if max(sizes, default=0) < 0x80:
        return sum(sizes)
    total = value = 0
    for byte in sizes:
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            total, value = total + value, 0
    return total


def _idf(found: Found, budget: int, span: Any) -> float:
    """BM25's inverse document frequency of a term from its walk: its count when the walk
    reached the oldest match, else its density among the ids the walk covered."""
    low_id, high_id = span
    total = max(1, (high_id or 0) - (low_id or 0) + 1)
    if len(found) < budget:
        df = float(len(found))
    else:
        df = min(total, len(found) * total / max(1, (high_id or 0) - found[-1][0] + 1))
    return math.log(1 + (total - df + 0.5) / (df + 0.5))


def _ids(ids: Sequence[int]) -> str:
    return ", ".join(str(int(i)) for i in ids)


# -- substrings ----------------------------------------------------------------------------
# The trigram index keeps no positions (migration 0007: detail='none', a quarter of the size
# and a third less work for each message written), so FTS5 cannot match a phrase of trigrams
# there. A substring of more than three characters is looked up as all of its trigrams and
# confirmed on each message's text, which is what the phrase of its trigrams matched: the text
# holding it with each character folded as the trigram tokenizer folds it.


def _trigrams(literal: str) -> list[str]:
    """The trigram index's tokens of ``literal`` (three characters or more), each quoted as an
    FTS5 string (``literal`` holds no double quote) and each once."""
    return list(dict.fromkeys(f'"{literal[i : i + 3]}"' for i in range(len(literal) - 2)))


@functools.cache
def _trigram_folding() -> dict[int, int]:
    """The trigram tokenizer's case folding as a ``str.translate`` table, asked of FTS5 itself
    once per process: its Unicode tables are not Python's (it folds ``µ`` and ``ς``, which
    ``str.lower`` keeps, and not the letters Unicode cased since). Only the characters that
    Python lowers or folds, plus the two FTS5 is known to fold besides, are asked about."""
    suspects = [
        c
        for c in range(0x80, 0x1F000)
        if not 0xD800 <= c < 0xE000 and (chr(c).lower() != chr(c) or chr(c).casefold() != chr(c))
    ] + [0xFFFE, 0xFFFF]
    db = sqlite3.connect(":memory:")
    try:
        db.execute("CREATE VIRTUAL TABLE t USING fts5(c, tokenize='trigram')")
        db.executemany("INSERT INTO t(rowid, c) VALUES (?, ?)", [(c, chr(c) * 3) for c in suspects])
        db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
        table = {int(doc): ord(term[0]) for term, doc in db.execute("SELECT term, doc FROM v")}
    finally:
        db.close()
    folding = {c: f for c, f in table.items() if f != c}
    folding.update((c, c + 32) for c in range(ord("A"), ord("Z") + 1))
    return folding


def _holds_substring(content: str | None, literal: str) -> bool:
    """Whether ``content`` holds ``literal`` as the trigram index compares text."""
    if not content:
        return False
    if literal in content:  # folding is character by character: as written is enough
        return True
    if content.isascii() and literal.isascii():
        return literal.lower() in content.lower()
    folding = _trigram_folding()
    return literal.translate(folding) in content.translate(folding)


@functools.cache
def _folded_into() -> dict[int, frozenset[int]]:
    """For each character the trigram index folds others into, those others."""
    into: dict[int, set[int]] = {}
    for source, target in _trigram_folding().items():
        into.setdefault(target, set()).add(source)
    return {target: frozenset(sources) for target, sources in into.items()}


def _text_filter(literal: str, name: str, params: dict[str, object]) -> str:
    """A condition on ``f.content`` that every text holding ``literal`` (as the trigram index
    compares text) meets, cheap enough to scan messages the index does not hold; the rows it
    lets through are compared exactly after. SQLite's LIKE folds ASCII letters and reads
    ``_`` as any one character: each character that only ASCII characters fold as is kept,
    every other one is ``_`` (``k``, as the Kelvin sign folds into it). A literal with a
    non-ASCII character must also hold one of the forms of its first (``ö`` or ``Ö``), or
    LIKE alone would let most rows of a Greek word through. (A GLOB of each character's
    class is exact, but SQLite matches classes twenty times slower than LIKE.)"""
    folding, into = _trigram_folding(), _folded_into()

    def forms(c: str) -> set[str]:
        target = folding.get(ord(c), ord(c))
        return {chr(target), c, *map(chr, into.get(target, ()))}

    pattern = ""
    for c in literal:
        if c.isascii() and all(f.isascii() for f in forms(c)):
            pattern += "\\" + c if c in "%_\\" else c
        else:
            pattern += "_"
    params[name] = f"%{pattern}%"
    condition = f"f.content LIKE :{name} ESCAPE '\\'"
    other = next((c for c in literal if not c.isascii()), None)
    if other is not None:
        options = sorted(forms(other))
        params.update((f"{name}_{k}", form) for k, form in enumerate(options))
        either = " OR ".join(f"instr(f.content, :{name}_{k})" for k in range(len(options)))
        condition += f" AND ({either})"
    return condition


class SqliteFullText:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def behind(self) -> int | None:
        """The first message id the trailing indexes do not hold yet, if any (backlog.py)."""
        with driver_cursor(self.conn) as cursor:
            row = cursor.execute(backlog.FIRST).fetchone()
        return None if row is None else int(row[0])

    def _id_range(self, filters: Filters) -> tuple[int, int] | None:
        """The ids a date-bounded search can match, from the time spans of id blocks: an id
        range lets the index skip to the matches in it instead of looking up the date of each
        match outside it."""
        if filters.since is None and filters.until is None:
            return None
        first, last = self.conn.execute(
            _BLOCK_SPAN,
            {
                "since": filters.since if filters.since is not None else -math.inf,
                "until": filters.until if filters.until is not None else math.inf,
            },
        ).one()
        if first is None or last is None:
            return (1, 0)  # no message in the span: an empty range
        return first << BLOCK_BITS, ((last + 1) << BLOCK_BITS) - 1

    # -- what to walk ---------------------------------------------------------------------

    @staticmethod
    def _gram_match(query: Query) -> str | None:
        # A gram index token is one CJK character and the next; a one-character term is the
        # prefix of the grams it starts (served by the index's one-character prefix index).
        grams = ['"' + g + '"' + ("*" if len(g) == 1 else "") for g in query.grams()]
        return " AND ".join(grams) if grams else None

    def _substring_walk(self, query: Query) -> _Walk | None:
        literals = [part[1:-1] for part in query.substrings()]
        grams = self._gram_match(query)
        if not literals:
            return None if grams is None else _Walk(GRAM_TABLE, grams, GRAM_TABLE)
        match = " AND ".join(dict.fromkeys(t for lit in literals for t in _trigrams(lit)))
        every = tuple(dict.fromkeys(literals))
        if grams is None:
            return _Walk(TRIGRAM_TABLE, match, TRIGRAM_TABLE, substrings=every)
        # The short CJK terms must be in the gram index's matches too. The unary + keeps
        # SQLite from handing the IN list to FTS5 as rowid lookups, which runs the trigram
        # query once per gram match and loses the index's id order.
        also = f" AND +f.rowid IN (SELECT rowid FROM {GRAM_TABLE} WHERE {GRAM_TABLE} MATCH :grams)"
        return _Walk(
            TRIGRAM_TABLE,
            match,
            TRIGRAM_TABLE,
            also,
            {"grams": grams},
            substrings=every,
        )

    def _all_of(self, terms: Sequence[Term], excluded: Sequence[Term]) -> _Walk:
        """Messages holding every one of ``terms`` and none of ``excluded``."""
        # A phrase whose words all fold away but one has no pair: it is a single word here.
        phrases = [t for t in terms if len(t.words) > 1 and pair_tokens(t.words)]
        singles = [t for t in terms if t not in phrases]
        in_words = " AND ".join(t.fts() for t in terms)
        if excluded:
            in_words += " NOT (" + " OR ".join(t.fts() for t in excluded) + ")"
        in_words_alone = _Walk(WORD_TABLE, in_words, WORD_TABLE)
        if not phrases:
            return in_words_alone
        # Exclusions are asked message by message: of the word index for a word, of the pair
        # index for a phrase (all of its pairs).
        params: dict[str, object] = {}
        unless = "".join(
            " AND NOT " + _holds(PAIR_TABLE if tokens else WORD_TABLE, tokens or [t.fts()], params)
            for t in excluded
            for tokens in [pair_tokens(t.words) if len(t.words) > 1 else []]
        )
        pairs = [token for t in phrases for token in pair_tokens(t.words)]
        confirm = tuple(t.words for t in phrases if len(t.words) > 2)
        by_pairs = _Walk(
            PAIR_TABLE,
            " AND ".join(pairs),
            WORD_TABLE,
            unless,
            params,
            confirm,
            unindexed=in_words_alone,
        )
        if not singles:
            return by_pairs
        # Phrases and single words: walk the index where the matches are few and ask the other
        # about each message found; when both are many, the word index matches phrases itself
        # (FTS5 checks positions far faster than a lookup per message costs).
        words = [t.fts() for t in singles]
        also_pairs = dict(params)
        return _Walk(
            PAIR_TABLE,
            by_pairs.match,
            WORD_TABLE,
            unless + " AND " + _holds(WORD_TABLE, words, params),
            params,
            confirm,
            flip=_Walk(
                WORD_TABLE,
                " AND ".join(words),
                WORD_TABLE,
                unless + " AND " + _holds(PAIR_TABLE, pairs, also_pairs),
                also_pairs,
                confirm,
                unindexed=in_words_alone,
            ),
            fallback=in_words_alone,
            unindexed=in_words_alone,
        )

    def _walks(self, query: Query, form: Form) -> list[_Walk] | None:
        """The walks whose matches together are the matches of ``form``; None when the form
        adds nothing for this query."""
        if form == "substring":
            walk = self._substring_walk(query)
            return None if walk is None else [walk]
        if query.cjk:
            return None  # CJK runs are single tokens: only substrings find them
        if form == "phrase":
            whole = query.phrase_term()
            return None if whole is None else [self._all_of([whole], query.excluded)]
        if form == "all":
            return [self._all_of(query.terms, query.excluded)]
        if len(query.terms) < 2:
            return None
        # Each term walked and weighed on its own: a rare one is found over the whole history
        # however common the others are.
        return [self._all_of([t], query.excluded) for t in query.terms]

    # -- walking and ranking ----------------------------------------------------------------

    def _sparser(self, walk: _Walk) -> _Walk:
        """Of a walk and its flip, the one through the index with the fewer matches, judged by
        their newest ``PROBE`` matches; the fallback when both have that many."""
        if walk.flip is None:
            return walk

        def count(candidate: _Walk) -> int:
            table = candidate.table
            return int(
                self.conn.execute(
                    text(
                        f"SELECT count(*) FROM (SELECT rowid FROM {table} "
                        f"WHERE {table} MATCH :match ORDER BY rowid DESC LIMIT {PROBE})"
                    ),
                    {"match": candidate.match},
                ).scalar_one()
            )

        sizes = [(count(candidate), candidate) for candidate in (walk, walk.flip)]
        size, fewest = min(sizes, key=lambda pair: pair[0])
        if size < PROBE or walk.fallback is None:
            return fewest
        return walk.fallback

    def _walk(
        self,
        walk: _Walk,
        filters: Filters,
        budget: int,
        newest: bool = True,
        ids: tuple[int, int] | None = None,
    ) -> Found:
        """The first ``budget`` matches of ``walk`` in id order (newest first by default),
        within the id range ``ids`` when given. A walk of an index that trails the messages
        reads it for the messages it holds and the rest another way (backlog.py)."""
        trails = walk.table == TRIGRAM_TABLE or walk.unindexed is not None
        behind = self.behind() if trails else None
        if behind is None:
            return self._walk_index(walk, filters, budget, newest, ids)
        low, high = ids if ids is not None else (0, 2**62)
        held, newer = (low, min(high, behind - 1)), (max(low, behind), high)
        found: Found = []
        # The index holds every message below ``behind`` and none from it on: newest first,
        # the newer messages come first.
        for part in ("newer", "held") if newest else ("held", "newer"):
            span, left = (newer if part == "newer" else held), budget - len(found)
            if span[0] > span[1]:
                continue
            if part == "held":
                found += self._walk_index(walk, filters, left, newest, span)
            elif walk.unindexed is not None:
                found += self._walk_index(walk.unindexed, filters, left, newest, span)
            else:
                found += self._scan(walk, filters, left, newest, span)
            if len(found) >= budget:
                break
        return found

    def _walk_index(
        self,
        walk: _Walk,
        filters: Filters,
        budget: int,
        newest: bool,
        ids: tuple[int, int] | None,
    ) -> Found:
        """:meth:`_walk` on the index itself, whatever it holds."""
        contains = walk.contains
        where, params = filters.sql()
        if ids is not None:
            where += " AND f.rowid BETWEEN :first_id AND :last_id"
            params.update(first_id=ids[0], last_id=ids[1])
        # Each join costs a lookup for every match walked: only those the filters or the
        # confirmation of substrings need.
        joined = (_JOIN_MESSAGES if where or contains else "") + (
            _JOIN_SESSIONS if filters.on_sessions else ""
        )
        # A message holding the substrings as written needs no folding: SQLite tells, and only
        # the text of the others is read into Python.
        verbatim = " AND ".join(f"instr(m.content, :sub{k})" for k in range(len(contains)))
        params.update((f"sub{k}", literal) for k, literal in enumerate(contains))
        text_ = f", CASE WHEN {verbatim} THEN NULL ELSE m.content END" if contains else ""
        sql = (
            f"SELECT f.rowid, d.sz{text_} FROM {walk.table} AS f "
            f"JOIN {walk.sizes}_docsize AS d ON d.id = f.rowid{joined} "
            f"WHERE {walk.table} MATCH :match{walk.also}{where} "
            f"ORDER BY f.rowid {'DESC' if newest else 'ASC'}"
        )
        if not contains:
            sql += " LIMIT :budget"
        params.update(walk.params, match=walk.match, budget=budget)
        # Hundreds of rows: straight from the driver's cursor, which returns plain tuples at
        # a fraction of the cost of building a result row for each.
        with driver_cursor(self.conn) as cursor:
            if not contains:
                return [(i, _token_count(sz)) for i, sz in cursor.execute(sql, params)]
            # Candidates that hold every trigram, in id order, until ``budget`` of them hold
            # the substrings themselves.
            found: Found = []
            for i, sz, content in cursor.execute(sql, params):
                if content is None or all(
                    _holds_substring(content, literal) for literal in contains
                ):
                    found.append((i, _token_count(sz)))
                    if len(found) == budget:
                        break
            return found

    def _scan(
        self, walk: _Walk, filters: Filters, budget: int, newest: bool, ids: tuple[int, int]
    ) -> Found:
        """The first ``budget`` messages with ids in ``ids`` that hold every substring of a
        trigram walk, read from their text: narrowed by SQLite, then compared as the index
        would compare them."""
        if budget <= 0:
            return []
        where, params = filters.sql()
        params.update(walk.params, first_id=ids[0], last_id=ids[1])
        texts = "".join(
            " AND " + _text_filter(literal, f"scan{k}", params)
            for k, literal in enumerate(walk.substrings)
        )
        sql = (
            "SELECT f.rowid, f.content FROM messages AS f JOIN messages AS m ON m.id = f.rowid"
            f"{_JOIN_SESSIONS if filters.on_sessions else ''} "
            f"WHERE f.rowid BETWEEN :first_id AND :last_id{texts}{walk.also}{where} "
            f"ORDER BY f.rowid {'DESC' if newest else 'ASC'}"
        )
        found: Found = []
        with driver_cursor(self.conn) as cursor:
            for i, content in cursor.execute(sql, params):
                if all(_holds_substring(content, literal) for literal in walk.substrings):
                    # What the trigram index would count: a token for every three characters.
                    found.append((i, max(0, len(content) - 2)))
                    if len(found) == budget:
                        break
        return found

    def hits(
        self, query: Query, form: Form, filters: Filters, limit: int, order: Order
    ) -> list[Hit] | None:
        walks = self._walks(query, form)
        if walks is None:
            return None
        walks = [self._sparser(w) for w in walks]
        id_range = self._id_range(filters)
        if order != "relevance":
            # Room for candidates that a phrase's confirmation turns down.
            found = [self._walk(w, filters, 2 * limit, order == "newest", id_range) for w in walks]
            ids = sorted({i for f in found for i, _ in f}, reverse=order == "newest")
            return self._rows(self._confirmed([(i, 0.0) for i in ids], walks, found, limit))
        budget = FILTERED_RANK_BUDGET if filters.sql()[0] else RANK_BUDGET
        share = max(FEW, budget // len(walks))
        found = [self._walk(w, filters, share, ids=id_range) for w in walks]
        if not any(found):
            return []
        if form != "any" and len(found[0]) <= FEW:
            # Every match is known and each holds the whole query: newest first, no ranking.
            ranked = [(i, 0.0) for i, _ in found[0]]
        else:
            # Phrases to confirm may turn candidates down: then every one is kept in order.
            keep = None if any(w.confirm for w in walks) else limit
            ranked = self._ranked(found, share, keep)
        return self._rows(self._confirmed(ranked, walks, found, limit))

    def _ranked(
        self, found: Sequence[Found], budget: int, keep: int | None
    ) -> list[tuple[int, float]]:
        """The best ``keep`` candidates (all when None), best first, by BM25 with each term
        counted once per message; ties go to the newer message."""
        weight: dict[int, float] = {}
        lengths: dict[int, int] = {}
        span = self.conn.execute(_ID_SPAN).one() if len(found) > 1 else None
        for matches in found:
            idf = _idf(matches, budget, span) if span else 1.0
            for i, tokens in matches:
                weight[i] = weight.get(i, 0.0) + idf
                lengths[i] = tokens
        average = max(1.0, sum(lengths.values()) / len(lengths))
        flat, per_token = 1 + K1 * (1 - B), K1 * B / average
        scores = [(w * (K1 + 1) / (flat + per_token * lengths[i]), i) for i, w in weight.items()]
        best = sorted(scores, reverse=True) if keep is None else heapq.nlargest(keep, scores)
        return [(i, score) for score, i in best]

    def _confirmed(
        self,
        ranked: Sequence[tuple[int, float]],
        walks: Sequence[_Walk],
        found: Sequence[Found],
        limit: int,
    ) -> list[tuple[int, float]]:
        """The first ``limit`` of ``ranked`` that hold their phrases: a message found only by
        walks with phrases of three or more words is read and checked, in rank order, until
        ``limit`` are kept."""
        unsure: dict[int, list[_Walk]] = {}
        sure: set[int] = set()
        for walk, matches in zip(walks, found, strict=True):
            for i, _ in matches:
                if walk.confirm:
                    unsure.setdefault(i, []).append(walk)
                else:
                    sure.add(i)
        kept: list[tuple[int, float]] = []
        at = 0
        while len(kept) < limit and at < len(ranked):
            chunk = ranked[at : at + 2 * limit]
            at += len(chunk)
            check = [i for i, _ in chunk if i not in sure and i in unsure]
            texts = {}
            if check:
                texts = {r[0]: r[1:] for r in self.conn.execute(text(_TEXTS.format(_ids(check))))}
            for i, score in chunk:
                if i in sure or any(
                    all(holds_phrase(texts.get(i, ()), words) for words in walk.confirm)
                    for walk in unsure.get(i, ())
                ):
                    kept.append((i, score))
                    if len(kept) == limit:
                        break
        return kept

    def _rows(self, ranked: Sequence[tuple[int, float]]) -> list[Hit]:
        if not ranked:
            return []
        rows = self.conn.execute(
            text(
                "SELECT m.id, m.session_id, s.root_session_id FROM messages AS m "
                "JOIN sessions AS s ON s.id = m.session_id "
                f"WHERE m.id IN ({_ids([i for i, _ in ranked])})"
            )
        ).all()
        found = {r.id: r for r in rows}
        return [
            Hit(i, found[i].session_id, found[i].root_session_id, score)
            for i, score in ranked
            if i in found
        ]
