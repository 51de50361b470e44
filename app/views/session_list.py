"""The session list: search, recent sessions with their lineage, a new-session button.

Typing searches once the typing pauses (:data:`SEARCH_DELAY_MS`): a search per keystroke would
queue one full-text query per letter on the engine thread. An answer for anything but the
current text in the box is dropped, so a slow search cannot overwrite a newer one.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import (
    QEvent,
    QModelIndex,
    QPersistentModelIndex,
    QRect,
    QSize,
    Qt,
    QTimer,
    Signal,
    Slot,
)
from PySide6.QtGui import QFont, QFontMetrics, QIcon, QKeyEvent, QPainter, QPalette
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListView,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.models.session_model import Role, SessionModel
from app.views.chat_pane import themed_icon
from app.views.markdown import blend

SEARCH_DELAY_MS = 250
INDENT = 14  # px per level of continuation
PAD = 6
SNIPPET_LINES = 2

Index = QModelIndex | QPersistentModelIndex


class SessionDelegate(QStyledItemDelegate):
    """Title and date; then "↳ continued from …" for a continuation; then a search snippet."""

    def _fonts(self, option: QStyleOptionViewItem) -> tuple[QFont, QFont]:
        small = QFont(option.font)
        small.setPointSizeF(max(6.0, option.font.pointSizeF() * 0.88))
        return option.font, small

    def sizeHint(self, option: QStyleOptionViewItem, index: Index) -> QSize:
        font, small = self._fonts(option)
        height = PAD * 2 + QFontMetrics(font).height()
        small_line = QFontMetrics(small).height()
        if index.data(Role.LINEAGE):
            height += small_line
        snippet = _snippet(index)
        if snippet:
            height += self._snippet_height(snippet, small, self._text_width(option, index))
        return QSize(200, height)

    def _text_width(self, option: QStyleOptionViewItem, index: Index) -> int:
        parent = self.parent()
        width = option.rect.width()
        if width <= 0 and isinstance(parent, QListView):
            width = parent.viewport().width()
        return max(40, width - 2 * PAD - int(index.data(Role.DEPTH) or 0) * INDENT)

    @staticmethod
    def _snippet_height(snippet: str, font: QFont, width: int) -> int:
        metrics = QFontMetrics(font)
        wrapped = metrics.boundingRect(
            QRect(0, 0, width, metrics.height() * 10), Qt.TextFlag.TextWordWrap, snippet
        )
        return min(wrapped.height(), metrics.height() * SNIPPET_LINES)

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: Index) -> None:
        opt = QStyleOptionViewItem(option)
        self.initStyleOption(opt, index)
        opt.text = ""
        style = opt.widget.style() if opt.widget is not None else None
        if style is not None:
            style.drawPrimitive(
                QStyle.PrimitiveElement.PE_PanelItemViewItem, opt, painter, opt.widget
            )
        selected = bool(opt.state & QStyle.StateFlag.State_Selected)
        group = QPalette.ColorGroup.Normal
        text_role = QPalette.ColorRole.HighlightedText if selected else QPalette.ColorRole.Text
        text = opt.palette.color(group, text_role)
        background = opt.palette.color(
            group, QPalette.ColorRole.Highlight if selected else QPalette.ColorRole.Base
        )
        muted = blend(text, background, 0.4)
        font, small = self._fonts(option)
        depth = int(index.data(Role.DEPTH) or 0)
        rect = opt.rect.adjusted(PAD + depth * INDENT, PAD, -PAD, -PAD)

        painter.save()
        metrics, small_metrics = QFontMetrics(font), QFontMetrics(small)
        date = str(index.data(Role.DATE) or "")
        date_width = small_metrics.horizontalAdvance(date) + PAD if date else 0
        painter.setFont(small)
        painter.setPen(muted)
        line = QRect(rect.left(), rect.top(), rect.width(), metrics.height())
        painter.drawText(line, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter, date)
        painter.setFont(font)
        painter.setPen(text)
        title = metrics.elidedText(
            str(index.data(Role.TITLE) or ""),
            Qt.TextElideMode.ElideRight,
            line.width() - date_width,
        )
        painter.drawText(line, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, title)
        top = line.bottom() + 1
        painter.setFont(small)
        painter.setPen(muted)
        lineage = str(index.data(Role.LINEAGE) or "")
        if lineage:
            box = QRect(rect.left(), top, rect.width(), small_metrics.height())
            elided = small_metrics.elidedText(lineage, Qt.TextElideMode.ElideRight, box.width())
            painter.drawText(
                box, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, elided
            )
            top = box.bottom() + 1
        snippet = _snippet(index)
        if snippet:
            height = self._snippet_height(snippet, small, rect.width())
            box = QRect(rect.left(), top, rect.width(), height)
            painter.drawText(box, Qt.TextFlag.TextWordWrap | Qt.AlignmentFlag.AlignTop, snippet)
        painter.restore()


def _snippet(index: Index) -> str:
    return " ".join(str(index.data(Role.SNIPPET) or "").split())


class SessionListView(QListView):
    """A list whose Enter key opens the current session, like a click does."""

    entered = Signal(QModelIndex)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and self.currentIndex().isValid():
            self.entered.emit(self.currentIndex())
            event.accept()
            return
        super().keyPressEvent(event)


class SessionList(QWidget):
    """Signals out: ``searchRequested(query)`` (empty: recent sessions), ``sessionActivated(id)``,
    ``newSessionRequested()``. Slots in: ``show_sessions(query, result)`` for the worker's
    ``sessionsFound``, ``show_recent(cards)`` for ``ChangeSet.sessions``."""

    searchRequested = Signal(str)
    sessionActivated = Signal(str)
    newSessionRequested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = SessionModel(self)

        self.search = QLineEdit()
        self.search.setPlaceholderText("Search sessions")
        self.search.setClearButtonEnabled(True)
        self.search_icon = self.search.addAction(QIcon(), QLineEdit.ActionPosition.LeadingPosition)
        self.new_button = QToolButton()
        self.new_button.setToolTip("New session")
        self.new_button.setAccessibleName("New session")
        self.new_button.clicked.connect(self.newSessionRequested)

        self.list = SessionListView()
        self.list.setModel(self.model)
        self.list.setItemDelegate(SessionDelegate(self.list))
        self.list.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.list.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.list.setUniformItemSizes(False)
        self.list.setResizeMode(QListView.ResizeMode.Adjust)  # snippets rewrap with the width
        self.list.clicked.connect(self._activate)
        self.list.entered.connect(self._activate)

        self.empty = QLabel()
        self.empty.setWordWrap(True)
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty.setTextFormat(Qt.TextFormat.PlainText)

        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(SEARCH_DELAY_MS)
        self._timer.timeout.connect(self._search_now)
        self.search.textChanged.connect(self._schedule_search)
        self.search.returnPressed.connect(self._search_now)

        top = QHBoxLayout()
        top.setContentsMargins(0, 0, 0, 0)
        top.addWidget(self.search, 1)
        top.addWidget(self.new_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(top)
        layout.addWidget(self.list, 1)
        layout.addWidget(self.empty)
        self.model.modelReset.connect(self._update_empty)
        self._update_empty()
        self._draw_icons()

    def _draw_icons(self) -> None:
        color = self.palette().color(QPalette.ColorRole.ButtonText)
        self.search_icon.setIcon(themed_icon("search", color))
        self.new_button.setIcon(themed_icon("new", color))

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:
            self._draw_icons()  # drawn in the text colour, which the scheme just changed

    @property
    def query(self) -> str:
        return self.search.text().strip()

    def _schedule_search(self, _text: str) -> None:
        self._timer.start()  # restarts: the search runs once the typing pauses

    def _search_now(self) -> None:
        self._timer.stop()
        self.searchRequested.emit(self.query)

    def _activate(self, index: QModelIndex) -> None:
        session_id = index.data(Role.SESSION_ID)
        if session_id:
            self.sessionActivated.emit(str(session_id))

    @Slot(str, object)
    def show_sessions(self, query: str, result: dict[str, Any]) -> None:
        """A browse (empty query) or discover result; dropped if the box asks for another."""
        if query.strip() != self.query:
            return
        self.model.set_result(query.strip(), result)

    @Slot(object)
    def show_recent(self, cards: list[dict[str, Any]]) -> None:
        """Recent sessions; ignored while a search is shown."""
        if not self.query:
            self.model.set_sessions(cards)

    def select(self, session_id: str | None) -> None:
        """Highlight ``session_id`` (e.g. the session being viewed) without activating it."""
        row = self.model.row_of(session_id) if session_id else None
        if row is None:
            self.list.clearSelection()
            return
        self.list.setCurrentIndex(self.model.index(row))

    def _update_empty(self) -> None:
        if self.model.rowCount():
            self.empty.hide()
            return
        if self.model.error:
            self.empty.setText(f"Search failed: {self.model.error}")
        elif self.model.query:
            self.empty.setText(f"Nothing found for “{self.model.query}”")
        else:
            self.empty.setText("No sessions yet")
        self.empty.show()
