"""Ranking a question on PostgreSQL with the features of recall.py: the same text scoring
(typed form above other forms, reply context, proximity, the speaker of ``Name: text``, a
message that only asks below its answer) and the same ranking of whole conversations.

What differs is where the candidates come from. PostgreSQL has no stemmed index: each concept
is looked up in the ``search`` tsvector as the prefix of its stem (``adopt:*`` for "adoption"),
its newest matches first with a share of the budget, as on SQLite. And no column of reply
context: the short message right after each match (the reply to it) is a candidate too, and
its context, the message before it, is read with the candidates' text, so "A sunset over the
lake." is still found through the question it answers.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

from sqlalchemy import Connection, text

from engine.sessions.bulk import CONTEXT_CHARS, SHORT_REPLY
from engine.sessions.fts_postgres import CONFIG
from engine.sessions.fulltext import Filters
from engine.sessions.question import Concept, Question
from engine.sessions.recall import (
    FEW,
    SCAN_CHARS,
    SPEAKER_SAMPLE,
    B,
    Params,
    Ranked,
    Recall,
    _Form,
    word_variants,
)
from engine.sessions.words import stem

BUDGET, FILTERED_BUDGET = 1000, 500
_ROWS = (
    f"SELECT m.id, m.session_id, s.root_session_id, substr(m.content, 1, {SCAN_CHARS}) AS head, "
    f"length(m.content) > {SCAN_CHARS} AS cut, right(rtrim(m.content), 1) = '?' AS asks, "
    f"CASE WHEN length(m.content) <= {SHORT_REPLY} THEN (SELECT substr(p.content, 1, "
    f"{CONTEXT_CHARS}) FROM messages AS p WHERE p.session_id = m.session_id AND p.id < m.id "
    "AND p.content != '' ORDER BY p.id DESC LIMIT 1) END AS context "
    "FROM messages AS m JOIN sessions AS s ON s.id = m.session_id WHERE m.id IN ({})"
)


def _lexeme(word: str, exact: bool) -> str:
    """A word for to_tsquery: the prefix of its stem when it has inflections worth finding."""
    if not word.isalnum():
        return ""
    if exact or not word.isalpha():
        return word
    root = stem(word)
    if root.endswith("i") and word[len(root) - 1 : len(root)] == "y":
        root = root[:-1]  # Porter ends "policy" as "polici": polic* finds both
    return word if len(root) < 4 or root == word else root + ":*"


def _tsquery(concept: Concept, form: _Form) -> str:
    words = concept.term.words
    exact = concept.as_typed
    parts = [_lexeme(w, exact) for w in words]
    parts = [p for p in parts if p]
    if len(parts) == 1 and form.variants:
        others = [_lexeme(v, False) for v in sorted(form.variants)]
        return "(" + " | ".join([parts[0], *others]) + ")"
    return " <-> ".join(parts)


class PostgresRecall(Recall):
    rows_sql = _ROWS
    # A length here is the message's own lexemes (its tsvector): the context read with a short
    # reply is not in it, and taking its words off left most replies a length of one.
    lengths_hold_context = False

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def _fetch(self, sql: str, params: Params = ()) -> list[tuple[Any, ...]]:
        # Positional statements are SQLite's seeks, none of which run here; named ones come
        # with Filters.sql().
        named = params if isinstance(params, dict) else {}
        assert named or not params
        return [tuple(row) for row in self.conn.execute(text(sql), named)]

    def _forms(self, question: Question) -> list[_Form]:
        forms = []
        for c in question.concepts:
            form = _Form()
            if c.single:
                form.words.add(c.term.words[0])
                if not c.as_typed:
                    form.variants = word_variants(c.term.words[0])
            elif all(w.isalpha() for w in c.term.words) and len(c.term.words) <= 3:
                form.phrases.append(c.term.words)
            forms.append(form)
        return forms

    def _newest_heads(self, word: str) -> list[str]:
        if not word.isalnum():
            return []
        rows = self.conn.execute(
            text(
                "SELECT left(content, 40) FROM messages "
                f"WHERE search @@ to_tsquery('{CONFIG}', :q) ORDER BY id DESC LIMIT :n"
            ),
            {"q": word, "n": SPEAKER_SAMPLE},
        )
        return [str(r[0]) for r in rows]

    def rank(self, question: Question, filters: Filters, limit: int) -> list[Ranked]:
        question = self.participants(question)
        forms = self._forms(question)
        queries = [_tsquery(c, f) for c, f in zip(question.concepts, forms, strict=True)]
        return self._in_rounds(
            question,
            filters,
            limit,
            lambda round_filters: self._pg_round(question, forms, queries, round_filters, limit),
        )

    def _matches(
        self, tsquery: str, filters: Filters, share: int
    ) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
        """A concept's newest ``share`` matches (id, lexemes), and the short reply right after
        each of them (id, lexemes), which is about what it answers. The reply is held to the
        search's filters as the match is (tool output left out, a date span); with a role
        filter the message itself must say the words, as on SQLite, and there is none."""
        where, params = filters.sql()
        params.update(q=tsquery, share=share)
        reply_holds = (
            "FALSE"
            if filters.roles
            else "EXISTS (SELECT 1 FROM messages AS m JOIN sessions AS s ON s.id = m.session_id "
            f"WHERE m.id = r.id{where})"
        )
        rows = self.conn.execute(
            text(
                "WITH c AS (SELECT m.id, m.session_id, length(m.search) AS n FROM messages AS m "
                "JOIN sessions AS s ON s.id = m.session_id "
                f"WHERE m.search @@ to_tsquery('{CONFIG}', :q){where} "
                "ORDER BY m.id DESC LIMIT :share) "
                "SELECT c.id, c.n, r.id AS reply, r.n AS reply_n FROM c LEFT JOIN LATERAL ("
                "SELECT x.id, length(x.search) AS n, x.content FROM messages AS x "
                "WHERE x.session_id = c.session_id AND x.id > c.id ORDER BY x.id LIMIT 1) AS r "
                f"ON length(r.content) <= {SHORT_REPLY} AND {reply_holds} ORDER BY c.id DESC"
            ),
            params,
        ).all()
        direct = [(int(r.id), int(r.n)) for r in rows]
        replies = [(int(r.reply), int(r.reply_n)) for r in rows if r.reply is not None]
        return direct, replies

    def _pg_round(
        self,
        question: Question,
        forms: list[_Form],
        queries: list[str],
        filters: Filters,
        limit: int,
    ) -> list[Ranked]:
        budget = FILTERED_BUDGET if filters.sql()[0] else BUDGET
        share = max(FEW, budget // max(1, sum(1 for q in queries if q)))
        found = [self._matches(q, filters, share) if q else ([], []) for q in queries]
        if not any(direct for direct, _ in found):
            return []
        low, high = self.conn.execute(text("SELECT min(id), max(id) FROM messages")).one()
        total = max(1, int(high or 0) - int(low or 0) + 1)
        idf = []
        for direct, _ in found:
            if len(direct) < share:
                df = float(len(direct))
            else:
                df = min(total, len(direct) * total / max(1, int(high) - direct[-1][0] + 1))
            idf.append(math.log(1 + (total - df + 0.5) / (df + 0.5)))
        holds: dict[int, set[int]] = defaultdict(set)
        lengths: dict[int, int] = {}
        replied: set[int] = set()
        for k, (direct, replies) in enumerate(found):
            for i, n in direct:
                holds[i].add(k)
                lengths[i] = n
            for i, n in replies:
                lengths.setdefault(i, n)
                replied.add(i)
        for i in replied:
            holds.setdefault(i, set())
        weights = question.weights
        average = max(1.0, sum(lengths.values()) / len(lengths))
        worth = [idf[k] * weights[k] for k in range(len(idf))]
        flat, per_token = 1 - B, B / average
        # A reply's own words are not known yet: it stands in with the words of what it answers,
        # at half their worth, until its text is scored.
        answered: dict[int, float] = defaultdict(float)
        for k, (_, replies) in enumerate(found):
            for i, _n in replies:
                answered[i] += 0.5 * worth[k]
        scores = [
            (
                (sum(worth[k] for k in held) + answered.get(i, 0.0))
                / (flat + per_token * lengths[i]),
                i,
            )
            for i, held in holds.items()
        ]
        # As on SQLite: the messages of a concept found whole are scored on their text too.
        rare = {i for direct, _ in found if len(direct) <= FEW for i, _ in direct}
        return self._ranked(
            question, forms, scores, holds, idf, lengths, limit, filters,
            said=lambda k: {i for i, _ in found[k][0]}, rare=rare,
        )  # fmt: skip

    def _said_in(self, form: _Form, session_id: str, low: int, high: int) -> bool:
        word = next(iter(form.words), "")
        if not word.isalnum():
            return False
        row = self.conn.execute(
            text(
                "SELECT 1 FROM messages WHERE session_id = :sid AND id BETWEEN :low AND :high "
                f"AND search @@ to_tsquery('{CONFIG}', :q) LIMIT 1"
            ),
            {"sid": session_id, "low": low, "high": high, "q": word},
        ).first()
        return row is not None
