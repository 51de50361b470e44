"""The journey: what memory held at every recorded moment, and how each chunk got there.

Built from the change history (``memory_events``), never from file times: every state change
carries the whole file text after it, so replaying the committing events in order gives the
exact entries of each file at each moment. The replay also follows each *chunk* (one entry
through its edits) so a chunk knows when it was learned, when it last changed, and which
session taught it.

Positions: the timeline has ``len(events) + 1`` positions. Position ``p`` means "after the
first ``p`` events"; position 0 is before the history began and ``len(events)`` is now.

Node ids follow the reference format ``memory:<source>:<index>`` (source ``memory`` or
``user``; upstream's ``profile`` is read as ``user``; index is 0-based, the order in the file).
An index alone cannot tell whether memory changed since the id was shown, so the ids Cairn
prints carry a version, a short hash of the entry's text: ``memory:memory:3#a1b2c3``. A
versioned id whose entry changed or moved is refused as stale, with where that text is now.

Edits and deletes go through the memory store's write path (lock, scanner, limits, approval
gate, history) with a precondition checked under the lock: the exact text the id names must
still be in the file, so a change that raced in between can never redirect the write to a
neighbouring entry.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import re
from bisect import bisect_right
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from difflib import SequenceMatcher
from typing import Any, Literal

from pydantic import BaseModel, Field, PrivateAttr

from engine.memory.entries import Target, parse, render
from engine.memory.errors import MemoryToolError
from engine.memory.history import COMMITTING_ACTIONS, MemoryEvent
from engine.memory.operations import parse_operations, preview
from engine.memory.service import MemoryService, describe

VERSION_CHARS = 6
NODE_ID = re.compile(r"^memory:(memory|user|profile):(\d+)(?:#([0-9a-fA-F]{4,64}))?$")
# Below this similarity an entry that vanished and one that appeared in the same change are
# two chunks (a removal and an addition), not one chunk edited.
SAME_CHUNK_RATIO = 0.5
# Pairing by similarity is quadratic in the size of one changed block; a rewrite of the whole
# file by hand is treated as removals and additions beyond this.
MAX_PAIRING = 2_500
# Chunks sharing a term linked to more than this many chunks (or this share of them) are not
# linked through it: such a term ("user", "project") says nothing about either chunk.
TERM_MAX_CHUNKS = 12
TERM_MAX_SHARE = 0.05
EDGES_PER_CHUNK = 4

Action = str
EdgeKind = Literal["session", "terms"]


# -- ids ---------------------------------------------------------------------------------------


def version_of(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:VERSION_CHARS]


def node_id(target: Target | str, index: int, text: str | None = None) -> str:
    """``memory:<target>:<index>``, with ``#<version>`` when ``text`` is given."""
    base = f"memory:{Target(target).value}:{index}"
    return base if text is None else f"{base}#{version_of(text)}"


class NodeRef(BaseModel):
    target: Target
    index: int
    version: str | None = None

    @property
    def base(self) -> str:
        return node_id(self.target, self.index)


def parse_node_id(raw: str) -> NodeRef:
    match = NODE_ID.match(raw.strip())
    if match is None:
        raise MemoryToolError(
            "invalid",
            f"{raw!r} is not a memory id; ids look like memory:memory:3#a1b2c3 or "
            "memory:user:0 (see `cairn journey list`)",
        )
    source, index, version = match.groups()
    target = Target.USER if source in ("user", "profile") else Target.MEMORY
    return NodeRef(target=target, index=int(index), version=version.lower() if version else None)


# -- terms shared between chunks --------------------------------------------------------------

_TOKEN = re.compile(r"[~\w][\w.+#/:-]*[\w+#]|\w")
# Common words that would link everything to everything; written for this purpose, short.
_STOP = frozenset(
    """
    about above after again also always and any are aren't because been before being below both
    but can cannot could did does doing done down during each every few for from further get
    gets got had has have having her here hers him his how into its itself just keep keeps
    least like likes made make makes more most much must never not now off often once one only
    other our ours out over own prefer prefers same she should since some such than that the
    their theirs them then there these they thing things this those through too two under until
    upon use used user users uses using usually very want wants was were what when where which
    while who whom why will with within without would you your yours
    """.split()  # noqa: SIM905 - a word list reads better as words
)


