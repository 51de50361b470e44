"""Skills and facts in the radial graph, the timeline and the journey view, offscreen: their
sectors, filters, tooltips, view-only actions, events with their diffs, and the state list."""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
import pytest
from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from app.models.journey_model import (
    FACT_NODE,
    MEMORY_NODE,
    SESSION_NODE,
    SKILL_NODE,
    TARGET_GAP,
    JourneyStateModel,
    build_graph,
    bundle,
    radial_layout,
)
from app.views.journey_timeline import event_diff
from app.views.journey_view import ItemViewer, JourneyView
from engine.config import Config
from engine.home import Home
from engine.journey import Item, Journey, load_journey
from engine.memory.entries import Target
from engine.memory.service import MemoryService
from engine.plugins.holographic.store import FactStore, NewFact
from engine.sessions.store import SessionStore
from engine.skills.manage import SkillManager


@pytest.fixture
def journey(service: MemoryService, home: Home) -> Journey:
    SessionStore.open(home).create_session(session_id="s-deploy", title="Fix the deploy")
    service.session_id = "s-deploy"
    service.write(Target.MEMORY, [{"action": "add", "content": "Staging is on db3.internal"}])
    skills = SkillManager(home, Config(), author="agent", session_id="s-deploy")
    skills.run(
        {
            "action": "create",
            "name": "deploy-staging",
            "description": "Deploy a branch to staging",
            "body": "Merge into staging.\n\nWatch the deploy job.",
        }
    )
    store = FactStore(home.memory_store_db)
    store.add(NewFact(content="Kestrel is the image service", entities=["Kestrel"]))
    store.close()
    skills.run(
        {
            "action": "patch",
            "name": "deploy-staging",
            "find": "Watch the deploy job.",
            "replace": "Watch the deploy job (deploy.yml).",
        }
    )
    service.write(Target.USER, [{"action": "add", "content": "Name: Ada"}])
    return load_journey(service)


@pytest.fixture
def view(qtbot: QtBot, journey: Journey) -> Iterator[JourneyView]:
    widget = JourneyView()
    qtbot.addWidget(widget)
    widget.resize(1100, 800)
    widget.set_bundle(bundle(journey))
    widget.show()
    qtbot.waitExposed(widget)
    yield widget


def skill(journey: Journey) -> Item:
    found = journey.find_item("skill:deploy-staging")
    assert found is not None
    return found


def fact(journey: Journey) -> Item:
    return next(i for i in journey.items if i.layer == "fact")


def angle(layout: object, key: str) -> float:
    i = layout.index[key]  # type: ignore[attr-defined]
    x, y = layout.x[i], layout.y[i]  # type: ignore[attr-defined]
    return math.atan2(x, -y) % (2 * math.pi)


def test_skills_and_facts_get_their_own_sectors(journey: Journey) -> None:
    layout = radial_layout(build_graph(journey), journey.now)
    assert {name for _a, name in layout.sectors} == {"MEMORY", "USER", "SKILLS", "FACTS"}
    assert layout.kind[layout.index[skill(journey).key]] == SKILL_NODE
    assert layout.kind[layout.index[fact(journey).key]] == FACT_NODE
    # The skill sits in the session that made it: a tree edge to its session's diamond.
    tree = {(layout.keys[a], layout.keys[b]) for a, b in layout.tree.tolist()}
    assert (skill(journey).key, "s:s-deploy") in tree
    by_name = {name: a for a, name in layout.sectors}
    assert by_name["MEMORY"] < by_name["USER"] < by_name["SKILLS"] < by_name["FACTS"]


def test_a_few_skills_keep_a_usable_sector_beside_many_facts(
    service: MemoryService, home: Home
) -> None:
    SkillManager(home, Config(), author="user").run(
        {"action": "create", "name": "one", "description": "A skill", "body": "Steps"}
    )
    store = FactStore(home.memory_store_db)
    store.add_many(NewFact(content=f"Server {n} runs in rack {n % 7}") for n in range(400))
    store.close()
    journey = load_journey(service)
    layout = radial_layout(build_graph(journey), journey.now)
    facts = sorted(angle(layout, i.key) for i in journey.items if i.layer == "fact")
    (lone,) = (i for i in journey.items if i.layer == "skill")
    assert angle(layout, lone.key) < facts[0]
    # Beside the two gaps between sectors, the lone skill keeps over a twentieth of the
    # circle (by count it would get 1/401 of it).
    left = 2 * math.pi - (facts[-1] - facts[0])
    assert left >= 2 * (2 * math.pi * TARGET_GAP) + 2 * math.pi / 20


def test_source_filters_hide_and_show_skills_and_facts(view: JourneyView, journey: Journey) -> None:
    graph = view.graph
    assert {skill(journey).key, fact(journey).key} <= set(graph.visible_keys())
    view.sources["skills"].setChecked(False)
    assert skill(journey).key not in graph.visible_keys()
    assert fact(journey).key in graph.visible_keys()
    view.sources["facts"].setChecked(False)
    layout = graph.layout_data
    assert layout is not None
    kinds = {int(layout.kind[layout.index[k]]) for k in graph.visible_keys()}
    assert SKILL_NODE not in kinds and FACT_NODE not in kinds and MEMORY_NODE in kinds
    view.sources["skills"].setChecked(True)
    assert skill(journey).key in graph.visible_keys()
    view.filter.setText("kestrel")
    assert graph.visible_keys() == []  # the fact matches, but facts are off
    view.sources["facts"].setChecked(True)
    assert graph.visible_keys() == [fact(journey).key]


