"""The journey's second pass: a chunk viewer behind "View…", keys in the state list, drawn
play/pause icons, editor titles, labels that grow with the zoom, named session diamonds,
edges that go round the disc instead of through it, and distinct ring labels."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from app.models.journey_model import SESSION_NODE, bundle
from app.views.journey_view import ChunkViewer, JourneyView
from engine.journey import Journey, load_journey
from engine.memory.entries import Target
from engine.memory.service import MemoryService
from tests import test_journey_view as base

# The same journey and view as the first pass's tests.
journey = base.journey
view = base.view


def select_chunk(view: JourneyView, text: str) -> str:
    chunk = next(c for c in view.bundle.journey.chunks if c.text == text)  # type: ignore[union-attr]
    timeline = view.timeline
    timeline.go_now()
    row = timeline.state.row_of(chunk.key)
    timeline.state_list.setCurrentIndex(timeline.state.index(row, 0))
    assert view.selection.key == chunk.key
    return chunk.key


def test_view_shows_every_version_and_session_of_a_chunk(
    qtbot: QtBot, view: JourneyView, journey: Journey
) -> None:
    key = select_chunk(view, "Staging DB is db3")
    timeline = view.timeline
    assert timeline.view_button.isEnabled()  # it was off for chunks
    timeline.view_button.click()
    viewer = view.viewer
    assert isinstance(viewer, ChunkViewer) and viewer.isVisible()
    chunk = journey.chunk(key)
    assert chunk is not None and len(chunk.versions) >= 2
    assert viewer.windowTitle() == "Chunk in MEMORY.md"
    assert viewer.versions.rowCount() == len(chunk.versions)
    texts = [viewer.versions.index(r, 3).data() for r in range(viewer.versions.rowCount())]
    assert texts[0] == "Staging DB is db2" and texts[-1] == "Staging DB is db3"
    viewer.version_view.setCurrentIndex(viewer.versions.index(0, 0))
    assert viewer.text.toPlainText() == "Staging DB is db2"
    sessions = [viewer.sessions.index(r, 0).data() for r in range(viewer.sessions.rowCount())]
    assert sessions == ["session s1"]
    assert viewer.sessions.index(0, 2).data() == "learned it"
    assert chunk.node_id in viewer.details.text()
    # From the viewer to the editor, whose title names the entry, not its id.
    viewer.edit_button.click()
    qtbot.waitUntil(lambda: view.editor is not None and view.editor.isVisible())
    assert view.editor is not None
    title = view.editor.windowTitle()
    assert title == "Edit MEMORY.md — “Staging DB is db3”"
    assert "#" not in title and "memory:" not in title


def test_a_removed_chunk_can_be_viewed_but_not_edited(
    qtbot: QtBot, view: JourneyView, journey: Journey
) -> None:
    removed = next(c for c in journey.chunks if not c.alive)
    view.selection.select(removed.key)
    view.view_item(removed.key)
    viewer = view.viewer
    assert isinstance(viewer, ChunkViewer)
    assert not viewer.edit_button.isEnabled()
    assert "removed" in viewer.details.text()


def test_del_and_enter_work_in_the_memory_now_list(qtbot: QtBot, view: JourneyView) -> None:
    key = select_chunk(view, "Staging DB is db3")
    timeline = view.timeline
    timeline.state_list.setFocus()
    with qtbot.waitSignal(timeline.deleteRequested, timeout=1_000) as deleted:
        qtbot.keyClick(timeline.state_list, Qt.Key.Key_Delete)
    assert deleted.args == [key]
    with qtbot.waitSignal(timeline.editRequested, timeout=1_000) as edited:
        qtbot.keyClick(timeline.state_list, Qt.Key.Key_Return)
    assert edited.args == [key]


def test_play_and_pause_are_drawn_icons(view: JourneyView) -> None:
    button = view.timeline.play_button
    assert not button.icon().isNull()
    assert button.text() == "Play" and "▶" not in button.text()
    play_icon = button.icon().cacheKey()
    view.timeline.play()
    assert button.text() == "Pause" and "⏸" not in button.text()
    assert button.icon().cacheKey() != play_icon
    view.timeline.pause()


def test_labels_grow_with_the_zoom(view: JourneyView) -> None:
    graph = view.graph
    graph.fit()
    assert graph.label_width() == 220
    graph.zoom_by(8.0)
    assert graph.label_width() >= 400
    long_label = "A long label " * 12
    assert graph.layout_data is not None
    graph.layout_data.labels[0] = long_label
    graph._labels = {}
    text, width = graph._label(0)
    assert width > 380 and len(text.text()) > 50


def test_session_diamonds_are_labelled(qtbot: QtBot, view: JourneyView) -> None:
    graph = view.graph
    graph.fit()
    graph.repaint()
    QApplication.processEvents()
    layout = graph.layout_data
    assert layout is not None
    sessions = [i for i in range(len(layout)) if layout.kind[i] == SESSION_NODE]
    assert sessions and set(sessions) <= set(graph.baked_labels)
    # Centred over the diamond.
    left, _top, right, _bottom, _text = graph._label_box(graph._view(), sessions[0])
    x = graph._view().cx + layout.x[sessions[0]] * graph._view().scale
    assert abs((left + right) / 2 - x) < 1.5


def test_an_edge_round_the_disc_is_drawn_along_a_ring(view: JourneyView) -> None:
    """Session s1 taught a MEMORY entry and a USER entry: the USER sector is across the disc
    from the session, and its edge goes round, not through the middle."""
    graph = view.graph
    graph.fit()
    graph._live = None
    graph.repaint()
    QApplication.processEvents()
    assert graph.curved_edges >= 1
    layout = graph.layout_data
    assert layout is not None
    user = [
        i for i, k in enumerate(layout.keys) if (c := view.chunk(k)) and c.target is Target.USER
    ]
    assert user and np.isin(user, layout.tree).any()


def test_rings_do_not_repeat_one_label(view: JourneyView) -> None:
    rings = view.graph.ring_labels()
    labels = [label for _radius, label in rings if label]
    assert labels and len(labels) == len(set(labels))


def test_a_first_batch_is_not_stacked_at_the_centre(service: MemoryService) -> None:
    """Twenty entries written at one moment used to share the innermost ring; they now
    spread out in the order they were learned, and later ones lie further out still."""
    first = [f"first batch entry {n:02d}" for n in range(20)]
    service.write(Target.MEMORY, [{"action": "add", "content": text} for text in first])
    for n in range(3):
        service.write(Target.MEMORY, [{"action": "add", "content": f"later entry {n}"}])
    loaded = bundle(load_journey(service))
    layout = loaded.layout
    radius = {
        chunk.text: float(
            np.hypot(layout.x[layout.index[chunk.key]], layout.y[layout.index[chunk.key]])
        )
        for chunk in loaded.journey.chunks
    }
    batch = [radius[text] for text in first]
    assert len({round(r, 4) for r in batch}) == 20  # each on a ring of its own
    assert batch == sorted(batch)  # in the order they were learned
    assert max(batch) - min(batch) > 0.5
    assert min(radius[f"later entry {n}"] for n in range(3)) > max(batch)
