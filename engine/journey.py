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

Skills and provider facts join the same timeline (:class:`HomeLayers`): skills from their own
change history (``<home>/skills/.history.jsonl``, written by the skill manager) and from the
folders as they are, facts from the Holographic fact store's times. Their changes are merged
with the memory events by time; each skill (``skill:<name>``) or fact (``fact:<id>``) is an
:class:`Item`, shown but not edited from here.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import heapq
import json
import math
import os
import re
import sqlite3
import time
from bisect import bisect_right
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field, PrivateAttr

from engine.cli_output import clip
from engine.memory.entries import Target, parse, render
from engine.memory.errors import MemoryToolError
from engine.memory.history import COMMITTING_ACTIONS, MemoryEvent
from engine.memory.operations import parse_operations, preview
from engine.memory.service import MemoryService, describe

if TYPE_CHECKING:
    from engine.home import Home
    from engine.skills.manage import SkillChange

VERSION_CHARS = 6
# An index of more than nine digits is no index of a bounded file (and int() of thousands of
# digits raises): such an id is simply not an id.
NODE_ID = re.compile(r"^memory:(memory|user|profile):(\d{1,9})(?:#([0-9a-fA-F]{4,64}))?$")
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
Layer = Literal["memory", "skill", "fact"]
ItemLayer = Literal["skill", "fact"]


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
            f"{clip(raw)} is not a memory id; ids look like memory:memory:3#a1b2c3 or "
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


class Lifetime(BaseModel):
    """Something the agent learned, followed through its changes: a memory chunk, a skill or
    a provider fact. Visible at timeline positions ``born <= p < died``."""

    key: str  # replay order, the same on every build of the same history
    versions: list[ChunkVersion]
    born: int  # first timeline position where it exists
    died: int | None = None  # first position where it no longer does
    learned_at: float | None = None  # None: there before the history began
    changed_at: float | None = None
    removed_at: float | None = None
    origin: str | None = None
    session_id: str | None = None  # the session it was learned in
    session_ids: list[str] = Field(default_factory=list)  # every session that touched it
    node_id: str | None = None  # its id while it exists (a memory id carries a version)

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


class Chunk(Lifetime):
    """One entry followed through its edits, from the change that added it to the one that
    removed it (if any). Keys are ``c<n>``."""

    target: Target
    index: int | None = None  # position in the file now; None once removed


class Item(Lifetime):
    """A skill (key ``k<n>``, id ``skill:<name>``) or a provider fact (key ``f<n>``, id
    ``fact:<id>``), followed from the change that made it to the one that removed it.

    Its text is a skill's SKILL.md or a fact's content; the other fields describe it as it was
    at the last load (a removed one: as it was when last seen).
    """

    layer: ItemLayer
    subject: str  # a skill's category/name, or a fact's id in the store
    title: str = ""  # a skill's one-line description
    entities: list[str] = Field(default_factory=list)  # a fact's entities
    tags: list[str] = Field(default_factory=list)
    trust: float | None = None  # a fact's trust score
    trust_level: str | None = None  # a skill's trust level
    uses: int | None = None  # a skill's views, a fact's retrievals
    files: list[str] = Field(default_factory=list)  # a skill's supporting files

    @property
    def name(self) -> str:
        """What the graph labels it with: a skill's name, a fact's first line."""
        if self.layer == "skill":
            return self.subject.rpartition("/")[2]
        return self.text.split("\n", 1)[0]

    @property
    def link_text(self) -> str:
        """The text its links to other nodes come from: a whole SKILL.md would share a word
        with everything, so a skill links by its name, description and tags."""
        if self.layer == "skill":
            return " ".join([self.subject.replace("/", " "), self.title, *self.tags])
        return " ".join([self.text, *self.entities, *self.tags])


class SessionNode(BaseModel):
    id: str
    title: str | None = None
    started_at: float | None = None
    source: str | None = None


class Edge(BaseModel):
    source: str  # chunk or item key
    target: str  # chunk or item key, or a session id for kind "session"
    kind: EdgeKind
    weight: float = 1.0
    terms: list[str] = Field(default_factory=list)


