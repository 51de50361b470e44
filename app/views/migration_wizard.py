"""The OpenClaw migration wizard: pick a folder → preview → migrate with progress → report.

The preview is the engine's exact plan (``plan_migration``), and migrating applies that very
plan, so what the user approved is what happens; if memory changed in between, the engine
refuses and the wizard says so. Both run in a :class:`MigrationRunner` on the wizard's own
QThread, never on the GUI thread: planning a thousand daily logs takes seconds. Going back
or closing the wizard while a preview is being computed cancels it.
"""

from __future__ import annotations

import threading
from pathlib import Path

from PySide6.QtCore import QObject, Qt, QThread, Signal, Slot
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QTabWidget,
    QVBoxLayout,
    QWidget,
    QWizard,
    QWizardPage,
)

from engine.home import Home
from engine.migrate.cli import describe, visible
from engine.migrate.openclaw import (
    MigrationError,
    MigrationReport,
    Options,
    apply_migration,
    find_source,
    plan_migration,
)

LIST_CAP = 500  # rows per list; the full report tab and report.json hold everything
STAGES = {"read": "Reading files", "scan": "Checking entries", "write": "Writing"}


class MigrationRunner(QObject):
    """The wizard's engine work, living in the wizard's QThread.

    Requests arrive as queued signals; answers leave as signals. ``cancel`` is the one call
    made directly from the GUI thread: the runner is busy inside the plan it should stop.
    """

    progressed = Signal(str, int, int)  # stage, done, total
    planned = Signal(object)  # MigrationReport
    applied = Signal(object)  # MigrationReport
    failed = Signal(str, str)  # stage ("plan" | "apply"), message

    def __init__(self, home: Home) -> None:
        super().__init__()
        self.home = home
        self._stop = threading.Event()

    def cancel(self) -> None:
        self._stop.set()

    def _progress(self, stage: str, done: int, total: int) -> None:
        self.progressed.emit(stage, done, total)

    @Slot(object)
    def plan(self, options: Options) -> None:
        self._stop.clear()
        try:
            report = plan_migration(
                self.home, options, progress=self._progress, should_stop=self._stop.is_set
            )
        except MigrationError as exc:
            self.failed.emit("plan", exc.message)
            return
        except Exception as exc:  # shown in the wizard, never raised into Qt's event loop
            self.failed.emit("plan", f"{type(exc).__name__}: {exc}")
            return
        self.planned.emit(report)

    @Slot(object)
    def apply(self, report: MigrationReport) -> None:
        try:
            done = apply_migration(self.home, report, progress=self._progress)
        except MigrationError as exc:
            self.failed.emit("apply", exc.message)
            return
        except Exception as exc:
            self.failed.emit("apply", f"{type(exc).__name__}: {exc}")
            return
        self.applied.emit(done)


def _progress_text(stage: str, done: int, total: int) -> str:
    return f"{STAGES.get(stage, stage)}… {done:,} of {total:,}"


