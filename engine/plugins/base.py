"""The contract between the agent and an external memory provider.

A provider adds a second memory beside the bounded files: it may contribute a block to the
frozen system prompt, recall text for each user message, learn from finished turns, mirror
what the agent writes to its built-in memory, leave notes for the compressor and offer tools
of its own. Only ``name``, ``prefetch`` and ``sync_turn`` are required; every other hook has a
harmless default.

Providers are constructed by :mod:`engine.plugins.manager` as ``factory(home, config)`` and
are only ever called through it, which runs the slow hooks off the agent's thread, bounds how
long anything may take and turns every exception into a warning. A provider therefore does not
need to guard itself against being slow, but it must be safe to call from a thread other than
the one that built it (hooks run on the manager's worker threads, tools on the agent's).

The hooks, in the order the agent calls them:

1. ``system_prompt_block()`` when a session's prompt is built (start, ``/new``, compression);
   the text is frozen with the prompt for the whole session.
2. ``prefetch(query, session_id)`` once per user turn, before the first model call; the result
   is injected into that turn's model calls only, never stored in the transcript.
3. ``on_memory_write(action, target, content)`` whenever a write to the built-in memory is
   committed (staged writes are not, until approved).
4. ``sync_turn(user, assistant, session_id)`` after each completed turn, then
   ``queue_prefetch(query, session_id)`` with the same user message.
5. ``on_pre_compress(messages)`` before compression summarises the conversation; its text goes
   to the summariser.
6. ``on_session_end(messages)`` when a session ends: ``/new``, compression, closing.
7. ``shutdown()`` once, when the agent closes.

Outside a session, ``journey_facts()`` (optional) lists what the provider holds now, so
``cairn journey`` and the window's journey show any provider's facts beside memory's chunks.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from pydantic import BaseModel, Field

from engine.providers.base import ChatMessage
from engine.tools import Tool

__all__ = ["MemoryProvider", "ProviderFact"]


class ProviderFact(BaseModel):
    """One fact a provider holds, as the journey shows it.

    ``created_at`` and ``updated_at`` (unix seconds) place it on the timeline: a fact whose
    ``updated_at`` moved is shown as changed then; one no longer listed, as removed when the
    journey noticed. ``id`` is unique within the provider.
    """

    id: int | str
    content: str
    entities: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    trust: float | None = None
    retrievals: int | None = None
    created_at: float
    updated_at: float


class MemoryProvider(ABC):
    """One external memory. Subclasses set ``name`` (the value of ``memory.provider``)."""

    #: One line for ``cairn memory setup`` listings.
    description: str = ""

    @property
    @abstractmethod
    def name(self) -> str:
        """The name the provider is selected by (``memory.provider``)."""

    # -- prompt and recall ---------------------------------------------------------------

    def system_prompt_block(self) -> str:
        """Text for the volatile tier of the system prompt, frozen for the session."""
        return ""

    @abstractmethod
    def prefetch(self, query: str, session_id: str) -> str:
        """Recalled text relevant to ``query`` (the user's message); "" for nothing.

        Runs on a worker thread. The agent waits for it only briefly; a late answer is used
        for the next model call instead.
        """

    def queue_prefetch(self, query: str, session_id: str) -> None:
        """Start work that makes the next ``prefetch`` fast (warm a cache, ask a server)."""
        return

    # -- learning ------------------------------------------------------------------------

    @abstractmethod
    def sync_turn(self, user: str, assistant: str, session_id: str) -> None:
        """Learn from a completed turn: the user's message and the final reply."""

    def on_memory_write(self, action: str, target: str, content: str) -> None:
        """A committed write to the built-in memory: ``action`` add / replace / remove,
        ``target`` memory / user, ``content`` the entry added, its new text, or the entry
        removed."""
        return

    def on_pre_compress(self, messages: list[ChatMessage]) -> str:
        """Notes for the compressor about ``messages`` (the conversation about to be
        summarised); "" for none."""
        return ""

    def on_session_end(self, messages: list[ChatMessage]) -> None:
        """The session with ``messages`` has ended."""
        return

    # -- the journey ---------------------------------------------------------------------

    def journey_facts(self) -> list[ProviderFact] | None:
        """Every fact the provider holds now (not its copies of MEMORY.md and USER.md, which
        the journey shows already), for the journey; None (the default) for a provider with
        nothing to show. Called outside sessions, possibly with no agent running: read
        without creating anything."""
        return None

    # -- tools and lifetime --------------------------------------------------------------

    def tools(self) -> list[Tool]:
        """Tools the model may call; names taken by core tools are refused."""
        return []

    def setup(self) -> str:
        """First-time preparation for ``cairn memory setup``; a line saying what was done."""
        return f"{self.name} is ready"

    def status(self) -> dict[str, Any]:
        """Facts about the provider's state for ``cairn memory status`` (JSON-serialisable)."""
        return {}

    def shutdown(self) -> None:
        """Release files and connections; called once, after every other hook."""
        return
