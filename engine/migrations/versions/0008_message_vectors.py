"""Sentence vectors of messages, for the optional semantic ranking of session search.

``message_vectors`` holds, per message, the all-MiniLM-L6-v2 vector of its text as 384 float16
values (768 bytes), or an empty blob for a message that has nothing to embed, so that it is not
picked again. It is filled only when semantic search is on (``sessions.semantic`` in
config.yaml, or ``cairn sessions embed``), after the fact and outside the message's own write:
a message is stored at the same speed either way, and an archive without the extra keeps an
empty table.

A vector must never outlive the text it was made of: deleting a message deletes its vector
(a foreign key with ``ON DELETE CASCADE`` on PostgreSQL; on SQLite, where Cairn does not turn
foreign keys on, a trigger), and on SQLite an update of a message's content deletes it too, so
that the next catch-up embeds the new text.

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy import text

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

_SQLITE_TRIGGERS = [
    """CREATE TRIGGER message_vectors_ad AFTER DELETE ON messages BEGIN
        DELETE FROM message_vectors WHERE message_id = old.id;
    END""",
    """CREATE TRIGGER message_vectors_au AFTER UPDATE OF content ON messages BEGIN
        DELETE FROM message_vectors WHERE message_id = old.id;
    END""",
]


def upgrade() -> None:
    op.create_table(
        "message_vectors",
        sa.Column(
            "message_id",
            sa.Integer,
            sa.ForeignKey("messages.id", ondelete="CASCADE"),
            primary_key=True,
            autoincrement=False,
        ),
        sa.Column("vector", sa.LargeBinary, nullable=False),
    )
    conn = op.get_bind()
    if conn.dialect.name == "sqlite":
        for statement in _SQLITE_TRIGGERS:
            conn.execute(text(statement))


def downgrade() -> None:
    conn = op.get_bind()
    if conn.dialect.name == "sqlite":
        for name in ("message_vectors_ad", "message_vectors_au"):
            conn.execute(text(f"DROP TRIGGER IF EXISTS {name}"))
    op.drop_table("message_vectors")
