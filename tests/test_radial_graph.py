"""The radial graph: layout, masks for time and filters, hit-testing, zoom and pan, clicks,
tooltips — offscreen, on journey data built from a real history."""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
import pytest
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QPalette
from pytestqt.qtbot import QtBot

from app.models.journey_model import (
    INNER_RADIUS,
    MEMORY_NODE,
    SESSION_NODE,
    USER_NODE,
    JourneyBundle,
    build_graph,
    bundle,
    radial_layout,
)
from app.views.radial_graph import RadialGraph
from engine.home import Home
from engine.journey import Journey, load_journey
from engine.memory.entries import Target
from engine.memory.service import MemoryService
from engine.sessions.store import SessionStore
from tests.journey_data import big_journey


@pytest.fixture
def journey(service: MemoryService, home: Home) -> Journey:
    store = SessionStore.open(home)
    for sid, title in (("s-one", "Set up staging"), ("s-two", "Profile")):
        store.create_session(session_id=sid, title=title)
    service.session_id = "s-one"
    for text in ("Staging DB is PostgreSQL 16 on db3", "Deploys go through CI", "Temp note"):
        service.write(Target.MEMORY, [{"action": "add", "content": text}])
    service.session_id = "s-two"
    service.write(Target.USER, [{"action": "add", "content": "Name: Ada; uses PostgreSQL"}])
    service.write(Target.MEMORY, [{"action": "remove", "old_text": "Temp note"}])
    service.write(
        Target.MEMORY,
        [{"action": "replace", "old_text": "Deploys", "content": "Deploys go through GitHub CI"}],
    )
    return load_journey(service)


@pytest.fixture
def graph(qtbot: QtBot, journey: Journey) -> Iterator[RadialGraph]:
    widget = RadialGraph()
    qtbot.addWidget(widget)
    widget.resize(600, 600)
    widget.set_bundle(bundle(journey))
    widget.show()
    qtbot.waitExposed(widget)
    yield widget


def key_of(journey: Journey, text: str) -> str:
    return next(c.key for c in journey.chunks if c.text.startswith(text))


def test_layout_puts_time_on_the_radius_and_sources_in_sectors(journey: Journey) -> None:
    layout = radial_layout(build_graph(journey), journey.now)
    radius = np.hypot(layout.x, layout.y)
    chunks = sorted(journey.chunks, key=lambda c: c.learned_at or 0)
    radii = [radius[layout.index[c.key]] for c in chunks]
    assert radii == sorted(radii) and radii[0] > INNER_RADIUS
    assert float(radius.max()) <= 1.0 + 1e-9
    angles = {
        key: math.atan2(layout.x[i], -layout.y[i]) % (2 * math.pi)
        for key, i in layout.index.items()
    }
    memory = [angles[c.key] for c in journey.chunks if c.target is Target.MEMORY]
    user = [angles[c.key] for c in journey.chunks if c.target is Target.USER]
    assert max(memory) < min(user)  # two sectors, not interleaved
    assert {n for _a, n in layout.sectors} == {"MEMORY", "USER"}
    # Deterministic: the same journey lays out the same way.
    again = radial_layout(build_graph(journey), journey.now)
    assert np.array_equal(again.x, layout.x) and np.array_equal(again.y, layout.y)
    # The session edge of a chunk goes to the session that taught it.
    tree = {(layout.keys[a], layout.keys[b]) for a, b in layout.tree.tolist()}
    staging = key_of(journey, "Staging")
    assert (staging, "s:s-one") in tree or ("s:s-one", staging) in tree


def test_the_moment_shown_decides_what_is_visible(graph: RadialGraph, journey: Journey) -> None:
    temp = key_of(journey, "Temp note")
    user = key_of(journey, "Name: Ada")
    assert temp not in graph.visible_keys()  # removed by now
    added_temp = next(e.position for e in journey.events if "Temp note" in e.added)
    graph.set_position(added_temp)
    shown = graph.visible_keys()
    assert temp in shown and user not in shown and "s:s-one" in shown
    assert "s:s-two" not in shown  # that session had not started
    alive = {c.key for c in journey.chunks if c.text_at(added_temp) is not None}
    assert {k for k in shown if not k.startswith("s:")} == alive
    graph.set_position(None)
    assert user in graph.visible_keys()


def test_source_and_text_filters(graph: RadialGraph, journey: Journey) -> None:
    graph.set_sources({"memory"})
    kinds = {graph.layout_data.kind[graph.layout_data.index[k]] for k in graph.visible_keys()}
    assert kinds == {MEMORY_NODE}
    graph.set_sources({"memory", "user", "sessions"})
    graph.set_filter_text("postgresql")
    assert sorted(graph.visible_keys()) == sorted(
        [key_of(journey, "Staging"), key_of(journey, "Name: Ada")]
    )
    graph.set_filter_text("")
    kinds = {graph.layout_data.kind[graph.layout_data.index[k]] for k in graph.visible_keys()}
    assert kinds == {MEMORY_NODE, USER_NODE, SESSION_NODE}