def test_tooltips_of_a_skill_and_a_fact(view: JourneyView, journey: Journey) -> None:
    tip = view.graph.tooltip_for(skill(journey).key)
    assert tip.startswith("deploy-staging\nDeploy a branch to staging\nskill · agent-created")
    assert "session: Fix the deploy" in tip and tip.endswith("skill:deploy-staging")
    tip = view.graph.tooltip_for(fact(journey).key)
    assert tip.startswith("Kestrel is the image service\nfact · trust 0.50 · learned ")
    assert "about Kestrel" in tip and tip.endswith(f"fact:{fact(journey).subject}")


def test_double_click_and_enter_view_a_skill_but_never_edit_it(
    qtbot: QtBot, view: JourneyView, journey: Journey
) -> None:
    graph = view.graph
    key = skill(journey).key
    pos = graph.screen_pos(key)
    assert pos is not None
    edits: list[str] = []
    graph.editRequested.connect(edits.append)
    with qtbot.waitSignal(graph.viewRequested) as shown:
        qtbot.mouseDClick(graph, Qt.MouseButton.LeftButton, pos=pos.toPoint())
    assert shown.args == [key] and edits == []
    viewer = view.viewer
    assert isinstance(viewer, ItemViewer) and viewer.isVisible()
    assert viewer.text.toPlainText() == skill(journey).text
    assert "(deploy.yml)" in viewer.text.toPlainText() and viewer.text.isReadOnly()
    assert "trust: agent-created" in viewer.details.text()
    view.selection.select(fact(journey).key)
    graph.setFocus()
    with qtbot.waitSignal(graph.viewRequested) as shown:
        qtbot.keyClick(graph, Qt.Key.Key_Return)
    assert shown.args == [fact(journey).key] and edits == []
    assert view.viewer is not viewer and view.viewer.windowTitle().startswith("Fact #")
    deletes: list[str] = []
    graph.deleteRequested.connect(deletes.append)
    qtbot.keyClick(graph, Qt.Key.Key_Delete)
    assert deletes == []


def test_the_timeline_lists_skill_and_fact_events_with_their_diffs(
    view: JourneyView, journey: Journey
) -> None:
    timeline = view.timeline
    rows = [timeline.events.index(r, 0).data() for r in range(timeline.events.rowCount())]
    assert [row.split()[2:4] for row in rows] == [
        ["MEMORY.md", "added"],
        ["skills", "created"],
        ["facts", "added"],
        ["skills", "patched"],
        ["USER.md", "added"],
    ]
    patch = next(e for e in journey.events if e.action == "patch")
    timeline.show_position(patch.position)
    lines = timeline.diff.lines
    assert lines[0][0] == "#" and lines[0][1].startswith("skill deploy-staging · patched")
    assert ("-", "Watch the deploy job.") in lines
    assert ("+", "Watch the deploy job (deploy.yml).") in lines
    assert ("!", "File: SKILL.md") in lines
    # Paragraphs the patch did not touch are folded or shown unchanged, never as changes.
    assert not any(sign in "+-" and "Merge into staging." in text for sign, text in lines)
    created = next(e for e in journey.events if e.layer == "fact")
    assert ("+", "Kestrel is the image service") in event_diff(journey, created)


def test_the_state_list_has_the_skills_and_facts_of_the_moment(
    view: JourneyView, journey: Journey
) -> None:
    timeline = view.timeline

    def listed() -> list[str]:
        return [r.shown.strip() for r in timeline.state.rows()]

    assert timeline.state.rowCount() == 4
    assert listed()[2].startswith("SKILL deploy-staging — Deploy a branch to staging")
    assert listed()[3] == "FACT  Kestrel is the image service"
    timeline.show_position(1)  # only the first memory note existed then
    assert listed() == ["+ MEM  Staging is on db3.internal"]
    patch = next(e for e in journey.events if e.action == "patch")
    timeline.show_position(patch.position)
    marks = {r.key: r.change for r in timeline.state.rows()}
    assert marks[skill(journey).key] == "changed" and marks[fact(journey).key] is None
    # Selecting the skill's row selects its node; it can be viewed, not edited.
    row = timeline.state.row_of(skill(journey).key)
    timeline.state_list.setCurrentIndex(timeline.state.index(row, 0))
    assert view.selection.key == skill(journey).key
    assert timeline.view_button.isEnabled()
    assert not timeline.edit_button.isEnabled() and not timeline.delete_button.isEnabled()
    timeline.view_button.click()
    assert view.viewer is not None and view.viewer.key == skill(journey).key


def test_the_state_model_lists_only_the_newest_facts(
    service: MemoryService, home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    import app.models.journey_model as journey_model

    monkeypatch.setattr(journey_model, "STATE_FACTS", 3)
    store = FactStore(home.memory_store_db)
    for n in range(5):
        store.add(NewFact(content=f"Fact number {n} about rack {n}"))
    store.close()
    journey = load_journey(service)
    model = JourneyStateModel()
    model.show(journey, journey.now)
    assert [r.text for r in model.rows()] == [f"Fact number {n} about rack {n}" for n in (4, 3, 2)]
    assert model.facts_hidden == 2


def test_skills_and_facts_paint_in_their_colours(view: JourneyView, journey: Journey) -> None:
    from app.views.radial_graph import NODE_COLORS

    image = view.graph.grab().toImage()
    for key, kind in ((skill(journey).key, SKILL_NODE), (fact(journey).key, FACT_NODE)):
        pos = view.graph.screen_pos(key)
        assert pos is not None
        drawn = image.pixelColor(pos.toPoint())
        want = NODE_COLORS[kind]
        assert abs(drawn.red() - want.red()) + abs(drawn.green() - want.green()) < 60
    assert SESSION_NODE in set(np.unique(view.graph.layout_data.kind).tolist())  # type: ignore[union-attr]