class TimelineEvent(BaseModel):
    """One recorded event, with what it changed: a memory event, or a change of a skill or a
    provider fact (``layer``; their ``id`` counts within the layer)."""

    id: int
    position: int  # the timeline position this event leads to (its index + 1)
    at: float
    target: Target | None = None  # the memory file (memory events only)
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
    layer: Layer = "memory"
    subject: str | None = None  # the skill (category/name) or fact (id) it changed
    file: str | None = None  # the skill's file it changed, when not SKILL.md
    note: str | None = None  # what the record does not tell (a text too long to keep …)

    @property
    def uid(self) -> tuple[str, int, float]:
        return (self.layer, self.id, self.at)

    @property
    def place(self) -> str:
        """Where it happened: the memory file, ``skills`` or ``facts``."""
        if self.target is not None:
            return self.target.filename
        return "skills" if self.layer == "skill" else "facts"


class Journey(BaseModel):
    chunks: list[Chunk]
    sessions: list[SessionNode]
    edges: list[Edge]
    events: list[TimelineEvent]
    history_error: str | None = None
    items: list[Item] = Field(default_factory=list)  # skills and provider facts
    layer_errors: list[str] = Field(default_factory=list)  # skills or facts that could not load
    # Memory files that exist but cannot be read now (target -> why): "now" is then unknown,
    # which must never be shown as "empty".
    unreadable: dict[str, str] = Field(default_factory=dict)

    _by_key: dict[str, Chunk] = PrivateAttr(default_factory=dict)
    _by_id: dict[str, Chunk] = PrivateAttr(default_factory=dict)
    _items: dict[str, Item] = PrivateAttr(default_factory=dict)
    _item_ids: dict[str, Item] = PrivateAttr(default_factory=dict)
    _commits: dict[Target, tuple[list[int], list[list[str]]]] = PrivateAttr(default_factory=dict)
    _now: dict[Target, list[str]] = PrivateAttr(default_factory=dict)

    def model_post_init(self, _context: Any) -> None:
        self._by_key = {c.key: c for c in self.chunks}
        self._by_id = {c.node_id.split("#")[0]: c for c in self.chunks if c.node_id}
        self._items = {i.key: i for i in self.items}
        self._item_ids = {i.node_id: i for i in self.items if i.node_id}
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

    def item(self, key: str) -> Item | None:
        """The skill or fact with key ``key``."""
        return self._items.get(key)

    def node(self, key: str) -> Chunk | Item | None:
        return self._by_key.get(key) or self._items.get(key)

    def find_item(self, node_id: str) -> Item | None:
        """The skill (``skill:<name>``) or fact (``fact:<id>``) that exists now under that id."""
        return self._item_ids.get(node_id.strip())

    def items_at(self, position: int, layer: ItemLayer | None = None) -> list[Item]:
        """Skills and facts that existed at ``position``, in the order they appeared."""
        return [
            i
            for i in self.items
            if (layer is None or i.layer == layer)
            and i.born <= position
            and (i.died is None or position < i.died)
        ]

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
        """The position right after memory event ``event_id``."""
        for event in self.events:
            if event.id == event_id and event.layer == "memory":
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
        self.items: list[Item] = []  # skills and facts
        self.items_live: dict[tuple[str, str], Item] = {}  # by (layer, subject)

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


# -- skills and provider facts ----------------------------------------------------------------

SKILL_FILE = "SKILL.md"
SKILLS_HISTORY = ".history.jsonl"  # written by engine.skills.manage (HISTORY_FILE)
SKILLS_LOCK = ".skills.lock"  # engine.skills.manage's LOCK_FILE
# Facts the Holographic provider copies from MEMORY.md and USER.md: already chunks here.
MIRRORED_FACTS = "builtin:"
# Noted on a fact whose earlier texts are unknown: the store keeps only the latest one.
FACT_TEXT_NOTE = "The fact store keeps only a fact's latest text; earlier texts are not recorded."
# A SKILL.md text the history left out (too long to keep): the marker is also what is shown.
_UNKNOWN = "(not recorded: the text was too long to keep in the skills' history)"


class DiskSkill(BaseModel):
    """A skill folder as it is now."""

    ref: str  # category/name or name
    name: str
    text: str  # SKILL.md
    mtime: float
    title: str = ""
    files: list[str] = Field(default_factory=list)
    trust_level: str | None = None
    uses: int | None = None
    problem: str | None = None  # why it does not load, for a broken one


class FactRow(BaseModel):
    """A fact as the store holds it now."""

    id: int
    content: str
    entities: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    trust: float | None = None
    retrievals: int | None = None
    created_at: float
    updated_at: float


