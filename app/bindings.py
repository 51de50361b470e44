"""How each view is tied to the engine: its requests become operations on the runner, its
data is read again when an operation's changes name it.

One function per view, used by the main window and by tests that drive a view on its own;
adding a view means adding its function here (and its query to :mod:`app.state`), never
editing the worker.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import QTimer

from app import state
from app.ops import OpRunner, Refresher, error_result
from app.state import ChangeSet

if TYPE_CHECKING:
    from app.views.journey_view import JourneyView
    from app.views.memory_panel import MemoryPanel
    from app.views.pending_dialog import PendingBadge, PendingDialog
    from app.worker import EngineWorker
    from engine.changes import Changes
    from engine.ops import OpResult


def bind(
    runner: OpRunner,
    wants: Callable[[Changes], bool],
    query: Callable[[EngineWorker], ChangeSet],
    show: Callable[[ChangeSet], object],
) -> Refresher[ChangeSet]:
    """Refresh a view with ``query``'s data after each change ``wants`` accepts."""
    return Refresher(runner, wants, query, show)


def bind_memory_panel(
    runner: OpRunner, panel: MemoryPanel, show: Callable[[ChangeSet], object] | None = None
) -> Refresher[ChangeSet]:
    """The panel's edits: the same lock, scanner, limits and approval gate as the model's
    tool, recorded with origin ``foreground`` and no session (a person's edit belongs to no
    conversation); answers go back to the box that asked, in the
    order asked."""

    def edit(target: str, operations: object) -> None:
        from engine import ops
        from engine.memory.entries import Target

        runner.run(
            lambda w: ops.memory_write(w.memory(), Target(target), operations, by_hand=True),
            initiator=panel,
        ).success(lambda r: panel.show_edit_result(r.result)).failure(
            lambda exc: panel.show_edit_result(error_result(exc))
        )

    def undo() -> None:
        from engine import ops

        runner.run(lambda w: ops.memory_undo(w.memory()), initiator=panel).success(
            lambda r: panel.show_undo_result(r.result)
        ).failure(lambda exc: panel.show_undo_result(error_result(exc)))

    panel.editRequested.connect(edit)
    panel.undoRequested.connect(undo)
    return bind(runner, state.memory_changed, state.memory_state, show or panel.apply_changes)


def bind_pending_dialog(runner: OpRunner, dialog: PendingDialog) -> Refresher[ChangeSet]:
    """Approve, reject and settle-all of any subsystem's staged writes."""

    def settle(op_name: str, pending_id: str) -> None:
        def op(w: EngineWorker) -> OpResult:
            from engine import ops

            settled: Callable[..., OpResult] = getattr(ops, op_name)
            return settled(w.pending(), pending_id)

        def failed(exc: BaseException) -> None:
            dialog.show_result({**error_result(exc), "pending_id": pending_id})

        runner.run(op, initiator=dialog).success(lambda r: dialog.show_result(r.result)).failure(
            failed
        )

    def settle_all(approve: bool) -> None:
        def op(w: EngineWorker) -> OpResult:
            from engine import ops

            return ops.pending_settle_all(w.pending(), approve)

        def shown(result: OpResult) -> None:
            for outcome in result.result.get("outcomes", []):
                dialog.show_result(outcome)

        runner.run(op, initiator=dialog).success(shown).failure(
            lambda exc: dialog.show_result(error_result(exc))
        )

    dialog.approveRequested.connect(lambda i: settle("pending_approve", i))
    dialog.rejectRequested.connect(lambda i: settle("pending_reject", i))
    dialog.settleAllRequested.connect(settle_all)
    return bind(runner, state.pending_or_memory_changed, state.pending_state, dialog.apply_changes)


def bind_pending_badge(runner: OpRunner, badge: PendingBadge) -> Refresher[ChangeSet]:
    return bind(runner, state.pending_changed, state.pending_count_state, badge.apply_changes)


def bind_journey(runner: OpRunner, view: JourneyView) -> Refresher[ChangeSet]:
    """The journey: loaded (and laid out) on the engine thread so the GUI thread only draws;
    its edit and delete go through the memory write path with a check that the chunk shown is
    still there."""

    def load(w: EngineWorker) -> object:
        # numpy and networkx come with these: loaded when the journey is first opened.
        from app.models.journey_model import bundle
        from engine.journey import JourneyBuilder, load_journey

        if w.journey_builder is None:
            w.journey_builder = JourneyBuilder()
        return bundle(load_journey(w.memory(), builder=w.journey_builder))

    def reload() -> None:
        # Every request gets an answer: the view waits for one.
        runner.query(load).success(view.set_bundle).failure(
            lambda exc: view.set_bundle(f"the journey could not be built: {exc}")
        )

    def write(op: Callable[[EngineWorker], OpResult]) -> None:
        runner.run(op, initiator=view).success(lambda r: view.show_edit_result(r.result)).failure(
            lambda exc: view.show_edit_result(error_result(exc))
        )

    view.reloadRequested.connect(reload)

    def edit(w: EngineWorker, node: str, text: str | None) -> OpResult:
        from engine import ops

        if text is None:
            return ops.journey_delete(w.memory(), node)
        return ops.journey_edit(w.memory(), node, text)

    view.editRequested.connect(lambda node, text: write(lambda w: edit(w, node, text)))
    view.deleteRequested.connect(lambda node: write(lambda w: edit(w, node, None)))
    return bind(runner, state.journey_changed, state.journey_state, view.apply_changes)


def start(runner: OpRunner) -> None:
    """Open the home: memory first (the panel need not wait for the model), then the agent.
    The agent's failure is the worker's ``failed`` signal; memory's is said by the agent's."""

    def open_agent(*_: object) -> None:
        runner.run(lambda w: w.open_agent(), initiator="start")

    # The agent is asked for only once memory's change set has gone out (a zero timer runs
    # after it), so the views' reads of memory queue on the engine thread before the agent
    # opens, which can take seconds (the model's SDK, the server's window): submitted at
    # once, the panel waited for the agent.
    runner.run(lambda w: w.open_memory(), initiator="start").success(
        lambda _r: QTimer.singleShot(0, open_agent)
    ).failure(open_agent)
