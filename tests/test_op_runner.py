"""The window's one way to change state: operations on the engine thread, one change signal,
views refreshed only when their data changed. Real window, real worker thread, real watcher,
real files."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any

from PySide6.QtCore import QThread
from pytestqt.qtbot import QtBot

from app import state
from app.main_window import MainWindow
from app.ops import OpRunner, Refresher, changes_of_kinds
from app.watcher import digest
from app.worker import EngineWorker
from engine import ops
from engine.changes import Changes, events
from engine.home import Home
from engine.memory.entries import Target, parse
from engine.memory.service import MemoryService
from engine.pending import PendingWrites
from tests.test_app_window import open_window
from tests.test_memory_panel import submit

QUERIES = {
    state.memory_state: "memory panel",
    state.pending_state: "pending dialog",
    state.pending_count_state: "pending badge",
    state.approval_state: "approval action",
    state.sessions_state: "session list",
    state.model_state: "model and status",
    state.journey_state: "journey",
}


def refreshers(window: MainWindow) -> dict[str, Refresher[Any]]:
    found = [QUERIES[r.read] for r in window.runner.findChildren(Refresher)]
    # Every view is bound, once (the journey once it has been made).
    expected = [v for v in QUERIES.values() if v != "journey" or window._journey is not None]
    assert sorted(found) == sorted(expected)
    return {QUERIES[r.read]: r for r in window.runner.findChildren(Refresher)}
    return found


def settled(window: MainWindow) -> bool:
    return not any(r._reading or r._again for r in window.runner.findChildren(Refresher))


def count_refreshes(views: dict[str, Refresher[Any]]) -> Counter[str]:
    counts: Counter[str] = Counter()
    for name, refresher in views.items():
        show = refresher.show

        def counted(value: object, name: str = name, show: Any = show) -> object:
            counts[name] += 1
            return show(value)

        refresher.show = counted
    return counts


def watcher_saw(window: MainWindow, path: Path) -> bool:
    """Whether the watcher has settled ``path`` at its current content (its echo handled)."""
    assert window.watcher is not None
    key = Path(os.path.abspath(path))
    return window.watcher._known.get(key) == digest(path.read_bytes())


def test_one_panel_edit_refreshes_exactly_the_views_whose_data_changed_once(
    qtbot: QtBot, home: Home
) -> None:
    window = open_window(qtbot, home)
    _ = window.journey  # made, not shown: it marks itself out of date
    views = refreshers(window)
    qtbot.waitUntil(lambda: window.setup.isVisible() and settled(window), timeout=15_000)

    counts = count_refreshes(views)
    announced: list[tuple[Changes, object]] = []
    window.runner.operationDidExecute.connect(lambda c, i: announced.append((c, i)))
    reported: list[object] = []
    assert window.watcher is not None
    window.watcher.filesChanged.connect(reported.append)

    panel, memory_md = window.memory, home.memories_dir / "MEMORY.md"
    box = panel.boxes["memory"]
    submit(qtbot, panel, box, "Deploys go through CI")
    qtbot.waitUntil(lambda: box.model.entries() == ["Deploys go through CI"], timeout=10_000)
    assert parse(memory_md.read_text(encoding="utf-8")) == ["Deploys go through CI"]
    # The watcher has seen the file at its new content and said nothing: the write was the
    # window's own, announced before it happened.
    qtbot.waitUntil(lambda: watcher_saw(window, memory_md) and settled(window), timeout=10_000)
    assert reported == []

    assert announced == [(Changes(targets=frozenset({"memory"})), panel)]
    # The memory panel shows the file; the dialog previews staged edits against its entries;
    # the journey shows its history. Nothing else reads MEMORY.md.
    assert counts == Counter({"memory panel": 1, "pending dialog": 1, "journey": 1})
    assert window.journey.stale

    # An edit by hand is someone else's: reported once, as external, to the same views.
    user_md = home.memories_dir / "USER.md"
    user_md.write_text("Name: Ada\n", encoding="utf-8")
    qtbot.waitUntil(lambda: entries_of(window, "user") == ["Name: Ada"], timeout=10_000)
    qtbot.waitUntil(lambda: settled(window), timeout=10_000)
    assert reported == [frozenset({"user"})]
    assert announced[1:] == [(Changes(targets=frozenset({"user"})), "external")]
    assert counts == Counter({"memory panel": 2, "pending dialog": 2, "journey": 2})


def entries_of(window: MainWindow, target: str) -> list[str]:
    return window.memory.boxes[target].model.entries()


def test_a_staged_write_refreshes_the_queue_views_and_not_the_panel(
    qtbot: QtBot, home: Home
) -> None:
    from engine.config import update_config

    update_config(home, {"memory": {"write_approval": True}})
    window = open_window(qtbot, home)
    views = refreshers(window)
    qtbot.waitUntil(lambda: window.setup.isVisible() and settled(window), timeout=15_000)
    counts = count_refreshes(views)

    panel = window.memory
    box = panel.boxes["memory"]
    submit(qtbot, panel, box, "Deploys go through CI")
    qtbot.waitUntil(lambda: window.badge.count == 1, timeout=10_000)
    qtbot.waitUntil(lambda: settled(window), timeout=10_000)
    assert box.result.text().startswith("Staged for approval")
    assert counts == Counter({"pending dialog": 1, "pending badge": 1})


# -- the runner on its own ---------------------------------------------------------------------


def test_success_failure_and_queries_run_on_the_engine_thread(qtbot: QtBot, home: Home) -> None:
    thread = QThread()
    worker = EngineWorker(home)
    worker.moveToThread(thread)
    runner = OpRunner(worker, thread)
    thread.start()
    try:
        seen: list[tuple[str, object]] = []
        announced: list[tuple[Changes, object]] = []
        runner.operationDidExecute.connect(lambda c, i: announced.append((c, i)))

        def write(w: EngineWorker) -> ops.OpResult:
            seen.append(("thread", QThread.currentThread() is thread))
            return ops.memory_write(w.memory(), Target.USER, [{"action": "add", "content": "Ada"}])

        runner.run(write, initiator="test").success(lambda r: seen.append(("ok", r.status)))
        runner.run(
            lambda w: ops.memory_write(w.memory(), Target.USER, [{"action": "explode"}]),
            initiator="test",
        ).failure(lambda exc: seen.append(("refused", getattr(exc, "code", None))))
        runner.query(lambda w: w.memory().read(Target.USER).entries).success(
            lambda entries: seen.append(("read", entries))
        )
        qtbot.waitUntil(lambda: len(seen) == 4, timeout=10_000)
        assert seen == [
            ("thread", True),
            ("ok", "applied"),
            ("refused", "invalid"),
            ("read", ["Ada"]),
        ]
        # Only the operation that changed something is announced; a refusal and a read are not.
        assert announced == [(Changes(targets=frozenset({"user"})), "test")]
    finally:
        runner.close()
        thread.quit()
        assert thread.wait(10_000)


def test_writes_from_another_thread_are_announced_with_their_origin(
    qtbot: QtBot, home: Home
) -> None:
    """The background review and cron jobs write through the engine on threads of their own:
    the engine's change event reaches the views through the same signal."""
    import threading

    thread = QThread()
    worker = EngineWorker(home)
    worker.moveToThread(thread)
    runner = OpRunner(worker, thread)
    thread.start()
    try:
        opened: list[object] = []
        runner.query(lambda w: w.memory()).success(opened.append)
        qtbot.waitUntil(lambda: bool(opened), timeout=10_000)  # subscribed on the engine thread
        announced: list[tuple[Changes, object]] = []
        runner.operationDidExecute.connect(lambda c, i: announced.append((c, i)))
        service = MemoryService(home)
        writer = threading.Thread(
            target=service.write,
            args=(Target.MEMORY, [{"action": "add", "content": "From the review"}]),
            kwargs={"origin": "background_review"},
        )
        writer.start()
        writer.join()
        qtbot.waitUntil(lambda: bool(announced), timeout=10_000)
        assert announced == [(Changes(targets=frozenset({"memory"})), "background_review")]
    finally:
        runner.close()
        thread.quit()
        assert thread.wait(10_000)


