"""The engine side of the desktop client: a QObject living in its own QThread.

Everything that touches disk or the database runs here; the GUI thread only receives signals.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QObject, Signal, Slot

from engine.config import load_config
from engine.home import Home
from engine.memory.entries import Target
from engine.memory.errors import MemoryToolError
from engine.memory.service import MemoryService, usage_of


class EngineWorker(QObject):
    memoryLoaded = Signal(object)  # dict: target value -> {usage..., items, error}
    failed = Signal(str)

    def __init__(self, home: Home) -> None:
        super().__init__()
        self.home = home

    @Slot()
    def load_memory(self) -> None:
        try:
            service = MemoryService(self.home, load_config(self.home))
        except Exception as exc:  # shown to the user, never raised into Qt's event loop
            self.failed.emit(str(exc))
            return
        state: dict[str, Any] = {}
        for target in Target:
            try:
                current = service.read(target)
                state[target.value] = {
                    **usage_of(target, current.entries, current.limit),
                    "items": current.entries,
                    "error": None,
                }
            except MemoryToolError as exc:
                state[target.value] = {"items": [], "error": exc.message}
        self.memoryLoaded.emit(state)
