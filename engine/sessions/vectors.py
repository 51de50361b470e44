"""Message vectors for semantic search: filling ``message_vectors`` and finding the nearest.

Off by default (``sessions.semantic`` in config.yaml): it needs the ``semantic`` extra
(engine/sessions/meaning.py). A message is embedded after it is stored, never inside its write:
``catch_up`` embeds what has no vector yet, newest first, in chunks of one transaction each,
either all of it (``cairn sessions embed``) or a few at a time before a search, so that a
conversation's latest turns are findable by meaning at once while an imported archive is left
to the command.

A message has one vector for the whole and, when it has more than one sentence, one for each
two sentences (up to four more, ``_texts``), all in its one row, so a message is as near as its
nearest part. They are stored as float16 (768 bytes a vector). Each process keeps those it
has read in memory as float32 (1.5 KB a vector: 1.2 to 2.5 vectors a message in the recall
benchmark's archives, 180 to 380 MB for 10^5 messages), as a product over float16 is ten times
slower in NumPy, and reads only the rows past the newest it holds on each search; a nearest
search is one product over them, and its best few hundred messages are looked up with the
search's filters, and scored again on their stored vectors, in one statement.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from sqlalchemy import Connection, Engine, bindparam, text

from engine.sessions.bulk import CONTEXT_CHARS, SHORT_REPLY
from engine.sessions.fulltext import Filters, Hit
from engine.sessions.meaning import DIMENSIONS, MAX_CHARS, encoder

EMBEDDED_ROLES = ("user", "assistant")
CHUNK = 256  # messages embedded per transaction: about a second of CPU
SEARCH_BUDGET = 64  # messages a search embeds first, newest first (about a quarter second)
DEPTH, FILTERED_DEPTH = 400, 4000  # nearest messages looked up, without and with filters

# What a message is embedded from: its text and the turn before it, newest first.
_TO_EMBED = (
    "SELECT m.id, m.role, m.content, (SELECT p.content FROM messages AS p "
    "WHERE p.session_id = m.session_id AND p.id < m.id ORDER BY p.id DESC LIMIT 1) AS previous "
    "FROM messages AS m WHERE {} ORDER BY m.id DESC LIMIT :n"
)
_MISSING = text(
    _TO_EMBED.format(
        "m.id > :floor AND NOT EXISTS "
        "(SELECT 1 FROM message_vectors AS v WHERE v.message_id = m.id)"
    )
)
# Every message below an id: what ``catch_up(again=True)`` embeds anew.
_EVERY = text(_TO_EMBED.format("m.id < :below"))
_PUT = text("INSERT INTO message_vectors (message_id, vector) VALUES (:id, :vector)")
_NEWER = text(
    "SELECT message_id, vector FROM message_vectors WHERE message_id > :after ORDER BY message_id"
)
_NEWEST = text("SELECT max(message_id) FROM message_vectors")
_ONE = text("SELECT vector FROM message_vectors WHERE message_id = :id")
_PRESENT = text("SELECT id FROM messages WHERE id IN :ids").bindparams(
    bindparam("ids", expanding=True)
)
_REPLACED = text("DELETE FROM message_vectors WHERE message_id IN :ids").bindparams(
    bindparam("ids", expanding=True)
)


def _embeddable(role: str, content: str | None) -> bool:
    return role in EMBEDDED_ROLES and bool(content and content.strip())


_SENTENCE = re.compile(r"(?<=[.!?…])\s+")
MIN_SENTENCE = 12  # characters: "Thanks." or "Yes!" is no piece of news
WINDOW, MAX_WINDOWS = 2, 4  # sentences a vector, and vectors a message beside the whole
MAX_VECTORS = 1 + MAX_WINDOWS


def _texts(content: str, previous: str | None) -> list[str]:
    """The texts a message is embedded as: the whole (``_text``) and, when it has more than
    one sentence, each two sentences of its first eight. A long reply or a turn with several
    pieces of news is then near a question about one of them, which its whole vector, an
    average of everything it says, often is not (recall.py's long-turn development batches:
    docs/benchmarks.md, ninth round)."""
    whole = _text(content, previous)
    # Eight sentences are in a message's head: a huge one is not split whole.
    head = content[:MAX_CHARS].strip()
    parts = [p for p in _SENTENCE.split(head) if len(p) >= MIN_SENTENCE]
    if len(parts) <= 1:
        return [whole]
    windows = [" ".join(parts[i : i + WINDOW]) for i in range(0, len(parts), WINDOW)]
    return [whole, *windows[:MAX_WINDOWS]]


def _text(content: str, previous: str | None) -> str:
    """What a message's vector is made of: a short reply ("I got it! I start next month.")
    with the turn it answers before it, whose words say what it is about, as the stemmed word
    index does (migration 0006)."""
    if previous and len(content) <= SHORT_REPLY:
        return f"{previous[:CONTEXT_CHARS]}\n{content}"
    return content


@dataclass
class _Held:
    """The vectors one process has read of one database."""

    ids: list[np.ndarray] = field(default_factory=list)
    rows: list[np.ndarray] = field(default_factory=list)
    # Below this id every message is known to have a vector (or an empty one): catch-up
    # looks only above it.
    complete_below: int = 0
    merged: tuple[np.ndarray, np.ndarray] | None = None
    # The newest vector held, as read: if the database no longer has it, the database was
    # emptied or made again at the same address (ids start over), and nothing held is its.
    witness: tuple[int, bytes] | None = None

    @property
    def newest(self) -> int:
        return self.witness[0] if self.witness is not None else 0

    def add(self, ids: np.ndarray, rows: np.ndarray) -> None:
        if len(ids):
            self.ids.append(ids)
            self.rows.append(rows)
            self.merged = None
            last = int(ids.argmax())
            if int(ids[last]) > self.newest:
                self.witness = (int(ids[last]), rows[last].astype(np.float16).tobytes())

    def still_of(self, conn: Connection) -> bool:
        if self.witness is None:
            return True
        blob = conn.execute(_ONE, {"id": self.witness[0]}).scalar()
        return blob is not None and bytes(blob)[: 2 * DIMENSIONS] == self.witness[1]

    def matrix(self) -> tuple[np.ndarray, np.ndarray]:
        if self.merged is None:
            if not self.ids:
                self.merged = (np.zeros(0, np.int64), np.zeros((0, DIMENSIONS), np.float32))
            else:
                self.merged = (np.concatenate(self.ids), np.concatenate(self.rows))
                self.ids, self.rows = [self.merged[0]], [self.merged[1]]
        return self.merged


_held: dict[str, _Held] = {}
_lock = threading.Lock()


def _key(engine: Engine) -> str:
    return engine.url.render_as_string(hide_password=False)


def _decode(blobs: list[tuple[int, bytes]]) -> tuple[np.ndarray, np.ndarray]:
    """Rows of (id, blob) → ids and float32 vectors, leaving out the empty ones; an id once
    for each of its vectors (a blob of one vector is what Cairn wrote before windows)."""
    full = [(i, b) for i, b in blobs if b]
    counts = [len(b) // (2 * DIMENSIONS) for _, b in full]
    ids = np.repeat(np.fromiter((i for i, _ in full), np.int64, len(full)), counts)
    if not full:
        return ids, np.zeros((0, DIMENSIONS), np.float32)
    rows = np.frombuffer(b"".join(b for _, b in full), np.float16).reshape(len(ids), DIMENSIONS)
    rows = rows.astype(np.float32)
    return ids, rows


class VectorIndex:
    """The vectors of one session database, as this process knows them."""

    def __init__(self, engine: Engine, writer: Engine | None = None) -> None:
        self.engine = engine
        self.writer = writer or engine
        self._key = _key(engine)

    @property
    def _held(self) -> _Held:
        with _lock:
            return _held.setdefault(self._key, _Held())

    def _checked(self, conn: Connection) -> _Held:
        """What this process holds of the database, dropped first if it is not the same
        database any more."""
        held = self._held
        if not held.still_of(conn):
            with _lock:
                if _held.get(self._key) is held:
                    _held[self._key] = held = _Held()
        return held

    def catch_up(
        self,
        limit: int | None = None,
        progress: Callable[[int], None] | None = None,
        again: bool = False,
    ) -> int:
        """Embed up to ``limit`` messages that have no vector yet (all when None), newest
        first, one transaction per chunk. Returns how many were embedded. With ``again``,
        every message is embedded anew, its vectors replaced chunk by chunk (those written
        before a message had a vector for each two sentences), so that search keeps working
        meanwhile."""
        done = 0
        below = 1 << 62  # with ``again``: the oldest id embedded so far (none yet)
        while limit is None or done < limit:
            want = CHUNK if limit is None else min(CHUNK, limit - done)
            with self.engine.connect() as conn:
                held = self._checked(conn)
                if again:
                    rows = conn.execute(_EVERY, {"below": below, "n": want}).all()
                    below = min((int(r.id) for r in rows), default=0)
                else:
                    # A whole catch-up looks at every message: one another program edited
                    # below the floor has lost its vector (migration 0008) and is embedded
                    # again.
                    floor = held.complete_below if limit is not None else 0
                    rows = conn.execute(_MISSING, {"floor": floor, "n": want}).all()
                if not rows:
                    newest = int(conn.execute(_NEWEST).scalar() or 0)
                    held.complete_below = max(held.complete_below, newest)
                    break
            per = [
                _texts(r.content, r.previous) if _embeddable(r.role, r.content) else []
                for r in rows
            ]
            flat = [t for texts in per for t in texts]
            vectors = encoder().encode(flat).astype(np.float16) if flat else None
            blobs, at = [], 0
            for r, texts in zip(rows, per, strict=True):
                blob = b"" if vectors is None else vectors[at : at + len(texts)].tobytes()
                blobs.append((r.id, blob))
                at += len(texts)
            with self.writer.begin() as conn:
                # A message deleted meanwhile: its vector must not be written (the foreign key
                # on PostgreSQL, nothing on SQLite), so only ids still present are kept.
                ids = [i for i, _ in blobs]
                present = {int(i) for (i,) in conn.execute(_PRESENT, {"ids": ids})}
                fresh = [{"id": i, "vector": b} for i, b in blobs if i in present]
                if fresh:
                    conn.execute(_REPLACED, {"ids": [row["id"] for row in fresh]})
                    conn.execute(_PUT, fresh)
            if not again:
                with _lock:
                    held.add(*_decode([(row["id"], row["vector"]) for row in fresh]))
            done += len(rows)
            if progress is not None:
                progress(done)
        if again:
            with _lock:  # what this process held were the vectors replaced: read them anew
                _held.pop(self._key, None)
        return done

    def _refresh(self, conn: Connection) -> _Held:
        held = self._checked(conn)
        rows = conn.execute(_NEWER, {"after": held.newest}).all()
        if rows:
            with _lock:
                held.add(*_decode([(int(i), bytes(b)) for i, b in rows]))
        return held

    def nearest(self, conn: Connection, query: str, filters: Filters, *later: Filters) -> list[Hit]:
        """Messages closest in meaning to ``query`` that pass ``filters``, closest first (a
        hit's score is the cosine), at most DEPTH (FILTERED_DEPTH with filters) looked at;
        then those that pass each of ``later`` in turn. The question is embedded and compared
        with every vector once, whatever the rounds."""
        held = self._refresh(conn)
        with _lock:
            ids, rows = held.matrix()
        if not len(ids):
            return []
        q = encoder().encode([query])[0]
        scores = rows @ q
        rounds = [(f, *f.sql()) for f in (filters, *later)]
        # Enough vectors for the depth in messages, a message having up to MAX_VECTORS.
        widest = max(FILTERED_DEPTH if w else DEPTH for _, w, _ in rounds)
        deepest = min(len(ids), MAX_VECTORS * widest)
        best = np.argpartition(-scores, deepest - 1)[:deepest]
        best = best[np.argsort(-scores[best])]
        # A message of several vectors is as near as its nearest.
        order = list(dict.fromkeys(int(ids[i]) for i in best))
        hits: list[Hit] = []
        for _, where, params in rounds:
            depth = FILTERED_DEPTH if where else DEPTH
            hits += self._looked_up(conn, q, order[:depth], where, params)
        return hits

    @staticmethod
    def _looked_up(
        conn: Connection, q: np.ndarray, wanted: list[int], where: str, params: dict[str, object]
    ) -> list[Hit]:
        """``wanted`` that pass the filters' SQL, best first, scored again on the vectors as
        stored: one held in memory may be of a text another program has since changed or
        deleted (its vector went with it)."""
        sql = text(
            "SELECT m.id, m.session_id, s.root_session_id, v.vector FROM messages AS m "
            "JOIN message_vectors AS v ON v.message_id = m.id "
            "JOIN sessions AS s ON s.id = m.session_id "
            f"WHERE m.id IN :wanted{where}"
        ).bindparams(bindparam("wanted", expanding=True))
        found = [r for r in conn.execute(sql, {**params, "wanted": wanted}) if r.vector]
        owners, stored = _decode([(int(r.id), bytes(r.vector)) for r in found])
        nearest: dict[int, float] = {}
        for owner, score in zip(owners.tolist(), (stored @ q).tolist(), strict=True):
            nearest[owner] = max(score, nearest.get(owner, -1.0))
        hits = [Hit(int(r.id), r.session_id, r.root_session_id, nearest[int(r.id)]) for r in found]
        hits.sort(key=lambda h: h.score, reverse=True)
        return hits
