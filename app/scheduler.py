"""Cron jobs while the desktop app is open.

:class:`CronScheduler` lives on the GUI thread and owns a timer; every ``interval_ms`` (30 s by
default) it asks a worker on its own QThread to run whatever is due. The worker runs jobs one
after another with :func:`engine.cron.tick`, so a model call never blocks the window, and the
per-job run lock keeps it from colliding with ``cairn cron tick`` run by system cron.

A check is never queued behind a running one: while the worker is busy, timer ticks are
dropped, and the next check after it finishes picks up anything that fell due meanwhile.
``stop`` cancels the run in progress (its transcript and output are kept, status
``cancelled``) and joins the thread.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QThread, QTimer, Signal, Slot

from engine.home import Home

if TYPE_CHECKING:
    from engine import cron
    from engine.agent import Agent

log = logging.getLogger(__name__)

CHECK_INTERVAL_MS = 30_000
# Statuses that mean a job actually ran; "busy" (another scheduler has it) and "not_due" (it
# ran elsewhere since the check began) are not news.
RAN = ("ok", "error", "cancelled")


class _CronWorker(QObject):
    finished = Signal(str, object)  # job name, cron.RunResult
    idle = Signal()  # a check pass ended
    problem = Signal(str)
    indexed = Signal(int, int)  # imported messages indexed by this pass, messages still left

    def __init__(self, home: Home) -> None:
        super().__init__()
        self.home = home
        self._stopping = threading.Event()
        self._guard = threading.Lock()
        self._agent: Agent | None = None

    @Slot()
    def check(self) -> None:
        try:
            if self._stopping.is_set():
                return
            # Imported here, on this thread: it brings in most of the engine, which the
            # window should not wait for.
            from engine import cron

            report = cron.tick(
                self.home,
                trigger="app",
                on_agent=self._running,
                should_stop=self._stopping.is_set,
                on_result=self._ran,
            )
            for text in report.problems:
                self.problem.emit(text)
            if report.indexed:
                self.indexed.emit(report.indexed, report.index_left)
        except Exception as exc:  # a broken jobs.yaml must not take the thread down
            log.exception("cron check failed")
            self.problem.emit(str(exc))
        finally:
            with self._guard:
                self._agent = None
            self.idle.emit()

    def _running(self, agent: Agent) -> None:
        with self._guard:
            self._agent = agent
        if self._stopping.is_set():
            agent.cancel()

    def _ran(self, result: cron.RunResult) -> None:
        with self._guard:
            self._agent = None
        if result.status in RAN:
            self.finished.emit(result.job, result)

    def cancel(self) -> None:
        """From any thread: stop the run in progress and start no other."""
        self._stopping.set()
        with self._guard:
            agent = self._agent
        if agent is not None:
            agent.cancel()


class CronScheduler(QObject):
    jobFinished = Signal(str, object)  # job name, cron.RunResult
    problem = Signal(str)  # jobs.yaml trouble, worth a status-bar line
    # A check pass filled part of what a large import left to the session indexes
    # (engine/sessions/backlog.py): messages indexed, messages still left.
    importIndexed = Signal(int, int)
    checked = Signal()  # a check pass ended, whether or not anything ran
    _checkRequested = Signal()

    def __init__(
        self, home: Home, parent: QObject | None = None, *, interval_ms: int = CHECK_INTERVAL_MS
    ) -> None:
        super().__init__(parent)
        self.home = home
        self._busy = False
        self._stopped = False
        self._thread = QThread(self)
        self._thread.setObjectName("cairn-cron")
        self._worker = _CronWorker(home)
        self._worker.moveToThread(self._thread)
        self._thread.finished.connect(self._worker.deleteLater)
        self._checkRequested.connect(self._worker.check)
        self._worker.finished.connect(self.jobFinished)
        self._worker.problem.connect(self.problem)
        self._worker.indexed.connect(self.importIndexed)
        self._worker.idle.connect(self._on_idle)
        self._timer = QTimer(self)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self.check_now)

    @property
    def running(self) -> bool:
        return self._thread.isRunning()

    @property
    def busy(self) -> bool:
        """A check (and maybe a run) is in progress on the worker thread."""
        return self._busy

    def start(self) -> None:
        if self._stopped:
            raise RuntimeError("a stopped CronScheduler cannot start again; make a new one")
        if self.running:
            return
        self._thread.start()
        self._timer.start()
        self.check_now()  # jobs that fell due while the app was closed run now, not in 30 s

    @Slot()
    def check_now(self) -> None:
        if not self.running or self._busy:
            return
        self._busy = True
        self._checkRequested.emit()

    @Slot()
    def _on_idle(self) -> None:
        self._busy = False
        self.checked.emit()

    def stop(self) -> None:
        """Stop checking, cancel a run in progress and join the thread. Idempotent and final."""
        self._timer.stop()
        if not self.running:
            return
        self._stopped = True
        self._worker.cancel()
        self._thread.quit()
        self._thread.wait()
        self._busy = False
