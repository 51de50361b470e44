"""The memory panel: both bounded files with usage, their entries, and edits through the engine.

The panel never writes anything itself. Add, Edit and Delete become ``editRequested(target,
operations)`` — the same operations the model's memory tool takes — and the engine's answer
comes back through :meth:`MemoryPanel.show_edit_result`. An edit the engine refuses (over the
limit, blocked by the scanner, the entry changed meanwhile) leaves the editor open with the
user's text and the engine's reason, so nothing typed is lost.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any

from PySide6.QtCore import (
    QEvent,
    QItemSelection,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    QRect,
    QSize,
    Qt,
    QTimer,
    Signal,
    Slot,
)
from PySide6.QtGui import (
    QColor,
    QFont,
    QKeyEvent,
    QPalette,
    QTextBlockFormat,
    QTextCharFormat,
    QTextCursor,
)
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QDialog,
    QDialogButtonBox,
    QFrame,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QListView,
    QMessageBox,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QSizePolicy,
    QSplitter,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QTextEdit,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.models.memory_model import MemoryEntryModel
from app.models.pending_model import is_settle_result
from app.views.refusals import refusal_text
from engine.memory.entries import CONSOLIDATE_AT, DELIMITER, Target
from engine.pending_preview import usage_text

ADDED = QColor("#1b7f3b")
ADDED_BG = QColor("#e6f4ea")
REMOVED = QColor("#b3261e")
REMOVED_BG = QColor("#fce8e6")
WARNING = QColor("#b26a00")
# The same meanings on a dark background: the light ones are too dark to read there, and
# pastel backgrounds glare.
DARK_VARIANTS = {
    ADDED.rgb(): QColor("#81c995"),
    ADDED_BG.rgb(): QColor("#1f3a29"),
    REMOVED.rgb(): QColor("#f28b82"),
    REMOVED_BG.rgb(): QColor("#4a2422"),
    WARNING.rgb(): QColor("#fdd663"),
}
RESULT_MS = 10_000  # how long an edit's outcome stays under the list
MINUS = "\u2212"  # a real minus sign: a hyphen reads as a bullet point

# The diff of entries and the usage line are the engine's (the pending preview builds them
# too); a "#" line is a heading, drawn only here.
DiffLine = tuple[str, str]  # (sign, text): "+", "-", " " for entries; "#" heading; "!" note


def is_dark_palette(palette: QPalette | None = None) -> bool:
    palette = palette if palette is not None else QApplication.palette()
    return (
        palette.color(QPalette.ColorRole.WindowText).lightness()
        > palette.color(QPalette.ColorRole.Window).lightness()
    )


def shade(color: QColor, palette: QPalette | None = None) -> QColor:
    """``color`` (one of the status colours above) as it should look on the palette."""
    if is_dark_palette(palette):
        return DARK_VARIANTS.get(color.rgb(), color)
    return color


def _set_text_color(widget: QWidget, color: QColor | None) -> None:
    # An empty palette resolves nothing, so the widget goes back to inheriting its colours.
    palette = QPalette()
    if color is not None:
        palette.setColor(QPalette.ColorRole.WindowText, shade(color))
    widget.setPalette(palette)


class DiffView(QTextEdit):
    """Read-only, coloured entry diff: added green with ``+``, removed red with ``−``."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setReadOnly(True)
        self.setLineWrapMode(QTextEdit.LineWrapMode.WidgetWidth)
        self.lines: list[DiffLine] = []

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange and self.lines:
            self.show_diff(self.lines)  # the colours follow the scheme

    def show_diff(self, lines: Sequence[DiffLine]) -> None:
        self.lines = list(lines)
        palette = self.palette()
        self.clear()
        cursor = QTextCursor(self.document())
        first = True
        for sign, text in self.lines:
            fmt = QTextCharFormat()
            block = QTextBlockFormat()
            if sign == "#":
                fmt.setFontWeight(QFont.Weight.Bold)
                body = [text]
                gap = 10
            elif sign == "!":
                fmt.setFontItalic(True)
                fmt.setForeground(shade(WARNING, palette))
                body = [text]
                gap = 4
            else:
                shown = {"+": "+", "-": MINUS}.get(sign, " ")
                parts = text.split("\n")
                # Continuation lines are indented under the sign so one entry reads as one unit.
                body = [f"{shown} {parts[0]}"] + [f"  {part}" for part in parts[1:]]
                gap = 4
                if sign in ("+", "-"):
                    fmt.setForeground(shade(ADDED if sign == "+" else REMOVED, palette))
                    block.setBackground(shade(ADDED_BG if sign == "+" else REMOVED_BG, palette))
            for number, line in enumerate(body):
                # Space between entries, none inside one: a multi-line entry stays one unit.
                spaced = QTextBlockFormat(block)
                spaced.setTopMargin(gap if number == 0 and not first else 0)
                if first:
                    cursor.setBlockFormat(spaced)
                    cursor.insertText(line, fmt)
                else:
                    cursor.insertBlock(spaced, fmt)
                    cursor.insertText(line, fmt)
                first = False
        self.moveCursor(QTextCursor.MoveOperation.Start)


