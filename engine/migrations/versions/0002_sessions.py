"""Session store: sessions with lineage, messages, and their full-text indexes.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

# Word index (URLs, versions and paths are matched as phrases of their parts) and trigram
# index (CJK, substrings), both external-content tables over `messages` kept in sync by
# triggers, plus a vocabulary view used to estimate how common a term is before querying.
SQLITE_FTS = [
    """CREATE VIRTUAL TABLE messages_fts USING fts5(
        content, tool_name, tool_calls,
        content='messages', content_rowid='id', tokenize='unicode61 remove_diacritics 2')""",
    # Trigrams of message text only: tool-call JSON is reachable through the word index, and
    # trigram-indexing it too roughly doubled the cost of every insert.
    """CREATE VIRTUAL TABLE messages_trigram USING fts5(
        content, content='messages', content_rowid='id', tokenize='trigram')""",
    "CREATE VIRTUAL TABLE messages_vocab USING fts5vocab(messages_fts, 'row')",
    """CREATE TRIGGER messages_ai AFTER INSERT ON messages BEGIN
        INSERT INTO messages_fts(rowid, content, tool_name, tool_calls)
            VALUES (new.id, new.content, new.tool_name, new.tool_calls);
        INSERT INTO messages_trigram(rowid, content) VALUES (new.id, new.content);
    END""",
    """CREATE TRIGGER messages_ad AFTER DELETE ON messages BEGIN
        INSERT INTO messages_fts(messages_fts, rowid, content, tool_name, tool_calls)
            VALUES ('delete', old.id, old.content, old.tool_name, old.tool_calls);
        INSERT INTO messages_trigram(messages_trigram, rowid, content)
            VALUES ('delete', old.id, old.content);
    END""",
    """CREATE TRIGGER messages_au AFTER UPDATE ON messages BEGIN
        INSERT INTO messages_fts(messages_fts, rowid, content, tool_name, tool_calls)
            VALUES ('delete', old.id, old.content, old.tool_name, old.tool_calls);
        INSERT INTO messages_trigram(messages_trigram, rowid, content)
            VALUES ('delete', old.id, old.content);
        INSERT INTO messages_fts(rowid, content, tool_name, tool_calls)
            VALUES (new.id, new.content, new.tool_name, new.tool_calls);
        INSERT INTO messages_trigram(rowid, content) VALUES (new.id, new.content);
    END""",
]

# PostgreSQL: a generated tsvector with a GIN index for words (its parser keeps URLs, e-mail
# addresses, versions and paths whole), and a trigram index for substrings and CJK.
POSTGRES_FTS = [
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    """ALTER TABLE messages ADD COLUMN search tsvector GENERATED ALWAYS AS (
        to_tsvector('simple', coalesce(content, '') || ' ' || coalesce(tool_name, '') || ' '
            || coalesce(tool_calls, ''))) STORED""",
    "CREATE INDEX ix_messages_search ON messages USING gin (search)",
    "CREATE INDEX ix_messages_content_trgm ON messages USING gin (content gin_trgm_ops)",
]


def upgrade() -> None:
    op.create_table(
        "sessions",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("source", sa.String(32), nullable=False),
        sa.Column("platform", sa.String(32)),
        sa.Column("title", sa.Text),
        sa.Column("model", sa.String(128)),
        sa.Column("system_prompt", sa.Text),
        sa.Column(
            "parent_session_id",
            sa.String(64),
            sa.ForeignKey("sessions.id", ondelete="SET NULL"),
        ),
        sa.Column("root_session_id", sa.String(64), nullable=False),
        sa.Column("started_at", sa.Float, nullable=False),
        sa.Column("ended_at", sa.Float),
        sa.Column("end_reason", sa.String(32)),
        sa.Column("message_count", sa.Integer, nullable=False),
        sa.Column("tool_call_count", sa.Integer, nullable=False),
        sa.Column("input_tokens", sa.Integer, nullable=False),
        sa.Column("output_tokens", sa.Integer, nullable=False),
    )
    op.create_index("ix_sessions_started_at", "sessions", ["started_at"])
    op.create_index("ix_sessions_root", "sessions", ["root_session_id"])
    op.create_index("ix_sessions_parent", "sessions", ["parent_session_id"])
    op.create_table(
        "messages",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column(
            "session_id",
            sa.String(64),
            sa.ForeignKey("sessions.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("content", sa.Text, nullable=False),
        sa.Column("tool_call_id", sa.String(128)),
        sa.Column("tool_calls", sa.Text),
        sa.Column("tool_name", sa.String(128)),
        sa.Column("timestamp", sa.Float, nullable=False),
        sa.Column("token_count", sa.Integer),
    )
    op.create_index("ix_messages_session_id", "messages", ["session_id", "id"])
    dialect = op.get_bind().dialect.name
    for statement in {"sqlite": SQLITE_FTS, "postgresql": POSTGRES_FTS}.get(dialect, []):
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for name in ("messages_ai", "messages_ad", "messages_au"):
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
        for name in ("messages_vocab", "messages_trigram", "messages_fts"):
            op.execute(f"DROP TABLE IF EXISTS {name}")
    op.drop_table("messages")
    op.drop_table("sessions")
