"""The pending-writes dialog: the queue, a preview of each write against current memory, the
approve/reject requests and their outcomes; and end to end with approval on."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from PySide6.QtCore import QModelIndex, Qt
from pytestqt.qtbot import QtBot

from app import bindings
from app.models.pending_model import PendingModel, full_time, is_settle_result, short_time
from app.ops import OpRunner
from app.views.memory_panel import MemoryPanel
from app.views.pending_dialog import PendingBadge, PendingDialog, pending_count
from engine.config import update_config
from engine.home import Home
from engine.memory.entries import parse
from tests.test_memory_panel import changes, open_editor, running_engine, state, submit, wire

ADD = {
    "id": "1a2b3c4d",
    "action": "add",
    "summary": "add 'Prefers dark mode'",
    "origin": "background_review",
    "created_at": "2026-05-09T10:15:00+00:00",
    "payload": {
        "target": "user",
        "operations": [{"action": "add", "content": "Prefers dark mode"}],
    },
}
REPLACE = {
    "id": "5e6f7a8b",
    "action": "replace",
    "summary": "replace 'Ruff line length is 88' with 'Ruff line length is 100'",
    "origin": "foreground",
    "created_at": "2026-05-09T11:02:00+00:00",
    "payload": {
        "target": "memory",
        "operations": [
            {
                "action": "replace",
                "old_text": "Ruff line length is 88",
                "content": "Ruff line length is 100",
            }
        ],
    },
}
MEMORY = {
    "memory": state(["Deploys go through CI", "Ruff line length is 88"]),
    "user": state(["Name: Ada"]),
}


@pytest.fixture
def dialog(qtbot: QtBot) -> PendingDialog:
    widget = PendingDialog()
    qtbot.addWidget(widget)
    widget.apply_changes(changes(memory=MEMORY, pending=[ADD, REPLACE]))
    widget.show()
    qtbot.waitExposed(widget)
    return widget


def cells(model: PendingModel, row: int) -> list[str]:
    return [model.index(row, c).data() for c in range(model.columnCount())]


def test_pending_model_is_valid_through_updates(qtmodeltester: Any) -> None:
    model = PendingModel()
    model.set_records([ADD, REPLACE])
    qtmodeltester.check(model)
    model.set_records([REPLACE])
    model.set_records([REPLACE, {**ADD, "id": "99999999"}, ADD])
    model.set_records([])
    assert model.rowCount() == 0
    assert model.rowCount(QModelIndex()) == 0


def test_dialog_lists_the_records(dialog: PendingDialog) -> None:
    model = dialog.model
    assert model.rowCount() == 2
    assert cells(model, 0)[1:] == ["Background review", "USER.md", "add 'Prefers dark mode'"]
    assert cells(model, 1)[1:3] == ["Foreground", "MEMORY.md"]
    assert model.index(0, 0).data(Qt.ItemDataRole.ToolTipRole) == full_time(ADD["created_at"])
    assert full_time(ADD["created_at"]) == full_time(1778321700.0), "ISO text and unix seconds"
    assert model.index(1, 0).data(PendingModel.IdRole) == "5e6f7a8b"


def test_short_time_is_local_and_drops_today() -> None:
    now = datetime.fromisoformat("2026-05-09T12:00:00+00:00").astimezone()
    same_moment = datetime.fromisoformat("2026-05-09T11:02:00+00:00").astimezone()
    shown = short_time("2026-05-09T11:02:00+00:00", now=now)
    if same_moment.date() == now.date():
        assert shown == same_moment.strftime("%H:%M")
    assert short_time("2020-01-02T03:04:00+00:00", now=now).startswith("2020-01-0")
    assert short_time("not a time") == "not a time"


def test_first_record_is_previewed_as_the_file_after(dialog: PendingDialog) -> None:
    assert dialog.selected_record() == ADD
    assert dialog.preview.lines == [(" ", "Name: Ada"), ("+", "Prefers dark mode")]
    assert dialog.heading.text().startswith("USER.md after approval — 29 / 2,200 chars (1%)")
    assert "Background review: add 'Prefers dark mode'" in dialog.heading.text()


def test_selecting_a_replace_shows_removed_and_added(dialog: PendingDialog) -> None:
    dialog.select("5e6f7a8b")
    assert dialog.preview.lines == [
        (" ", "Deploys go through CI"),
        ("-", "Ruff line length is 88"),
        ("+", "Ruff line length is 100"),
    ]
    assert "\u2212 Ruff line length is 88" in dialog.preview.toPlainText()


def test_a_write_that_no_longer_applies_says_so(dialog: PendingDialog) -> None:
    moved_on = {"memory": state(["Ruff line length is 120"]), "user": state(["Name: Ada"])}
    dialog.select("5e6f7a8b")
    dialog.apply_changes(changes(memory=moved_on))
    assert dialog.selected_record() == REPLACE  # a memory-only change keeps the selection
    assert dialog.preview.lines[0][0] == "!"
    assert "no longer applies" in dialog.preview.lines[0][1]
    assert "no entry contains 'Ruff line length is 88'" in dialog.preview.lines[0][1]


def test_a_write_over_the_limit_is_flagged(dialog: PendingDialog) -> None:
    full = {"memory": state(["x" * 2190], limit=2200), "user": state(["y" * 2190], limit=2200)}
    dialog.apply_changes(changes(memory=full))
    assert dialog.preview.lines[0][0] == "!"
    assert "would exceed the limit" in dialog.preview.lines[0][1]


def test_buttons_emit_requests(qtbot: QtBot, dialog: PendingDialog) -> None:
    dialog.select("5e6f7a8b")
    with qtbot.waitSignal(dialog.approveRequested, timeout=5_000) as blocker:
        qtbot.mouseClick(dialog.approve_button, Qt.MouseButton.LeftButton)
    assert blocker.args == ["5e6f7a8b"]
    with qtbot.waitSignal(dialog.rejectRequested, timeout=5_000) as blocker:
        qtbot.mouseClick(dialog.reject_button, Qt.MouseButton.LeftButton)
    assert blocker.args == ["5e6f7a8b"]
    with qtbot.waitSignal(dialog.settleAllRequested, timeout=5_000) as blocker:
        qtbot.mouseClick(dialog.approve_all_button, Qt.MouseButton.LeftButton)
    assert blocker.args == [True]
    with qtbot.waitSignal(dialog.settleAllRequested, timeout=5_000) as blocker:
        qtbot.mouseClick(dialog.reject_all_button, Qt.MouseButton.LeftButton)
    assert blocker.args == [False]


def test_selection_survives_and_moves_on_when_settled(dialog: PendingDialog) -> None:
    dialog.select("5e6f7a8b")
    newer = {**ADD, "id": "0f0f0f0f", "created_at": "2026-05-09T12:00:00+00:00"}
    dialog.apply_changes(changes(pending=[ADD, REPLACE, newer]))
    assert dialog.selected_record() == REPLACE
    dialog.apply_changes(changes(pending=[ADD, newer]))  # the selected one was settled
    assert dialog.selected_record() == newer  # the one after it, as in any list
    assert dialog.preview.lines[-1] == ("+", "Prefers dark mode")
    dialog.apply_changes(changes(pending=[ADD]))
    assert dialog.selected_record() == ADD
    dialog.apply_changes(changes(pending=[]))
    assert dialog.selected_record() is None
    assert not dialog.empty.isHidden() and dialog.table.isHidden()
    assert not dialog.approve_button.isEnabled() and not dialog.approve_all_button.isEnabled()


def test_outcomes_are_shown(dialog: PendingDialog) -> None:
    approved = {
        "ok": True,
        "status": "applied",
        "pending_id": "5e6f7a8b",
        "message": "MEMORY.md updated: approved 5e6f7a8b (replace …) (45/2,200 chars, 2%).",
    }
    failed = {
        "ok": False,
        "error": "no_match",
        "pending_id": "1a2b3c4d",
        "message": "approval of 1a2b3c4d failed, the staged write is kept: no entry contains 'x'",
    }
    edit = {"ok": True, "status": "applied", "message": "MEMORY.md updated: add 'y'"}
    assert dialog.show_result(approved)
    assert dialog.show_result(failed)
    assert not dialog.show_result(edit)
    assert dialog.outcome_texts() == ["✓ " + approved["message"], "✗ " + failed["message"]]


def test_settle_results_are_told_from_edit_results() -> None:
    assert is_settle_result({"ok": True, "status": "rejected", "pending_id": "1a2b3c4d"})
    assert is_settle_result({"ok": False, "error": "not_found", "message": "no pending write"})
    assert not is_settle_result({"ok": True, "status": "staged", "pending_id": "1a2b3c4d"})
    assert not is_settle_result({"ok": False, "error": "overflow", "message": "too big"})


def test_badge_counts_and_hides(qtbot: QtBot) -> None:
    badge = PendingBadge()
    qtbot.addWidget(badge)
    assert badge.isHidden()
    badge.apply_changes(changes(pending=[ADD, REPLACE]))
    assert badge.text() == "2 pending" and not badge.isHidden()
    badge.apply_changes(changes(memory=MEMORY))  # no pending part: count unchanged
    assert badge.count == 2
    assert pending_count(changes(memory=MEMORY)) is None
    badge.apply_changes(changes(pending=[]))
    assert badge.isHidden()


# -- end to end ----------------------------------------------------------------------------------


def wire_dialog(dialog: PendingDialog, runner: OpRunner) -> None:
    bindings.bind_pending_dialog(runner, dialog)


def test_staged_edit_is_approved_through_the_dialog(qtbot: QtBot, home: Home) -> None:
    update_config(home, {"memory": {"write_approval": True}})
    panel, dialog = MemoryPanel(), PendingDialog()
    qtbot.addWidget(panel)
    qtbot.addWidget(dialog)
    panel.show()
    dialog.show()
    box = panel.boxes["memory"]
    memory_md = home.memories_dir / "MEMORY.md"
    with running_engine(home) as (runner, driver):
        wire(panel, runner)
        wire_dialog(dialog, runner)
        driver.startRequested.emit()
        qtbot.waitUntil(lambda: box.add_button.isEnabled(), timeout=15_000)

        submit(qtbot, panel, box, "Deploys go through CI")
        qtbot.waitUntil(lambda: box.result.text().startswith("Staged for approval"), timeout=10_000)
        qtbot.waitUntil(lambda: dialog.model.rowCount() == 1, timeout=10_000)
        assert box.model.entries() == []  # nothing applied yet
        assert not memory_md.exists()
        record = dialog.selected_record()
        assert record is not None and record["origin"] == "foreground"
        assert dialog.preview.lines == [("+", "Deploys go through CI")]

        qtbot.mouseClick(dialog.approve_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: dialog.model.rowCount() == 0, timeout=10_000)
        qtbot.waitUntil(lambda: len(dialog.outcome_texts()) == 1, timeout=10_000)
        assert dialog.outcome_texts()[0].startswith("✓ MEMORY.md updated: approved")
        assert parse(memory_md.read_text(encoding="utf-8")) == ["Deploys go through CI"]
        qtbot.waitUntil(lambda: box.model.entries() == ["Deploys go through CI"], timeout=10_000)


def test_approval_fails_when_the_entry_changed(qtbot: QtBot, home: Home) -> None:
    home.memories_dir.mkdir(parents=True)
    memory_md = home.memories_dir / "MEMORY.md"
    memory_md.write_text("Ruff line length is 88", encoding="utf-8")
    update_config(home, {"memory": {"write_approval": True}})
    panel, dialog = MemoryPanel(), PendingDialog()
    qtbot.addWidget(panel)
    qtbot.addWidget(dialog)
    panel.show()
    box = panel.boxes["memory"]
    with running_engine(home) as (runner, driver):
        wire(panel, runner)
        wire_dialog(dialog, runner)
        driver.startRequested.emit()
        qtbot.waitUntil(lambda: box.model.entries() == ["Ruff line length is 88"], timeout=15_000)
        box.select_row(0)
        qtbot.mouseClick(box.edit_button, Qt.MouseButton.LeftButton)
        editor = open_editor(qtbot, box)
        editor.editor.setPlainText("Ruff line length is 100")
        qtbot.mouseClick(editor.save_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: dialog.model.rowCount() == 1, timeout=10_000)

        memory_md.write_text("Ruff line length is 120", encoding="utf-8")  # edited by hand
        driver.refreshRequested.emit()
        qtbot.waitUntil(lambda: box.model.entries() == ["Ruff line length is 120"], timeout=10_000)
        assert "no longer applies" in dialog.preview.lines[0][1]

        qtbot.mouseClick(dialog.approve_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: len(dialog.outcome_texts()) == 1, timeout=10_000)
        outcome = dialog.outcome_texts()[0]
        assert outcome.startswith("✗ approval of") and "the staged write is kept" in outcome
        assert dialog.model.rowCount() == 1
        assert memory_md.read_text(encoding="utf-8") == "Ruff line length is 120"

        with qtbot.waitSignal(dialog.settleAllRequested, timeout=5_000):
            qtbot.mouseClick(dialog.reject_all_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: dialog.model.rowCount() == 0, timeout=10_000)
        assert dialog.outcome_texts()[-1].startswith("✓ Rejected")


def test_the_window_shows_staged_writes_and_whether_approval_is_on(
    qtbot: QtBot, home: Home
) -> None:
    """Tried as a user would: the window open, approval switched on in a terminal, a write
    staged by another Cairn; then approval switched off from the window's Memory menu."""
    from engine import cli
    from engine.config import load_config
    from engine.memory.entries import Target
    from engine.memory.service import MemoryService
    from tests.test_app_window import open_window

    window = open_window(qtbot, home)
    badge_action = window.badge.action
    assert badge_action is not None
    assert not badge_action.isVisible() and not window.approval_action.isChecked()

    assert cli.main(["memory", "approval", "on", "--home", str(home.root)]) == 0
    MemoryService(home).write(Target.MEMORY, [{"action": "add", "content": "Uses Podman"}])
    qtbot.waitUntil(lambda: badge_action.isVisible(), timeout=5_000)
    assert window.badge.text() == "1 pending"
    qtbot.waitUntil(lambda: window.approval_action.isChecked(), timeout=5_000)
    menus = {a.text(): a for a in window.menuBar().actions()}
    assert window.pending_action in menus["&Memory"].menu().actions()

    window.approval_action.trigger()  # off, from the menu
    qtbot.waitUntil(lambda: load_config(home).memory.write_approval is False, timeout=10_000)
    window.close()