@functools.lru_cache(maxsize=65_536)
def terms_of(text: str) -> frozenset[str]:
    """Words worth linking chunks by: lower-cased, three characters or more, common words out.

    Identifiers keep their inner punctuation (``v2.14``, ``~/.ssh``, ``docker-compose``), so
    names and versions link exactly.
    """
    found = set()
    for token in _TOKEN.findall(text):
        word = token.lower().strip(".:/-")
        if len(word) < 3 or word in _STOP or word.isdigit():
            continue
        found.add(word)
    return frozenset(found)


# -- the journey's data -----------------------------------------------------------------------


class ChunkVersion(BaseModel):
    """One text a chunk held, from ``position`` on."""

    position: int
    event_id: int | None
    at: float | None
    action: Action
    text: str


class Chunk(BaseModel):
    """One entry followed through its edits, from the change that added it to the one that
    removed it (if any)."""

    key: str  # c<n>: replay order, the same on every build of the same history
    target: Target
    versions: list[ChunkVersion]
    born: int  # first timeline position where the chunk exists
    died: int | None = None  # first position where it no longer does
    learned_at: float | None = None  # None: in the file before the history began
    changed_at: float | None = None
    removed_at: float | None = None
    origin: str | None = None
    session_id: str | None = None  # the session it was learned in
    session_ids: list[str] = Field(default_factory=list)  # every session that touched it
    index: int | None = None  # position in the file now; None once removed
    node_id: str | None = None  # versioned memory id, while the chunk is in memory

    @property
    def text(self) -> str:
        """The newest text (the last one before removal, for a removed chunk)."""
        return self.versions[-1].text

    @property
    def alive(self) -> bool:
        return self.died is None

    def text_at(self, position: int) -> str | None:
        if position < self.born or (self.died is not None and position >= self.died):
            return None
        # Newest first: most chunks have one to three versions, and playback asks often.
        for version in reversed(self.versions):
            if version.position <= position:
                return version.text
        return self.versions[0].text


class SessionNode(BaseModel):
    id: str
    title: str | None = None
    started_at: float | None = None
    source: str | None = None


class Edge(BaseModel):
    source: str  # chunk key
    target: str  # chunk key, or a session id for kind "session"
    kind: EdgeKind
    weight: float = 1.0
    terms: list[str] = Field(default_factory=list)


class TimelineEvent(BaseModel):
    """One recorded event, with what it changed."""

    id: int
    position: int  # the timeline position this event leads to (its index + 1)
    at: float
    target: Target
    action: Action
    origin: str
    session_id: str | None = None
    pending_id: str | None = None
    commits: bool  # False for staged and rejected writes: memory did not change
    summary: str
    added: list[str] = Field(default_factory=list)
    removed: list[str] = Field(default_factory=list)
    changed: list[tuple[str, str]] = Field(default_factory=list)  # (before, after)
    chunks: list[str] = Field(default_factory=list)  # keys of the chunks it touched
    gap: bool = False  # the file had changed unrecorded before this event
    order: list[str] | None = None  # keys of the target's chunks after it, in file order


