"""``cairn`` / ``cairn gui`` / ``python -m app``: open the desktop window."""

from __future__ import annotations

import sys
from importlib.resources import files
from typing import TYPE_CHECKING

from engine.home import Home, resolve_home

if TYPE_CHECKING:
    from PySide6.QtWidgets import QApplication

    from app.main_window import MainWindow
    from app.stop_signals import StopSignals


def open_app(home: Home | None = None) -> tuple[QApplication, MainWindow, StopSignals]:
    """The application, its shown window, and the stop-signal hook closing it."""
    from PySide6.QtGui import QIcon
    from PySide6.QtWidgets import QApplication

    from app.main_window import MainWindow
    from app.stop_signals import StopSignals
    from app.theme import apply_system_scheme

    app = QApplication.instance() or QApplication(sys.argv)
    app.setApplicationName("Cairn")
    apply_system_scheme(app)
    icon = files("resources").joinpath("icons", "cairn.svg")
    app.setWindowIcon(QIcon(str(icon)))
    window = MainWindow(home or resolve_home())
    # SIGTERM / SIGHUP: close as the close button does, so the reply in progress is stored.
    stop = StopSignals(lambda signum: (window.close(), app.quit()), window)
    window.show()
    return app, window, stop  # type: ignore[return-value]


def run(home: Home | None = None) -> int:
    app, _window, stop = open_app(home)
    code = app.exec()
    stop.uninstall()
    # Ended by a signal: say so in the exit code, as a shell expects.
    return 128 + stop.received if stop.received is not None else code


if __name__ == "__main__":
    sys.exit(run())
