"""The entries of one memory file as a list model.

The engine sends whole lists of entries; replacing the model's contents wholesale would reset
every view (selection, scroll position, current row). :func:`sync_rows` turns the new list into
the minimal row inserts, removals and in-place changes instead, so a row the user selected stays
selected while the background review or another process edits the file.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from difflib import SequenceMatcher
from typing import Any, TypeVar

from PySide6.QtCore import (
    QAbstractItemModel,
    QAbstractListModel,
    QByteArray,
    QModelIndex,
    QPersistentModelIndex,
    Qt,
)
from PySide6.QtGui import QColor, QFont, QPainter, QPixmap

T = TypeVar("T")

Index = QModelIndex | QPersistentModelIndex


def sync_rows(
    model: QAbstractItemModel,
    rows: list[T],
    new: Sequence[T],
    key: Callable[[T], Hashable],
    last_column: int = 0,
) -> None:
    """Make ``rows`` (the model's backing list) equal ``new`` through row-level signals.

    Rows are matched by ``key``; a matched row whose value differs is updated in place
    (``dataChanged``), and a block replaced one-for-one is also an in-place change, so editing
    the selected entry keeps it selected.
    """
    matcher = SequenceMatcher(None, [key(r) for r in rows], [key(r) for r in new], autojunk=False)
    # Back to front: a change at row i never shifts the rows before it, so the opcodes'
    # old-list positions stay valid for every block still to apply.
    for tag, i1, i2, j1, j2 in reversed(matcher.get_opcodes()):
        if tag == "equal":
            for offset in range(i2 - i1):
                if rows[i1 + offset] != new[j1 + offset]:
                    _set_row(model, rows, i1 + offset, new[j1 + offset], last_column)
            continue
        common = min(i2 - i1, j2 - j1)
        for offset in range(common):
            _set_row(model, rows, i1 + offset, new[j1 + offset], last_column)
        if i2 - i1 > common:
            first, last = i1 + common, i2 - 1
            model.beginRemoveRows(QModelIndex(), first, last)
            del rows[first : last + 1]
            model.endRemoveRows()
        if j2 - j1 > common:
            first = i1 + common
            added = list(new[j1 + common : j2])
            model.beginInsertRows(QModelIndex(), first, first + len(added) - 1)
            rows[first:first] = added
            model.endInsertRows()


def _set_row(
    model: QAbstractItemModel, rows: list[T], row: int, value: T, last_column: int
) -> None:
    rows[row] = value
    model.dataChanged.emit(model.index(row, 0), model.index(row, last_column))


def first_line(text: str) -> str:
    return text.split("\n", 1)[0]


class MemoryEntryModel(QAbstractListModel):
    """Entries of one target, in file order. Read-only: edits go through the engine."""

    FullTextRole = Qt.ItemDataRole.UserRole + 1
    FirstLineRole = Qt.ItemDataRole.UserRole + 2
    CharCountRole = Qt.ItemDataRole.UserRole + 3

    UnseenRole = Qt.ItemDataRole.UserRole + 4

    def __init__(self, target: str, parent: Any = None) -> None:
        super().__init__(parent)
        self.target = target
        self._entries: list[str] = []
        # On disk but not in the running session's frozen prompt (added since it started).
        self._unseen: frozenset[str] = frozenset()
        self._marker: QPixmap | None = None

    # -- reading ---------------------------------------------------------------------------

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008 - Qt's signature
        return 0 if parent.isValid() else len(self._entries)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self._entries) or index.column():
            return None
        entry = self._entries[index.row()]
        if role in (Qt.ItemDataRole.DisplayRole, self.FullTextRole):
            return entry
        if role == self.FirstLineRole:
            return first_line(entry)
        if role == self.CharCountRole:
            return len(entry)
        unseen = entry in self._unseen
        if role == Qt.ItemDataRole.ToolTipRole:
            if unseen:
                return (
                    f"{len(entry):,} chars · new since this session started: the assistant "
                    "sees it from the next session"
                )
            return f"{len(entry):,} chars"
        if role == self.UnseenRole:
            return unseen
        if role == Qt.ItemDataRole.FontRole and unseen:
            font = QFont()
            font.setItalic(True)
            return font
        if role == Qt.ItemDataRole.DecorationRole and unseen:
            return self._unseen_marker()
        return None

    def _unseen_marker(self) -> QPixmap:
        if self._marker is None:
            self._marker = QPixmap(10, 10)
            self._marker.fill(Qt.GlobalColor.transparent)
            painter = QPainter(self._marker)
            painter.setRenderHint(QPainter.RenderHint.Antialiasing)
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(QColor("#e0a526"))
            painter.drawEllipse(1, 1, 8, 8)
            painter.end()
        return self._marker

    def set_unseen(self, entries: Sequence[str]) -> None:
        """Mark ``entries`` as not in the running session's memory (the snapshot's diff)."""
        unseen = frozenset(entries)
        if unseen == self._unseen:
            return
        changed = unseen ^ self._unseen
        self._unseen = unseen
        for row, entry in enumerate(self._entries):
            if entry in changed:
                index = self.index(row, 0)
                self.dataChanged.emit(index, index)

    def unseen(self) -> frozenset[str]:
        return self._unseen

    def roleNames(self) -> dict[int, QByteArray]:
        names = super().roleNames()
        names[self.FullTextRole] = QByteArray(b"fullText")
        names[self.FirstLineRole] = QByteArray(b"firstLine")
        names[self.CharCountRole] = QByteArray(b"charCount")
        names[self.UnseenRole] = QByteArray(b"unseen")
        return names

    def entries(self) -> list[str]:
        return list(self._entries)

    def entry(self, row: int) -> str | None:
        return self._entries[row] if 0 <= row < len(self._entries) else None

    # -- updating --------------------------------------------------------------------------

    def set_entries(self, entries: Sequence[str]) -> None:
        sync_rows(self, self._entries, list(entries), key=lambda entry: entry)
