"""The chat pane: input keys, streaming, stopping, markdown safety, tool calls, notices, and
earlier sessions shown read-only; the transcript model; the markdown stream splitter."""

from __future__ import annotations

import json
from collections.abc import Iterator
from html.parser import HTMLParser
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QFont, QPalette, QTextBlock, QTextCursor, QTextDocument
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from app.models.transcript_model import Kind, Role, TranscriptModel
from app.views.chat_pane import STREAM_INTERVAL_MS, ChatPane
from app.views.markdown import CODE_BLOCK, Colors, StreamSplitter, to_document, to_html

MEMORY_ARGS = json.dumps({"target": "memory", "action": "add", "content": "User writes Python"})
MEMORY_RESULT = {"ok": True, "status": "applied", "usage": {"percent": 12}}


@pytest.fixture
def pane(qtbot: QtBot) -> ChatPane:
    widget = ChatPane()
    qtbot.addWidget(widget)
    widget.resize(640, 600)
    widget.show()
    qtbot.waitExposed(widget)
    return widget


@pytest.fixture
def colors() -> Colors:
    return Colors.from_palette(QApplication.palette())


def blocks(doc: QTextDocument) -> Iterator[QTextBlock]:
    block = doc.begin()
    while block.isValid():
        yield block
        block = block.next()


def fragments(doc: QTextDocument) -> Iterator[Any]:
    for block in blocks(doc):
        it = block.begin()
        while not it.atEnd():
            yield it.fragment()
            it += 1


def shown(pane: ChatPane) -> str:
    return pane.transcript_text()


def squeeze(text: str) -> str:
    return "".join(text.split())


def submit(qtbot: QtBot, pane: ChatPane, text: str) -> None:
    pane.input.setFocus()
    qtbot.keyClicks(pane.input, text)
    with qtbot.waitSignal(pane.messageSubmitted, timeout=1000):
        qtbot.keyClick(pane.input, Qt.Key.Key_Return)


def finish(pane: ChatPane, reply: str = "", cancelled: bool = False) -> None:
    pane.on_reply_finished({"reply": reply, "cancelled": cancelled, "error": None})


class TagBalance(HTMLParser):
    VOID: ClassVar[set[str]] = {"meta", "br", "img", "hr", "input", "link"}

    def __init__(self) -> None:
        super().__init__()
        self.open: list[str] = []
        self.errors: list[str] = []
        self.seen: list[str] = []

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        self.seen.append(tag)
        if tag not in self.VOID:
            self.open.append(tag)

    def handle_startendtag(self, tag: str, attrs: Any) -> None:
        self.seen.append(tag)  # <br />: opens and closes itself

    def handle_endtag(self, tag: str) -> None:
        if not self.open or self.open[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.open[-1:] or 'nothing'}")
            return
        self.open.pop()


def well_formed(html: str) -> TagBalance:
    parser = TagBalance()
    parser.feed(html)
    parser.close()
    assert not parser.errors, parser.errors
    assert not parser.open, f"left open: {parser.open}"
    return parser


# -- the model -------------------------------------------------------------------------------


def test_transcript_model_passes_the_model_tester(qtmodeltester: Any) -> None:
    model = TranscriptModel()
    model.add_user("hello")
    model.append_token("Hi")
    model.append_token(" there")
    model.start_tool("c1", "memory", MEMORY_ARGS)
    model.finish_tool("c1", "memory", "memory: added 1 entry", True, MEMORY_RESULT)
    model.add_notice("memory", "Memory updated", "MEMORY + x")
    model.add_command_output("no sessions yet", True)
    model.append_token("streaming")
    qtmodeltester.check(model)
    assert [model.item(r).kind for r in range(model.rowCount())] == [
        Kind.USER,
        Kind.ASSISTANT,
        Kind.TOOL,
        Kind.NOTICE,
        Kind.COMMAND,
        Kind.ASSISTANT,
    ]
    assert model.index(1).data(Role.TEXT) == "Hi there"
    assert model.index(1).data(Role.STREAMING) is False  # the tool call ended it
    assert model.index(5).data(Role.STREAMING) is True


def test_a_notice_during_a_reply_keeps_the_reply_last() -> None:
    model = TranscriptModel()
    model.append_token("part one")
    model.add_notice("review", "background review skipped")
    model.append_token(", part two")
    assert model.item(model.rowCount() - 1).text == "part one, part two"
    assert model.item(0).kind is Kind.NOTICE


