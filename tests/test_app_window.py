"""The desktop window opens offscreen and shows memory loaded off the GUI thread."""

from __future__ import annotations

from pytestqt.qtbot import QtBot

from app.main_window import MainWindow
from engine.home import Home
from engine.memory.entries import Target
from engine.memory.service import MemoryService


def test_window_shows_both_files(qtbot: QtBot, service: MemoryService, home: Home) -> None:
    service.write(Target.MEMORY, [{"action": "add", "content": "Deploys go through CI"}])
    service.write(Target.USER, [{"action": "add", "content": "Name: Ada"}])
    window = MainWindow(home)
    qtbot.addWidget(window)
    with qtbot.waitSignal(window.memoryShown, timeout=10_000):
        window.show()
    memory_box = window.overview.boxes["memory"]
    assert memory_box.entries.item(0).text() == "Deploys go through CI"
    assert "21 / 2,200 chars" in memory_box.bar.format()
    assert window.overview.boxes["user"].entries.item(0).text() == "Name: Ada"
    window.close()
    assert not window._thread.isRunning()


def test_unreadable_file_is_shown_not_raised(qtbot: QtBot, home: Home) -> None:
    home.memories_dir.mkdir(parents=True)
    (home.memories_dir / "MEMORY.md").write_bytes(b"\xff\xfe broken")
    window = MainWindow(home)
    qtbot.addWidget(window)
    with qtbot.waitSignal(window.memoryShown, timeout=10_000):
        window.show()
    assert "not valid UTF-8" in window.overview.boxes["memory"].notice.text()
    window.close()