class SnapshotDiffDialog(QDialog):
    """What changed on disk since the session started, and a way to take it in now."""

    newSessionRequested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Memory changes since this session started")
        self.resize(560, 380)
        self.intro = QLabel(
            "These changes are on disk; the running session still sees memory as it was when "
            "it started. They take effect next session."
        )
        self.intro.setWordWrap(True)
        self.view = DiffView()
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.new_session_button = buttons.addButton(
            "Start a new session", QDialogButtonBox.ButtonRole.ActionRole
        )
        self.new_session_button.setToolTip(
            "End this conversation (it stays in the session list) and start one that sees "
            "memory as it is now"
        )
        self.new_session_button.clicked.connect(self._new_session)
        buttons.rejected.connect(self.close)
        layout = QVBoxLayout(self)
        layout.addWidget(self.intro)
        layout.addWidget(self.view)
        layout.addWidget(buttons)

    def _new_session(self) -> None:
        self.newSessionRequested.emit()
        self.close()

    def show_snapshot(self, diff: dict[str, dict[str, list[str]]]) -> None:
        lines: list[DiffLine] = []
        for target in Target:
            part = diff.get(target.value) or {}
            added, removed = part.get("added") or [], part.get("removed") or []
            if not added and not removed:
                continue
            lines.append(("#", target.filename))
            lines += [("-", entry) for entry in removed]
            lines += [("+", entry) for entry in added]
        self.view.show_diff(lines or [("!", "No changes since this session started.")])
        self.new_session_button.setEnabled(bool(lines))


class SnapshotBanner(QFrame):
    """Says how far the files on disk have moved from the running session's frozen prompt."""

    diffRequested = Signal()

    # (background, border, text) on a light and on a dark palette.
    LIGHT = ("#fff4ce", "#e0c56e", "#5c4400")
    DARK = ("#3d3113", "#7a6221", "#f3dc94")

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("snapshotBanner")
        self.restyle()
        self.label = QLabel()
        self.label.setWordWrap(True)
        # The dock's width must not follow the banner's text as it comes and goes.
        self.label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Maximum)
        self.diff_button = QPushButton("Show diff")
        self.diff_button.clicked.connect(self.diffRequested)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 4, 8, 4)
        layout.addWidget(self.label, 1)
        layout.addWidget(self.diff_button)
        self.count = 0
        self.hide()

    def restyle(self) -> None:
        palette = QApplication.palette()
        dark = (
            palette.color(QPalette.ColorRole.WindowText).lightness()
            > palette.color(QPalette.ColorRole.Window).lightness()
        )
        background, border, text = self.DARK if dark else self.LIGHT
        sheet = (
            f"QFrame#snapshotBanner {{ background: {background}; border: 1px solid {border};"
            f" border-radius: 4px; }} QFrame#snapshotBanner QLabel {{ color: {text}; }}"
        )
        # Only when it differs: setting a style sheet can itself send a palette change.
        if sheet != self.styleSheet():
            self.setStyleSheet(sheet)

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() in (QEvent.Type.PaletteChange, QEvent.Type.ApplicationPaletteChange):
            self.restyle()  # the scheme changed: a pale banner on a dark window glares

    def show_count(self, count: int) -> None:
        self.count = count
        if count == 1:
            text = "1 change on disk since this session started; it takes effect next session"
        else:
            text = (
                f"{count:,} changes on disk since this session started; "
                "they take effect next session"
            )
        self.label.setText(text)
        self.setVisible(count > 0)


