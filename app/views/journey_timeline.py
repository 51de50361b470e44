"""The journey timeline: play, pause, speed and a scrubber over every recorded event of
memory, skills and provider facts.

Each position shows what the event there changed (a diff of the file it touched, of a skill's
file or of a fact, or what a staged or rejected write proposed) and what the agent knew right
after it: both files, the skills and the newest facts. One step of playback is a slider move:
the state list is patched row by row (keyed by chunk, so the selection survives), the diff is
rebuilt, and the graph only swaps its visibility mask.
"""

from __future__ import annotations

import re

from PySide6.QtCore import (
    QEvent,
    QItemSelection,
    QModelIndex,
    QSize,
    Qt,
    QTimer,
    Signal,
    SignalInstance,
    Slot,
)
from PySide6.QtGui import QKeyEvent, QResizeEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QListView,
    QPushButton,
    QSizePolicy,
    QSlider,
    QSplitter,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.models.journey_model import (
    ACTION_LABELS,
    STATE_FACTS,
    JourneyEventModel,
    JourneySelection,
    JourneyStateModel,
    when,
)
from app.views.chat_pane import themed_icon
from app.views.memory_panel import DiffLine, DiffView
from engine.journey import Journey, TimelineEvent
from engine.pending_preview import entry_diff

SPEEDS = [("½×", 0.5), ("1×", 1.0), ("2×", 2.0), ("5×", 5.0), ("20×", 20.0), ("100×", 100.0)]
EVENTS_PER_SECOND = 2.0  # at 1×
FRAME_MS = 16


def compact(lines: list[DiffLine], context: int = 1) -> list[DiffLine]:
    """``lines`` with long runs of unchanged entries folded into one note, so the change is
    in view without scrolling."""
    changed = [i for i, (sign, _text) in enumerate(lines) if sign in "+-"]
    keep = {j for i in changed for j in range(i - context, i + context + 1)}
    out: list[DiffLine] = []
    folded = 0
    for i, line in enumerate(lines):
        if line[0] != " " or i in keep:
            if folded:
                out.append(("!", f"… {folded} unchanged entr{'y' if folded == 1 else 'ies'}"))
                folded = 0
            out.append(line)
        else:
            folded += 1
    if folded:
        out.append(("!", f"… {folded} unchanged entr{'y' if folded == 1 else 'ies'}"))
    return out


def paragraphs(text: str) -> list[str]:
    """``text`` cut at blank lines: a skill's diff compares paragraphs, as memory's compares
    entries, so a one-word patch shows as one paragraph changed, not as a wall of lines."""
    return [part for part in re.split(r"\n[ \t]*\n", text.strip("\n")) if part.strip()]


def item_diff(event: TimelineEvent) -> list[DiffLine]:
    """What a change of a skill or a fact did, as lines for :class:`DiffView`."""
    action = ACTION_LABELS.get(event.action, event.action)
    what = f"skill {event.subject}" if event.layer == "skill" else f"fact #{event.subject}"
    head = f"{what} · {action} · {when(event.at, True)} · {event.origin}"
    if event.session_id:
        head += f" · session {event.session_id[:8]}"
    lines: list[DiffLine] = [("#", head), ("!", event.summary)]
    if event.layer == "skill":
        lines.append(("!", f"File: {event.file or 'SKILL.md'}"))
    if event.note:
        lines.append(("!", event.note))
    if event.changed:
        before, after = event.changed[0]
        lines += compact(entry_diff(paragraphs(before), paragraphs(after)))
    elif event.added:
        lines += [("+", part) for part in paragraphs(event.added[0])]
    elif event.removed:
        lines += [("-", part) for part in paragraphs(event.removed[0])]
    else:
        lines.append(("!", "No text recorded for this change."))
    return lines


