"""Skills and provider facts in the journey: the skills' change history written by the skill
manager, and skills and facts replayed into the timeline by their real times, as nodes with
``skill:<name>`` and ``fact:<id>`` ids, their own events, and links to sessions and chunks."""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from engine.config import Config, SkillsConfig
from engine.home import Home
from engine.journey import FACT_TEXT_NOTE, Journey, JourneyBuilder, load_journey
from engine.memory.entries import Target
from engine.memory.service import MemoryService
from engine.plugins.holographic.store import FactStore, NewFact
from engine.skills.manage import HISTORY_FILE, SkillChange, SkillManager
from engine.skills.store import SkillError

SKILL_BODY = "1. Run make deploy\n2. Check the health page"


def history(home: Home) -> list[SkillChange]:
    path = home.skills_dir / HISTORY_FILE
    return [SkillChange.model_validate_json(line) for line in path.read_text().splitlines()]


def agent(home: Home, session: str | None = "s-skills", **skills: object) -> SkillManager:
    config = Config(skills=SkillsConfig(**skills)) if skills else Config()
    return SkillManager(home, config, author="agent", session_id=session)


def create(manager: SkillManager, name: str, description: str, body: str = SKILL_BODY) -> None:
    manager.run({"action": "create", "name": name, "description": description, "body": body})


def patch(manager: SkillManager, name: str, find: str, replace: str) -> None:
    manager.run({"action": "patch", "name": name, "find": find, "replace": replace})


def hand_made_skill(home: Home, name: str, description: str, mtime: float | None = None) -> Path:
    folder = home.skills_dir / name
    folder.mkdir(parents=True)
    path = folder / "SKILL.md"
    path.write_text(f"---\nname: {name}\ndescription: {description}\n---\n\nBody\n", "utf-8")
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def item_events(journey: Journey) -> list[tuple[str, str, str | None]]:
    return [(e.layer, e.action, e.subject) for e in journey.events if e.layer != "memory"]


# -- the skills' change history ------------------------------------------------------------------


def test_every_applied_skill_change_is_appended_with_its_texts(home: Home) -> None:
    manager = agent(home)
    create(manager, "deploy", "Deploy to staging")
    manager.run(
        {"action": "patch", "name": "deploy", "find": "make deploy", "replace": "make ship"}
    )
    manager.run(
        {"action": "write_file", "name": "deploy", "file": "references/a.md", "content": "one"}
    )
    manager.run({"action": "remove_file", "name": "deploy", "file": "references/a.md"})
    manager.run({"action": "delete", "name": "deploy"})
    records = history(home)
    assert [r.action for r in records] == ["create", "patch", "write_file", "remove_file", "delete"]
    created, patched, written, removed, deleted = records
    assert created.before is None and "make deploy" in (created.after or "")
    assert patched.before == created.after
    assert patched.after == (created.after or "").replace("make deploy", "make ship")
    assert (written.file, written.before, written.after) == ("references/a.md", None, "one")
    assert (removed.file, removed.before, removed.after) == ("references/a.md", "one", None)
    assert deleted.before == patched.after and deleted.after is None
    assert all(r.author == "agent" and r.session_id == "s-skills" for r in records)
    assert [r.at for r in records] == sorted(r.at for r in records)


def test_a_refused_or_staged_change_is_not_in_the_history(home: Home) -> None:
    manager = agent(home)
    create(manager, "deploy", "Deploy to staging")
    with pytest.raises(SkillError):
        manager.run({"action": "patch", "name": "deploy", "find": "absent", "replace": "x"})
    staging = agent(home, write_approval=True)
    staged = staging.run({"action": "delete", "name": "deploy"})
    assert staged["status"] == "staged"
    assert [r.action for r in history(home)] == ["create"]
    staging.approve(staged["pending_id"])
    last = history(home)[-1]
    assert (last.action, last.pending_id) == ("delete", staged["pending_id"])


def test_a_history_that_cannot_be_written_does_not_fail_the_change(home: Home) -> None:
    (home.skills_dir / HISTORY_FILE).mkdir(parents=True)  # a folder where the file goes
    result = agent(home).run(
        {"action": "create", "name": "deploy", "description": "Deploy", "body": "Steps"}
    )
    assert result["status"] == "applied"
    assert any("history" in w for w in result["warnings"])
    assert (home.skills_dir / "deploy" / "SKILL.md").exists()


