"""The word-pair index holds only pairs of two common words (SQLite).

Migration 0004 indexed every adjacent pair of words of every message: 2.15 million distinct
pairs at 10^5 messages, 1.86 million of them in a single message, and a third of what writing
a message cost. A phrase with a rare word is cheap for the word index (it walks the rare word's
few messages), so the pair index now keeps only the pairs of two words in
``messages_common_words`` (engine/sessions/common_words.py): each word with the first message
id whose pairs with it are indexed. The pair function takes the message id and the set's
version, in the triggers and in the content view alike.

An existing history starts with the words its word index holds in at least
``common_words.threshold`` messages, common from the first message on, and the pair index is
built again from them (a minute or so for 10^6 messages, once).

PostgreSQL needs nothing here: it has no pair index.

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

from alembic import op
from sqlalchemy import text

from engine.sessions.common_words import SCHEMA, TABLE, VERSION, threshold
from engine.sessions.pairs import FUNCTION, pair_words

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

_TRIGGERS = ("messages_pairs_ai", "messages_pairs_ad", "messages_pairs_au")


def _pairs_sql(arguments: str) -> list[str]:
    """The view, index and triggers of the pair index, over ``FUNCTION(arguments)``."""
    call = f"{FUNCTION}({arguments})"
    return [
        f"CREATE VIEW messages_pairs_source AS SELECT id, {call.format('messages')} AS pairs "
        "FROM messages",
        """CREATE VIRTUAL TABLE messages_pairs USING fts5(
            pairs, content='messages_pairs_source', content_rowid='id', detail='none',
            columnsize=0, tokenize="ascii tokenchars '_'")""",
        f"""CREATE TRIGGER messages_pairs_ai AFTER INSERT ON messages BEGIN
            INSERT INTO messages_pairs(rowid, pairs) VALUES (new.id, {call.format("new")});
        END""",
        f"""CREATE TRIGGER messages_pairs_ad AFTER DELETE ON messages BEGIN
            INSERT INTO messages_pairs(messages_pairs, rowid, pairs)
                VALUES ('delete', old.id, {call.format("old")});
        END""",
        f"""CREATE TRIGGER messages_pairs_au AFTER UPDATE ON messages BEGIN
            INSERT INTO messages_pairs(messages_pairs, rowid, pairs)
                VALUES ('delete', old.id, {call.format("old")});
            INSERT INTO messages_pairs(rowid, pairs) VALUES (new.id, {call.format("new")});
        END""",
        "INSERT INTO messages_pairs(messages_pairs) VALUES ('rebuild')",
    ]


_COMMON = "{0}.id, {0}.content, {0}.tool_name, {0}.tool_calls, " + VERSION
_EVERY = "{0}.content, {0}.tool_name, {0}.tool_calls"


def _drop() -> None:
    for name in _TRIGGERS:
        op.execute(text(f"DROP TRIGGER IF EXISTS {name}"))
    op.execute(text("DROP TABLE IF EXISTS messages_pairs"))
    op.execute(text("DROP VIEW IF EXISTS messages_pairs_source"))


def upgrade() -> None:
    conn = op.get_bind()
    if conn.dialect.name != "sqlite":
        return
    conn.execute(text(SCHEMA))
    total = conn.execute(text("SELECT coalesce(max(id), 0) FROM messages")).scalar_one()
    if total:
        # The words of the word index that are common now, as the pair index folds them.
        common = [
            str(term)
            for (term,) in conn.execute(
                text("SELECT term FROM messages_vocab WHERE doc >= :needed"),
                {"needed": threshold(int(total))},
            )
            if pair_words([str(term)]) == [str(term)]
        ]
        if common:
            conn.execute(
                text(f"INSERT INTO {TABLE}(word, since, round) VALUES (:word, 0, 1)"),
                [{"word": word} for word in common],
            )
    _drop()
    for statement in _pairs_sql(_COMMON):
        conn.execute(text(statement))


def downgrade() -> None:
    conn = op.get_bind()
    if conn.dialect.name != "sqlite":
        return
    _drop()
    for statement in _pairs_sql(_EVERY):
        conn.execute(text(statement))
    conn.execute(text(f"DROP TABLE {TABLE}"))
