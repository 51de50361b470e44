"""Stemmed word index with reply context, for questions asked in natural language (SQLite).

``messages_stem`` indexes each message's text through FTS5's porter tokenizer, so "adopted",
"adoption" and "adopt" are one word, and keeps a second column, ``context``: for a short
message (a reply such as "A sunset over the lake."), the text of the message before it in the
same session, whose words are what the reply is about. Search weighs a match there below a
match in the message itself (engine/sessions/recall.py).

The context is copied into ``messages_context`` when the reply is written, rather than looked
up again: the index must be given, on delete, exactly the text it was given on insert, and the
message before may have been edited or deleted by then. The index's content is the view
``messages_stem_source`` over both tables, so 'rebuild' and 'integrity-check' work as on the
other indexes. Everything is plain SQL: any SQLite client can still write messages.

PostgreSQL needs nothing here: its search stays on the unstemmed ``search`` column.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

from alembic import op
from sqlalchemy import text

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

# A reply this short (characters) is indexed with the text it answers, up to CONTEXT_CHARS.
SHORT_REPLY, CONTEXT_CHARS = 200, 300

_CONTEXT_OF_NEW = (
    "INSERT INTO messages_context(id, context) "
    f"SELECT new.id, substr(p.content, 1, {CONTEXT_CHARS}) FROM messages AS p "
    "WHERE p.session_id = new.session_id AND p.id < new.id AND p.content != '' "
    f"AND length(new.content) <= {SHORT_REPLY} ORDER BY p.id DESC LIMIT 1"
)
_CONTEXT = "(SELECT context FROM messages_context WHERE id = {0}.id)"
_INSERT = (
    "INSERT INTO messages_stem(rowid, content, context) "
    f"VALUES (new.id, new.content, {_CONTEXT.format('new')})"
)
_DELETE = (
    "INSERT INTO messages_stem(messages_stem, rowid, content, context) "
    f"VALUES ('delete', old.id, old.content, {_CONTEXT.format('old')})"
)

SQLITE_STEM = [
    "CREATE TABLE messages_context (id INTEGER PRIMARY KEY, context TEXT NOT NULL)",
    f"""INSERT INTO messages_context(id, context)
        SELECT id, substr(previous, 1, {CONTEXT_CHARS}) FROM (
            SELECT id, content, lag(content) OVER (PARTITION BY session_id ORDER BY id)
                AS previous FROM messages)
        WHERE length(content) <= {SHORT_REPLY} AND previous IS NOT NULL AND previous != ''""",
    """CREATE VIEW messages_stem_source AS
        SELECT m.id AS id, m.content AS content, c.context AS context
        FROM messages AS m LEFT JOIN messages_context AS c ON c.id = m.id""",
    """CREATE VIRTUAL TABLE messages_stem USING fts5(
        content, context, content='messages_stem_source', content_rowid='id',
        tokenize='porter unicode61 remove_diacritics 2')""",
    f"CREATE TRIGGER messages_stem_ai AFTER INSERT ON messages BEGIN {_CONTEXT_OF_NEW}; "
    f"{_INSERT}; END",
    f"CREATE TRIGGER messages_stem_ad AFTER DELETE ON messages BEGIN {_DELETE}; "
    "DELETE FROM messages_context WHERE id = old.id; END",
    f"CREATE TRIGGER messages_stem_au AFTER UPDATE OF content ON messages BEGIN {_DELETE}; "
    f"{_INSERT}; END",
    # About a minute for a history of a million messages, once.
    "INSERT INTO messages_stem(messages_stem) VALUES ('rebuild')",
]


def upgrade() -> None:
    conn = op.get_bind()
    if conn.dialect.name != "sqlite":
        return
    for statement in SQLITE_STEM:
        conn.execute(text(statement))


def downgrade() -> None:
    conn = op.get_bind()
    if conn.dialect.name != "sqlite":
        return
    for name in ("messages_stem_ai", "messages_stem_ad", "messages_stem_au"):
        conn.execute(text(f"DROP TRIGGER IF EXISTS {name}"))
    conn.execute(text("DROP TABLE IF EXISTS messages_stem"))
    conn.execute(text("DROP VIEW IF EXISTS messages_stem_source"))
    conn.execute(text("DROP TABLE IF EXISTS messages_context"))