@dataclass
class ItemChange:
    """One change of a skill or a fact, ready to replay: from the skills' history, from the
    skill folders as they are (a skill made or edited outside Cairn), or the fact store."""

    at: float
    layer: ItemLayer
    subject: str
    action: str
    text: str | None  # the item's text after it; None: unchanged (a supporting file changed)
    summary: str
    gone: bool = False  # it no longer exists after this change
    before: str | None = None  # the changed file's text before and after, for the diff
    after: str | None = None
    file: str | None = None  # a supporting file, when that is what changed
    origin: str = "foreground"
    session_id: str | None = None
    pending_id: str | None = None
    note: str | None = None


class HomeLayers:
    """Reads a home's skills (their change history and the folders as they are) and its
    provider facts (the Holographic fact store, read-only) for the journey."""

    def __init__(self, home: Home | None) -> None:
        self.home = home  # None: a subclass supplies the data (tests, benchmarks)

    @property
    def skills_dir(self) -> Path:
        assert self.home is not None
        return self.home.skills_dir

    @contextlib.contextmanager
    def skills_lock(self) -> Iterator[None]:
        """The skills' write lock, so a change is never seen on disk before its history line
        (the writer appends it under the same lock). Not created where there are no skills."""
        if not self.skills_dir.is_dir():
            yield
            return
        from engine.fsutil import locked

        with locked(self.skills_dir / SKILLS_LOCK):
            yield

    def skill_records(
        self, offset: int, inode: int | None
    ) -> tuple[list[SkillChange], int, int] | None:
        """Records of the skills' history from byte ``offset``, the offset after the last
        whole line and the file's inode; None when the file is not the one read before."""
        from engine.skills.manage import SkillChange

        path = self.skills_dir / SKILLS_HISTORY
        try:
            with path.open("rb") as handle:
                info = os.fstat(handle.fileno())
                if offset and (info.st_ino != inode or info.st_size < offset):
                    return None
                handle.seek(offset)
                data = handle.read()
        except FileNotFoundError:
            return ([], 0, 0) if not offset else None
        # A line without its newline is still being written (or was cut by a crash).
        whole = data[: data.rfind(b"\n") + 1]
        records = []
        for line in whole.splitlines():
            if not line.strip():
                continue
            try:
                records.append(SkillChange.model_validate_json(line))
            except ValueError:
                continue  # a damaged line tells nothing reliable; the rest still does
        return records, offset + len(whole), info.st_ino

    def skills_now(self) -> dict[str, DiskSkill]:
        """Every skill folder, by category/name; broken ones too (they are still there)."""
        if not self.skills_dir.is_dir():
            return {}
        from engine.skills.guard import TrustBook
        from engine.skills.store import list_files, load_catalog
        from engine.skills.usage import UsageBook

        catalog = load_catalog(self.home)
        levels = TrustBook(self.skills_dir).levels()
        uses = UsageBook(self.skills_dir).counts()
        found: dict[str, DiskSkill] = {}
        for skill in catalog.skills:
            read = _read_skill_md(skill.skill_md)
            if read is None:
                continue
            text, mtime = read
            found[skill.ref] = DiskSkill(
                ref=skill.ref,
                name=skill.name,
                text=text,
                mtime=mtime,
                title=skill.meta.one_line,
                files=[f for f, _size in list_files(skill)],
                trust_level=levels.get(skill.name, "community"),
                uses=uses[skill.name].uses if skill.name in uses else 0,
            )
        for problem in catalog.problems:
            ref = str(Path(problem.path).parent.as_posix())
            read = _read_skill_md(self.skills_dir / problem.path)
            if read is None or ref in found or ref in ("", "."):
                continue
            text, mtime = read
            found[ref] = DiskSkill(
                ref=ref,
                name=ref.rpartition("/")[2],
                text=text,
                mtime=mtime,
                title=f"(does not load: {problem.message})",
                problem=problem.message,
            )
        return found

    def facts_now(self) -> dict[int, FactRow] | None:
        """The fact store's facts (not the copies of MEMORY.md and USER.md), read-only; None
        when there is no store. Opening it never creates it."""
        assert self.home is not None
        path = self.home.memory_store_db
        if not path.is_file():
            return None
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=5)
        try:
            rows = conn.execute(
                "SELECT id, content, entities, tags, trust, retrieval_count, created_at, "
                "updated_at FROM facts WHERE source NOT LIKE ? ORDER BY id",
                (MIRRORED_FACTS + "%",),
            ).fetchall()
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                return {}
            raise
        finally:
            conn.close()
        return {
            int(row[0]): FactRow.model_construct(
                id=int(row[0]),
                content=str(row[1]),
                entities=_json_list(row[2]),
                tags=_json_list(row[3]),
                trust=float(row[4]),
                retrievals=int(row[5]),
                created_at=float(row[6]),
                updated_at=float(row[7]),
            )
            for row in rows
        }


