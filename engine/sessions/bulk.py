"""Writing many new sessions at once on SQLite: the rows first, then their index entries.

Every message insert fires the triggers of the search indexes (word, trigram, CJK grams, word
pairs, stems with reply context, time blocks): one small statement program per index per row,
and FTS5 pays a per-statement cost for each. For a bulk import that was nine tenths of the
time (1,300 messages/s). So inside one batch's transaction the insert triggers are dropped, the
rows written, each index filled by one ``INSERT … SELECT`` over the new ids, and the triggers
created again from the text SQLite kept of them, all before the commit. SQLite's schema changes
are transactional: a process killed anywhere in the batch leaves the database as it was
before the batch, triggers and all, and every committed batch is indexed whole (but for the
two indexes left to the catch-up, below, whose backlog then holds it). Other
connections never see the schema without its triggers (they read the last commit, and a writer
waits for this transaction's lock).

Only for sessions created in the same transaction: a reply's context (the message before it)
is taken from the new rows alone. The statements give each index what its trigger would have
(``reindex --check`` compares them). When the database has insert triggers this module does not
know (a newer schema), nothing is deferred and the triggers do the work as before.

The trigram and word-pair indexes, two thirds of the work, are left to a catch-up after the
import (migration 0009 and backlog.py); search finds every message meanwhile.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Connection

from engine.sessions import backlog

# As migration 0006's trigger has them: a reply this short is indexed with the text it answers.
# PostgreSQL's ranking and the vectors read a reply's context by the same two figures.
SHORT_REPLY, CONTEXT_CHARS = 200, 300
_RANGE = "id > ? AND id <= ?"
_CONTEXT = f"""
    INSERT INTO messages_context(id, context)
    SELECT m.id, substr(p.content, 1, {CONTEXT_CHARS})
    FROM (SELECT id, content, max(CASE WHEN content != '' THEN id END) OVER (
              PARTITION BY session_id ORDER BY id
              ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS previous
          FROM messages WHERE {_RANGE}) AS m
    JOIN messages AS p ON p.id = m.previous
    WHERE length(m.content) <= {SHORT_REPLY}"""
# What each insert trigger does, for a range of new ids, in the order the triggers ran; the
# trigram and pair indexes' triggers do nothing for the new ids, which are left behind.
INSERT_TRIGGERS: dict[str, tuple[str, ...]] = {
    "messages_ai": (
        "INSERT INTO messages_fts(rowid, content, tool_name, tool_calls) "
        f"SELECT id, content, tool_name, tool_calls FROM messages WHERE {_RANGE}",
    ),
    "messages_trigram_ai": (),  # left to the catch-up, as the pair index (backlog.py)
    "messages_cjk_ai": (
        "INSERT INTO messages_cjk(rowid, grams) SELECT id, grams FROM messages_cjk_source "
        f"WHERE {_RANGE}",
    ),
    "messages_pairs_ai": (),
    "messages_time_blocks_ai": (
        "INSERT INTO messages_time_blocks(block, low, high) "
        f"SELECT id >> 10, min(timestamp), max(timestamp) FROM messages WHERE {_RANGE} "
        "GROUP BY id >> 10 "
        "ON CONFLICT(block) DO UPDATE SET low = min(low, excluded.low), "
        "high = max(high, excluded.high)",
    ),
    "messages_stem_ai": (
        _CONTEXT,
        "INSERT INTO messages_stem(rowid, content, context) "
        f"SELECT id, content, context FROM messages_stem_source WHERE {_RANGE}",
    ),
}
_TRIGGERS = (
    "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'messages' "
    "AND upper(sql) LIKE '%INSERT ON MESSAGES%'"
)


def _insert_triggers(conn: Connection) -> dict[str, str]:
    return {str(r[0]): str(r[1]) for r in conn.exec_driver_sql(_TRIGGERS)}


def _last_id(conn: Connection) -> int:
    return int(conn.exec_driver_sql("SELECT coalesce(max(id), 0) FROM messages").scalar_one())


@contextmanager
def deferred_indexing(conn: Connection) -> Iterator[None]:
    """Inside the caller's write transaction: messages inserted in the block are indexed in
    bulk when it ends (see the module's text), but for the trigram and word-pair indexes,
    which are left to the catch-up (backlog.py). Does nothing but run the block off SQLite,
    or when the schema's insert triggers are not the ones known here."""
    if conn.dialect.name != "sqlite":
        yield
        return
    triggers = _insert_triggers(conn)
    if set(triggers) != set(INSERT_TRIGGERS):
        yield
        return
    low = _last_id(conn)
    for name in triggers:
        conn.exec_driver_sql(f"DROP TRIGGER {name}")
    try:
        yield
        high = _last_id(conn)
        if high > low:
            backlog.leave_behind(conn, low + 1)
            for name in INSERT_TRIGGERS:
                for statement in INSERT_TRIGGERS[name]:
                    conn.exec_driver_sql(statement, (low, high))
    finally:
        # On failure too: the transaction may be kept by a caller that handles the error.
        for sql in triggers.values():
            conn.exec_driver_sql(sql)
