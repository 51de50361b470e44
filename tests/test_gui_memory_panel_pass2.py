"""The memory panel as a person uses it: Save off over the cap, Ctrl+Enter, refusals in plain
words, outcomes that expire, a steady dock width, readable figures, entries the running
session does not see yet, the diff's "Start a new session", and a delete that does not move
the selection onto the next entry."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QPalette, QTextCursor
from PySide6.QtWidgets import QApplication, QDockWidget, QMainWindow, QTextEdit
from pytestqt.qtbot import QtBot

import app.views.memory_panel as memory_panel
from app.models.memory_model import MemoryEntryModel
from app.theme import palette_for
from app.views.memory_panel import (
    ADDED_BG,
    REMOVED_BG,
    DiffView,
    MemoryPanel,
    SnapshotDiffDialog,
)
from tests.test_memory_panel import changes, open_editor, state

ENTRIES = ["Ruff line length is 100", "Tests run offscreen", "Deploys go through CI"]


@pytest.fixture
def panel(qtbot: QtBot) -> MemoryPanel:
    widget = MemoryPanel()
    qtbot.addWidget(widget)
    widget.apply_changes(changes(memory={"memory": state(ENTRIES), "user": state(["Ada"])}))
    widget.show()
    qtbot.waitExposed(widget)
    return widget


def test_save_is_off_while_the_text_would_grow_the_file_over_its_cap(
    qtbot: QtBot, panel: MemoryPanel
) -> None:
    box = panel.boxes["memory"]
    box.show_state(state(ENTRIES, limit=100))
    qtbot.mouseClick(box.add_button, Qt.MouseButton.LeftButton)
    editor = open_editor(qtbot, box)
    editor.editor.setPlainText("x" * 20)
    assert editor.save_button.isEnabled()
    editor.editor.setPlainText("x" * 60)
    assert not editor.save_button.isEnabled()
    assert "over the limit" in editor.count.text()
    assert "no room" in editor.save_button.toolTip()
    with qtbot.assertNotEmitted(panel.editRequested):
        qtbot.keyClick(editor.editor, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    editor.reject()
    # A file already over its cap still takes an edit that shrinks it.
    box.show_state(state(ENTRIES, limit=40))
    box.select_row(0)
    qtbot.mouseClick(box.edit_button, Qt.MouseButton.LeftButton)
    editor = open_editor(qtbot, box)
    editor.editor.setPlainText("Ruff: 100")
    assert editor.save_button.isEnabled()


def test_ctrl_enter_saves(qtbot: QtBot, panel: MemoryPanel) -> None:
    box = panel.boxes["user"]
    qtbot.mouseClick(box.add_button, Qt.MouseButton.LeftButton)
    editor = open_editor(qtbot, box)
    qtbot.keyClicks(editor.editor, "Works in UTC+1")
    with qtbot.waitSignal(panel.editRequested, timeout=2_000) as sent:
        qtbot.keyClick(editor.editor, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    assert sent.args == ["user", [{"action": "add", "content": "Works in UTC+1"}]]
    assert editor.waiting


@pytest.mark.parametrize(
    ("result", "said"),
    [
        (
            {"error": "no_match", "message": "no entry contains 'Ruff'"},
            "This entry changed since you opened it",
        ),
        (
            {"error": "blocked", "message": "add refused: the content looks like injection; x"},
            "looks like an instruction aimed at the assistant (injection)",
        ),
        ({"error": "disabled", "message": "turned off"}, "MEMORY.md is turned off"),
        ({"error": "io", "message": "cannot write MEMORY.md: disk full"}, "Cannot write"),
    ],
)
def test_refusals_are_said_to_a_person(
    qtbot: QtBot, panel: MemoryPanel, result: dict[str, str], said: str
) -> None:
    box = panel.boxes["memory"]
    box.select_row(0)
    qtbot.mouseClick(box.edit_button, Qt.MouseButton.LeftButton)
    editor = open_editor(qtbot, box)
    editor.editor.setPlainText("Ruff line length is 120")
    with qtbot.waitSignal(panel.editRequested, timeout=2_000):
        qtbot.mouseClick(editor.save_button, Qt.MouseButton.LeftButton)
    panel.show_edit_result({"ok": False, **result})
    assert said in editor.status.text()
    assert "operations" not in editor.status.text()
    assert editor.isVisible() and editor.text() == "Ruff line length is 120"


def test_an_outcome_goes_away_after_a_while(
    qtbot: QtBot, panel: MemoryPanel, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(memory_panel, "RESULT_MS", 150)
    box = panel.boxes["memory"]
    box.show_message("MEMORY.md updated", memory_panel.ADDED)
    assert box.result.isVisible()
    qtbot.waitUntil(lambda: not box.result.isVisible(), timeout=2_000)


def test_the_dock_keeps_its_width_when_the_banner_comes_and_goes(qtbot: QtBot) -> None:
    window = QMainWindow()
    qtbot.addWidget(window)
    window.setCentralWidget(QTextEdit())
    panel = MemoryPanel()
    dock = QDockWidget("Memory", window)
    dock.setWidget(panel)
    window.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, dock)
    window.resize(1000, 700)
    panel.apply_changes(changes(memory={"memory": state(ENTRIES), "user": state(["Ada"])}))
    window.show()
    qtbot.waitExposed(window)
    width = dock.width()
    long = "x" * 400
    diff = {"memory": {"added": [long] * 30, "removed": []}}
    panel.apply_changes(changes(snapshot={"changes": 12_345, "diff": diff}))
    qtbot.waitUntil(lambda: panel.banner.isVisible())
    for box in panel.boxes.values():  # the long notices and outcomes too
        box.show_message("Too long: " + "very " * 80, memory_panel.REMOVED)
    QApplication.processEvents()
    assert dock.width() == width
    panel.apply_changes(changes(snapshot={"changes": 0, "diff": {}}))
    QApplication.processEvents()
    assert dock.width() == width


def test_the_usage_figures_are_beside_the_bar_not_on_it(panel: MemoryPanel) -> None:
    box = panel.boxes["memory"]
    assert not box.bar.isTextVisible()
    assert box.usage.isVisible()
    assert box.usage.text() == box.usage_text() == box.bar.format()
    assert box.usage.text().endswith("chars (3%)")


def test_entries_the_running_session_does_not_see_are_marked(
    qtbot: QtBot, panel: MemoryPanel
) -> None:
    model = panel.boxes["memory"].model
    diff = {"memory": {"added": ["Deploys go through CI"], "removed": ["Old"]}}
    with qtbot.waitSignal(model.dataChanged):
        panel.apply_changes(changes(snapshot={"changes": 2, "diff": diff}))
    marked = [model.index(r, 0).data(MemoryEntryModel.UnseenRole) for r in range(model.rowCount())]
    assert marked == [False, False, True]
    index = model.index(2, 0)
    assert "sees it from the next session" in index.data(Qt.ItemDataRole.ToolTipRole)
    assert index.data(Qt.ItemDataRole.FontRole).italic()
    assert index.data(Qt.ItemDataRole.DecorationRole) is not None
    assert model.index(0, 0).data(Qt.ItemDataRole.DecorationRole) is None
    panel.apply_changes(changes(snapshot={"changes": 0, "diff": {}}))
    assert not model.index(2, 0).data(MemoryEntryModel.UnseenRole)


def test_the_diff_dialog_offers_a_new_session(qtbot: QtBot, panel: MemoryPanel) -> None:
    diff = {"memory": {"added": ["Deploys go through CI"], "removed": []}}
    panel.apply_changes(changes(snapshot={"changes": 1, "diff": diff}))
    panel.show_snapshot_diff()
    dialog = panel.diff_dialog
    assert isinstance(dialog, SnapshotDiffDialog) and dialog.isVisible()
    assert dialog.new_session_button.isEnabled()
    with qtbot.waitSignal(panel.newSessionRequested, timeout=1_000):
        dialog.new_session_button.click()
    assert not dialog.isVisible()
    panel.apply_changes(changes(snapshot={"changes": 0, "diff": {}}))
    assert not dialog.new_session_button.isEnabled()  # nothing new to take in


def line_colours(view: DiffView, text: str) -> tuple[QColor, QColor]:
    block = view.document().begin()
    while block.isValid():
        if block.text() == text:
            cursor = QTextCursor(block)
            cursor.movePosition(QTextCursor.MoveOperation.Right)
            return (
                cursor.charFormat().foreground().color(),
                block.blockFormat().background().color(),
            )
        block = block.next()
    raise AssertionError(text)


def test_diff_colours_follow_a_dark_scheme(qtbot: QtBot) -> None:
    view = DiffView()
    qtbot.addWidget(view)
    view.show_diff([("+", "new"), ("-", "old")])
    assert line_colours(view, "+ new")[1] == ADDED_BG
    view.setPalette(palette_for(dark=True))
    text, background = line_colours(view, "+ new")
    base = view.palette().color(QPalette.ColorRole.Base)
    assert background != ADDED_BG and background.lightness() < 90
    assert text.lightness() > base.lightness() + 80  # light text on the dark line
    assert line_colours(view, "− old")[1] != REMOVED_BG
    view.setPalette(palette_for(dark=False))
    assert line_colours(view, "+ new")[1] == ADDED_BG


def test_a_delete_leaves_nothing_selected(qtbot: QtBot, panel: MemoryPanel) -> None:
    """The engine's new list removes the row; Qt would hand the selection to the next entry
    and a second Del would delete that one."""
    box = panel.boxes["memory"]
    relayed: list[tuple[str, int]] = []
    panel.entrySelected.connect(lambda target, row: relayed.append((target, row)))
    box.select_row(1)
    relayed.clear()
    box.show_state(state([ENTRIES[0], ENTRIES[2]]))
    assert box.selected_row() == -1
    assert not box.delete_button.isEnabled()
    assert relayed == []  # the move was Qt's, not the user's: not sent to the journey
    with qtbot.assertNotEmitted(box.editSubmitted):
        qtbot.keyClick(box.entries, Qt.Key.Key_Delete)
