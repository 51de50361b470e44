"""The window's one way to change state, and the one signal that says what changed.

Every request a view makes runs on the single engine thread, through :class:`OpRunner`::

    runner.run(lambda engine: ops.memory_write(engine.memory(), target, operations),
               initiator=panel).success(panel.show_result).failure(panel.show_error)
    runner.query(lambda engine: read_state(engine)).success(panel.show_state)

``run`` is for an operation that changes state: its function returns an
:class:`engine.ops.OpResult`, and once ``success`` has been called the runner emits
:attr:`OpRunner.operationDidExecute` ``(changes, initiator)`` with the result's change set.
``query`` only reads, and emits nothing. Callbacks run on the GUI thread; a function that
raises reaches ``failure`` (or the log, when there is none).

Every view listens to ``operationDidExecute`` and refreshes only when the changes name its
data — :class:`Refresher` wires that for a view: which changes concern it, the query that reads
its data, the slot that shows it. The same signal carries what changed without an operation of
the window: edits on disk the file watcher reports (initiator ``"external"``) and writes other
threads publish on the engine's change events (the background review, cron jobs; their
initiator is their origin). An operation's own file writes are announced to the watcher
before they happen, so it does not report them back as a second change.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from PySide6.QtCore import QObject, QThread, Signal, Slot

if TYPE_CHECKING:
    from engine.changes import Changes

# The engine (pydantic with it) is imported on the engine thread, on first use: the window
# is on screen before it loads.
log = logging.getLogger(__name__)

T = TypeVar("T")
EXTERNAL = "external"


def changes_of_kinds(kinds: object) -> Changes:
    """The change set of the watcher's ``filesChanged`` kinds (a file under ``pending/`` may
    be any queue's)."""
    from engine.changes import PENDING_SUBSYSTEMS, Changes

    found = {str(k) for k in kinds} if isinstance(kinds, frozenset | set | list | tuple) else set()
    return Changes(
        targets=frozenset(found & {"memory", "user"}),
        skills="skills" in found,
        pending=frozenset(PENDING_SUBSYSTEMS) if "pending" in found else frozenset(),
    )


def error_result(exc: BaseException) -> dict[str, Any]:
    """A refused operation as the views show results: the error's own dict, or ``internal``."""
    from engine.errors import CairnError

    if isinstance(exc, CairnError):
        return exc.to_dict()
    return {"ok": False, "error": "internal", "message": str(exc)}


class Job(Generic[T]):
    """One request to the engine thread; chain ``success`` and ``failure`` right after
    :meth:`OpRunner.run` or :meth:`OpRunner.query` (it runs once control returns to Qt)."""

    def __init__(self, fn: Callable[[Any], T], *, op: bool, initiator: object) -> None:
        self.fn = fn
        self.op = op
        self.initiator = initiator
        self._success: Callable[[T], object] | None = None
        self._failure: Callable[[BaseException], object] | None = None

    def success(self, callback: Callable[[T], object]) -> Job[T]:
        self._success = callback
        return self

    def failure(self, callback: Callable[[BaseException], object]) -> Job[T]:
        self._failure = callback
        return self


class _Executor(QObject):
    """Lives on the engine thread; runs each job against the engine context."""

    finished = Signal(object, object, object)  # job, value, exception

    def __init__(self, context: object, expect_write: Callable[..., None] | None) -> None:
        super().__init__()
        self.context = context
        self.expect_write = expect_write
        self.first_job: Callable[[], None] | None = None

    @Slot(object)
    def execute(self, job: Job[Any]) -> None:
        from engine.fsutil import announcing

        if self.first_job is not None:
            first, self.first_job = self.first_job, None
            first()

        try:
            if job.op and self.expect_write is not None:
                with announcing(self.expect_write):
                    value = job.fn(self.context)
            else:
                value = job.fn(self.context)
        except Exception as exc:  # answered on the GUI thread, never raised into Qt
            self.finished.emit(job, None, exc)
            return
        self.finished.emit(job, value, None)


