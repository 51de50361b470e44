"""The Holographic provider: a local fact store, no server, no model of its own.

What it does with each hook:

* ``system_prompt_block``: how many facts the store holds and that ``fact_store`` reaches them.
* ``prefetch``: the few best facts for the user's message (trust ≥ 0.3, sharing at least one
  keyword), excluding the mirrored built-in entries, which the prompt already shows. A search
  takes milliseconds, so ``queue_prefetch`` has nothing to warm.
* ``on_memory_write``: mirrors the built-in memory into facts with source ``builtin:<target>``
  so ``probe`` and ``reason`` see them too: an added entry becomes a fact, a removed one goes,
  and a replace re-reads the file to drop the entry it replaced. At each session start the
  mirror is also brought in line with the files, for changes made while no agent was running
  (``cairn memory`` in a terminal, an editor).
* ``sync_turn``: nothing. Facts are added deliberately, by the model through ``fact_store``;
  extracting them from every turn would fill the store with chatter.
* ``on_pre_compress``: the facts the conversation's recent user messages bring up, so the
  summary can refer to them.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from typing import Any

from engine.config import Config
from engine.home import Home
from engine.memory.entries import Target
from engine.memory.store import MemoryStore
from engine.plugins.base import MemoryProvider, ProviderFact
from engine.plugins.holographic.pending import FactStaging
from engine.plugins.holographic.store import FactStore, FactStoreError, NewFact
from engine.plugins.holographic.text import keywords
from engine.plugins.holographic.tool import make_tools
from engine.providers.base import ChatMessage
from engine.tools import Tool

log = logging.getLogger(__name__)

PREFETCH_LIMIT = 5
PREFETCH_MIN_TRUST = 0.3
MIRROR_PREFIX = "builtin:"


def _json_list(raw: object) -> list[str]:
    try:
        value = json.loads(str(raw))
    except ValueError:
        return []
    return [str(v) for v in value] if isinstance(value, list) else []


class HolographicProvider(MemoryProvider):
    description = "local fact store: entities, trust scores, holographic vectors (no server)"

    def __init__(self, home: Home, config: Config) -> None:
        self.home = home
        self.config = config
        self._store: FactStore | None = None

    @property
    def name(self) -> str:
        return "holographic"

    @property
    def store(self) -> FactStore:
        # Opened on first use: listing providers or building the agent should not create a
        # database file nobody has used yet.
        if self._store is None:
            self._store = FactStore(self.home.memory_store_db)
        return self._store

    # -- hooks -----------------------------------------------------------------------------

    def system_prompt_block(self) -> str:
        for target in Target:
            try:
                self._reconcile(target.value, f"{MIRROR_PREFIX}{target.value}")
            except Exception as exc:  # the mirror is a convenience; the block still counts
                log.warning("could not mirror %s: %s", target.filename, exc)
        stats = self.store.stats()
        if not stats["facts"]:
            return (
                "Fact store: empty. Save durable facts that do not belong in the bounded memory "
                "with fact_store (action add), one statement per fact, naming its entities."
            )
        return (
            f"Fact store: {stats['facts']:,} facts about {stats['entities']:,} entities. Facts "
            "relevant to a message may be recalled with it; use fact_store (search, probe, "
            "related, reason) for more, and fact_feedback when a fact helped or misled."
        )

    def prefetch(self, query: str, session_id: str) -> str:
        if not keywords(query):
            return ""
        found = self.store.search(
            query, limit=PREFETCH_LIMIT * 2, min_trust=PREFETCH_MIN_TRUST, record=False
        )
        shown = [f for f in found if not f.source.startswith(MIRROR_PREFIX)][:PREFETCH_LIMIT]
        if not shown:
            return ""
        lines = [f"- #{f.id} (trust {f.trust:.2f}) {f.content}" for f in shown]
        return "Facts from the fact store that may bear on this message:\n" + "\n".join(lines)

    def sync_turn(self, user: str, assistant: str, session_id: str) -> None:
        return

    def on_memory_write(self, action: str, target: str, content: str) -> None:
        source = f"{MIRROR_PREFIX}{target}"
        if action == "remove":
            self.store.remove_where(source=source, content=content)
            return
        self._mirror(content, target, source)
        if action == "replace":
            self._reconcile(target, source)

    def _reconcile(self, target: str, source: str) -> None:
        """Make the mirrored facts of ``target`` match its built-in file: entries no longer
        there are dropped, entries not yet mirrored added (unless the scanner refuses them)."""
        current = MemoryStore(self.home, self.config).read(Target(target)).entries
        keep = {" ".join(e.casefold().split()): e for e in current}
        mirrored = set()
        for fact in self.store.list(source=source, limit=10_000):
            key = " ".join(fact.content.casefold().split())
            if key in keep:
                mirrored.add(key)
            else:
                self.store.remove(fact.id)
        for key, entry in keep.items():
            if key not in mirrored:
                self._mirror(entry, target, source)

    def _mirror(self, content: str, target: str, source: str) -> None:
        try:
            self.store.add(NewFact(content=content, tags=[f"memory-{target}"], source=source))
        except FactStoreError as exc:
            log.info("built-in memory entry not mirrored: %s", exc.message)

    def journey_facts(self) -> list[ProviderFact] | None:
        """The fact store's facts, read-only; None when there is no store (opening it here
        never creates one, and a store another process is writing is only read)."""
        path = self.home.memory_store_db
        if not path.is_file():
            return None
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=5)
        try:
            rows = conn.execute(
                "SELECT id, content, entities, tags, trust, retrieval_count, created_at, "
                "updated_at FROM facts WHERE source NOT LIKE ? ORDER BY id",
                (MIRROR_PREFIX + "%",),
            ).fetchall()
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                return []
            raise
        finally:
            conn.close()
        return [
            ProviderFact.model_construct(
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
        ]

    def on_pre_compress(self, messages: list[ChatMessage]) -> str:
        asked = [str(m.get("content") or "") for m in messages if m.get("role") == "user"]
        recent = " ".join(asked[-3:])
        if not keywords(recent):
            return ""
        found = self.store.search(recent, limit=8, min_trust=PREFETCH_MIN_TRUST, record=False)
        return "\n".join(f"- #{f.id} {f.content}" for f in found)

    def tools(self) -> list[Tool]:
        # Writes wait for approval when memory's do: facts are recalled into later prompts.
        return make_tools(self.store, FactStaging(self.home, self.config))

    def setup(self) -> str:
        stats = self.store.stats()
        return f"fact store at {stats['path']} ({stats['facts']:,} facts)"

    def status(self) -> dict[str, Any]:
        return self.store.stats()

    def shutdown(self) -> None:
        if self._store is not None:
            self._store.close()