def test_a_line_cut_short_by_a_crash_spoils_only_itself(service: MemoryService, home: Home) -> None:
    manager = agent(home)
    create(manager, "deploy", "Deploy to staging")
    log = home.skills_dir / HISTORY_FILE
    with log.open("ab") as handle:
        handle.write(b'{"at": 1.0, "action": "crea')  # the crash
    journey = load_journey(service)  # the partial line is not read as a record
    assert item_events(journey) == [("skill", "create", "deploy")]
    create(manager, "review", "Review a change")
    lines = log.read_text().splitlines()
    assert len(lines) == 3 and SkillChange.model_validate_json(lines[2]).skill == "review"
    assert item_events(load_journey(service)) == [
        ("skill", "create", "deploy"),
        ("skill", "create", "review"),
    ]


# -- skills in the journey ------------------------------------------------------------------------


def test_skills_are_nodes_and_events_in_time_order_with_memory(
    service: MemoryService, home: Home
) -> None:
    service.session_id = "s-memory"
    service.write(Target.MEMORY, [{"action": "add", "content": "Staging is db3.internal"}])
    manager = agent(home)
    create(manager, "deploy", "Deploy to staging")
    service.write(Target.MEMORY, [{"action": "add", "content": "Deploys go through CI"}])
    manager.run(
        {"action": "patch", "name": "deploy", "find": "make deploy", "replace": "make ship"}
    )
    create(manager, "old-skill", "Soon gone")
    manager.run({"action": "delete", "name": "old-skill"})
    journey = load_journey(service)
    kinds = [(e.layer, e.action) for e in journey.events]
    assert kinds == [
        ("memory", "add"),
        ("skill", "create"),
        ("memory", "add"),
        ("skill", "patch"),
        ("skill", "create"),
        ("skill", "delete"),
    ]
    assert [e.at for e in journey.events] == sorted(e.at for e in journey.events)
    deploy = journey.find_item("skill:deploy")
    assert deploy is not None and deploy.alive
    assert (deploy.born, deploy.session_id, deploy.title) == (2, "s-skills", "Deploy to staging")
    assert deploy.text_at(2) is not None and "make deploy" in deploy.text_at(2)  # type: ignore[operator]
    assert "make ship" in deploy.text and deploy.trust_level == "agent-created"
    assert journey.items_at(1) == []  # not made yet at the first memory event
    gone = next(i for i in journey.items if i.subject == "old-skill")
    assert (gone.node_id, gone.died, gone.removed_at) == (None, 6, journey.events[5].at)
    assert journey.find_item("skill:old-skill") is None
    patch = journey.events[3]
    assert patch.chunks == [deploy.key]
    ((before, after),) = patch.changed
    assert "make deploy" in before and "make ship" in after
    assert ("s-skills" in {s.id for s in journey.sessions}) and any(
        e.kind == "session" and e.source == deploy.key and e.target == "s-skills"
        for e in journey.edges
    )
    # A memory event id is not a skill event's, even when the numbers are equal.
    assert journey.position_of(2) == 3


def test_a_skill_made_outside_cairn_appears_at_its_file_time(
    service: MemoryService, home: Home
) -> None:
    service.write(Target.MEMORY, [{"action": "add", "content": "First note"}])
    time.sleep(0.02)
    service.write(Target.MEMORY, [{"action": "add", "content": "Second note"}])
    second, first = (e.at for e in service.events(limit=2))
    middle = (first + second) / 2
    hand_made_skill(home, "by-hand", "Written in an editor", mtime=middle)
    journey = load_journey(service)
    assert [(e.layer, e.action) for e in journey.events] == [
        ("memory", "add"),
        ("skill", "found"),
        ("memory", "add"),
    ]
    found = journey.events[1]
    assert found.at == pytest.approx(middle, abs=1e-3) and found.origin == "external"
    item = journey.find_item("skill:by-hand")
    assert item is not None and item.learned_at == pytest.approx(middle, abs=1e-3)
    assert item.trust_level == "community"