class OpRunner(QObject):
    """Runs operations and queries on the engine thread; see the module docstring."""

    # (Changes, initiator): the view (or other object) that asked, "external", or an origin.
    operationDidExecute = Signal(object, object)
    _submit = Signal(object)
    _published = Signal(object, object)

    def __init__(
        self,
        context: object,
        thread: QThread,
        *,
        expect_write: Callable[..., None] | None = None,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self._executor = _Executor(context, expect_write)
        self._executor.moveToThread(thread)
        thread.finished.connect(self._executor.deleteLater)
        self._submit.connect(self._executor.execute)
        self._executor.finished.connect(self._finished)
        self._published.connect(self._on_published)
        self._unsubscribe: Callable[[], None] | None = None
        self._closed = False
        self._executor.first_job = self._subscribe

    def set_expect_write(self, expect_write: Callable[..., None] | None) -> None:
        """Where an operation's file writes are announced before they happen (the watcher's
        ``expect_write``); set before the first operation."""
        self._executor.expect_write = expect_write

    def run(self, fn: Callable[[Any], Any], *, initiator: object = None) -> Job[Any]:
        """Run an operation (``fn(engine) -> OpResult``); announces its changes."""
        job: Job[Any] = Job(fn, op=True, initiator=initiator)
        self._submit.emit(job)
        return job

    def query(self, fn: Callable[[Any], T]) -> Job[T]:
        """Read something on the engine thread (``fn(engine) -> value``); announces nothing."""
        job: Job[T] = Job(fn, op=False, initiator=None)
        self._submit.emit(job)
        return job

    @Slot(object, object)
    def announce(self, changes: Changes, initiator: object) -> None:
        """Tell every view about changes made without an operation of this runner."""
        if changes:
            self.operationDidExecute.emit(changes, initiator)

    @Slot(object)
    def external(self, kinds: object) -> None:
        """The file watcher's ``filesChanged``: edits on disk someone else made."""
        self.announce(changes_of_kinds(kinds), EXTERNAL)

    def close(self) -> None:
        """Stop relaying the engine's change events (the window is closing)."""
        self._closed = True
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    # -- internals -----------------------------------------------------------------------

    def _subscribe(self) -> None:
        # On the engine thread, before its first job: the engine loads there.
        from engine.changes import events

        if not self._closed:
            self._unsubscribe = events.subscribe(self._relay)

    def _relay(self, changes: Changes, initiator: str) -> None:
        # On the publishing thread. An operation's changes come with its result; the rest
        # (another thread: the review, a cron job) cross to the GUI thread queued.
        from engine.changes import events

        if not events.collecting():
            self._published.emit(changes, initiator)

    @Slot(object, object)
    def _on_published(self, changes: Changes, initiator: object) -> None:
        self.announce(changes, initiator)

    @Slot(object, object, object)
    def _finished(self, job: Job[Any], value: object, error: BaseException | None) -> None:
        if error is not None:
            if job._failure is not None:
                job._failure(error)
            else:
                log.error("engine request failed", exc_info=error)
            return
        if job._success is not None:
            job._success(value)
        changes = getattr(value, "changes", None) if job.op else None
        if changes is not None:
            self.announce(changes, job.initiator)


class Refresher(QObject, Generic[T]):
    """Keep one view current: after each change ``wants`` accepts, read the view's data with
    ``query`` on the engine thread and hand it to ``show``, once.

    Changes that arrive while a read is on its way start one more read after it, never one
    per change.
    """

    def __init__(
        self,
        runner: OpRunner,
        wants: Callable[[Changes], bool],
        query: Callable[[Any], T],
        show: Callable[[T], object],
    ) -> None:
        super().__init__(runner)
        self.runner, self.wants, self.read, self.show = runner, wants, query, show
        self._reading = False
        self._again = False
        runner.operationDidExecute.connect(self._on_operation)

    @Slot(object, object)
    def _on_operation(self, changes: Changes, _initiator: object) -> None:
        if self.wants(changes):
            self.refresh()

    def refresh(self) -> None:
        if self._reading:
            self._again = True
            return
        self._reading = True
        self.runner.query(self.read).success(self._shown).failure(self._failed)

    def _shown(self, value: T) -> None:
        self._reading = False
        self.show(value)
        self._again_if_asked()

    def _failed(self, exc: BaseException) -> None:
        self._reading = False
        log.warning("a view's data could not be read: %s", exc)
        self._again_if_asked()

    def _again_if_asked(self) -> None:
        if self._again:
            self._again = False
            self.refresh()