class Journey(BaseModel):
    chunks: list[Chunk]
    sessions: list[SessionNode]
    edges: list[Edge]
    events: list[TimelineEvent]
    history_error: str | None = None

    _by_key: dict[str, Chunk] = PrivateAttr(default_factory=dict)
    _by_id: dict[str, Chunk] = PrivateAttr(default_factory=dict)
    _commits: dict[Target, tuple[list[int], list[list[str]]]] = PrivateAttr(default_factory=dict)
    _now: dict[Target, list[str]] = PrivateAttr(default_factory=dict)

    def model_post_init(self, _context: Any) -> None:
        self._by_key = {c.key: c for c in self.chunks}
        self._by_id = {c.node_id.split("#")[0]: c for c in self.chunks if c.node_id}
        # Per target, the positions of the events that changed it, for state_at's bisect.
        self._commits = {}
        for target in Target:
            marks, orders = [], []
            for event in self.events:
                if event.target is target and event.order is not None:
                    marks.append(event.position)
                    orders.append(event.order)
            self._commits[target] = (marks, orders)
        self._now = {t: [] for t in Target}
        for chunk in sorted(
            (c for c in self.chunks if c.index is not None), key=lambda c: c.index or 0
        ):
            self._now[chunk.target].append(chunk.key)

    @property
    def now(self) -> int:
        return len(self.events)

    def chunk(self, key: str) -> Chunk | None:
        return self._by_key.get(key)

    def current(self, target: Target | None = None) -> list[Chunk]:
        """Chunks in memory now, in file order (``memory`` before ``user``)."""
        targets = [target] if target else list(Target)
        return [self._by_key[k] for t in targets for k in self._now[t]]

    def find(self, raw_id: str) -> Chunk | None:
        """The chunk in memory now under ``raw_id``'s index (its version is not checked)."""
        return self._by_id.get(parse_node_id(raw_id).base)

    def order_at(self, target: Target, position: int) -> list[str]:
        """Keys of ``target``'s chunks at ``position``, in file order."""
        if position >= self.now:
            return list(self._now[target])
        marks, orders = self._commits[target]
        at = bisect_right(marks, position) - 1
        # Before the target's first recorded change the file was empty: the history starts
        # with the file's first content, an external edit if Cairn did not write it.
        return list(orders[at]) if at >= 0 else []

    def entries_at(self, target: Target, position: int) -> list[str]:
        """``target``'s entries at ``position``, as they were on disk then."""
        texts = [self._by_key[k].text_at(position) for k in self.order_at(target, position)]
        return [t for t in texts if t is not None]

    def state_at(self, position: int) -> dict[str, list[str]]:
        """Each file's entries at ``position``, as they were on disk then."""
        return {target.value: self.entries_at(target, position) for target in Target}

    def position_of(self, event_id: int) -> int:
        """The position right after event ``event_id``."""
        for event in self.events:
            if event.id == event_id:
                return event.position
        raise KeyError(event_id)

    def position_at(self, when: float) -> int:
        """The position after every event recorded at or before ``when`` (unix seconds)."""
        return bisect_right([e.at for e in self.events], when)


# -- building it from the history --------------------------------------------------------------


