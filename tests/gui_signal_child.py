"""The desktop app as ``cairn gui`` runs it, typing one message once its window is up.

Run by a test as a real process: it prints ``STREAMING`` when the first reply token reaches
the window, so the test knows when to send its signal. ``python -m tests.gui_signal_child
HOME MESSAGE``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from PySide6.QtCore import Qt, QTimer
from PySide6.QtTest import QTest

from app.__main__ import open_app
from engine.home import Home


def main(root: str, message: str) -> int:
    app, window, stop = open_app(Home(Path(root)))
    announced = []

    def token(text: str) -> None:
        if not announced:
            announced.append(text)
            print("STREAMING", flush=True)

    def type_message() -> None:
        window.chat.input.setPlainText(message)
        QTest.keyClick(window.chat.input, Qt.Key.Key_Return)

    window.worker.tokenReceived.connect(token)
    window.memoryShown.connect(lambda: QTimer.singleShot(0, type_message))
    code = app.exec()
    stop.uninstall()
    return 128 + stop.received if stop.received is not None else code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
