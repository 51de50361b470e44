"""The main window: owns the engine worker thread and the views."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QThread, Signal, Slot
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import QMainWindow

from app.views.memory_overview import MemoryOverview
from app.worker import EngineWorker
from engine.home import Home


class MainWindow(QMainWindow):
    loadRequested = Signal()
    memoryShown = Signal()

    def __init__(self, home: Home) -> None:
        super().__init__()
        self.setWindowTitle(f"Cairn — {home.root}")
        self.resize(720, 640)
        self.overview = MemoryOverview()
        self.setCentralWidget(self.overview)
        self.statusBar().showMessage("Loading memory…")

        self._thread = QThread(self)
        self._thread.setObjectName("cairn-engine")
        self.worker = EngineWorker(home)
        self.worker.moveToThread(self._thread)
        self.loadRequested.connect(self.worker.load_memory)
        self.worker.memoryLoaded.connect(self._on_memory_loaded)
        self.worker.failed.connect(self._on_failed)
        self._thread.finished.connect(self.worker.deleteLater)
        self._thread.start()
        self.loadRequested.emit()

    @Slot(object)
    def _on_memory_loaded(self, state: dict[str, Any]) -> None:
        self.overview.show_memory(state)
        self.statusBar().showMessage("Memory loaded — edit it with `cairn memory`.")
        self.memoryShown.emit()

    @Slot(str)
    def _on_failed(self, message: str) -> None:
        self.statusBar().showMessage(f"Could not load memory: {message}")

    def shutdown(self) -> None:
        self._thread.quit()
        self._thread.wait()

    def closeEvent(self, event: QCloseEvent) -> None:
        self.shutdown()
        super().closeEvent(event)