class _Replay:
    """Follows chunks through committing events; builds Chunk records as it goes.

    Records are made with ``model_construct``: every value comes from the history already
    validated, and validation was a fifth of the replay's time at 10,000 events.
    """

    def __init__(self) -> None:
        self.chunks: list[Chunk] = []
        self.live: dict[Target, list[Chunk]] = {t: [] for t in Target}
        self.texts: dict[Target, list[str]] = {t: [] for t in Target}

    def new(
        self, target: Target, text: str, position: int, event: MemoryEvent | None, action: str
    ) -> Chunk:
        at = event.at if event else None
        chunk = Chunk.model_construct(
            key=f"c{len(self.chunks)}",
            target=target,
            versions=[_version(position, event, action, text)],
            born=position,
            died=None,
            learned_at=at,
            changed_at=at,
            removed_at=None,
            origin=event.origin if event else None,
            session_id=event.session_id if event else None,
            session_ids=[event.session_id] if event and event.session_id else [],
            index=None,
            node_id=None,
        )
        self.chunks.append(chunk)
        return chunk

    def apply(
        self,
        target: Target,
        after: list[str],
        position: int,
        event: MemoryEvent | None,
        action: str,
        hint: tuple[str | None, str | None] = (None, None),
    ) -> tuple[list[Chunk], list[Chunk], list[tuple[Chunk, str]], list[Chunk]]:
        """Move ``target`` to ``after``; the (added, removed, changed (chunk, old text),
        resulting order) of the change."""
        before = self.live[target]
        texts = self.texts[target]
        added: list[Chunk] = []
        removed: list[Chunk] = []
        changed: list[tuple[Chunk, str]] = []
        # Most events touch one entry: match the unchanged head and tail directly and diff
        # only what lies between.
        head = 0
        limit = min(len(texts), len(after))
        while head < limit and texts[head] == after[head]:
            head += 1
        tail = 0
        while tail < limit - head and texts[-1 - tail] == after[-1 - tail]:
            tail += 1
        result: list[Chunk | None] = [None] * len(after)
        result[:head] = before[:head]
        if tail:
            result[len(after) - tail :] = before[len(before) - tail :]
        gone: list[int] = []
        new: list[int] = []
        middle_old, middle_new = texts[head : len(texts) - tail], after[head : len(after) - tail]
        if len(middle_old) > 1 and len(middle_new) > 1:
            matcher = SequenceMatcher(None, middle_old, middle_new, autojunk=False)
            for tag, i1, i2, j1, j2 in matcher.get_opcodes():
                if tag == "equal":
                    for offset in range(i2 - i1):
                        result[head + j1 + offset] = before[head + i1 + offset]
                else:
                    gone += range(head + i1, head + i2)
                    new += range(head + j1, head + j2)
        else:
            gone = list(range(head, len(texts) - tail))
            new = list(range(head, len(after) - tail))
        kept = set(range(head)) | set(range(len(before) - tail, len(before)))
        kept |= {i for i in range(len(before)) if i not in gone}
        for i, j in _pair(texts, after, gone, new, hint):
            chunk = before[i]
            result[j] = chunk
            kept.add(i)
            if texts[i] != after[j]:
                changed.append((chunk, texts[i]))
                self._revise(chunk, after[j], position, event, action)
        for i, chunk in enumerate(before):
            if i not in kept:
                chunk.died = position
                chunk.removed_at = event.at if event else None
                removed.append(chunk)
        for j, chunk in enumerate(result):
            if chunk is None:
                result[j] = self.new(target, after[j], position, event, action)
                added.append(result[j])  # type: ignore[arg-type]
        order = [c for c in result if c is not None]
        self.live[target] = order
        self.texts[target] = list(after)
        return added, removed, changed, order

    @staticmethod
    def _revise(
        chunk: Chunk, text: str, position: int, event: MemoryEvent | None, action: str
    ) -> None:
        chunk.versions.append(_version(position, event, action, text))
        if event is not None:
            chunk.changed_at = event.at
        _touch(chunk, event)


def _version(position: int, event: MemoryEvent | None, action: str, text: str) -> ChunkVersion:
    return ChunkVersion.model_construct(
        position=position,
        event_id=event.id if event else None,
        at=event.at if event else None,
        action=action,
        text=text,
    )


def _touch(chunk: Chunk, event: MemoryEvent | None) -> None:
    if event is not None and event.session_id and event.session_id not in chunk.session_ids:
        chunk.session_ids.append(event.session_id)


def _pair(
    before: Sequence[str],
    after: Sequence[str],
    gone: list[int],
    new: list[int],
    hint: tuple[str | None, str | None],
) -> list[tuple[int, int]]:
    """Which vanished entries became which new ones: identical text first (a move), then the
    event's own record of a one-entry replace, then the most similar pairs."""
    pairs: list[tuple[int, int]] = []
    free_new = list(new)
    for i in list(gone):
        if before[i] in (after[j] for j in free_new):
            j = next(j for j in free_new if after[j] == before[i])
            pairs.append((i, j))
            free_new.remove(j)
            gone.remove(i)
    old_text, new_text = hint
    if old_text is not None and new_text is not None:
        i = next((i for i in gone if before[i] == old_text), None)
        j = next((j for j in free_new if after[j] == new_text), None)
        if i is not None and j is not None:
            pairs.append((i, j))
            gone.remove(i)
            free_new.remove(j)
    if gone and free_new and len(gone) * len(free_new) <= MAX_PAIRING:
        scored = []
        for i in gone:
            for j in free_new:
                matcher = SequenceMatcher(None, before[i], after[j], autojunk=False)
                if matcher.real_quick_ratio() < SAME_CHUNK_RATIO:
                    continue
                if matcher.quick_ratio() < SAME_CHUNK_RATIO:
                    continue
                ratio = matcher.ratio()
                if ratio >= SAME_CHUNK_RATIO:
                    scored.append((-ratio, abs(i - j), i, j))
        taken_i: set[int] = set()
        taken_j: set[int] = set()
        for _score, _dist, i, j in sorted(scored):
            if i not in taken_i and j not in taken_j:
                pairs.append((i, j))
                taken_i.add(i)
                taken_j.add(j)
    return pairs


