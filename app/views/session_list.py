"""The session list: search, recent sessions with their lineage, a new-session button.

Typing searches once the typing pauses (:data:`SEARCH_DELAY_MS`): a search per keystroke would
queue one full-text query per letter on the engine thread. An answer for anything but the
current text in the box is dropped, so a slow search cannot overwrite a newer one.
"""

from __future__ import annotations

import html
import re
from typing import Any

from PySide6.QtCore import (
    QEvent,
    QModelIndex,
    QPersistentModelIndex,
    QPoint,
    QRect,
    QSize,
    Qt,
    QTimer,
    Signal,
    Slot,
)
from PySide6.QtGui import QFont, QFontMetrics, QIcon, QKeyEvent, QPainter, QPalette, QStaticText
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFileDialog,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListView,
    QMenu,
    QPushButton,
    QSizePolicy,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.models.session_model import Role, SessionModel, title_of
from app.views.chat_pane import themed_icon
from app.views.markdown import blend

SEARCH_DELAY_MS = 250
INDENT = 14  # px per level of continuation
PAD = 6
SNIPPET_LINES = 2
DAY_GAP = 6  # px above a day heading
UNDO_MS = 8_000  # a deleted session can be brought back this long
# How often the listing is checked for sessions another program stored (`cairn sessions
# import`, a second Cairn on the same home): one count on the engine thread.
CHECK_MS = 3_000
SEARCH_RESULTS = 10  # the most a search may ask for (the engine's cap)
PAGE = 50  # sessions read per page of the listing


def snippet_html(snippet: str) -> str:
    """A search snippet for the list: markdown marks dropped, the engine's ``[match]``
    brackets shown as bold, everything else escaped."""
    text = " ".join(snippet.split())
    text = re.sub(r"`{1,3}|\*\*|__|(?<!\w)[*_](?=\S)|(?<=\S)[*_](?!\w)|^#+\s*", "", text)
    text = re.sub(r"\[([^\[\]]+)\]\((?:https?://|mailto:)[^)\s]*\)", r"\1", text)  # links
    parts = re.split(r"\[([^\[\]]{1,80})\]", text)
    out = []
    for i, part in enumerate(parts):
        out.append(f"<b>{html.escape(part)}</b>" if i % 2 else html.escape(part))
    return "".join(out)


def matched_terms(snippet: str, query: str) -> list[str]:
    """Words to highlight in the opened transcript: what the engine marked, and the query's
    own words (its stemmed matches differ from the typed word)."""
    found = [m for m in re.findall(r"\[([^\[\]]{1,80})\]", snippet or "")]
    words = [w for w in re.findall(r"\w[\w.-]*", query) if len(w) > 1]
    seen: dict[str, None] = {}
    for term in found + words:
        seen.setdefault(term.casefold(), None)
    return list(seen)


Index = QModelIndex | QPersistentModelIndex


class SessionDelegate(QStyledItemDelegate):
    """Title and date; then "↳ continued from …" for a continuation; then a search snippet."""

    def _fonts(self, option: QStyleOptionViewItem) -> tuple[QFont, QFont]:
        small = QFont(option.font)
        small.setPointSizeF(max(6.0, option.font.pointSizeF() * 0.88))
        return option.font, small

    def _day_height(self, option: QStyleOptionViewItem, index: Index) -> int:
        if not index.data(Role.DAY):
            return 0
        _font, small = self._fonts(option)
        return QFontMetrics(small).height() + DAY_GAP + 2

    def sizeHint(self, option: QStyleOptionViewItem, index: Index) -> QSize:
        font, small = self._fonts(option)
        height = PAD * 2 + QFontMetrics(font).height() + self._day_height(option, index)
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
        day_height = self._day_height(option, index)
        if day_height:
            # The day's heading sits above the row, outside its selection highlight.
            _font, small = self._fonts(option)
            heading = QFont(small)
            heading.setBold(True)
            painter.save()
            painter.setFont(heading)
            painter.setPen(
                blend(
                    option.palette.color(QPalette.ColorRole.Text),
                    option.palette.color(QPalette.ColorRole.Base),
                    0.35,
                )
            )
            box = QRect(
                option.rect.left() + PAD,
                option.rect.top() + DAY_GAP,
                option.rect.width(),
                day_height - DAY_GAP,
            )
            painter.drawText(
                box,
                Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
                str(index.data(Role.DAY)),
            )
            painter.restore()
            option = QStyleOptionViewItem(option)
            option.rect = option.rect.adjusted(0, day_height, 0, 0)
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
            painter.setClipRect(QRect(rect.left(), top, rect.width(), height))
            text = QStaticText(snippet_html(str(index.data(Role.SNIPPET) or "")))
            text.setTextFormat(Qt.TextFormat.RichText)
            text.setTextWidth(rect.width())
            painter.drawStaticText(rect.left(), top, text)
        painter.restore()

    def createEditor(self, parent: QWidget, option: QStyleOptionViewItem, index: Index) -> QWidget:
        editor = super().createEditor(parent, option, index)
        if isinstance(editor, QLineEdit):
            editor.setPlaceholderText("(untitled)")
        return editor

    def updateEditorGeometry(
        self, editor: QWidget, option: QStyleOptionViewItem, index: Index
    ) -> None:
        # Over the title line only, below the day heading.
        font, _small = self._fonts(option)
        top = option.rect.top() + self._day_height(option, index) + PAD // 2
        height = QFontMetrics(font).height() + PAD
        editor.setGeometry(QRect(option.rect.left() + 2, top, option.rect.width() - 4, height))


