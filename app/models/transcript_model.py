"""The chat transcript as a list model: one row per thing the user sees in the chat pane.

Rows are user messages, assistant messages (streaming until the reply or a tool call ends
them; ``cancelled`` when the user stopped them), tool calls (running until their result
arrives; expandable to show raw arguments and result), notices and slash-command output.

Streamed tokens are kept as a list of parts and joined only when the text is read: a long
reply arrives as thousands of tokens, and joining a growing string per token is quadratic.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import IntEnum, StrEnum
from typing import Any

from PySide6.QtCore import (
    QAbstractListModel,
    QByteArray,
    QModelIndex,
    QPersistentModelIndex,
    Qt,
)

Index = QModelIndex | QPersistentModelIndex


class Kind(StrEnum):
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"
    NOTICE = "notice"
    COMMAND = "command"


class Role(IntEnum):
    KIND = Qt.ItemDataRole.UserRole + 1
    TEXT = Qt.ItemDataRole.UserRole + 2
    STREAMING = Qt.ItemDataRole.UserRole + 3
    CANCELLED = Qt.ItemDataRole.UserRole + 4
    TOOL_NAME = Qt.ItemDataRole.UserRole + 5
    SUMMARY = Qt.ItemDataRole.UserRole + 6
    OK = Qt.ItemDataRole.UserRole + 7
    ARGUMENTS = Qt.ItemDataRole.UserRole + 8
    RESULT = Qt.ItemDataRole.UserRole + 9
    EXPANDED = Qt.ItemDataRole.UserRole + 10
    NOTICE_KIND = Qt.ItemDataRole.UserRole + 11
    DETAIL = Qt.ItemDataRole.UserRole + 12
    UID = Qt.ItemDataRole.UserRole + 13
    ITEM = Qt.ItemDataRole.UserRole + 14


_uids = itertools.count(1)


@dataclass(eq=False)
class ChatItem:
    """One row. ``uid`` is stable for the item's life, unlike its row, so views can refer to
    it in links ("expand tool call 12")."""

    kind: Kind
    parts: list[str] = field(default_factory=list)
    streaming: bool = False
    cancelled: bool = False
    # tool calls: ok is None while the call runs
    call_id: str = ""
    name: str = ""
    arguments: str = ""
    summary: str = ""
    ok: bool | None = None
    result: Any = None
    expanded: bool = False
    # notices: kind of notice (memory, review, compression, session, error, info)
    notice_kind: str = ""
    detail: str = ""
    uid: int = field(default_factory=lambda: next(_uids))
    _joined: str | None = field(default=None, repr=False)

    @property
    def text(self) -> str:
        if self._joined is None:
            self._joined = "".join(self.parts)
            self.parts = [self._joined] if self._joined else []
        return self._joined

    def set_text(self, text: str) -> None:
        self.parts = [text] if text else []
        self._joined = text

    def append(self, token: str) -> None:
        self.parts.append(token)
        self._joined = None

    def line(self) -> str:
        """A one-line plain-text rendering (screen readers, copy, tests)."""
        if self.kind is Kind.TOOL:
            if self.ok is None:
                return f"{self.name} …"
            return self.summary or f"{self.name}: {'done' if self.ok else 'failed'}"
        if self.kind is Kind.NOTICE:
            return f"{self.text}\n{self.detail}" if self.detail else self.text
        if self.kind is Kind.ASSISTANT and self.cancelled:
            return f"{self.text}\n[stopped]" if self.text else "[stopped]"
        return self.text


def summarize_tool(name: str, arguments: str, result: Any) -> str:
    """The one-line summary the engine's tool would give, for calls read back from history."""
    # Imported when a stored session is shown, long after the worker has loaded them: they
    # bring the database layer, which the window does not wait for at start.
    from engine.memory import tool as memory_tool
    from engine.sessions import tool as sessions_tool

    summarizers: dict[str, Callable[[dict[str, Any], dict[str, Any]], str]] = {
        "memory": memory_tool.summarize,
        "session_search": sessions_tool.summarize,
    }
    parsed_args = _json_object(arguments)
    parsed_result = result if isinstance(result, dict) else {}
    summarize = summarizers.get(name)
    if summarize is not None and parsed_args is not None:
        try:
            return summarize(parsed_args, parsed_result)
        except Exception:  # an old or malformed record must not break the view
            pass
    if parsed_result.get("ok", True) is False:
        return f"{name}: failed ({parsed_result.get('error', 'error')})"
    return f"{name}: done"


def _json_object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _parse_result(content: str) -> Any:
    try:
        return json.loads(content)
    except ValueError:
        return content