def _summary(event: MemoryEvent, added: list[str], removed: list[str], changed: int) -> str:
    if event.detail.get("summary"):
        return str(event.detail["summary"])
    ops = event.detail.get("operations")
    if ops:
        try:
            return describe(parse_operations(ops))
        except MemoryToolError:
            pass
    parts = []
    if added:
        parts.append(f"{len(added)} added")
    if changed:
        parts.append(f"{changed} changed")
    if removed:
        parts.append(f"{len(removed)} removed")
    return ", ".join(parts) or "no change to the entries"


def _proposed(event: MemoryEvent) -> tuple[list[str], list[str], list[tuple[str, str]]]:
    """What a staged or rejected write would have done, from its recorded operations."""
    added: list[str] = []
    removed: list[str] = []
    changed: list[tuple[str, str]] = []
    for op in event.detail.get("operations") or []:
        if not isinstance(op, dict):
            continue
        action = op.get("action")
        if action == "add":
            added.append(str(op.get("content", "")))
        elif action == "replace":
            changed.append((str(op.get("old_text", "")), str(op.get("content", ""))))
        elif action == "remove":
            removed.append(str(op.get("old_text", "")))
    return added, removed, changed


class JourneyBuilder:
    """Replays the history incrementally: the history only grows, so a builder kept between
    loads replays only the events recorded since the last one.

    :meth:`journey` returns a snapshot that shares nothing mutable with the builder, so one
    thread may read it while another extends the builder.
    """

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self._replay = _Replay()
        self._timeline: list[TimelineEvent] = []
        self._edges: dict[tuple[str, str], Edge] = {}  # immutable, so shared by snapshots
        self.last_id = 0

    @property
    def now(self) -> int:
        return len(self._timeline)

    @property
    def session_ids(self) -> set[str]:
        return {sid for event in self._timeline if (sid := event.session_id)}

    def extend(self, events: Iterable[MemoryEvent]) -> None:
        """Replay ``events`` newer than the last one seen (older ones are ignored)."""
        for event in sorted((e for e in events if e.id > self.last_id), key=lambda e: e.id):
            self._timeline.append(self._step(event, len(self._timeline) + 1))
            self.last_id = event.id

    def _step(self, event: MemoryEvent, position: int) -> TimelineEvent:
        replay = self._replay
        target = Target(event.target)
        if not (event.action in COMMITTING_ACTIONS and event.state_after is not None):
            add, rem, chg = _proposed(event)
            return TimelineEvent.model_construct(
                id=event.id,
                position=position,
                at=event.at,
                target=target,
                action=event.action,
                origin=event.origin,
                session_id=event.session_id,
                pending_id=event.pending_id,
                commits=False,
                summary=_summary(event, [], [], 0),
                added=add,
                removed=rem,
                changed=chg,
                chunks=[],
                gap=False,
                order=None,
            )
        # Cairn records file texts in canonical form, so comparing texts is comparing entries.
        gap = event.state_before is not None and event.state_before != render(replay.texts[target])
        after = parse(event.state_after or "")
        hint = (event.entry_before, event.entry_after)
        added, removed, changed, order = replay.apply(
            target, after, position, event, event.action, hint
        )
        added_texts = [c.text for c in added]
        removed_texts = [c.text for c in removed]
        return TimelineEvent.model_construct(
            id=event.id,
            position=position,
            at=event.at,
            target=target,
            action=event.action,
            origin=event.origin,
            session_id=event.session_id,
            pending_id=event.pending_id,
            commits=True,
            summary=_summary(event, added_texts, removed_texts, len(changed)),
            added=added_texts,
            removed=removed_texts,
            changed=[(old, c.text) for c, old in changed],
            chunks=[c.key for c in added + removed] + [c.key for c, _ in changed],
            gap=gap,
            order=[c.key for c in order],
        )

    def journey(
        self,
        current: dict[Target, list[str]] | None = None,
        sessions: dict[str, SessionNode] | None = None,
        *,
        history_error: str | None = None,
    ) -> Journey:
        """A snapshot: the replay so far, plus ``current`` (what the files hold now; an edit the
        history has not noticed yet is applied as a last, unrecorded change, so "now" is
        always the files) and ``sessions`` (titles and times of the sessions chunks name)."""
        source = self._replay
        # Copies of the chunks (the replay keeps changing its own); events never change.
        copies = {
            id(c): c.model_copy(
                update={"versions": list(c.versions), "session_ids": list(c.session_ids)}
            )
            for c in source.chunks
        }
        replay = _Replay()
        replay.chunks = [copies[id(c)] for c in source.chunks]
        replay.live = {t: [copies[id(c)] for c in source.live[t]] for t in Target}
        replay.texts = {t: list(source.texts[t]) for t in Target}
        now = self.now
        for target in Target:
            known = replay.texts[target]
            if current is not None and target in current and known != current[target]:
                # Not in the history (yet): shown at "now", with no time, rather than hidden.
                replay.apply(target, list(current[target]), now, None, "unrecorded")
            for index, chunk in enumerate(replay.live[target]):
                chunk.index = index
                chunk.node_id = node_id(target, index, chunk.text)
        wanted = sessions or {}
        used = sorted({sid for c in replay.chunks for sid in c.session_ids})
        edges = []
        for chunk in replay.chunks:
            for sid in chunk.session_ids:
                edge = self._edges.get((chunk.key, sid))
                if edge is None:
                    edge = Edge.model_construct(
                        source=chunk.key, target=sid, kind="session", weight=1.0, terms=[]
                    )
                    self._edges[(chunk.key, sid)] = edge
                edges.append(edge)
        edges += term_edges(replay.chunks)
        return Journey(
            chunks=replay.chunks,
            sessions=[wanted.get(sid) or SessionNode.model_construct(id=sid) for sid in used],
            edges=edges,
            events=list(self._timeline),
            history_error=history_error,
        )


