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
    Signal,
)

from app.models.memory_model import sync_rows

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
    # The day heading drawn above this row ("Today", "Yesterday", "Monday", "3 March"), on
    # the first row of each day of a listing; "" on the others and in search results.
    DAY = Qt.ItemDataRole.UserRole + 12


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


_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_FULL_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)


def day_label(timestamp: float | None, now: datetime | None = None) -> str:
    """The heading of a day's sessions: Today, Yesterday, a weekday this week, else a date."""
    if timestamp is None:
        return "Undated"
    day = datetime.fromtimestamp(timestamp).date()
    today = (now or datetime.now()).date()
    ago = (today - day).days
    if ago == 0:
        return "Today"
    if ago == 1:
        return "Yesterday"
    if 1 < ago < 7:
        return _WEEKDAYS[day.weekday()]
    month = _FULL_MONTHS[day.month - 1]
    return f"{day.day} {month}" if day.year == today.year else f"{day.day} {month} {day.year}"


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
    """Sessions newest first, grouped by day, loaded a page at a time as the list scrolls
    (Qt's ``canFetchMore``/``fetchMore``: the model asks for the next page with
    ``moreRequested(offset)`` and the answer comes to :meth:`show_page`); or search results,
    best first."""

    moreRequested = Signal(int)  # offset of the next page of the listing

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self._rows: list[tuple[dict[str, Any], int]] = []
        self._titles: dict[str, str] = {}  # titles of every session seen, for lineage lines
        self.query = ""
        self.error: str | None = None
        # The listing as loaded so far (newest first), and how many sessions there are.
        self._cards: list[dict[str, Any]] = []
        self.total: int | None = None
        self._fetching = False
        self._hidden: set[str] = set()  # deleted, waiting out the undo window
        self._paged = False  # the rows are the paged listing (not a search, not a reset)

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self._rows)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self._rows):
            return None
        card, depth = self._rows[index.row()]
        getters: dict[int, Callable[[], Any]] = {
            Qt.ItemDataRole.DisplayRole: lambda: title_of(card),
            Qt.ItemDataRole.EditRole: lambda: str(card.get("title") or ""),
            Qt.ItemDataRole.ToolTipRole: lambda: self._tooltip(card),
            Role.SESSION_ID: lambda: card["session_id"],
            Role.TITLE: lambda: title_of(card),
            Role.STARTED_AT: lambda: card.get("started_at"),
            # Under a day heading the day is said: the row gives the time.
            Role.DATE: lambda: self._date(card),
            Role.PARENT_ID: lambda: card.get("parent_session_id"),
            Role.ROOT_ID: lambda: card.get("root_session_id"),
            Role.DEPTH: lambda: depth,
            Role.LINEAGE: lambda: self._lineage(card),
            Role.SNIPPET: lambda: card.get("snippet") or "",
            Role.MESSAGE_COUNT: lambda: card.get("message_count"),
            Role.CARD: lambda: card,
            Role.DAY: lambda: self._day(index.row()),
        }
        getter = getters.get(role)
        return getter() if getter is not None else None

    renameRequested = Signal(str, str)  # session id, new title (edited in place)

    def flags(self, index: Index) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        return Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable | Qt.ItemFlag.ItemIsEditable

    def setData(self, index: Index, value: Any, role: int = Qt.ItemDataRole.EditRole) -> bool:
        """A title typed in place: shown at once, sent to the engine as ``renameRequested``
        (its answer refreshes the list)."""
        if role != Qt.ItemDataRole.EditRole or not index.isValid():
            return False
        card, depth = self._rows[index.row()]
        title = " ".join(str(value or "").split())
        if title == (card.get("title") or ""):
            return False
        renamed = {**card, "title": title or None}
        self._rows[index.row()] = (renamed, depth)
        self._cards = [renamed if c is card else c for c in self._cards]
        self._titles[card["session_id"]] = title_of(renamed)
        self.dataChanged.emit(index, index)
        self.renameRequested.emit(card["session_id"], title)
        return True

    def roleNames(self) -> dict[int, QByteArray]:
        names = super().roleNames()
        for role in Role:
            names[int(role)] = QByteArray(role.name.lower().encode())
        return names

    # -- contents --------------------------------------------------------------------------

    def set_result(self, query: str, result: dict[str, Any]) -> None:
        """A ``session_search`` browse or discover result."""
        self._paged = False
        self.query = query
        if not result.get("ok", True):
            self.error = str(result.get("message") or "the search failed")
            self._reset([])
            return
        self.error = None
        if "results" in result:  # discover: already one card per conversation, best first
            self._reset([(card, 0) for card in result.get("results") or []])
        else:
            self._cards = list(result.get("sessions") or [])
            self.total = None
            self._reset(arrange([c for c in self._cards if c["session_id"] not in self._hidden]))

    def set_sessions(self, cards: list[dict[str, Any]]) -> None:
        """Recent sessions (the worker's ``ChangeSet.sessions``)."""
        self.set_result("", {"ok": True, "sessions": cards})

    # -- the paged listing -------------------------------------------------------------------

    def show_page(
        self,
        offset: int,
        cards: list[dict[str, Any]],
        total: int | None,
        *,
        keep_older: bool = False,
    ) -> None:
        """Sessions ``offset …`` of the listing (0: it starts again, a refresh), and how many
        there are in all; ``keep_older`` keeps loaded sessions older than the page. Rows are
        patched, not reset: the scroll position and the selection stay while pages arrive or
        the list is refreshed."""
        self._fetching = False
        kept = self._cards[:offset] if offset else []
        seen = {c["session_id"] for c in kept}
        page = [c for c in cards if c["session_id"] not in seen]
        older: list[dict[str, Any]] = []
        if keep_older and offset == 0 and page:
            ids = {c["session_id"] for c in page}
            oldest = min((c.get("started_at") or 0) for c in page)
            older = [
                c
                for c in self._cards
                if c["session_id"] not in ids and (c.get("started_at") or 0) <= oldest
            ]
        self._cards = kept + page + older
        self.total = total
        self.query = ""
        self.error = None
        self._sync()

    def loaded(self) -> int:
        return len(self._cards)

    def signature(self) -> tuple[int | None, str | None, str | None]:
        """(count, newest id, newest title) of the store as the listing was read from it."""
        newest = self._cards[0] if self._cards else None
        return (
            self.total,
            newest["session_id"] if newest else None,
            (newest.get("title") or None) if newest else None,
        )

    def canFetchMore(self, parent: Index = QModelIndex()) -> bool:  # noqa: B008
        return (
            not parent.isValid()
            and not self.query
            and not self._fetching
            and self.total is not None
            and len(self._cards) < self.total
        )

    def fetchMore(self, parent: Index = QModelIndex()) -> None:  # noqa: B008
        if self.canFetchMore(parent):
            self._fetching = True
            self.moreRequested.emit(len(self._cards))

    def hide_session(self, session_id: str) -> None:
        """Take a row out of the listing (deleted, not yet for good)."""
        self._hidden.add(session_id)
        self._sync()

    def unhide_session(self, session_id: str) -> None:
        self._hidden.discard(session_id)
        self._sync()

    def hidden(self) -> set[str]:
        return set(self._hidden)

    def card(self, session_id: str) -> dict[str, Any] | None:
        return next((c for c in self._cards if c["session_id"] == session_id), None)

    def _sync(self) -> None:
        shown = [c for c in self._cards if c["session_id"] not in self._hidden]
        rows = arrange(shown)
        for card, _ in rows:
            self._titles[card["session_id"]] = title_of(card)
        if not self._paged:  # search results (or nothing) shown: a new listing
            self._reset(rows)
            self._paged = True
            return
        sync_rows(self, self._rows, rows, key=lambda row: row[0]["session_id"])
        # A row's day heading depends on the row above it: redraw them all (cheap).
        if self._rows:
            self.dataChanged.emit(self.index(0), self.index(len(self._rows) - 1))
        self.layoutAboutToBeChanged.emit()
        self.layoutChanged.emit()

    def _date(self, card: dict[str, Any]) -> str:
        started = card.get("started_at")
        if self._paged and isinstance(started, int | float):
            return datetime.fromtimestamp(started).strftime("%H:%M")
        return short_date(started)

    def _day(self, row: int) -> str:
        if not self._paged or not 0 <= row < len(self._rows):
            return ""
        card, depth = self._rows[row]
        if depth:
            return ""  # a continuation stays with the session it continues
        label = day_label(card.get("started_at"))
        previous = next(
            (self._rows[r][0] for r in range(row - 1, -1, -1) if self._rows[r][1] == 0), None
        )
        if previous is not None and day_label(previous.get("started_at")) == label:
            return ""
        return label

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
