"""The engine side of the desktop client: a QObject living in its own QThread.

Everything that touches disk, the database or the model runs on that thread. The worker is the
context the window's operations and queries run against (:class:`app.ops.OpRunner` calls
their functions with it, on this thread): it opens the home (:meth:`open_memory`,
:meth:`open_agent`), holds the agent, and streams a chat turn's tokens, tool calls and notices
to the GUI through its signals while :meth:`turn` runs.

``cancel`` is the one method the GUI calls directly: the worker is busy inside the turn it
should stop, so a queued request would arrive too late.

The engine is imported here on first use, on this thread: importing it takes about a second,
which the window spends getting on screen instead.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Signal, Slot

from engine.home import Home

if TYPE_CHECKING:
    from engine.agent import Agent, AgentEvent
    from engine.journey import JourneyBuilder
    from engine.memory.service import MemoryService
    from engine.ops import OpResult
    from engine.pending import PendingWrites

log = logging.getLogger(__name__)

REVIEW_GRACE_SECONDS = 3.0
# Tools whose writes publish their own changes (or write nothing): any other tool in a turn
# may have changed skills, facts or a queue.
_PUBLISHING_TOOLS = frozenset({"memory", "session_search"})


class EngineWorker(QObject):
    # -- to the GUI, while a turn streams --------------------------------------------------
    tokenReceived = Signal(str)
    toolStarted = Signal(str, str, str)  # call id, tool name, raw arguments
    toolFinished = Signal(str, str, str, bool, object)  # call id, name, summary, ok, result
    noticeRaised = Signal(str, str, str)  # kind, text, detail
    failed = Signal(str)

    def __init__(self, home: Home, cwd: Path | None = None) -> None:
        super().__init__()
        self.home = home
        self.cwd = cwd
        self.agent: Agent | None = None
        self._memory: MemoryService | None = None
        # Kept between loads: the history only grows, so each load replays only new events.
        self.journey_builder: JourneyBuilder | None = None
        self._turn_tools: set[str] = set()

    # -- opening the home (operations) -------------------------------------------------------

    def open_memory(self) -> OpResult:
        """Memory first: opening the agent can import the model's SDK and ask the server for
        its context window, seconds the memory panel need not wait for."""
        from engine.changes import PENDING_SUBSYSTEMS, Changes
        from engine.ops import OpResult

        self.memory()
        return OpResult(
            changes=Changes(
                targets=frozenset({"memory", "user"}),
                pending=frozenset(PENDING_SUBSYSTEMS),
                config=frozenset({"memory"}),
            )
        )

    def open_agent(self) -> OpResult:
        """The agent (with or without a model); everything the views show is new."""
        from engine.changes import Changes
        from engine.ops import OpResult

        agent = self._open_agent()
        if agent is None:
            return OpResult(ok=False, status="failed")
        self.agent, self._memory = agent, agent.memory
        self._offer_hermes_import(agent)
        return OpResult(changes=Changes.everything())

    def _offer_hermes_import(self, agent: Agent) -> None:
        """Say so when the home's other program holds sessions Cairn has not copied."""
        from engine.sessions import hermes

        try:
            text = hermes.hint(self.home, agent.store)
        except Exception:  # only a hint: never in the way of opening the home
            log.debug("Hermes sessions not checked", exc_info=True)
            return
        if text:
            self.noticeRaised.emit("info", text.replace("`", ""), "")

    def _open_agent(self) -> Agent | None:
        try:
            from engine.agent import Agent

            return Agent(self.home, source="gui", cwd=self.cwd, listener=self._relay)
        except Exception as exc:  # shown in the window, never raised into Qt's event loop
            log.exception("engine failed to start")
            self.failed.emit(str(exc))
            return None

    @Slot()
    def stop(self) -> None:
        """End the session (the window is closing); a running review gets a moment."""
        if self.agent is not None:
            self.agent.close(review_timeout=REVIEW_GRACE_SECONDS)
            self.agent = None

    def cancel(self) -> None:
        """Stop the reply in progress. Safe from the GUI thread."""
        if self.agent is not None:
            self.agent.cancel()

    # -- what operations use ---------------------------------------------------------------

    def memory(self) -> MemoryService:
        """The agent's memory service, or one of its own until the agent is open."""
        if self._memory is None:
            from engine.config import load_config
            from engine.memory.service import MemoryService

            self._memory = MemoryService(self.home, load_config(self.home))
        return self._memory

    def pending(self) -> PendingWrites:
        from engine.pending import PendingWrites

        return PendingWrites(self.home, self.memory())

    def need_agent(self) -> Agent:
        if self.agent is None:
            raise RuntimeError("the engine is not running")
        return self.agent

    # -- chat ------------------------------------------------------------------------------

    def turn(self, text: str) -> OpResult:
        """A line from the chat box: a slash command or a user turn, streamed while it runs.

        ``status`` is ``"command"`` (``result``: ok, text, data, action) or ``"reply"``
        (``result``: reply, cancelled, error, error_kind).
        """
        from engine.changes import PENDING_SUBSYSTEMS, Changes
        from engine.commands import RETRY, as_message, is_command, run_command
        from engine.ops import OpResult, collected

        agent = self.need_agent()
        line = text.strip()
        message = as_message(text)
        if line == RETRY:  # ask the last message again (the chat dropped the reply's rows)
            again = agent.take_back_last_turn()
            if again is None:
                return OpResult(
                    status="command",
                    result={"ok": False, "text": "nothing to ask again yet", "data": {}},
                )
            message = again
        elif is_command(line):
            outcome = run_command(agent, line)
            # A command may do anything (/new, /memory approval, /model): every view rereads.
            return OpResult(
                status="command",
                changes=Changes.everything(),
                result={
                    "ok": outcome.ok,
                    "text": outcome.text,
                    "data": outcome.data,
                    "action": outcome.action,
                },
            )
        self._turn_tools = set()
        turn = collected(lambda: self._send(agent, message))
        changes = turn.changes | Changes(sessions=True)
        if self._turn_tools - _PUBLISHING_TOOLS:
            changes = changes | Changes(
                skills=True, facts=True, pending=frozenset(PENDING_SUBSYSTEMS)
            )
        return OpResult(status="reply", changes=changes, result=turn.result)

    def _send(self, agent: Agent, message: Any) -> dict[str, Any]:
        result = agent.send(message)
        return {
            "reply": result.reply,
            "cancelled": result.cancelled,
            "error": result.error,
            "error_kind": result.error_kind,
        }

    def _relay(self, event: AgentEvent) -> None:
        # Runs on this worker thread, or on the background review's thread: signals are
        # thread-safe, and queued connections deliver them on the GUI thread.
        from engine.agent import (
            Notice,
            ReplyFinished,
            SessionStarted,
            TokenReceived,
            ToolFinished,
            ToolStarted,
        )

        if isinstance(event, TokenReceived):
            self.tokenReceived.emit(event.text)
        elif isinstance(event, ToolStarted):
            self._turn_tools.add(event.name)
            self.toolStarted.emit(event.call_id, event.name, event.arguments)
        elif isinstance(event, ToolFinished):
            self.toolFinished.emit(event.call_id, event.name, event.summary, event.ok, event.result)
        elif isinstance(event, Notice):
            # What the background review wrote reaches the views as the engine's change
            # events (see app.ops), not through its notice.
            self.noticeRaised.emit(event.kind, event.text, event.detail)
        elif isinstance(event, SessionStarted | ReplyFinished):
            pass  # the turn's result says what changed, and carries the richer reply

    # -- model setup -----------------------------------------------------------------------

    def configure_model(self, patch: dict[str, Any]) -> OpResult:
        """Write ``model`` settings to config.yaml and start a session on the new model."""
        from engine.changes import Changes
        from engine.ops import OpResult, config_update

        written = config_update(self.home, {"model": dict(patch)})
        # The new agent is opened before the old one is closed: if it cannot start, the
        # conversation in progress carries on.
        agent = self._open_agent()
        if agent is None:
            return written
        if self.agent is not None:
            self.agent.close(review_timeout=REVIEW_GRACE_SECONDS)
        self.agent, self._memory = agent, agent.memory
        return OpResult(
            status="command",
            changes=Changes.everything(),
            result={
                "ok": True,
                "text": f"model changed; a new session started ({agent.session_id[:8]})",
                "data": {},
                "action": "new_session",
            },
        )
