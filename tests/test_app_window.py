"""The desktop window end to end, offscreen: a real worker thread, real files, a real
OpenAI-compatible server on loopback."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

import pytest
from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from app.main_window import MainWindow
from engine.home import Home
from engine.memory.entries import Target
from engine.memory.service import MemoryService
from engine.sessions.store import SessionStore
from tests.conftest import REPO, run_cairn
from tests.scripted_server import ScriptedServer, reply, tool_calls


def open_window(qtbot: QtBot, home: Home, **kwargs: object) -> MainWindow:
    window = MainWindow(home, **kwargs)  # type: ignore[arg-type]
    qtbot.addWidget(window)
    with qtbot.waitSignal(window.memoryShown, timeout=15_000):
        window.show()
    return window


def entries_shown(window: MainWindow, target: str) -> list[str]:
    model = window.memory.boxes[target].model
    return [model.index(row).data() for row in range(model.rowCount())]


def test_window_shows_both_files_and_closes_its_threads(
    qtbot: QtBot, service: MemoryService, home: Home
) -> None:
    service.write(Target.MEMORY, [{"action": "add", "content": "Deploys go through CI"}])
    service.write(Target.USER, [{"action": "add", "content": "Name: Ada"}])
    window = open_window(qtbot, home)
    assert entries_shown(window, "memory") == ["Deploys go through CI"]
    assert "21 / 2,200 chars" in window.memory.boxes["memory"].bar.format()
    assert entries_shown(window, "user") == ["Name: Ada"]
    # No model configured: the setup panel is offered, everything else works.
    qtbot.waitUntil(lambda: window.setup.isVisible(), timeout=5_000)
    before = {t.name for t in threading.enumerate()}
    window.close()
    assert not window._thread.isRunning()
    assert window.watcher is not None and not window.watcher.running
    assert len({t.name for t in threading.enumerate()}) <= len(before)


def test_unreadable_file_is_shown_not_raised(qtbot: QtBot, home: Home) -> None:
    home.memories_dir.mkdir(parents=True)
    (home.memories_dir / "MEMORY.md").write_bytes(b"\xff\xfe broken")
    window = open_window(qtbot, home)
    assert "not valid UTF-8" in window.memory.boxes["memory"].notice.text()
    window.close()


def test_chat_turn_streams_writes_memory_and_keeps_the_snapshot_frozen(
    qtbot: QtBot, model_home: Home, scripted: ScriptedServer
) -> None:
    scripted.add(
        tool_calls(("memory", {"action": "add", "content": "Prefers tabs over spaces"})),
        reply("Saved, and here is the answer."),
    )
    window = open_window(qtbot, model_home)
    qtbot.waitUntil(lambda: not window.setup.isVisible(), timeout=5_000)
    window.chat.input.setPlainText("remember my indentation preference")
    # Waiting on the window, not on the worker's signal: the worker lives on another thread.
    qtbot.keyClick(window.chat.input, "\r")
    assert window.chat.busy
    qtbot.waitUntil(lambda: not window.chat.busy, timeout=15_000)
    window.chat.flush()
    assert "Saved, and here is the answer." in window.chat.transcript_text()
    assert "memory: added 1 entry" in window.chat.transcript_text()
    # The panel shows the write; the running session's prompt does not have it.
    qtbot.waitUntil(
        lambda: entries_shown(window, "memory") == ["Prefers tabs over spaces"], timeout=5_000
    )
    qtbot.waitUntil(lambda: window.memory.banner.isVisible(), timeout=5_000)
    agent = window.worker.agent
    assert agent is not None and "Prefers tabs" not in agent.prompt.text
    # The session appears in the session list.
    qtbot.waitUntil(lambda: window.sessions.model.rowCount() == 1, timeout=5_000)
    window.close()


def test_external_edit_reaches_the_panel_within_300_ms(qtbot: QtBot, home: Home) -> None:
    window = open_window(qtbot, home)
    other = MemoryService(home)  # a second Cairn, a Hermes CLI or an editor sharing the home
    started = time.monotonic()
    other.write(Target.MEMORY, [{"action": "add", "content": "Written from elsewhere"}])
    qtbot.waitUntil(
        lambda: entries_shown(window, "memory") == ["Written from elsewhere"], timeout=3_000
    )
    elapsed = time.monotonic() - started
    assert elapsed < 0.3 + 0.2, f"the panel caught up after {elapsed:.3f} s"
    window.close()


def test_stop_button_cancels_a_streaming_reply(
    qtbot: QtBot, model_home: Home, scripted: ScriptedServer
) -> None:
    scripted.add(reply(" ".join(f"w{i}" for i in range(300)), chunk_delay=0.02))
    window = open_window(qtbot, model_home)
    window.chat.input.setPlainText("count")
    qtbot.keyClick(window.chat.input, "\r")

    def streamed() -> bool:
        window.chat.flush()
        return "w3" in window.chat.transcript_text()

    qtbot.waitUntil(streamed, timeout=10_000)
    qtbot.keyClick(window.chat.input, Qt.Key.Key_Escape)
    qtbot.waitUntil(lambda: not window.chat.busy, timeout=10_000)
    agent = window.worker.agent
    assert agent is not None
    stored = SessionStore.open(model_home).messages(agent.session_id)
    assert [m.role for m in stored] == ["user", "assistant"]
    assert "w299" not in stored[1].content
    window.close()


def test_the_openclaw_wizard_opens_from_the_menu(qtbot: QtBot, home: Home) -> None:
    from app.views.migration_wizard import MigrationWizard

    window = open_window(qtbot, home)
    window.migrate_action.trigger()
    wizards = window.findChildren(MigrationWizard)
    assert len(wizards) == 1 and wizards[0].isVisible()
    wizards[0].close()
    window.close()


def test_a_staged_skill_write_is_reviewed_in_the_pending_dialog(qtbot: QtBot, home: Home) -> None:
    from engine.config import load_config, update_config
    from engine.skills import skill_tools

    update_config(home, {"skills": {"write_approval": True}})
    window = open_window(qtbot, home)
    manage = next(t for t in skill_tools(home, load_config(home)) if t.name == "skill_manage")
    staged = manage.handler(
        {
            "action": "create",
            "name": "release-notes",
            "description": "Write release notes from merged pull requests",
            "body": "1. List merged PRs since the last tag.\n2. Group them by area.",
        }
    )
    assert staged["status"] == "staged"
    # The watcher sees pending/skills and the dialog lists the record.
    pending_id = staged["pending_id"]
    qtbot.waitUntil(lambda: window.pending.model.row_of(pending_id) >= 0, timeout=5_000)
    window.show_pending()
    window.pending.select(staged["pending_id"])
    assert "release-notes" in window.pending.heading.text()
    window.pending.approve_button.click()
    skill = home.skills_dir / "release-notes" / "SKILL.md"
    qtbot.waitUntil(skill.exists, timeout=5_000)
    qtbot.waitUntil(lambda: window.pending.model.rowCount() == 0, timeout=5_000)
    assert any("Approved" in text for text in window.pending.outcome_texts())
    window.close()


def test_the_window_opens_before_the_engine_loads() -> None:
    # What `cairn gui` imports before its window exists; the engine (the database layer,
    # pydantic, the model SDK) and the journey's numpy and networkx load later, off the GUI
    # thread or on first use. Each of them would add tenths of a second to every start.
    code = (
        "import sys\n"
        "import app.launch, engine.cli, app.main_window\n"
        "heavy = ('engine.agent', 'engine.memory.service', 'sqlalchemy', 'pydantic', 'openai',\n"
        "         'numpy', 'networkx', 'engine.migrate', 'engine.cron')\n"
        "print(','.join(m for m in heavy if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True
    )
    assert out.stdout.strip() == ""


def test_the_engine_alone_has_no_window_and_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    """Tried: `python -m engine.cli` (the headless entry point) asked for the window."""
    from engine import cli

    assert cli.main(["gui"]) == 1
    err = capsys.readouterr().err
    assert "no desktop window" in err and len(err.strip().splitlines()) == 1


def test_a_bad_profile_for_the_window_is_a_clear_error() -> None:
    for args in (["--profile", "../x"], ["gui", "--profile", "../x"]):
        proc = run_cairn(*args)
        assert proc.returncode == 1
        assert "invalid profile name" in proc.stderr
    proc = run_cairn("gui", "--json", "--profile", "../x")
    assert proc.returncode == 1 and json.loads(proc.stdout)["error"] == "config"


def test_the_journey_view_is_made_when_its_dock_first_opens(
    qtbot: QtBot, service: MemoryService, home: Home
) -> None:
    service.write(Target.MEMORY, [{"action": "add", "content": "Deploys go through CI"}])
    window = open_window(qtbot, home)
    assert window._journey is None and window.journey_dock.widget() is None
    window.journey_dock.toggleViewAction().trigger()  # Ctrl+3
    assert window._journey is not None and window.journey_dock.widget() is window._journey
    # Made after the first state arrived, it still loads the journey of the files on disk.
    qtbot.waitUntil(lambda: window.journey.bundle is not None, timeout=10_000)
    assert window.journey.bundle is not None
    assert [c.text for c in window.journey.bundle.journey.chunks] == ["Deploys go through CI"]
    window.close()


def test_sigterm_closes_the_app_and_keeps_the_partial_reply(
    model_home: Home, scripted: ScriptedServer
) -> None:
    """A logout or `kill` while a reply streams into the window (a real process, a real
    SIGTERM): the window closes as its close button would, the partial reply is stored, the
    session is ended, and the exit code says a signal ended it."""
    import os
    import signal

    from tests.test_chat_cli import _read_until

    scripted.add(reply(" ".join(f"w{i}" for i in range(400)), chunk_delay=0.05))
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.gui_signal_child", str(model_home.root), "a long story"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(REPO), "QT_QPA_PLATFORM": "offscreen"},
        cwd=REPO,
    )
    assert proc.stdout is not None and proc.stderr is not None
    try:
        _read_until(proc.stdout, "STREAMING", timeout=60)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    err = proc.stderr.read().decode()
    assert proc.returncode == 128 + signal.SIGTERM, err
    store = SessionStore.open(model_home)
    (session,) = store.list_sessions()
    messages = store.messages(session.id)
    assert [m.role for m in messages] == ["user", "assistant"], err
    assert messages[1].content.startswith("w0") and "w399" not in messages[1].content
    assert session.ended_at is not None


def test_regenerate_asks_again_without_the_first_answer(
    qtbot: QtBot, model_home: Home, scripted: ScriptedServer
) -> None:
    """Regenerate sent the question again beside the first answer. Now the first answer
    leaves the transcript and the model's context; the store keeps both answers."""
    scripted.add(reply("Paris, I think."), reply("The capital is Canberra."))
    window = open_window(qtbot, model_home)
    window.chat.input.setPlainText("capital of Australia?")
    qtbot.keyClick(window.chat.input, "\r")
    qtbot.waitUntil(lambda: "Paris" in window.chat.transcript_text(), timeout=10_000)
    qtbot.waitUntil(lambda: not window.chat.busy, timeout=10_000)
    window.chat.regenerate()
    qtbot.waitUntil(lambda: "Canberra" in window.chat.transcript_text(), timeout=10_000)
    qtbot.waitUntil(lambda: not window.chat.busy, timeout=10_000)
    assert "Paris" not in window.chat.transcript_text()
    assert window.chat.transcript_text().count("capital of Australia?") == 1
    sent = [m["content"] for m in scripted.chat_requests()[-1]["messages"][1:]]
    assert sent == ["capital of Australia?"]
    agent = window.worker.agent
    assert agent is not None
    stored = [m.content for m in SessionStore.open(model_home).messages(agent.session_id)]
    assert stored == [
        "capital of Australia?",
        "Paris, I think.",
        "capital of Australia?",
        "The capital is Canberra.",
    ]
    window.close()


