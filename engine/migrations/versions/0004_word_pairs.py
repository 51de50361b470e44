"""Word-pair index for phrases (SQLite).

``messages_pairs`` indexes each message's adjacent word pairs as single tokens, so that a
phrase of common words is found without walking every message that holds its words (see
engine/sessions/pairs.py). The pairs are computed by ``cairn_pairs()``, which Cairn registers
on each of its SQLite connections: messages are written through Cairn. External content over a
view of the same function, like the CJK gram index, so that 'rebuild' and 'integrity-check'
work as on the other indexes. ``detail='none'``: a pair's presence is all a lookup needs.

PostgreSQL needs nothing here: its GIN index answers phrases from position lists.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

from alembic import op
from sqlalchemy import text

from engine.sessions.pairs import FUNCTION

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

_PAIRS_OF = f"{FUNCTION}({{0}}.content, {{0}}.tool_name, {{0}}.tool_calls)"

SQLITE_PAIRS = [
    f"""CREATE VIEW messages_pairs_source AS
        SELECT id, {_PAIRS_OF.format("messages")} AS pairs FROM messages""",
    """CREATE VIRTUAL TABLE messages_pairs USING fts5(
        pairs, content='messages_pairs_source', content_rowid='id', detail='none',
        columnsize=0, tokenize="ascii tokenchars '_'")""",
    f"""CREATE TRIGGER messages_pairs_ai AFTER INSERT ON messages BEGIN
        INSERT INTO messages_pairs(rowid, pairs) VALUES (new.id, {_PAIRS_OF.format("new")});
    END""",
    f"""CREATE TRIGGER messages_pairs_ad AFTER DELETE ON messages BEGIN
        INSERT INTO messages_pairs(messages_pairs, rowid, pairs)
            VALUES ('delete', old.id, {_PAIRS_OF.format("old")});
    END""",
    f"""CREATE TRIGGER messages_pairs_au AFTER UPDATE ON messages BEGIN
        INSERT INTO messages_pairs(messages_pairs, rowid, pairs)
            VALUES ('delete', old.id, {_PAIRS_OF.format("old")});
        INSERT INTO messages_pairs(rowid, pairs) VALUES (new.id, {_PAIRS_OF.format("new")});
    END""",
    # ~80 µs a message: a minute or so for a history of a million messages, once.
    "INSERT INTO messages_pairs(messages_pairs) VALUES ('rebuild')",
]


def upgrade() -> None:
    conn = op.get_bind()
    if conn.dialect.name != "sqlite":
        return
    for statement in SQLITE_PAIRS:
        conn.execute(text(statement))


def downgrade() -> None:
    conn = op.get_bind()
    if conn.dialect.name != "sqlite":
        return
    for name in ("messages_pairs_ai", "messages_pairs_ad", "messages_pairs_au"):
        conn.execute(text(f"DROP TRIGGER IF EXISTS {name}"))
    conn.execute(text("DROP TABLE IF EXISTS messages_pairs"))
    conn.execute(text("DROP VIEW IF EXISTS messages_pairs_source"))
