"""Replaying memory's change history into chunks and timeline events."""

from __future__ import annotations

from collections.abc import Sequence
from difflib import SequenceMatcher

from engine.journey.model import MAX_PAIRING, SAME_CHUNK_RATIO, Chunk, ChunkVersion, Item
from engine.memory.entries import Target
from engine.memory.errors import MemoryToolError
from engine.memory.history import MemoryEvent
from engine.memory.operations import parse_operations
from engine.memory.service import describe

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
        for j, slot in enumerate(result):
            if slot is None:
                made = self.new(target, after[j], position, event, action)
                result[j] = made
                added.append(made)
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
        old_at = next((i for i in gone if before[i] == old_text), None)
        new_at = next((j for j in free_new if after[j] == new_text), None)
        if old_at is not None and new_at is not None:
            pairs.append((old_at, new_at))
            gone.remove(old_at)
            free_new.remove(new_at)
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
