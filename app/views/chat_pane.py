"""The chat pane: the transcript, the input box, Send/Stop.

The transcript is one ``QTextBrowser`` fed from a :class:`TranscriptModel`, not a list view
with a painting delegate: text can be selected and copied across messages (code above all),
links and tool-call toggles are ordinary anchors reachable by keyboard, and one document with
incremental layout stays fast over a long history, where a delegate must lay out a document
per row on every resize.

Each row owns a ``QTextFrame``; changing a row refills only its frame, so a streamed token
never re-renders the history. A streaming reply is refilled at most every
:data:`STREAM_INTERVAL_MS`, and only its unfinished last piece (see
:class:`~app.views.markdown.StreamSplitter`): finished pieces sit in frames of their own and
stay when the reply ends, since they render as the whole text would.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from importlib import resources
from typing import Any

from PySide6.QtCore import (
    QByteArray,
    QEvent,
    QModelIndex,
    QPersistentModelIndex,
    QPoint,
    QRectF,
    QSize,
    Qt,
    QTimer,
    QUrl,
    Signal,
    Slot,
)
from PySide6.QtGui import (
    QAction,
    QColor,
    QContextMenuEvent,
    QDesktopServices,
    QFont,
    QIcon,
    QKeyEvent,
    QPainter,
    QPalette,
    QPixmap,
    QTextBlockFormat,
    QTextCharFormat,
    QTextCursor,
    QTextDocument,
    QTextDocumentFragment,
    QTextFormat,
    QTextFrame,
    QTextFrameFormat,
    QTextOption,
)
from PySide6.QtSvg import QSvgRenderer
from PySide6.QtWidgets import (
    QApplication,
    QFrame,
    QHBoxLayout,
    QLabel,
    QMenu,
    QPlainTextEdit,
    QPushButton,
    QSizePolicy,
    QTextBrowser,
    QTextEdit,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.models.transcript_model import ChatItem, Kind, TranscriptModel
from app.views.markdown import (
    CODE_BLOCK,
    Colors,
    StreamSplitter,
    code_block_format,
    code_char_format,
    collapse_around,
    collapse_block,
    to_document,
    wrap_code_runs,
)

STREAM_INTERVAL_MS = 50
# A finished reply up to this size is drawn as one document (~15 ms), live and reloaded; a
# longer one keeps the pieces it streamed in, and is cut into them again when reloaded.
WHOLE_REPLY_CHARS = 12_000
NO_MODEL = (
    "No model is set up yet, so nothing was sent; your message is back in the box. Choose "
    "one in the panel above the chat (or File › Settings…), then send it again."
)
EMPTY_STATE = (
    "<p style='font-size:large'><b>What are we working on?</b></p>"
    "<p>Cairn keeps a short memory of what matters (the Memory panel) and every past "
    "conversation (Sessions, searchable with Ctrl+K). What it learns today it knows from the "
    "next session on.</p>"
    "<p><b>/help</b> lists the commands · <b>Ctrl+3</b> opens the journey of what it learned "
    "· <b>Esc</b> stops a reply · <b>↑</b> recalls your last message</p>"
)
NOTIFICATION_MODES = ("off", "on", "verbose")
MAX_RESULT_CHARS = 6000  # of a tool result shown expanded; the model saw it whole
TOGGLE_SCHEME = "cairn"
INPUT_MAX_LINES = 8
PARAGRAPH_GAP = 6.0  # px: md4c's paragraph margin

Index = QModelIndex | QPersistentModelIndex


def themed_icon(name: str, color: QColor) -> QIcon:
    """``resources/icons/<name>.svg`` drawn in ``color`` (the SVGs paint in currentColor)."""
    svg = resources.files("resources").joinpath("icons", f"{name}.svg").read_text("utf-8")
    renderer = QSvgRenderer(QByteArray(svg.replace("currentColor", color.name()).encode()))
    icon = QIcon()
    for size in (16, 24, 32, 48):
        pixmap = QPixmap(size, size)
        pixmap.fill(Qt.GlobalColor.transparent)
        painter = QPainter(pixmap)
        renderer.render(painter, QRectF(0, 0, size, size))
        painter.end()
        icon.addPixmap(pixmap)
    return icon


def format_time(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp).strftime("%Y-%m-%d %H:%M")


def pretty(value: Any) -> str:
    """Tool arguments or a result as indented JSON when it is JSON, else as it came."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return value
    try:
        return json.dumps(value, indent=2, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n… {len(text) - limit:,} more characters"


# -- documents for one row -------------------------------------------------------------------


def _muted(colors: Colors, *, italic: bool = False, small: bool = True) -> QTextCharFormat:
    fmt = QTextCharFormat()
    fmt.setForeground(colors.muted)
    fmt.setFontItalic(italic)
    if small:
        fmt.setProperty(QTextFormat.Property.FontSizeAdjustment, -1)
    return fmt


def _plain_document(text: str, fmt: QTextCharFormat | None = None) -> QTextDocument:
    doc = QTextDocument()
    doc.setUndoRedoEnabled(False)
    QTextCursor(doc).insertText(text, fmt or QTextCharFormat())
    return doc


def _add_block(
    cursor: QTextCursor, text: str, fmt: QTextCharFormat, block: QTextBlockFormat
) -> None:
    if cursor.document().isEmpty():
        cursor.setBlockFormat(block)
        cursor.setBlockCharFormat(fmt)
    else:
        cursor.insertBlock(block, fmt)
    cursor.insertText(text, fmt)


def _add_code(cursor: QTextCursor, text: str) -> None:
    """Code lines; the document's :func:`wrap_code_runs` boxes them once it is complete."""
    for line in text.split("\n"):
        _add_block(cursor, line, code_char_format(), code_block_format())


def tool_document(item: ChatItem, colors: Colors) -> QTextDocument:
    doc = QTextDocument()
    doc.setUndoRedoEnabled(False)
    cursor = QTextCursor(doc)
    line = QTextCharFormat(_muted(colors, small=False))
    if item.ok is False:
        line.setForeground(colors.error)
    line.setAnchor(True)
    line.setAnchorHref(f"{TOGGLE_SCHEME}:toggle/{item.uid}")
    line.setToolTip("Hide details" if item.expanded else "Show arguments and result")
    marker = "▾" if item.expanded else "▸"
    if item.ok is None:
        text = f"{item.name} …"
    else:
        text = item.summary or f"{item.name}: {'done' if item.ok else 'failed'}"
    cursor.insertText(f"{marker} {text}", line)
    if item.expanded:
        label = _muted(colors)
        label.setFontWeight(QFont.Weight.Bold)
        spaced = QTextBlockFormat()
        spaced.setTopMargin(4)
        _add_block(cursor, "arguments", label, spaced)
        _add_code(cursor, pretty(item.arguments) if item.arguments else "(none)")
        _add_block(cursor, "result", label, spaced)
        result = "(still running)" if item.ok is None else pretty(item.result)
        _add_code(cursor, _clip(result, MAX_RESULT_CHARS))
        wrap_code_runs(doc, colors)
    return doc


def notice_document(item: ChatItem, colors: Colors, notifications: str) -> QTextDocument:
    doc = QTextDocument()
    doc.setUndoRedoEnabled(False)
    cursor = QTextCursor(doc)
    error = item.notice_kind == "error"
    fmt = _muted(colors, italic=not error, small=False)
    if error:
        fmt.setForeground(colors.error)
    prefix = "⚠ " if error else ""
    cursor.insertText(prefix + item.text, fmt)
    show_detail = item.notice_kind != "memory" or notifications == "verbose"
    if item.detail and show_detail:
        for line in item.detail.split("\n"):
            _add_block(cursor, line, _muted(colors), QTextBlockFormat())
    return doc


def command_document(item: ChatItem, colors: Colors) -> QTextDocument:
    doc = QTextDocument()
    doc.setUndoRedoEnabled(False)
    cursor = QTextCursor(doc)
    fmt = code_char_format()
    if item.ok is False:
        fmt.setForeground(colors.error)
    for line in item.text.split("\n"):
        _add_block(cursor, line, fmt, code_block_format())
    wrap_code_runs(doc, colors)
    return doc


def assistant_document(text: str, colors: Colors, *, cancelled: bool) -> QTextDocument:
    doc = to_document(text, colors)
    if cancelled:
        cursor = QTextCursor(doc)
        cursor.movePosition(QTextCursor.MoveOperation.End)
        marker = _muted(colors, italic=True)
        block = QTextBlockFormat()
        block.setTopMargin(4)
        if text.strip():
            _add_block(cursor, "■ stopped", marker, block)
        else:
            cursor.insertText("■ stopped", marker)
    return doc


def is_visible(item: ChatItem, notifications: str) -> bool:
    return not (
        item.kind is Kind.NOTICE and item.notice_kind == "memory" and notifications == "off"
    )


# -- the transcript view ---------------------------------------------------------------------


@dataclass
class _Stream:
    splitter: StreamSplitter = field(default_factory=StreamSplitter)
    tail: QTextFrame | None = None


class TranscriptView(QTextBrowser):
    """A read-only rendering of a :class:`TranscriptModel`, one frame per visible row.

    Its context menu copies the message or the code block under the pointer and offers
    ``regenerateRequested`` / ``editLastRequested`` on the last reply and the last message;
    the pane decides whether they apply (:attr:`can_resend`)."""

    regenerateRequested = Signal()
    editLastRequested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setOpenLinks(False)
        self.setReadOnly(True)
        self.setUndoRedoEnabled(False)
        self.setWordWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
        self.document().setDocumentMargin(10)
        self._model: TranscriptModel | None = None
        self._frames: list[QTextFrame | None] = []
        self._streams: dict[int, _Stream] = {}
        self._dirty: set[int] = set()  # uids of streaming rows waiting for the timer
        self._notifications = "on"
        self._colors = Colors.from_palette(self.palette())
        self._stick = True  # follow new text while the user is at the bottom
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(STREAM_INTERVAL_MS)
        self._timer.timeout.connect(self.flush)
        self.anchorClicked.connect(self._on_anchor)
        bar = self.verticalScrollBar()
        bar.rangeChanged.connect(self._on_range)
        bar.valueChanged.connect(self._on_scrolled)
        self.renders = 0  # fills done; lets tests check that history is not re-rendered
        self.can_resend = False  # set by the pane: live, idle, with a message to resend
        self.show_empty_state = True  # the live conversation; not an empty stored session
        # Shown while the user has scrolled up: one click back to the newest text.
        self.jump_button = QToolButton(self)
        self.jump_button.setToolTip("Scroll to the newest message (Ctrl+End)")
        self.jump_button.setAccessibleName("Scroll to bottom")
        self.jump_button.setAutoRaise(False)
        self.jump_button.setIconSize(QSize(18, 18))
        self.jump_button.setCursor(Qt.CursorShape.ArrowCursor)
        self.jump_button.clicked.connect(self.scroll_to_bottom)
        self.jump_button.hide()
        self._draw_jump_icon()
        # What an empty conversation says: where to start, and what is worth knowing.
        self.empty_state = QLabel(self.viewport())
        self.empty_state.setObjectName("emptyState")
        self.empty_state.setTextFormat(Qt.TextFormat.RichText)
        self.empty_state.setWordWrap(True)
        self.empty_state.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty_state.setText(EMPTY_STATE)
        self.empty_state.hide()

    # -- model -----------------------------------------------------------------------------

    def setModel(self, model: TranscriptModel) -> None:
        if self._model is model:
            return
        if self._model is not None:
            for signal, slot in self._connections(self._model):
                signal.disconnect(slot)
        self._model = model
        for signal, slot in self._connections(model):
            signal.connect(slot)
        self.rebuild()

    def _connections(self, model: TranscriptModel) -> list[tuple[Any, Any]]:
        return [
            (model.rowsInserted, self._on_rows_inserted),
            (model.rowsRemoved, self.rebuild),
            (model.rowsMoved, self.rebuild),
            (model.modelReset, self.rebuild),
            (model.layoutChanged, self.rebuild),
            (model.dataChanged, self._on_data_changed),
        ]

    def model(self) -> TranscriptModel | None:
        return self._model

    @property
    def notifications(self) -> str:
        return self._notifications

    def set_notifications(self, mode: str) -> None:
        if mode not in NOTIFICATION_MODES:
            raise ValueError(f"notifications must be one of {', '.join(NOTIFICATION_MODES)}")
        if mode != self._notifications:
            self._notifications = mode
            self.rebuild()

    @Slot()
    def rebuild(self) -> None:
        """Render every row again (model reset, notification mode or palette changed)."""
        self._timer.stop()
        self._dirty.clear()
        self._streams.clear()
        self._frames = []
        doc = self.document()
        doc.clear()
        collapse_block(doc.begin())
        if self._model is None:
            return
        for row in range(self._model.rowCount()):
            self._frames.append(None)
            self._create(row)
        self._stick = True
        self._on_range(0, self.verticalScrollBar().maximum())
        self._update_empty()

    @Slot()
    def flush(self) -> None:
        """Render the streaming rows that changed since the last render."""
        self._timer.stop()
        if self._model is None:
            return
        dirty, self._dirty = self._dirty, set()
        for uid in dirty:
            row = self._model.row_of(uid)
            if row is not None:
                self._render(row)

    def _on_rows_inserted(self, parent: Index, first: int, last: int) -> None:
        for row in range(first, last + 1):
            self._frames.insert(row, None)
            self._create(row)
        self._update_empty()

    def _on_data_changed(self, top: Index, bottom: Index, roles: list[int] | None = None) -> None:
        assert self._model is not None
        for row in range(top.row(), bottom.row() + 1):
            item = self._model.item(row)
            if item.streaming:
                # Throttled, not debounced: a steady stream still shows every interval.
                self._dirty.add(item.uid)
                if not self._timer.isActive():
                    self._timer.start()
            else:
                self._dirty.discard(item.uid)
                self._render(row)

    # -- frames ----------------------------------------------------------------------------

    def _create(self, row: int) -> None:
        assert self._model is not None
        item = self._model.item(row)
        if not is_visible(item, self._notifications):
            return
        previous = next((f for f in reversed(self._frames[:row]) if f is not None), None)
        cursor = QTextCursor(self.document())
        cursor.setPosition(previous.lastPosition() + 1 if previous is not None else 0)
        frame = cursor.insertFrame(self._frame_format(item))
        collapse_around(frame)
        self._frames[row] = frame
        self._render(row)

    def _frame_format(self, item: ChatItem) -> QTextFrameFormat:
        fmt = QTextFrameFormat()
        fmt.setBorder(0)
        if item.kind is Kind.USER:
            fmt.setBackground(self._colors.user_bg)
            fmt.setPadding(8)
            fmt.setTopMargin(14)
            fmt.setBottomMargin(4)
        elif item.kind is Kind.ASSISTANT:
            fmt.setTopMargin(4)
            fmt.setBottomMargin(4)
        elif item.kind is Kind.COMMAND:
            fmt.setTopMargin(6)
            fmt.setBottomMargin(6)
        else:  # tool calls and notices: close to the reply they belong to, close to each other
            fmt.setTopMargin(3)
            fmt.setBottomMargin(1)
        return fmt

    def _render(self, row: int) -> None:
        assert self._model is not None
        frame = self._frames[row] if row < len(self._frames) else None
        if frame is None:
            return
        item = self._model.item(row)
        colors = self._colors
        if item.kind is Kind.ASSISTANT and (
            item.streaming or item.uid in self._streams or len(item.text) > WHOLE_REPLY_CHARS
        ):
            # A long finished reply (read back, or rebuilt for a new palette) is cut into the
            # pieces its stream had, so it is drawn as it was live.
            self._render_stream(item, frame)
            return
        if item.kind is Kind.ASSISTANT:
            doc = assistant_document(item.text, colors, cancelled=item.cancelled)
        elif item.kind is Kind.TOOL:
            doc = tool_document(item, colors)
        elif item.kind is Kind.NOTICE:
            doc = notice_document(item, colors, self._notifications)
        elif item.kind is Kind.COMMAND:
            doc = command_document(item, colors)
        else:
            doc = _plain_document(item.text)
        self._fill(frame, doc)

    def _render_stream(self, item: ChatItem, frame: QTextFrame) -> None:
        stream = self._streams.get(item.uid)
        if stream is None:
            stream = self._streams[item.uid] = _Stream()
            self._fill(frame, _plain_document(""))
        text = item.text
        for piece in stream.splitter.feed(text):
            target = stream.tail or self._child_frame(frame)
            stream.tail = None
            self._fill_piece(frame, target, to_document(piece, self._colors))
        if stream.tail is None:
            stream.tail = self._child_frame(frame)
        tail = stream.splitter.tail(text)
        self._fill_piece(frame, stream.tail, to_document(tail, self._colors))
        if not tail.strip():  # the text ended on a piece boundary: no blank line for it
            collapse_block(self.document().findBlock(stream.tail.firstPosition()))
        if item.streaming:
            return
        del self._streams[item.uid]
        if len(text) <= WHOLE_REPLY_CHARS:
            # Done, and short: drawn again as one document, as a reloaded reply is, so live
            # and reloaded look alike (spacing around tables and code boxes included).
            self._fill(frame, assistant_document(text, self._colors, cancelled=item.cancelled))
            return
        # Done, and long: the pieces stay (rendering it again in one go would freeze the
        # window, ~170 ms for 100 kB), and a reload cuts it into the same pieces.
        if item.cancelled:
            marker = self._child_frame(frame)
            self._fill(marker, assistant_document("", self._colors, cancelled=True))

    def _fill_piece(self, item: QTextFrame, piece: QTextFrame, content: QTextDocument) -> None:
        # The layout drops the top margin of a frame's first block, so a piece would sit
        # flush against the one before it; the piece's frame takes that margin instead. Not
        # the first piece: the whole message's first block loses its margin in the same way.
        fmt = piece.frameFormat()
        first = content.begin()
        # A piece opening with a code box: the paragraph before it would have kept that gap.
        top = first.blockFormat().topMargin() if first.text() else PARAGRAPH_GAP
        fmt.setTopMargin(top if piece.firstPosition() > item.firstPosition() + 1 else 0.0)
        piece.setFrameFormat(fmt)
        self._fill(piece, content)

    def _child_frame(self, parent: QTextFrame) -> QTextFrame:
        cursor = QTextCursor(self.document())
        cursor.setPosition(parent.lastPosition())
        frame = cursor.insertFrame(QTextFrameFormat())
        collapse_around(frame)
        return frame

    def _fill(self, frame: QTextFrame, content: QTextDocument) -> None:
        """Replace what ``frame`` holds with ``content``.

        Inserting a fragment merges its first block into the block at the cursor, and that
        merge drops the block's format (a heading becomes a paragraph, a list gains an empty
        line). So a throwaway empty block goes first, takes the merge, and is deleted after.
        """
        self.renders += 1
        first = content.begin()
        head = QTextCursor(content)
        head.insertBlock(first.blockFormat(), first.charFormat())
        head.movePosition(QTextCursor.MoveOperation.Start)
        head.setBlockFormat(QTextBlockFormat())
        cursor = QTextCursor(self.document())
        cursor.beginEditBlock()
        cursor.setPosition(frame.firstPosition())
        cursor.setPosition(frame.lastPosition(), QTextCursor.MoveMode.KeepAnchor)
        cursor.removeSelectedText()
        cursor.setBlockFormat(QTextBlockFormat())
        cursor.setBlockCharFormat(QTextCharFormat())
        cursor.setCharFormat(QTextCharFormat())
        cursor.insertFragment(QTextDocumentFragment(content))
        cursor.setPosition(frame.firstPosition())
        cursor.deleteChar()
        # Qt will not merge a block into a frame: before a leading code box it stays behind.
        first = self.document().findBlock(frame.firstPosition())
        if (
            not first.text()
            and first.next().isValid()
            and first.next().position() <= frame.lastPosition()
        ):
            collapse_block(first)
        cursor.endEditBlock()

    # -- behaviour -------------------------------------------------------------------------

    def _on_anchor(self, url: QUrl) -> None:
        if url.scheme() == TOGGLE_SCHEME:
            _, _, uid = url.path().partition("toggle/")
            if self._model is not None and uid.isdigit():
                self._model.toggle_expanded(int(uid))
            return
        if url.scheme().lower() in ("http", "https", "mailto"):
            QDesktopServices.openUrl(url)

    def _on_range(self, _minimum: int, maximum: int) -> None:
        if self._stick:
            self.verticalScrollBar().setValue(maximum)
        self._update_jump()

    def _on_scrolled(self, value: int) -> None:
        bar = self.verticalScrollBar()
        self._stick = value >= bar.maximum() - 8
        self._update_jump()

    @Slot()
    def scroll_to_bottom(self) -> None:
        self._stick = True
        bar = self.verticalScrollBar()
        bar.setValue(bar.maximum())
        self._update_jump()

    def _update_jump(self) -> None:
        self.jump_button.setVisible(not self._stick)
        if not self._stick:
            self._place_jump()

    def _update_empty(self) -> None:
        empty = self._model is None or self._model.rowCount() == 0
        self.empty_state.setVisible(empty and self.show_empty_state)
        if empty:
            palette = self.empty_state.palette()
            palette.setColor(QPalette.ColorRole.WindowText, self._colors.muted)
            self.empty_state.setPalette(palette)
            self._place_empty()

    def _place_empty(self) -> None:
        area = self.viewport().rect()
        width = min(area.width() - 40, 460)
        height = self.empty_state.heightForWidth(width)
        self.empty_state.setGeometry(
            area.center().x() - width // 2, max(10, area.center().y() - height // 2), width, height
        )

    def _place_jump(self) -> None:
        viewport = self.viewport().geometry()
        size = self.jump_button.sizeHint()
        self.jump_button.resize(size)
        self.jump_button.move(
            viewport.right() - size.width() - 14, viewport.bottom() - size.height() - 10
        )
        self.jump_button.raise_()

    def _draw_jump_icon(self) -> None:
        self.jump_button.setIcon(
            themed_icon("down", self.palette().color(self.jump_button.foregroundRole()))
        )

    def resizeEvent(self, event: Any) -> None:
        super().resizeEvent(event)
        self._place_jump()
        if self.empty_state.isVisible():
            self._place_empty()

    def keyPressEvent(self, event: QKeyEvent) -> None:
        ctrl = event.modifiers() & Qt.KeyboardModifier.ControlModifier
        if event.key() == Qt.Key.Key_End and ctrl:
            self.scroll_to_bottom()
            event.accept()
            return
        super().keyPressEvent(event)

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() in (QEvent.Type.PaletteChange, QEvent.Type.StyleChange):
            self._draw_jump_icon()
            colors = Colors.from_palette(self.palette())
            if colors != self._colors:
                self._colors = colors
                self.rebuild()

    # -- highlighting search matches ---------------------------------------------------------

    MAX_HIGHLIGHTS = 500

    def highlight(self, terms: Sequence[str]) -> int:
        """Mark every occurrence of ``terms`` (case-insensitive) and scroll to the first;
        the document is not changed, so copying gives the text as it is. Returns the count."""
        selections: list[QTextEdit.ExtraSelection] = []
        doc = self.document()
        fmt = QTextCharFormat()
        fmt.setBackground(self._colors.match_bg)
        first: QTextCursor | None = None
        for term in terms:
            if not term.strip():
                continue
            cursor = QTextCursor(doc)
            while len(selections) < self.MAX_HIGHLIGHTS:
                cursor = doc.find(term, cursor)
                if cursor.isNull():
                    break
                selection = QTextEdit.ExtraSelection()
                selection.cursor = QTextCursor(cursor)
                selection.format = fmt
                selections.append(selection)
                if first is None or cursor.position() < first.position():
                    first = QTextCursor(cursor)
        self.setExtraSelections(selections)
        if first is not None:
            self._stick = False
            shown = QTextCursor(first)
            shown.clearSelection()
            self.setTextCursor(shown)
            self.ensureCursorVisible()
            self._update_jump()
        return len(selections)

    # -- copying ---------------------------------------------------------------------------

    def row_at(self, position: int) -> int | None:
        """The model row whose frame holds document ``position``."""
        for row, frame in enumerate(self._frames):
            if frame is not None and frame.firstPosition() <= position <= frame.lastPosition():
                return row
        return None

    def code_at(self, position: int) -> str | None:
        """The whole code block at document ``position`` (its lines joined by newlines)."""
        block = self.document().findBlock(position)
        if not block.blockFormat().boolProperty(CODE_BLOCK):
            return None
        first = last = block
        while first.previous().isValid() and first.previous().blockFormat().boolProperty(
            CODE_BLOCK
        ):
            first = first.previous()
        while last.next().isValid() and last.next().blockFormat().boolProperty(CODE_BLOCK):
            last = last.next()
        lines = []
        block = first
        while block.isValid():
            lines.append(block.text())
            if block == last:
                break
            block = block.next()
        return "\n".join(lines)

    def copy_message(self, row: int) -> None:
        """Row ``row`` to the clipboard: a reply as its markdown, a tool call with its
        arguments and result, anything else as the text shown. Plain text only: mime data
        made here is freed twice when the application exits (PySide6 6.11, measured)."""
        if self._model is None or not 0 <= row < self._model.rowCount():
            return
        item = self._model.item(row)
        if item.kind is Kind.ASSISTANT:
            text = item.text
        elif item.kind is Kind.TOOL:
            text = (
                f"{item.line()}\n\narguments:\n{pretty(item.arguments)}\n\nresult:\n"
                f"{pretty(item.result)}"
            )
        else:
            text = item.line()
        QApplication.clipboard().setText(text)

    @staticmethod
    def copy_text(text: str) -> None:
        QApplication.clipboard().setText(text)

    def _last_row_of(self, kind: Kind) -> int | None:
        if self._model is None:
            return None
        rows = [r for r in range(self._model.rowCount()) if self._model.item(r).kind is kind]
        return rows[-1] if rows else None

    def context_menu_at(self, point: QPoint) -> QMenu:
        """The menu for a right-click at viewport ``point`` (built, not shown: tests read it)."""
        scrolled = QPoint(self.horizontalScrollBar().value(), self.verticalScrollBar().value())
        menu = self.createStandardContextMenu(point + scrolled)  # document coordinates
        position = self.cursorForPosition(point).position()
        code = self.code_at(position)
        row = self.row_at(position)
        extra: list[tuple[str, Any]] = []
        if code is not None:
            extra.append(("Copy code block", lambda: self.copy_text(code)))
        if row is not None:
            extra.append(("Copy message", lambda: self.copy_message(row)))
        if row is not None and self.can_resend:
            if row == self._last_row_of(Kind.ASSISTANT) and self._last_after_user(row):
                extra.append(("Regenerate reply", self.regenerateRequested.emit))
            if row == self._last_row_of(Kind.USER):
                extra.append(("Edit and resend…", self.editLastRequested.emit))
        if extra:
            first = menu.actions()[0] if menu.actions() else None
            for text, slot in extra:
                action = QAction(text, menu)
                action.triggered.connect(slot)
                menu.insertAction(first, action)
            menu.insertSeparator(first)
        return menu

    def _last_after_user(self, row: int) -> bool:
        user = self._last_row_of(Kind.USER)
        return user is not None and user < row

    def contextMenuEvent(self, event: QContextMenuEvent) -> None:
        menu = self.context_menu_at(event.pos())
        menu.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        menu.popup(event.globalPos())


# -- the input box ---------------------------------------------------------------------------


class PromptEdit(QPlainTextEdit):
    """Enter sends, Shift+Enter breaks the line, ↑ in an empty box recalls earlier prompts."""

    submitted = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setPlaceholderText("Message Cairn — Enter to send, Shift+Enter for a new line")
        self.setTabChangesFocus(True)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.history: list[str] = []
        self._recalled: int | None = None  # index into history of the prompt shown
        self.document().contentsChanged.connect(self._fit_height)
        self._fit_height()

    def remember(self, text: str) -> None:
        if text and (not self.history or self.history[-1] != text):
            self.history.append(text)
        self._recalled = None

    def keyPressEvent(self, event: QKeyEvent) -> None:
        key, mods = event.key(), event.modifiers()
        if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            if mods & Qt.KeyboardModifier.ShiftModifier:
                self.insertPlainText("\n")
            else:
                self.submitted.emit(self.toPlainText())
            event.accept()
            return
        if key == Qt.Key.Key_Up and self._may_recall() and self.history:
            index = len(self.history) if self._recalled is None else self._recalled
            self._show_recalled(max(0, index - 1))
            event.accept()
            return
        if key == Qt.Key.Key_Down and self._recalled is not None and self._may_recall():
            following = self._recalled + 1
            if following < len(self.history):
                self._show_recalled(following)
            else:
                self._recalled = None
                self.clear()
            event.accept()
            return
        super().keyPressEvent(event)

    def _may_recall(self) -> bool:
        text = self.toPlainText()
        if not text:
            return True
        # Still showing a recalled prompt, unedited: keep walking through the history.
        return self._recalled is not None and text == self.history[self._recalled]

    def _show_recalled(self, index: int) -> None:
        self._recalled = index
        self.setPlainText(self.history[index])
        self.moveCursor(QTextCursor.MoveOperation.End)

    def _fit_height(self) -> None:
        lines = int(self.document().documentLayout().documentSize().height())
        lines = max(2, min(INPUT_MAX_LINES, lines))
        margins = self.contentsMargins()
        frame = int(self.document().documentMargin() * 2) + margins.top() + margins.bottom()
        self.setFixedHeight(self.fontMetrics().lineSpacing() * lines + frame + 2)

    def resizeEvent(self, event: Any) -> None:
        super().resizeEvent(event)
        self._fit_height()  # wrapping changes with the width


# -- the pane --------------------------------------------------------------------------------


class ChatPane(QWidget):
    """The conversation: a live transcript, or an earlier session shown read-only.

    Signals out: ``messageSubmitted(text)`` for the worker's ``submit`` (a turn or a slash
    command) and ``stopRequested()`` for ``worker.cancel()``. Slots in take the worker's
    signals one for one.
    """

    messageSubmitted = Signal(str)
    stopRequested = Signal()
    # "Continue this conversation" on an earlier session being viewed: its id.
    continueRequested = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = TranscriptModel(self)  # the live conversation
        self.history_model = TranscriptModel(self)  # an earlier session being viewed
        self._busy = False
        self._stopping = False
        self._error_noticed = False
        self._last_sent = ""

        self.banner = QFrame()
        self.banner.setFrameShape(QFrame.Shape.StyledPanel)
        self.banner_label = QLabel()
        self.banner_label.setWordWrap(True)
        self.banner_label.setTextFormat(Qt.TextFormat.PlainText)
        self.back_button = QPushButton("Back to the current chat")
        self.back_button.clicked.connect(self.show_live)
        self.continue_button = QPushButton("Continue this conversation")
        self.continue_button.setToolTip(
            "Go on with it in a new session that carries its messages (the current chat ends)"
        )
        self.continue_button.clicked.connect(self._continue_viewed)
        self._viewed_session = ""
        banner_layout = QHBoxLayout(self.banner)
        banner_layout.setContentsMargins(8, 4, 8, 4)
        banner_layout.addWidget(self.banner_label, 1)
        banner_layout.addWidget(self.continue_button)
        banner_layout.addWidget(self.back_button)
        self.banner.hide()

        self.view = TranscriptView()
        self.view.setModel(self.model)
        self.view.setAccessibleName("Conversation")
        self.view.regenerateRequested.connect(self.regenerate)
        self.view.editLastRequested.connect(self.edit_last)
        self.input = PromptEdit()
        self.input.setAccessibleName("Message")
        self.input.submitted.connect(self._submit)
        self.send_button = QPushButton()
        self.send_button.setIconSize(QSize(16, 16))
        self.send_button.setAutoDefault(False)
        self.send_button.clicked.connect(self._on_send_clicked)
        self.setFocusProxy(self.input)

        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.input, 1)
        row.addWidget(self.send_button, 0, Qt.AlignmentFlag.AlignBottom)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(6)
        layout.addWidget(self.banner)
        layout.addWidget(self.view, 1)
        layout.addLayout(row)
        self._update_controls()

    # -- state -----------------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        """A submitted message is waiting for its reply or command result."""
        return self._busy

    @property
    def viewing_history(self) -> bool:
        return self.view.model() is self.history_model

    def _set_busy(self, busy: bool) -> None:
        self._busy = busy
        self._stopping = False
        self._update_controls()

    def _update_controls(self) -> None:
        color = self.palette().color(self.send_button.foregroundRole())
        if self._busy:
            self.send_button.setText("Stopping…" if self._stopping else "Stop")
            self.send_button.setIcon(themed_icon("stop", color))
            self.send_button.setToolTip("Stop the reply (Esc)")
            self.send_button.setEnabled(not self._stopping)
        else:
            self.send_button.setText("Send")
            self.send_button.setIcon(themed_icon("send", color))
            self.send_button.setToolTip("Send (Enter)")
            self.send_button.setEnabled(not self.viewing_history)
        self.input.setReadOnly(self.viewing_history)
        self.view.can_resend = (
            not self._busy and not self.viewing_history and self.last_user_text() is not None
        )

    # -- user actions ----------------------------------------------------------------------

    def _submit(self, raw: str) -> None:
        text = raw.strip()
        if not text or self._busy or self.viewing_history:
            return
        from engine.commands import RETRY

        if text == RETRY:
            self.input.remember(text)
            self.input.clear()
            self.regenerate()
            return
        self.input.remember(text)
        self.input.clear()
        self._last_sent = text
        self.model.add_user(text)
        self._error_noticed = False
        self._set_busy(True)
        self.messageSubmitted.emit(text)

    def last_user_text(self) -> str | None:
        """The last message the user sent in the live conversation."""
        return next((i.text for i in reversed(self.model.items()) if i.kind is Kind.USER), None)

    @Slot()
    def regenerate(self) -> None:
        """Ask the last message again: its reply leaves the transcript and the model's
        context (``/retry``); the store keeps it, so the session's history still has it."""
        from engine.commands import RETRY

        if self.last_user_text() is None or self._busy or self.viewing_history:
            return
        self.model.end_streaming()
        self.model.drop_after_last_user()
        self._error_noticed = False
        self._set_busy(True)
        self.messageSubmitted.emit(RETRY)

    @Slot()
    def edit_last(self) -> None:
        """Put the last message back in the box to change it; Enter sends it as a new turn."""
        text = self.last_user_text()
        if text is None or self._busy or self.viewing_history:
            return
        self.input.setPlainText(text)
        self.input.selectAll()
        self.input.setFocus()

    def _on_send_clicked(self) -> None:
        if self._busy:
            self._request_stop()
        else:
            self._submit(self.input.toPlainText())

    def _request_stop(self) -> None:
        if not self._busy or self._stopping:
            return
        self._stopping = True
        self._update_controls()
        self.stopRequested.emit()

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:
            self._update_controls()  # the icons are drawn in the text colour

    def keyPressEvent(self, event: QKeyEvent) -> None:
        # Esc reaches here from the input box and the transcript, which both ignore it.
        if event.key() == Qt.Key.Key_Escape and self._busy:
            self._request_stop()
            event.accept()
            return
        super().keyPressEvent(event)

    # -- from the worker -------------------------------------------------------------------

    @Slot(str)
    def on_token(self, text: str) -> None:
        self.model.append_token(text)

    @Slot(str, str, str)
    def on_tool_started(self, call_id: str, name: str, arguments: str) -> None:
        self.model.start_tool(call_id, name, arguments)

    @Slot(str, str, str, bool, object)
    def on_tool_finished(
        self, call_id: str, name: str, summary: str, ok: bool, result: Any
    ) -> None:
        self.model.finish_tool(call_id, name, summary, ok, result)

    @Slot(str, str, str)
    def on_notice(self, kind: str, text: str, detail: str) -> None:
        if kind == "error" and self._busy:
            self._error_noticed = True
        self.model.add_notice(kind, text, detail)

    @Slot(object)
    def on_reply_finished(self, result: dict[str, Any]) -> None:
        self.model.finish_reply(
            str(result.get("reply") or ""), cancelled=bool(result.get("cancelled"))
        )
        error = result.get("error")
        if result.get("error_kind") == "config" and not result.get("reply"):
            # No model (or its key missing): nothing was sent. The message goes back in the
            # box, and the notice points to where a model is chosen, not to the terminal.
            if not self.input.toPlainText().strip() and self._last_sent:
                self.input.setPlainText(self._last_sent)
                self.input.moveCursor(QTextCursor.MoveOperation.End)
            self.model.add_notice("error", NO_MODEL)
        elif error and not self._error_noticed:
            self.model.add_notice("error", str(error))
        self._set_busy(False)

    @Slot(object)
    def on_command_finished(self, result: dict[str, Any]) -> None:
        if result.get("action") == "new_session":
            self.clear()
        self.model.add_command_output(str(result.get("text") or ""), bool(result.get("ok", True)))
        self._set_busy(False)

    @Slot(str)
    def on_failed(self, message: str) -> None:
        """The worker's ``failed``: the turn will not finish, so the box is usable again."""
        self.model.end_streaming()
        self.model.add_notice("error", message)
        self._set_busy(False)

    @Slot(str)
    def set_notifications(self, mode: str) -> None:
        """``display.memory_notifications``: off hides memory notices, on shows one line,
        verbose adds what changed."""
        self.view.set_notifications(mode)

    # -- sessions --------------------------------------------------------------------------

    @Slot(object)
    def show_session(self, result: dict[str, Any], terms: Sequence[str] = ()) -> None:
        """Show an earlier session (a ``session_search`` read result) read-only; ``terms``
        (what a search matched) are highlighted and the first is scrolled to."""
        session = result.get("session") if isinstance(result.get("session"), dict) else result
        self.history_model.load_session(
            {**result, "messages": result.get("messages") or session.get("messages") or []}
        )
        self._viewed_session = str(session.get("session_id") or session.get("id") or "")
        self.continue_button.setVisible(bool(self._viewed_session))
        title = session.get("title") or "an untitled session"
        started = session.get("started_at")
        when = f", {format_time(started)}" if isinstance(started, int | float) else ""
        self.banner_label.setText(f"Viewing “{title}”{when} — read-only")
        self.banner.show()
        self.view.show_empty_state = False
        self.view.setModel(self.history_model)
        found = self.view.highlight(terms)
        if found:
            self.banner_label.setText(
                self.banner_label.text() + f" · {found:,} match{'es' if found != 1 else ''}"
            )
        self._update_controls()

    @Slot()
    def _continue_viewed(self) -> None:
        if self._viewed_session and not self._busy:
            self.continueRequested.emit(self._viewed_session)

    def continue_session(self, transcript: dict[str, Any]) -> None:
        """The conversation in progress is now a stored one continued: show its messages
        (a ``session_search`` read of the new session) as the live transcript."""
        self.model.load_session(transcript)
        self.show_live()
        self.view.scroll_to_bottom()

    @Slot()
    def show_live(self) -> None:
        """Back from an earlier session to the conversation in progress."""
        self.banner.hide()
        self.view.highlight(())
        self.view.show_empty_state = True
        self.view.setModel(self.model)
        self.view._update_empty()
        self._update_controls()
        self.input.setFocus()

    @Slot()
    def clear(self) -> None:
        """A new session: empty transcript, live view."""
        self.model.clear()
        self.show_live()

    def flush(self) -> None:
        """Render pending streamed text now instead of at the next interval."""
        self.view.flush()

    def transcript_text(self) -> str:
        return self.view.toPlainText()


__all__ = ["ChatPane", "PromptEdit", "TranscriptView", "themed_icon"]