class EntryDelegate(QStyledItemDelegate):
    """Measures an entry at the width its row is painted with.

    QListView sometimes asks for a row's size at the viewport's full width but paints the row
    inside its spacing; an entry that just fits the former then gets one line too few and is
    painted cut short with "…".
    """

    def sizeHint(
        self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex
    ) -> QSize:
        view = self.parent()
        if not isinstance(view, QListView) or option.rect.width() <= 0:
            return super().sizeHint(option, index)
        painted = view.viewport().width() - 2 * view.spacing()
        narrowed = QStyleOptionViewItem(option)
        rect = QRect(option.rect)
        rect.setWidth(min(rect.width(), painted))
        narrowed.rect = rect
        return super().sizeHint(narrowed, index)


class EntryListView(QListView):
    """The entries; Ins, Enter and Del map to add, edit and delete."""

    addKeyPressed = Signal()
    editKeyPressed = Signal()
    deleteKeyPressed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWordWrap(True)
        self.setAlternatingRowColors(True)
        self.setUniformItemSizes(False)
        self.setSpacing(2)
        self.setItemDelegate(EntryDelegate(self))
        self.setResizeMode(QListView.ResizeMode.Adjust)
        self.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        key = event.key()
        if key == Qt.Key.Key_Insert:
            self.addKeyPressed.emit()
        elif key in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            self.editKeyPressed.emit()
        elif key == Qt.Key.Key_Delete:
            self.deleteKeyPressed.emit()
        else:
            super().keyPressEvent(event)
            return
        event.accept()


class EntryEditor(QDialog):
    """Add or edit one entry. Stays open while the engine decides, and after a refusal."""

    submitted = Signal(str)

    def __init__(
        self,
        target: Target,
        state: dict[str, Any],
        old_text: str | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.target = target
        self.old_text = old_text
        self._state = state
        self.waiting = False
        self.blocked = False  # over the cap and growing: Save is off
        verb = "Edit entry in" if old_text is not None else "Add entry to"
        self.setWindowTitle(f"{verb} {target.filename}")
        self.resize(520, 300)
        self.editor = QPlainTextEdit()
        self.editor.setPlainText(old_text or "")
        self.editor.textChanged.connect(self._update)
        self.count = QLabel()
        self.status = QLabel()
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.status.hide()
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel
        )
        self.save_button = self.buttons.button(QDialogButtonBox.StandardButton.Save)
        self.buttons.accepted.connect(self._save)
        self.buttons.rejected.connect(self.reject)
        self.save_button.setToolTip("Save (Ctrl+Enter)")
        # Ctrl+Enter saves: caught before the text box, which would take it as a new line.
        self.editor.installEventFilter(self)
        layout = QVBoxLayout(self)
        layout.addWidget(self.editor)
        layout.addWidget(self.count)
        layout.addWidget(self.status)
        layout.addWidget(self.buttons)
        self._update()

    def text(self) -> str:
        return self.editor.toPlainText()

    def set_state(self, state: dict[str, Any]) -> None:
        """The file changed while the editor is open: keep the projected usage honest."""
        self._state = state
        self._update()

    def _projected(self, text: str) -> int | None:
        chars, entries = self._state.get("chars"), self._state.get("items") or []
        if chars is None:
            return None
        if self.old_text is not None:
            return chars - len(self.old_text) + len(text)
        return chars + (len(DELIMITER) if entries else 0) + len(text)

    def _update(self) -> None:
        text = self.text().strip()
        line = f"{len(text):,} chars"
        projected, limit = self._projected(text), self._state.get("limit")
        if projected is not None and limit:
            line += f" — {self.target.filename} would be " + usage_text(
                projected, limit, projected * 100 // limit
            )
        over = projected is not None and bool(limit) and projected > limit
        # Over the cap the engine takes only an edit that does not grow the file; saving
        # anything else would only be refused.
        chars = self._state.get("chars")
        grows = projected is not None and chars is not None and projected > chars
        self.blocked = over and grows
        if self.blocked:
            line += " — over the limit: shorten it to save"
        self.count.setText(line)
        _set_text_color(self.count, REMOVED if over else None)
        self.save_button.setEnabled(bool(text) and not self.waiting and not self.blocked)
        self.save_button.setToolTip(
            f"{self.target.filename} has no room for this; shorten it, or merge or delete "
            "other entries first"
            if self.blocked
            else "Save (Ctrl+Enter)"
        )

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if (
            watched is self.editor
            and event.type() == QEvent.Type.KeyPress
            and isinstance(event, QKeyEvent)
            and event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter)
            and event.modifiers() & Qt.KeyboardModifier.ControlModifier
        ):
            if self.save_button.isEnabled():
                self._save()
            return True
        return super().eventFilter(watched, event)

    def _save(self) -> None:
        text = self.text().strip()
        if not text:
            return
        if self.old_text is not None and text == self.old_text.strip():
            self.accept()  # nothing changed: no write, no history event
            return
        self.waiting = True
        self.editor.setReadOnly(True)
        self.show_status("Saving…", None)
        self._update()
        self.submitted.emit(text)

    def show_status(self, message: str, color: QColor | None) -> None:
        self.status.setText(message)
        _set_text_color(self.status, color)
        self.status.show()

    def refused(self, message: str) -> None:
        """The engine said no: keep the text, say why, let the user fix it and retry."""
        self.waiting = False
        self.editor.setReadOnly(False)
        self.show_status(message, REMOVED)
        self._update()
        self.editor.setFocus()


