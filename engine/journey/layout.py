"""The journey as a graph, laid out radially: plain data (numpy arrays) computed off the GUI
thread, so a client only draws it.

A networkx graph of the journey, laid out radially in O(n) after one sort. Radius is *time*
(when a chunk was learned, when a session started), mapped through its rank so that a burst
of learning does not pile up on one ring and a quiet month does not leave an empty band;
angle is *category*: MEMORY.md, USER.md, skills and provider facts each own a sector sized by
how many nodes it holds (with a floor, so a few skills are not squeezed out by thousands of
facts), and inside it each session's nodes sit side by side (facts, which have no session,
side by side with the others about the same entity). A node's place never depends on the
moment shown, so playback only changes which nodes are visible, never where they are.
"""

from __future__ import annotations

import bisect
import math
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

import networkx as nx
import numpy as np

from engine.journey.model import Journey
from engine.memory.entries import Target

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


def _first_line(text: str) -> str:
    return text.split("\n", 1)[0]


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
            label=_first_line(chunk.text),
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
    if span < 180:  # events within a few minutes: the seconds tell the rings apart
        return moment.strftime("%H:%M:%S")
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
    # Radius: rank among every node's time; unknown times come first. Nodes learned at one
    # moment (a first batch of entries, an import) are ranked by the order they were learned
    # in, each a step further out: ranked by time alone they shared one small ring at the
    # centre and were drawn on top of each other.
    timed = sorted(
        (n for n in chunks if nodes[n]["time"] is not None),
        key=lambda n: (nodes[n]["time"], nodes[n]["order"]),
    )
    untimed = sorted(
        (n for n in chunks if nodes[n]["time"] is None), key=lambda n: nodes[n]["order"]
    )
    place = {key: i for i, key in enumerate(untimed + timed)}
    times = [nodes[n]["time"] for n in timed]
    stamps = sorted({t for t in (nodes[n]["time"] for n in graph.nodes) if t is not None})
    steps = max(len(place) - 1, 1)

    def radius_at(rank: int) -> float:
        return INNER_RADIUS + (1 - INNER_RADIUS) * (0.04 + 0.96 * min(rank, steps) / steps)

    def radius(stamp: float | None, key: str | None = None) -> float:
        if key is not None and key in place:
            return radius_at(place[key])
        if stamp is None:
            return INNER_RADIUS
        # A session or a ring: where its time falls among the chunks' times.
        return radius_at(len(untimed) + bisect.bisect_left(times, stamp))

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
        x[i], y[i] = _angle_xy(angle_of[key], radius(data["time"], key))
        kind_arr[i] = data["kind"]
        born[i] = data["born"]
        died[i] = positions + 1 if data["died"] is None else data["died"]
    for i, key in enumerate(sessions, start=len(chunks)):
        data = nodes[key]
        rows = [index[m] for m in graph.neighbors(key)]
        # The session sits over the biggest run of chunks it taught.
        runs = group_angles.get(key[2:]) or [(1, 0.0)]
        angle = max(runs)[1]
        stamp = data["time"]
        if stamp is None:
            known = [nodes[keys[m]]["time"] for m in rows if nodes[keys[m]]["time"]]
            stamp = min(known) if known else None
        x[i], y[i] = _angle_xy(angle, radius(stamp) * 0.97)
        kind_arr[i] = SESSION_NODE
        # Shown from its first event while anything it taught or changed is in memory (an
        # interval that covers that, since intervals are what playback masks with).
        born[i] = max(min((born[m] for m in rows), default=0), data.get("first", 0))
        died[i] = max((died[m] for m in rows), default=positions + 1)
    tree: list[tuple[int, int]] = []
    links: list[tuple[int, int]] = []
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