def _read_skill_md(path: Path) -> tuple[str, float] | None:
    try:
        info = path.stat()
        if info.st_size > 4 * 1024 * 1024:  # the skills store's read ceiling
            return None
        return path.read_bytes().decode("utf-8", errors="replace"), info.st_mtime
    except OSError:
        return None


def _json_list(raw: object) -> list[str]:
    try:
        value = json.loads(str(raw))
    except ValueError:
        return []
    return [str(v) for v in value] if isinstance(value, list) else []


_SKILL_LABELS = {
    "create": "created",
    "patch": "patched",
    "edit": "rewritten",
    "delete": "deleted",
    "write_file": "file written",
    "remove_file": "file removed",
}


class _Layers:
    """What the builder knows of skills and facts: the state their sources were in at the
    last load, so the next load turns only the differences into changes."""

    def __init__(self) -> None:
        self.log_offset = 0
        self.log_inode: int | None = None
        self.skills: dict[str, str] = {}  # category/name -> SKILL.md text, for existing ones
        self.skill_at: dict[str, float] = {}  # category/name -> time of its last change
        self.disk: dict[str, DiskSkill] = {}
        self.facts: dict[int, FactRow] = {}
        self.errors: list[str] = []

    def gather(self, layers: HomeLayers, now: float) -> list[ItemChange] | None:
        """The changes since the last call, oldest first; None when the skills' history was
        replaced (the builder must start over)."""
        changes: list[ItemChange] = []
        self.errors = []
        try:
            with layers.skills_lock():
                read = layers.skill_records(self.log_offset, self.log_inode)
                if read is None:
                    return None
                records, self.log_offset, self.log_inode = read
                disk = layers.skills_now()
        except OSError as exc:
            self.errors.append(f"skills could not be read: {exc}")
            records, disk = [], self.disk
        for record in records:
            changes += self._record(record)
        changes += self._disk(disk, now)
        try:
            facts = layers.facts_now()
        except sqlite3.Error as exc:
            self.errors.append(f"the fact store could not be read: {exc}")
            facts = None
        if facts is not None:
            changes += self._facts(facts, now)
        changes.sort(key=lambda c: c.at)
        return changes

    def _record(self, record: SkillChange) -> list[ItemChange]:
        ref = str(record.skill)
        out: list[ItemChange] = []
        common = {
            "origin": record.origin,
            "session_id": record.session_id,
            "pending_id": record.pending_id,
        }
        is_md = record.file == SKILL_FILE
        if record.action != "create" and ref not in self.skills:
            # Changed by Cairn, but made before the history began (or by hand): it existed.
            text = record.before if is_md and record.before is not None else None
            if text is None:
                text = self.disk[ref].text if ref in self.disk else _UNKNOWN
            out.append(
                ItemChange(
                    at=record.at,
                    layer="skill",
                    subject=ref,
                    action="found",
                    text=text,
                    summary=f"skill {ref} (made before the skills' history began)",
                    after=None if text == _UNKNOWN else text,
                    **common,
                )
            )
            self.skills[ref] = text
        label = _SKILL_LABELS.get(record.action, record.action)
        note = "A text was too long to keep in the skills' history." if record.omitted else None
        change = ItemChange(
            at=record.at,
            layer="skill",
            subject=ref,
            action=record.action,
            text=None,
            summary=str(record.summary or f"skill {ref} {label}"),
            before=record.before,
            after=record.after,
            file=None if is_md else record.file,
            note=note,
            **common,
        )
        if record.action == "delete":
            change.gone = True
            change.after = None
            self.skills.pop(ref, None)
        elif is_md:
            text = record.after if record.after is not None else _UNKNOWN
            change.text = text
            self.skills[ref] = text
        self.skill_at[ref] = record.at
        out.append(change)
        return out

    def _disk(self, disk: dict[str, DiskSkill], now: float) -> list[ItemChange]:
        out: list[ItemChange] = []
        for ref, skill in disk.items():
            known = self.skills.get(ref)
            # File times can be in the future (a copied folder, a wrong clock); never after now,
            # and never before the skill's last recorded change.
            at = max(min(skill.mtime, now), self.skill_at.get(ref, 0.0))
            if known is None:
                out.append(
                    ItemChange(
                        at=at,
                        layer="skill",
                        subject=ref,
                        action="found",
                        text=skill.text,
                        summary=f"skill {ref} found (made outside Cairn; its file's time)",
                        after=skill.text,
                        origin="external",
                    )
                )
            elif known == _UNKNOWN:
                pass  # the history left the text out; the folder's is the one to go by
            elif known != skill.text:
                out.append(
                    ItemChange(
                        at=at,
                        layer="skill",
                        subject=ref,
                        action="external_edit",
                        text=skill.text,
                        summary=f"{ref}/SKILL.md edited outside Cairn",
                        before=known,
                        after=skill.text,
                        origin="external",
                    )
                )
            self.skills[ref] = skill.text
            self.skill_at[ref] = max(at, self.skill_at.get(ref, 0.0))
        for ref in [r for r in self.skills if r not in disk]:
            out.append(
                ItemChange(
                    at=now,
                    layer="skill",
                    subject=ref,
                    action="vanished",
                    text=None,
                    gone=True,
                    summary=f"skill {ref} is gone (removed outside Cairn; noticed then)",
                    before=None if self.skills[ref] == _UNKNOWN else self.skills[ref],
                    origin="external",
                )
            )
            del self.skills[ref]
        self.disk = disk
        return out

    def _facts(self, rows: dict[int, FactRow], now: float) -> list[ItemChange]:
        out: list[ItemChange] = []
        for fact_id, row in rows.items():
            old = self.facts.get(fact_id)
            if old is not None and old.created_at != row.created_at:
                # The id was given to a new fact after the old one was removed.
                out.append(_fact_removed(old, now))
                old = None
            if old is None:
                updated = row.updated_at > row.created_at
                note = FACT_TEXT_NOTE if updated else None
                out.append(_fact_change(row, "add", row.created_at, note=note))
                if updated:
                    out.append(_fact_change(row, "update", row.updated_at, note=FACT_TEXT_NOTE))
            elif row.updated_at != old.updated_at:
                before = old.content if old.content != row.content else None
                out.append(_fact_change(row, "update", row.updated_at, before=before))
        out += [
            _fact_removed(old, now) for fact_id, old in self.facts.items() if fact_id not in rows
        ]
        self.facts = rows
        return out