class SourcePage(QWizardPage):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setTitle("Choose the OpenClaw folder")
        self.setSubTitle(
            "Cairn reads it and changes nothing there. The next page shows exactly what the "
            "migration would do before anything is written."
        )
        self.folder = QLineEdit()
        self.folder.setObjectName("migration-source")
        self.folder.setPlaceholderText("~/.openclaw, or a workspace folder")
        self.folder.textChanged.connect(self.completeChanged)
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse_source)
        row = QHBoxLayout()
        row.addWidget(self.folder, 1)
        row.addWidget(browse)

        self.priority = QComboBox()
        self.priority.addItem("Newest entries first", "newest")
        self.priority.addItem("Oldest entries first", "oldest")
        self.overwrite = QCheckBox(
            "Migrated entries and files win over existing ones (those go to the backup)"
        )
        self.target = QLineEdit()
        self.target.setPlaceholderText("optional: a project folder for AGENTS.md")
        self.target.textChanged.connect(self.completeChanged)
        target_browse = QPushButton("Browse…")
        target_browse.clicked.connect(self._browse_target)
        target_row = QHBoxLayout()
        target_row.addWidget(self.target, 1)
        target_row.addWidget(target_browse)

        self.hint = QLabel()
        self.hint.setWordWrap(True)
        form = QFormLayout()
        form.addRow("Folder:", row)
        form.addRow("When not all fits:", self.priority)
        form.addRow("", self.overwrite)
        form.addRow("Copy AGENTS.md to:", target_row)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.hint)
        layout.addStretch(1)
        self._detect()

    def _detect(self) -> None:
        try:
            source = find_source()
        except MigrationError:
            self.hint.setText("No OpenClaw folder was found in the usual places; choose one.")
            return
        self.folder.setText(str(source.root))
        self.hint.setText(f"Found {source.root}.")

    def _browse_source(self) -> None:
        chosen = QFileDialog.getExistingDirectory(self, "OpenClaw folder", self.folder.text())
        if chosen:
            self.folder.setText(chosen)

    def _browse_target(self) -> None:
        chosen = QFileDialog.getExistingDirectory(self, "Project folder", self.target.text())
        if chosen:
            self.target.setText(chosen)

    def options(self) -> Options:
        target = self.target.text().strip()
        return Options(
            source=Path(self.folder.text().strip()).expanduser(),
            workspace_target=Path(target).expanduser() if target else None,
            overwrite=self.overwrite.isChecked(),
            priority=self.priority.currentData(),
        )

    def isComplete(self) -> bool:
        folder = self.folder.text().strip()
        target = self.target.text().strip()
        return (
            bool(folder)
            and Path(folder).expanduser().is_dir()
            and (not target or Path(target).expanduser().is_dir())
        )


class PreviewPage(QWizardPage):
    def __init__(self, wizard: MigrationWizard) -> None:
        super().__init__(wizard)
        self._wizard = wizard
        self.setTitle("Preview")
        self.setSubTitle("What the migration would do. Nothing has been written yet.")
        self.setCommitPage(True)
        self.setButtonText(QWizard.WizardButton.CommitButton, "Migrate")
        self.report: MigrationReport | None = None
        self.error: str | None = None

        self.status = QLabel()
        self.status.setWordWrap(True)
        self.bar = QProgressBar()
        self.summary = QLabel()
        self.summary.setObjectName("migration-summary")
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.tabs = QTabWidget()
        self.blocked = QListWidget()
        self.overflow = QListWidget()
        self.skipped = QListWidget()
        self.full = QPlainTextEdit()
        self.full.setReadOnly(True)
        self.tabs.addTab(self.blocked, "Blocked")
        self.tabs.addTab(self.overflow, "Did not fit")
        self.tabs.addTab(self.skipped, "Skipped files")
        self.tabs.addTab(self.full, "Full report")
        layout = QVBoxLayout(self)
        layout.addWidget(self.status)
        layout.addWidget(self.bar)
        layout.addWidget(self.summary)
        layout.addWidget(self.tabs, 1)

    def initializePage(self) -> None:
        self.report, self.error = None, None
        self.status.setText("Reading the OpenClaw folder…")
        self.bar.setRange(0, 0)
        self.bar.show()
        self.summary.clear()
        for widget in (self.blocked, self.overflow, self.skipped, self.full):
            widget.clear()
        self.tabs.hide()
        self.completeChanged.emit()
        self._wizard.start_plan()

    def cleanupPage(self) -> None:
        self._wizard.cancel_plan()  # going back while the preview is being computed

    @Slot(str, int, int)
    def show_progress(self, stage: str, done: int, total: int) -> None:
        if self.report is not None or self.error is not None:
            return
        self.bar.setRange(0, max(total, 1))
        self.bar.setValue(done)
        self.status.setText(_progress_text(stage, done, total))

    def show_error(self, message: str) -> None:
        self.error = message
        self.bar.hide()
        self.status.setText(f"<b>Cannot migrate:</b> {message}")
        self.completeChanged.emit()

    def show_report(self, report: MigrationReport) -> None:
        self.report = report
        self.bar.hide()
        c = report.counts
        if report.writes_anything:
            self.status.setText(f"From {report.source.workspace}:")
        else:
            self.status.setText(
                f"From {report.source.workspace}: <b>nothing to change</b>, everything is "
                "already migrated."
            )
        lines = [
            f"<b>{c.parsed:,}</b> entries found: <b>{c.imported:,}</b> to import, "
            f"{c.already_present:,} already there, {c.duplicate:,} duplicates, "
            f"{c.near_duplicate:,} near duplicates, <b>{c.blocked:,}</b> blocked, "
            f"{c.invalid:,} invalid, <b>{c.overflow:,}</b> do not fit."
        ]
        for plan in report.targets:
            change = f"+{len(plan.add):,}" + (f", −{len(plan.remove):,}" if plan.remove else "")
            lines.append(
                f"{plan.target.filename}: {plan.chars_before:,} → {plan.chars_after:,} of "
                f"{plan.limit:,} chars ({change} entries)"
            )
        for copy in report.copies:
            lines.append(
                f"{copy.name}: {copy.action}" + (f" — {copy.reason}" if copy.reason else "")
            )
        self.summary.setText("<br>".join(lines))
        _fill(
            self.blocked,
            [
                f"{e.file}:{e.line}  [{', '.join(e.categories)}]  {e.text}"
                for e in report.outcomes("blocked")
            ],
        )
        _fill(
            self.overflow,
            [f"{e.file or 'existing'}:{e.line or '-'}  {e.text}" for e in report.overflowing],
        )
        _fill(
            self.skipped, [f"{f.path}: {f.reason}" for f in report.files if f.status == "skipped"]
        )
        self.tabs.setTabText(0, f"Blocked ({c.blocked:,})")
        self.tabs.setTabText(1, f"Did not fit ({len(report.overflowing):,})")
        self.tabs.setTabText(2, f"Skipped files ({self.skipped.count():,})")
        self.full.setPlainText(describe(report))
        self.tabs.show()
        self.completeChanged.emit()

    def isComplete(self) -> bool:
        return self.report is not None


