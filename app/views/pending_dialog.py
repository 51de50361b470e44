"""Staged memory writes waiting for a yes or no, with a preview of what each would do.

The dialog only asks: ``approveRequested(id)``, ``rejectRequested(id)`` and
``settleAllRequested(approve)`` go to the engine worker, whose answers come back through
:meth:`PendingDialog.show_result` (success or the reason it failed, such as an entry that no
longer matches) and the next change-set (the queue and memory as they are now).
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QItemSelection, Qt, Signal, Slot
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QSplitter,
    QToolBar,
    QToolButton,
    QTreeView,
    QVBoxLayout,
    QWidget,
)

from app.models.pending_model import ORIGINS, PendingModel, is_settle_result
from app.views.memory_panel import ADDED, REMOVED, DiffLine, DiffView


def pending_count(changes: Any) -> int | None:
    """How many writes wait for approval, or None when ``changes`` does not say."""
    pending = getattr(changes, "pending", None)
    return None if pending is None else len(pending)


def preview_of(record: dict[str, Any], state: dict[str, Any] | None) -> tuple[str, list[DiffLine]]:
    """A heading and the lines of what approving ``record`` now would do: the engine's one
    preview builder (``engine.pending_preview``), which the command line prints too."""
    from engine.pending_preview import preview_of as build

    preview = build(record, state)
    return preview.heading, list(preview.lines)


class PendingDialog(QDialog):
    approveRequested = Signal(str)
    rejectRequested = Signal(str)
    settleAllRequested = Signal(bool)  # True: approve all, False: reject all

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Pending memory writes")
        self.resize(720, 560)
        self._memory: dict[str, Any] | None = None
        self.model = PendingModel(self)
        self.table = QTreeView()
        self.table.setModel(self.model)
        self.table.setRootIsDecorated(False)
        self.table.setUniformRowHeights(True)
        self.table.setAlternatingRowColors(True)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        header = self.table.header()
        header.setStretchLastSection(True)
        for column in range(self.model.columnCount() - 1):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
        self.table.selectionModel().selectionChanged.connect(self._on_selection)
        self.empty = QLabel("No memory writes are waiting for approval.")
        self.heading = QLabel()
        font = self.heading.font()
        font.setBold(True)
        self.heading.setFont(font)
        self.heading.setWordWrap(True)
        self.preview = DiffView()
        self.approve_button = QPushButton("Approve")
        self.reject_button = QPushButton("Reject")
        self.approve_all_button = QPushButton("Approve all")
        self.reject_all_button = QPushButton("Reject all")
        self.approve_button.clicked.connect(self._approve)
        self.reject_button.clicked.connect(self._reject)
        self.approve_all_button.clicked.connect(lambda: self.settleAllRequested.emit(True))
        self.reject_all_button.clicked.connect(lambda: self.settleAllRequested.emit(False))
        self.outcomes = QListWidget()
        self.outcomes.setWordWrap(True)
        close = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        close.rejected.connect(self.close)

        top = QWidget()
        top_layout = QVBoxLayout(top)
        top_layout.setContentsMargins(0, 0, 0, 0)
        top_layout.addWidget(self.empty)
        top_layout.addWidget(self.table)
        middle = QWidget()
        middle_layout = QVBoxLayout(middle)
        middle_layout.setContentsMargins(0, 0, 0, 0)
        middle_layout.addWidget(self.heading)
        middle_layout.addWidget(self.preview)
        buttons = QHBoxLayout()
        buttons.setContentsMargins(0, 0, 0, 0)
        for button in (self.approve_button, self.reject_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        for button in (self.approve_all_button, self.reject_all_button):
            buttons.addWidget(button)
        middle_layout.addLayout(buttons)
        bottom = QWidget()
        bottom_layout = QVBoxLayout(bottom)
        bottom_layout.setContentsMargins(0, 0, 0, 0)
        bottom_layout.addWidget(QLabel("Outcomes"))
        bottom_layout.addWidget(self.outcomes)
        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.setChildrenCollapsible(False)
        for part, stretch in ((top, 2), (middle, 3), (bottom, 1)):
            splitter.addWidget(part)
            splitter.setStretchFactor(splitter.count() - 1, stretch)
        layout = QVBoxLayout(self)
        layout.addWidget(splitter, 1)
        layout.addWidget(close)
        self._refresh()

    # -- from the engine -------------------------------------------------------------------

    @Slot(object)
    def apply_changes(self, changes: Any) -> None:
        """Take a worker ChangeSet: the queue (``pending``) and current entries (``memory``)."""
        memory = getattr(changes, "memory", None)
        if memory is not None:
            self._memory = memory
        pending = getattr(changes, "pending", None)
        if pending is not None:
            self.model.set_records(pending)
        if pending is not None or memory is not None:
            self._refresh()

    @Slot(object)
    def show_result(self, result: object) -> bool:
        """Record the outcome of an approve or reject; True when ``result`` was one.

        Connect to ``EngineWorker.memoryEdited``; the panel's own edit results are ignored.
        """
        if not isinstance(result, dict) or not is_settle_result(result):
            return False
        ok = bool(result.get("ok"))
        message = str(result.get("message") or result.get("error") or "")
        item = QListWidgetItem(("✓ " if ok else "✗ ") + message)
        item.setForeground(ADDED if ok else REMOVED)
        item.setToolTip(message)
        self.outcomes.addItem(item)
        self.outcomes.scrollToItem(item)
        return True

    def outcome_texts(self) -> list[str]:
        return [self.outcomes.item(i).text() for i in range(self.outcomes.count())]

    # -- selection and buttons -------------------------------------------------------------

    def selected_record(self) -> dict[str, Any] | None:
        rows = self.table.selectionModel().selectedRows()
        return self.model.record(rows[0].row()) if rows else None

    def select(self, pending_id: str) -> None:
        row = self.model.row_of(pending_id)
        if row >= 0:
            self.table.setCurrentIndex(self.model.index(row, 0))

    def _on_selection(self, _selected: QItemSelection, _deselected: QItemSelection) -> None:
        self._refresh()

    def _refresh(self) -> None:
        count = self.model.rowCount()
        if count and self.selected_record() is None:
            # Something is always previewed, so approving the last record moves straight on
            # to the next one instead of leaving an empty preview.
            self.table.setCurrentIndex(self.model.index(0, 0))
        self.empty.setVisible(count == 0)
        self.table.setVisible(count > 0)
        record = self.selected_record()
        self.approve_button.setEnabled(record is not None)
        self.reject_button.setEnabled(record is not None)
        self.approve_all_button.setEnabled(count > 0)
        self.reject_all_button.setEnabled(count > 0)
        if record is None:
            self.heading.setText("")
            self.preview.show_diff([])
            return
        target = str((record.get("payload") or {}).get("target", "memory"))
        state = None if self._memory is None else self._memory.get(target)
        heading, lines = preview_of(record, state)
        origin = ORIGINS.get(str(record.get("origin")), str(record.get("origin")))
        self.heading.setText(f"{heading}\n{origin}: {record.get('summary', '')}")
        self.preview.show_diff(lines)

    def _approve(self) -> None:
        record = self.selected_record()
        if record is not None:
            self.approveRequested.emit(str(record["id"]))

    def _reject(self) -> None:
        record = self.selected_record()
        if record is not None:
            self.rejectRequested.emit(str(record["id"]))


class PendingBadge(QToolButton):
    """A toolbar button showing how many writes wait for approval; hidden when none do.

    In a toolbar a widget is shown and hidden through the action the toolbar made for it
    (``QToolBar.addWidget``); ``QWidget.setVisible`` on the widget itself does nothing there,
    which kept the badge hidden for good. :meth:`place` records that action.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        self.count = 0
        self._action: QAction | None = None
        self.show_count(0)

    def place(self, toolbar: QToolBar) -> None:
        self._action = toolbar.addWidget(self)
        self._action.setVisible(self.count > 0)

    @property
    def action(self) -> QAction | None:
        """The toolbar's action for the badge (what is shown or hidden), once placed."""
        return self._action

    @Slot(object)
    def apply_changes(self, changes: Any) -> None:
        count = pending_count(changes)
        if count is not None:
            self.show_count(count)

    def show_count(self, count: int) -> None:
        self.count = count
        self.setText(f"{count} pending")
        noun = "write waits" if count == 1 else "writes wait"
        self.setToolTip(f"{count} memory {noun} for approval")
        if self._action is not None:
            self._action.setVisible(count > 0)
        else:
            self.setVisible(count > 0)
