"""The main window: owns the engine worker thread and the file watcher, and lays out the views.

Sessions dock on the left, memory on the right, the chat in the middle. Every request runs on
the engine thread through the one :class:`app.ops.OpRunner`; every view refreshes from its one
``operationDidExecute`` signal, and only when the changes name its data (``_bind``), so
nothing here waits on disk, the database or the model.

What the window needs only later is imported then: the journey (numpy, networkx) when its dock
is first shown, the migration wizard when it is opened, the engine on the worker's thread. The
window is on screen before the engine has loaded.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QByteArray, QMetaObject, QSettings, Qt, QThread, QTimer, Signal, Slot
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence
from PySide6.QtWidgets import (
    QApplication,
    QDockWidget,
    QFrame,
    QLabel,
    QMainWindow,
    QScrollArea,
    QToolBar,
    QVBoxLayout,
    QWidget,
)

from app import bindings, state
from app.ops import OpRunner
from app.scheduler import CronScheduler
from app.state import ChangeSet
from app.theme import set_theme
from app.views.chat_pane import ChatPane
from app.views.memory_panel import MemoryPanel
from app.views.pending_dialog import PendingBadge, PendingDialog
from app.views.session_list import PAGE, SEARCH_RESULTS, SessionList
from app.views.setup_panel import SetupPanel
from app.watcher import HomeWatcher
from app.worker import EngineWorker
from engine.home import Home

if TYPE_CHECKING:
    from app.views.journey_view import JourneyView
    from app.views.settings_dialog import SettingsDialog
    from engine.changes import Changes
    from engine.config import Config
    from engine.cron import RunResult
    from engine.ops import OpResult

LAYOUT_VERSION = 1


def _everything() -> Changes:
    from engine.changes import Changes

    return Changes.everything()


class MainWindow(QMainWindow):
    # Emitted once the first state from the engine is on screen.
    memoryShown = Signal()

    def __init__(self, home: Home, *, watch: bool = True) -> None:
        super().__init__()
        self.home = home
        self.setWindowTitle(f"Cairn — {home.root}")
        self.resize(1180, 760)
        self._first_state = True

        self.chat = ChatPane()
        self.setup = SetupPanel()
        self.setup.hide()
        central = QWidget()
        column = QVBoxLayout(central)
        column.setContentsMargins(8, 8, 8, 8)
        # Scrolled when the window is short: the panel must not set the window's height.
        self.setup_area = QScrollArea()
        self.setup_area.setWidget(self.setup)
        self.setup_area.setWidgetResizable(True)
        self.setup_area.setFrameShape(QFrame.Shape.NoFrame)
        self.setup_area.setMinimumHeight(72)
        self.setup_area.hide()
        column.addWidget(self.setup_area)
        column.addWidget(self.chat, 1)
        self.setCentralWidget(central)

        self.sessions = SessionList()
        self.memory = MemoryPanel()
        self.pending = PendingDialog(self)
        self.badge = PendingBadge()
        self.sessions_dock = self._dock("Sessions", "sessions", self.sessions, left=True)
        self.memory_dock = self._dock("Memory", "memory", self.memory, left=False)
        # Opened by /journey or Ctrl+3; its view is made when the dock is first shown.
        self._journey: JourneyView | None = None
        self._last_memory: ChangeSet | None = None  # for a journey view made later
        self.journey_dock = QDockWidget("Journey", self)
        self.journey_dock.setObjectName("journey-dock")
        self.journey_dock.setToolTip("Double-click the title to open the journey in its own window")
        # The side docks keep the window's full height; the journey docks under the chat
        # only, so opening it does not squeeze the memory lists to a row or two.
        self.setCorner(Qt.Corner.BottomLeftCorner, Qt.DockWidgetArea.LeftDockWidgetArea)
        self.setCorner(Qt.Corner.BottomRightCorner, Qt.DockWidgetArea.RightDockWidgetArea)
        self.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, self.journey_dock)
        self.journey_dock.hide()
        self.journey_dock.visibilityChanged.connect(self._on_journey_visibility)

        self._thread = QThread(self)
        self._thread.setObjectName("cairn-engine")
        self.worker = EngineWorker(home)
        self.worker.moveToThread(self._thread)
        self._thread.finished.connect(self.worker.deleteLater)
        self.watcher = HomeWatcher(home, parent=self) if watch else None
        self.runner = OpRunner(
            self.worker,
            self._thread,
            expect_write=self.watcher.expect_write if self.watcher is not None else None,
            parent=self,
        )
        self._wire()
        self._actions()
        self.statusBar().showMessage("Opening the home…")
        # Beside the status messages, which the model's name replaces: what is left of a
        # large import's indexing, while the scheduler fills it in the background.
        self.import_indexing = QLabel()
        self.import_indexing.setObjectName("import-indexing")
        self.import_indexing.hide()
        self.statusBar().addPermanentWidget(self.import_indexing)
        self._import_indexed_shown = QTimer(self, singleShot=True, interval=10_000)
        self._import_indexed_shown.timeout.connect(self.import_indexing.hide)

        if self.watcher is not None:
            self.watcher.filesChanged.connect(self.runner.external)
        self._settings = QSettings(str(home.root / "desktop.ini"), QSettings.Format.IniFormat)
        self._sessions_loaded = PAGE  # how far the session list has been paged
        self._journey_sized = False  # given its first height (a restored layout has one)
        self._restore_layout()
        self._journey_sized = not self.journey_dock.isHidden()
        self.settings_dialog: SettingsDialog | None = None
        if self.theme() != "system":
            set_theme(QApplication.instance(), self.theme())  # type: ignore[arg-type]
        self._thread.start()
        bindings.start(self.runner)
        if self.watcher is not None:
            self.watcher.start()
        # Cron jobs run while the window is open (system cron can run `cairn cron tick`
        # when it is not); runs happen on the scheduler's own thread. It starts once the
        # engine has answered: its first check loads half the engine, which would otherwise
        # compete with the worker's start for the interpreter.
        self.scheduler = CronScheduler(home, self) if watch else None
        if self.scheduler is not None:
            self.scheduler.jobFinished.connect(self._on_cron_finished)
            self.scheduler.problem.connect(self._on_cron_problem)
            self.scheduler.importIndexed.connect(self._on_import_indexed)
            self.worker.failed.connect(self._start_scheduler)

    # -- construction ----------------------------------------------------------------------

    def _dock(self, title: str, name: str, widget: QWidget, *, left: bool) -> QDockWidget:
        dock = QDockWidget(title, self)
        dock.setObjectName(f"{name}-dock")  # saveState needs a stable name
        dock.setWidget(widget)
        area = (
            Qt.DockWidgetArea.LeftDockWidgetArea if left else Qt.DockWidgetArea.RightDockWidgetArea
        )
        self.addDockWidget(area, dock)
        return dock

    def _wire(self) -> None:
        w = self.worker
        # Streaming while a turn runs; its result comes back through the runner.
        self.chat.messageSubmitted.connect(self.submit)
        self.chat.stopRequested.connect(self._stop_reply)
        w.tokenReceived.connect(self.chat.on_token)
        w.toolStarted.connect(self.chat.on_tool_started)
        w.toolFinished.connect(self.chat.on_tool_finished)
        w.noticeRaised.connect(self.chat.on_notice)
        w.failed.connect(self.chat.on_failed)
        w.failed.connect(self.setup.show_error)

        self.sessions.searchRequested.connect(self._search_sessions)
        self.sessions.sessionActivated.connect(self._load_session)
        self.sessions.newSessionRequested.connect(self.new_session)
        self.sessions.pageRequested.connect(self._session_page)
        self.sessions.checkRequested.connect(self._check_sessions)
        self.sessions.renameRequested.connect(self._rename_session)
        self.sessions.deleteRequested.connect(self._delete_sessions)
        self.sessions.exportRequested.connect(self._export_sessions)
        self.sessions.continueRequested.connect(self._continue_session)
        self.chat.continueRequested.connect(self._continue_session)

        self.badge.clicked.connect(self.show_pending)

        self.setup.detectRequested.connect(self._detect_servers)
        self.setup.modelChosen.connect(self._configure_model)

        # Each view: which changes concern it, what it reads then, where it shows it.
        bindings.bind_memory_panel(self.runner, self.memory, self._show_memory)
        bindings.bind_pending_dialog(self.runner, self.pending)
        bindings.bind_pending_badge(self.runner, self.badge)
        bind = functools.partial(bindings.bind, self.runner)
        bind(state.approval_changed, state.approval_state, self._show_approval)
        bind(state.sessions_changed, state.sessions_state, self._show_sessions)
        bind(state.model_changed, state.model_state, self._show_model)
        # One selection: the panel's row selects the chunk, the chunk selects the panel's row.
        self.memory.entrySelected.connect(self._on_panel_selection)
        self.memory.newSessionRequested.connect(self.new_session)

    # -- requests (each an operation or a query on the engine thread) ----------------------

    @Slot(str)
    def submit(self, text: str) -> None:
        """A line for the chat: a slash command or a turn."""
        self.runner.run(lambda w: w.turn(text), initiator=self.chat).success(
            self._turn_finished
        ).failure(lambda exc: self.chat.on_failed(f"the engine failed: {exc}"))

    def _turn_finished(self, result: OpResult) -> None:
        if result.status == "command":
            self.chat.on_command_finished(result.result)
            self._on_command_finished(result.result)
        else:
            self.chat.on_reply_finished(result.result)

    @Slot(int, int)
    def _session_page(self, offset: int, count: int) -> None:
        self.runner.query(lambda w: state.session_page(w, offset, count)).success(
            self._show_session_page
        ).failure(lambda exc: self.sessions.show_status(f"sessions could not be read: {exc}"))

    def _show_session_page(self, page: dict[str, Any]) -> None:
        if not isinstance(page, dict) or "cards" not in page:
            return
        self.sessions.show_page(page["offset"], page["cards"], page["total"])
        self._sessions_loaded = max(PAGE, self.sessions.model.loaded())

    @Slot()
    def _check_sessions(self) -> None:
        self.runner.query(state.session_signature).success(self.sessions.show_signature).failure(
            lambda _exc: None  # no agent yet: nothing to compare
        )

    def _session_op(self, op: Callable[[Any], OpResult]) -> None:
        self.runner.run(op, initiator=self.sessions).success(
            lambda r: self.sessions.show_status(r.message)
        ).failure(lambda exc: self._session_op_failed(exc))

    def _session_op_failed(self, exc: BaseException) -> None:
        self.sessions.show_status(f"Not done: {getattr(exc, 'message', None) or exc}")
        self._session_page(0, self._sessions_loaded)  # show the store as it is

    @Slot(str, str)
    def _rename_session(self, session_id: str, title: str) -> None:
        from engine.ops import sessions as session_ops

        self._session_op(
            lambda w: session_ops.session_rename(w.need_agent().store, session_id, title)
        )

    @Slot(str)
    def _continue_session(self, session_id: str) -> None:
        from engine.ops import sessions as session_ops

        self.runner.run(
            lambda w: session_ops.session_continue(w.need_agent(), session_id),
            initiator=self.chat,
        ).success(lambda result: self.chat.continue_session(result.result["transcript"])).failure(
            lambda exc: self.chat.on_failed(getattr(exc, "message", None) or str(exc))
        )

    @Slot(object)
    def _delete_sessions(self, session_ids: list[str]) -> None:
        from engine.ops import sessions as session_ops

        ids = list(session_ids)
        self._session_op(lambda w: session_ops.session_delete(w.need_agent().store, ids))

    @Slot(object, str)
    def _export_sessions(self, session_ids: list[str], path: str) -> None:
        from pathlib import Path

        from engine.ops import sessions as session_ops

        ids = list(session_ids)
        self._session_op(
            lambda w: session_ops.sessions_export(w.need_agent().store, ids, Path(path))
        )

    @Slot(str)
    def _search_sessions(self, query: str) -> None:
        arguments: dict[str, object] = (
            {"mode": "discover", "query": query, "limit": SEARCH_RESULTS}
            if query.strip()
            else {"mode": "browse"}
        )
        self.runner.query(lambda w: w.need_agent().search_tool(arguments, for_user=True)).success(
            lambda found: self.sessions.show_sessions(query, found)
        ).failure(lambda exc: self.chat.on_failed(str(exc)))

    @Slot(str)
    def _load_session(self, session_id: str) -> None:
        arguments = {"mode": "read", "session_id": session_id}
        terms = self.sessions.matched_terms(session_id)  # opened from a search: its words
        self.runner.query(lambda w: w.need_agent().search_tool(arguments, for_user=True)).success(
            lambda found: self.chat.show_session(found, terms)
        ).failure(lambda exc: self.chat.on_failed(str(exc)))

    @Slot()
    def _detect_servers(self) -> None:
        def detect(_w: EngineWorker) -> list[dict[str, object]]:
            from engine.providers.detect import detect_local_servers

            return [s.model_dump() for s in detect_local_servers()]

        self.runner.query(detect).success(self.setup.show_servers).failure(
            lambda exc: self.setup.show_error(str(exc))
        )

    @Slot(object)
    def _configure_model(self, patch: object) -> None:
        # Opening the model can take seconds (the SDK loads, the server is asked for its
        # window): say so at once rather than look as if nothing happened.
        name = patch.get("model") if isinstance(patch, dict) else None
        self.statusBar().showMessage(f"Connecting to {name or 'the model'}…")
        self.runner.run(
            lambda w: w.configure_model(dict(patch)),  # type: ignore[call-overload]
            initiator=self.setup,
        ).success(self._model_configured).failure(lambda exc: self.setup.show_error(str(exc)))

    def _model_configured(self, result: OpResult) -> None:
        if result.status == "command":
            self.chat.on_command_finished(result.result)

    @property
    def journey(self) -> JourneyView:
        """The journey view, made (and bound to the runner) on first use."""
        if self._journey is None:
            from app.views.journey_view import JourneyView

            view = JourneyView()
            self._journey = view
            bindings.bind_journey(self.runner, view)
            view.selection.changed.connect(self._on_journey_selection)
            if self._last_memory is not None:
                view.apply_changes(self._last_memory)
            self.journey_dock.setWidget(view)
        return self._journey

    @Slot(bool)
    def _on_journey_visibility(self, visible: bool) -> None:
        if visible:
            _ = self.journey
            if not self._journey_sized and not self.journey_dock.isFloating():
                self._journey_sized = True
                # The chat stays the larger part: the journey opens at under half the height.
                height = max(self.journey_dock.minimumSizeHint().height(), self.height() * 2 // 5)
                self.resizeDocks([self.journey_dock], [height], Qt.Orientation.Vertical)

    def _actions(self) -> None:
        toolbar = QToolBar("Main")
        toolbar.setObjectName("main-toolbar")
        toolbar.setMovable(False)
        self.addToolBar(toolbar)
        self.new_action = self._action("New session", "Ctrl+N", self.new_session, toolbar)
        self.search_action = self._action("Search sessions", "Ctrl+K", self.focus_search, toolbar)
        self.pending_action = self._action("Pending writes…", "Ctrl+P", self.show_pending, None)
        self.focus_chat_action = self._action("Focus chat", "Ctrl+L", self.chat.setFocus, None)
        toolbar.addSeparator()
        toggle_sessions = self.sessions_dock.toggleViewAction()
        toggle_sessions.setShortcut(QKeySequence("Ctrl+1"))
        toggle_memory = self.memory_dock.toggleViewAction()
        toggle_memory.setShortcut(QKeySequence("Ctrl+2"))
        toolbar.addAction(toggle_sessions)
        toolbar.addAction(toggle_memory)
        toggle_journey = self.journey_dock.toggleViewAction()
        toggle_journey.setShortcut(QKeySequence("Ctrl+3"))
        toolbar.addAction(toggle_journey)
        self.badge.place(toolbar)
        self.migrate_action = self._action(
            "Import from OpenClaw…", "Ctrl+Shift+I", self.open_migration, None
        )
        self.settings_action = self._action(
            "Settings…", QKeySequence.StandardKey.Preferences, self.open_settings, None
        )
        if self.settings_action.shortcut().isEmpty():
            self.settings_action.setShortcut(QKeySequence("Ctrl+,"))
        self.menuBar().addMenu("&File").addActions([self.settings_action, self.migrate_action])
        # Ctrl+Z here is memory's: a text box with the focus keeps it for its own typing.
        self.undo_action = self._action(
            "Undo memory change", QKeySequence.StandardKey.Undo, self.memory.request_undo, None
        )
        self.menuBar().addMenu("&Edit").addActions([self.undo_action])
        # Staged writes and whether writes are staged at all, where a user looks for them.
        self.approval_action = QAction("Stage memory writes for approval", self)
        self.approval_action.setCheckable(True)
        self.approval_action.toggled.connect(self._approval_toggled)
        memory_menu = self.menuBar().addMenu("&Memory")
        memory_menu.addActions([self.pending_action, self.approval_action])
        self._action("Quit", QKeySequence.StandardKey.Quit, self.close, None)

    def _action(
        self,
        text: str,
        shortcut: str | QKeySequence.StandardKey,
        slot: object,
        toolbar: QToolBar | None,
    ) -> QAction:
        action = QAction(text, self)
        action.setShortcut(QKeySequence(shortcut))
        action.triggered.connect(slot)
        self.addAction(action)  # shortcuts work with the toolbar hidden too
        if toolbar is not None:
            toolbar.addAction(action)
        return action

    # -- behaviour -------------------------------------------------------------------------

    @Slot()
    def _stop_reply(self) -> None:
        # Direct call, not a queued request: the worker is busy inside the reply to stop.
        self.worker.cancel()

    @Slot()
    def new_session(self) -> None:
        self.submit("/new")

    @Slot()
    def open_migration(self) -> None:
        from app.views.migration_wizard import MigrationWizard

        wizard = MigrationWizard(self.home, self)
        # The wizard applies on a thread of its own: what it brought is announced here.
        wizard.migrated.connect(lambda _r: self.runner.announce(_everything(), "migration"))
        wizard.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        wizard.show()

    # -- settings ----------------------------------------------------------------------------

    def theme(self) -> str:
        return str(self._settings.value("theme", "system") or "system")

    @Slot()
    def open_settings(self) -> None:
        """Read the settings on the engine thread, then show them."""

        def read(_w: EngineWorker) -> Config:
            from engine.config import load_config

            return load_config(self.home)

        self.runner.query(read).success(self._show_settings).failure(
            lambda exc: self.statusBar().showMessage(f"settings could not be read: {exc}", 10_000)
        )

    def _show_settings(self, config: Config) -> None:
        from app.views.settings_dialog import SettingsDialog

        if self.settings_dialog is not None and self.settings_dialog.isVisible():
            self.settings_dialog.raise_()
            return
        dialog = SettingsDialog(config, self.theme(), self)
        dialog.saveRequested.connect(self._save_settings)
        self.settings_dialog = dialog
        dialog.show()

    @Slot(object, str)
    def _save_settings(self, patch: dict[str, dict[str, object]], theme: str) -> None:
        dialog = self.settings_dialog
        if theme != self.theme():
            self._settings.setValue("theme", theme)
            set_theme(QApplication.instance(), theme)  # type: ignore[arg-type]
        model = patch.get("model")
        rest = {k: v for k, v in patch.items() if k != "model"}

        def write(w: EngineWorker) -> OpResult:
            from engine import ops

            written = ops.config_update(self.home, rest) if rest else None
            # A new model means a new agent and a new session; the rest applies as it is.
            return w.configure_model(dict(model)) if model else written  # type: ignore[return-value]

        def done(result: OpResult) -> None:
            if result.status == "command":
                self.chat.on_command_finished(result.result)
            if dialog is not None:
                dialog.saved()

        if not patch:
            if dialog is not None:
                dialog.saved()
            return
        self.runner.run(write, initiator=dialog).success(done).failure(
            lambda exc: dialog.show_error(str(exc)) if dialog is not None else None
        )

    @Slot()
    def focus_search(self) -> None:
        self.sessions_dock.show()
        self.sessions.setFocus()

    @Slot(object)
    def _show_approval(self, changes: object) -> None:
        approval = getattr(changes, "approval", None)
        if approval is None:
            return
        self.approval_action.blockSignals(True)  # showing the state is not a request
        self.approval_action.setChecked(approval)
        self.approval_action.blockSignals(False)
        self.badge.setToolTip(
            self.badge.toolTip().split(" (")[0]
            + (" (approval is on)" if approval else " (approval is off)")
        )

    @Slot(bool)
    def _approval_toggled(self, on: bool) -> None:
        def op(w: EngineWorker) -> OpResult:
            from engine import ops

            return ops.memory_set_approval(w.memory(), on)

        self.runner.run(op, initiator=self.approval_action).failure(
            lambda exc: self.chat.on_failed(str(exc))
        )

    @Slot()
    def show_pending(self) -> None:
        self.pending.show()

    @Slot(object)
    def _on_command_finished(self, result: dict[str, object]) -> None:
        if result.get("action") == "pending":
            self.pending.show()
        elif result.get("action") == "journey":
            self.show_journey()

    @Slot()
    def show_journey(self) -> None:
        _ = self.journey  # made before the dock shows, so it opens at its full size
        self.journey_dock.show()
        self.journey_dock.raise_()

    # The panel and the journey are refreshed separately, so for a moment their rows may
    # differ: the two are matched by the entry's text, never by position alone.

    @Slot(str, int)
    def _on_panel_selection(self, target: str, row: int) -> None:
        text = self.memory.boxes[target].model.entry(row) if target in self.memory.boxes else None
        if text is not None and self._journey is not None:
            self._journey.select_entry(target, row, text)

    @Slot(str)
    def _on_journey_selection(self, key: str) -> None:
        chunk = self.journey.chunk(key)
        row = -1
        if chunk is not None and chunk.alive:
            entries = self.memory.boxes[chunk.target.value].model.entries()
            row = entries.index(chunk.text) if chunk.text in entries else -1
        # Nothing selected, or not in the panel's entries: no row of the panel is it.
        self.memory.select_entry(chunk.target.value if row >= 0 and chunk else "", row)

    # -- showing what the engine read -----------------------------------------------------

    def _show_memory(self, changes: ChangeSet) -> None:
        self.memory.apply_changes(changes)
        self._last_memory = changes
        if self._first_state:
            self._first_state = False
            self.memoryShown.emit()
            self._start_scheduler()

    def _show_sessions(self, changes: ChangeSet) -> None:
        # The newest page again; the older pages loaded by scrolling stay.
        if changes.sessions is not None:
            self.sessions.show_page(0, changes.sessions, changes.sessions_total, keep_older=True)

    def _show_model(self, changes: ChangeSet) -> None:
        if changes.model is None:
            return
        self.setup.show_model(changes.model)
        # The panel decides whether it shows (no model, or the small built-in one); its
        # scroll area follows it.
        self.setup_area.setVisible(not self.setup.isHidden())
        self.chat.set_notifications(str(changes.model.get("notifications", "on")))
        name = changes.model.get("name") or "no model configured"
        self.statusBar().showMessage(f"{self.home.root} · {name}")

    @Slot()
    def _start_scheduler(self) -> None:
        # Not after shutdown: a state queued before the worker stopped may arrive later.
        if self.scheduler is not None and self._thread.isRunning() and not self.scheduler.running:
            self.scheduler.start()

    # -- layout and shutdown ---------------------------------------------------------------

    def _restore_layout(self) -> None:
        geometry = self._settings.value("geometry")
        state = self._settings.value("state")
        if isinstance(geometry, QByteArray):
            self.restoreGeometry(geometry)
        if isinstance(state, QByteArray):
            self.restoreState(state, LAYOUT_VERSION)

    @Slot(str, object)
    def _on_cron_finished(self, name: str, result: RunResult) -> None:
        text = f"cron job {name}: {result.status}"
        if result.error:
            text += f" ({result.error})"
        self.statusBar().showMessage(text, 10_000)
        self.chat.on_notice("cron", text, result.reply[:2000])

    @Slot(str)
    def _on_cron_problem(self, message: str) -> None:
        self.statusBar().showMessage(f"cron: {message}", 10_000)

    @Slot(int, int)
    def _on_import_indexed(self, done: int, left: int) -> None:
        # Substring searches are slower until an import's messages are all indexed: say how
        # far that has come, since it happens in the background.
        label = self.import_indexing
        if left:
            self._import_indexed_shown.stop()
            label.setText(f"Indexing imported messages for search: {left:,} left")
            label.setToolTip(
                "Every message is found already; substring searches are slower until this ends."
            )
        else:
            label.setText("Imported messages indexed")
            label.setToolTip("")
            self._import_indexed_shown.start()  # then out of the way
        label.show()

    def _save_layout(self) -> None:
        self._settings.setValue("geometry", self.saveGeometry())
        self._settings.setValue("state", self.saveState(LAYOUT_VERSION))
        self._settings.sync()

    def shutdown(self) -> None:
        if not self._thread.isRunning():
            return
        if self.watcher is not None:
            self.watcher.stop()
        if self.scheduler is not None:
            self.scheduler.stop()
        self.worker.cancel()
        self.runner.close()
        # Blocking, not queued: a queued stop posted while the worker finishes a reply would
        # never run once the thread quits, and the session would not be ended.
        QMetaObject.invokeMethod(self.worker, "stop", Qt.ConnectionType.BlockingQueuedConnection)
        self._thread.quit()
        self._thread.wait()

    def closeEvent(self, event: QCloseEvent) -> None:
        self._save_layout()
        # Off the screen first: ending the session waits for a background review still
        # writing (up to its grace period), and the user need not watch that happen.
        for window in (self, self.pending, self.settings_dialog, self.journey_dock):
            if window is not None and window.isWindow() and window.isVisible():
                window.hide()
        self.sessions.flush_deletes()  # queued before the worker stops: they still run
        self.shutdown()
        super().closeEvent(event)
