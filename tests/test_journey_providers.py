"""The journey reads other subsystems through their owners: any memory provider's facts
through the provider's journey hook, memory's events through History, session titles through
the session store; the journey's edit checks its chunk through the memory write's
precondition."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.config import update_config
from engine.home import Home
from engine.journey import edit_chunk, journey_providers, load_journey, node_id
from engine.memory.entries import Target
from engine.memory.errors import MemoryToolError
from engine.memory.service import MemoryService
from engine.plugins.base import MemoryProvider, ProviderFact
from engine.plugins.holographic.provider import HolographicProvider
from engine.plugins.holographic.store import FactStore, NewFact
from tests.test_plugins import install_distribution


class Pinboard(MemoryProvider):
    """A second, tiny provider: a few pinned notes, shown in the journey through the hook."""

    def __init__(self, notes: list[ProviderFact] | None, fail: bool = False) -> None:
        self.notes, self.fail = notes, fail

    @property
    def name(self) -> str:
        return "pinboard"

    def prefetch(self, query: str, session_id: str) -> str:
        return ""

    def sync_turn(self, user: str, assistant: str, session_id: str) -> None:
        return

    def journey_facts(self) -> list[ProviderFact] | None:
        if self.fail:
            raise OSError("the pinboard is offline")
        return self.notes


def test_a_second_providers_facts_appear_beside_the_local_store(
    service: MemoryService, home: Home
) -> None:
    service.write(Target.MEMORY, [{"action": "add", "content": "Kestrel runs on db3.internal"}])
    at = service.events(limit=1)[0].at
    store = FactStore(home.memory_store_db)
    local, _ = store.add(NewFact(content="Ada owns the staging database", entities=["Ada"]))
    store.close()
    pinned = ProviderFact(
        id=1, content="Kestrel's on-call is Grace", entities=["Kestrel"], created_at=at + 1,
        updated_at=at + 1,
    )  # fmt: skip
    providers = [HolographicProvider(home, service.config), Pinboard([pinned])]
    journey = load_journey(service, providers=providers)
    ids = {i.node_id for i in journey.items}
    # The local store's ids stay bare; another provider's carry its name, so they never clash.
    assert ids == {f"fact:{local.id}", "fact:pinboard:1"}
    item = journey.find_item("fact:pinboard:1")
    assert item is not None and item.text == "Kestrel's on-call is Grace"
    assert item.entities == ["Kestrel"] and item.learned_at == at + 1
    # It links to the memory chunk about the same thing, like any fact.
    assert any(
        e.kind == "terms" and item.key in (e.source, e.target) and "kestrel" in e.terms
        for e in journey.edges
    )


def test_a_provider_without_the_hook_shows_nothing_and_a_failing_one_is_said(
    service: MemoryService,
) -> None:
    class Silent(Pinboard):
        journey_facts = MemoryProvider.journey_facts  # the interface's default

    assert load_journey(service, providers=[Silent(None)]).items == []
    journey = load_journey(service, providers=[Pinboard(None, fail=True)])
    assert journey.items == []
    assert journey.layer_errors == [
        "the facts of pinboard could not be read: the pinboard is offline"
    ]


PINBOARD = textwrap.dedent(
    """
    from engine.plugins.base import MemoryProvider, ProviderFact

    class Pinboard(MemoryProvider):
        def __init__(self, home, config):
            self.home = home

        @property
        def name(self):
            return "pinboard"

        def prefetch(self, query, session_id):
            return ""

        def sync_turn(self, user, assistant, session_id):
            pass

        def journey_facts(self):
            return [ProviderFact(id="p1", content="Pinned: deploys freeze on Fridays",
                                 created_at=1.0, updated_at=1.0)]
    """
)


@pytest.fixture
def pinboard(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = install_distribution(
        tmp_path / "site", "cairn-pinboard", {"pinboard": "cairn_pinboard:Pinboard"}, PINBOARD
    )
    monkeypatch.syspath_prepend(str(root))
    yield root
    sys.modules.pop("cairn_pinboard", None)


def test_the_configured_provider_is_in_the_journey_by_default(home: Home, pinboard: Path) -> None:
    update_config(home, {"memory": {"provider": "pinboard"}})
    service = MemoryService(home)
    assert [p.name for p in journey_providers(home, service.config)] == ["holographic", "pinboard"]
    journey = load_journey(service)
    assert [i.node_id for i in journey.items] == ["fact:pinboard:p1"]
    assert not home.memory_store_db.exists()  # the local store is read, never created


def test_the_journey_replays_only_new_events_through_history(service: MemoryService) -> None:
    from engine.journey import JourneyBuilder

    assert service.history is not None
    service.write(Target.MEMORY, [{"action": "add", "content": "first"}])
    builder = JourneyBuilder()
    first = load_journey(service, builder=builder, layers=False)
    last = service.history.events(limit=1)[0].id
    assert service.history.events_after(last) == []
    assert service.history.events_after(last + 10) is None  # the history was replaced
    service.write(Target.MEMORY, [{"action": "add", "content": "second"}])
    assert [e.id for e in service.history.events_after(last) or []] == [last + 1]
    again = load_journey(service, builder=builder, layers=False)
    assert again.now == first.now + 1
    assert [c.text for c in again.chunks] == ["first", "second"]


def test_a_precondition_refuses_the_write_under_the_lock(service: MemoryService) -> None:
    service.write(Target.USER, [{"action": "add", "content": "Name: Ada"}])

    def refuse(entries: list[str]) -> None:
        assert entries == ["Name: Ada"]  # read under the lock, as the write sees them
        raise MemoryToolError("stale", "not what was shown")

    with pytest.raises(MemoryToolError, match="not what was shown"):
        service.write(
            Target.USER,
            [{"action": "replace", "old_text": "Ada", "content": "Name: Grace"}],
            precondition=refuse,
        )
    assert service.read(Target.USER).entries == ["Name: Ada"]
    # The journey's edit passes its check the same way: a stale id changes nothing.
    stale = node_id(Target.USER, 0, "Name: Somebody else")
    with pytest.raises(MemoryToolError) as refused:
        edit_chunk(service, stale, "Name: Grace")
    assert refused.value.code == "stale"
    assert service.read(Target.USER).entries == ["Name: Ada"]
