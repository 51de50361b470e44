"""Full-text search on SQLite FTS5, with a bounded cost per query.

Ranking every match by BM25 costs time in proportion to the number of matches: a common word
in a million messages means hundreds of thousands of scores. So relevance is ranked over the
newest ``RANK_BUDGET`` matches only, found exactly by walking the index in id order (which
stops after the budget), and over a smaller budget when filters make every candidate cost a
join. Rare terms therefore rank over the whole history; common ones over recent history, where
"the docker thing" most likely means the recent one. When the matches are few, they are all
returned without a second pass through the index.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import Connection, text

from engine.sessions.fulltext import Filters, Form, Hit, Order
from engine.sessions.query import Query

RANK_BUDGET = 1000
FILTERED_RANK_BUDGET = 250
FEW = 24  # this many matches or fewer are all precise enough to return without ranking
WORD_TABLE, TRIGRAM_TABLE = "messages_fts", "messages_trigram"
_JOIN = "JOIN messages AS m ON m.id = f.rowid JOIN sessions AS s ON s.id = m.session_id"


def _hit_rows(rows: Iterable[Any]) -> list[Hit]:
    return [Hit(r.id, r.session_id, r.root_session_id, float(r.score)) for r in rows]


class SqliteFullText:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn

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

    def _newest(self, match: str, table: str, filters: Filters) -> tuple[int, int, int, list[int]]:
        """Lowest id, highest id and number of the newest budgeted matches, and their ids
        when there are few."""
        where, params = filters.sql()
        params.update(match=match, budget=FILTERED_RANK_BUDGET if where else RANK_BUDGET)
        joined = _JOIN if where else ""
        inner = (
            f"SELECT f.rowid AS id FROM {table} AS f {joined} "
            f"WHERE {table} MATCH :match{where} ORDER BY f.rowid DESC LIMIT :budget"
        )
        row = self.conn.execute(
            text(
                "SELECT min(id), max(id), count(*), "
                f"CASE WHEN count(*) <= {FEW} THEN group_concat(id) END FROM ({inner})"
            ),
            params,
        ).one()
        few = [int(i) for i in row[3].split(",")] if row[3] else []
        return int(row[0] or 0), int(row[1] or 0), int(row[2]), few

    def hits(
        self, query: Query, form: Form, filters: Filters, limit: int, order: Order
    ) -> list[Hit] | None:
        match, table = self._match(query, form)
        if match is None:
            return None
        where, params = filters.sql()
        params.update(match=match, limit=limit)
        if order != "relevance":
            direction = "DESC" if order == "newest" else "ASC"
            sql = (
                f"SELECT f.rowid AS id, m.session_id, s.root_session_id, 0.0 AS score "
                f"FROM {table} AS f {_JOIN} WHERE {table} MATCH :match{where} "
                f"ORDER BY f.rowid {direction} LIMIT :limit"
            )
            return _hit_rows(self.conn.execute(text(sql), params))
        low, high, count, few = self._newest(match, table, filters)
        if count == 0:
            return []
        if few and form != "any":
            # Every match is known and each holds the whole query: newest first, no ranking.
            # ("any" matches may hold a single common word, so they are still ranked.)
            ids = ", ".join(str(i) for i in few)
            sql = (
                "SELECT m.id, m.session_id, s.root_session_id, 0.0 AS score FROM messages AS m "
                f"JOIN sessions AS s ON s.id = m.session_id WHERE m.id IN ({ids}) "
                "ORDER BY m.id DESC LIMIT :limit"
            )
            return _hit_rows(self.conn.execute(text(sql), {"limit": limit}))
        params.update(low=low, high=high)
        window = " AND f.rowid BETWEEN :low AND :high"
        if where:
            sql = (
                f"SELECT f.rowid AS id, m.session_id, s.root_session_id, bm25({table}) AS score "
                f"FROM {table} AS f {_JOIN} WHERE {table} MATCH :match{window}{where} "
                "ORDER BY score LIMIT :limit"
            )
        else:  # rank inside the index, then look up only the rows kept
            sql = (
                "SELECT c.id, m.session_id, s.root_session_id, c.score FROM ("
                f"SELECT f.rowid AS id, bm25({table}) AS score FROM {table} AS f "
                f"WHERE {table} MATCH :match{window} ORDER BY score LIMIT :limit) AS c "
                "JOIN messages AS m ON m.id = c.id JOIN sessions AS s ON s.id = m.session_id "
                "ORDER BY c.score"
            )
        return _hit_rows(self.conn.execute(text(sql), params))
