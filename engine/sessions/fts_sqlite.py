"""Full-text candidate search on SQLite FTS5, with a bounded cost per query.

Ranking every match by BM25 costs time in proportion to the number of matches: a common word
in a million messages means hundreds of thousands of scores. So the cost is bounded first: the
FTS vocabulary says how many messages hold each term, and when a form of the query would match
more than ``RANK_BUDGET`` messages, ranking is confined to the newest slice of message ids that
should hold about that many. Rare terms are ranked over the whole history; common ones over
recent history, where a user looking for "the docker thing" most likely means the recent one.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection, text

from engine.sessions.query import Query, Term

RANK_BUDGET = 4000


@dataclass(frozen=True)
class Filters:
    roles: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    since: float | None = None
    until: float | None = None
    exclude_root: str | None = None

    def sql(self) -> tuple[str, dict[str, object]]:
        clauses, params = [], {}
        if self.roles:
            names = [f"role{i}" for i in range(len(self.roles))]
            clauses.append(f"m.role IN ({', '.join(':' + n for n in names)})")
            params.update(zip(names, self.roles, strict=True))
        if self.sources:
            names = [f"source{i}" for i in range(len(self.sources))]
            clauses.append(f"s.source IN ({', '.join(':' + n for n in names)})")
            params.update(zip(names, self.sources, strict=True))
        if self.since is not None:
            clauses.append("m.timestamp >= :since")
            params["since"] = self.since
        if self.until is not None:
            clauses.append("m.timestamp <= :until")
            params["until"] = self.until
        if self.exclude_root is not None:
            clauses.append("s.root_session_id != :exclude_root")
            params["exclude_root"] = self.exclude_root
        return "".join(f" AND {c}" for c in clauses), params


@dataclass(frozen=True)
class Hit:
    message_id: int
    session_id: str
    root_session_id: str
    score: float


class SqliteFullText:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def _doc_count(self, word: str) -> int:
        count = self.conn.execute(
            text("SELECT doc FROM messages_vocab WHERE term = :t"), {"t": word}
        ).scalar()
        return int(count or 0)

    def _term_count(self, term: Term, total: int) -> int:
        if term.prefix:
            return total  # unknown without a scan; assume the worst
        return min(self._doc_count(w) for w in term.words)

    def estimate(self, query: Query, form: str) -> int:
        total = self.max_id()
        counts = [self._term_count(t, total) for t in query.terms]
        if not counts:
            return 0
        return min(counts) if form in ("phrase", "all") else min(total, sum(counts))

    def max_id(self) -> int:
        return int(self.conn.execute(text("SELECT max(id) FROM messages")).scalar() or 0)

    def hits(
        self,
        match: str,
        estimate: int,
        filters: Filters,
        limit: int,
        order: str = "relevance",
        table: str = "messages_fts",
    ) -> list[Hit]:
        where, params = filters.sql()
        params.update(match=match, limit=limit)
        lower = ""
        if order == "relevance" and estimate > RANK_BUDGET:
            top = self.max_id()
            span = max(RANK_BUDGET, int(top * RANK_BUDGET / max(estimate, 1)))
            lower = " AND f.rowid > :lower"
            params["lower"] = top - span
        ordering = {
            "relevance": "score",
            "newest": "f.rowid DESC",
            "oldest": "f.rowid ASC",
        }[order]
        score = f"bm25({table})" if order == "relevance" else "0.0"
        sql = (
            f"SELECT f.rowid AS id, m.session_id, s.root_session_id, {score} AS score "
            f"FROM {table} AS f JOIN messages AS m ON m.id = f.rowid "
            "JOIN sessions AS s ON s.id = m.session_id "
            f"WHERE {table} MATCH :match{lower}{where} ORDER BY {ordering} LIMIT :limit"
        )
        rows = self.conn.execute(text(sql), params)
        return [Hit(r.id, r.session_id, r.root_session_id, float(r.score)) for r in rows]

    def snippet(self, message_id: int, match: str, table: str = "messages_fts") -> str | None:
        sql = (
            f"SELECT snippet({table}, 0, '[', ']', '…', 24) FROM {table} "
            f"WHERE {table} MATCH :match AND rowid = :id"
        )
        return self.conn.execute(text(sql), {"match": match, "id": message_id}).scalar()