def _fact_change(
    row: FactRow, action: str, at: float, *, before: str | None = None, note: str | None = None
) -> ItemChange:
    label = f"fact #{row.id}" if action == "add" else f"fact #{row.id} updated"
    return ItemChange(
        at=at,
        layer="fact",
        subject=str(row.id),
        action=action,
        text=row.content,
        summary=f"{label}: {_line(row.content)}",
        before=before,
        after=row.content,
        origin="tool",
        note=note,
    )


def _fact_removed(old: FactRow, now: float) -> ItemChange:
    return ItemChange(
        at=now,
        layer="fact",
        subject=str(old.id),
        action="remove",
        text=None,
        gone=True,
        summary=f"fact #{old.id} removed: {_line(old.content)}",
        before=old.content,
        origin="tool",
        note="The fact store does not record removals: this is when the journey noticed it.",
    )


def _line(text: str, limit: int = 80) -> str:
    return preview(text, limit)


class JourneyBuilder:
    """Replays the history incrementally: the history only grows, so a builder kept between
    loads replays only the events recorded since the last one.

    With skills and facts (:class:`HomeLayers`), their changes are merged in by time. A change
    that belongs before what was already replayed (a skill folder copied in with an old file
    time, a clock set back) cannot be appended: :meth:`extend` then returns False and the
    caller starts over with the whole history.

    :meth:`journey` returns a snapshot that shares nothing mutable with the builder, so one
    thread may read it while another extends the builder.
    """

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self._replay = _Replay()
        self._timeline: list[TimelineEvent] = []
        self._edges: dict[tuple[str, str], Edge] = {}  # immutable, so shared by snapshots
        self._layers = _Layers()
        self._counts: dict[ItemLayer, int] = {"skill": 0, "fact": 0}
        self._last_memory_at = -math.inf
        self._last_item_at = -math.inf
        self.last_id = 0

    @property
    def now(self) -> int:
        return len(self._timeline)

    @property
    def session_ids(self) -> set[str]:
        return {sid for event in self._timeline if (sid := event.session_id)}

    def extend(self, events: Iterable[MemoryEvent], layers: HomeLayers | None = None) -> bool:
        """Replay ``events`` newer than the last one seen (older ones are ignored) and, with
        ``layers``, the changes of skills and facts since the last call, merged by time.

        False when something new belongs before what was replayed already; the builder is
        then half-read and must be reset (and extended with everything) before it is used.
        """
        memory = sorted((e for e in events if e.id > self.last_id), key=lambda e: e.id)
        changes: list[ItemChange] = []
        if layers is not None:
            gathered = self._layers.gather(layers, time.time())
            if gathered is None:
                return False
            changes = gathered
        if changes and changes[0].at < max(self._last_item_at, self._last_memory_at):
            return False
        if memory and self._last_item_at > min(e.at for e in memory):
            return False
        merged: Iterable[MemoryEvent | ItemChange] = (
            heapq.merge(memory, changes, key=lambda e: e.at) if changes else memory
        )
        for step in merged:
            position = len(self._timeline) + 1
            if isinstance(step, ItemChange):
                self._timeline.append(self._step_item(step, position))
                self._last_item_at = max(self._last_item_at, step.at)
            else:
                self._timeline.append(self._step(step, position))
                self._last_memory_at = max(self._last_memory_at, step.at)
                self.last_id = step.id
        return True

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

    def _step_item(self, change: ItemChange, position: int) -> TimelineEvent:
        replay = self._replay
        handle = (change.layer, change.subject)
        item = replay.items_live.get(handle)
        text = change.text if change.text is not None else change.after
        if item is None and not change.gone:
            item = Item.model_construct(
                key=f"{'k' if change.layer == 'skill' else 'f'}{len(replay.items)}",
                layer=change.layer,
                subject=change.subject,
                versions=[_item_version(position, change, text or "")],
                born=position,
                died=None,
                learned_at=change.at,
                changed_at=change.at,
                removed_at=None,
                origin=change.origin,
                session_id=change.session_id,
                session_ids=[change.session_id] if change.session_id else [],
                node_id=None,
                title="",
                entities=[],
                tags=[],
                trust=None,
                trust_level=None,
                uses=None,
                files=[],
            )
            replay.items.append(item)
            replay.items_live[handle] = item
        elif item is not None:
            if change.gone:
                item.died = position
                item.removed_at = change.at
                del replay.items_live[handle]
            elif change.text is not None and change.text != item.text:
                item.versions.append(_item_version(position, change, change.text))
            item.changed_at = change.at
            if change.session_id and change.session_id not in item.session_ids:
                item.session_ids.append(change.session_id)
        if item is not None:
            self._describe(item)
        self._counts[change.layer] += 1
        before, after = change.before, change.after
        appeared = item is not None and item.born == position
        return TimelineEvent.model_construct(
            id=self._counts[change.layer],
            position=position,
            at=change.at,
            target=None,
            action=change.action,
            origin=change.origin,
            session_id=change.session_id,
            pending_id=change.pending_id,
            commits=True,
            summary=change.summary,
            added=[after] if after is not None and (before is None or appeared) else [],
            removed=[before] if before is not None and after is None else [],
            changed=[(before, after)] if before is not None and after is not None else [],
            chunks=[item.key] if item is not None else [],
            gap=False,
            order=None,
            layer=change.layer,
            subject=change.subject,
            file=change.file,
            note=change.note,
        )

    def _describe(self, item: Item) -> None:
        """Give ``item`` what its source says of it now (a removed one keeps the last)."""
        if item.layer == "skill":
            skill = self._layers.disk.get(item.subject)
            if skill is not None and item.died is None:
                item.title = skill.title
                item.files = list(skill.files)
                item.trust_level = skill.trust_level
                item.uses = skill.uses
            return
        fact = self._layers.facts.get(int(item.subject))
        if fact is not None and item.died is None:
            item.entities = list(fact.entities)
            item.tags = list(fact.tags)
            item.trust = fact.trust
            item.uses = fact.retrievals

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
        items = []
        for item in source.items:
            copied = item.model_copy(
                update={
                    "versions": list(item.versions),
                    "session_ids": list(item.session_ids),
                    "entities": list(item.entities),
                    "tags": list(item.tags),
                    "files": list(item.files),
                }
            )
            if copied.died is None:
                self._describe(copied)
                copied.node_id = _item_id(copied, self._layers.disk)
            items.append(copied)
        nodes: list[Chunk | Item] = [*replay.chunks, *items]
        wanted = sessions or {}
        used = sorted({sid for c in nodes for sid in c.session_ids})
        edges = []
        for node in nodes:
            for sid in node.session_ids:
                edge = self._edges.get((node.key, sid))
                if edge is None:
                    edge = Edge.model_construct(
                        source=node.key, target=sid, kind="session", weight=1.0, terms=[]
                    )
                    self._edges[(node.key, sid)] = edge
                edges.append(edge)
        edges += term_edges(nodes)
        return Journey(
            chunks=replay.chunks,
            sessions=[wanted.get(sid) or SessionNode.model_construct(id=sid) for sid in used],
            edges=edges,
            events=list(self._timeline),
            history_error=history_error,
            items=items,
            layer_errors=list(self._layers.errors),
        )