# -- the engine's operations -------------------------------------------------------------------


def test_operations_return_what_they_changed(home: Home, service: MemoryService) -> None:
    from engine.config import load_config

    heard: list[tuple[Changes, str]] = []
    unsubscribe = events.subscribe(lambda c, i: heard.append((c, i)))
    try:
        added = ops.memory_write(service, Target.MEMORY, [{"action": "add", "content": "A"}])
        assert added.status == "applied" and added.changes == Changes(targets=frozenset({"memory"}))
        again = ops.memory_write(service, Target.MEMORY, [{"action": "add", "content": "A"}])
        assert again.status == "unchanged" and not again.changes

        approval = ops.memory_set_approval(service, True)
        assert approval.changes == Changes(config=frozenset({"memory.write_approval"}))
        staged = ops.memory_write(service, Target.USER, [{"action": "add", "content": "B"}])
        assert staged.status == "staged" and staged.changes == Changes(
            pending=frozenset({"memory"})
        )
        pending = PendingWrites(home, service)
        approved = ops.pending_approve(pending, staged.result["pending_id"])
        assert approved.changes == Changes(
            targets=frozenset({"user"}), pending=frozenset({"memory"})
        )

        undone = ops.memory_undo(service)
        assert undone.changes == Changes(targets=frozenset({"user"}))
        config = ops.config_update(home, {"display": {"memory_notifications": "off"}})
        assert config.changes == Changes(config=frozenset({"display.memory_notifications"}))
        assert load_config(home).display.memory_notifications == "off"
    finally:
        unsubscribe()
    # Observers heard each committed change once, as the results said.
    changed = [r for r in (added, approval, staged, approved, undone, config)]
    assert [c for c, _ in heard] == [r.changes for r in changed]


def test_the_watcher_kinds_are_the_parts_of_state_they_name() -> None:
    assert changes_of_kinds(frozenset({"memory", "skills"})) == Changes(
        targets=frozenset({"memory"}), skills=True
    )
    assert changes_of_kinds(frozenset({"pending"})).pending == {"memory", "skills", "facts"}
    assert not changes_of_kinds(frozenset())