def build_journey(
    events: Iterable[MemoryEvent],
    current: dict[Target, list[str]] | None = None,
    sessions: dict[str, SessionNode] | None = None,
    *,
    history_error: str | None = None,
) -> Journey:
    """The journey from ``events`` (any order; replayed by id) and the files as they are now
    (see :meth:`JourneyBuilder.journey`)."""
    builder = JourneyBuilder()
    builder.extend(events)
    return builder.journey(current, sessions, history_error=history_error)


def term_edges(chunks: Sequence[Chunk], per_chunk: int = EDGES_PER_CHUNK) -> list[Edge]:
    """Links between chunks that share distinctive terms, at most ``per_chunk`` from each.

    Weighted by inverse chunk frequency, so two chunks naming the same rare thing (a host, a
    version, a library) link more strongly than two that share a common word.
    """
    index: dict[str, list[int]] = defaultdict(list)
    for n, chunk in enumerate(chunks):
        for term in terms_of(chunk.text):
            index[term].append(n)
    cap = max(2, min(TERM_MAX_CHUNKS, int(len(chunks) * TERM_MAX_SHARE) or 2))
    scores: dict[tuple[int, int], float] = defaultdict(float)
    shared: dict[tuple[int, int], list[str]] = defaultdict(list)
    for term, members in index.items():
        if not 2 <= len(members) <= cap:
            continue
        weight = 1.0 / (len(members) - 1)
        for a_pos, a in enumerate(members):
            for b in members[a_pos + 1 :]:
                scores[(a, b)] += weight
                shared[(a, b)].append(term)
    best: dict[int, list[tuple[float, int, int]]] = defaultdict(list)
    for (a, b), score in scores.items():
        best[a].append((-score, b, a))
        best[b].append((-score, a, b))
    chosen: set[tuple[int, int]] = set()
    for n in sorted(best):
        for _neg, other, _self in sorted(best[n])[:per_chunk]:
            chosen.add((min(n, other), max(n, other)))
    return [
        Edge.model_construct(
            source=chunks[a].key,
            target=chunks[b].key,
            kind="terms",
            weight=round(scores[(a, b)], 4),
            terms=sorted(shared[(a, b)]),
        )
        for a, b in sorted(chosen)
    ]


