"""Full-text search on SQLite FTS5, with a bounded cost per query.

Ranking every match by BM25 costs time in proportion to the number of matches: a common word
in a million messages means hundreds of thousands of scores. So relevance is ranked over the
newest ``RANK_BUDGET`` matches only, found exactly by walking the index in id order (which
stops after the budget), and over a smaller budget when filters make every candidate cost a
join. Rare terms therefore rank over the whole history; common ones over recent history, where
"the docker thing" most likely means the recent one. When the matches are few, they are all
returned without a second pass through the index.

Substrings go to the trigram index (three characters or more) and, for CJK words of one or two
characters, to the gram index ``messages_cjk`` (migration 0003); a query with both needs a
message in the matches of each.
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
WORD_TABLE, TRIGRAM_TABLE, GRAM_TABLE = "messages_fts", "messages_trigram", "messages_cjk"
_JOIN = "JOIN messages AS m ON m.id = f.rowid JOIN sessions AS s ON s.id = m.session_id"


def _hit_rows(rows: Iterable[Any]) -> list[Hit]:
    return [Hit(r.id, r.session_id, r.root_session_id, float(r.score)) for r in rows]


class SqliteFullText:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    @staticmethod
    def _gram_match(query: Query) -> str | None:
        # A gram index token is one CJK character and the next; a one-character term is the
        # prefix of the grams it starts (served by the index's one-character prefix index).
        grams = ['"' + g + '"' + ("*" if len(g) == 1 else "") for g in query.grams()]
        return " AND ".join(grams) if grams else None

    @classmethod
    def _match(cls, query: Query, form: Form) -> tuple[str | None, str]:
        if form == "substring":
            parts = query.substrings()
            if not parts:
                return cls._gram_match(query), GRAM_TABLE
            return " AND ".join(parts), TRIGRAM_TABLE
        if query.cjk:
            return None, WORD_TABLE  # CJK runs are single tokens: only substrings find them
        if form == "phrase":
            return query.as_phrase(), WORD_TABLE
        if form == "all":
            return query.all_of(), WORD_TABLE
        return (query.any_of() if len(query.terms) > 1 else None), WORD_TABLE

    def _also(self, query: Query, form: Form, table: str) -> tuple[str, dict[str, object]]:
        """The short CJK terms of a substring query that also has trigram terms: the rows must
        be in the gram index's matches too."""
        if form != "substring" or table != TRIGRAM_TABLE:
            return "", {}
        grams = self._gram_match(query)
        if grams is None:
            return "", {}
        # The unary + keeps SQLite from handing the IN list to FTS5 as rowid lookups, which
        # runs the trigram query once per gram match and loses the index's id order.
        condition = (
            f" AND +f.rowid IN (SELECT rowid FROM {GRAM_TABLE} WHERE {GRAM_TABLE} MATCH :grams)"
        )
        return condition, {"grams": grams}

    def _newest(
        self, match: str, table: str, filters: Filters, also: str, also_params: dict[str, object]
    ) -> tuple[int, int, int, list[int]]:
        """Lowest id, highest id and number of the newest budgeted matches, and their ids
        when there are few."""
        where, params = filters.sql()
        params.update(match=match, budget=FILTERED_RANK_BUDGET if where else RANK_BUDGET)
        params.update(also_params)
        joined = _JOIN if where else ""
        inner = (
            f"SELECT f.rowid AS id FROM {table} AS f {joined} "
            f"WHERE {table} MATCH :match{also}{where} ORDER BY f.rowid DESC LIMIT :budget"
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
        also, also_params = self._also(query, form, table)
        where, params = filters.sql()
        params.update(match=match, limit=limit, **also_params)
        if order != "relevance":
            direction = "DESC" if order == "newest" else "ASC"
            sql = (
                f"SELECT f.rowid AS id, m.session_id, s.root_session_id, 0.0 AS score "
                f"FROM {table} AS f {_JOIN} WHERE {table} MATCH :match{also}{where} "
                f"ORDER BY f.rowid {direction} LIMIT :limit"
            )
            return _hit_rows(self.conn.execute(text(sql), params))
        low, high, count, few = self._newest(match, table, filters, also, also_params)
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
        window = f" AND f.rowid BETWEEN :low AND :high{also}"
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
