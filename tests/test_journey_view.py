"""The journey's item models, the timeline (scrub, play, diffs) and the shared selection,
offscreen and without the worker: journey data comes from a real history."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication
from pytestqt.modeltest import ModelTester
from pytestqt.qtbot import QtBot

from app.models.journey_model import (
    JourneyEventModel,
    JourneySelection,
    JourneyStateModel,
    bundle,
)
from app.views.journey_timeline import JourneyTimeline, event_diff
from app.views.journey_view import JourneyView
from engine.home import Home
from engine.journey import Journey, load_journey
from engine.memory.entries import Target, render
from engine.memory.service import MemoryService
from tests.journey_data import write_history


@pytest.fixture
def journey(service: MemoryService, home: Home) -> Journey:
    service.session_id = "s1"
    service.write(Target.MEMORY, [{"action": "add", "content": "Staging DB is db2"}])
    service.write(Target.USER, [{"action": "add", "content": "Name: Ada"}])
    service.write(Target.MEMORY, [{"action": "add", "content": "Deploys go through CI"}])
    service.write(
        Target.MEMORY, [{"action": "replace", "old_text": "db2", "content": "Staging DB is db3"}]
    )
    service.set_approval(True)
    staged = service.write(Target.MEMORY, [{"action": "add", "content": "Maybe a fact"}])
    service.reject(staged["pending_id"])
    service.set_approval(False)
    path = home.memories_dir / "MEMORY.md"
    path.write_text(render(["Staging DB is db3", "Edited by hand"]), encoding="utf-8")
    service.rescan()
    return load_journey(service)


@pytest.fixture
def view(qtbot: QtBot, journey: Journey) -> Iterator[JourneyView]:
    widget = JourneyView()
    qtbot.addWidget(widget)
    widget.resize(1000, 800)
    widget.set_bundle(bundle(journey))
    widget.show()
    qtbot.waitExposed(widget)
    yield widget


def shown_state(model: JourneyStateModel) -> dict[str, list[str]]:
    state: dict[str, list[str]] = {"memory": [], "user": []}
    for row in model.rows():
        state[row.target.value].append(row.text)
    return state


def test_event_model_passes_the_model_tester_and_appends(
    qapp: QApplication, qtmodeltester: ModelTester, journey: Journey
) -> None:
    model = JourneyEventModel()
    qtmodeltester.check(model, force_py=True)
    model.set_events(journey.events[:3])
    inserted: list[tuple[int, int]] = []
    model.rowsInserted.connect(lambda _p, first, last: inserted.append((first, last)))
    model.set_events(journey.events)
    assert inserted == [(3, len(journey.events) - 1)]  # appended, not reset
    assert model.rowCount() == len(journey.events)
    staged = next(r for r in range(model.rowCount()) if model.event_at(r).action == "staged")
    assert "staged" in model.index(staged).data()
    assert model.index(staged).data(JourneyEventModel.PositionRole) == staged + 1
    qtmodeltester.check(model, force_py=True)


def test_state_model_passes_the_model_tester_through_a_scrub(
    qapp: QApplication, qtmodeltester: ModelTester, journey: Journey
) -> None:
    model = JourneyStateModel()
    qtmodeltester.check(model, force_py=True)
    for position in [journey.now, 0, 3, 1, journey.now, 4]:
        model.show(journey, position)
        assert shown_state(model) == journey.state_at(position)
    qtmodeltester.check(model, force_py=True)


def test_state_model_marks_what_the_event_changed(qapp: QApplication, journey: Journey) -> None:
    model = JourneyStateModel()
    replace = next(e for e in journey.events if e.action == "replace")
    model.show(journey, replace.position)
    marks = {r.text: r.change for r in model.rows()}
    assert marks["Staging DB is db3"] == "changed"
    assert marks["Deploys go through CI"] is None
    added = next(e for e in journey.events if e.added == ["Deploys go through CI"])
    model.show(journey, added.position)
    assert {r.text: r.change for r in model.rows()}["Deploys go through CI"] == "added"


def test_a_scrub_shows_memory_as_it_was_in_list_graph_and_diff(
    view: JourneyView, journey: Journey
) -> None:
    for event in journey.events:
        view.timeline.slider.setValue(event.position)
        assert shown_state(view.timeline.state) == journey.state_at(event.position)
        alive = {c.key for c in journey.chunks if c.text_at(event.position) is not None}
        assert {k for k in view.graph.visible_keys() if not k.startswith("s:")} == alive
        assert view.timeline.event_list.currentIndex().row() == event.position - 1
    replace = next(e for e in journey.events if e.action == "replace")
    view.timeline.slider.setValue(replace.position)
    assert ("-", "Staging DB is db2") in view.timeline.diff.lines
    assert ("+", "Staging DB is db3") in view.timeline.diff.lines
    rejected = next(e for e in journey.events if e.action == "rejected")
    lines = event_diff(journey, rejected)
    assert any(sign == "!" and "did not change" in text for sign, text in lines)
    external = next(e for e in journey.events if e.action == "external_edit")
    assert ("+", "Edited by hand") in event_diff(journey, external)
    view.timeline.slider.setValue(0)
    assert shown_state(view.timeline.state) == {"memory": [], "user": []}
    view.timeline.go_now()
    assert view.graph.position is None


def test_playback_steps_through_every_event_to_now(
    qtbot: QtBot, view: JourneyView, journey: Journey
) -> None:
    seen: list[int] = []
    view.timeline.positionChanged.connect(seen.append)
    view.timeline.speed.setCurrentIndex(view.timeline.speed.count() - 1)  # fastest
    view.timeline.slider.setValue(0)
    seen.clear()
    view.timeline.toggle_play()
    assert view.timeline.playing
    qtbot.waitUntil(lambda: not view.timeline.playing, timeout=5_000)
    assert seen == sorted(seen) and seen[-1] == journey.now
    assert view.graph.position is None
    # Play at the end replays from the start; pause stops it where it is.
    view.timeline.speed.setCurrentIndex(0)
    view.timeline.play()
    assert view.timeline.position == 0 and view.timeline.playing
    view.timeline.pause()
    assert not view.timeline.playing


def test_one_selection_across_graph_and_timeline(
    qtbot: QtBot, view: JourneyView, journey: Journey
) -> None:
    key = next(c.key for c in journey.chunks if c.text == "Staging DB is db3")
    pos = view.graph.screen_pos(key)
    assert pos is not None
    qtbot.mouseClick(view.graph, Qt.MouseButton.LeftButton, pos=pos.toPoint())
    assert view.selection.key == key
    rows = view.timeline.state_list.selectionModel().selectedRows()
    assert [view.timeline.state.key_at(r.row()) for r in rows] == [key]
    assert view.timeline.edit_button.isEnabled()
    # Selecting in the timeline's list moves the graph's selection.
    other = view.timeline.state.row_of(next(c.key for c in journey.chunks if c.text == "Name: Ada"))
    view.timeline.state_list.setCurrentIndex(view.timeline.state.index(other, 0))
    assert view.selection.key == view.timeline.state.key_at(other)
    # Scrubbing to before the chunk existed clears the list's selection, not the shared one.
    ada = view.selection.key
    view.timeline.slider.setValue(1)
    assert not view.timeline.state_list.selectionModel().selectedRows()
    assert view.selection.key == ada
    # Back at now the row is selected again.
    view.timeline.go_now()
    rows = view.timeline.state_list.selectionModel().selectedRows()
    assert [view.timeline.state.key_at(r.row()) for r in rows] == [ada]


def test_the_panel_and_the_journey_map_rows_to_chunks(view: JourneyView, journey: Journey) -> None:
    view.select_entry("memory", 1)
    chunk = journey.chunk(view.selection.key)
    assert chunk is not None and chunk.text == "Edited by hand"
    assert view.entry_of(chunk.key) == ("memory", 1)
    removed = next(c for c in journey.chunks if not c.alive)
    assert view.entry_of(removed.key) is None
    # The panel can be a step ahead of the journey: the text decides, not the row alone.
    view.select_entry("memory", 0, "Edited by hand")
    assert journey.chunk(view.selection.key).text == "Edited by hand"  # type: ignore[union-attr]
    before = view.selection.key
    view.select_entry("memory", 0, "A text the journey has not seen yet")
    assert view.selection.key == before


def test_selection_emits_only_on_change(qapp: QApplication) -> None:
    selection = JourneySelection()
    seen: list[str] = []
    selection.changed.connect(seen.append)
    selection.select("c1")
    selection.select("c1")
    selection.select("")
    assert seen == ["c1", ""]


def test_timeline_at_now_follows_new_events(
    qtbot: QtBot, service: MemoryService, journey: Journey
) -> None:
    timeline = JourneyTimeline()
    qtbot.addWidget(timeline)
    timeline.set_journey(journey)
    assert timeline.position == journey.now
    service.write(Target.MEMORY, [{"action": "add", "content": "One more"}])
    grown = load_journey(service)
    timeline.set_journey(grown)
    assert timeline.position == grown.now  # was at now: stays at now
    timeline.show_position(2)
    service.write(Target.MEMORY, [{"action": "add", "content": "And another"}])
    timeline.set_journey(load_journey(service))
    assert timeline.position == 2  # was in the past: stays there


def test_a_realistic_history_renders(qtbot: QtBot, tmp_path: Path) -> None:
    service = write_history(Home(tmp_path / "realistic"))
    journey = load_journey(service)
    assert len(journey.events) >= 200 and sum(c.alive for c in journey.chunks) >= 20
    widget = JourneyView()
    qtbot.addWidget(widget)
    widget.resize(1100, 800)
    widget.set_bundle(bundle(journey))
    widget.show()
    qtbot.waitExposed(widget)
    for position in range(0, journey.now + 1, 37):
        widget.timeline.slider.setValue(position)
        assert shown_state(widget.timeline.state) == journey.state_at(position)
    widget.grab()
