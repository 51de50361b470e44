"""Screenshots of the journey for the docs, from a realistic memory (see journey_data).

    python tests/journey_screenshots.py docs/images

Runs the real window offscreen (worker thread, watcher) on a temporary home.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from PySide6.QtCore import QElapsedTimer, QEventLoop, QPointF, Qt
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QApplication, QWidget

from app.main_window import MainWindow
from engine.config import update_config
from engine.home import Home
from tests.journey_data import write_history, write_layers


def wait_for(app: QApplication, done: object, timeout_ms: int = 20_000) -> None:
    clock = QElapsedTimer()
    clock.start()
    while not done():  # type: ignore[operator]
        if clock.elapsed() > timeout_ms:
            raise TimeoutError("the window did not get there in time")
        app.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 50)


def save(widget: QWidget, path: Path) -> None:
    widget.grab().save(str(path))
    print(f"wrote {path}")


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/images")
    out.mkdir(parents=True, exist_ok=True)
    app = QApplication.instance() or QApplication([])
    assert isinstance(app, QApplication)
    with tempfile.TemporaryDirectory() as tmp:
        home = Home(Path(tmp) / "home")
        write_history(home)
        write_layers(home)
        # A model endpoint that is never called: the window then shows the chat, not setup.
        update_config(
            home,
            {
                "model": {
                    "provider": "openai",
                    "base_url": "http://127.0.0.1:9/v1",
                    "model": "qwen3",
                }
            },
        )
        window = MainWindow(home, watch=False)
        window.resize(1500, 1100)
        window.show()
        wait_for(app, lambda: not window._first_state)
        window.sessions_dock.hide()
        window.show_journey()
        view = window.journey
        wait_for(app, lambda: view.bundle is not None)
        assert view.bundle is not None
        window.resizeDocks([window.journey_dock], [800], Qt.Orientation.Vertical)
        app.processEvents()
        journey = view.bundle.journey
        # Select a chunk that has a history of its own, and show it in the panel too.
        chunk = max((c for c in journey.chunks if c.alive), key=lambda c: len(c.versions))
        view.selection.select(chunk.key)
        pos = view.graph.screen_pos(chunk.key)
        if pos is not None:
            view.graph.hover = view.graph.layout_data.index[chunk.key]  # type: ignore[union-attr]
        app.processEvents()
        save(window, out / "journey-window.png")

        # On its own, floating, for the close-ups.
        window.journey_dock.setFloating(True)
        window.journey_dock.resize(1300, 1000)
        app.processEvents()
        # The graph alone, with removed chunks shown faded.
        view.history.setChecked(True)
        view.graph.hover = -1
        app.processEvents()
        save(view.graph, out / "journey-graph.png")
        view.history.setChecked(False)

        # Scrubbed to a past moment: memory as it was then, and what that event changed.
        replace = [e for e in journey.events if e.action == "replace"]
        moment = replace[len(replace) // 2]
        view.timeline.show_position(moment.position)
        touched = moment.chunks[0] if moment.chunks else ""
        if touched:
            view.selection.select(touched)
        app.processEvents()
        save(view, out / "journey-past.png")

        # A skill's patch: the paragraph it changed, the skill selected, and its text.
        patch = next(e for e in reversed(journey.events) if e.action == "patch")
        view.timeline.show_position(patch.position)
        view.selection.select(patch.chunks[0])
        app.processEvents()
        save(view, out / "journey-skill.png")
        view.view_item(patch.chunks[0])
        assert view.viewer is not None
        app.processEvents()
        save(view.viewer, out / "journey-skill-view.png")
        view.viewer.close()

        # The dark scheme, for the README's second look.
        palette = app.palette()
        dark = QPalette(palette)
        for role, color in (
            (QPalette.ColorRole.Window, "#1f2227"),
            (QPalette.ColorRole.Base, "#16181c"),
            (QPalette.ColorRole.Text, "#e4e6eb"),
            (QPalette.ColorRole.WindowText, "#e4e6eb"),
        ):
            dark.setColor(role, color)
        view.graph.setPalette(dark)
        view.timeline.go_now()
        view.selection.select(chunk.key)
        view.graph.zoom_by(1.3, QPointF(view.graph.width() * 0.45, view.graph.height() * 0.6))
        view.graph._settled()
        app.processEvents()
        save(view.graph, out / "journey-graph-dark.png")
        window.close()


if __name__ == "__main__":
    main()
