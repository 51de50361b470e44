"""Cheap filters: date bounds become id ranges (SQLite), and a session's lineage and source
are read from an index.

A search with ``until`` walks the full-text index from the newest match down, and without
this it had to look up every newer match only to find its date past the bound. Messages are
appended in time order, so a block of 1,024 consecutive ids covers a short span of time, kept
here as the earliest and latest timestamp in it. Any message before ``until`` is in a block that
starts before it: the last such block bounds the ids to walk (and likewise for ``since``). The
bounds only ever widen (an edited timestamp widens its block, a deleted message leaves it), so
they never exclude a match; the date itself is still checked on each message.

``ix_sessions_lineage`` covers what a search reads of a session for each match (its lineage
root, to leave out the caller's own conversation and show each conversation once, and its
source): the row itself holds the system prompt, several kilobytes that SQLite must walk
through to reach the columns after it. Measured with 8 KB prompts at 10^6 messages, searches
that leave out the current conversation went from p95 8.7 to 6.6 ms.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

from alembic import op
from sqlalchemy import text

from engine.sessions.fts_sqlite import BLOCK_BITS, BLOCKS, FILL_BLOCKS

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

_WIDEN = (
    f"INSERT INTO {BLOCKS}(block, low, high) "
    f"VALUES (new.id >> {BLOCK_BITS}, new.timestamp, new.timestamp) "
    "ON CONFLICT(block) DO UPDATE SET low = min(low, excluded.low), "
    "high = max(high, excluded.high)"
)
SQLITE_BLOCKS = [
    f"CREATE TABLE {BLOCKS} (block INTEGER PRIMARY KEY, low REAL NOT NULL, high REAL NOT NULL)",
    f"CREATE TRIGGER {BLOCKS}_ai AFTER INSERT ON messages BEGIN {_WIDEN}; END",
    f"CREATE TRIGGER {BLOCKS}_au AFTER UPDATE OF timestamp ON messages BEGIN {_WIDEN}; END",
    FILL_BLOCKS,
]


def upgrade() -> None:
    # Declared on the model, so on both backends (PostgreSQL keeps long text out of the row,
    # but the index costs it little and keeps one schema).
    op.create_index("ix_sessions_lineage", "sessions", ["id", "root_session_id", "source"])
    conn = op.get_bind()
    if conn.dialect.name != "sqlite":
        return
    for statement in SQLITE_BLOCKS:
        conn.execute(text(statement))


def downgrade() -> None:
    op.drop_index("ix_sessions_lineage", table_name="sessions")
    conn = op.get_bind()
    if conn.dialect.name != "sqlite":
        return
    for name in (f"{BLOCKS}_ai", f"{BLOCKS}_au"):
        conn.execute(text(f"DROP TRIGGER IF EXISTS {name}"))
    conn.execute(text(f"DROP TABLE IF EXISTS {BLOCKS}"))
