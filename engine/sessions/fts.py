"""The full-text backend for a connection: FTS5 on SQLite, tsvector search on PostgreSQL.

Apart from :mod:`engine.sessions.fulltext` (what a backend answers) so that the backends can
import that interface without it importing them back.
"""

from __future__ import annotations

from sqlalchemy import Connection

from engine.sessions.fulltext import FullText


def full_text_for(conn: Connection) -> FullText:
    if conn.dialect.name == "postgresql":
        from engine.sessions.fts_postgres import PostgresFullText

        return PostgresFullText(conn)
    from engine.sessions.fts_sqlite import SqliteFullText

    return SqliteFullText(conn)
