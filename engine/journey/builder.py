"""The incremental builder: the history only grows, so each load replays only what is new."""

from __future__ import annotations

import heapq
import math
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence

from engine.journey.layers import DiskSkill, HomeLayers, ItemChange, _Layers
from engine.journey.model import (
    EDGES_PER_CHUNK,
    TERM_MAX_CHUNKS,
    TERM_MAX_SHARE,
    Chunk,
    ChunkVersion,
    Edge,
    Item,
    ItemLayer,
    Journey,
    SessionNode,
    TimelineEvent,
    node_id,
    terms_of,
)
from engine.journey.replay import _proposed, _Replay, _summary
from engine.memory.entries import Target, parse, render
from engine.memory.history import COMMITTING_ACTIONS, MemoryEvent


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
        fact = self._layers.facts.get(item.subject)
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
