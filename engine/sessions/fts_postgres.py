"""Full-text search on PostgreSQL: tsvector + GIN for words, pg_trgm for substrings.

The cost bound mirrors the SQLite backend's: relevance is computed over at most
``RANK_BUDGET`` candidate messages, the newest ones that match, taken straight from the index.
"""

from __future__ import annotations

import re

from sqlalchemy import Connection, text

from engine.sessions.fulltext import Filters, Form, Hit, Order
from engine.sessions.query import Query, Term

RANK_BUDGET = 1000


def _like(value: str) -> str:
    return "%" + re.sub(r"([\\%_])", r"\\\1", value) + "%"


class PostgresFullText:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    @staticmethod
    def _term_sql(term: Term, name: str, params: dict[str, object]) -> str:
        if term.prefix:
            # A single word of letters and digits: safe inside to_tsquery syntax.
            params[name] = term.words[0] + ":*"
            return f"to_tsquery('simple', :{name})"
        params[name] = term.raw
        return f"phraseto_tsquery('simple', :{name})"

    def _tsquery(self, query: Query, form: Form, params: dict[str, object]) -> str | None:
        if form == "phrase":
            if query.as_phrase() is None:
                return None
            params["phrase"] = " ".join(t.raw for t in query.terms)
            tsq = "phraseto_tsquery('simple', :phrase)"
        elif form == "all":
            tsq = " && ".join(self._term_sql(t, f"t{i}", params) for i, t in enumerate(query.terms))
        elif form == "any":
            if len(query.terms) < 2:
                return None
            tsq = " || ".join(self._term_sql(t, f"t{i}", params) for i, t in enumerate(query.terms))
        else:
            return None
        if query.excluded:
            parts = [self._term_sql(t, f"x{i}", params) for i, t in enumerate(query.excluded)]
            tsq = f"({tsq}) && !!({' || '.join(parts)})"
        return f"({tsq})"

    def hits(
        self, query: Query, form: Form, filters: Filters, limit: int, order: Order
    ) -> list[Hit] | None:
        where, params = filters.sql()
        if form == "substring":
            parts = [p.strip('"') for p in query.substrings()]
            if not parts:
                return None
            names = [f"s{i}" for i in range(len(parts))]
            params.update({n: _like(v) for n, v in zip(names, parts, strict=True)})
            condition = " AND ".join(f"m.content ILIKE :{n}" for n in names)
        else:
            tsq = self._tsquery(query, form, params)
            if tsq is None:
                return None
            condition = f"m.search @@ {tsq}"
            score = f"ts_rank_cd(c.search, {tsq})"
        params.update(limit=limit, budget=RANK_BUDGET)
        direction = "ASC" if order == "oldest" else "DESC"
        inner_limit = ":limit" if order != "relevance" or form == "substring" else ":budget"
        candidates = (
            "SELECT m.id, m.session_id, m.search, s.root_session_id "
            "FROM messages AS m JOIN sessions AS s ON s.id = m.session_id "
            f"WHERE {condition}{where} ORDER BY m.id {direction} LIMIT {inner_limit}"
        )
        if order == "relevance" and form != "substring":
            sql = (
                f"SELECT c.id, c.session_id, c.root_session_id, {score} AS score "
                f"FROM ({candidates}) AS c ORDER BY score DESC, c.id DESC LIMIT :limit"
            )
        else:
            sql = (
                "SELECT c.id, c.session_id, c.root_session_id, 0.0 AS score "
                f"FROM ({candidates}) AS c"
            )
        rows = self.conn.execute(text(sql), params)
        return [Hit(r.id, r.session_id, r.root_session_id, float(r.score)) for r in rows]