def test_loaded_session_passes_the_model_tester(qtmodeltester: Any) -> None:
    model = TranscriptModel()
    model.load_session(read_result())
    qtmodeltester.check(model)
    kinds = [model.item(r).kind for r in range(model.rowCount())]
    assert kinds == [Kind.USER, Kind.ASSISTANT, Kind.TOOL, Kind.ASSISTANT, Kind.NOTICE, Kind.USER]
    tool = model.item(2)
    assert tool.summary == "memory: added 1 entry (12%)"  # the engine's own summariser
    assert tool.result == MEMORY_RESULT


# -- the input box ---------------------------------------------------------------------------


def test_enter_submits_the_text_and_clears_the_box(qtbot: QtBot, pane: ChatPane) -> None:
    pane.input.setFocus()
    qtbot.keyClicks(pane.input, "hello there")
    with qtbot.waitSignal(pane.messageSubmitted, timeout=1000) as blocker:
        qtbot.keyClick(pane.input, Qt.Key.Key_Return)
    assert blocker.args == ["hello there"]
    assert pane.input.toPlainText() == ""
    assert pane.busy
    assert pane.model.item(0).kind is Kind.USER
    assert "hello there" in shown(pane)


def test_shift_enter_inserts_a_newline(qtbot: QtBot, pane: ChatPane) -> None:
    sent: list[str] = []
    pane.messageSubmitted.connect(sent.append)
    pane.input.setFocus()
    qtbot.keyClicks(pane.input, "line one")
    qtbot.keyClick(pane.input, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    qtbot.keyClicks(pane.input, "line two")
    assert pane.input.toPlainText() == "line one\nline two"
    assert sent == []
    with qtbot.waitSignal(pane.messageSubmitted, timeout=1000) as blocker:
        qtbot.keyClick(pane.input, Qt.Key.Key_Enter)  # the keypad's Enter sends too
    assert blocker.args == ["line one\nline two"]


def test_up_in_an_empty_box_recalls_earlier_prompts(qtbot: QtBot, pane: ChatPane) -> None:
    submit(qtbot, pane, "first prompt")
    finish(pane, "ok")
    submit(qtbot, pane, "second prompt")
    finish(pane, "ok")
    qtbot.keyClick(pane.input, Qt.Key.Key_Up)
    assert pane.input.toPlainText() == "second prompt"
    qtbot.keyClick(pane.input, Qt.Key.Key_Up)
    assert pane.input.toPlainText() == "first prompt"
    qtbot.keyClick(pane.input, Qt.Key.Key_Down)
    assert pane.input.toPlainText() == "second prompt"
    qtbot.keyClick(pane.input, Qt.Key.Key_Down)
    assert pane.input.toPlainText() == ""
    # In a box with the user's own text, ↑ moves the cursor and replaces nothing.
    qtbot.keyClicks(pane.input, "draft")
    qtbot.keyClick(pane.input, Qt.Key.Key_Up)
    assert pane.input.toPlainText() == "draft"


def test_nothing_is_sent_while_a_reply_is_running(qtbot: QtBot, pane: ChatPane) -> None:
    submit(qtbot, pane, "question")
    sent: list[str] = []
    pane.messageSubmitted.connect(sent.append)
    qtbot.keyClicks(pane.input, "follow-up")
    qtbot.keyClick(pane.input, Qt.Key.Key_Return)
    assert sent == []
    assert pane.input.toPlainText() == "follow-up"  # kept for when the reply is done


# -- streaming and stopping ------------------------------------------------------------------


def test_streaming_500_tokens_updates_the_last_message(qtbot: QtBot, pane: ChatPane) -> None:
    for n in range(20):  # some history that must not be re-rendered per token
        pane.model.add_user(f"old question {n}")
        pane.model.finish_reply(f"old answer {n}", cancelled=False)
    submit(qtbot, pane, "count to 500")
    tokens = [f"word{n}" + ("\n\n" if n % 50 == 49 else " ") for n in range(500)]
    before = pane.view.renders
    for token in tokens:
        pane.on_token(token)
    # Throttled: 500 tokens in a burst cost one render (the new row), not 500.
    assert pane.view.renders - before <= 2
    qtbot.waitUntil(lambda: "word499" in shown(pane), timeout=5 * STREAM_INTERVAL_MS * 10)
    row = pane.model.rowCount() - 1
    assert pane.model.item(row).text == "".join(tokens)
    assert pane.model.item(row).streaming
    # Only the reply's own pieces were filled (10 paragraphs): none of the 40 history rows.
    assert pane.view.renders - before <= 12
    finish(pane, "".join(tokens))
    assert not pane.model.item(row).streaming
    assert pane.model.rowCount() == 42  # the final reply did not add a duplicate row
    assert squeeze(shown(pane)).endswith(squeeze("".join(tokens)))
    assert shown(pane).count("word250") == 1
    assert not pane.busy
    assert pane.send_button.text() == "Send"


def test_streamed_render_matches_the_final_render(qtbot: QtBot, pane: ChatPane) -> None:
    code = "\n".join(f"    line_{n} = {n}  # <{n}>" for n in range(120))
    reply = f"# Plan\n\nIntro *text*.\n\n```python\ndef f():\n{code}\n```\n\n- a\n- b\n\nDone."
    pane.model.add_user("go")
    for start in range(0, len(reply), 7):
        pane.on_token(reply[start : start + 7])
        if start % 700 == 0:
            pane.flush()
    pane.flush()
    streamed = shown(pane)
    code_lines = {b.text() for b in blocks(pane.view.document()) if is_code(b)}
    assert {f"    line_{n} = {n}  # <{n}>" for n in range(120)} <= code_lines
    finish(pane, reply)
    assert squeeze(streamed) == squeeze(shown(pane))
    pane.view.rebuild()  # renders the reply in one piece
    assert squeeze(streamed) == squeeze(shown(pane))
    assert {b.text() for b in blocks(pane.view.document()) if is_code(b)} == code_lines


def test_esc_while_streaming_requests_a_stop(qtbot: QtBot, pane: ChatPane) -> None:
    stops: list[bool] = []
    pane.stopRequested.connect(lambda: stops.append(True))
    qtbot.keyClick(pane.input, Qt.Key.Key_Escape)
    assert stops == []  # nothing to stop
    submit(qtbot, pane, "write a poem")
    pane.on_token("Roses")
    assert pane.send_button.text() == "Stop"
    with qtbot.waitSignal(pane.stopRequested, timeout=1000):
        qtbot.keyClick(pane.input, Qt.Key.Key_Escape)
    assert pane.send_button.text() == "Stopping…"
    assert not pane.send_button.isEnabled()
    finish(pane, "Roses", cancelled=True)
    assert pane.send_button.text() == "Send"
    assert pane.model.item(1).cancelled
    assert "stopped" in shown(pane)


def test_the_stop_button_requests_a_stop(qtbot: QtBot, pane: ChatPane) -> None:
    submit(qtbot, pane, "long answer please")
    with qtbot.waitSignal(pane.stopRequested, timeout=1000):
        qtbot.mouseClick(pane.send_button, Qt.MouseButton.LeftButton)


def test_a_stopped_reply_inside_a_code_fence_stays_well_formed(
    qtbot: QtBot, pane: ChatPane, colors: Colors
) -> None:
    partial = "Here you go:\n\n```python\nfor i in range(3):\n    print('<i>', i)\n"
    html = to_html(partial, colors)
    tags = well_formed(html)
    assert "pre" in tags.seen
    assert "for i in range(3):" in html
    assert "&lt;i&gt;" in html

    submit(qtbot, pane, "a loop")
    for token in partial.split(" "):
        pane.on_token(token + " ")
    finish(pane, partial, cancelled=True)
    doc = pane.view.document()
    code = [b.text() for b in blocks(doc) if is_code(b)]
    assert code[0].startswith("for i in range(3):")
    stopped = next(b for b in blocks(doc) if "stopped" in b.text())
    assert not is_code(stopped)  # the marker is outside the closed code block


def test_html_in_model_output_is_shown_as_text(
    qtbot: QtBot, pane: ChatPane, colors: Colors
) -> None:
    evil = (
        "<b>bold?</b> <script>alert(1)</script> <img src=x onerror=alert(1)> "
        "[click](javascript:alert(1)) [docs](https://example.org/docs)"
    )
    html = to_html(evil, colors)
    assert "<script" not in html and "<img" not in html and "<b>" not in html
    assert "&lt;script&gt;" in html
    assert "javascript:" not in html
    well_formed(html)

    submit(qtbot, pane, "hi")
    pane.on_token(evil)
    finish(pane, evil)
    text = shown(pane)
    assert "<b>bold?</b>" in text and "<script>alert(1)</script>" in text
    frags = list(fragments(pane.view.document()))
    assert not any(f.charFormat().fontWeight() >= QFont.Weight.Bold for f in frags)
    hrefs = [f.charFormat().anchorHref() for f in frags if f.charFormat().isAnchor()]
    assert "https://example.org/docs" in hrefs
    assert not any(h.startswith("javascript") for h in hrefs)


@pytest.mark.parametrize(
    ("source", "check"),
    [
        ("# Title\n\nbody", lambda b: b.blockFormat().headingLevel() == 1 and b.text() == "Title"),
        ("- one\n- two", lambda b: b.textList() is not None and b.text() == "one"),
        ("```\nx = 1\n```\n\nafter", lambda b: is_code(b) and b.text() == "x = 1"),
        ("| a | b |\n|---|---|\n| 1 | 2 |", lambda b: QTextCursor(b).currentTable() is not None),
    ],
)
def test_each_block_keeps_its_kind_in_the_transcript(
    pane: ChatPane, source: str, check: Any
) -> None:
    # Every message is rendered into the shared document as a fragment; a careless insert
    # would turn the first heading into a paragraph or lose the first list item.
    pane.model.add_user("before")
    pane.model.finish_reply(source, cancelled=False)
    pane.model.add_user("after")
    assert any(check(b) for b in blocks(pane.view.document()))


def test_long_transcripts_follow_the_newest_line_unless_scrolled_up(pane: ChatPane) -> None:
    for n in range(60):
        pane.model.add_user(f"question {n}")
        pane.model.finish_reply(f"answer {n}\n\nwith a second paragraph", cancelled=False)
    bar = pane.view.verticalScrollBar()
    assert bar.maximum() > 0
    assert bar.value() == bar.maximum()
    bar.setValue(0)
    pane.model.add_notice("info", "something happened")
    assert bar.value() == 0  # the user is reading: do not yank the view


# -- tool calls and notices ------------------------------------------------------------------


def click_tool_line(qtbot: QtBot, pane: ChatPane) -> None:
    doc = pane.view.document()
    start = next(
        f.position() for f in fragments(doc) if f.charFormat().anchorHref().startswith("cairn:")
    )
    cursor = QTextCursor(doc)
    cursor.setPosition(start + 4)
    rect = pane.view.cursorRect(cursor)
    qtbot.mouseClick(
        pane.view.viewport(),
        Qt.MouseButton.LeftButton,
        pos=QPoint(rect.left() - 2, rect.center().y()),
    )


def test_tool_calls_show_a_summary_and_expand(qtbot: QtBot, pane: ChatPane) -> None:
    submit(qtbot, pane, "remember that I write Python")
    pane.on_tool_started("c1", "memory", MEMORY_ARGS)
    assert "memory …" in shown(pane)
    pane.on_tool_finished("c1", "memory", "memory: added 1 entry (12%)", True, MEMORY_RESULT)
    assert "memory: added 1 entry (12%)" in shown(pane)
    assert "User writes Python" not in shown(pane)  # compact until asked

    click_tool_line(qtbot, pane)
    qtbot.waitUntil(lambda: "User writes Python" in shown(pane), timeout=1000)
    assert '"status": "applied"' in shown(pane)
    assert pane.model.item(1).expanded

    click_tool_line(qtbot, pane)
    qtbot.waitUntil(lambda: "User writes Python" not in shown(pane), timeout=1000)


def test_a_failed_tool_call_is_marked(qtbot: QtBot, pane: ChatPane, colors: Colors) -> None:
    pane.on_tool_started("c2", "memory", "{}")
    pane.on_tool_finished("c2", "memory", "memory: refused (blocked)", False, {"ok": False})
    line = next(f for f in fragments(pane.view.document()) if "refused" in f.text())
    assert line.charFormat().foreground().color() == colors.error


@pytest.mark.parametrize(
    ("mode", "line_shown", "detail_shown"),
    [("off", False, False), ("on", True, False), ("verbose", True, True)],
)
def test_memory_notices_obey_the_notification_mode(
    pane: ChatPane, mode: str, line_shown: bool, detail_shown: bool
) -> None:
    pane.on_notice("memory", "Memory updated", "MEMORY + prefers tabs")
    pane.on_notice("error", "the model server stopped", "connection refused")
    pane.set_notifications(mode)  # applies to notices already shown, too
    text = shown(pane)
    assert ("Memory updated" in text) is line_shown
    assert ("prefers tabs" in text) is detail_shown
    assert "the model server stopped" in text and "connection refused" in text  # not memory
    pane.on_notice("memory", "Memory change waiting for your approval", "USER + likes tea")
    text = shown(pane)
    assert ("waiting for your approval" in text) is line_shown
    assert ("likes tea" in text) is detail_shown


def test_an_error_is_shown_once(qtbot: QtBot, pane: ChatPane) -> None:
    submit(qtbot, pane, "hello")
    pane.on_notice("error", "model unreachable", "")
    pane.on_reply_finished({"reply": "", "cancelled": False, "error": "model unreachable"})
    assert shown(pane).count("model unreachable") == 1
    submit(qtbot, pane, "again")
    pane.on_reply_finished({"reply": "", "cancelled": False, "error": "busy now"})
    assert "busy now" in shown(pane)


def test_command_output_and_new_session(qtbot: QtBot, pane: ChatPane) -> None:
    submit(qtbot, pane, "/help")
    pane.on_command_finished({"ok": True, "text": "/new   start over", "data": {}, "action": None})
    assert "/new   start over" in shown(pane)
    assert not pane.busy
    submit(qtbot, pane, "/new")
    pane.on_command_finished(
        {"ok": True, "text": "new session started", "data": {}, "action": "new_session"}
    )
    assert "start over" not in shown(pane)
    assert "new session started" in shown(pane)
    assert pane.model.rowCount() == 1


# -- earlier sessions ------------------------------------------------------------------------


def read_result() -> dict[str, Any]:
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "memory", "arguments": MEMORY_ARGS},
    }
    return {
        "ok": True,
        "mode": "read",
        "session_id": "s-old",
        "title": "Python file questions",
        "started_at": 1_760_000_000.0,
        "parent_session_id": None,
        "messages": [
            {"id": 1, "role": "user", "content": "How do I count lines?"},
            {"id": 2, "role": "assistant", "content": "Use `sum`.", "tool_calls": [call]},
            {"id": 3, "role": "tool", "content": json.dumps(MEMORY_RESULT), "tool_name": "memory"},
            {"id": 4, "role": "assistant", "content": "Saved that you write **Python**."},
        ],
        "omitted": 12,
        "last_messages": [{"id": 17, "role": "user", "content": "thanks"}],
    }