def event_diff(journey: Journey, event: TimelineEvent) -> list[DiffLine]:
    """What ``event`` changed, as lines for :class:`DiffView`."""
    if event.target is None:
        return item_diff(event)
    action = ACTION_LABELS.get(event.action, event.action)
    head = f"{event.target.filename} · {action} · {when(event.at, True)} · {event.origin}"
    if event.session_id:
        head += f" · session {event.session_id[:8]}"
    lines: list[DiffLine] = [("#", head)]
    if event.gap:
        lines.append(("!", "The file had also been changed, unrecorded, before this event."))
    if not event.commits:
        note = {
            "staged": "Staged for approval: memory did not change yet.",
            "rejected": "Rejected: memory did not change.",
        }.get(event.action, "Memory did not change.")
        lines.append(("!", note + (f" ({event.summary})" if event.summary else "")))
        for before, after in event.changed:
            lines += [("-", before), ("+", after)]
        lines += [("-", text) for text in event.removed]
        lines += [("+", text) for text in event.added]
        return lines
    before = journey.entries_at(event.target, event.position - 1)
    after = journey.entries_at(event.target, event.position)
    lines += compact(entry_diff(before, after)) or [("!", "(the file was empty before and after)")]
    return lines


class StateListView(QListView):
    """Memory at the moment shown; Del deletes and Enter opens the selected row, as they do
    in the graph and the memory panel."""

    deleteKeyPressed = Signal()
    openKeyPressed = Signal()

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() == Qt.Key.Key_Delete:
            self.deleteKeyPressed.emit()
        elif event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            self.openKeyPressed.emit()
        else:
            super().keyPressEvent(event)
            return
        event.accept()


