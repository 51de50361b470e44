"""Full-text search on PostgreSQL: tsvector + GIN for words, pg_trgm for substrings, and an
index of CJK grams for CJK words shorter than a trigram.

The cost bound mirrors the SQLite backend's: relevance is computed over at most
``RANK_BUDGET`` candidate messages, the newest ones that match, taken straight from the index.

``ts_rank`` knows nothing of how common a word is, so when a query matches on any of its terms
each term is weighted by its inverse document frequency among those candidates: a message with
the rare word of "printer error zeroconf" ranks above the many that only say "error". The
candidates are a sample of the history (the newest matches), which is also what the ranking
is over; no statistics table has to be kept up to date on every insert.
"""

from __future__ import annotations

import re

from sqlalchemy import Connection, text

from engine.sessions.fulltext import Filters, Form, Hit, Order
from engine.sessions.query import CJK_GRAM_CLASS, Query, Term

RANK_BUDGET = 1000
# Migration 0003: 'simple' with accents folded (when the server has unaccent).
CONFIG = "cairn"
_CJK_RUN = re.compile(CJK_GRAM_CLASS + "+")


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
            return f"to_tsquery('{CONFIG}', :{name})"
        params[name] = term.raw
        return f"phraseto_tsquery('{CONFIG}', :{name})"

    def _tsquery(self, query: Query, form: Form, params: dict[str, object]) -> str | None:
        if query.cjk:
            # A CJK run is one token: a word match would find only runs that are exactly the
            # query, and stop the substring form from finding it inside longer ones.
            return None
        if form == "phrase":
            if query.phrase_term() is None:
                return None
            params["phrase"] = " ".join(t.raw for t in query.terms)
            tsq = f"phraseto_tsquery('{CONFIG}', :phrase)"
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

    @staticmethod
    def _substring(query: Query, params: dict[str, object]) -> str | None:
        conditions = []
        grams = query.grams()
        for i, part in enumerate(p.strip('"') for p in query.substrings()):
            params[f"s{i}"] = _like(part)
            conditions.append(f"m.content ILIKE :s{i}")
            # The pairs of a longer CJK term must all be in the message too. Saying so lets
            # the planner use the gram index instead of walking the primary key backwards
            # through thousands of rows, betting that the ILIKE matches often (150 ms for
            # サーバー at 30,000 messages; 4 ms this way).
            for run in _CJK_RUN.findall(part):
                for gram in [run[j : j + 2] for j in range(len(run) - 1)] or [run]:
                    if gram not in grams:
                        grams.append(gram)
        if grams:
            names = [f"g{i}" for i in range(len(grams))]
            params.update(zip(names, grams, strict=True))
            wanted = ", ".join(f"CAST(:{n} AS text)" for n in names)
            # The same expression as the index ix_messages_cjk_grams, so the planner uses it.
            conditions.append(f"cairn_cjk_grams(m.content) @> ARRAY[{wanted}]")
        return " AND ".join(conditions) if conditions else None

    def _idf_score(self, query: Query, params: dict[str, object]) -> tuple[str, str]:
        """For the "any" form: the per-term document counts over the candidates ``c`` (a CTE
        of that name) and the score that weights each term by them (BM25's idf)."""
        counts, score = ["count(*) AS n"], []
        for i, term in enumerate(query.terms):
            tsq = self._term_sql(term, f"t{i}", params)
            counts.append(f"count(*) FILTER (WHERE c.search @@ {tsq}) AS d{i}")
            idf = f"ln(1 + (df.n - df.d{i} + 0.5) / (df.d{i} + 0.5))"
            score.append(f"{idf} * ts_rank(c.search, {tsq}, 1)")
        return f"SELECT {', '.join(counts)} FROM c", " + ".join(score)

    def hits(
        self, query: Query, form: Form, filters: Filters, limit: int, order: Order
    ) -> list[Hit] | None:
        where, params = filters.sql()
        if form == "substring":
            condition = self._substring(query, params)
            if condition is None:
                return None
        else:
            tsq = self._tsquery(query, form, params)
            if tsq is None:
                return None
            condition = f"m.search @@ {tsq}"
        params.update(limit=limit, budget=RANK_BUDGET)
        direction = "ASC" if order == "oldest" else "DESC"
        ranked = order == "relevance" and form != "substring"
        candidates = (
            "SELECT m.id, m.session_id, m.search, s.root_session_id "
            "FROM messages AS m JOIN sessions AS s ON s.id = m.session_id "
            f"WHERE {condition}{where} ORDER BY m.id {direction} "
            f"LIMIT {':budget' if ranked else ':limit'}"
        )
        if not ranked:
            sql = (
                "SELECT c.id, c.session_id, c.root_session_id, 0.0 AS score "
                f"FROM ({candidates}) AS c"
            )
        elif form == "any":
            counts, score = self._idf_score(query, params)
            sql = (
                f"WITH c AS ({candidates}), df AS ({counts}) "
                f"SELECT c.id, c.session_id, c.root_session_id, {score} AS score "
                "FROM c, df ORDER BY score DESC, c.id DESC LIMIT :limit"
            )
        else:  # every candidate holds every term: no term is rarer than another among them
            sql = (
                f"SELECT c.id, c.session_id, c.root_session_id, ts_rank_cd(c.search, {tsq}) "
                f"AS score FROM ({candidates}) AS c ORDER BY score DESC, c.id DESC LIMIT :limit"
            )
        rows = self.conn.execute(text(sql), params)
        return [Hit(r.id, r.session_id, r.root_session_id, float(r.score)) for r in rows]