def _fill(widget: QListWidget, rows: list[str]) -> None:
    widget.clear()
    for row in rows[:LIST_CAP]:
        shown = visible(row)
        item = QListWidgetItem(" ".join(shown.split()))
        item.setToolTip(shown)
        widget.addItem(item)
    if len(rows) > LIST_CAP:
        widget.addItem(f"… and {len(rows) - LIST_CAP:,} more (see the full report)")


class RunPage(QWizardPage):
    def __init__(self, wizard: MigrationWizard) -> None:
        super().__init__(wizard)
        self._wizard = wizard
        self.setTitle("Migrating")
        self.status = QLabel()
        self.status.setWordWrap(True)
        self.bar = QProgressBar()
        layout = QVBoxLayout(self)
        layout.addWidget(self.status)
        layout.addWidget(self.bar)
        layout.addStretch(1)
        self.done: MigrationReport | None = None

    def initializePage(self) -> None:
        self.done = None
        self.status.setText("Writing the backup, then the memory files…")
        self.bar.setRange(0, 0)
        self._wizard.start_apply()

    @Slot(str, int, int)
    def show_progress(self, stage: str, done: int, total: int) -> None:
        self.bar.setRange(0, max(total, 1))
        self.bar.setValue(done)
        self.status.setText(_progress_text(stage, done, total))

    def show_error(self, message: str) -> None:
        self.bar.hide()
        self.status.setText(f"<b>The migration stopped:</b> {message}")

    def isComplete(self) -> bool:
        return self.done is not None


class ReportPage(QWizardPage):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setTitle("Done")
        self.headline = QLabel()
        self.headline.setObjectName("migration-headline")
        self.headline.setWordWrap(True)
        self.headline.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.text = QPlainTextEdit()
        self.text.setReadOnly(True)
        layout = QVBoxLayout(self)
        layout.addWidget(self.headline)
        layout.addWidget(self.text, 1)

    def show_report(self, report: MigrationReport) -> None:
        if report.migration_dir is None:
            self.headline.setText("Nothing was changed: everything was already migrated.")
        else:
            imported = sum(len(t.add) for t in report.targets)
            parts = [
                f"<b>{imported:,}</b> entries imported, {report.counts.blocked:,} blocked, "
                f"{len(report.overflowing):,} did not fit.",
                f"Backup of the previous state: {report.backup}",
            ]
            if report.overflow_file:
                parts.append(f"Entries that did not fit: {report.overflow_file}")
            parts.append(f"Full report: {report.report_file}")
            parts.append("New memories take effect in the next session.")
            parts += [f"Warning: {w}" for w in report.warnings]
            self.headline.setText("<br>".join(parts))
        self.text.setPlainText(describe(report))