def test_an_earlier_session_is_shown_read_only(qtbot: QtBot, pane: ChatPane) -> None:
    submit(qtbot, pane, "live question")
    pane.on_token("live answer")
    pane.show_session(read_result())
    text = shown(pane)
    assert "How do I count lines?" in text and "Saved that you write Python." in text
    assert "memory: added 1 entry (12%)" in text
    assert "12 messages not shown" in text
    assert "live question" not in text
    assert pane.banner.isVisible() and "Python file questions" in pane.banner_label.text()
    assert pane.input.isReadOnly()
    sent: list[str] = []
    pane.messageSubmitted.connect(sent.append)
    pane.on_token(" continues")  # the live reply keeps streaming meanwhile
    pane.flush()
    assert "continues" not in shown(pane)

    qtbot.mouseClick(pane.back_button, Qt.MouseButton.LeftButton)
    assert not pane.banner.isVisible()
    pane.flush()
    assert "live answer continues" in shown(pane)
    assert not pane.input.isReadOnly()
    assert sent == []


def test_palette_change_rerenders_with_new_colours(pane: ChatPane) -> None:
    pane.model.add_user("hello")
    dark = QPalette(pane.palette())
    dark.setColor(QPalette.ColorRole.Base, Qt.GlobalColor.black)
    dark.setColor(QPalette.ColorRole.Text, Qt.GlobalColor.white)
    pane.view.setPalette(dark)
    frame = pane.view.document().rootFrame().childFrames()[0]
    assert frame.frameFormat().background().color().lightnessF() < 0.5


