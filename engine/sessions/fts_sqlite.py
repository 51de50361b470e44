"""Full-text search on SQLite FTS5, with a bounded cost per query.

Ranking every match by BM25 costs time in proportion to the number of matches: a common word
in a million messages means hundreds of thousands of scores. So the cost is bounded first: the
FTS vocabulary says how many messages hold each term, and when a form of the query would match
more than ``RANK_BUDGET`` messages, ranking is confined to the newest slice of message ids that
should hold about that many. Rare terms are ranked over the whole history; common ones over
recent history, where a user looking for "the docker thing" most likely means the recent one.
"""

from __future__ import annotations

from sqlalchemy import Connection, text

from engine.sessions.fulltext import Filters, Form, Hit, Order
from engine.sessions.query import Query, Term

RANK_BUDGET = 4000
WORD_TABLE, TRIGRAM_TABLE = "messages_fts", "messages_trigram"


class SqliteFullText:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self._max_id: int | None = None

    def max_id(self) -> int:
        if self._max_id is None:
            value = self.conn.execute(text("SELECT max(id) FROM messages")).scalar()
            self._max_id = int(value or 0)
        return self._max_id

    def _doc_count(self, word: str) -> int:
        count = self.conn.execute(
            text("SELECT doc FROM messages_vocab WHERE term = :t"), {"t": word}
        ).scalar()
        return int(count or 0)

    def _term_count(self, term: Term) -> int:
        if term.prefix:
            return self.max_id()  # unknown without a scan; assume the worst
        return min(self._doc_count(w) for w in term.words)

    def _estimate(self, query: Query, form: Form) -> int:
        if form == "substring":
            return self.max_id()
        counts = [self._term_count(t) for t in query.terms]
        return min(counts) if form in ("phrase", "all") else min(self.max_id(), sum(counts))

    @staticmethod
    def _match(query: Query, form: Form) -> tuple[str | None, str]:
        if form == "substring":
            parts = query.substrings()
            return (" AND ".join(parts) if parts else None), TRIGRAM_TABLE
        if query.cjk:
            return None, WORD_TABLE  # CJK runs are single tokens: only substrings find them
        if form == "phrase":
            return query.as_phrase(), WORD_TABLE
        if form == "all":
            return query.all_of(), WORD_TABLE
        return (query.any_of() if len(query.terms) > 1 else None), WORD_TABLE

    def hits(
        self, query: Query, form: Form, filters: Filters, limit: int, order: Order
    ) -> list[Hit] | None:
        match, table = self._match(query, form)
        if match is None:
            return None
        estimate = self._estimate(query, form)
        if estimate == 0:
            return []
        where, params = filters.sql()
        params.update(match=match, limit=limit)
        lower = ""
        if order == "relevance" and estimate > RANK_BUDGET:
            top = self.max_id()
            span = max(RANK_BUDGET, int(top * RANK_BUDGET / estimate))
            lower = " AND f.rowid > :lower"
            params["lower"] = top - span
        ordering = {"relevance": "score", "newest": "f.rowid DESC", "oldest": "f.rowid ASC"}
        score = f"bm25({table})" if order == "relevance" else "0.0"
        sql = (
            f"SELECT f.rowid AS id, m.session_id, s.root_session_id, {score} AS score "
            f"FROM {table} AS f JOIN messages AS m ON m.id = f.rowid "
            "JOIN sessions AS s ON s.id = m.session_id "
            f"WHERE {table} MATCH :match{lower}{where} ORDER BY {ordering[order]} LIMIT :limit"
        )
        rows = self.conn.execute(text(sql), params)
        return [Hit(r.id, r.session_id, r.root_session_id, float(r.score)) for r in rows]

    def snippet(self, message_id: int, query: Query, form: Form) -> str | None:
        match, table = self._match(query, form)
        if match is None:
            return None
        sql = (
            f"SELECT snippet({table}, 0, '[', ']', '…', 24) FROM {table} "
            f"WHERE {table} MATCH :match AND rowid = :id"
        )
        return self.conn.execute(text(sql), {"match": match, "id": message_id}).scalar()