def session_nodes(service: MemoryService, ids: Iterable[str]) -> dict[str, SessionNode]:
    """Title and start time of the sessions ``ids`` (missing or unreadable ones are skipped)."""
    wanted = sorted(set(ids))
    if not wanted:
        return {}
    try:
        from sqlalchemy import select

        from engine.sessions.store import SessionStore, sessions_t

        store = SessionStore.open(service.home, service.config)
        found: dict[str, SessionNode] = {}
        with store.engine.connect() as conn:
            for start in range(0, len(wanted), 500):
                rows = conn.execute(
                    select(
                        sessions_t.c.id,
                        sessions_t.c.title,
                        sessions_t.c.started_at,
                        sessions_t.c.source,
                    ).where(sessions_t.c.id.in_(wanted[start : start + 500]))
                )
                for row in rows:
                    found[row.id] = SessionNode(
                        id=row.id, title=row.title, started_at=row.started_at, source=row.source
                    )
        return found
    except Exception:  # the journey is about memory; session titles are a courtesy
        return {}


def _events_after(service: MemoryService, last_id: int) -> list[MemoryEvent] | None:
    """Recorded events with an id above ``last_id``, oldest first; None when the history
    no longer reaches ``last_id`` (the database was replaced), so replay must start over."""
    from sqlalchemy import func, select
    from sqlalchemy.orm import Session

    from engine.db import open_engine
    from engine.memory.history import MemoryEventRow

    with Session(open_engine(service.home)) as session:
        if last_id and (session.scalar(select(func.max(MemoryEventRow.id))) or 0) < last_id:
            return None
        stmt = select(MemoryEventRow).where(MemoryEventRow.id > last_id)
        return [MemoryEvent.of(row) for row in session.scalars(stmt.order_by(MemoryEventRow.id))]


def load_journey(
    service: MemoryService, *, rescan: bool = True, builder: JourneyBuilder | None = None
) -> Journey:
    """The journey of ``service``'s home, noting edits made outside Cairn first (so they get
    a real time) unless ``rescan`` is False. With a ``builder`` kept from an earlier load,
    only the events recorded since are replayed."""
    if rescan:
        service.rescan()
    current: dict[Target, list[str]] = {}
    for target in Target:
        try:
            current[target] = service.read(target).entries
        except MemoryToolError:
            continue  # an unreadable file: the history still tells its story
    builder = builder if builder is not None else JourneyBuilder()
    error = service.history_error
    if service.history is not None:
        try:
            new = _events_after(service, builder.last_id)
            if new is None:
                builder.reset()
                new = _events_after(service, 0) or []
            builder.extend(new)
        except Exception as exc:
            error = str(exc)
    return builder.journey(
        current, session_nodes(service, builder.session_ids), history_error=error
    )


# -- view, edit, delete ----------------------------------------------------------------------


class Resolved(BaseModel):
    ref: NodeRef
    text: str
    node_id: str  # versioned, as it is now


def resolve(service: MemoryService, raw_id: str) -> Resolved:
    """The entry ``raw_id`` names now; refuses an id whose entry changed since it was shown."""
    ref = parse_node_id(raw_id)
    entries = service.read(ref.target).entries
    return _check(ref, entries)


def _where_now(ref: NodeRef, entries: list[str]) -> str:
    if ref.version is None:
        return ""
    moved = [i for i, e in enumerate(entries) if version_of(e) == ref.version]
    if moved:
        return f"; that entry is now {node_id(ref.target, moved[0], entries[moved[0]])}"
    return "; that entry is no longer in memory"