def _snippet(index: Index) -> str:
    """The snippet as plain words (its height is measured on these)."""
    text = " ".join(str(index.data(Role.SNIPPET) or "").split())
    return re.sub(r"\[([^\[\]]{1,80})\]", r"\1", text)


class SessionListView(QListView):
    """A list whose Enter key opens the current session, like a click does; Del deletes it,
    F2 renames it."""

    entered = Signal(QModelIndex)
    deleteKeyPressed = Signal(QModelIndex)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if self.state() == QAbstractItemView.State.EditingState:
            super().keyPressEvent(event)
            return
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and self.currentIndex().isValid():
            self.entered.emit(self.currentIndex())
            event.accept()
            return
        if event.key() == Qt.Key.Key_Delete and self.currentIndex().isValid():
            self.deleteKeyPressed.emit(self.currentIndex())
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
    pageRequested = Signal(int, int)  # offset, count: more of the listing (0: refresh)
    checkRequested = Signal()  # is the store as last seen? (answer: show_signature)
    renameRequested = Signal(str, str)  # session id, title
    deleteRequested = Signal(object)  # session ids, once their undo window is over
    exportRequested = Signal(object, str)  # session ids, file path
    continueRequested = Signal(str)  # go on with this conversation in the chat

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
        self.list.deleteKeyPressed.connect(
            lambda index: self.delete_session(index.data(Role.SESSION_ID))
        )
        self.list.setEditTriggers(
            QAbstractItemView.EditTrigger.EditKeyPressed  # F2; a click opens, not renames
        )
        self.list.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.list.customContextMenuRequested.connect(self._context_menu)
        self.model.moreRequested.connect(lambda offset: self.pageRequested.emit(offset, PAGE))
        self.model.renameRequested.connect(self.renameRequested)

        # "Deleted … Undo": the session is gone from the list at once, from the store only
        # when the window closes or UNDO_MS pass.
        self.undo_bar = QFrame()
        self.undo_bar.setFrameShape(QFrame.Shape.StyledPanel)
        self.undo_label = QLabel()
        self.undo_label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.undo_button = QPushButton("Undo")
        self.undo_button.clicked.connect(self.undo_delete)
        bar = QHBoxLayout(self.undo_bar)
        bar.setContentsMargins(6, 2, 6, 2)
        bar.addWidget(self.undo_label, 1)
        bar.addWidget(self.undo_button)
        self.undo_bar.hide()
        self._deleting: list[str] = []
        self._undo_timer = QTimer(self)
        self._undo_timer.setSingleShot(True)
        self._undo_timer.timeout.connect(self.flush_deletes)

        self._signature: object = None
        self._check_timer = QTimer(self)
        self._check_timer.setInterval(CHECK_MS)
        self._check_timer.timeout.connect(self._check)
        self._check_timer.start()
        self.status = QLabel()
        self.status.setWordWrap(True)
        self.status.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.status.hide()
        self._status_timer = QTimer(self)
        self._status_timer.setSingleShot(True)
        self._status_timer.timeout.connect(self.status.hide)
        self._file_dialog: QFileDialog | None = None

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
        layout.addWidget(self.undo_bar)
        layout.addWidget(self.status)
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
        if not self.query and self.model.total is not None:
            # Cleared: back to the paged listing of every session, not a short browse.
            self.pageRequested.emit(0, max(PAGE, self.model.loaded()))
            return
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

    # -- the listing: pages, refresh ------------------------------------------------------

    def show_page(
        self,
        offset: int,
        cards: list[dict[str, Any]],
        total: int | None,
        *,
        keep_older: bool = False,
    ) -> None:
        """A page of the listing (the window's answer to ``pageRequested``); ignored while
        a search is shown. ``keep_older``: a refresh of the newest page, which keeps the
        older pages already loaded."""
        if self.query:
            return
        self.model.show_page(offset, cards, total, keep_older=keep_older)
        self._update_empty()

    def _check(self) -> None:
        if self.isVisible() and not self.query:
            self.checkRequested.emit()

    @Slot(object)
    def show_signature(self, signature: object) -> None:
        """What the store holds now (a count, the newest session's id and title): when it is
        not what the listing was read with, another program added, removed or renamed
        sessions, and the listing is read again, as far as it was loaded."""
        self._signature = signature
        if self.query or self.model.total is None:
            return
        if signature != self.model.signature():
            self.pageRequested.emit(0, max(PAGE, self.model.loaded()))

    # -- rename, delete, export --------------------------------------------------------------

    def _context_menu(self, point: QPoint) -> None:
        menu = self.context_menu_at(point)
        if menu is not None:
            menu.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
            menu.popup(self.list.viewport().mapToGlobal(point))

    def context_menu_at(self, point: QPoint) -> QMenu | None:
        index = self.list.indexAt(point)
        session_id = index.data(Role.SESSION_ID) if index.isValid() else None
        if not session_id:
            return None
        menu = QMenu(self)
        menu.addAction("Open").triggered.connect(lambda: self.sessionActivated.emit(session_id))
        menu.addAction("Continue this conversation").triggered.connect(
            lambda: self.continueRequested.emit(session_id)
        )
        menu.addAction("Rename…").triggered.connect(lambda: self.list.edit(index))
        menu.addAction("Export…").triggered.connect(lambda: self.choose_export([session_id]))
        menu.addSeparator()
        menu.addAction("Delete").triggered.connect(lambda: self.delete_session(session_id))
        return menu

    @Slot(str)
    def delete_session(self, session_id: str | None) -> None:
        """Out of the list now; out of the store when the undo window is over."""
        if not session_id:
            return
        card = self.model.card(session_id) or {}
        self.model.hide_session(session_id)
        self._deleting.append(session_id)
        count = len(self._deleting)
        what = f"“{title_of(card)}”" if count == 1 else f"{count} sessions"
        self.undo_label.setText(f"Deleted {what}")
        self.undo_bar.show()
        self._undo_timer.start(UNDO_MS)
        self._update_empty()

    @Slot()
    def undo_delete(self) -> None:
        self._undo_timer.stop()
        for session_id in self._deleting:
            self.model.unhide_session(session_id)
        self._deleting = []
        self.undo_bar.hide()
        self._update_empty()

    @Slot()
    def flush_deletes(self) -> None:
        """Delete for good what is waiting (the window is over, or the window closes)."""
        self._undo_timer.stop()
        self.undo_bar.hide()
        if self._deleting:
            ids, self._deleting = self._deleting, []
            self.deleteRequested.emit(ids)

    def choose_export(self, session_ids: list[str]) -> None:
        dialog = QFileDialog(self, "Export sessions")
        dialog.setAcceptMode(QFileDialog.AcceptMode.AcceptSave)
        dialog.setNameFilter("Sessions (*.jsonl)")
        dialog.setDefaultSuffix("jsonl")
        dialog.selectFile("cairn-sessions.jsonl")
        dialog.fileSelected.connect(lambda path: self.exportRequested.emit(session_ids, path))
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self._file_dialog = dialog
        dialog.open()

    def show_status(self, message: str) -> None:
        """An outcome (renamed, exported, refused), for a few seconds."""
        self.status.setText(message)
        self.status.show()
        self._status_timer.start(UNDO_MS)

    def matched_terms(self, session_id: str) -> list[str]:
        """What to highlight when ``session_id`` is opened from the search shown."""
        if not self.query:
            return []
        row = self.model.row_of(session_id)
        snippet = str(self.model.index(row).data(Role.SNIPPET) or "") if row is not None else ""
        return matched_terms(snippet, self.query)

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