def test_memory_is_on_screen_before_a_slow_model_server_answers(qtbot: QtBot, home: Home) -> None:
    """The memory panel waited for the agent to open, and the agent waits for the model
    server's window (a llama-server still loading answers `/props` late): "Opening the
    home…" stayed up for seconds. Memory is now read before the agent opens."""
    from engine.config import update_config

    server = ScriptedServer(info_delay=4.0).start()
    try:
        # No context_length: the window is asked of the server at start, as with llama.cpp.
        update_config(
            home,
            {"model": {"provider": "openai", "base_url": server.url, "model": server.model}},
        )
        home.memories_dir.mkdir(parents=True, exist_ok=True)
        (home.memories_dir / "MEMORY.md").write_text("Deploys on Tuesdays", encoding="utf-8")
        window = MainWindow(home)
        qtbot.addWidget(window)
        started = time.monotonic()
        with qtbot.waitSignal(window.memoryShown, timeout=15_000):
            window.show()
        shown_after = time.monotonic() - started
        assert entries_shown(window, "memory") == ["Deploys on Tuesdays"]
        assert window.worker.agent is None, f"memory waited for the agent ({shown_after:.1f} s)"
        qtbot.waitUntil(lambda: window.worker.agent is not None, timeout=20_000)
        window.close()
    finally:
        server.stop()
