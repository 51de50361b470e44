"""The substring and word-pair indexes may trail the messages (SQLite).

Filling the trigram index (``messages_trigram``) and the word-pair index (``messages_pairs``)
is two thirds of what importing a large history costs, and neither is needed to find a
message: a substring can be looked for in the text itself and a phrase in the word index,
which both searches do for what these two do not hold yet (engine/sessions/fts_sqlite.py).
So a bulk import may leave them behind and have them catch up afterwards
(engine/sessions/backlog.py).

``messages_backlog`` holds at most one row: ``first_id``, the first message id the two indexes do
not hold. Every message below it is in both; none from it on is. The triggers keep that true
while messages are written meanwhile: a new message (its id is above every other) is left out
of the two indexes, and a message from ``first_id`` on is deleted or updated without touching
them. The catch-up indexes a range of ids and moves ``first_id`` past it in one transaction,
and deletes the row when nothing is left. With no row, the triggers do what they did before.

To give the trigram index a guard of its own, its statements move out of migration 0002's
``messages_ai`` / ``_ad`` / ``_au`` (which keep the word index's) into triggers of its own.

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

from alembic import op
from sqlalchemy import text

from engine.sessions.pairs import FUNCTION

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

BACKLOG = "messages_backlog"
_GUARD = f"{{0}}.id < coalesce((SELECT first_id FROM {BACKLOG}), {{0}}.id + 1)"
_PAIRS_OF = f"{FUNCTION}({{0}}.content, {{0}}.tool_name, {{0}}.tool_calls)"
_WORDS_IN = (
    "INSERT INTO messages_fts(rowid, content, tool_name, tool_calls) "
    "VALUES (new.id, new.content, new.tool_name, new.tool_calls)"
)
_WORDS_OUT = (
    "INSERT INTO messages_fts(messages_fts, rowid, content, tool_name, tool_calls) "
    "VALUES ('delete', old.id, old.content, old.tool_name, old.tool_calls)"
)
_TRIGRAMS_IN = "INSERT INTO messages_trigram(rowid, content) VALUES (new.id, new.content)"
_TRIGRAMS_OUT = (
    "INSERT INTO messages_trigram(messages_trigram, rowid, content) "
    "VALUES ('delete', old.id, old.content)"
)
_PAIRS_IN = f"INSERT INTO messages_pairs(rowid, pairs) VALUES (new.id, {_PAIRS_OF.format('new')})"
_PAIRS_OUT = (
    "INSERT INTO messages_pairs(messages_pairs, rowid, pairs) "
    f"VALUES ('delete', old.id, {_PAIRS_OF.format('old')})"
)


def _trigger(name: str, event: str, row: str | None, *statements: str) -> str:
    when = f" WHEN {_GUARD.format(row)}" if row else ""
    body = "; ".join(statements)
    return f"CREATE TRIGGER {name} AFTER {event} ON messages{when} BEGIN {body}; END"


_TRIGGERS = {
    "messages_ai": _trigger("messages_ai", "INSERT", None, _WORDS_IN),
    "messages_ad": _trigger("messages_ad", "DELETE", None, _WORDS_OUT),
    "messages_au": _trigger("messages_au", "UPDATE", None, _WORDS_OUT, _WORDS_IN),
    "messages_trigram_ai": _trigger("messages_trigram_ai", "INSERT", "new", _TRIGRAMS_IN),
    "messages_trigram_ad": _trigger("messages_trigram_ad", "DELETE", "old", _TRIGRAMS_OUT),
    "messages_trigram_au": _trigger(
        "messages_trigram_au", "UPDATE", "old", _TRIGRAMS_OUT, _TRIGRAMS_IN
    ),
    "messages_pairs_ai": _trigger("messages_pairs_ai", "INSERT", "new", _PAIRS_IN),
    "messages_pairs_ad": _trigger("messages_pairs_ad", "DELETE", "old", _PAIRS_OUT),
    "messages_pairs_au": _trigger("messages_pairs_au", "UPDATE", "old", _PAIRS_OUT, _PAIRS_IN),
}
# As migrations 0002 and 0004 left them, for the downgrade.
_BEFORE = {
    "messages_ai": _trigger("messages_ai", "INSERT", None, _WORDS_IN, _TRIGRAMS_IN),
    "messages_ad": _trigger("messages_ad", "DELETE", None, _WORDS_OUT, _TRIGRAMS_OUT),
    "messages_au": _trigger(
        "messages_au", "UPDATE", None, _WORDS_OUT, _TRIGRAMS_OUT, _WORDS_IN, _TRIGRAMS_IN
    ),
    "messages_pairs_ai": _trigger("messages_pairs_ai", "INSERT", None, _PAIRS_IN),
    "messages_pairs_ad": _trigger("messages_pairs_ad", "DELETE", None, _PAIRS_OUT),
    "messages_pairs_au": _trigger("messages_pairs_au", "UPDATE", None, _PAIRS_OUT, _PAIRS_IN),
}


def _replace_triggers(triggers: dict[str, str], drop: set[str]) -> None:
    conn = op.get_bind()
    for name in drop | set(triggers):
        conn.execute(text(f"DROP TRIGGER IF EXISTS {name}"))
    for sql in triggers.values():
        conn.execute(text(sql))


def upgrade() -> None:
    conn = op.get_bind()
    if conn.dialect.name != "sqlite":
        return
    conn.execute(
        text(
            f"CREATE TABLE {BACKLOG} (id INTEGER PRIMARY KEY CHECK (id = 1), "
            "first_id INTEGER NOT NULL)"
        )
    )
    _replace_triggers(_TRIGGERS, set())


def downgrade() -> None:
    conn = op.get_bind()
    if conn.dialect.name != "sqlite":
        return
    backlog = conn.execute(text(f"SELECT first_id FROM {BACKLOG}")).scalar()
    if backlog is not None:  # the schema before holds every message in both indexes
        for table in ("messages_trigram", "messages_pairs"):
            conn.execute(text(f"INSERT INTO {table}({table}) VALUES ('rebuild')"))
    _replace_triggers(_BEFORE, set(_TRIGGERS))
    conn.execute(text(f"DROP TABLE {BACKLOG}"))
