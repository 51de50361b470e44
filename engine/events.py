"""What an agent tells its listener while it works: streamed tokens, tool calls starting and
finishing, notices (memory saved, compression, errors), a new session, the finished reply.

Its own module so that whatever reports on an agent's behalf (the background review) and every
front end (the chat CLI, the window) can name the events without importing the agent.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TokenReceived:
    text: str


@dataclass(frozen=True)
class ToolStarted:
    call_id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class ToolFinished:
    call_id: str
    name: str
    summary: str
    ok: bool
    result: dict[str, Any]


@dataclass(frozen=True)
class Notice:
    """Something the user should see besides the reply (memory saved, compression, errors)."""

    kind: str  # memory | review | compression | session | provider | error | info
    text: str
    detail: str = ""


@dataclass(frozen=True)
class SessionStarted:
    session_id: str
    parent_session_id: str | None
    reason: (
        str  # start | new | continue | compression | window (a shorter prompt for a smaller window)
    )


@dataclass(frozen=True)
class ReplyFinished:
    content: str
    cancelled: bool


AgentEvent = TokenReceived | ToolStarted | ToolFinished | Notice | SessionStarted | ReplyFinished
Listener = Callable[[AgentEvent], None]