class MemoryTargetBox(QGroupBox):
    """One file: usage bar, budget notice, entries, edit buttons and the last edit's outcome."""

    editSubmitted = Signal(object, object)  # operations, the EntryEditor waiting or None
    entrySelected = Signal(int)

    def __init__(self, target: Target, parent: QWidget | None = None) -> None:
        super().__init__(target.heading, parent)
        self.target = target
        self.state: dict[str, Any] = {}
        self.model = MemoryEntryModel(target.value, self)
        self.bar = QProgressBar()
        self.bar.setRange(0, 100)
        self.bar.setFormat("loading…")
        # The figures go in a label beside the bar, not on it: text drawn over a coloured
        # chunk is white on one half and dark on the other, unreadable where they meet.
        self.bar.setTextVisible(False)
        self.bar.setMaximumHeight(10)
        self.usage = QLabel("loading…")
        self.usage.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.notice = QLabel()
        self.notice.setWordWrap(True)
        self.notice.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.notice.hide()
        self.entries = EntryListView()
        self.entries.setModel(self.model)
        self.entries.addKeyPressed.connect(self.add_entry)
        self.entries.editKeyPressed.connect(self.edit_entry)
        self.entries.deleteKeyPressed.connect(self.delete_entry)
        self.entries.doubleClicked.connect(self.edit_entry)
        self.entries.selectionModel().selectionChanged.connect(self._on_selection)
        self.add_button = QPushButton("Add…")
        self.add_button.setToolTip("Add an entry (Ins)")
        self.edit_button = QPushButton("Edit…")
        self.edit_button.setToolTip("Edit the selected entry (Enter)")
        self.delete_button = QPushButton("Delete")
        self.delete_button.setToolTip("Delete the selected entry (Del)")
        self.add_button.clicked.connect(self.add_entry)
        self.edit_button.clicked.connect(self.edit_entry)
        self.delete_button.clicked.connect(self.delete_entry)
        self.result = QLabel()
        self.result.setWordWrap(True)
        self.result.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.result.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.result.hide()
        # An outcome is news for a while, not forever: a "Saved" from an hour ago misleads.
        self.result_timer = QTimer(self)
        self.result_timer.setSingleShot(True)
        self.result_timer.timeout.connect(self.result.hide)
        self._relaying = True  # False while the engine's new rows move the list's selection
        buttons = QHBoxLayout()
        buttons.addWidget(self.add_button)
        buttons.addWidget(self.edit_button)
        buttons.addWidget(self.delete_button)
        buttons.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addWidget(self.usage)
        layout.addWidget(self.bar)
        layout.addWidget(self.notice)
        layout.addWidget(self.entries, 1)
        layout.addLayout(buttons)
        layout.addWidget(self.result)
        self.editor: EntryEditor | None = None
        self.confirm: QMessageBox | None = None
        self._update_buttons()

    # -- state from the engine -------------------------------------------------------------

    def show_state(self, state: dict[str, Any]) -> None:
        self.state = state
        row = self.selected_row()
        selected = QPersistentModelIndex(self.model.index(row, 0)) if row >= 0 else None
        # A removed row hands the list's selection to its neighbour; that move is Qt's, not
        # the user's, so it is neither relayed nor kept (a second Del would hit the neighbour).
        # An entry changed in place keeps its row, and stays selected.
        self._relaying = False
        try:
            self.model.set_entries(state.get("items") or [])
            if selected is not None and not selected.isValid():
                self.entries.selectionModel().clear()
        finally:
            self._relaying = True
        self._update_buttons()
        if self.editor is not None:
            self.editor.set_state(state)
        error = state.get("error")
        if error:
            self.bar.setValue(0)
            self.bar.setFormat("unreadable")
            self.usage.setText("unreadable")
            self._color_bar(None)
            self._show_notice(error, REMOVED)
        else:
            chars, limit, percent = state["chars"], state["limit"], state["percent"]
            self.bar.setValue(max(0, min(100, percent)))
            self.bar.setFormat(usage_text(chars, limit, percent))
            self.usage.setText(usage_text(chars, limit, percent))
            if chars > limit:
                self._color_bar(REMOVED)
                self._show_notice(
                    "Over budget: only edits that shrink this file are accepted. "
                    "Merge or remove entries.",
                    REMOVED,
                )
            elif chars > limit * CONSOLIDATE_AT:
                self._color_bar(WARNING)
                self._show_notice(
                    "Above 80%: consolidate (merge or remove entries) before adding more.",
                    WARNING,
                )
            else:
                self._color_bar(None)
                self.notice.hide()
        self._update_buttons()

    def usage_text(self) -> str:
        return self.bar.format()

    def show_message(self, message: str, color: QColor | None) -> None:
        """An outcome under the list, gone after :data:`RESULT_MS`."""
        self.result.setText(message)
        _set_text_color(self.result, color)
        self.result.show()
        self.result_timer.start(RESULT_MS)

    def _show_notice(self, text: str, color: QColor) -> None:
        self.notice.setText(text)
        _set_text_color(self.notice, color)
        self.notice.show()

    def _color_bar(self, color: QColor | None) -> None:
        palette = QPalette()
        if color is not None:
            palette.setColor(QPalette.ColorRole.Highlight, color)
        self.bar.setPalette(palette)

    def _update_buttons(self) -> None:
        writable = not self.state.get("error") and bool(self.state)
        selected = self.selected_row() >= 0
        self.add_button.setEnabled(writable)
        self.edit_button.setEnabled(writable and selected)
        self.delete_button.setEnabled(writable and selected)

    # -- selection -------------------------------------------------------------------------

    def selected_row(self) -> int:
        rows = self.entries.selectionModel().selectedRows()
        return rows[0].row() if rows else -1

    def select_row(self, row: int) -> None:
        index = self.model.index(row, 0)
        self.entries.setCurrentIndex(index)

    def _on_selection(self, _selected: QItemSelection, _deselected: QItemSelection) -> None:
        self._update_buttons()
        if self._relaying:
            self.entrySelected.emit(self.selected_row())

    # -- edits -----------------------------------------------------------------------------

    @Slot()
    def add_entry(self) -> None:
        if self.add_button.isEnabled():
            self._open_editor(None)

    @Slot()
    def edit_entry(self) -> None:
        entry = self.model.entry(self.selected_row())
        if entry is not None and self.edit_button.isEnabled():
            self._open_editor(entry)

    @Slot()
    def delete_entry(self) -> None:
        entry = self.model.entry(self.selected_row())
        if entry is None or not self.delete_button.isEnabled():
            return
        # Loaded with pydantic, which the window does not wait for at start.
        from engine.memory.operations import preview

        self.confirm = QMessageBox(
            QMessageBox.Icon.Question,
            "Delete entry",
            f"Delete this entry from {self.target.filename}?\n\n{preview(entry, 200)}",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel,
            self,
        )
        self.confirm.setDefaultButton(QMessageBox.StandardButton.Cancel)
        box = self.confirm

        def decided(answer: int) -> None:
            if answer == QMessageBox.StandardButton.Yes:
                self.editSubmitted.emit([{"action": "remove", "old_text": entry}], None)
            box.deleteLater()
            if self.confirm is box:
                self.confirm = None

        box.finished.connect(decided)
        box.open()

    def _open_editor(self, old_text: str | None) -> None:
        if self.editor is not None and self.editor.isVisible():
            self.editor.raise_()
            return
        # Not modal: the user may want to read the chat or the other file while writing.
        editor = EntryEditor(self.target, self.state, old_text, self)

        def submit(text: str) -> None:
            if old_text is None:
                operations = [{"action": "add", "content": text}]
            else:
                operations = [{"action": "replace", "old_text": old_text, "content": text}]
            self.editSubmitted.emit(operations, editor)

        editor.submitted.connect(submit)
        editor.finished.connect(lambda _code: self._editor_closed(editor))
        self.editor = editor
        editor.show()

    def _editor_closed(self, editor: EntryEditor) -> None:
        if self.editor is editor:
            self.editor = None
        if not editor.waiting:
            editor.deleteLater()

    def show_result(self, result: dict[str, Any], editor: EntryEditor | None) -> None:
        """The engine's answer to this box's request; ``editor`` is the dialog that sent it."""
        message = str(result.get("message") or result.get("error") or "")
        open_editor = editor if editor is not None and editor.isVisible() else None
        if result.get("ok"):
            staged = result.get("status") == "staged"
            color = WARNING if staged else ADDED
            if staged and not message.startswith("Staged for approval"):
                message = "Staged for approval — " + message
            if open_editor is not None:
                open_editor.waiting = False
                open_editor.accept()
        else:
            color = REMOVED
            message = refusal_text(result, self.target.filename)
            if open_editor is not None:
                open_editor.refused(message)
        self.show_message(message, color)
        if editor is not None and not editor.isVisible():
            editor.waiting = False
            editor.deleteLater()


