"""A read-only overview of both memory files: usage bars and entries."""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import (
    QGroupBox,
    QLabel,
    QListWidget,
    QProgressBar,
    QVBoxLayout,
    QWidget,
)

from engine.memory.entries import CONSOLIDATE_AT, Target


class MemoryFileBox(QGroupBox):
    def __init__(self, target: Target, parent: QWidget | None = None) -> None:
        super().__init__(target.title, parent)
        self.target = target
        self.bar = QProgressBar()
        self.bar.setRange(0, 100)
        self.bar.setFormat("loading…")
        self.entries = QListWidget()
        self.entries.setWordWrap(True)
        self.entries.setAlternatingRowColors(True)
        self.notice = QLabel()
        self.notice.setWordWrap(True)
        self.notice.hide()
        layout = QVBoxLayout(self)
        layout.addWidget(self.bar)
        layout.addWidget(self.notice)
        layout.addWidget(self.entries)

    def show_state(self, state: dict[str, Any]) -> None:
        self.entries.clear()
        if state.get("error"):
            self.bar.setValue(0)
            self.bar.setFormat("unreadable")
            self.notice.setText(state["error"])
            self.notice.show()
            return
        self.notice.hide()
        chars, limit = state["chars"], state["limit"]
        self.bar.setValue(min(100, state["percent"]))
        self.bar.setFormat(f"{chars:,} / {limit:,} chars ({state['percent']}%)")
        if chars > limit * CONSOLIDATE_AT:
            self.notice.setText(
                "Over budget: only shrinking edits are accepted."
                if chars > limit
                else "Above 80%: consolidate before adding more."
            )
            self.notice.show()
        self.entries.addItems(state["items"])


class MemoryOverview(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.boxes = {target.value: MemoryFileBox(target) for target in Target}
        layout = QVBoxLayout(self)
        for box in self.boxes.values():
            layout.addWidget(box)

    def show_memory(self, state: dict[str, Any]) -> None:
        for key, box in self.boxes.items():
            box.show_state(state.get(key, {"error": "missing", "items": []}))
