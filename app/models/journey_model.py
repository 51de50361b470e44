"""The journey's models: the radial graph's layout, the timeline's events, memory at a moment,
and the one selection the graph, the timeline and the memory panel share.

The layout is plain data (numpy arrays) computed off the GUI thread by the engine worker: a
networkx graph of the journey, laid out radially in O(n) after one sort. Radius is *time*
(when a chunk was learned, when a session started), mapped through its rank so that a burst
of learning does not pile up on one ring and a quiet month does not leave an empty band;
angle is *category*: MEMORY.md, USER.md, skills and provider facts each own a sector sized by
how many nodes it holds (with a floor, so a few skills are not squeezed out by thousands of
facts), and inside it each session's nodes sit side by side (facts, which have no session,
side by side with the others about the same entity). A node's place never depends on the
moment shown, so playback only changes which nodes are visible, never where they are.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import networkx as nx
import numpy as np
from PySide6.QtCore import (
    QAbstractListModel,
    QByteArray,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    Qt,
    Signal,
)
from PySide6.QtGui import QColor, QPixmap

from app.models.memory_model import first_line, sync_rows
from engine.journey import Journey, TimelineEvent
from engine.memory.entries import Target

Index = QModelIndex | QPersistentModelIndex

MEMORY_NODE, USER_NODE, SESSION_NODE, SKILL_NODE, FACT_NODE = 0, 1, 2, 3, 4
KIND_OF_TARGET = {Target.MEMORY: MEMORY_NODE, Target.USER: USER_NODE}
KIND_OF_LAYER = {"skill": SKILL_NODE, "fact": FACT_NODE}
# The sectors, clockwise from the top, and their names on the rim.
SECTORS = {MEMORY_NODE: "MEMORY", USER_NODE: "USER", SKILL_NODE: "SKILLS", FACT_NODE: "FACTS"}
INNER_RADIUS = 0.14  # the empty middle: the start of the history
TARGET_GAP = 0.05  # share of the circle left empty between two sectors
# No sector narrower than this share of the circle's nodes: ten skills next to 5,000 facts
# would otherwise get a sliver too thin to click.
MIN_SECTOR_SHARE = 0.08
GROUP_GAP = 0.35  # in leaf slots, between two sessions' chunks
# A chunk no longer in memory takes this share of a slot: its place stays fixed for playback,
# but memory as it is now is not spread thin by everything it once held.
REMOVED_SLOT = 0.3
RING_TICKS = 4

ACTION_COLORS = {
    "add": QColor("#1b7f3b"),
    "replace": QColor("#2f6fd0"),
    "remove": QColor("#b3261e"),
    "batch": QColor("#7a4fc0"),
    "approved": QColor("#1b7f3b"),
    "rejected": QColor("#8a8f98"),
    "staged": QColor("#b26a00"),
    "external_edit": QColor("#a0522d"),
    "undo": QColor("#5f6b7a"),
    # skills and facts
    "create": QColor("#1b7f3b"),
    "found": QColor("#1b7f3b"),
    "patch": QColor("#2f6fd0"),
    "edit": QColor("#2f6fd0"),
    "update": QColor("#2f6fd0"),
    "write_file": QColor("#2f6fd0"),
    "remove_file": QColor("#b3261e"),
    "delete": QColor("#b3261e"),
    "vanished": QColor("#b3261e"),
}
ACTION_LABELS = {
    "add": "added",
    "replace": "replaced",
    "remove": "removed",
    "batch": "batch",
    "approved": "approved",
    "rejected": "rejected",
    "staged": "staged",
    "external_edit": "external edit",
    "undo": "undo",
    "create": "created",
    "found": "found",
    "patch": "patched",
    "edit": "rewritten",
    "update": "updated",
    "write_file": "file written",
    "remove_file": "file removed",
    "delete": "deleted",
    "vanished": "gone",
}


_SWATCHES: dict[str, QPixmap] = {}


def _swatch(action: str) -> QPixmap:
    """A small square in the action's colour. Made once: a QColor decoration would be turned
    into a new pixmap on every paint of every row."""
    swatch = _SWATCHES.get(action)
    if swatch is None:
        swatch = QPixmap(10, 10)
        swatch.fill(ACTION_COLORS.get(action, QColor("#5f6b7a")))
        _SWATCHES[action] = swatch
    return swatch


def when(stamp: float | None, with_seconds: bool = False) -> str:
    if stamp is None:
        return "before the history"
    fmt = "%Y-%m-%d %H:%M:%S" if with_seconds else "%Y-%m-%d %H:%M"
    return datetime.fromtimestamp(stamp).strftime(fmt)


# -- the graph and its radial layout -----------------------------------------------------------


def build_graph(journey: Journey) -> nx.Graph:
    """The journey as a networkx graph: chunk and session nodes, ``session`` and ``terms``
    edges. Node attributes carry what the layout and the view need."""
    graph = nx.Graph()
    for chunk in journey.chunks:
        graph.add_node(
            chunk.key,
            kind=KIND_OF_TARGET[chunk.target],
            time=chunk.learned_at,
            order=int(chunk.key[1:]),
            born=chunk.born,
            died=chunk.died,
            group=chunk.session_id,
            cluster=chunk.session_id,
            label=first_line(chunk.text),
            text=chunk.text,
        )
    for item in journey.items:
        graph.add_node(
            item.key,
            kind=KIND_OF_LAYER[item.layer],
            time=item.learned_at,
            order=int(item.key[1:]),
            born=item.born,
            died=item.died,
            group=item.session_id,
            # Facts have no session; those about the same thing sit together instead.
            cluster=item.session_id
            if item.layer == "skill"
            else "entity:" + (item.entities[0].casefold() if item.entities else ""),
            label=item.name,
            text=f"{item.subject} {item.title} {item.text}",
        )
    first: dict[str, int] = {}
    for event in journey.events:
        if event.session_id:
            first.setdefault(event.session_id, event.position)
    for session in journey.sessions:
        graph.add_node(
            "s:" + session.id,
            kind=SESSION_NODE,
            time=session.started_at,
            first=first.get(session.id, 0),
            label=session.title or f"session {session.id[:8]}",
            text=session.title or session.id,
        )
    for edge in journey.edges:
        if edge.source not in graph or (edge.kind != "session" and edge.target not in graph):
            continue
        if edge.kind == "session":
            other = "s:" + edge.target
            # The session that taught the chunk is its parent in the radial tree; sessions
            # that only changed it later are links, drawn like shared terms.
            learned = graph.nodes[edge.source].get("group") == edge.target
            graph.add_edge(edge.source, other, kind="session" if learned else "touched")
        else:
            graph.add_edge(edge.source, edge.target, kind=edge.kind, weight=edge.weight)
    return graph


@dataclass
class GraphLayout:
    """Positions and per-node facts as arrays, index-aligned with ``keys``."""

    keys: list[str]
    kind: np.ndarray  # int8: MEMORY_NODE, USER_NODE, SESSION_NODE, SKILL_NODE, FACT_NODE
    x: np.ndarray  # float64, scene coordinates in the unit disc
    y: np.ndarray
    born: np.ndarray  # int32 timeline positions: visible while born <= p < died
    died: np.ndarray
    labels: list[str]
    texts_lower: list[str]
    tree: np.ndarray  # (m, 2) int32: chunk -> the session it was learned in
    links: np.ndarray  # (k, 2) int32: chunks sharing terms
    rings: list[tuple[float, str]] = field(default_factory=list)
    sectors: list[tuple[float, str]] = field(default_factory=list)  # (angle, label)
    index: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.index = {key: i for i, key in enumerate(self.keys)}

    def __len__(self) -> int:
        return len(self.keys)

    def alive(self, position: int) -> np.ndarray:
        return (self.born <= position) & (position < self.died)


def _angle_xy(angle: float, radius: float) -> tuple[float, float]:
    # Angle 0 at the top, growing clockwise, like a clock face; y grows downwards on screen.
    return radius * math.sin(angle), -radius * math.cos(angle)


def _tick_label(stamp: float, span: float) -> str:
    moment = datetime.fromtimestamp(stamp)
    if span < 2 * 86_400:
        return moment.strftime("%d %b %H:%M")
    if span < 400 * 86_400:
        return moment.strftime("%d %b")
    return moment.strftime("%b %Y")


def radial_layout(graph: nx.Graph, positions: int) -> GraphLayout:
    """Lay ``graph`` out radially (see the module notes); ``positions`` is the journey's "now"
    position, the died value of chunks still alive."""
    chunks = [n for n, d in graph.nodes(data=True) if d["kind"] != SESSION_NODE]
    sessions = [n for n, d in graph.nodes(data=True) if d["kind"] == SESSION_NODE]
    nodes = graph.nodes
    # Radius: rank of the time among every time in the graph; unknown times come first.
    stamps = sorted({t for t in (nodes[n]["time"] for n in graph.nodes) if t is not None})
    rank = {t: i for i, t in enumerate(stamps)}
    steps = max(len(stamps) - 1, 1)

    def radius(stamp: float | None) -> float:
        if stamp is None:
            return INNER_RADIUS
        return INNER_RADIUS + (1 - INNER_RADIUS) * (0.04 + 0.96 * rank[stamp] / steps)

    # Angle: a sector per category, in each sector a run of slots per learning session (per
    # entity, for facts).
    by_target: dict[int, dict[str | None, list[str]]] = {k: defaultdict(list) for k in SECTORS}
    for key in sorted(chunks, key=lambda k: nodes[k]["order"]):
        by_target[nodes[key]["kind"]][nodes[key]["cluster"]].append(key)
    used = [k for k in SECTORS if by_target[k]]

    def width(key: str) -> float:
        return 1.0 if nodes[key]["died"] is None else REMOVED_SLOT

    slots = {
        k: sum(width(m) for g in by_target[k].values() for m in g)
        + GROUP_GAP * (len(by_target[k]) - 1)
        for k in used
    }
    total = sum(slots.values()) or 1.0
    # Each sector's share: its slots, but never under the floor (then scaled to fit).
    shares = {k: max(slots[k], MIN_SECTOR_SHARE * total) for k in used}
    scale = sum(shares.values()) or 1.0
    # The gaps between sectors take a tenth of the circle however many sectors there are.
    gap = TARGET_GAP * min(1.0, 2 / max(len(used), 1))
    free = 2 * math.pi * (1 - gap * len(used)) if len(used) > 1 else 2 * math.pi * 0.98
    angle_of: dict[str, float] = {}
    group_angles: dict[str | None, list[tuple[int, float]]] = defaultdict(list)
    sectors: list[tuple[float, str]] = []
    cursor = 2 * math.pi * gap / 2 if len(used) > 1 else 0.0
    for kind in used:
        start = cursor
        span = free * shares[kind] / scale
        per_slot = span / (slots[kind] or 1.0)
        for members in by_target[kind].values():
            run_start = cursor
            for key in members:
                step = width(key) * per_slot
                angle_of[key] = cursor + step / 2
                cursor += step
            group = nodes[members[0]]["group"]
            if group is not None:
                group_angles[group].append((len(members), (run_start + cursor) / 2))
            cursor += GROUP_GAP * per_slot
        cursor -= GROUP_GAP * per_slot
        sectors.append(((start + cursor) / 2, SECTORS[kind]))
        cursor += 2 * math.pi * gap
    keys = chunks + sessions
    n = len(keys)
    x = np.zeros(n)
    y = np.zeros(n)
    kind_arr = np.zeros(n, dtype=np.int8)
    born = np.zeros(n, dtype=np.int32)
    died = np.zeros(n, dtype=np.int32)
    index = {key: i for i, key in enumerate(keys)}
    for i, key in enumerate(chunks):
        data = nodes[key]
        x[i], y[i] = _angle_xy(angle_of[key], radius(data["time"]))
        kind_arr[i] = data["kind"]
        born[i] = data["born"]
        died[i] = positions + 1 if data["died"] is None else data["died"]
    for i, key in enumerate(sessions, start=len(chunks)):
        data = nodes[key]
        members = [index[m] for m in graph.neighbors(key)]
        # The session sits over the biggest run of chunks it taught.
        runs = group_angles.get(key[2:]) or [(1, 0.0)]
        angle = max(runs)[1]
        stamp = data["time"]
        if stamp is None:
            known = [nodes[keys[m]]["time"] for m in members if nodes[keys[m]]["time"]]
            stamp = min(known) if known else None
        x[i], y[i] = _angle_xy(angle, radius(stamp) * 0.97)
        kind_arr[i] = SESSION_NODE
        # Shown from its first event while anything it taught or changed is in memory (an
        # interval that covers that, since intervals are what playback masks with).
        born[i] = max(min((born[m] for m in members), default=0), data.get("first", 0))
        died[i] = max((died[m] for m in members), default=positions + 1)
    tree, links = [], []
    for a, b, data in graph.edges(data=True):
        pair = (index[a], index[b])
        (tree if data["kind"] == "session" else links).append(pair)
    rings = []
    if stamps:
        span = stamps[-1] - stamps[0]
        for tick in range(RING_TICKS):
            stamp = stamps[round(tick * (len(stamps) - 1) / max(RING_TICKS - 1, 1))]
            rings.append((radius(stamp), _tick_label(stamp, span)))
    return GraphLayout(
        keys=keys,
        kind=kind_arr,
        x=x,
        y=y,
        born=born,
        died=died,
        labels=[nodes[k]["label"] for k in keys],
        texts_lower=[str(nodes[k]["text"]).lower() for k in keys],
        tree=np.array(tree, dtype=np.int32).reshape(-1, 2),
        links=np.array(links, dtype=np.int32).reshape(-1, 2),
        rings=rings,
        sectors=sectors,
    )


@dataclass
class JourneyBundle:
    """What the worker sends the GUI: the journey and its graph, laid out."""

    journey: Journey
    layout: GraphLayout


def bundle(journey: Journey) -> JourneyBundle:
    return JourneyBundle(journey, radial_layout(build_graph(journey), journey.now))


# -- the shared selection -----------------------------------------------------------------------


class JourneySelection(QObject):
    """The one selected chunk (or session) key, shared by every journey view and the memory
    panel; "" when nothing is selected. Setting the same key again emits nothing, so views can
    echo a selection back without loops."""

    changed = Signal(str)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._key = ""

    @property
    def key(self) -> str:
        return self._key

    def select(self, key: str) -> None:
        if key != self._key:
            self._key = key
            self.changed.emit(key)


# -- the timeline's events ------------------------------------------------------------------------


class JourneyEventModel(QAbstractListModel):
    """Recorded events of memory, skills and facts, oldest first. Row ``r`` leads to timeline
    position ``r + 1``."""

    EventRole = Qt.ItemDataRole.UserRole + 1
    PositionRole = Qt.ItemDataRole.UserRole + 2
    ActionRole = Qt.ItemDataRole.UserRole + 3

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._events: list[TimelineEvent] = []
        # Rows are formatted once: playback repaints the list every step.
        self._display: dict[tuple[str, int, float], str] = {}

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008 - Qt's signature
        return 0 if parent.isValid() else len(self._events)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or index.column() or not 0 <= index.row() < len(self._events):
            return None
        event = self._events[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            shown = self._display.get(event.uid)
            if shown is None:
                action = ACTION_LABELS.get(event.action, event.action)
                shown = f"{when(event.at)}  {event.place:<9} {action:<13} {event.summary}"
                self._display[event.uid] = shown
            return shown
        if role == Qt.ItemDataRole.ToolTipRole:
            number = (
                f"#{event.id}" if event.layer == "memory" else f"{event.layer} change {event.id}"
            )
            lines = [
                f"{number} · {when(event.at, True)} · {event.place}",
                f"{ACTION_LABELS.get(event.action, event.action)} ({event.origin})",
                event.summary,
            ]
            if event.session_id:
                lines.append(f"session {event.session_id}")
            if event.gap:
                lines.append("the file had also changed unrecorded before this event")
            if event.note:
                lines.append(event.note)
            return "\n".join(lines)
        if role == Qt.ItemDataRole.DecorationRole:
            return _swatch(event.action)
        if role == Qt.ItemDataRole.ForegroundRole and not event.commits:
            return QColor("#8a8f98")
        if role == self.EventRole:
            return event
        if role == self.PositionRole:
            return event.position
        if role == self.ActionRole:
            return event.action
        return None

    def roleNames(self) -> dict[int, QByteArray]:
        names = super().roleNames()
        names[self.EventRole] = QByteArray(b"event")
        names[self.PositionRole] = QByteArray(b"position")
        names[self.ActionRole] = QByteArray(b"action")
        return names

    def event_at(self, row: int) -> TimelineEvent | None:
        return self._events[row] if 0 <= row < len(self._events) else None

    def set_events(self, events: Sequence[TimelineEvent]) -> None:
        """New events; the history only grows, so new rows are appended, not reset."""
        old = [e.uid for e in self._events]
        if old == [e.uid for e in events[: len(old)]]:
            if len(events) > len(old):
                self.beginInsertRows(QModelIndex(), len(old), len(events) - 1)
                self._events.extend(events[len(old) :])
                self.endInsertRows()
            return
        self.beginResetModel()
        self._events = list(events)
        self._display = {}
        self.endResetModel()


# -- memory at one moment -------------------------------------------------------------------------


@dataclass(frozen=True)
class StateRow:
    key: str
    target: Target | None  # None for a skill or a fact
    text: str
    change: str | None = None  # "added" / "changed" by the event that led to this moment
    shown: str = field(default="", compare=False)  # the display line, formatted once
    layer: str = "memory"


# Facts listed at one moment, newest first: the list is rebuilt on every playback step, and
# a store of thousands would make each step slow while telling little more.
STATE_FACTS = 200


class JourneyStateModel(QAbstractListModel):
    """What the agent knew at one timeline position: both files' entries (MEMORY first), then
    the skills and the newest facts; rows keyed by chunk or item."""

    KeyRole = Qt.ItemDataRole.UserRole + 1
    TargetRole = Qt.ItemDataRole.UserRole + 2
    ChangeRole = Qt.ItemDataRole.UserRole + 3
    FullTextRole = Qt.ItemDataRole.UserRole + 4

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._rows: list[StateRow] = []
        self.position = 0
        self.facts_hidden = 0  # facts at this moment beyond the STATE_FACTS listed

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008 - Qt's signature
        return 0 if parent.isValid() else len(self._rows)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or index.column() or not 0 <= index.row() < len(self._rows):
            return None
        row = self._rows[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            return row.shown
        if role in (Qt.ItemDataRole.ToolTipRole, self.FullTextRole):
            return row.text
        if role == Qt.ItemDataRole.ForegroundRole and row.change:
            return ACTION_COLORS["add" if row.change == "added" else "replace"]
        if role == self.KeyRole:
            return row.key
        if role == self.TargetRole:
            return row.target.value if row.target is not None else row.layer
        if role == self.ChangeRole:
            return row.change
        return None

    def roleNames(self) -> dict[int, QByteArray]:
        names = super().roleNames()
        names[self.KeyRole] = QByteArray(b"key")
        names[self.TargetRole] = QByteArray(b"target")
        names[self.ChangeRole] = QByteArray(b"change")
        names[self.FullTextRole] = QByteArray(b"fullText")
        return names

    def rows(self) -> list[StateRow]:
        return list(self._rows)

    def row_of(self, key: str) -> int:
        return next((i for i, r in enumerate(self._rows) if r.key == key), -1)

    def key_at(self, row: int) -> str | None:
        return self._rows[row].key if 0 <= row < len(self._rows) else None

    def show(self, journey: Journey | None, position: int) -> None:
        """Memory as it was at ``position``, with the rows its event touched marked."""
        self.position = position
        self.facts_hidden = 0
        rows: list[StateRow] = []
        if journey is not None:
            event = journey.events[position - 1] if 0 < position <= len(journey.events) else None
            added = set(event.chunks) if event is not None and event.commits else set()
            changed_keys = set()
            if event is not None and event.changed:
                new_texts = {after for _before, after in event.changed}
                changed_keys = {
                    k
                    for k in added
                    if (c := journey.chunk(k)) is not None and c.text_at(position) in new_texts
                }
            for target in Target:
                for key in journey.order_at(target, position):
                    chunk = journey.chunk(key)
                    text = chunk.text_at(position) if chunk is not None else None
                    if text is None:
                        continue
                    change = None
                    if key in changed_keys:
                        change = "changed"
                    elif key in added and chunk is not None and chunk.born == position:
                        change = "added"
                    tag = "USER" if target is Target.USER else "MEM"
                    mark = {"added": "+ ", "changed": "~ "}.get(change or "", "  ")
                    shown = f"{mark}{tag}  {first_line(text)}"
                    rows.append(StateRow(key, target, text, change, shown))
            skills = journey.items_at(position, "skill")
            facts = journey.items_at(position, "fact")
            self.facts_hidden = max(0, len(facts) - STATE_FACTS)
            shown_facts = facts[::-1][:STATE_FACTS]
            for item in sorted(skills, key=lambda i: i.name) + shown_facts:
                text = item.text_at(position) or item.text
                change = None
                if item.key in added:
                    change = "added" if item.born == position else "changed"
                mark = {"added": "+ ", "changed": "~ "}.get(change or "", "  ")
                if item.layer == "skill":
                    title = item.title or first_line(text)
                    shown = f"{mark}SKILL {item.subject} — {title}"
                else:
                    shown = f"{mark}FACT  {first_line(text)}"
                rows.append(StateRow(item.key, None, text, change, shown, item.layer))
        sync_rows(self, self._rows, rows, key=lambda r: r.key)
