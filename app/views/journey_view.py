"""The journey view: the radial graph over the timeline, with filters, edits of any chunk and
a view of any skill or fact.

Nothing here reads or writes memory. The view asks for journey data with
``reloadRequested`` (the worker answers with :meth:`JourneyView.set_bundle`) and sends edits
and deletes as versioned node ids (``editRequested(id, text)``, ``deleteRequested(id)``); the
engine refuses an id whose entry changed meanwhile, and the view then reloads. Skills and
facts are shown read-only (:class:`ItemViewer`), from the text the journey loaded.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from PySide6.QtCore import QItemSelection, Qt, Signal, Slot
from PySide6.QtGui import QFontDatabase, QShowEvent, QStandardItem, QStandardItemModel
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPlainTextEdit,
    QSizePolicy,
    QSplitter,
    QToolButton,
    QTreeView,
    QVBoxLayout,
    QWidget,
)

from app.models.journey_model import ACTION_LABELS, JourneyBundle, JourneySelection, when
from app.views.journey_timeline import JourneyTimeline
from app.views.memory_panel import ADDED, REMOVED, WARNING, EntryEditor, _set_text_color
from app.views.radial_graph import RadialGraph
from engine.journey import Chunk, Item
from engine.memory.entries import Target
from engine.memory.operations import preview


def item_details(item: Item) -> list[str]:
    """The lines above a skill's or fact's text in :class:`ItemViewer`."""
    lines = [item.node_id or ("skill " + item.subject if item.layer == "skill" else "fact")]
    if item.layer == "skill":
        if item.title:
            lines.append(item.title)
        facts = [f"trust: {item.trust_level}"] if item.trust_level else []
        if item.uses is not None:
            facts.append(f"used {item.uses} time{'s' if item.uses != 1 else ''}")
        if item.files:
            facts.append(
                f"files: {', '.join(item.files[:8])}" + (" …" if len(item.files) > 8 else "")
            )
        if facts:
            lines.append(" · ".join(facts))
    else:
        facts = [f"trust {item.trust:.2f}"] if item.trust is not None else []
        if item.uses is not None:
            facts.append(f"retrieved {item.uses} time{'s' if item.uses != 1 else ''}")
        if item.entities:
            facts.append("about " + ", ".join(item.entities))
        if item.tags:
            facts.append("tags " + ", ".join(item.tags))
        if facts:
            lines.append(" · ".join(facts))
    times = [f"learned {when(item.learned_at)}"]
    if item.changed_at and item.changed_at != item.learned_at:
        times.append(f"changed {when(item.changed_at)}")
    if item.removed_at is not None:
        times.append(f"removed {when(item.removed_at)} (its last text is shown)")
    lines.append(" · ".join(times))
    return lines


class ItemViewer(QDialog):
    """A skill's SKILL.md or a fact's text, read-only, with what the journey knows of it."""

    def __init__(self, item: Item, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.key = item.key
        what = f"Skill {item.subject}" if item.layer == "skill" else f"Fact #{item.subject}"
        self.setWindowTitle(what)
        self.details = QLabel("\n".join(item_details(item)))
        self.details.setWordWrap(True)
        self.details.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.text = QPlainTextEdit(item.text)
        self.text.setReadOnly(True)
        if item.layer == "skill":
            self.text.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.details)
        layout.addWidget(self.text, 1)
        layout.addWidget(buttons)
        self.resize(640, 520 if item.layer == "skill" else 260)


def chunk_title(chunk: Chunk) -> str:
    """A chunk as a person names it: its file and its first words, not its versioned id."""
    first = chunk.text.split("\n", 1)[0]
    words = first if len(first) <= 48 else first[:47].rstrip() + "…"
    return f"{chunk.target.filename} — “{words}”"


class ChunkViewer(QDialog):
    """One chunk as ``cairn journey show`` prints it: its text, when it was learned and
    changed, every session that touched it, every version (select one to read it whole) and
    the chunks it shares terms with. Read-only; ``editRequested`` asks for the editor."""

    editRequested = Signal(str)  # chunk key

    def __init__(self, chunk: Chunk, journey: Any, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.key = chunk.key
        self.chunk = chunk
        self.setWindowTitle(f"Chunk in {chunk.target.filename}")
        sessions = {s.id: s for s in journey.sessions}
        state = (
            f"entry {chunk.index + 1} of {chunk.target.filename} now"
            if chunk.alive and chunk.index is not None
            else f"removed {when(chunk.removed_at)} — its last text is shown"
        )
        learned = f"learned {when(chunk.learned_at)}" + (
            f" ({chunk.origin})" if chunk.origin else ""
        )
        lines = [chunk.node_id or chunk.key, f"{state} · {learned}"]
        if chunk.changed_at and chunk.changed_at != chunk.learned_at:
            lines[-1] += f" · changed {when(chunk.changed_at)}"
        self.details = QLabel("\n".join(lines))
        self.details.setWordWrap(True)
        self.details.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        self.sessions = QStandardItemModel(0, 3, self)
        self.sessions.setHorizontalHeaderLabels(["Session", "Started", "Role"])
        for sid in chunk.session_ids:
            node = sessions.get(sid)
            title = node.title if node is not None and node.title else f"session {sid[:8]}"
            role = "learned it" if sid == chunk.session_id else "changed it"
            started = when(node.started_at) if node is not None and node.started_at else "—"
            row = [QStandardItem(title), QStandardItem(started), QStandardItem(role)]
            row[0].setToolTip(sid)
            self.sessions.appendRow(row)
        self.session_view = self._table(self.sessions)
        # The title takes the room left; no sideways scrolling in a table of a few rows.
        header = self.session_view.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        for column in (1, 2):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
        self.session_view.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.session_view.setMaximumHeight(
            self.session_view.sizeHintForRow(0) * min(4, max(1, len(chunk.session_ids))) + 30
        )

        self.versions = QStandardItemModel(0, 4, self)
        self.versions.setHorizontalHeaderLabels(["When", "Event", "Change", "Text"])
        for version in chunk.versions:
            event = f"#{version.event_id}" if version.event_id else "unrecorded"
            action = ACTION_LABELS.get(version.action, version.action)
            first = version.text.split("\n", 1)[0]
            row = [
                QStandardItem(when(version.at)),
                QStandardItem(event),
                QStandardItem(action),
                QStandardItem(first),
            ]
            row[3].setToolTip(version.text)
            self.versions.appendRow(row)
        self.version_view = self._table(self.versions)
        self.version_view.selectionModel().selectionChanged.connect(self._on_version)
        self.text = QPlainTextEdit(chunk.text)
        self.text.setReadOnly(True)
        related = [
            other
            for edge in journey.edges
            if edge.kind == "terms" and chunk.key in (edge.source, edge.target)
            for other in [journey.chunk(edge.target if edge.source == chunk.key else edge.source)]
            if other is not None
        ]
        self.related = QLabel(
            "Shares terms with: " + "; ".join(chunk_title(o) for o in related[:6])
            if related
            else ""
        )
        self.related.setWordWrap(True)
        self.related.setVisible(bool(related))

        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.edit_button = self.buttons.addButton("Edit…", QDialogButtonBox.ButtonRole.ActionRole)
        self.edit_button.setEnabled(chunk.alive and chunk.node_id is not None)
        self.edit_button.clicked.connect(lambda: self.editRequested.emit(self.key))
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.details)
        layout.addWidget(
            QLabel(f"{len(chunk.versions)} version{'s' if len(chunk.versions) != 1 else ''}")
        )
        layout.addWidget(self.version_view, 1)
        layout.addWidget(self.text, 2)
        self.sessions_title = QLabel(
            "Sessions" if chunk.session_ids else "No session recorded: written outside a chat"
        )
        layout.addWidget(self.sessions_title)
        layout.addWidget(self.session_view)
        self.session_view.setVisible(bool(chunk.session_ids))
        layout.addWidget(self.related)
        layout.addWidget(self.buttons)
        self.resize(680, 560)
        if self.versions.rowCount():
            self.version_view.setCurrentIndex(self.versions.index(self.versions.rowCount() - 1, 0))

    @staticmethod
    def _table(model: QStandardItemModel) -> QTreeView:
        view = QTreeView()
        view.setModel(model)
        view.setRootIsDecorated(False)
        view.setUniformRowHeights(True)
        view.setAlternatingRowColors(True)
        view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        view.header().setStretchLastSection(True)
        for column in range(model.columnCount() - 1):
            view.resizeColumnToContents(column)
        return view

    def _on_version(self, _selected: QItemSelection, _deselected: QItemSelection) -> None:
        rows = self.version_view.selectionModel().selectedRows()
        if rows:
            self.text.setPlainText(self.chunk.versions[rows[0].row()].text)


class JourneyView(QWidget):
    reloadRequested = Signal()
    editRequested = Signal(str, str)  # versioned node id, new text
    deleteRequested = Signal(str)  # versioned node id

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.bundle: JourneyBundle | None = None
        self.selection = JourneySelection(self)
        self.graph = RadialGraph(self.selection)
        self.timeline = JourneyTimeline(self.selection)
        self.memory_state: dict[str, dict[str, Any]] = {}
        self.stale = True
        self._loading = False  # a reload is on its way: further changes only mark it again
        self._again = False
        self._outstanding: deque[EntryEditor | None] = deque()
        self.editor: EntryEditor | None = None
        self.confirm: QMessageBox | None = None
        self.viewer: ItemViewer | ChunkViewer | None = None

        self.sources = {
            "memory": QCheckBox("Memory"),
            "user": QCheckBox("User"),
            "skills": QCheckBox("Skills"),
            "facts": QCheckBox("Facts"),
            "sessions": QCheckBox("Sessions"),
        }
        for box in self.sources.values():
            box.setChecked(True)
            box.toggled.connect(self._on_sources)
        self.filter = QLineEdit()
        self.filter.setPlaceholderText("Filter by text…")
        self.filter.setClearButtonEnabled(True)
        self.filter.textChanged.connect(self.graph.set_filter_text)
        self.history = QCheckBox("Show removed")
        self.history.setToolTip("Also show, faded, chunks that are not in memory at this moment")
        self.history.toggled.connect(self.graph.set_show_history)
        self.fit_button = QToolButton()
        self.fit_button.setText("Fit")
        self.fit_button.setToolTip("Zoom to fit (0)")
        self.fit_button.clicked.connect(self.graph.fit)
        # Its own line, free to be cut: the counts must not set the view's minimum width.
        self.summary = QLabel()
        self.summary.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.filter.setMinimumWidth(90)
        # Two short rows rather than one long one: the journey must fit a dock beside the
        # chat at 1000 px (issue: it forced the window to 1058 px wide).
        self.sources["user"].setToolTip("USER.md: the user profile")
        row = QHBoxLayout()
        for box in self.sources.values():
            row.addWidget(box)
        row.addStretch(1)
        row.addWidget(self.fit_button)
        second = QHBoxLayout()
        second.addWidget(self.filter, 1)
        second.addWidget(self.history)
        second.addWidget(self.summary, 2)
        self.result = QLabel()
        self.result.setWordWrap(True)
        self.result.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.result.hide()
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.graph)
        split.addWidget(self.timeline)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        split.setChildrenCollapsible(False)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(row)
        layout.addLayout(second)
        layout.addWidget(split, 1)
        layout.addWidget(self.result)

        self.timeline.positionChanged.connect(self._on_position)
        for source in (self.graph, self.timeline):
            source.editRequested.connect(self.edit_chunk)
            source.deleteRequested.connect(self.delete_chunk)
            source.viewRequested.connect(self.view_item)

    # -- data ------------------------------------------------------------------------------

    def request_reload(self) -> None:
        """Ask the worker for fresh journey data; a burst of changes costs one or two builds,
        never one per change."""
        if self._loading:
            self._again = True
            return
        self._loading = True
        self.reloadRequested.emit()

    @Slot(object)
    def set_bundle(self, bundle: object) -> None:
        """The worker's answer: a :class:`JourneyBundle`, or why there is none."""
        self._loading = False
        if self._again:
            self._again = False
            self.request_reload()
        if not isinstance(bundle, JourneyBundle):
            self._show_result(str(bundle), REMOVED)
            return
        self.bundle = bundle
        self.stale = False
        self.graph.set_bundle(bundle)
        self.timeline.set_journey(bundle.journey)
        journey = bundle.journey
        alive = sum(1 for c in journey.chunks if c.alive)
        skills = sum(1 for i in journey.items if i.alive and i.layer == "skill")
        facts = sum(1 for i in journey.items if i.alive and i.layer == "fact")
        self.summary.setText(
            f"{alive} chunks now · {len(journey.chunks)} ever · {skills} skills · {facts} facts"
            f" · {len(journey.sessions)} sessions · {journey.now:,} events"
        )
        self.summary.setToolTip(
            "Chunks: entries of MEMORY.md and USER.md; skills: the agent's procedures; facts: "
            "the Holographic provider's fact store"
        )
        if journey.history_error:
            self._show_result(f"Change history unavailable: {journey.history_error}", WARNING)
        elif journey.layer_errors:
            self._show_result("; ".join(journey.layer_errors), WARNING)

    @Slot(object)
    def apply_changes(self, changes: Any) -> None:
        """Take a worker ChangeSet: memory changed, so the journey is out of date."""
        memory = getattr(changes, "memory", None)
        if memory is None:
            return
        self.memory_state = memory
        if self.editor is not None:
            state = memory.get(self.editor.target.value)
            if state is not None:
                self.editor.set_state(state)
        self.stale = True
        if self.isVisible():
            self.request_reload()

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        if self.stale:
            self.request_reload()

    def _on_sources(self) -> None:
        self.graph.set_sources({name for name, box in self.sources.items() if box.isChecked()})

    def _on_position(self, position: int) -> None:
        journey = self.bundle.journey if self.bundle else None
        self.graph.set_position(None if journey is None or position >= journey.now else position)

    # -- the shared selection and the memory panel -----------------------------------------

    def chunk(self, key: str) -> Chunk | None:
        return self.bundle.journey.chunk(key) if self.bundle is not None else None

    def select_entry(self, target: str, row: int, text: str | None = None) -> None:
        """The memory panel selected ``row`` of ``target`` (holding ``text``, when given):
        select that chunk here. With ``text``, the chunk must hold it — the panel may be a
        step ahead of the journey — and a chunk elsewhere that holds it is taken instead."""
        if self.bundle is None or row < 0:
            return
        chunks = self.bundle.journey.current(Target(target))
        if text is None:
            if row < len(chunks):
                self.selection.select(chunks[row].key)
            return
        if row < len(chunks) and chunks[row].text == text:
            self.selection.select(chunks[row].key)
            return
        same = next((c for c in chunks if c.text == text), None)
        if same is not None:
            self.selection.select(same.key)

    def entry_of(self, key: str) -> tuple[str, int] | None:
        """(target, row) of chunk ``key`` in memory now, for the memory panel."""
        chunk = self.chunk(key)
        if chunk is None or chunk.index is None:
            return None
        return chunk.target.value, chunk.index

    # -- skills and facts: view only -------------------------------------------------------

    @Slot(str)
    def view_item(self, key: str) -> None:
        """Show chunk, skill or fact ``key`` (one viewer at a time; a new one replaces it)."""
        if self.bundle is None:
            return
        journey = self.bundle.journey
        chunk, item = journey.chunk(key), journey.item(key)
        if chunk is None and item is None:
            return
        if self.viewer is not None:
            self.viewer.close()
            self.viewer.deleteLater()
        if chunk is not None:
            viewer = ChunkViewer(chunk, journey, self)
            viewer.editRequested.connect(self.edit_chunk)
            self.viewer = viewer
        else:
            assert item is not None
            self.viewer = ItemViewer(item, self)
        self.viewer.show()

    # -- edits -----------------------------------------------------------------------------

    @Slot(str)
    def edit_chunk(self, key: str) -> None:
        chunk = self.chunk(key)
        if chunk is None or chunk.node_id is None:
            return
        if self.editor is not None and self.editor.isVisible():
            self.editor.raise_()
            return
        state = self.memory_state.get(chunk.target.value, {})
        editor = EntryEditor(chunk.target, state, chunk.text, self)
        editor.setWindowTitle(f"Edit {chunk_title(chunk)}")
        node_id = chunk.node_id

        def submit(text: str) -> None:
            self._outstanding.append(editor)
            self.editRequested.emit(node_id, text)

        editor.submitted.connect(submit)
        editor.finished.connect(lambda _code: self._editor_closed(editor))
        self.editor = editor
        editor.show()

    def _editor_closed(self, editor: EntryEditor) -> None:
        if self.editor is editor:
            self.editor = None

    @Slot(str)
    def delete_chunk(self, key: str) -> None:
        chunk = self.chunk(key)
        if chunk is None or chunk.node_id is None:
            return
        node_id = chunk.node_id
        box = QMessageBox(
            QMessageBox.Icon.Question,
            "Delete chunk",
            f"Delete this entry from {chunk.target.filename}?\n\n{preview(chunk.text, 200)}\n\n"
            "It can be undone (cairn memory undo).",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel,
            self,
        )
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)
        self.confirm = box

        def decided(answer: int) -> None:
            if answer == QMessageBox.StandardButton.Yes:
                self._outstanding.append(None)
                self.deleteRequested.emit(node_id)
            box.deleteLater()
            if self.confirm is box:
                self.confirm = None

        box.finished.connect(decided)
        box.open()

    @Slot(object)
    def show_edit_result(self, result: object) -> None:
        """The engine's answer to the oldest outstanding edit or delete."""
        if not isinstance(result, dict):
            return
        editor = self._outstanding.popleft() if self._outstanding else None
        message = str(result.get("message") or result.get("error") or "")
        if result.get("ok"):
            staged = result.get("status") == "staged"
            self._show_result(message, WARNING if staged else ADDED)
            if editor is not None:
                editor.waiting = False
                editor.accept()
        else:
            self._show_result("Refused: " + message, REMOVED)
            if editor is not None and editor.isVisible():
                editor.refused(message)
            if result.get("error") == "stale":
                self.request_reload()

    def _show_result(self, message: str, color: Any) -> None:
        self.result.setText(message)
        _set_text_color(self.result, color)
        self.result.show()
