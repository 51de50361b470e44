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
folders as they are, facts from each memory provider's journey hook
(``MemoryProvider.journey_facts``; the local Holographic store implements it). Their changes
are merged with the memory events by time; each skill (``skill:<name>``) or fact
(``fact:<id>``, ``fact:<provider>:<id>`` for another provider's) is an :class:`Item`, shown
but not edited from here.
"""

from engine.journey.builder import JourneyBuilder, build_journey, term_edges
from engine.journey.edit import Resolved, delete_chunk, edit_chunk, resolve
from engine.journey.layers import (
    FACT_TEXT_NOTE,
    SKILL_FILE,
    SKILLS_HISTORY,
    SKILLS_LOCK,
    DiskSkill,
    FactRow,
    HomeLayers,
    ItemChange,
    journey_providers,
)
from engine.journey.load import load_journey, session_nodes
from engine.journey.model import (
    EDGES_PER_CHUNK,
    MAX_PAIRING,
    NODE_ID,
    SAME_CHUNK_RATIO,
    TERM_MAX_CHUNKS,
    TERM_MAX_SHARE,
    VERSION_CHARS,
    Action,
    Chunk,
    ChunkVersion,
    Edge,
    EdgeKind,
    Item,
    ItemLayer,
    Journey,
    Layer,
    Lifetime,
    NodeRef,
    SessionNode,
    TimelineEvent,
    node_id,
    parse_node_id,
    terms_of,
    version_of,
)

__all__ = [
    "EDGES_PER_CHUNK",
    "FACT_TEXT_NOTE",
    "MAX_PAIRING",
    "NODE_ID",
    "SAME_CHUNK_RATIO",
    "SKILLS_HISTORY",
    "SKILLS_LOCK",
    "SKILL_FILE",
    "TERM_MAX_CHUNKS",
    "TERM_MAX_SHARE",
    "VERSION_CHARS",
    "Action",
    "Chunk",
    "ChunkVersion",
    "DiskSkill",
    "Edge",
    "EdgeKind",
    "FactRow",
    "HomeLayers",
    "Item",
    "ItemChange",
    "ItemLayer",
    "Journey",
    "JourneyBuilder",
    "Layer",
    "Lifetime",
    "NodeRef",
    "Resolved",
    "SessionNode",
    "TimelineEvent",
    "build_journey",
    "delete_chunk",
    "edit_chunk",
    "journey_providers",
    "load_journey",
    "node_id",
    "parse_node_id",
    "resolve",
    "session_nodes",
    "term_edges",
    "terms_of",
    "version_of",
]
