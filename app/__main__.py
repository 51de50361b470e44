"""``cairn`` / ``cairn gui`` / ``python -m app``: open the desktop window."""

from __future__ import annotations

import sys
from importlib.resources import files

from engine.home import Home, resolve_home


def run(home: Home | None = None) -> int:
    from PySide6.QtGui import QIcon
    from PySide6.QtWidgets import QApplication

    from app.main_window import MainWindow
    from app.theme import apply_system_scheme

    app = QApplication.instance() or QApplication(sys.argv)
    app.setApplicationName("Cairn")
    apply_system_scheme(app)
    icon = files("resources").joinpath("icons", "cairn.svg")
    app.setWindowIcon(QIcon(str(icon)))
    window = MainWindow(home or resolve_home())
    window.show()
    return app.exec()


if __name__ == "__main__":
    sys.exit(run())