# -- the stream splitter ---------------------------------------------------------------------


def is_code(block: QTextBlock) -> bool:
    return block.blockFormat().boolProperty(CODE_BLOCK)


SAMPLE = (
    "# Heading\n\nA paragraph with `code` and *em*.\n\n- item one\n\n- item two\n  continued\n\n"
    "    indented code\n\n"
    "```python\n"
    + "\n".join(f"x{n} = {n}\n" if n % 9 == 0 else f"x{n} = {n}" for n in range(95))
    + "\n```\n\n1. first\n2. second\n\n> quoted\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nThe end."
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(cuts=st.lists(st.integers(min_value=0, max_value=len(SAMPLE)), max_size=60))
def test_stream_pieces_render_like_the_whole(colors: Colors, cuts: list[int]) -> None:
    splitter = StreamSplitter()
    pieces: list[str] = []
    for end in [*sorted(cuts), len(SAMPLE)]:
        pieces += splitter.feed(SAMPLE[:end])
        tail = splitter.tail(SAMPLE[:end])
        partial = "".join(to_document(p, colors).toPlainText() for p in [*pieces, tail])
        assert squeeze(partial) == squeeze(to_document(SAMPLE[:end], colors).toPlainText())
    # It does cut: after the heading, around the list, and the long code block into parts.
    assert pieces[0] == "# Heading\n\n"
    assert sum(p.startswith("```python") for p in pieces) >= 2
    code: set[str] = set()
    for piece in pieces:
        doc = to_document(piece, colors)
        code |= {b.text() for b in blocks(doc) if is_code(b)}
    assert {f"x{n} = {n}" for n in range(95)} <= code