def _check(ref: NodeRef, entries: list[str]) -> Resolved:
    name = ref.target.filename
    if ref.index >= len(entries):
        raise MemoryToolError(
            "stale" if ref.version else "not_found",
            f"{ref.base} does not exist: {name} has {len(entries)} "
            f"entr{'y' if len(entries) == 1 else 'ies'} now{_where_now(ref, entries)}. "
            "Memory changed since the id was shown; list it again (`cairn journey list`).",
            id=ref.base,
        )
    text = entries[ref.index]
    if ref.version is not None and version_of(text) != ref.version:
        raise MemoryToolError(
            "stale",
            f"{ref.base}#{ref.version} is stale: entry {ref.index} of {name} is now "
            f"{preview(text)!r}{_where_now(ref, entries)}. Memory changed since the id was "
            "shown; nothing was changed. List it again (`cairn journey list`).",
            id=ref.base,
            current_id=node_id(ref.target, ref.index, text),
        )
    return Resolved(ref=ref, text=text, node_id=node_id(ref.target, ref.index, text))


def _guard(
    ref: NodeRef, raw_id: str, expect: str | None, require_version: bool, entries: list[str]
) -> Resolved:
    if ref.version is None and expect is None and require_version:
        raise MemoryToolError(
            "invalid",
            f"{raw_id} names a position, not an entry: give the id with its version as "
            "`cairn journey list` prints it (memory:memory:3#a1b2c3), or --expect TEXT, so "
            "memory that changed since cannot turn this into a change of another entry",
        )
    found = _check(ref, entries)
    if expect is not None and expect.strip() not in found.text:
        raise MemoryToolError(
            "stale",
            f"{ref.base} is {preview(found.text)!r}, which does not contain "
            f"{preview(expect)!r}; nothing was changed",
            id=ref.base,
        )
    return found


def _guarded(service: MemoryService, precondition: Callable[[list[str]], None]) -> MemoryService:
    """``service`` with a store whose writes check ``precondition`` under the lock.

    A shallow copy: the config, history, queue and any hooks of the service are the same
    objects, so the write takes the service's whole path (approval gate, lock, scanner,
    limits, history, observers) — only this one call carries the precondition, and the
    shared service is never modified (the background review may be writing through it).
    """
    store = copy.copy(service.store)
    store.write = functools.partial(service.store.write, precondition=precondition)  # type: ignore[method-assign]
    view = copy.copy(service)
    view.store = store
    return view


def _mutate(
    service: MemoryService,
    raw_id: str,
    operation: dict[str, Any],
    *,
    expect: str | None,
    require_version: bool,
) -> dict[str, Any]:
    ref = parse_node_id(raw_id)
    found = _guard(ref, raw_id, expect, require_version, service.read(ref.target).entries)
    operation = {**operation, "old_text": found.text}

    def still_there(entries: list[str]) -> None:
        # Runs under the file's lock, on the entries re-read there: the write applies only if
        # the entry is exactly where and what it was when the id was resolved. (Staging
        # skips it; an approval later applies the operation by the entry's exact text.)
        _check(parse_node_id(found.node_id), entries)

    result = _guarded(service, still_there).write(ref.target, [operation], origin="foreground")
    result["id"] = found.node_id
    if result.get("status") == "applied" and operation["action"] == "replace":
        result["new_id"] = node_id(ref.target, ref.index, operation["content"].strip())
    return result


def edit_chunk(
    service: MemoryService,
    raw_id: str,
    text: str,
    *,
    expect: str | None = None,
    require_version: bool = True,
) -> dict[str, Any]:
    """Replace the entry ``raw_id`` names with ``text``: lock, scanner, limits, approval gate,
    history; undoable with ``cairn memory undo``."""
    return _mutate(
        service,
        raw_id,
        {"action": "replace", "content": text},
        expect=expect,
        require_version=require_version,
    )


def delete_chunk(
    service: MemoryService,
    raw_id: str,
    *,
    expect: str | None = None,
    require_version: bool = True,
) -> dict[str, Any]:
    """Remove the entry ``raw_id`` names; same path and guarantees as :func:`edit_chunk`."""
    return _mutate(
        service, raw_id, {"action": "remove"}, expect=expect, require_version=require_version
    )