class MigrationWizard(QWizard):
    """``MigrationWizard(home, parent)``: the whole migration, from choosing the folder to
    the report. Engine work runs on the wizard's own thread; closing the wizard stops it."""

    planRequested = Signal(object)  # Options
    applyRequested = Signal(object)  # MigrationReport
    migrated = Signal(object)  # the applied MigrationReport, for views that want to refresh

    SOURCE, PREVIEW, RUN, REPORT = range(4)

    def __init__(self, home: Home, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Import from OpenClaw")
        self.setObjectName("migration-wizard")
        self.home = home
        self.source_page = SourcePage(self)
        self.preview_page = PreviewPage(self)
        self.run_page = RunPage(self)
        self.report_page = ReportPage(self)
        self.setPage(self.SOURCE, self.source_page)
        self.setPage(self.PREVIEW, self.preview_page)
        self.setPage(self.RUN, self.run_page)
        self.setPage(self.REPORT, self.report_page)
        self.resize(760, 560)
        # After the commit there is nothing to go back to, and nothing left to cancel.
        self.setOption(QWizard.WizardOption.NoBackButtonOnLastPage, True)
        self.setOption(QWizard.WizardOption.NoCancelButtonOnLastPage, True)

        self._thread = QThread(self)
        self._thread.setObjectName("cairn-migration")
        self.runner = MigrationRunner(home)
        self.runner.moveToThread(self._thread)
        self._thread.finished.connect(self.runner.deleteLater)
        self.planRequested.connect(self.runner.plan)
        self.applyRequested.connect(self.runner.apply)
        self.runner.progressed.connect(self._progressed)
        self.runner.planned.connect(self._planned)
        self.runner.applied.connect(self._applied)
        self.runner.failed.connect(self._failed)
        self._plans = 0  # requests sent; answers to older ones are ignored
        self._answered = 0
        self._thread.start()

    # -- requests --------------------------------------------------------------------------

    def start_plan(self) -> None:
        self._plans += 1
        self.planRequested.emit(self.source_page.options())

    def cancel_plan(self) -> None:
        self.runner.cancel()

    def start_apply(self) -> None:
        report = self.preview_page.report
        assert report is not None  # the preview page is complete only with a report
        self.button(QWizard.WizardButton.CancelButton).setEnabled(False)
        self.applyRequested.emit(report)

    # -- answers (queued onto the GUI thread) ----------------------------------------------

    def _current_answer(self) -> bool:
        # A preview cancelled by going back still answers (as cancelled); only the newest
        # request's answer may reach the page.
        self._answered += 1
        return self._answered == self._plans

    @Slot(str, int, int)
    def _progressed(self, stage: str, done: int, total: int) -> None:
        if self.currentId() == self.PREVIEW:
            self.preview_page.show_progress(stage, done, total)
        elif self.currentId() == self.RUN:
            self.run_page.show_progress(stage, done, total)

    @Slot(object)
    def _planned(self, report: MigrationReport) -> None:
        if self._current_answer() and self.currentId() == self.PREVIEW:
            self.preview_page.show_report(report)

    @Slot(object)
    def _applied(self, report: MigrationReport) -> None:
        self.run_page.done = report
        self.report_page.show_report(report)
        self.button(QWizard.WizardButton.CancelButton).setEnabled(True)
        self.run_page.completeChanged.emit()
        self.next()
        self.migrated.emit(report)

    @Slot(str, str)
    def _failed(self, stage: str, message: str) -> None:
        if stage == "plan":
            if self._current_answer() and self.currentId() == self.PREVIEW:
                self.preview_page.show_error(message)
            return
        self.run_page.show_error(message)
        self.button(QWizard.WizardButton.CancelButton).setEnabled(True)
        self.button(QWizard.WizardButton.CancelButton).setText("Close")

    # -- shutting down ---------------------------------------------------------------------

    def shutdown(self) -> None:
        """Stop the engine thread (a preview in progress is cancelled; a write in progress,
        which is short, is waited for)."""
        if not self._thread.isRunning():
            return
        self.runner.cancel()
        self._thread.quit()
        self._thread.wait()

    def done(self, result: int) -> None:
        self.shutdown()
        super().done(result)

    def closeEvent(self, event: QCloseEvent) -> None:
        self.shutdown()
        super().closeEvent(event)
