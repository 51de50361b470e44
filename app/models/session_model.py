"""Past sessions as a list model, with their lineage.

A conversation that outgrew the context was compressed into a child session that continues
its parent. A browse result lists sessions newest first, which would show a continuation
above the session it continues and split one conversation across the list; here a chain is
kept together: the chain sits where its newest session would, oldest first, each continuation
one level deeper (``Role.DEPTH``) and saying what it continues (``Role.LINEAGE``).

A discover result (a search) is already one card per conversation, best match first; its
order is kept and each card brings its snippet.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from enum import IntEnum
from typing import Any

from PySide6.QtCore import (
    QAbstractListModel,
    QByteArray,
    QModelIndex,
    QPersistentModelIndex,
    Qt,
)

Index = QModelIndex | QPersistentModelIndex
UNTITLED = "(untitled)"


class Role(IntEnum):
    SESSION_ID = Qt.ItemDataRole.UserRole + 1
    TITLE = Qt.ItemDataRole.UserRole + 2
    STARTED_AT = Qt.ItemDataRole.UserRole + 3
    DATE = Qt.ItemDataRole.UserRole + 4
    PARENT_ID = Qt.ItemDataRole.UserRole + 5
    ROOT_ID = Qt.ItemDataRole.UserRole + 6
    DEPTH = Qt.ItemDataRole.UserRole + 7
    LINEAGE = Qt.ItemDataRole.UserRole + 8
    SNIPPET = Qt.ItemDataRole.UserRole + 9
    MESSAGE_COUNT = Qt.ItemDataRole.UserRole + 10
    CARD = Qt.ItemDataRole.UserRole + 11


def format_date(timestamp: float | None) -> str:
    if timestamp is None:
        return ""
    return datetime.fromtimestamp(timestamp).strftime("%Y-%m-%d %H:%M")


_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def short_date(timestamp: float | None, now: datetime | None = None) -> str:
    """The list's date: the time for today, day and month this year, else the date. Short, so
    the title keeps the width of a narrow dock; the tooltip has the full date and time."""
    if timestamp is None:
        return ""
    when = datetime.fromtimestamp(timestamp)
    now = now or datetime.now()
    if when.date() == now.date():
        return when.strftime("%H:%M")
    if when.year == now.year:
        return f"{when.day} {_MONTHS[when.month - 1]}"
    return when.strftime("%Y-%m-%d")


def title_of(card: dict[str, Any]) -> str:
    return str(card.get("title") or "").strip() or UNTITLED


def arrange(cards: list[dict[str, Any]]) -> list[tuple[dict[str, Any], int]]:
    """Newest-first cards → (card, depth) with each compression chain kept together.

    A chain is placed where its newest member was; inside it, parents come before the
    sessions that continue them. A card whose parent is not in the list starts a chain.
    """
    by_id = {card["session_id"]: card for card in cards}
    children: dict[str, list[dict[str, Any]]] = {}
    for card in cards:
        parent = card.get("parent_session_id")
        if parent in by_id and parent != card["session_id"]:
            children.setdefault(parent, []).append(card)

    def top_of(card: dict[str, Any]) -> str:
        seen = {card["session_id"]}
        while (parent := card.get("parent_session_id")) in by_id and parent not in seen:
            seen.add(parent)
            card = by_id[parent]
        return str(card["session_id"])

    placed: set[str] = set()
    out: list[tuple[dict[str, Any], int]] = []

    def walk(card: dict[str, Any], depth: int) -> None:
        if card["session_id"] in placed:
            return
        placed.add(card["session_id"])
        out.append((card, depth))
        for child in sorted(
            children.get(card["session_id"], []), key=lambda c: c.get("started_at") or 0
        ):
            walk(child, depth + 1)

    for card in cards:  # newest first: the first member seen places its whole chain
        walk(by_id[top_of(card)], 0)
    return out


class SessionModel(QAbstractListModel):
    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self._rows: list[tuple[dict[str, Any], int]] = []
        self._titles: dict[str, str] = {}  # titles of every session seen, for lineage lines
        self.query = ""
        self.error: str | None = None

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self._rows)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self._rows):
            return None
        card, depth = self._rows[index.row()]
        getters: dict[int, Callable[[], Any]] = {
            Qt.ItemDataRole.DisplayRole: lambda: title_of(card),
            Qt.ItemDataRole.ToolTipRole: lambda: self._tooltip(card),
            Role.SESSION_ID: lambda: card["session_id"],
            Role.TITLE: lambda: title_of(card),
            Role.STARTED_AT: lambda: card.get("started_at"),
            Role.DATE: lambda: short_date(card.get("started_at")),
            Role.PARENT_ID: lambda: card.get("parent_session_id"),
            Role.ROOT_ID: lambda: card.get("root_session_id"),
            Role.DEPTH: lambda: depth,
            Role.LINEAGE: lambda: self._lineage(card),
            Role.SNIPPET: lambda: card.get("snippet") or "",
            Role.MESSAGE_COUNT: lambda: card.get("message_count"),
            Role.CARD: lambda: card,
        }
        getter = getters.get(role)
        return getter() if getter is not None else None

    def flags(self, index: Index) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        return Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable

    def roleNames(self) -> dict[int, QByteArray]:
        names = super().roleNames()
        for role in Role:
            names[int(role)] = QByteArray(role.name.lower().encode())
        return names

    # -- contents --------------------------------------------------------------------------

    def set_result(self, query: str, result: dict[str, Any]) -> None:
        """A ``session_search`` browse or discover result."""
        self.query = query
        if not result.get("ok", True):
            self.error = str(result.get("message") or "the search failed")
            self._reset([])
            return
        self.error = None
        if "results" in result:  # discover: already one card per conversation, best first
            self._reset([(card, 0) for card in result.get("results") or []])
        else:
            self._reset(arrange(list(result.get("sessions") or [])))

    def set_sessions(self, cards: list[dict[str, Any]]) -> None:
        """Recent sessions (the worker's ``ChangeSet.sessions``)."""
        self.set_result("", {"ok": True, "sessions": cards})

    def row_of(self, session_id: str) -> int | None:
        for row, (card, _) in enumerate(self._rows):
            if card["session_id"] == session_id:
                return row
        return None

    def _reset(self, rows: list[tuple[dict[str, Any], int]]) -> None:
        for card, _ in rows:
            self._titles[card["session_id"]] = title_of(card)
        self.beginResetModel()
        self._rows = rows
        self.endResetModel()

    def _lineage(self, card: dict[str, Any]) -> str:
        parent = card.get("parent_session_id")
        if not parent:
            return ""
        title = self._titles.get(parent)
        return f"↳ continued from “{title}”" if title else "↳ continued from an earlier session"

    def _tooltip(self, card: dict[str, Any]) -> str:
        lines = [title_of(card), format_date(card.get("started_at"))]
        count = card.get("message_count")
        if count is not None:
            lines[-1] += f" · {count} message{'s' if count != 1 else ''}"
        if lineage := self._lineage(card):
            lines.append(lineage)
        return "\n".join(lines)
