"""The session list: lineage of compressed sessions, activation, debounced search, stale
results, and the model behind it."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QIcon, QPalette
from PySide6.QtWidgets import QApplication, QStyleOptionViewItem
from pytestqt.qtbot import QtBot

from app.models.session_model import Role, SessionModel, arrange, short_date
from app.theme import palette_for
from app.views.session_list import SEARCH_DELAY_MS, SessionList

DAY = 86_400.0


def card(sid: str, title: str | None, day: float, parent: str | None = None, **extra: Any) -> dict:
    return {
        "session_id": sid,
        "title": title,
        "started_at": 1_760_000_000.0 + day * DAY,
        "parent_session_id": parent,
        "root_session_id": extra.pop("root", parent or sid),
        "end_reason": extra.pop("end_reason", None),
        "message_count": extra.pop("message_count", 4),
        **extra,
    }


def browse() -> dict[str, Any]:
    """Newest first, as the engine lists them: a chain root → mid → tip split by another."""
    return {
        "ok": True,
        "mode": "browse",
        "sessions": [
            card("tip", "Deploy pipeline (3)", 5, parent="mid", root="root"),
            card("other", "Tea preferences", 4),
            card("mid", "Deploy pipeline (2)", 3, parent="root", root="root"),
            card("root", "Deploy pipeline", 1, end_reason="compression"),
            card("orphan", None, 0, parent="gone", root="gone"),
        ],
    }


def discover() -> dict[str, Any]:
    return {
        "ok": True,
        "mode": "discover",
        "query": "docker",
        "results": [
            card("mid", "Deploy pipeline (2)", 3, parent="root", snippet="use [docker] compose"),
            card("other", "Tea preferences", 4, snippet="no [docker] here, just tea"),
        ],
    }


@pytest.fixture
def sessions(qtbot: QtBot) -> SessionList:
    widget = SessionList()
    qtbot.addWidget(widget)
    widget.resize(320, 480)
    widget.show()
    qtbot.waitExposed(widget)
    return widget


def rows(model: SessionModel, role: int = Role.SESSION_ID) -> list[Any]:
    return [model.index(r).data(role) for r in range(model.rowCount())]


def test_session_model_passes_the_model_tester(qtmodeltester: Any) -> None:
    model = SessionModel()
    model.set_result("", browse())
    qtmodeltester.check(model)
    model.set_result("docker", discover())
    qtmodeltester.check(model)


def test_a_compression_chain_stays_together_oldest_first() -> None:
    arranged = [(c["session_id"], depth) for c, depth in arrange(browse()["sessions"])]
    assert arranged == [("root", 0), ("mid", 1), ("tip", 2), ("other", 0), ("orphan", 0)]


def test_lineage_is_shown(qtbot: QtBot, sessions: SessionList) -> None:
    sessions.show_sessions("", browse())
    model = sessions.model
    assert rows(model) == ["root", "mid", "tip", "other", "orphan"]
    assert rows(model, Role.LINEAGE) == [
        "",
        "↳ continued from “Deploy pipeline”",
        "↳ continued from “Deploy pipeline (2)”",
        "",
        "↳ continued from an earlier session",
    ]
    assert rows(model, Role.DEPTH) == [0, 1, 2, 0, 0]
    assert rows(model, Qt.ItemDataRole.DisplayRole)[4] == "(untitled)"
    # The delegate gives a continuation its extra line and indents it.
    delegate = sessions.list.itemDelegate()
    option = QStyleOptionViewItem()
    option.initFrom(sessions.list)
    root_height = delegate.sizeHint(option, model.index(0)).height()
    assert delegate.sizeHint(option, model.index(1)).height() > root_height
    assert "continued from" in model.index(1).data(Qt.ItemDataRole.ToolTipRole)
    assert not sessions.empty.isVisible()


def test_search_results_show_snippets_in_the_engines_order(sessions: SessionList) -> None:
    sessions.search.setText("docker")
    sessions.show_sessions("docker", discover())
    assert rows(sessions.model) == ["mid", "other"]
    assert rows(sessions.model, Role.SNIPPET)[0] == "use [docker] compose"
    # A parent seen in an earlier listing lends its title to the lineage line.
    sessions.search.clear()
    sessions.show_sessions("", browse())
    sessions.search.setText("docker")
    sessions.show_sessions("docker", discover())
    assert rows(sessions.model, Role.LINEAGE)[0] == "↳ continued from “Deploy pipeline”"


def test_clicking_a_session_activates_it(qtbot: QtBot, sessions: SessionList) -> None:
    sessions.show_sessions("", browse())
    rect = sessions.list.visualRect(sessions.model.index(1))
    with qtbot.waitSignal(sessions.sessionActivated, timeout=1000) as blocker:
        qtbot.mouseClick(sessions.list.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert blocker.args == ["mid"]
    sessions.list.setFocus()
    sessions.list.setCurrentIndex(sessions.model.index(3))
    with qtbot.waitSignal(sessions.sessionActivated, timeout=1000) as blocker:
        qtbot.keyClick(sessions.list, Qt.Key.Key_Return)
    assert blocker.args == ["other"]


def test_search_is_debounced(qtbot: QtBot, sessions: SessionList) -> None:
    asked: list[str] = []
    sessions.searchRequested.connect(asked.append)
    qtbot.keyClicks(sessions.search, "docker")
    assert asked == []  # six keystrokes, no search yet
    assert sessions._timer.isActive()
    qtbot.waitUntil(lambda: asked != [], timeout=SEARCH_DELAY_MS * 10)
    assert asked == ["docker"]
    assert not sessions._timer.isActive()  # nothing else is coming


def test_enter_searches_at_once(qtbot: QtBot, sessions: SessionList) -> None:
    qtbot.keyClicks(sessions.search, "tea")
    with qtbot.waitSignal(sessions.searchRequested, timeout=100) as blocker:
        qtbot.keyClick(sessions.search, Qt.Key.Key_Return)
    assert blocker.args == ["tea"]
    assert not sessions._timer.isActive()


def test_a_late_answer_to_an_older_query_is_dropped(sessions: SessionList) -> None:
    sessions.search.setText("docker")
    sessions.show_sessions("dock", {"ok": True, "results": [card("x", "stale", 1)]})
    assert rows(sessions.model) == []
    sessions.show_recent(browse()["sessions"])  # recent sessions do not replace a search
    assert rows(sessions.model) == []
    sessions.show_sessions("docker", discover())
    assert rows(sessions.model) == ["mid", "other"]


def test_empty_and_failed_searches_say_so(sessions: SessionList) -> None:
    sessions.show_sessions("", {"ok": True, "sessions": []})
    assert sessions.empty.isVisible() and sessions.empty.text() == "No sessions yet"
    sessions.search.setText("zebra")
    sessions.show_sessions("zebra", {"ok": True, "results": []})
    assert "Nothing found" in sessions.empty.text()
    sessions.show_sessions("zebra", {"ok": False, "error": "invalid", "message": "bad query"})
    assert sessions.empty.text() == "Search failed: bad query"


def test_the_new_session_button(qtbot: QtBot, sessions: SessionList) -> None:
    with qtbot.waitSignal(sessions.newSessionRequested, timeout=1000):
        qtbot.mouseClick(sessions.new_button, Qt.MouseButton.LeftButton)


def test_select_highlights_without_activating(sessions: SessionList) -> None:
    activated: list[str] = []
    sessions.sessionActivated.connect(activated.append)
    sessions.show_recent(browse()["sessions"])
    sessions.select("tip")
    assert sessions.list.currentIndex().data(Role.SESSION_ID) == "tip"
    assert activated == []


def test_dates_are_short_and_the_tooltip_has_the_full_one(sessions: SessionList) -> None:
    now = datetime(2026, 11, 30, 18, 0)
    at = lambda *parts: datetime(*parts).timestamp()  # noqa: E731
    assert short_date(at(2026, 11, 30, 9, 5), now) == "09:05"
    assert short_date(at(2026, 11, 29, 23, 59), now) == "29 Nov"
    assert short_date(at(2026, 1, 3, 8, 0), now) == "3 Jan"
    assert short_date(at(2025, 12, 31, 8, 0), now) == "2025-12-31"
    assert short_date(None, now) == ""
    sessions.show_recent(browse()["sessions"])
    index = sessions.model.index(0)
    started = index.data(Role.STARTED_AT)
    assert index.data(Role.DATE) == short_date(started)
    assert datetime.fromtimestamp(started).strftime("%Y-%m-%d %H:%M") in index.data(
        Qt.ItemDataRole.ToolTipRole
    )


def icon_color(icon: QIcon) -> str:
    image = icon.pixmap(16, 16).toImage()
    opaque = [
        image.pixelColor(x, y)
        for x in range(image.width())
        for y in range(image.height())
        if image.pixelColor(x, y).alpha() == 255
    ]
    assert opaque, "the icon draws nothing"
    return opaque[0].name()


def test_icons_are_redrawn_when_the_scheme_changes(qapp: QApplication) -> None:
    widget = SessionList()
    try:
        widget.show()
        for dark in (True, False):
            qapp.setPalette(palette_for(dark))
            qapp.processEvents()  # the new palette reaches the widgets
            text = widget.palette().color(QPalette.ColorRole.ButtonText).name()
            assert (text == "#000000") is not dark
            assert icon_color(widget.new_button.icon()) == text
            assert icon_color(widget.search_icon.icon()) == text
    finally:
        qapp.setPalette(qapp.style().standardPalette())
        widget.close()
        widget.deleteLater()