def _item_version(position: int, change: ItemChange, text: str) -> ChunkVersion:
    return ChunkVersion.model_construct(
        position=position, event_id=None, at=change.at, action=change.action, text=text
    )


def _item_id(item: Item, disk: dict[str, DiskSkill]) -> str:
    if item.layer == "fact":
        return f"fact:{item.subject}"
    skill = disk.get(item.subject)
    # A broken folder, or a second skill of the same name, is named by its path instead.
    if skill is not None and skill.problem is not None:
        return f"skill:{item.subject}"
    return f"skill:{item.name}"


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


def term_edges(chunks: Sequence[Chunk | Item], per_chunk: int = EDGES_PER_CHUNK) -> list[Edge]:
    """Links between chunks (and skills and facts) that share distinctive terms, at most
    ``per_chunk`` from each.

    Weighted by inverse chunk frequency, so two chunks naming the same rare thing (a host, a
    version, a library) link more strongly than two that share a common word.
    """
    index: dict[str, list[int]] = defaultdict(list)
    for n, chunk in enumerate(chunks):
        text = chunk.link_text if isinstance(chunk, Item) else chunk.text
        for term in terms_of(text):
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
    service: MemoryService,
    *,
    rescan: bool = True,
    builder: JourneyBuilder | None = None,
    layers: bool = True,
) -> Journey:
    """The journey of ``service``'s home, noting edits made outside Cairn first (so they get
    a real time) unless ``rescan`` is False. With a ``builder`` kept from an earlier load,
    only the events recorded since are replayed. With ``layers``, skills and provider facts
    are part of it."""
    if rescan:
        service.rescan()
    current: dict[Target, list[str]] = {}
    unreadable: dict[str, str] = {}
    for target in Target:
        try:
            current[target] = service.read(target).entries
        except MemoryToolError as exc:
            unreadable[target.value] = exc.message  # the history still tells its story
            continue
    builder = builder if builder is not None else JourneyBuilder()
    error = service.history_error
    sources = HomeLayers(service.home) if layers else None
    new: list[MemoryEvent] = []
    if service.history is not None:
        try:
            found = _events_after(service, builder.last_id)
            if found is None:
                builder.reset()
                found = _events_after(service, 0) or []
            new = found
        except Exception as exc:
            error = str(exc)
    if not builder.extend(new, sources):
        # Something new belongs before what was replayed: replay everything in order.
        builder.reset()
        everything: list[MemoryEvent] = []
        if service.history is not None and error is None:
            with contextlib.suppress(Exception):  # reported above if it fails again
                everything = _events_after(service, 0) or []
        builder.extend(everything, sources)
    journey = builder.journey(
        current, session_nodes(service, builder.session_ids), history_error=error
    )
    journey.unreadable = unreadable
    return journey


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

    result = service.write(ref.target, [operation], origin="foreground", precondition=still_there)
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