class TranscriptModel(QAbstractListModel):
    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self._items: list[ChatItem] = []

    # -- Qt model interface ----------------------------------------------------------------

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self._items)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self._items):
            return None
        item = self._items[index.row()]
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole):
            return item.line()
        getters: dict[int, Callable[[], Any]] = {
            Role.KIND: lambda: item.kind.value,
            Role.TEXT: lambda: item.text,
            Role.STREAMING: lambda: item.streaming,
            Role.CANCELLED: lambda: item.cancelled,
            Role.TOOL_NAME: lambda: item.name,
            Role.SUMMARY: lambda: item.summary,
            Role.OK: lambda: item.ok,
            Role.ARGUMENTS: lambda: item.arguments,
            Role.RESULT: lambda: item.result,
            Role.EXPANDED: lambda: item.expanded,
            Role.NOTICE_KIND: lambda: item.notice_kind,
            Role.DETAIL: lambda: item.detail,
            Role.UID: lambda: item.uid,
            Role.ITEM: lambda: item,
        }
        getter = getters.get(role)
        return getter() if getter is not None else None

    def setData(self, index: Index, value: Any, role: int = Qt.ItemDataRole.EditRole) -> bool:
        if role != Role.EXPANDED or not index.isValid():
            return False
        item = self._items[index.row()]
        if item.kind is not Kind.TOOL or item.expanded == bool(value):
            return False
        item.expanded = bool(value)
        self.dataChanged.emit(index, index, [Role.EXPANDED])
        return True

    def flags(self, index: Index) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        return Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable

    def roleNames(self) -> dict[int, QByteArray]:
        names = super().roleNames()
        for role in Role:
            names[int(role)] = QByteArray(role.name.lower().encode())
        return names

    # -- reading ---------------------------------------------------------------------------

    def item(self, row: int) -> ChatItem:
        return self._items[row]

    def items(self) -> list[ChatItem]:
        return list(self._items)

    def row_of(self, uid: int) -> int | None:
        for row in range(len(self._items) - 1, -1, -1):
            if self._items[row].uid == uid:
                return row
        return None

    def streaming_row(self) -> int | None:
        if self._items and self._items[-1].streaming:
            return len(self._items) - 1
        return None

    # -- live chat -------------------------------------------------------------------------

    def add_user(self, text: str) -> int:
        self.end_streaming()
        return self._append(ChatItem(Kind.USER, parts=[text]))

    def append_token(self, token: str) -> int:
        """Add a streamed token to the reply in progress, starting one if needed."""
        row = self.streaming_row()
        if row is None:
            return self._append(ChatItem(Kind.ASSISTANT, parts=[token], streaming=True))
        self._items[row].append(token)
        self._changed(row, [Role.TEXT])
        return row

    def end_streaming(self, *, cancelled: bool = False) -> int | None:
        """The reply in progress is complete (or stopped); returns its row."""
        row = self.streaming_row()
        if row is None:
            return None
        item = self._items[row]
        item.streaming = False
        item.cancelled = cancelled
        self._changed(row, [Role.STREAMING, Role.CANCELLED])
        return row

    def finish_reply(self, reply: str, *, cancelled: bool) -> None:
        """The turn ended. Ends the streamed message; shows ``reply`` if nothing streamed it
        (a provider that does not stream), and a bare "stopped" marker for a reply stopped
        before its first token."""
        if self.end_streaming(cancelled=cancelled) is not None:
            return
        last_reply = next(
            (i for i in reversed(self._items) if i.kind in (Kind.ASSISTANT, Kind.USER)), None
        )
        already_shown = (
            last_reply is not None
            and last_reply.kind is Kind.ASSISTANT
            and last_reply.text == reply
        )
        if (reply and not already_shown) or cancelled:
            self._append(ChatItem(Kind.ASSISTANT, parts=[reply], cancelled=cancelled))

    def start_tool(self, call_id: str, name: str, arguments: str) -> int:
        self.end_streaming()
        return self._append(ChatItem(Kind.TOOL, call_id=call_id, name=name, arguments=arguments))

    def finish_tool(self, call_id: str, name: str, summary: str, ok: bool, result: Any) -> int:
        for row in range(len(self._items) - 1, -1, -1):
            item = self._items[row]
            if item.kind is Kind.TOOL and item.call_id == call_id and item.ok is None:
                item.summary, item.ok, item.result = summary, ok, result
                self._changed(row, [Role.SUMMARY, Role.OK, Role.RESULT])
                return row
        # A result without a start (the start was missed): show it anyway.
        self.end_streaming()
        return self._append(
            ChatItem(Kind.TOOL, call_id=call_id, name=name, summary=summary, ok=ok, result=result)
        )

    def add_notice(self, kind: str, text: str, detail: str = "") -> int:
        # Not the end of a streaming reply: a background review can report mid-reply.
        item = ChatItem(Kind.NOTICE, parts=[text], notice_kind=kind, detail=detail)
        row = self.streaming_row()
        if row is None:
            return self._append(item)
        # Keep the reply in progress last so its tokens keep flowing into it.
        return self._insert(row, item)

    def add_command_output(self, text: str, ok: bool) -> int:
        self.end_streaming()
        return self._append(ChatItem(Kind.COMMAND, parts=[text], ok=ok))

    def set_expanded(self, row: int, expanded: bool) -> bool:
        return self.setData(self.index(row), expanded, Role.EXPANDED)

    def toggle_expanded(self, uid: int) -> bool:
        row = self.row_of(uid)
        return row is not None and self.set_expanded(row, not self._items[row].expanded)

    def drop_after_last_user(self) -> bool:
        """Remove the rows after the last user message (the reply being asked again, its
        tool rows and notices); False when there is no user message."""
        rows = [r for r, item in enumerate(self._items) if item.kind is Kind.USER]
        if not rows:
            return False
        first = rows[-1] + 1
        if first < len(self._items):
            self.beginRemoveRows(QModelIndex(), first, len(self._items) - 1)
            del self._items[first:]
            self.endRemoveRows()
        return True

    def clear(self) -> None:
        self.beginResetModel()
        self._items = []
        self.endResetModel()

    # -- an earlier session ----------------------------------------------------------------

    def load_session(self, result: dict[str, Any]) -> None:
        """Replace the rows with a ``session_search`` read result (read-only viewing)."""
        items: list[ChatItem] = []
        if not result.get("ok", True):
            message = result.get("message") or "the session could not be read"
            items.append(ChatItem(Kind.NOTICE, parts=[message], notice_kind="error"))
        messages = list(result.get("messages") or [])
        _add_messages(items, messages)
        omitted = int(result.get("omitted") or 0)
        if omitted:
            text = f"… {omitted:,} message{'s' if omitted != 1 else ''} not shown …"
            items.append(ChatItem(Kind.NOTICE, parts=[text], notice_kind="info"))
        _add_messages(items, list(result.get("last_messages") or []))
        for item in items:
            if item.kind is Kind.TOOL and item.ok is None:  # the result was not stored
                item.ok, item.summary = True, f"{item.name}: no result recorded"
        self.beginResetModel()
        self._items = items
        self.endResetModel()

    # -- internals -------------------------------------------------------------------------

    def _append(self, item: ChatItem) -> int:
        return self._insert(len(self._items), item)

    def _insert(self, row: int, item: ChatItem) -> int:
        self.beginInsertRows(QModelIndex(), row, row)
        self._items.insert(row, item)
        self.endInsertRows()
        return row

    def _changed(self, row: int, roles: list[Role]) -> None:
        index = self.index(row)
        self.dataChanged.emit(index, index, [int(r) for r in roles] + [Qt.ItemDataRole.DisplayRole])


