"""The journey in the desktop window end to end, offscreen: the real worker thread, the file
watcher, real files and history. Waits are on GUI state, never on the worker's signals."""

from __future__ import annotations

import time

from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QMessageBox
from pytestqt.qtbot import QtBot

from app.main_window import MainWindow
from engine.home import Home
from engine.journey import Journey
from engine.memory.entries import Target
from engine.memory.service import MemoryService


def open_window(qtbot: QtBot, home: Home) -> MainWindow:
    window = MainWindow(home)
    qtbot.addWidget(window)
    with qtbot.waitSignal(window.memoryShown, timeout=15_000):
        window.show()
    return window


def open_journey(qtbot: QtBot, window: MainWindow) -> Journey:
    window.show_journey()
    qtbot.waitUntil(lambda: window.journey.bundle is not None, timeout=10_000)
    assert window.journey.bundle is not None
    return window.journey.bundle.journey


def texts_in_graph(window: MainWindow) -> set[str]:
    bundle = window.journey.bundle
    if bundle is None:
        return set()
    return {
        chunk.text
        for key in window.journey.graph.visible_keys()
        if (chunk := bundle.journey.chunk(key)) is not None
    }


def chunk_key(window: MainWindow, text: str) -> str:
    bundle = window.journey.bundle
    assert bundle is not None
    return next(c.key for c in bundle.journey.chunks if c.text == text and c.alive)


def seed(service: MemoryService) -> None:
    service.write(Target.MEMORY, [{"action": "add", "content": "Staging DB is db2"}])
    service.write(Target.MEMORY, [{"action": "add", "content": "Deploys go through CI"}])
    service.write(Target.USER, [{"action": "add", "content": "Name: Ada"}])


def test_slash_journey_opens_the_view_on_the_real_history(
    qtbot: QtBot, service: MemoryService, home: Home
) -> None:
    seed(service)
    window = open_window(qtbot, home)
    assert not window.journey_dock.isVisible()
    window.chat.input.setPlainText("/journey")
    qtbot.keyClick(window.chat.input, "\r")
    qtbot.waitUntil(lambda: window.journey_dock.isVisible(), timeout=10_000)
    qtbot.waitUntil(lambda: window.journey.bundle is not None, timeout=10_000)
    assert texts_in_graph(window) == {"Staging DB is db2", "Deploys go through CI", "Name: Ada"}
    assert window.journey.timeline.events.rowCount() == 3
    window.close()


def test_one_selection_shared_by_graph_timeline_and_memory_panel(
    qtbot: QtBot, service: MemoryService, home: Home
) -> None:
    seed(service)
    window = open_window(qtbot, home)
    open_journey(qtbot, window)
    graph, timeline = window.journey.graph, window.journey.timeline
    key = chunk_key(window, "Deploys go through CI")
    pos = graph.screen_pos(key)
    assert pos is not None
    qtbot.mouseClick(graph, Qt.MouseButton.LeftButton, pos=pos.toPoint())
    assert window.journey.selection.key == key
    assert window.memory.boxes["memory"].selected_row() == 1
    assert window.memory.boxes["user"].selected_row() == -1
    rows = timeline.state_list.selectionModel().selectedRows()
    assert [timeline.state.key_at(r.row()) for r in rows] == [key]
    # And from the panel back to the journey.
    window.memory.boxes["user"].select_row(0)
    assert window.journey.selection.key == chunk_key(window, "Name: Ada")
    assert window.memory.boxes["memory"].selected_row() == -1
    rows = timeline.state_list.selectionModel().selectedRows()
    assert [timeline.state.key_at(r.row()) for r in rows] == [window.journey.selection.key]
    # Clicking empty space in the graph clears the selection everywhere.
    qtbot.mouseClick(graph, Qt.MouseButton.LeftButton, pos=QPoint(3, 3))
    assert window.journey.selection.key == ""
    assert window.memory.boxes["user"].selected_row() == -1
    window.close()


