"""The session list, second pass: every session, a page at a time, grouped by day; a refresh
when another program stores sessions; rename, delete with an undo window, export; searches
that show more than three results; matches highlighted in the opened transcript. Real window,
real worker thread, real SQLite store."""

from __future__ import annotations

import io
import json
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from app.main_window import MainWindow
from app.models.session_model import Role, day_label
from app.views.session_list import matched_terms, snippet_html
from engine.home import Home
from engine.sessions.store import SessionStore
from engine.sessions.transfer import export_sessions, import_sessions
from tests.scripted_server import ScriptedServer, reply
from tests.test_app_window import open_window

HOUR = 3600.0


def seed(home: Home, count: int, *, topic: str = "notes") -> list[str]:
    """``count`` sessions, four a day going back from this morning, newest first."""
    store = SessionStore.open(home)
    morning = datetime.now().replace(hour=9, minute=0, second=0, microsecond=0)
    ids = []
    for n in range(count):
        started = (morning - timedelta(days=n // 4, hours=2 * (n % 4))).timestamp()
        session = store.create_session(source="cli", title=f"{topic} {n}", started_at=started)
        store.add_message(session.id, "user", f"question {n} about {topic}")
        store.add_message(session.id, "assistant", f"answer {n}")
        store.end_session(session.id, "closed", ended_at=started + 600)
        ids.append(session.id)
    return ids


def listed(window: MainWindow) -> list[str]:
    model = window.sessions.model
    return [model.index(r).data(Role.SESSION_ID) for r in range(model.rowCount())]


def wait_listing(qtbot: QtBot, window: MainWindow, count: int) -> None:
    qtbot.waitUntil(lambda: len(listed(window)) == count, timeout=15_000)


def scroll_to_end(window: MainWindow) -> None:
    bar = window.sessions.list.verticalScrollBar()
    bar.setValue(bar.maximum())


def test_every_session_is_listed_a_page_at_a_time_by_day(qtbot: QtBot, home: Home) -> None:
    """Start-up showed 50, a cleared search 10, and there was no way to the rest."""
    ids = seed(home, 130)
    window = open_window(qtbot, home)
    window.resize(1000, 700)
    wait_listing(qtbot, window, 50)
    model = window.sessions.model
    assert model.total == 130 and model.canFetchMore()
    assert listed(window) == ids[:50]
    days = [model.index(r).data(Role.DAY) for r in range(model.rowCount())]
    assert days[0] == "Today" and days[4] == "Yesterday"
    assert [d for d in days if d] == [
        day_label(model.index(r).data(Role.STARTED_AT)) for r in range(0, 50, 4)
    ]
    # Scrolling down asks for the next pages, until every session is there.
    for expected in (100, 130):
        scroll_to_end(window)
        wait_listing(qtbot, window, expected)
    assert listed(window) == ids
    assert not model.canFetchMore()
    # A search, then clearing it: the whole listing again, not ten.
    window.sessions.search.setText("notes")
    qtbot.keyClick(window.sessions.search, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: window.sessions.model.query == "notes", timeout=10_000)
    assert window.sessions.model.rowCount() > 3  # more than three results
    window.sessions.search.clear()
    qtbot.keyClick(window.sessions.search, Qt.Key.Key_Return)
    wait_listing(qtbot, window, 130)  # as far as it was scrolled
    assert window.sessions.model.query == ""
    window.close()


def test_sessions_stored_by_another_program_appear(qtbot: QtBot, home: Home) -> None:
    seed(home, 3)
    window = open_window(qtbot, home)
    window.sessions._check_timer.setInterval(150)
    wait_listing(qtbot, window, 3)
    # As `cairn sessions import` does it: JSONL through the store, in another connection.
    other = Home(home.root.parent / "other")
    exported = io.StringIO()
    imported = seed(other, 2, topic="imported")
    export_sessions(SessionStore.open(other), exported)
    import_sessions(SessionStore.open(home), io.BytesIO(exported.getvalue().encode()))
    qtbot.waitUntil(lambda: set(imported) <= set(listed(window)), timeout=10_000)
    assert len(listed(window)) == 5
    window.close()


def test_rename_delete_with_undo_and_export(
    qtbot: QtBot, home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = seed(home, 4)
    window = open_window(qtbot, home)
    wait_listing(qtbot, window, 4)
    sessions, store = window.sessions, SessionStore.open(home)

    # Rename in place (F2 or the context menu).
    index = sessions.model.index(1)
    assert sessions.model.flags(index) & Qt.ItemFlag.ItemIsEditable
    menu = sessions.context_menu_at(sessions.list.visualRect(index).center())
    assert menu is not None
    assert [a.text() for a in menu.actions() if a.text()] == [
        "Open",
        "Continue this conversation",
        "Rename…",
        "Export…",
        "Delete",
    ]
    sessions.model.setData(index, "  Planning   the garden ")
    qtbot.waitUntil(
        lambda: store.get_session(ids[1]).title == "Planning the garden", timeout=10_000
    )
    qtbot.waitUntil(lambda: "renamed" in sessions.status.text(), timeout=5_000)

    # Delete: gone from the list at once, kept while the undo window is open.
    sessions.list.setCurrentIndex(sessions.model.index(0))
    sessions.list.setFocus()
    qtbot.keyClick(sessions.list, Qt.Key.Key_Delete)
    assert listed(window) == ids[1:]
    assert sessions.undo_bar.isVisible() and "Deleted" in sessions.undo_label.text()
    sessions.undo_button.click()
    assert listed(window) == ids and not sessions.undo_bar.isVisible()
    assert store.get_session(ids[0]) is not None
    # Deleted for good when the window is over.
    sessions._undo_timer.setInterval(100)
    sessions.delete_session(ids[0])
    sessions._undo_timer.start(100)
    qtbot.waitUntil(lambda: store.get_session(ids[0]) is None, timeout=10_000)
    qtbot.waitUntil(lambda: listed(window) == ids[1:], timeout=10_000)

    # Export: JSONL that `cairn sessions import` reads.
    path = tmp_path / "out.jsonl"
    sessions.exportRequested.emit([ids[2]], str(path))
    qtbot.waitUntil(path.exists, timeout=10_000)
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert [line["id"] for line in lines] == [ids[2]]
    assert lines[0]["messages"][0]["content"] == "question 2 about notes"
    qtbot.waitUntil(lambda: "exported 1 session" in sessions.status.text(), timeout=5_000)

    # A delete still in its undo window when the window closes is carried out.
    sessions.delete_session(ids[3])
    window.close()
    assert store.get_session(ids[3]) is None


def test_a_search_match_is_highlighted_in_the_opened_session(qtbot: QtBot, home: Home) -> None:
    store = SessionStore.open(home)
    session = store.create_session(source="cli", title="Compose", started_at=time.time() - HOUR)
    store.add_message(session.id, "user", "how do I run it with docker compose?")
    store.add_message(session.id, "assistant", "Use `docker compose up -d`; docker restarts it.")
    window = open_window(qtbot, home)
    window.sessions.search.setText("docker")
    qtbot.keyClick(window.sessions.search, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: window.sessions.model.rowCount() == 1, timeout=10_000)
    assert "docker" in window.sessions.matched_terms(session.id)
    window.sessions.sessionActivated.emit(session.id)
    qtbot.waitUntil(lambda: window.chat.viewing_history, timeout=10_000)
    marks = window.chat.view.extraSelections()
    assert len(marks) == 3
    assert {m.cursor.selectedText().lower() for m in marks} == {"docker"}
    assert "3 matches" in window.chat.banner_label.text()
    window.chat.show_live()
    assert window.chat.view.extraSelections() == []
    window.close()


def test_a_stored_conversation_can_be_continued_from_the_window(
    qtbot: QtBot, model_home: Home, scripted: ScriptedServer
) -> None:
    """There was no way to go on with a past conversation. "Continue this conversation"
    (on the opened session's banner, and in the list's menu) makes it the live chat: its
    messages are shown and sent with the next turn, in a child session of it."""
    store = SessionStore.open(model_home)
    old = store.create_session(source="cli", title="cabin trip")
    store.add_message(old.id, "user", "book the cabin for the 14th")
    store.add_message(old.id, "assistant", "Booked: the cabin, the 14th.")
    store.end_session(old.id, "closed")
    window = open_window(qtbot, model_home)
    wait_listing(qtbot, window, 1)
    menu = window.sessions.context_menu_at(
        window.sessions.list.visualRect(window.sessions.model.index(0)).center()
    )
    assert menu is not None
    assert "Continue this conversation" in [a.text() for a in menu.actions()]
    window.sessions.sessionActivated.emit(old.id)
    qtbot.waitUntil(lambda: window.chat.banner.isVisible(), timeout=10_000)
    assert window.chat.continue_button.isVisible()
    qtbot.mouseClick(window.chat.continue_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not window.chat.banner.isVisible(), timeout=10_000)
    qtbot.waitUntil(lambda: "Booked: the cabin" in window.chat.transcript_text(), timeout=10_000)

    scripted.add(reply("The 14th, as booked."))
    window.chat.input.setPlainText("which day was it?")
    qtbot.keyClick(window.chat.input, "\r")
    qtbot.waitUntil(lambda: "as booked" in window.chat.transcript_text(), timeout=10_000)
    sent = [m["content"] for m in scripted.chat_requests()[-1]["messages"][1:]]
    assert sent == [
        "book the cabin for the 14th",
        "Booked: the cabin, the 14th.",
        "which day was it?",
    ]
    agent = window.worker.agent
    assert agent is not None and agent.parent_session_id == old.id
    child = store.get_session(agent.session_id)
    assert child is not None and child.parent_session_id == old.id
    window.close()


def test_snippets_drop_markdown_and_mark_matches() -> None:
    snippet = "run **`docker compose`** from [the docs](https://x.io) — [docker] restarts"
    shown = snippet_html(snippet)
    assert "**" not in shown and "`" not in shown and "https://" not in shown
    assert "<b>docker</b>" in shown and "the docs" in shown
    assert snippet_html("<script>[x]</script>") == "&lt;script&gt;<b>x</b>&lt;/script&gt;"
    assert matched_terms("use [Docker] and [docker]", "docker compose") == ["docker", "compose"]


def test_day_labels() -> None:
    now = datetime(2026, 12, 1, 15, 0)
    at = lambda *parts: datetime(*parts).timestamp()  # noqa: E731
    assert day_label(at(2026, 12, 1, 8), now) == "Today"
    assert day_label(at(2026, 11, 30, 23), now) == "Yesterday"
    assert day_label(at(2026, 11, 27, 9), now) == "Friday"
    assert day_label(at(2026, 11, 20, 9), now) == "20 November"
    assert day_label(at(2025, 11, 20, 9), now) == "20 November 2025"
    assert day_label(None, now) == "Undated"
