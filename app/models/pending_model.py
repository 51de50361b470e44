"""Staged memory writes waiting for approval, as a table model (one row per record)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt

from app.models.memory_model import sync_rows
from engine.pending_preview import file_of

Index = QModelIndex | QPersistentModelIndex

ORIGINS = {"foreground": "Foreground", "background_review": "Background review"}


def is_settle_result(result: dict[str, Any]) -> bool:
    """Whether a ``memoryEdited`` result answers an approve/reject rather than a panel edit.

    The worker sends both kinds through one signal. Settling always names the record
    (``pending_id``) or fails to find it (``not_found``, which no edit produces); an edit names
    a record only when it was staged.
    """
    if result.get("error") == "not_found":
        return True
    return "pending_id" in result and result.get("status") != "staged"


def _local(created_at: float | str) -> datetime | None:
    # Unix seconds (what is written now, and what Hermes Agent writes) or ISO text (older
    # Cairn records).
    try:
        if isinstance(created_at, int | float):
            return datetime.fromtimestamp(created_at).astimezone()
        return datetime.fromisoformat(created_at).astimezone()
    except (ValueError, OverflowError, OSError):
        return None


def full_time(created_at: float | str) -> str:
    when = _local(created_at)
    return when.strftime("%Y-%m-%d %H:%M:%S") if when else str(created_at)


def short_time(created_at: float | str, now: datetime | None = None) -> str:
    """``HH:MM`` for today, else the date too, in local time; the raw text when unparseable."""
    when = _local(created_at)
    if when is None:
        return str(created_at)
    today = (now or datetime.now().astimezone()).date()
    return when.strftime("%H:%M" if when.date() == today else "%Y-%m-%d %H:%M")


class PendingModel(QAbstractTableModel):
    RecordRole = Qt.ItemDataRole.UserRole + 1
    IdRole = Qt.ItemDataRole.UserRole + 2

    COLUMNS = ("When", "Origin", "File", "Summary")

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self._records: list[dict[str, Any]] = []

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008 - Qt's signature
        return 0 if parent.isValid() else len(self._records)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.COLUMNS)

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        if (
            orientation == Qt.Orientation.Horizontal
            and role == Qt.ItemDataRole.DisplayRole
            and 0 <= section < len(self.COLUMNS)
        ):
            return self.COLUMNS[section]
        return None

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self._records):
            return None
        record = self._records[index.row()]
        if role == self.RecordRole:
            return record
        if role == self.IdRole:
            return record.get("id")
        column = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            if column == 0:
                return short_time(record.get("created_at", ""))
            if column == 1:
                origin = str(record.get("origin", ""))
                return ORIGINS.get(origin, origin)
            if column == 2:
                return file_of(record)
            if column == 3:
                return str(record.get("summary", ""))
        if role == Qt.ItemDataRole.ToolTipRole:
            if column == 0:
                return full_time(record.get("created_at", ""))
            return f"{record.get('id')}: {record.get('summary', '')}"
        return None

    def record(self, row: int) -> dict[str, Any] | None:
        return self._records[row] if 0 <= row < len(self._records) else None

    def row_of(self, pending_id: str) -> int:
        ids = [r.get("id") for r in self._records]
        return ids.index(pending_id) if pending_id in ids else -1

    def set_records(self, records: Sequence[dict[str, Any]]) -> None:
        sync_rows(
            self,
            self._records,
            list(records),
            key=lambda r: str(r.get("id")),
            last_column=len(self.COLUMNS) - 1,
        )