class MemoryPanel(QWidget):
    """MEMORY and USER side by side with the snapshot banner above them."""

    editRequested = Signal(str, object)  # target, operations (memory tool format)
    entrySelected = Signal(str, int)  # target, row (-1 when nothing is selected)
    newSessionRequested = Signal()  # from the snapshot diff: take the new memory in now
    undoRequested = Signal()  # undo the newest memory change not undone yet (Ctrl+Z)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.banner = SnapshotBanner()
        self.banner.diffRequested.connect(self.show_snapshot_diff)
        # Undo walks back through the change history, one change per press.
        self.undo_button = QToolButton()
        self.undo_button.setText("Undo")
        self.undo_button.setToolTip("Undo the last memory change (Ctrl+Z); again to go further")
        self.undo_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.undo_button.clicked.connect(self.request_undo)
        self.undo_status = QLabel()
        self.undo_status.setWordWrap(True)
        self.undo_status.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.undo_status.hide()
        self._undo_timer = QTimer(self)
        self._undo_timer.setSingleShot(True)
        self._undo_timer.timeout.connect(self.undo_status.hide)
        self._undoing = False
        self._draw_undo_icon()
        self.boxes = {target.value: MemoryTargetBox(target) for target in Target}
        self._outstanding: deque[tuple[MemoryTargetBox, EntryEditor | None]] = deque()
        self._snapshot_diff: dict[str, dict[str, list[str]]] = {}
        self.diff_dialog: SnapshotDiffDialog | None = None
        self._syncing = False
        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.setChildrenCollapsible(False)
        for key, box in self.boxes.items():
            box.editSubmitted.connect(lambda ops, editor, box=box: self._submit(box, ops, editor))
            box.entrySelected.connect(lambda row, key=key: self._relay_selection(key, row))
            splitter.addWidget(box)
        # Room in proportion to the files' caps (2,200 and 1,375 chars by default): MEMORY
        # holds more entries, and an even split left it scrolling beside an empty USER list.
        splitter.setStretchFactor(0, 8)
        splitter.setStretchFactor(1, 5)
        undo_row = QHBoxLayout()
        undo_row.addWidget(self.undo_status, 1)
        undo_row.addWidget(self.undo_button, 0, Qt.AlignmentFlag.AlignTop)
        layout = QVBoxLayout(self)
        layout.addWidget(self.banner)
        layout.addWidget(splitter, 1)
        layout.addLayout(undo_row)

    PREFERRED_WIDTH = 320

    def sizeHint(self) -> QSize:
        # A width of its own, not its texts': the dock must not widen when the banner or a
        # long outcome appears (the main window sizes docks from their hints).
        return QSize(
            max(self.PREFERRED_WIDTH, self.minimumSizeHint().width()), super().sizeHint().height()
        )

    def _draw_undo_icon(self) -> None:
        from app.views.chat_pane import themed_icon

        color = self.palette().color(QPalette.ColorRole.ButtonText)
        self.undo_button.setIcon(themed_icon("undo", color))

    @Slot()
    def request_undo(self) -> None:
        """Ask for the newest change to be undone; one request at a time."""
        if self._undoing:
            return
        self._undoing = True
        self.undo_button.setEnabled(False)
        self.undoRequested.emit()

    @Slot(object)
    def show_undo_result(self, result: object) -> None:
        """The engine's answer to :meth:`request_undo`."""
        self._undoing = False
        self.undo_button.setEnabled(True)
        answer = result if isinstance(result, dict) else {}
        if answer.get("ok"):
            message = str(answer.get("message") or "Undone.")
            color: QColor | None = ADDED
        elif answer.get("error") == "not_found":
            message, color = "Nothing left to undo.", None
        elif answer.get("error") == "conflict":
            message = "That change cannot be undone: the entry has changed since. Edit it instead."
            color = REMOVED
        else:
            message, color = refusal_text(answer), REMOVED
        self.undo_status.setText(message)
        _set_text_color(self.undo_status, color)
        self.undo_status.show()
        self._undo_timer.start(RESULT_MS)

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        # The banner's style sheet keeps it from hearing of a new application palette once it
        # sits inside a window (measured: no event reaches it), so it is told from here.
        if event.type() in (QEvent.Type.PaletteChange, QEvent.Type.ApplicationPaletteChange):
            self.banner.restyle()
            self._draw_undo_icon()

    def _relay_selection(self, target: str, row: int) -> None:
        if not self._syncing:
            self.entrySelected.emit(target, row)

    @Slot(str, int)
    def select_entry(self, target: str, row: int) -> None:
        """Select ``row`` of ``target`` because the shared selection moved (in the journey);
        the other file's selection is cleared, and nothing is echoed back."""
        self._syncing = True
        try:
            for key, box in self.boxes.items():
                if key == target and row >= 0:
                    box.select_row(row)
                else:
                    box.entries.clearSelection()
        finally:
            self._syncing = False

    def _submit(
        self, box: MemoryTargetBox, operations: list[dict[str, Any]], editor: EntryEditor | None
    ) -> None:
        # The worker answers requests in the order they were sent, so a FIFO pairs each
        # answer with the box (and editor) that asked.
        self._outstanding.append((box, editor))
        self.editRequested.emit(box.target.value, operations)

    @Slot(object)
    def show_edit_result(self, result: object) -> bool:
        """Show the engine's answer to the oldest outstanding edit; True when it was one.

        Connect to ``EngineWorker.memoryEdited``; approve/reject answers are left to the
        pending dialog.
        """
        if not isinstance(result, dict) or is_settle_result(result) or not self._outstanding:
            return False
        box, editor = self._outstanding.popleft()
        box.show_result(result, editor)
        return True

    @Slot(object)
    def apply_changes(self, changes: Any) -> None:
        """Take a worker ChangeSet; only the parts it carries (memory, snapshot) are touched."""
        memory = getattr(changes, "memory", None)
        if memory is not None:
            for key, box in self.boxes.items():
                box.show_state(memory.get(key) or {"error": "not reported", "items": []})
        snapshot = getattr(changes, "snapshot", None)
        if snapshot is not None:
            self._snapshot_diff = snapshot.get("diff") or {}
            self.banner.show_count(int(snapshot.get("changes") or 0))
            for key, box in self.boxes.items():
                box.model.set_unseen((self._snapshot_diff.get(key) or {}).get("added") or [])
            if self.diff_dialog is not None:
                self.diff_dialog.show_snapshot(self._snapshot_diff)

    @Slot()
    def show_snapshot_diff(self) -> None:
        if self.diff_dialog is None:
            self.diff_dialog = SnapshotDiffDialog(self)
            self.diff_dialog.newSessionRequested.connect(self.newSessionRequested)
        self.diff_dialog.show_snapshot(self._snapshot_diff)
        if self.diff_dialog.isVisible():
            self.diff_dialog.raise_()  # already open, perhaps behind the main window
        else:
            self.diff_dialog.show()