def test_hand_edits_and_removals_of_a_skill_are_noticed(service: MemoryService, home: Home) -> None:
    create(agent(home), "deploy", "Deploy to staging")
    builder = JourneyBuilder()
    load_journey(service, builder=builder)
    path = home.skills_dir / "deploy" / "SKILL.md"
    path.write_text(path.read_text() + "\n3. Tell the team\n", "utf-8")
    later = time.time()
    os.utime(path, (later, later))
    edited = load_journey(service, builder=builder)
    assert item_events(edited)[-1] == ("skill", "external_edit", "deploy")
    ((before, after),) = edited.events[-1].changed
    assert "Tell the team" not in before and "Tell the team" in after
    assert edited.events[-1].at == pytest.approx(later, abs=1e-3)
    shutil.rmtree(home.skills_dir / "deploy")
    gone = load_journey(service, builder=builder)
    assert item_events(gone)[-1] == ("skill", "vanished", "deploy")
    assert gone.find_item("skill:deploy") is None
    assert not gone.items[0].alive and "Tell the team" in gone.events[-1].removed[0]


def test_a_skill_changed_by_cairn_but_made_before_the_history_began(
    service: MemoryService, home: Home
) -> None:
    hand_made_skill(home, "legacy", "Older than the history")
    agent(home).run({"action": "patch", "name": "legacy", "find": "Body", "replace": "New body"})
    journey = load_journey(service)
    assert item_events(journey) == [("skill", "found", "legacy"), ("skill", "patch", "legacy")]
    (item,) = journey.items
    assert [v.text.split("\n")[-2] for v in item.versions] == ["Body", "New body"]


# -- provider facts in the journey ---------------------------------------------------------------


@pytest.fixture
def facts(home: Home) -> FactStore:
    store = FactStore(home.memory_store_db)
    yield store
    store.close()


def set_times(store: FactStore, fact_id: int, created: float, updated: float) -> None:
    from sqlalchemy import text

    with store.engine.begin() as conn:
        conn.execute(
            text("UPDATE facts SET created_at = :c, updated_at = :u WHERE id = :i"),
            {"c": created, "u": updated, "i": fact_id},
        )


def test_facts_are_nodes_and_events_at_their_store_times(
    service: MemoryService, home: Home, facts: FactStore
) -> None:
    service.write(Target.MEMORY, [{"action": "add", "content": "Kestrel runs on db3.internal"}])
    noted = service.events(limit=1)[0].at
    ada, _ = facts.add(NewFact(content="Ada owns the staging database", entities=["Ada"]))
    kestrel, _ = facts.add(
        NewFact(content="Kestrel is the image service", entities=["Kestrel"], tags=["infra"])
    )
    facts.add(NewFact(content="Deploys go through CI", source="builtin:memory"))  # a mirror
    set_times(facts, ada.id, noted - 100, noted - 100)
    set_times(facts, kestrel.id, noted + 1, noted + 50)
    journey = load_journey(service)
    assert [(e.layer, e.action, e.subject) for e in journey.events] == [
        ("fact", "add", str(ada.id)),
        ("memory", "add", None),
        ("fact", "add", str(kestrel.id)),
        ("fact", "update", str(kestrel.id)),
    ]
    assert [i.node_id for i in journey.items] == [f"fact:{ada.id}", f"fact:{kestrel.id}"]
    item = journey.find_item(f"fact:{kestrel.id}")
    assert item is not None
    assert (item.learned_at, item.changed_at) == (noted + 1, noted + 50)
    assert (item.entities, item.tags, item.trust) == (["Kestrel"], ["infra"], 0.5)
    # The store keeps only the latest text: the update says so rather than inventing a diff.
    assert journey.events[3].note == FACT_TEXT_NOTE and journey.events[3].changed == []
    # "Kestrel" is in the fact and in the memory chunk, and in nothing else: they link.
    chunk = journey.chunks[0]
    assert any(
        e.kind == "terms" and {e.source, e.target} == {chunk.key, item.key} and "kestrel" in e.terms
        for e in journey.edges
    )