def test_hit_testing_finds_the_node_under_the_pointer(graph: RadialGraph, journey: Journey) -> None:
    for key in graph.visible_keys():
        pos = graph.screen_pos(key)
        assert pos is not None
        assert graph.key_at(pos + QPointF(2, -1)) == key
    assert graph.key_at(QPointF(3, 3)) == ""
    # A removed chunk is not hit unless the history is shown.
    temp = key_of(journey, "Temp note")
    pos = graph.screen_pos(temp)
    assert pos is not None and graph.key_at(pos) != temp
    graph.set_show_history(True)
    assert graph.key_at(pos) == temp


def test_click_selects_and_empty_space_clears(
    qtbot: QtBot, graph: RadialGraph, journey: Journey
) -> None:
    key = key_of(journey, "Staging")
    pos = graph.screen_pos(key)
    assert pos is not None
    qtbot.mouseClick(graph, Qt.MouseButton.LeftButton, pos=pos.toPoint())
    assert graph.selection.key == key
    qtbot.mouseClick(graph, Qt.MouseButton.LeftButton, pos=QPoint(4, 4))
    assert graph.selection.key == ""


def test_zoom_keeps_the_point_under_the_cursor_and_drag_pans(
    qtbot: QtBot, graph: RadialGraph, journey: Journey
) -> None:
    key = key_of(journey, "Staging")
    before = graph.screen_pos(key)
    assert before is not None
    graph.zoom_by(3.0, before)
    after = graph.screen_pos(key)
    assert after is not None and graph.zoom == pytest.approx(3.0)
    assert (after - before).manhattanLength() < 1e-6
    qtbot.mousePress(graph, Qt.MouseButton.LeftButton, pos=QPoint(100, 100))
    qtbot.mouseMove(graph, QPoint(140, 120))
    qtbot.mouseMove(graph, QPoint(160, 130))
    qtbot.mouseRelease(graph, Qt.MouseButton.LeftButton, pos=QPoint(160, 130))
    moved = graph.screen_pos(key)
    assert moved is not None
    assert moved.x() - after.x() == pytest.approx(60) and moved.y() - after.y() == pytest.approx(30)
    assert graph.selection.key == ""  # a drag is not a click
    graph.fit()
    assert graph.zoom == 1.0 and graph.screen_pos(key) == graph.screen_pos(key)


def test_tooltip_shows_first_line_source_and_time(graph: RadialGraph, journey: Journey) -> None:
    key = key_of(journey, "Deploys")
    pos = graph.screen_pos(key)
    assert pos is not None
    tip = graph.tooltip_at(pos)
    chunk = journey.chunk(key)
    assert chunk is not None
    assert tip.startswith("Deploys go through GitHub CI\nMEMORY.md · learned ")
    assert "changed " in tip and "session: Set up staging" in tip and str(chunk.node_id) in tip
    session_tip = graph.tooltip_for("s:s-one")
    assert session_tip.startswith("Set up staging\nsession · started") and "3 chunks" in session_tip


def test_painting_draws_the_nodes_and_a_repaint_reuses_the_layers(
    qtbot: QtBot, graph: RadialGraph, journey: Journey
) -> None:
    image = graph.grab().toImage()
    pos = graph.screen_pos(key_of(journey, "Staging"))
    assert pos is not None
    color = image.pixelColor(pos.toPoint())
    assert color.blue() > color.red() + 60  # a memory chunk is drawn blue there
    cached = graph._live
    graph.hover = 0
    graph.repaint()
    assert graph._live is cached  # hover changes the overlay only
    graph.set_position(1)
    graph.repaint()
    assert graph._live is not cached


def test_ten_thousand_nodes_paint_and_hit_test(qtbot: QtBot) -> None:
    journey = big_journey(10_000)
    data: JourneyBundle = bundle(journey)
    widget = RadialGraph()
    qtbot.addWidget(widget)
    widget.resize(900, 900)
    widget.set_bundle(data)
    widget.show()
    qtbot.waitExposed(widget)
    assert len(widget.visible_keys()) == 10_000
    key = data.layout.keys[1234]
    pos = widget.screen_pos(key)
    assert pos is not None
    assert widget.key_at(pos) != ""  # something is hit there (neighbours may overlap)
    widget.grab()


def test_a_selected_chunk_not_shown_at_the_moment_is_not_marked(
    qtbot: QtBot, graph: RadialGraph, journey: Journey
) -> None:
    temp = key_of(journey, "Temp note")
    graph.selection.select(temp)
    pos = graph.screen_pos(temp)
    assert pos is not None
    # No selection ring where the removed chunk would be: the background shows.
    ring = pos.toPoint() + QPoint(int(graph._diameter(5) / 2 + 3.5), 0)
    background = graph.palette().color(QPalette.ColorRole.Base)
    assert graph.grab().toImage().pixelColor(ring) == background
    graph.set_show_history(True)
    marked = graph.grab().toImage().pixelColor(ring)
    assert marked.red() > 150 and marked.green() < 120  # the accent ring is drawn now
