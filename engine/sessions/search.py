"""``session_search``: real messages from past sessions, never summaries.

Modes:
- ``discover``: a query → up to ``limit`` conversations (3 by default, 10 at most), best first,
  each with the matching message, a snippet, the messages around it and the session's first
  and last messages. A conversation compressed into several sessions shows once; the caller's
  own conversation is left out.
- ``scroll``: the messages around an anchor message of one session, either direction.
- ``read``: a whole session (long ones: the first 20 and the last 10 messages).
- ``browse``: recent sessions, newest first, with filters.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections import defaultdict, namedtuple
from collections.abc import Callable, Collection
from datetime import UTC, datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal

from sqlalchemy import Connection, TextClause, bindparam, text
from sqlalchemy.exc import OperationalError

from engine.sessions.fts import full_text_for
from engine.sessions.fulltext import FORMS, Filters, Form, FullText, Hit
from engine.sessions.query import Query, parse_query
from engine.sessions.question import Question, read_question, span_first, without_names
from engine.sessions.snippet import snippet
from engine.sessions.store import SessionInfo, SessionStore
from engine.sessions.when import anchor_time

if TYPE_CHECKING:
    from engine.sessions.vectors import VectorIndex

Mode = Literal["discover", "scroll", "read", "browse"]

DEFAULT_LIMIT, MAX_LIMIT = 3, 10
DEFAULT_WINDOW, MAX_WINDOW = 5, 20
BOOKEND = 3
READ_HEAD, READ_TAIL = 20, 10
HITS_PER_SESSION = 8  # candidate messages fetched per wanted session, before de-duplication
# Semantic ranking (engine/sessions/vectors.py): how deep the word ranking goes for fusion, the
# fusion's rank offset, and the meaning ranking's weight against the words'. A small offset lets
# each ranking's first places count for much more than its tail: meaning's nearest conversation
# can come second to the words' first, not be drowned by twenty word matches (chosen on the
# development batches of tests/benchmarks/recall.py, docs/benchmarks.md).
FUSED_DEPTH, FUSION_K, SEMANTIC_WEIGHT = 20, 1, 0.7
# A conversation found by meaning alone must be at least this close (cosine): the nearest of
# a small archive may have nothing to do with the question.
MEANING_FLOOR = 0.2


class SearchError(ValueError):
    pass


def clamp(value: int | None, default: int, low: int, high: int) -> int:
    if value is None:
        return default
    return max(low, min(high, int(value)))


def parse_time(value: str | float | int | None) -> float | None:
    """ISO 8601 date/time or unix seconds → unix seconds."""
    if value is None or value == "":
        return None
    if isinstance(value, int | float):
        return float(value)
    try:
        return float(value)
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as exc:
        raise SearchError(f"not a date or time: {value!r} (use ISO 8601, e.g. 2026-11-30)") from exc
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


# What a result shows of its session: one session, and every session of a page of results.
_SESSION_COLUMNS = (
    "id AS session_id, title, source, started_at, ended_at, end_reason, "
    "parent_session_id, root_session_id, message_count"
)
_SESSION_FIELDS = f"SELECT {_SESSION_COLUMNS} FROM sessions"
_SESSION_SQL = text(f"{_SESSION_FIELDS} WHERE id = :sid")
_ANCHOR_SQL = text("SELECT session_id FROM messages WHERE id = :anchor")
_COLUMNS = "id, role, content, timestamp, tool_name, tool_calls"
_BEFORE_SQL = text(
    f"SELECT {_COLUMNS} FROM messages WHERE session_id = :sid AND id < :at "
    "ORDER BY id DESC LIMIT :n"
)
_FROM_SQL = text(
    f"SELECT {_COLUMNS} FROM messages WHERE session_id = :sid AND id >= :at ORDER BY id LIMIT :n"
)

# The parts of a result card: the window before the match, the match and the window after
# it, the session's first and last messages, and the window around a second match (condition,
# order and size of each; a size of 0 leaves a part out).
_CARD_PARTS = (
    (" AND id < :at{k}", "DESC", "w{k}"),
    (" AND id >= :at{k}", "ASC", "w1{k}"),
    ("", "ASC", "b"),
    ("", "DESC", "b"),
    (" AND id < :two{k}", "DESC", "v{k}"),
    (" AND id >= :two{k}", "ASC", "v1{k}"),
)


@lru_cache(maxsize=MAX_LIMIT)
def _cards_sql(cards: int) -> TextClause:
    """The messages of ``cards`` result cards in one statement, each row tagged with its card
    and part: one round trip instead of four per card."""
    return text(
        " UNION ALL ".join(
            f"SELECT {k} AS card, {part} AS part, p.* FROM (SELECT {_COLUMNS} FROM messages "
            f"WHERE session_id = :sid{k}{where.format(k=k)} ORDER BY id {order} "
            f"LIMIT :{size.format(k=k)}) AS p"
            for k in range(cards)
            for part, (where, order, size) in enumerate(_CARD_PARTS)
        )
    )


_SESSIONS_SQL = text(f"{_SESSION_FIELDS} WHERE id IN :ids").bindparams(
    bindparam("ids", expanding=True)
)


def _msg(row: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": row.id,
        "role": row.role,
        "content": row.content,
        "timestamp": row.timestamp,
    }
    if row.tool_name:
        out["tool_name"] = row.tool_name
    if row.tool_calls:
        out["tool_calls"] = json.loads(row.tool_calls)
    return out


def _before(conn: Connection, sid: str, at: int, n: int) -> list[Any]:
    """Up to ``n`` messages before id ``at``, oldest first."""
    return list(reversed(conn.execute(_BEFORE_SQL, {"sid": sid, "at": at, "n": n}).all()))


def _from(conn: Connection, sid: str, at: int, n: int) -> list[Any]:
    """Up to ``n`` messages from id ``at`` on."""
    return list(conn.execute(_FROM_SQL, {"sid": sid, "at": at, "n": n}).all())


# A scroll in one statement (each costs more in Python than in SQLite): the session, the
# session of the anchor, and the messages on both sides of the anchor, each row tagged with
# its side (NULL when the window is empty).
_SCROLL_SQL = text(
    f"SELECT s.*, w.* FROM (SELECT {_SESSION_COLUMNS}, "
    "(SELECT m.session_id FROM messages AS m WHERE m.id = :anchor) AS anchor_session "
    "FROM sessions WHERE id = :sid) AS s LEFT JOIN ("
    f"SELECT 0 AS part, p.* FROM (SELECT {_COLUMNS} FROM messages WHERE session_id = :sid "
    "AND id < :before ORDER BY id DESC LIMIT :n_before) AS p UNION ALL "
    f"SELECT 1 AS part, p.* FROM (SELECT {_COLUMNS} FROM messages WHERE session_id = :sid "
    "AND id >= :after ORDER BY id LIMIT :n_after) AS p) AS w ON 1 = 1"
)
_SESSION_KEYS = tuple(c.split(" AS ")[-1].strip() for c in _SESSION_COLUMNS.split(","))
_ScrollRow = namedtuple(  # type: ignore[misc]  # the columns of _SCROLL_SQL, in order
    "_ScrollRow", [*_SESSION_KEYS, "anchor_session", "part", *_COLUMNS.split(", ")]
)


def _scroll_rows(conn: Connection, params: dict[str, Any]) -> list[Any]:
    """_SCROLL_SQL's rows. On SQLite straight from the driver's cursor: building SQLAlchemy's
    result for a statement costs several times what SQLite spends answering it, and a single
    statement reads one snapshot without a transaction of its own."""
    if conn.dialect.name != "sqlite":
        return list(conn.execute(_SCROLL_SQL, params).all())
    driver = conn.connection.driver_connection
    assert driver is not None  # an open SQLAlchemy connection always has one
    cursor = driver.cursor()
    try:
        return list(map(_ScrollRow._make, cursor.execute(_SCROLL_SQL.text, params)))
    finally:
        cursor.close()


_CARD_FIELDS = {
    "title",
    "source",
    "started_at",
    "ended_at",
    "end_reason",
    "parent_session_id",
    "root_session_id",
    "message_count",
}


def _card_of(info: SessionInfo) -> dict[str, Any]:
    """The same fields as _SESSION_SQL selects."""
    return {"session_id": info.id, **info.model_dump(include=_CARD_FIELDS)}


def _session(conn: Connection, sid: str) -> dict[str, Any]:
    row = conn.execute(_SESSION_SQL, {"sid": sid}).mappings().first()
    if row is None:
        raise SearchError(f"no session {sid!r}")
    return dict(row)


def _fused(
    lexical: list[tuple[Hit, int | None, Form]],
    nearest: list[Hit],
    limit: int,
    topical: Collection[str],
) -> list[tuple[Hit, int | None, Form]]:
    """Reciprocal rank fusion of the word ranking and the meaning ranking, per conversation:
    ranks rather than scores, as BM25 sums and cosines are on scales of their own. A
    conversation found by both keeps the word ranking's message and its runner-up.

    Only the conversations in ``topical`` (the words found a word of the topic there, not
    only a name) are ranked by words. One that holds nothing but the name says nothing of
    what is asked; meaning orders it, and it comes after all the others when meaning does not
    find it."""
    score: dict[str, float] = defaultdict(float)
    entry: dict[str, tuple[Hit, int | None, Form]] = {}
    named_only = [item for item in lexical if item[0].root_session_id not in topical]
    on_topic = [item for item in lexical if item[0].root_session_id in topical]
    for rank, item in enumerate(on_topic):
        root = item[0].root_session_id
        score[root] += 1.0 / (FUSION_K + rank)
        entry.setdefault(root, item)
    for rank, hit in enumerate(nearest):
        if hit.root_session_id not in entry and hit.score < MEANING_FLOOR:
            continue  # nearest, but not near: no words and little meaning in common
        score[hit.root_session_id] += SEMANTIC_WEIGHT / (FUSION_K + rank)
        entry.setdefault(hit.root_session_id, (hit, None, "any"))
    order = sorted(score, key=lambda root: score[root], reverse=True)
    # Stable: the name-only conversations meaning did not reach keep the words' order.
    order += [i[0].root_session_id for i in named_only if i[0].root_session_id not in score]
    for item in named_only:
        entry.setdefault(item[0].root_session_id, item)
    return [entry[root] for root in order[:limit]]


def _day(moment: float | None) -> str | None:
    """A session's date as the card shows it."""
    if moment is None:
        return None
    return datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%d")


