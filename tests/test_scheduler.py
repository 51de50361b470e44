"""CronScheduler: due jobs run on the scheduler's own thread while the window stays live,
overlapping checks are dropped, a job another scheduler holds is skipped, and stop() cancels a
run in progress."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest
import yaml
from PySide6.QtCore import QTimer
from pytestqt.qtbot import QtBot

from app.scheduler import CronScheduler
from engine import cron
from engine.config import update_config
from engine.home import Home
from engine.sessions.store import SessionStore
from tests.scripted_server import ScriptedServer, Step, reply

TICK_MS = 40


class Gate:
    """Holds each chat request in the scripted server until released."""

    def __init__(self, server: ScriptedServer) -> None:
        self.arrived = threading.Event()
        self.released = threading.Event()
        server.responders.append(self)

    def __call__(self, body: dict[str, Any]) -> Step | None:
        self.arrived.set()
        self.released.wait(60)
        return reply("checked by the app")


@pytest.fixture
def gate(model_home: Home, scripted: ScriptedServer) -> Iterator[Gate]:
    # Far longer than any test: a run that ends must end by release or cancel, not timeout.
    update_config(model_home, {"model": {"timeout": 300}})
    held = Gate(scripted)
    yield held
    held.released.set()


@pytest.fixture
def scheduler(qtbot: QtBot, model_home: Home) -> Iterator[CronScheduler]:
    made = CronScheduler(model_home, interval_ms=TICK_MS)
    yield made
    made.stop()


def due_job(home: Home, name: str = "watch") -> None:
    cron.add_job(home, name, "every 1h", "Anything new?")
    path = home.cron_dir / "jobs.yaml"
    data = yaml.safe_load(path.read_text())
    for job in data["jobs"]:
        job["created_at"] = (datetime.now().astimezone() - timedelta(hours=2)).isoformat()
    path.write_text(yaml.safe_dump(data))


def wait_checks(qtbot: QtBot, scheduler: CronScheduler, count: int) -> None:
    seen = []
    scheduler.checked.connect(lambda: seen.append(1))
    qtbot.waitUntil(lambda: len(seen) >= count, timeout=10_000)


def test_a_due_job_runs_off_the_gui_thread(
    qtbot: QtBot, model_home: Home, scripted: ScriptedServer, gate: Gate, scheduler: CronScheduler
) -> None:
    due_job(model_home)
    finished: list[tuple[str, cron.RunResult]] = []
    scheduler.jobFinished.connect(lambda name, result: finished.append((name, result)))
    scheduler.start()
    qtbot.waitUntil(gate.arrived.is_set, timeout=10_000)
    # The model call is in progress; the GUI thread still runs its event loop.
    fired: list[bool] = []
    QTimer.singleShot(0, lambda: fired.append(True))
    qtbot.waitUntil(lambda: bool(fired), timeout=2_000)
    assert scheduler.busy
    gate.released.set()
    qtbot.waitUntil(lambda: bool(finished), timeout=10_000)
    name, result = finished[0]
    assert name == "watch" and result.status == "ok" and result.trigger == "app"
    assert result.reply == "checked by the app"
    # Many timer ticks passed during the run; none queued a second run, and later checks find
    # the job not due.
    wait_checks(qtbot, scheduler, 3)
    assert len(scripted.chat_requests()) == 1 and len(finished) == 1
    sessions = SessionStore.open(model_home).list_sessions()
    assert [s.source for s in sessions] == ["cron"]


def test_a_job_held_elsewhere_is_skipped_then_runs_when_free(
    qtbot: QtBot, model_home: Home, scripted: ScriptedServer, scheduler: CronScheduler
) -> None:
    due_job(model_home)
    scripted.add(reply("ran once free"))
    finished: list[str] = []
    scheduler.jobFinished.connect(lambda name, result: finished.append(result.status))
    with cron._run_lock(model_home, "watch") as held:  # as `cairn cron tick` would hold it
        assert held
        scheduler.start()
        wait_checks(qtbot, scheduler, 2)
        assert finished == [] and scripted.chat_requests() == []
    qtbot.waitUntil(lambda: bool(finished), timeout=10_000)
    assert finished == ["ok"]


def test_stop_cancels_the_run_in_progress(
    qtbot: QtBot, model_home: Home, scripted: ScriptedServer, gate: Gate, scheduler: CronScheduler
) -> None:
    due_job(model_home)
    scheduler.start()
    qtbot.waitUntil(gate.arrived.is_set, timeout=10_000)
    started = time.monotonic()
    scheduler.stop()
    assert time.monotonic() - started < 60  # the model would hold it for 300 s

    assert not scheduler.running
    state = cron.load_state(model_home, "watch")
    assert state.last_status == "cancelled" and state.runs == 1
    with pytest.raises(RuntimeError):
        scheduler.start()


def test_a_broken_jobs_file_is_reported_not_fatal(
    qtbot: QtBot, model_home: Home, scheduler: CronScheduler
) -> None:
    model_home.cron_dir.mkdir(parents=True)
    (model_home.cron_dir / "jobs.yaml").write_text("jobs: [unclosed\n")
    problems: list[str] = []
    scheduler.problem.connect(problems.append)
    scheduler.start()
    qtbot.waitUntil(lambda: bool(problems), timeout=10_000)
    assert "not valid YAML" in problems[0]
    wait_checks(qtbot, scheduler, 2)  # still checking


def test_the_apps_scheduler_ends_an_imports_index_backlog(
    qtbot: QtBot, home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large import leaves the trigram and pair indexes behind (engine/sessions/backlog.py);
    the window's scheduler fills them on its thread without being asked."""
    import json

    from engine.sessions import backlog, maintenance
    from engine.sessions.transfer import import_sessions

    monkeypatch.setattr(backlog, "INLINE", 0)  # this import counts as large
    store = SessionStore.open(home)
    lines = [
        json.dumps(
            {
                "id": f"s{i}",
                "started_at": 1.7e9 + i,
                "messages": [
                    {"role": "user", "content": f"the quokka{i} ferry", "timestamp": 1.7e9 + i}
                ],
            }
        )
        for i in range(30)
    ]
    assert import_sessions(store, lines).index_backlog == 30

    def left() -> int:
        with store.engine.connect() as conn:
            return backlog.left(conn)

    made = CronScheduler(home, interval_ms=TICK_MS)
    said: list[tuple[int, int]] = []
    made.importIndexed.connect(lambda done, rest: said.append((done, rest)))
    try:
        made.start()
        qtbot.waitUntil(lambda: left() == 0 and bool(said), timeout=10_000)
    finally:
        made.stop()
    assert said == [(30, 0)]  # announced once, when there was something to index
    assert maintenance.check(store).ok


def test_the_window_says_how_far_an_imports_indexing_has_come(
    qtbot: QtBot, home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    from app.main_window import MainWindow
    from engine.sessions import backlog
    from engine.sessions.transfer import import_sessions

    monkeypatch.setattr(backlog, "INLINE", 0)
    lines = [
        json.dumps(
            {
                "id": f"s{i}",
                "started_at": 1.7e9 + i,
                "messages": [{"role": "user", "content": f"note {i}", "timestamp": 1.7e9 + i}],
            }
        )
        for i in range(12)
    ]
    assert import_sessions(SessionStore.open(home), lines).index_backlog == 12
    window = MainWindow(home)
    qtbot.addWidget(window)
    label = window.import_indexing
    assert label.isHidden()
    window.show()
    qtbot.waitUntil(lambda: label.text() == "Imported messages indexed", timeout=15_000)
    assert label.isVisible()
    window._on_import_indexed(5, 7)  # a pass that left some for the next one
    assert label.text() == "Indexing imported messages for search: 7 left" and label.toolTip()
