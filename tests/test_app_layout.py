"""The window as a whole, second pass: usable at 1280×720 and 1000×700 with every dock open,
GUI undo through the history, the settings dialog writing config.yaml, the diff dialog's new
session, a close that does not keep the user waiting. Real window, real worker thread, real
files, a real model server on loopback."""

from __future__ import annotations

import time

import pytest
from PySide6.QtCore import QEvent, QObject, QSize
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from app.main_window import MainWindow
from app.views.settings_dialog import SettingsDialog
from engine.config import load_config, update_config
from engine.home import Home
from engine.memory.entries import Target, parse
from engine.memory.service import MemoryService
from engine.sessions.store import SessionStore
from tests.scripted_server import ScriptedServer, hang, reply
from tests.test_app_window import open_window
from tests.test_memory_panel import open_editor, submit


def every_dock_open(qtbot: QtBot, window: MainWindow) -> None:
    window.show_journey()
    window.sessions_dock.show()
    window.memory_dock.show()
    qtbot.waitUntil(lambda: window.journey.isVisible(), timeout=5_000)
    QApplication.processEvents()


@pytest.mark.parametrize("size", [QSize(1280, 720), QSize(1000, 700)])
def test_every_dock_fits_a_small_screen(
    qtbot: QtBot, model_home: Home, scripted: ScriptedServer, size: QSize
) -> None:
    """It used to need 1058×1003 with the journey open, and the memory lists kept a row."""
    MemoryService(model_home).write(
        Target.MEMORY, [{"action": "add", "content": f"fact {n}"} for n in range(8)]
    )
    window = open_window(qtbot, model_home)
    qtbot.waitUntil(lambda: not window.setup.isVisible(), timeout=10_000)
    every_dock_open(qtbot, window)
    window.resize(size)
    qtbot.waitUntil(lambda: window.size() == size, timeout=5_000)
    hint = window.minimumSizeHint()
    assert hint.width() <= size.width() and hint.height() <= size.height(), hint
    for dock in (window.sessions_dock, window.memory_dock, window.journey_dock):
        assert dock.isVisible() and not dock.isFloating()
        assert window.rect().contains(dock.geometry()), dock.objectName()
    # The memory lists keep their height: the journey docks under the chat, not under them.
    entries = window.memory.boxes["memory"].entries
    row = entries.sizeHintForRow(0)
    assert entries.viewport().height() >= 4 * row
    assert window.memory_dock.height() >= size.height() - 120
    # The chat keeps room for its box and a few lines.
    assert window.chat.view.height() >= 60 and window.chat.input.isVisible()
    window.close()


def test_the_setup_panel_does_not_set_the_windows_height(qtbot: QtBot, home: Home) -> None:
    window = open_window(qtbot, home)
    qtbot.waitUntil(lambda: window.setup.isVisible(), timeout=10_000)
    every_dock_open(qtbot, window)
    window.resize(1000, 700)
    qtbot.waitUntil(lambda: window.size() == QSize(1000, 700), timeout=5_000)
    assert window.minimumSizeHint().height() <= 700
    window.close()


def test_undo_from_the_panel_walks_back_through_the_history(qtbot: QtBot, home: Home) -> None:
    window = open_window(qtbot, home)
    box = window.memory.boxes["memory"]
    qtbot.waitUntil(lambda: box.add_button.isEnabled(), timeout=15_000)
    memory_md = home.memories_dir / "MEMORY.md"
    for text in ("first fact", "second fact"):
        submit(qtbot, window.memory, box, text)
        qtbot.waitUntil(lambda text=text: text in box.model.entries(), timeout=10_000)
    box.select_row(1)
    box.edit_button.click()
    editor = open_editor(qtbot, box)
    editor.editor.setPlainText("second fact, edited")
    editor._save()
    qtbot.waitUntil(lambda: "second fact, edited" in box.model.entries(), timeout=10_000)

    # Edit ▸ Undo (Ctrl+Z) and the panel's button: one change back per press.
    window.undo_action.trigger()
    qtbot.waitUntil(lambda: box.model.entries() == ["first fact", "second fact"], timeout=10_000)
    assert parse(memory_md.read_text(encoding="utf-8")) == ["first fact", "second fact"]
    assert window.memory.undo_status.isVisible()
    assert "MEMORY.md updated" in window.memory.undo_status.text()
    window.memory.undo_button.click()
    qtbot.waitUntil(lambda: box.model.entries() == ["first fact"], timeout=10_000)
    window.memory.undo_button.click()
    qtbot.waitUntil(lambda: box.model.entries() == [], timeout=10_000)
    window.memory.undo_button.click()
    qtbot.waitUntil(
        lambda: window.memory.undo_status.text() == "Nothing left to undo.", timeout=10_000
    )
    assert window.memory.undo_button.isEnabled()
    window.close()