_NEWEST_SQL = text("SELECT timestamp FROM messages ORDER BY id DESC LIMIT 1")


class SessionSearch:
    def __init__(self, store: SessionStore, semantic: bool = False, embed: bool = True) -> None:
        """``semantic``: rank questions by meaning as well as by words (the semantic extra,
        engine/sessions/vectors.py; words only, with a note, when it is not installed).
        ``embed``: before each such search, embed the newest messages that have no vector yet
        (off for a read-only database)."""
        self.store = store
        self.semantic = semantic
        self.embed = embed

    def __call__(self, mode: Mode = "discover", **kwargs: Any) -> dict[str, Any]:
        handlers: dict[str, Callable[..., dict[str, Any]]] = {
            "discover": self.discover,
            "scroll": self.scroll,
            "read": self.read,
            "browse": self.browse,
        }
        handler = handlers.get(mode)
        if handler is None:
            raise SearchError(f"unknown mode {mode!r}: use discover, scroll, read or browse")
        return handler(**kwargs)

    def _filters(
        self,
        role: str | list[str] | None,
        source: str | list[str] | None,
        since: Any,
        until: Any,
        current_session_id: str | None,
        exclude_roles: tuple[str, ...] = (),
        exclude_sources: tuple[str, ...] = (),
    ) -> Filters:
        def as_tuple(value: str | list[str] | None) -> tuple[str, ...]:
            if value is None:
                return ()
            return (value,) if isinstance(value, str) else tuple(value)

        exclude_root = None
        if current_session_id:
            current = self.store.get_session(current_session_id)
            exclude_root = current.root_session_id if current else None
        return Filters(
            roles=as_tuple(role),
            sources=as_tuple(source),
            since=parse_time(since),
            until=parse_time(until),
            exclude_root=exclude_root,
            exclude_roles=() if role else exclude_roles,
            exclude_sources=() if source else exclude_sources,
        )

    def discover(
        self,
        query: str = "",
        limit: int | None = None,
        role: str | list[str] | None = None,
        source: str | list[str] | None = None,
        since: Any = None,
        until: Any = None,
        order: Literal["relevance", "newest", "oldest"] = "relevance",
        current_session_id: str | None = None,
        window: int | None = None,
        exclude_roles: tuple[str, ...] = (),
        exclude_sources: tuple[str, ...] = (),
    ) -> dict[str, Any]:
        """The best conversations for ``query``. ``exclude_roles``/``exclude_sources`` leave
        messages and sessions out unless ``role``/``source`` ask for them by name."""
        if order not in ("relevance", "newest", "oldest"):
            raise SearchError(f"unknown order {order!r}: use relevance, newest or oldest")
        limit = clamp(limit, DEFAULT_LIMIT, 1, MAX_LIMIT)
        window = clamp(window, DEFAULT_WINDOW, 0, MAX_WINDOW)
        filters = self._filters(
            role, source, since, until, current_session_id, exclude_roles, exclude_sources
        )
        parsed = parse_query(query)
        result: dict[str, Any] = {"mode": "discover", "query": query, "results": []}
        if parsed.empty:
            result["note"] = "the query has no searchable words"
            return result
        # Only a question is ranked by meaning: a keyword, a phrase or a substring search
        # does not wait for new messages to be embedded. Read as a question for that alone,
        # and only when meaning is asked for (whether it reads as one does not depend on the
        # anchor of its dates); the words read it again, with that anchor, in the snapshot.
        asks = (
            self.semantic
            and order == "relevance"
            and read_question(query, parsed, time.time()) is not None
        )
        vectors = self._vectors(result) if asks else None
        with self.store.engine.connect() as conn:
            fts = full_text_for(conn)
            question = None
            if order == "relevance":
                question = read_question(query, parsed, self._anchor(conn))
            chosen: list[tuple[Hit, int | None, Form]] = []
            if question is not None and question.keywords and len(question.concepts) > 1:
                # Keywords that stand together as typed in enough conversations: those are
                # the answer (a question's ranking would put them first anyway), at the cost
                # of a look-up in the pair index.
                phrased = self._candidates(fts, parsed, filters, limit, order, ("phrase",))
                if len(phrased) == limit:
                    chosen, question = phrased, None
            if question is not None:
                chosen = self._answers(conn, fts, question, filters, limit, vectors, query)
            answered = bool(chosen) and question is not None
            if not chosen:
                chosen = self._candidates(fts, parsed, filters, limit, order)
                if len(chosen) < limit and question is None and order == "relevance":
                    chosen += self._other_forms(conn, fts, query, parsed, filters, limit, chosen)
            form = chosen[0][2] if chosen else "substring"
            shown = question.query if question is not None and answered else parsed
            result["results"] = self._cards(conn, chosen, shown, window)
        result["matched_as"] = "question" if answered else form
        if answered and question is not None and question.span is not None:
            result["dates"] = [_day(question.span.since), _day(question.span.until)]
        return result

    def _vectors(self, result: dict[str, Any]) -> VectorIndex | None:
        """The semantic index, its newest messages embedded first; None (and a note in the
        result) when the extra is not installed."""
        from engine.sessions import meaning
        from engine.sessions.vectors import SEARCH_BUDGET, VectorIndex

        try:
            meaning.encoder()  # loaded once a process; a broken install says so here
        except meaning.MeaningUnavailable as exc:
            result["note"] = exc.message + "; ranked by words only"
            return None
        vectors = VectorIndex(self.store.engine, self.store.writer)
        if self.embed:
            # Busy or read-only: the search uses the vectors already written.
            with contextlib.suppress(OperationalError):
                vectors.catch_up(SEARCH_BUDGET)
        return vectors

    def _other_forms(
        self,
        conn: Connection,
        fts: FullText,
        query: str,
        parsed: Query,
        filters: Filters,
        limit: int,
        chosen: list[tuple[Hit, int | None, Form]],
    ) -> list[tuple[Hit, int | None, Form]]:
        """For a lone keyword found in fewer than ``limit`` conversations as typed: the
        conversations that have it in another form (stems, compounds), after those."""
        lone = read_question(query, parsed, None, keyword=True)
        if lone is None or conn.dialect.name != "sqlite":
            return []
        seen = {hit.root_session_id for hit, _, _ in chosen}
        more = [
            a
            for a in self._answers(conn, fts, lone, filters, limit)
            if a[0].root_session_id not in seen
        ]
        return more[: limit - len(chosen)]

    @staticmethod
    def _anchor(conn: Connection) -> float:
        """The "now" of relative dates in a query (when.anchor_time)."""
        newest = conn.execute(_NEWEST_SQL).scalar()
        return anchor_time(None if newest is None else float(newest), time.time())

    def _answers(
        self,
        conn: Connection,
        fts: FullText,
        question: Question,
        filters: Filters,
        limit: int,
        vectors: VectorIndex | None = None,
        query: str = "",
    ) -> list[tuple[Hit, int | None, Form]]:
        """A question's best conversations, ranked on their text, reply context and whole
        sessions (recall.py; on PostgreSQL recall_postgres.py), the date span first; with
        ``vectors``, fused with the conversations nearest in meaning."""
        depth = max(limit, FUSED_DEPTH) if vectors is not None else limit
        if conn.dialect.name == "sqlite":
            from engine.sessions.fts_sqlite import SqliteFullText
            from engine.sessions.recall import Recall

            assert isinstance(fts, SqliteFullText)
            ranker: Recall = Recall(fts)
        else:
            from engine.sessions.recall_postgres import PostgresRecall

            ranker = PostgresRecall(conn)
        ranked = ranker.rank(question, filters, depth)
        lexical: list[tuple[Hit, int | None, Form]] = [(r.hit, r.second, "any") for r in ranked]
        if vectors is None:
            return lexical
        # Of a participant, meaning is asked without the name and answered in conversations
        # that have it (question.without_names).
        names = ranker.speakers(question)
        meant = without_names(query, [c.term.raw for c in names])
        nearest = ranker.said_by(names, self._nearest(conn, vectors, meant, question, filters))
        topical = {r.hit.root_session_id for r in ranked if r.topical}
        return _fused(lexical, nearest, limit, topical)

    @staticmethod
    def _nearest(
        conn: Connection, vectors: VectorIndex, query: str, question: Question, filters: Filters
    ) -> list[Hit]:
        """The best message of each conversation by meaning, the question's span first."""
        best: dict[str, Hit] = {}
        for hit in vectors.nearest(conn, query, *span_first(question, filters)):
            best.setdefault(hit.root_session_id, hit)
        return list(best.values())

    @staticmethod
    def _candidates(
        fts: FullText,
        query: Query,
        filters: Filters,
        limit: int,
        order: Any,
        forms: tuple[Form, ...] = FORMS,
    ) -> list[tuple[Hit, int | None, Form]]:
        """One hit per conversation (lineage root), best first: the hits of the most precise
        form of the query that has any, then (for a query without quotes, exclusions or
        prefixes, ranked by relevance), while there are fewer than ``limit``, those of the
        looser word forms. Substrings are the last resort, only when no word form has a hit."""
        want = limit * HITS_PER_SESSION
        chosen: dict[str, tuple[Hit, int | None, Form]] = {}
        # Quotes, exclusions and prefixes ask for precision: the first form with hits is the
        # answer, as typed.
        fill = not (query.phrases or query.excluded or any(t.prefix for t in query.terms))
        for form in forms:
            if form == "substring" and chosen:
                break
            hits = fts.hits(query, form, filters, want, order)
            for hit in hits or ():
                if hit.root_session_id not in chosen:
                    chosen[hit.root_session_id] = (hit, None, form)
                if len(chosen) == limit:
                    return list(chosen.values())
            if chosen and (order != "relevance" or not fill):
                break  # by time: the most precise form's matches, in their order
        return list(chosen.values())

    @staticmethod
    def _cards(
        conn: Connection,
        chosen: list[tuple[Hit, int | None, Form]],
        query: Query,
        window: int,
    ) -> list[dict[str, Any]]:
        if not chosen:
            return []
        params: dict[str, Any] = {"b": BOOKEND}
        for k, (hit, second, _form) in enumerate(chosen):
            params.update({f"sid{k}": hit.session_id, f"at{k}": hit.message_id})
            # A second match away from the first: half the window around each, so the card
            # keeps today's size.
            far = second is not None and abs(second - hit.message_id) > window
            half = max(1, window // 2) if far and window else window
            params.update({f"w{k}": half, f"w1{k}": half + 1})
            params.update({f"two{k}": second if far else hit.message_id})
            params.update({f"v{k}": half if far else 0, f"v1{k}": half + 1 if far else 0})
        parts: dict[tuple[int, int], list[Any]] = defaultdict(list)
        for row in conn.execute(_cards_sql(len(chosen)), params):
            parts[row.card, row.part].append(row)
        ids = sorted({hit.session_id for hit, _, _ in chosen})
        rows = conn.execute(_SESSIONS_SQL, {"ids": ids}).mappings()
        sessions = {r["session_id"]: dict(r) for r in rows}
        cards = []
        for k, (hit, second, form) in enumerate(chosen):
            # Each part in id order: a UNION ALL promises no order of its own.
            before, after, first, last, near_before, near_after = (
                sorted(parts[k, part], key=lambda m: m.id) for part in range(len(_CARD_PARTS))
            )
            merged = {m.id: m for m in before + after + near_before + near_after}
            context = [merged[i] for i in sorted(merged)]
            matched = next((m for m in context if m.id == hit.message_id), None)
            if matched is None or hit.session_id not in sessions:
                continue  # deleted since it was found
            shown = {m.id for m in context}
            head = [m for m in first if m.id not in shown]
            shown |= {m.id for m in head}
            tail = [m for m in last if m.id not in shown]
            info = sessions[hit.session_id]
            card = {
                **info,
                "date": _day(info["started_at"]),
                "match_message_id": hit.message_id,
                "snippet": snippet(matched.content, query, form),
                "messages": [_msg(m) for m in context],
                "first_messages": [_msg(m) for m in head],
                "last_messages": [_msg(m) for m in tail],
            }
            if second is not None and second in shown:
                card["second_match_message_id"] = second
            cards.append(card)
        return cards

    def scroll(
        self,
        session_id: str = "",
        anchor_id: int | None = None,
        direction: Literal["around", "forward", "backward"] = "around",
        window: int | None = None,
    ) -> dict[str, Any]:
        window = clamp(window, DEFAULT_WINDOW, 1, MAX_WINDOW)
        if direction not in ("around", "forward", "backward"):
            raise SearchError(f"unknown direction {direction!r}: use around, forward or backward")
        given = anchor_id is not None
        if anchor_id is None:
            anchor_id = 0 if direction != "backward" else 2**62
        # One message more than shown on each side tells whether there is more that way;
        # moving one way, a single message the other way tells whether there is more there.
        if direction == "around":
            sides = (anchor_id, window + 1, anchor_id, window + 2)
        elif direction == "forward":
            sides = (anchor_id + 1, 1, anchor_id + 1, window + 1)
        else:
            sides = (anchor_id, window + 1, anchor_id, 1)
        params: dict[str, Any] = dict(
            zip(("before", "n_before", "after", "n_after"), sides, strict=True)
        )
        params.update(sid=session_id, anchor=anchor_id if given else None)
        with self.store.engine.connect() as conn:
            rows = _scroll_rows(conn, params)
            owner = rows[0].anchor_session if rows else None
            if given and not rows:
                owner = conn.execute(_ANCHOR_SQL, {"anchor": anchor_id}).scalar()
        if given:
            # A made-up or mistyped anchor must fail loudly: messages of some other place
            # coming back would pass for the ones asked about.
            if owner is None:
                raise SearchError(f"no message {anchor_id} (anchor_id comes from a result)")
            if owner != session_id:
                raise SearchError(
                    f"message {anchor_id} belongs to session {owner}, not {session_id}"
                )
        if not rows:
            raise SearchError(f"no session {session_id!r}")
        info = {key: getattr(rows[0], key) for key in _SESSION_KEYS}
        # Each side in id order: a UNION ALL promises no order of its own.
        before = sorted((r for r in rows if r.part == 0), key=lambda m: m.id)
        after = sorted((r for r in rows if r.part == 1), key=lambda m: m.id)
        more_before, more_after = bool(before), bool(after)
        if direction != "forward":
            more_before = len(before) > window
            before = before[1:] if more_before else before
        else:
            before = []
        if direction != "backward":
            shown = window + 1 if direction == "around" else window
            more_after = len(after) > shown
            after = after[:shown]
        else:
            after = []
        messages = before + after
        return {
            "mode": "scroll",
            **info,
            "anchor_id": anchor_id,
            "messages": [_msg(m) for m in messages],
            "has_earlier": bool(messages) and more_before,
            "has_later": bool(messages) and more_after,
        }

    def read(self, session_id: str = "") -> dict[str, Any]:
        with self.store.engine.connect() as conn:
            info = _session(conn, session_id)
            head = _from(conn, session_id, 0, READ_HEAD + READ_TAIL + 1)
            tail: list[Any] = []
            if len(head) > READ_HEAD + READ_TAIL:
                head = head[:READ_HEAD]
                tail = _before(conn, session_id, 2**62, READ_TAIL)
        omitted = max(0, info["message_count"] - len(head) - len(tail)) if tail else 0
        return {
            "mode": "read",
            **info,
            "messages": [_msg(m) for m in head],
            "omitted": omitted,
            "last_messages": [_msg(m) for m in tail],
        }

    def browse(
        self, limit: int | None = None, offset: int = 0, source: str | None = None
    ) -> dict[str, Any]:
        limit = clamp(limit, 10, 1, 50)
        sessions = self.store.list_sessions(limit=limit, offset=max(0, offset), source=source)
        return {"mode": "browse", "sessions": [_card_of(s) for s in sessions]}
