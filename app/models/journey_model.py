"""The journey's models: the timeline's events, memory at a moment, and the one selection the
graph, the timeline and the memory panel share.

The graph and its radial layout are the engine's (:mod:`engine.journey.layout`), computed on
the engine thread; they are imported here under their old names for the views.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from PySide6.QtCore import (
    QAbstractListModel,
    QByteArray,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    Qt,
    Signal,
)
from PySide6.QtGui import QColor, QPixmap

from app.models.memory_model import first_line, sync_rows
from engine.journey import Journey, TimelineEvent

# The graph and its layout under the names the views and tests know them by.
from engine.journey.layout import (  # noqa: F401
    FACT_NODE,
    INNER_RADIUS,
    MEMORY_NODE,
    SESSION_NODE,
    SKILL_NODE,
    TARGET_GAP,
    USER_NODE,
    GraphLayout,
    build_graph,
    radial_layout,
)
from engine.memory.entries import Target

Index = QModelIndex | QPersistentModelIndex

ACTION_COLORS = {
    "add": QColor("#1b7f3b"),
    "replace": QColor("#2f6fd0"),
    "remove": QColor("#b3261e"),
    "batch": QColor("#7a4fc0"),
    "approved": QColor("#1b7f3b"),
    "rejected": QColor("#8a8f98"),
    "staged": QColor("#b26a00"),
    "external_edit": QColor("#a0522d"),
    "undo": QColor("#5f6b7a"),
    # skills and facts
    "create": QColor("#1b7f3b"),
    "found": QColor("#1b7f3b"),
    "patch": QColor("#2f6fd0"),
    "edit": QColor("#2f6fd0"),
    "update": QColor("#2f6fd0"),
    "write_file": QColor("#2f6fd0"),
    "remove_file": QColor("#b3261e"),
    "delete": QColor("#b3261e"),
    "vanished": QColor("#b3261e"),
}
ACTION_LABELS = {
    "add": "added",
    "replace": "replaced",
    "remove": "removed",
    "batch": "batch",
    "approved": "approved",
    "rejected": "rejected",
    "staged": "staged",
    "external_edit": "external edit",
    "undo": "undo",
    "create": "created",
    "found": "found",
    "patch": "patched",
    "edit": "rewritten",
    "update": "updated",
    "write_file": "file written",
    "remove_file": "file removed",
    "delete": "deleted",
    "vanished": "gone",
}


_SWATCHES: dict[str, QPixmap] = {}


def _swatch(action: str) -> QPixmap:
    """A small square in the action's colour. Made once: a QColor decoration would be turned
    into a new pixmap on every paint of every row."""
    swatch = _SWATCHES.get(action)
    if swatch is None:
        swatch = QPixmap(10, 10)
        swatch.fill(ACTION_COLORS.get(action, QColor("#5f6b7a")))
        _SWATCHES[action] = swatch
    return swatch


def when(stamp: float | None, with_seconds: bool = False) -> str:
    if stamp is None:
        return "before the history"
    fmt = "%Y-%m-%d %H:%M:%S" if with_seconds else "%Y-%m-%d %H:%M"
    return datetime.fromtimestamp(stamp).strftime(fmt)


@dataclass
class JourneyBundle:
    """What the worker sends the GUI: the journey and its graph, laid out."""

    journey: Journey
    layout: GraphLayout


def bundle(journey: Journey) -> JourneyBundle:
    return JourneyBundle(journey, radial_layout(build_graph(journey), journey.now))


# -- the shared selection -----------------------------------------------------------------------


class JourneySelection(QObject):
    """The one selected chunk (or session) key, shared by every journey view and the memory
    panel; "" when nothing is selected. Setting the same key again emits nothing, so views can
    echo a selection back without loops."""

    changed = Signal(str)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._key = ""

    @property
    def key(self) -> str:
        return self._key

    def select(self, key: str) -> None:
        if key != self._key:
            self._key = key
            self.changed.emit(key)


# -- the timeline's events ------------------------------------------------------------------------


class JourneyEventModel(QAbstractListModel):
    """Recorded events of memory, skills and facts, oldest first. Row ``r`` leads to timeline
    position ``r + 1``."""

    EventRole = Qt.ItemDataRole.UserRole + 1
    PositionRole = Qt.ItemDataRole.UserRole + 2
    ActionRole = Qt.ItemDataRole.UserRole + 3

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._events: list[TimelineEvent] = []
        # Rows are formatted once: playback repaints the list every step.
        self._display: dict[tuple[str, int, float], str] = {}

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008 - Qt's signature
        return 0 if parent.isValid() else len(self._events)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or index.column() or not 0 <= index.row() < len(self._events):
            return None
        event = self._events[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            shown = self._display.get(event.uid)
            if shown is None:
                action = ACTION_LABELS.get(event.action, event.action)
                shown = f"{when(event.at)}  {event.place:<9} {action:<13} {event.summary}"
                self._display[event.uid] = shown
            return shown
        if role == Qt.ItemDataRole.ToolTipRole:
            number = (
                f"#{event.id}" if event.layer == "memory" else f"{event.layer} change {event.id}"
            )
            lines = [
                f"{number} · {when(event.at, True)} · {event.place}",
                f"{ACTION_LABELS.get(event.action, event.action)} ({event.origin})",
                event.summary,
            ]
            if event.session_id:
                lines.append(f"session {event.session_id}")
            if event.gap:
                lines.append("the file had also changed unrecorded before this event")
            if event.note:
                lines.append(event.note)
            return "\n".join(lines)
        if role == Qt.ItemDataRole.DecorationRole:
            return _swatch(event.action)
        if role == Qt.ItemDataRole.ForegroundRole and not event.commits:
            return QColor("#8a8f98")
        if role == self.EventRole:
            return event
        if role == self.PositionRole:
            return event.position
        if role == self.ActionRole:
            return event.action
        return None

    def roleNames(self) -> dict[int, QByteArray]:
        names = super().roleNames()
        names[self.EventRole] = QByteArray(b"event")
        names[self.PositionRole] = QByteArray(b"position")
        names[self.ActionRole] = QByteArray(b"action")
        return names

    def event_at(self, row: int) -> TimelineEvent | None:
        return self._events[row] if 0 <= row < len(self._events) else None

    def set_events(self, events: Sequence[TimelineEvent]) -> None:
        """New events; the history only grows, so new rows are appended, not reset."""
        old = [e.uid for e in self._events]
        if old == [e.uid for e in events[: len(old)]]:
            if len(events) > len(old):
                self.beginInsertRows(QModelIndex(), len(old), len(events) - 1)
                self._events.extend(events[len(old) :])
                self.endInsertRows()
            return
        self.beginResetModel()
        self._events = list(events)
        self._display = {}
        self.endResetModel()


# -- memory at one moment -------------------------------------------------------------------------


@dataclass(frozen=True)
class StateRow:
    key: str
    target: Target | None  # None for a skill or a fact
    text: str
    change: str | None = None  # "added" / "changed" by the event that led to this moment
    shown: str = field(default="", compare=False)  # the display line, formatted once
    layer: str = "memory"


# Facts listed at one moment, newest first: the list is rebuilt on every playback step, and
# a store of thousands would make each step slow while telling little more.
STATE_FACTS = 200


class JourneyStateModel(QAbstractListModel):
    """What the agent knew at one timeline position: both files' entries (MEMORY first), then
    the skills and the newest facts; rows keyed by chunk or item."""

    KeyRole = Qt.ItemDataRole.UserRole + 1
    TargetRole = Qt.ItemDataRole.UserRole + 2
    ChangeRole = Qt.ItemDataRole.UserRole + 3
    FullTextRole = Qt.ItemDataRole.UserRole + 4

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._rows: list[StateRow] = []
        self.position = 0
        self.facts_hidden = 0  # facts at this moment beyond the STATE_FACTS listed

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008 - Qt's signature
        return 0 if parent.isValid() else len(self._rows)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or index.column() or not 0 <= index.row() < len(self._rows):
            return None
        row = self._rows[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            return row.shown
        if role in (Qt.ItemDataRole.ToolTipRole, self.FullTextRole):
            return row.text
        if role == Qt.ItemDataRole.ForegroundRole and row.change:
            return ACTION_COLORS["add" if row.change == "added" else "replace"]
        if role == self.KeyRole:
            return row.key
        if role == self.TargetRole:
            return row.target.value if row.target is not None else row.layer
        if role == self.ChangeRole:
            return row.change
        return None

    def roleNames(self) -> dict[int, QByteArray]:
        names = super().roleNames()
        names[self.KeyRole] = QByteArray(b"key")
        names[self.TargetRole] = QByteArray(b"target")
        names[self.ChangeRole] = QByteArray(b"change")
        names[self.FullTextRole] = QByteArray(b"fullText")
        return names

    def rows(self) -> list[StateRow]:
        return list(self._rows)

    def row_of(self, key: str) -> int:
        return next((i for i, r in enumerate(self._rows) if r.key == key), -1)

    def key_at(self, row: int) -> str | None:
        return self._rows[row].key if 0 <= row < len(self._rows) else None

    def show(self, journey: Journey | None, position: int) -> None:
        """Memory as it was at ``position``, with the rows its event touched marked."""
        self.position = position
        self.facts_hidden = 0
        rows: list[StateRow] = []
        if journey is not None:
            event = journey.events[position - 1] if 0 < position <= len(journey.events) else None
            added = set(event.chunks) if event is not None and event.commits else set()
            changed_keys = set()
            if event is not None and event.changed:
                new_texts = {after for _before, after in event.changed}
                changed_keys = {
                    k
                    for k in added
                    if (c := journey.chunk(k)) is not None and c.text_at(position) in new_texts
                }
            for target in Target:
                for key in journey.order_at(target, position):
                    chunk = journey.chunk(key)
                    text = chunk.text_at(position) if chunk is not None else None
                    if text is None:
                        continue
                    change = None
                    if key in changed_keys:
                        change = "changed"
                    elif key in added and chunk is not None and chunk.born == position:
                        change = "added"
                    tag = "USER" if target is Target.USER else "MEM"
                    mark = {"added": "+ ", "changed": "~ "}.get(change or "", "  ")
                    shown = f"{mark}{tag}  {first_line(text)}"
                    rows.append(StateRow(key, target, text, change, shown))
            skills = journey.items_at(position, "skill")
            facts = journey.items_at(position, "fact")
            self.facts_hidden = max(0, len(facts) - STATE_FACTS)
            shown_facts = facts[::-1][:STATE_FACTS]
            for item in sorted(skills, key=lambda i: i.name) + shown_facts:
                text = item.text_at(position) or item.text
                change = None
                if item.key in added:
                    change = "added" if item.born == position else "changed"
                mark = {"added": "+ ", "changed": "~ "}.get(change or "", "  ")
                if item.layer == "skill":
                    title = item.title or first_line(text)
                    shown = f"{mark}SKILL {item.subject} — {title}"
                else:
                    shown = f"{mark}FACT  {first_line(text)}"
                rows.append(StateRow(item.key, None, text, change, shown, item.layer))
        sync_rows(self, self._rows, rows, key=lambda r: r.key)
