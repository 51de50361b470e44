"""The journey's data: ids of chunks, the terms that link them, and the models the views show."""

from __future__ import annotations

import functools
import hashlib
import re
from bisect import bisect_right
from typing import Any, Literal

from pydantic import BaseModel, Field, PrivateAttr

from engine.cli_output import clip
from engine.memory.entries import Target
from engine.memory.errors import MemoryToolError

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
