"""Which words are common enough for their pairs to be indexed (SQLite, migration 0008).

The word-pair index (pairs.py) makes a phrase of two common words a lookup instead of a walk
through every message holding both. A phrase with a rare word needs no such help: the word
index walks the few messages of the rare word. And the pairs with a rare word are nearly all
of the index's distinct tokens (1.86 of 2.15 million at 10^5 messages, each in one message),
which is what writing the index costs. So only pairs of two *common* words are indexed.

The set of common words is kept in ``messages_common_words``: each word with ``since``, the
first message id whose pairs with it are indexed. A word joins with ``since`` above every id
stored then and never leaves, so the pairs a message is given depend only on its id and its
text, never change, and the index's external content (the view ``messages_pairs_source``) is
the same on delete as it was on insert. A phrase is in the pair index for the messages from
the largest ``since`` of its words on; the word index answers it for those before (and
entirely when a word is not common). Which words join is a free choice for correctness: a
word that is common but not in the set only makes its phrases slower.

The SQL function ``cairn_pairs(id, content, tool_name, tool_calls, version)`` (pairs.py)
reads the set through the connection it runs on, again whenever ``version`` (the ``round`` of
the last word added, random per promotion) differs from what it read last: another
connection's promotion, or a rolled-back one, can never leave it with a stale set.
"""

from __future__ import annotations

import random
import sqlite3
from collections import Counter
from collections.abc import Iterable

from engine.sessions.pairs import COMMON_TABLE as TABLE
from engine.sessions.pairs import words_of

# The version the pair function is given: the promotion round of the last word added.
VERSION = f"(SELECT round FROM {TABLE} ORDER BY rowid DESC LIMIT 1)"
# A word is common once this share of the messages holds it, and at least COMMON_MIN do:
# below that a phrase with it costs the word index a walk through at most that many messages.
COMMON_SHARE, COMMON_MIN = 0.005, 50
NEVER = 1 << 62  # the "since" of a word that is not common
SAMPLE = 4  # one message in this many is counted to find the words that join
MIN_SEEN = 2  # and a word in fewer of the counted ones is not asked about
_CHUNK = 500  # words per IN (...), well under SQLite's limit of variables
# Messages appended one at a time are looked at for words to promote every this many ids.
PROMOTE_EVERY = 4096

SCHEMA = f"""CREATE TABLE {TABLE} (
    word TEXT NOT NULL PRIMARY KEY,
    since INTEGER NOT NULL,
    round INTEGER NOT NULL)"""


def since_of(cursor: sqlite3.Cursor, words: Iterable[str]) -> dict[str, int]:
    """The ``since`` of each of ``words`` (pair words), ``NEVER`` for one that is not common."""
    wanted = list(dict.fromkeys(words))
    found = {w: NEVER for w in wanted}
    for start in range(0, len(wanted), _CHUNK):
        chunk = wanted[start : start + _CHUNK]
        marks = ", ".join("?" * len(chunk))
        found.update(
            cursor.execute(f"SELECT word, since FROM {TABLE} WHERE word IN ({marks})", chunk)
        )
    return found


def threshold(messages: int) -> int:
    return max(COMMON_MIN, int(messages * COMMON_SHARE))


def promote(
    cursor: sqlite3.Cursor, seen: Counter[str], seen_messages: int, since: int
) -> list[str]:
    """Add to the set the words of ``seen`` (how many of ``seen_messages`` recent messages hold
    each) that the word index says are now common, with ``since`` (above every message id
    whose pairs are indexed already). The words added."""
    # The largest id, near enough to the number of messages and a seek rather than a count.
    total = int(cursor.execute("SELECT coalesce(max(id), 0) FROM messages").fetchone()[0])
    needed = threshold(total)
    # Only a word this frequent among the recent messages is asked about (one look-up each in
    # the word index's vocabulary): one spread evenly over the history would be at least half
    # as frequent there.
    least = max(MIN_SEEN, needed * seen_messages // max(1, 2 * total))
    asked = since_of(cursor, [w for w, n in seen.items() if n >= least])
    candidates = [w for w, first in asked.items() if first == NEVER]
    added = []
    for word in candidates:
        row = cursor.execute("SELECT doc FROM messages_vocab WHERE term = ?", (word,)).fetchone()
        if row is not None and row[0] >= needed:
            added.append(word)
    if added:
        stamp = random.getrandbits(62)
        cursor.executemany(
            f"INSERT INTO {TABLE}(word, since, round) VALUES (?, ?, ?)",
            [(w, since, stamp) for w in added],
        )
    return added


def promote_recent(cursor: sqlite3.Cursor, last_id: int) -> list[str]:
    """After messages appended one at a time (their pairs indexed by the trigger) up to
    ``last_id``: promote the words that the last PROMOTE_EVERY of them make common, from the
    next id on."""
    rows = cursor.execute(
        "SELECT content, tool_name, tool_calls FROM messages WHERE id > ? AND id <= ? "
        f"AND id % {SAMPLE} = 0",
        (last_id - PROMOTE_EVERY, last_id),
    ).fetchall()
    seen: Counter[str] = Counter()
    for columns in rows:
        seen.update(words_of(*columns))
    return promote(cursor, seen, len(rows), since=last_id + 1)