def test_edit_from_the_graph_round_trips_through_the_engine(
    qtbot: QtBot, service: MemoryService, home: Home
) -> None:
    seed(service)
    window = open_window(qtbot, home)
    open_journey(qtbot, window)
    key = chunk_key(window, "Staging DB is db2")
    window.journey.graph.selection.select(key)
    qtbot.keyClick(window.journey.graph, Qt.Key.Key_Return)
    editor = window.journey.editor
    assert editor is not None and editor.text() == "Staging DB is db2"
    editor.editor.setPlainText("Staging DB is db3")
    editor.save_button.click()
    qtbot.waitUntil(lambda: "Staging DB is db3" in texts_in_graph(window), timeout=10_000)
    assert service.read(Target.MEMORY).entries == ["Staging DB is db3", "Deploys go through CI"]
    event = service.events(limit=1)[0]
    assert (event.action, event.entry_before, event.origin) == (
        "replace",
        "Staging DB is db2",
        "foreground",
    )
    assert not editor.isVisible()
    # The history shows it as a change of the same chunk, and it can be undone.
    chunk = window.journey.chunk(chunk_key(window, "Staging DB is db3"))
    assert chunk is not None and [v.text for v in chunk.versions] == [
        "Staging DB is db2",
        "Staging DB is db3",
    ]
    service.undo()
    assert service.read(Target.MEMORY).entries[0] == "Staging DB is db2"
    # An edit and its undo inside one watcher burst net to no change on disk, so nothing is
    # reported; ask for the journey, which has both events.
    window.journey.request_reload()
    qtbot.waitUntil(lambda: "Staging DB is db2" in texts_in_graph(window), timeout=10_000)
    assert window.journey.bundle is not None
    assert [e.action for e in window.journey.bundle.journey.events][-2:] == ["replace", "undo"]
    window.close()


def test_delete_from_the_timeline_round_trips_through_the_engine(
    qtbot: QtBot, service: MemoryService, home: Home
) -> None:
    seed(service)
    window = open_window(qtbot, home)
    open_journey(qtbot, window)
    timeline = window.journey.timeline
    key = chunk_key(window, "Name: Ada")
    timeline.state_list.setCurrentIndex(timeline.state.index(timeline.state.row_of(key), 0))
    assert timeline.delete_button.isEnabled()
    timeline.delete_button.click()
    confirm = window.journey.confirm
    assert confirm is not None and "Name: Ada" in confirm.text()
    confirm.button(QMessageBox.StandardButton.Yes).click()
    qtbot.waitUntil(lambda: "Name: Ada" not in texts_in_graph(window), timeout=10_000)
    assert service.read(Target.USER).entries == []
    assert service.events(limit=1)[0].action == "remove"
    qtbot.waitUntil(
        lambda: window.journey.result.text().startswith("USER.md updated"), timeout=5_000
    )
    window.close()


def test_a_stale_id_is_refused_in_the_window_and_nothing_is_overwritten(
    qtbot: QtBot, service: MemoryService, home: Home
) -> None:
    seed(service)
    window = open_window(qtbot, home)
    open_journey(qtbot, window)
    window.journey.edit_chunk(chunk_key(window, "Staging DB is db2"))
    editor = window.journey.editor
    assert editor is not None
    # Meanwhile another process changes that very entry.
    other = MemoryService(home)
    other.write(
        Target.MEMORY, [{"action": "replace", "old_text": "db2", "content": "Staging DB is db9"}]
    )
    editor.editor.setPlainText("Staging DB is db3")
    editor.save_button.click()
    qtbot.waitUntil(lambda: "Refused" in window.journey.result.text(), timeout=10_000)
    assert "stale" in window.journey.result.text()
    assert editor.isVisible()  # the user's text is kept, with the reason
    assert service.read(Target.MEMORY).entries == ["Staging DB is db9", "Deploys go through CI"]
    qtbot.waitUntil(lambda: "Staging DB is db9" in texts_in_graph(window), timeout=10_000)
    editor.close()
    window.close()


def test_an_external_edit_appears_in_the_graph_within_300_ms(
    qtbot: QtBot, service: MemoryService, home: Home
) -> None:
    seed(service)
    window = open_window(qtbot, home)
    open_journey(qtbot, window)
    other = MemoryService(home)  # a second Cairn, a terminal, an editor sharing the home
    started = time.monotonic()
    other.write(Target.MEMORY, [{"action": "add", "content": "Written from elsewhere"}])
    qtbot.waitUntil(lambda: "Written from elsewhere" in texts_in_graph(window), timeout=3_000)
    elapsed = time.monotonic() - started
    print(f"external edit reached the graph after {elapsed * 1000:.0f} ms")
    # Same allowance as the memory panel's test: 300 ms, plus slack for a loaded CI machine.
    assert elapsed < 0.3 + 0.2, f"the graph caught up after {elapsed:.3f} s"
    chunk = window.journey.chunk(chunk_key(window, "Written from elsewhere"))
    assert chunk is not None and chunk.learned_at is not None  # a real, recorded time
    window.close()
