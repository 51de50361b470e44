"""What a user reaches for in a chat: copying a message or a code block, coloured code,
a way back to the bottom, a reloaded reply drawn as it was live, regenerate and edit-resend."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QColor, QTextCursor
from PySide6.QtWidgets import QApplication, QMenu
from pytestqt.qtbot import QtBot

from app.views.chat_pane import WHOLE_REPLY_CHARS, ChatPane
from app.views.markdown import Colors, to_document

CODE = 'def load(key: str) -> bytes:\n    return cache.get(key)  # "warm"'
REPLY = f"Try this:\n\n```python\n{CODE}\n```\n\nThen **deploy**."
TABLE_REPLY = (
    "Here are the options:\n\n| Option | Effect |\n|:--|--:|\n| `retry` | three reads |\n"
    "| cap | 2 s |\n\nAfter the table.\n"
)


@pytest.fixture(autouse=True)
def _clipboard_emptied(qapp: QApplication) -> Iterator[None]:
    # What a test copied does not outlive it (the tests after it share the clipboard).
    yield
    QApplication.clipboard().clear()


@pytest.fixture
def pane(qtbot: QtBot) -> ChatPane:
    widget = ChatPane()
    qtbot.addWidget(widget)
    widget.resize(640, 500)
    widget.show()
    qtbot.waitExposed(widget)
    return widget


def turn(pane: ChatPane, question: str, reply: str) -> None:
    pane._submit(question)
    for start in range(0, len(reply), 5):
        pane.on_token(reply[start : start + 5])
    pane.on_reply_finished({"reply": reply, "cancelled": False, "error": None})
    pane.flush()


def point_of(pane: ChatPane, needle: str) -> QPoint:
    """Viewport coordinates of the first character of ``needle`` in the transcript."""
    doc = pane.view.document()
    found = doc.find(needle)
    assert not found.isNull(), needle
    cursor = QTextCursor(doc)
    cursor.setPosition(found.selectionStart() + 1)
    pane.view.ensureCursorVisible()
    pane.view.setTextCursor(cursor)
    pane.view.ensureCursorVisible()
    return pane.view.cursorRect(cursor).center()


def actions(menu: QMenu) -> dict[str, object]:
    return {a.text(): a for a in menu.actions() if a.text()}


def test_the_code_block_and_the_message_can_be_copied(qtbot: QtBot, pane: ChatPane) -> None:
    turn(pane, "how do I load?", REPLY)
    menu = pane.view.context_menu_at(point_of(pane, "cache.get"))
    found = actions(menu)
    assert "Copy code block" in found and "Copy message" in found
    found["Copy code block"].trigger()  # type: ignore[attr-defined]
    assert QApplication.clipboard().text() == CODE
    found["Copy message"].trigger()  # type: ignore[attr-defined]
    assert QApplication.clipboard().text() == REPLY  # the markdown, as the model wrote it
    # Over prose there is no code block to copy.
    assert "Copy code block" not in actions(pane.view.context_menu_at(point_of(pane, "Then")))
    # The user's own message copies as typed.
    actions(pane.view.context_menu_at(point_of(pane, "how do I")))["Copy message"].trigger()  # type: ignore[attr-defined]
    assert QApplication.clipboard().text() == "how do I load?"


def foregrounds(doc_text: str, colors: Colors, needle: str) -> set[str]:
    doc = to_document(doc_text, colors)
    found = doc.find(needle)
    cursor = QTextCursor(doc)
    seen = set()
    for position in range(found.selectionStart(), found.selectionEnd()):
        cursor.setPosition(position + 1)
        seen.add(cursor.charFormat().foreground().color().name())
    return seen


@pytest.mark.parametrize("dark", [False, True])
def test_code_that_names_its_language_is_coloured(qapp: QApplication, dark: bool) -> None:
    palette = QApplication.palette()
    if dark:
        palette.setColor(palette.ColorRole.Base, QColor("#17181a"))
        palette.setColor(palette.ColorRole.Text, QColor("#e8eaed"))
    colors = Colors.from_palette(palette)
    assert colors.dark is dark
    coloured = foregrounds(
        f"```python\n{CODE}\n```",
        colors,
        "def load(key: str) -> bytes:",
    )
    assert len(coloured) >= 2  # "def" is not the colour of "load"
    plain = foregrounds(f"```\n{CODE}\n```", colors, "def load(key: str) -> bytes:")
    assert len(plain) == 1  # no language named: nothing is guessed
    unknown = foregrounds(f"```nosuchlang\n{CODE}\n```", colors, "def load(key: str) -> bytes:")
    assert unknown == plain


def test_a_scrolled_up_user_gets_a_button_back_to_the_bottom(qtbot: QtBot, pane: ChatPane) -> None:
    for n in range(30):
        pane.model.add_user(f"question {n}")
        pane.model.finish_reply(f"answer {n}\n\n" + "more words " * 30, cancelled=False)
    bar = pane.view.verticalScrollBar()
    qtbot.waitUntil(lambda: bar.maximum() > 0 and bar.value() == bar.maximum())
    assert not pane.view.jump_button.isVisible()
    bar.setValue(0)
    assert pane.view.jump_button.isVisible()
    # New text does not drag a reader who scrolled away back down...
    pane.model.add_notice("info", "a review finished")
    assert bar.value() == 0
    qtbot.mouseClick(pane.view.jump_button, Qt.MouseButton.LeftButton)
    assert bar.value() == bar.maximum()
    assert not pane.view.jump_button.isVisible()
    # ...and once back at the bottom, new text is followed again.
    pane.model.add_user("one more")
    pane.model.finish_reply("last " * 200, cancelled=False)
    assert bar.value() == bar.maximum()
    bar.setValue(0)
    qtbot.keyClick(pane.view, Qt.Key.Key_End, Qt.KeyboardModifier.ControlModifier)
    assert bar.value() == bar.maximum()


@pytest.mark.parametrize("padding", [0, 40], ids=["short", "long"])
def test_a_reloaded_reply_is_drawn_as_it_was_live(
    qtbot: QtBot, pane: ChatPane, padding: int
) -> None:
    """Tables (and everything around them) take the same room live and read back; a long
    reply (over WHOLE_REPLY_CHARS, kept in the pieces it streamed in) as well."""
    filler = "".join(f"Paragraph {n} " + "of words " * 40 + "\n\n" for n in range(padding))
    reply = filler + TABLE_REPLY
    assert (len(reply) > WHOLE_REPLY_CHARS) is bool(padding)
    turn(pane, "options?", reply)
    live = pane.view.document()
    live_height = live.documentLayout().documentSize().height()
    live_text = pane.transcript_text()
    pane.show_session(
        {
            "ok": True,
            "session": {"title": "options"},
            "messages": [
                {"role": "user", "content": "options?"},
                {"role": "assistant", "content": reply},
            ],
        }
    )
    reloaded = pane.view.document()
    assert pane.transcript_text() == live_text
    assert reloaded.documentLayout().documentSize().height() == pytest.approx(live_height)
    # The header row's cells start at the top of their row, as the body's do.
    table = reloaded.find("Effect").currentTable()
    assert table is not None
    cells = [table.cellAt(row, 0).format().toTableCellFormat() for row in range(3)]
    assert len({cell.verticalAlignment() for cell in cells}) == 1


def test_regenerate_and_edit_resend_the_last_message(qtbot: QtBot, pane: ChatPane) -> None:
    sent: list[str] = []
    pane.messageSubmitted.connect(sent.append)
    turn(pane, "first question", "first answer")
    turn(pane, "second question", "second answer")
    # Only the last reply regenerates, only the last message is edited.
    assert "Regenerate reply" not in actions(
        pane.view.context_menu_at(point_of(pane, "first answer"))
    )
    assert "Edit and resend…" not in actions(
        pane.view.context_menu_at(point_of(pane, "first question"))
    )
    menu = actions(pane.view.context_menu_at(point_of(pane, "second answer")))
    menu["Regenerate reply"].trigger()  # type: ignore[attr-defined]
    # Asked again: the reply leaves the transcript (and, engine-side, the model's context);
    # the question is not repeated.
    assert sent[-1] == "/retry" and pane.busy
    assert "second answer" not in pane.transcript_text()
    assert pane.transcript_text().count("second question") == 1
    # Busy: nothing to offer until the reply is in.
    assert "Edit and resend…" not in actions(
        pane.view.context_menu_at(point_of(pane, "second question"))
    )
    pane.on_reply_finished({"reply": "another answer", "cancelled": False, "error": None})
    menu = actions(pane.view.context_menu_at(point_of(pane, "another answer")))
    assert "Regenerate reply" in menu
    user_menu = actions(pane.view.context_menu_at(point_of(pane, "second question")))
    assert "Edit and resend…" in user_menu
    pane.view.scroll_to_bottom()
    # The last user row is the resent one.
    last_user = [
        r for r in range(pane.model.rowCount()) if pane.model.item(r).kind.value == "user"
    ][-1]
    pane.view.editLastRequested.emit()
    assert pane.input.toPlainText() == "second question"
    assert pane.model.item(last_user).text == "second question"
    qtbot.keyClicks(pane.input, "second question, shorter")
    qtbot.keyClick(pane.input, Qt.Key.Key_Return)
    assert sent[-1] == "second question, shorter"
    # Not while an earlier session is shown read-only.
    pane.on_reply_finished({"reply": "ok", "cancelled": False, "error": None})
    pane.show_session({"ok": True, "session": {"title": "old"}, "messages": []})
    pane.regenerate()
    assert sent[-1] == "second question, shorter" and not pane.busy


def test_an_empty_conversation_says_where_to_start(qtbot: QtBot, pane: ChatPane) -> None:
    hint = pane.view.empty_state
    assert hint.isVisible() and "/help" in hint.text()
    assert pane.view.viewport().rect().contains(hint.geometry())
    pane._submit("hello")
    assert not hint.isVisible()
    pane.on_reply_finished({"reply": "hi", "cancelled": False, "error": None})
    # An earlier session with nothing in it is not a new conversation.
    pane.show_session({"ok": True, "session": {"title": "empty"}, "messages": []})
    assert not hint.isVisible()
    pane.show_live()
    assert not hint.isVisible()  # the live one has messages
    pane.clear()
    assert hint.isVisible()


def test_a_message_sent_without_a_model_is_kept(qtbot: QtBot, pane: ChatPane) -> None:
    pane._submit("plan the garden")
    assert pane.input.toPlainText() == ""
    pane.on_reply_finished(
        {
            "reply": "",
            "cancelled": False,
            "error": "no model is configured: run `cairn model` to choose one",
            "error_kind": "config",
        }
    )
    assert pane.input.toPlainText() == "plan the garden"  # the draft is back
    shown = pane.transcript_text()
    assert "panel above the chat" in shown and "cairn model" not in shown and not pane.busy