class JourneyTimeline(QWidget):
    positionChanged = Signal(int)
    editRequested = Signal(str)  # chunk key
    deleteRequested = Signal(str)  # chunk key
    viewRequested = Signal(str)  # skill or fact key

    def __init__(
        self, selection: JourneySelection | None = None, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.selection = selection if selection is not None else JourneySelection(self)
        self.selection.changed.connect(self._on_shared_selection)
        self.journey: Journey | None = None
        self.position = 0
        self.events = JourneyEventModel(self)
        self.state = JourneyStateModel(self)

        # Drawn icons, not ▶/⏸ characters: a font without them shows a box.
        self.play_button = QToolButton()
        self.play_button.setText("Play")
        self.play_button.setIconSize(QSize(14, 14))
        self.play_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.play_button.clicked.connect(self.toggle_play)
        self.speed = QComboBox()
        for label, factor in SPEEDS:
            self.speed.addItem(label, factor)
        self.speed.setCurrentIndex(1)
        self.speed.setToolTip("Playback speed")
        self.speed.currentIndexChanged.connect(self._retime)
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setRange(0, 0)
        self.slider.setToolTip("Drag to any moment; memory is shown as it was then")
        self.slider.valueChanged.connect(self._on_slider)
        self.now_button = QToolButton()
        self.now_button.setText("Now")
        self.now_button.setToolTip("Jump to memory as it is now")
        self.now_button.clicked.connect(self.go_now)
        # Fixed sizes: a label whose text changes every playback step must not re-lay out the
        # view, or every step repaints the whole window (measured: about half a step's cost).
        self.label = QLabel()
        self.label.setFixedWidth(self.label.fontMetrics().horizontalAdvance("0" * 27))
        controls = QHBoxLayout()
        controls.addWidget(self.play_button)
        controls.addWidget(self.speed)
        controls.addWidget(self.slider, 1)
        controls.addWidget(self.now_button)
        controls.addWidget(self.label)

        self.event_list = QListView()
        self.event_list.setModel(self.events)
        self.event_list.setUniformItemSizes(True)
        self.event_list.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.event_list.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.event_list.clicked.connect(self._on_event_clicked)
        self.event_list.activated.connect(self._on_event_clicked)
        self.diff = DiffView()
        self.state_list = StateListView()
        self.state_list.setModel(self.state)
        self.state_list.deleteKeyPressed.connect(lambda: self._request(self.deleteRequested))
        self.state_list.openKeyPressed.connect(self._open_selected)
        self.state_list.setUniformItemSizes(True)
        self.state_list.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.state_list.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.state_list.selectionModel().selectionChanged.connect(self._on_state_selection)
        self.state_list.doubleClicked.connect(lambda _index: self._open_selected())
        self.state_title = QLabel("Memory then")
        self.state_title.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.view_button = QPushButton("View…")
        self.edit_button = QPushButton("Edit…")
        self.delete_button = QPushButton("Delete…")
        self.view_button.setToolTip(
            "Show this chunk's versions and sessions, or this skill or fact (view only)"
        )
        self.edit_button.setToolTip("Edit this chunk as it is in memory now")
        self.delete_button.setToolTip("Delete this chunk from memory now")
        self.view_button.clicked.connect(self._view_selected)
        self.edit_button.clicked.connect(lambda: self._request(self.editRequested))
        self.delete_button.clicked.connect(lambda: self._request(self.deleteRequested))
        buttons = QHBoxLayout()
        buttons.addWidget(self.state_title, 1)
        buttons.addWidget(self.view_button)
        buttons.addWidget(self.edit_button)
        buttons.addWidget(self.delete_button)
        # Small floors: in a short window the lists shrink to a few rows, not the window.
        for widget in (self.event_list, self.diff, self.state_list):
            widget.setMinimumHeight(44)
        state_box = QWidget()
        state_layout = QVBoxLayout(state_box)
        state_layout.setContentsMargins(0, 0, 0, 0)
        state_layout.addLayout(buttons)
        state_layout.addWidget(self.state_list, 1)
        right = QSplitter(Qt.Orientation.Vertical)
        right.addWidget(self.diff)
        right.addWidget(state_box)
        right.setChildrenCollapsible(False)
        right.setStretchFactor(0, 1)
        right.setStretchFactor(1, 1)
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(self.event_list)
        split.addWidget(right)
        split.setStretchFactor(0, 1)
        split.setStretchFactor(1, 1)
        split.setChildrenCollapsible(False)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(controls)
        layout.addWidget(split, 1)

        # True while the list is changed from here: Qt then moves the selection on its own
        # (a removed row hands it to a neighbour), which must not reach the shared selection.
        self._syncing = False
        self.timer = QTimer(self)
        self.timer.timeout.connect(self._tick)
        self._step = 1
        self._retime()
        self._update_buttons()
        self._draw_play_icon()

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        # Narrow (a dock beside the chat at 1000 px): the slider keeps the room, and the
        # position is in its tooltip and the event list instead.
        self.label.setVisible(self.width() >= 600)

    def _draw_play_icon(self) -> None:
        color = self.palette().color(self.play_button.foregroundRole())
        self.play_button.setIcon(themed_icon("pause" if self.playing else "play", color))

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:
            self._draw_play_icon()

    # -- data ------------------------------------------------------------------------------

    def set_journey(self, journey: Journey) -> None:
        """New journey data. Showing "now" keeps showing now; a past moment stays put."""
        at_now = self.journey is None or self.position >= self.journey.now
        self.journey = journey
        self.events.set_events(journey.events)
        self.slider.blockSignals(True)
        self.slider.setRange(0, journey.now)
        self.slider.blockSignals(False)
        self.show_position(journey.now if at_now else min(self.position, journey.now), force=True)

    @property
    def now(self) -> int:
        return self.journey.now if self.journey is not None else 0

    # -- moving in time --------------------------------------------------------------------

    @Slot(int)
    def show_position(self, position: int, force: bool = False) -> None:
        """Show memory right after the first ``position`` events."""
        position = max(0, min(position, self.now))
        if position == self.position and not force:
            return
        self.position = position
        if self.slider.value() != position:
            self.slider.blockSignals(True)
            self.slider.setValue(position)
            self.slider.blockSignals(False)
        self._render()
        self.positionChanged.emit(position)

    def _on_slider(self, value: int) -> None:
        self.show_position(value)

    def _on_event_clicked(self, index: QModelIndex) -> None:
        self.pause()
        self.show_position(index.row() + 1)

    @Slot()
    def go_now(self) -> None:
        self.pause()
        self.show_position(self.now)

    def step(self, count: int = 1) -> None:
        self.show_position(self.position + count)

    # -- playback --------------------------------------------------------------------------

    @property
    def playing(self) -> bool:
        return self.timer.isActive()

    @Slot()
    def toggle_play(self) -> None:
        if self.playing:
            self.pause()
        else:
            self.play()

    def play(self) -> None:
        if self.journey is None or not self.now:
            return
        if self.position >= self.now:
            self.show_position(0)  # replay from the start
        self.timer.start()
        self.play_button.setText("Pause")
        self._draw_play_icon()

    def pause(self) -> None:
        self.timer.stop()
        self.play_button.setText("Play")
        self._draw_play_icon()

    def _retime(self) -> None:
        factor = float(self.speed.currentData() or 1.0)
        interval = 1000 / (EVENTS_PER_SECOND * factor)
        # Faster than a frame: move several events a frame rather than tick more often.
        self._step = max(1, round(FRAME_MS / interval)) if interval < FRAME_MS else 1
        self.timer.setInterval(max(FRAME_MS, round(interval)))

    def _tick(self) -> None:
        if self.position >= self.now:
            self.pause()
            return
        self.step(self._step)
        if self.position >= self.now:
            self.pause()

    # -- showing a moment ------------------------------------------------------------------

    def _render(self) -> None:
        journey = self.journey
        position = self.position
        self._syncing = True
        try:
            self.state.show(journey, position)
        finally:
            self._syncing = False
        if journey is None:
            return
        if position == 0:
            self.event_list.clearSelection()
            self.diff.show_diff([("!", "Before the first recorded change: memory was empty.")])
        else:
            index = self.events.index(position - 1, 0)
            self.event_list.setCurrentIndex(index)
            self.event_list.scrollTo(index)
            self.diff.show_diff(event_diff(journey, journey.events[position - 1]))
        more = self.state.facts_hidden
        extra = f" (newest {STATE_FACTS} facts listed, {more:,} more)" if more else ""
        if position >= journey.now:
            self.label.setText(f"now · {journey.now:,} events")
            self.state_title.setText(f"Memory now{extra}")
        else:
            event = journey.events[position - 1] if position else None
            moment = when(event.at) if event is not None else "the start"
            self.label.setText(f"{position:,} / {journey.now:,} · {moment}")
            self.state_title.setText(f"Memory at {moment}{extra}")
        self._select_row(self.selection.key)

    # -- selection -------------------------------------------------------------------------

    def _select_row(self, key: str) -> None:
        row = self.state.row_of(key) if key else -1
        selection = self.state_list.selectionModel()
        current = selection.selectedRows()
        self._syncing = True
        try:
            if row < 0:
                if current:
                    selection.clearSelection()
            elif not current or current[0].row() != row:
                index = self.state.index(row, 0)
                self.state_list.setCurrentIndex(index)
                self.state_list.scrollTo(index)
        finally:
            self._syncing = False
        self._update_buttons()

    def _on_shared_selection(self, key: str) -> None:
        self._select_row(key)

    def _on_state_selection(self, _selected: QItemSelection, _deselected: QItemSelection) -> None:
        rows = self.state_list.selectionModel().selectedRows()
        if rows and not self._syncing:
            self.selection.select(self.state.key_at(rows[0].row()) or "")
        self._update_buttons()

    def selected_key(self) -> str:
        return self.selection.key

    def _editable(self) -> bool:
        chunk = self.journey.chunk(self.selection.key) if self.journey is not None else None
        return chunk is not None and chunk.alive

    def _viewable(self) -> bool:
        """Chunks (their versions and sessions), skills and facts can be viewed."""
        journey = self.journey
        key = self.selection.key
        return journey is not None and (
            journey.item(key) is not None or journey.chunk(key) is not None
        )

    def _update_buttons(self) -> None:
        editable = self._editable()
        self.edit_button.setEnabled(editable)
        self.delete_button.setEnabled(editable)
        self.view_button.setEnabled(self._viewable())

    def _request(self, signal: SignalInstance) -> None:
        if self._editable():
            signal.emit(self.selection.key)

    def _view_selected(self) -> None:
        if self._viewable():
            self.viewRequested.emit(self.selection.key)

    def _open_selected(self) -> None:
        """Double-click or Enter: a chunk in memory opens for editing; a removed chunk, a
        skill or a fact for viewing."""
        if self._editable():
            self._request(self.editRequested)
        else:
            self._view_selected()