def _add_messages(items: list[ChatItem], messages: list[dict[str, Any]]) -> None:
    from engine.compression import is_summary_message

    for message in messages:
        role = message.get("role")
        content = str(message.get("content") or "")
        if role == "user" and is_summary_message(message):
            items.append(
                ChatItem(
                    Kind.NOTICE,
                    parts=["summary of the earlier conversation"],
                    notice_kind="compression",
                    detail=content,
                )
            )
        elif role == "user":
            items.append(ChatItem(Kind.USER, parts=[content]))
        elif role == "assistant":
            if content.strip():
                items.append(ChatItem(Kind.ASSISTANT, parts=[content]))
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {}
                items.append(
                    ChatItem(
                        Kind.TOOL,
                        call_id=str(call.get("id") or ""),
                        name=str(function.get("name") or call.get("name") or "tool"),
                        arguments=str(function.get("arguments") or ""),
                    )
                )
        elif role == "tool":
            _attach_result(items, str(message.get("tool_name") or ""), content)
        elif role == "system" and content.strip():
            items.append(
                ChatItem(Kind.NOTICE, parts=["system message"], notice_kind="info", detail=content)
            )


def _attach_result(items: list[ChatItem], name: str, content: str) -> None:
    """Give a stored tool result to the oldest call of that tool still without one; the stored
    rows keep the tool's name but not its call id."""
    result = _parse_result(content)
    ok = not (isinstance(result, dict) and result.get("ok") is False)
    for item in items:
        if item.kind is Kind.TOOL and item.ok is None and (item.name == name or not name):
            item.result, item.ok = result, ok
            item.summary = summarize_tool(item.name, item.arguments, result)
            return
    items.append(
        ChatItem(
            Kind.TOOL,
            name=name or "tool",
            ok=ok,
            result=result,
            summary=summarize_tool(name or "tool", "", result),
        )
    )