def test_fact_updates_and_removals_seen_between_loads(
    service: MemoryService, home: Home, facts: FactStore
) -> None:
    fact, _ = facts.add(NewFact(content="Redis limit is 8 GB", entities=["Redis"]))
    builder = JourneyBuilder()
    load_journey(service, builder=builder)
    facts.update(fact.id, content="Redis limit is 12 GB")
    updated = load_journey(service, builder=builder)
    assert updated.events[-1].changed == [("Redis limit is 8 GB", "Redis limit is 12 GB")]
    (item,) = updated.items
    assert [v.text for v in item.versions] == ["Redis limit is 8 GB", "Redis limit is 12 GB"]
    assert item.text_at(1) == "Redis limit is 8 GB"
    before_removal = time.time()
    facts.remove(fact.id)
    removed = load_journey(service, builder=builder)
    last = removed.events[-1]
    assert (last.action, last.removed) == ("remove", ["Redis limit is 12 GB"])
    assert last.at >= before_removal and "noticed" in (last.note or "")
    assert removed.find_item(f"fact:{fact.id}") is None and not removed.items[0].alive


def test_loading_the_journey_never_creates_the_fact_store(
    service: MemoryService, home: Home
) -> None:
    service.write(Target.MEMORY, [{"action": "add", "content": "A note"}])
    journey = load_journey(service)
    assert journey.items == [] and not home.memory_store_db.exists()


# -- incremental and fresh builds agree ------------------------------------------------------------


def shape(journey: Journey) -> list[tuple[object, ...]]:
    events = [(e.layer, e.action, e.subject, e.at, tuple(e.chunks)) for e in journey.events]
    items = [(i.key, i.node_id, i.born, i.died, i.text) for i in journey.items]
    return [*events, *items]


def test_incremental_loads_match_a_fresh_build(
    service: MemoryService, home: Home, facts: FactStore
) -> None:
    builder = JourneyBuilder()
    manager = agent(home)
    steps: list[Callable[[], object]] = [
        lambda: service.write(Target.MEMORY, [{"action": "add", "content": "Note one"}]),
        lambda: create(manager, "deploy", "Deploy to staging"),
        lambda: facts.add(NewFact(content="Ada owns db3", entities=["Ada"])),
        lambda: service.write(Target.USER, [{"action": "add", "content": "Name: Ada"}]),
        lambda: manager.run(
            {"action": "patch", "name": "deploy", "find": "make deploy", "replace": "make x"}
        ),
        lambda: create(manager, "review", "Review a change"),
        lambda: manager.run({"action": "delete", "name": "review"}),
    ]
    for step in steps:
        step()
        incremental = load_journey(service, builder=builder)
        assert shape(incremental) == shape(load_journey(service))


def test_a_change_older_than_what_was_replayed_rebuilds_in_time_order(
    service: MemoryService, home: Home
) -> None:
    builder = JourneyBuilder()
    service.write(Target.MEMORY, [{"action": "add", "content": "Note one"}])
    create(agent(home), "deploy", "Deploy to staging")
    load_journey(service, builder=builder)
    early = service.events(limit=1)[0].at - 3_600
    hand_made_skill(home, "copied", "Copied in with its old file time", mtime=early)
    journey = load_journey(service, builder=builder)
    assert [(e.layer, e.action) for e in journey.events] == [
        ("skill", "found"),
        ("memory", "add"),
        ("skill", "create"),
    ]
    assert shape(journey) == shape(load_journey(service))
    assert shape(load_journey(service, builder=builder)) == shape(journey)  # nothing new


def test_a_replaced_skills_history_starts_the_replay_over(
    service: MemoryService, home: Home
) -> None:
    builder = JourneyBuilder()
    create(agent(home), "deploy", "Deploy to staging")
    create(agent(home), "review", "Review a change")
    load_journey(service, builder=builder)
    log = home.skills_dir / HISTORY_FILE
    first = log.read_text().splitlines()[0]
    record = json.loads(first)
    log.unlink()
    log.write_text(json.dumps(record) + "\n", "utf-8")  # shorter: another file now
    journey = load_journey(service, builder=builder)
    assert shape(journey) == shape(load_journey(service))
    assert [e.action for e in journey.events] == ["create", "found"]


def test_a_file_time_in_the_future_is_shown_when_it_was_noticed(
    service: MemoryService, home: Home
) -> None:
    hand_made_skill(home, "future", "Copied from a machine with a fast clock", time.time() + 3600)
    journey = load_journey(service)
    assert journey.events[0].action == "found" and journey.events[0].at <= time.time()
