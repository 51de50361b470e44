"""The trigram index without positions (SQLite).

``messages_trigram`` indexed every three characters of every message with their positions, so
that FTS5 could match a substring as the phrase of its trigrams: the largest index of all, and
the largest share of what writing a message costs. Kept with ``detail='none'`` it holds only
which messages have each trigram (a quarter of the size: 23 against 85 MB for 10^5 messages),
and a substring of more than three characters is found as the messages holding all of its
trigrams, confirmed on their text (engine/sessions/fts_sqlite.py), which is what the phrase
matched. Lengths for ranking stay in the index's docsize table, as before.

The triggers of migration 0002 name the table, not its options, and stay as they are. An
existing history is indexed again once: about a minute for 10^6 messages.

PostgreSQL needs nothing here: its trigram index is pg_trgm's.

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

from alembic import op
from sqlalchemy import text

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

_TABLE = (
    "CREATE VIRTUAL TABLE messages_trigram USING fts5("
    "content, content='messages', content_rowid='id', tokenize='trigram'{})"
)


def _recreate(options: str) -> None:
    conn = op.get_bind()
    if conn.dialect.name != "sqlite":
        return
    conn.execute(text("DROP TABLE messages_trigram"))
    conn.execute(text(_TABLE.format(options)))
    conn.execute(text("INSERT INTO messages_trigram(messages_trigram) VALUES ('rebuild')"))


def upgrade() -> None:
    _recreate(", detail='none'")


def downgrade() -> None:
    _recreate("")