def test_settings_are_written_through_the_engine(
    qtbot: QtBot, model_home: Home, scripted: ScriptedServer
) -> None:
    window = open_window(qtbot, model_home)
    qtbot.waitUntil(lambda: not window.setup.isVisible(), timeout=10_000)
    window.settings_action.trigger()
    qtbot.waitUntil(
        lambda: window.settings_dialog is not None and window.settings_dialog.isVisible(),
        timeout=10_000,
    )
    dialog = window.settings_dialog
    assert isinstance(dialog, SettingsDialog)
    assert dialog.model_name.text() == scripted.model  # read from config.yaml
    dialog.approval.setChecked(True)
    dialog.user_limit.setValue(2000)
    dialog.key_env.setText("not a variable!")
    assert not dialog.save_button.isEnabled()  # shown at the field, not saved
    dialog.key_env.setText("")
    dialog.save_button.click()
    qtbot.waitUntil(lambda: not dialog.isVisible(), timeout=10_000)
    config = load_config(model_home)
    assert config.memory.write_approval is True
    assert config.memory.user_char_limit == 2000
    assert config.model.model == scripted.model  # untouched keys stay
    # The window follows: the approval toggle and the USER.md cap.
    qtbot.waitUntil(lambda: window.approval_action.isChecked(), timeout=10_000)
    qtbot.waitUntil(
        lambda: window.memory.boxes["user"].usage.text().endswith("/ 2,000 chars (0%)"),
        timeout=10_000,
    )
    window.close()


def test_the_diff_dialog_starts_a_new_session(
    qtbot: QtBot, model_home: Home, scripted: ScriptedServer
) -> None:
    scripted.add(reply("hello"))
    window = open_window(qtbot, model_home)
    qtbot.waitUntil(lambda: not window.setup.isVisible(), timeout=10_000)
    window.chat.input.setPlainText("hi")
    qtbot.keyClick(window.chat.input, "\r")
    qtbot.waitUntil(lambda: not window.chat.busy, timeout=15_000)
    MemoryService(model_home).write(Target.MEMORY, [{"action": "add", "content": "from outside"}])
    qtbot.waitUntil(lambda: window.memory.banner.isVisible(), timeout=10_000)
    window.memory.show_snapshot_diff()
    dialog = window.memory.diff_dialog
    assert dialog is not None
    dialog.new_session_button.click()
    # The new session's frozen memory holds the entry: nothing is "on disk only" any more.
    qtbot.waitUntil(lambda: not window.memory.banner.isVisible(), timeout=15_000)
    assert "new session" in window.chat.transcript_text().lower()
    window.close()


class HideClock(QObject):
    """When the window left the screen."""

    def __init__(self) -> None:
        super().__init__()
        self.hidden_at: float | None = None

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Hide and self.hidden_at is None:
            self.hidden_at = time.perf_counter()
        return False


def test_closing_the_window_takes_under_a_second(
    qtbot: QtBot, model_home: Home, scripted: ScriptedServer
) -> None:
    """With a background review still waiting on the model, the window stayed on screen for
    the review's grace period (3 s) and more; it now leaves at once, and the session is still
    ended before the threads stop."""
    update_config(model_home, {"memory": {"nudge_interval": 1}})
    scripted.add(reply("hello"), hang(6))  # the review's request never comes back in time
    window = open_window(qtbot, model_home)
    qtbot.waitUntil(lambda: not window.setup.isVisible(), timeout=10_000)
    window.chat.input.setPlainText("hi")
    qtbot.keyClick(window.chat.input, "\r")
    qtbot.waitUntil(lambda: not window.chat.busy, timeout=15_000)
    qtbot.waitUntil(lambda: len(scripted.chat_requests()) >= 2, timeout=10_000)  # reviewing
    every_dock_open(qtbot, window)
    clock = HideClock()
    window.installEventFilter(clock)
    started = time.perf_counter()
    window.close()
    assert clock.hidden_at is not None and clock.hidden_at - started < 1.0
    assert not window._thread.isRunning()
    session = SessionStore.open(model_home).list_sessions()[0]
    assert session.ended_at is not None
