"""The substring and word-pair indexes catching up with a large import (SQLite).

A bulk import writes each batch's messages and fills the word, stem, CJK-gram and time
indexes, but leaves the trigram and word-pair indexes behind (migration 0009): they were two
thirds of the import's time, and search does not need them to find a message. The messages
they do not hold yet are every message from ``first_id`` on; search looks for substrings in
those messages' text and for phrases in the word index (fts_sqlite.py), so results are complete
from the moment the import commits, only slower for substrings until the catch-up is done.

The catch-up (maintenance.catch_up) indexes ``CHUNK`` message ids at a time (:func:`step`),
each range in one write transaction with the move of ``first_id``: a process killed anywhere
leaves the two indexes holding exactly the messages below ``first_id``, and the next catch-up
goes on from there. A conversation writing meanwhile waits for one chunk at most (about half
a second here), or for the merge of one index at the end of a large catch-up (seconds for a
history of a million messages).
"""

from __future__ import annotations

from sqlalchemy import Connection

TABLE = "messages_backlog"
TRAILING = ("messages_trigram", "messages_pairs")  # the indexes that may trail the messages
CHUNK = 10_000
# An import that leaves the store this many messages behind or fewer catches up before it
# returns (a second or two).
INLINE = 20_000
FIRST = f"SELECT first_id FROM {TABLE}"
_FILL = {
    "messages_trigram": "INSERT INTO messages_trigram(rowid, content) "
    "SELECT id, content FROM messages WHERE id >= ? AND id < ?",
    "messages_pairs": "INSERT INTO messages_pairs(rowid, pairs) "
    "SELECT id, pairs FROM messages_pairs_source WHERE id >= ? AND id < ?",
}


def first_unindexed(conn: Connection) -> int | None:
    """The first message id the trailing indexes do not hold, or None when they hold all."""
    if conn.dialect.name != "sqlite":
        return None
    value = conn.exec_driver_sql(FIRST).scalar()
    return None if value is None else int(value)


def leave_behind(conn: Connection, first_id: int) -> None:
    """Inside a write transaction: messages from ``first_id`` on are left to the catch-up.
    A backlog already there keeps the lower start: the messages below the higher one are the
    new ones when the newest messages were deleted and their ids are given out again."""
    conn.exec_driver_sql(
        f"INSERT INTO {TABLE}(id, first_id) VALUES (1, ?) "
        "ON CONFLICT(id) DO UPDATE SET first_id = min(first_id, excluded.first_id)",
        (first_id,),
    )


def forget(conn: Connection) -> None:
    """Inside the write transaction that has filled the trailing indexes whole."""
    conn.exec_driver_sql(f"DELETE FROM {TABLE}")


def left(conn: Connection) -> int:
    """How many messages the trailing indexes do not hold yet."""
    first = first_unindexed(conn)
    if first is None:
        return 0
    return int(
        conn.exec_driver_sql("SELECT count(*) FROM messages WHERE id >= ?", (first,)).scalar_one()
    )


def step(conn: Connection, chunk: int) -> tuple[int, bool]:
    """Index the next ``chunk`` ids of the backlog: (messages indexed, whether any are left)."""
    first = first_unindexed(conn)
    if first is None:
        return 0, False
    last = int(conn.exec_driver_sql("SELECT coalesce(max(id), 0) FROM messages").scalar_one())
    end = first + chunk
    for statement in _FILL.values():
        conn.exec_driver_sql(statement, (first, end))
    done = int(
        conn.exec_driver_sql(
            "SELECT count(*) FROM messages WHERE id >= ? AND id < ?", (first, end)
        ).scalar_one()
    )
    if end > last:
        forget(conn)
        return done, False
    conn.exec_driver_sql(f"UPDATE {TABLE} SET first_id = ?", (end,))
    return done, True
