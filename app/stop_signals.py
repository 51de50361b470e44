"""SIGTERM and SIGHUP close the window the way its close button does.

A desktop logout, ``systemctl stop`` or ``kill`` sends SIGTERM; a closed terminal that started
the app sends SIGHUP. Left to Python's defaults either ends the process at once: the reply
streaming at that moment is lost and the session is never ended. Here the signal closes the
window instead, so ``MainWindow.shutdown`` cancels the turn (the partial reply is stored, as
with the Stop button) and the worker ends the session before the process exits.

Qt's event loop runs in C++, where Python signal handlers never get to run; the C-level
handler writes the signal number to a socket (``signal.set_wakeup_fd``) that a
``QSocketNotifier`` watches, which wakes the loop.
"""

from __future__ import annotations

import contextlib
import signal
import socket
from collections.abc import Callable

from PySide6.QtCore import QObject, QSocketNotifier, QTimer

STOP_SIGNALS = tuple(
    sig for sig in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)) if sig
)


class StopSignals(QObject):
    """Calls ``on_stop(signum)`` on the GUI thread when a stop signal arrives, once."""

    def __init__(self, on_stop: Callable[[int], None], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._on_stop = on_stop
        self._fired = False
        self.received: int | None = None
        self._reader, self._writer = socket.socketpair()
        self._reader.setblocking(False)
        self._writer.setblocking(False)
        self._previous_fd = signal.set_wakeup_fd(self._writer.fileno())
        self._previous = {sig: signal.signal(sig, self._note) for sig in STOP_SIGNALS}
        self._notifier = QSocketNotifier(self._reader.fileno(), QSocketNotifier.Type.Read, self)
        self._notifier.activated.connect(self._drain)

    def _note(self, signum: int, frame: object) -> None:
        # Runs whenever Python next gets control; the socket has already woken Qt.
        self.received = self.received or signum

    def _drain(self) -> None:
        with contextlib.suppress(BlockingIOError, OSError):
            data = self._reader.recv(64)
            for byte in data:
                if byte in STOP_SIGNALS:
                    self.received = self.received or byte
        if self.received is not None and not self._fired:
            self._fired = True
            signum = self.received
            # Queued, not called here: closing runs a blocking shutdown, better outside the
            # notifier's own callback.
            QTimer.singleShot(0, lambda: self._on_stop(signum))

    def uninstall(self) -> None:
        """Put the previous handlers and wakeup descriptor back."""
        self._notifier.setEnabled(False)
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)
        signal.set_wakeup_fd(self._previous_fd)
        self._reader.close()
        self._writer.close()
