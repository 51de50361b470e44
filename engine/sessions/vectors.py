"""Message vectors for semantic search: filling ``message_vectors`` and finding the nearest.

Off by default (``sessions.semantic`` in config.yaml): it needs the ``semantic`` extra
(engine/sessions/meaning.py). A message is embedded after it is stored, never inside its write:
``catch_up`` embeds what has no vector yet, newest first, in chunks of one transaction each,
either all of it (``cairn sessions embed``) or a few at a time before a search, so that a
conversation's latest turns are findable by meaning at once while an imported archive is left
to the command.

They are stored as float16 (768 bytes a message). Each process keeps those it has read in
memory as float32 (1.5 KB a message: 154 MB for 10^5 messages), as a product over float16 is
ten times slower in NumPy, and reads only the rows past the newest it holds on each search; a
nearest search is one product over them, and its best few hundred are looked up with the
search's filters, and scored again on their stored vectors, in one statement.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from sqlalchemy import Connection, Engine, bindparam, text

from engine.sessions.fulltext import Filters, Hit
from engine.sessions.meaning import DIMENSIONS, encoder

EMBEDDED_ROLES = ("user", "assistant")
SHORT_REPLY, CONTEXT_CHARS = 200, 300  # as the reply contexts of the word index
CHUNK = 256  # messages embedded per transaction: about a second of CPU
SEARCH_BUDGET = 64  # messages a search embeds first, newest first (about a quarter second)
DEPTH, FILTERED_DEPTH = 400, 4000  # nearest messages looked up, without and with filters

_MISSING = text(
    "SELECT m.id, m.role, m.content, (SELECT p.content FROM messages AS p "
    "WHERE p.session_id = m.session_id AND p.id < m.id ORDER BY p.id DESC LIMIT 1) AS previous "
    "FROM messages AS m WHERE m.id > :floor AND NOT EXISTS "
    "(SELECT 1 FROM message_vectors AS v WHERE v.message_id = m.id) ORDER BY m.id DESC LIMIT :n"
)
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
        return blob is not None and bytes(blob) == self.witness[1]

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
    """Rows of (id, blob) → ids and float32 vectors, leaving out the empty ones."""
    full = [(i, b) for i, b in blobs if b]
    ids = np.fromiter((i for i, _ in full), np.int64, len(full))
    if not full:
        return ids, np.zeros((0, DIMENSIONS), np.float32)
    rows = np.frombuffer(b"".join(b for _, b in full), np.float16).reshape(len(full), DIMENSIONS)
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
        self, limit: int | None = None, progress: Callable[[int], None] | None = None
    ) -> int:
        """Embed up to ``limit`` messages that have no vector yet (all when None), newest
        first, one transaction per chunk. Returns how many were embedded."""
        done = 0
        while limit is None or done < limit:
            want = CHUNK if limit is None else min(CHUNK, limit - done)
            with self.engine.connect() as conn:
                held = self._checked(conn)
                # A whole catch-up looks at every message: one another program edited below
                # the floor has lost its vector (migration 0008) and is embedded again.
                floor = held.complete_below if limit is not None else 0
                rows = conn.execute(_MISSING, {"floor": floor, "n": want}).all()
                if not rows:
                    newest = int(conn.execute(_NEWEST).scalar() or 0)
                    held.complete_below = max(held.complete_below, newest)
                    break
            texts = [_text(r.content, r.previous) for r in rows if _embeddable(r.role, r.content)]
            vectors = iter(encoder().encode(texts).astype(np.float16))
            blobs = [
                (r.id, next(vectors).tobytes() if _embeddable(r.role, r.content) else b"")
                for r in rows
            ]
            with self.writer.begin() as conn:
                # A message deleted meanwhile: its vector must not be written (the foreign key
                # on PostgreSQL, nothing on SQLite), so only ids still present are kept.
                ids = [i for i, _ in blobs]
                present = {int(i) for (i,) in conn.execute(_PRESENT, {"ids": ids})}
                fresh = [{"id": i, "vector": b} for i, b in blobs if i in present]
                if fresh:
                    conn.execute(_REPLACED, {"ids": [row["id"] for row in fresh]})
                    conn.execute(_PUT, fresh)
            with _lock:
                held.add(*_decode([(row["id"], row["vector"]) for row in fresh]))
            done += len(rows)
            if progress is not None:
                progress(done)
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
        deepest = min(len(ids), max(FILTERED_DEPTH if w else DEPTH for _, w, _ in rounds))
        best = np.argpartition(-scores, deepest - 1)[:deepest]
        best = best[np.argsort(-scores[best])]
        hits: list[Hit] = []
        for _, where, params in rounds:
            depth = FILTERED_DEPTH if where else DEPTH
            hits += self._looked_up(conn, q, [int(ids[i]) for i in best[:depth]], where, params)
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
        _, stored = _decode([(int(r.id), bytes(r.vector)) for r in found])
        hits = [
            Hit(int(r.id), r.session_id, r.root_session_id, float(score))
            for r, score in zip(found, stored @ q, strict=True)
        ]
        hits.sort(key=lambda h: h.score, reverse=True)
        return hits
