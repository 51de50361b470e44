"""The engine side of the desktop client: a QObject living in its own QThread.

Everything that touches disk, the database or the model runs here; the GUI thread only sends
requests (signals connected to the slots below, so they queue onto this thread) and receives
signals. Views learn about state through one signal, :attr:`EngineWorker.changed`, carrying a
change-set: only the parts that changed are filled in.

``cancel`` is the one method the GUI calls directly: the worker is busy inside the turn it
should stop, so a queued request would arrive too late.

The engine is imported by the slots, on this thread: importing it takes about a second, which
the window spends getting on screen instead.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Qt, Signal, Slot

from engine.home import Home

if TYPE_CHECKING:
    from engine.agent import Agent, AgentEvent
    from engine.journey import JourneyBuilder
    from engine.memory.service import MemoryService
    from engine.pending import PendingWrites

log = logging.getLogger(__name__)

REVIEW_GRACE_SECONDS = 3.0


@dataclass
class ChangeSet:
    """What changed in the engine's state; ``None`` parts are unchanged.

    ``memory``: ``{"memory"|"user": {target, chars, limit, percent, entries, items, error}}``.
    ``pending``: staged writes as dicts (``id, action, summary, origin, created_at, payload``).
    ``snapshot``: ``{"changes": N, "diff": {target: {"added": [...], "removed": [...]}}}`` —
    how far the files on disk have moved from the running session's frozen prompt.
    ``sessions``: recent session cards (``session_id, title, started_at, parent_session_id …``).
    ``session``: the current session ``{"session_id", "parent_session_id", "reason"}``.
    ``model``: ``{"configured": bool, "builtin": bool, "name", "error", "notifications"}``
    (``builtin``: the built-in tiny model answers; the last is ``display.memory_notifications``).
    ``approval``: whether memory writes are staged for approval.
    """

    memory: dict[str, Any] | None = None
    pending: list[dict[str, Any]] | None = None
    snapshot: dict[str, Any] | None = None
    sessions: list[dict[str, Any]] | None = None
    session: dict[str, Any] | None = None
    model: dict[str, Any] | None = None
    # Whether memory writes wait for approval now (config.yaml, which a terminal may change).
    approval: bool | None = None
    reasons: list[str] = field(default_factory=list)


class EngineWorker(QObject):
    # -- to the GUI ------------------------------------------------------------------------
    changed = Signal(object)  # ChangeSet
    tokenReceived = Signal(str)
    toolStarted = Signal(str, str, str)  # call id, tool name, raw arguments
    toolFinished = Signal(str, str, str, bool, object)  # call id, name, summary, ok, result
    noticeRaised = Signal(str, str, str)  # kind, text, detail
    replyFinished = Signal(object)  # {"reply", "cancelled", "error", "error_kind"}
    commandFinished = Signal(object)  # {"ok", "text", "data", "action"}
    sessionsFound = Signal(str, object)  # query, session_search discover/browse result
    sessionLoaded = Signal(object)  # a session_search read result: session fields + messages
    memoryEdited = Signal(object)  # the engine's result dict of a panel edit (ok or refused)
    serversDetected = Signal(object)  # [{"name", "base_url", "models"}]
    journeyLoaded = Signal(object)  # a JourneyBundle, or the error text when it failed
    journeyEdited = Signal(object)  # the engine's result dict of a journey edit or delete
    failed = Signal(str)
    _refreshRequested = Signal()

    def __init__(self, home: Home, cwd: Path | None = None) -> None:
        super().__init__()
        self.home = home
        self.cwd = cwd
        self.agent: Agent | None = None
        self._memory: MemoryService | None = None
        # Kept between loads: the history only grows, so each load replays only new events.
        self._journey: JourneyBuilder | None = None
        self._refreshRequested.connect(self.refresh, Qt.ConnectionType.QueuedConnection)

    # -- lifecycle -------------------------------------------------------------------------

    @Slot()
    def start(self) -> None:
        """Open the home: memory, sessions, the agent (with or without a model)."""
        # Memory first: opening the agent can import the model's SDK and ask the server for
        # its context window, seconds the memory panel need not wait for.
        try:
            from engine.config import load_config
            from engine.memory.service import MemoryService

            self._memory = MemoryService(self.home, load_config(self.home))
        except Exception:
            log.debug("memory not opened ahead of the agent", exc_info=True)  # the agent says why
        else:
            self.changed.emit(self._memory_state(["start"]))
        agent = self._open_agent()
        if agent is not None:
            self.agent, self._memory = agent, agent.memory
            self.changed.emit(self._full_state(["start"]))
            self._offer_hermes_import(agent)

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

    # -- chat ------------------------------------------------------------------------------

    @Slot(str)
    def submit(self, text: str) -> None:
        """A line from the chat box: a slash command or a user turn."""
        agent = self._need_agent()
        if agent is None:
            return
        line = text.strip()
        try:
            from engine.commands import as_message, is_command, run_command

            if is_command(line):
                outcome = run_command(agent, line)
                self.commandFinished.emit(
                    {
                        "ok": outcome.ok,
                        "text": outcome.text,
                        "data": outcome.data,
                        "action": outcome.action,
                    }
                )
                self.changed.emit(self._full_state(["command"]))
                return
            result = agent.send(as_message(text))
        except Exception as exc:
            log.exception("turn failed")
            self.failed.emit(f"the engine failed: {exc}")
            return
        self.replyFinished.emit(
            {
                "reply": result.reply,
                "cancelled": result.cancelled,
                "error": result.error,
                "error_kind": result.error_kind,
            }
        )
        changes = self._full_state(["turn"])
        self.changed.emit(changes)

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
            self.toolStarted.emit(event.call_id, event.name, event.arguments)
        elif isinstance(event, ToolFinished):
            self.toolFinished.emit(event.call_id, event.name, event.summary, event.ok, event.result)
        elif isinstance(event, Notice):
            self.noticeRaised.emit(event.kind, event.text, event.detail)
            if event.kind in ("memory", "review"):
                # Usually on the review's thread: the state is read on the worker's own
                # thread, queued, so it never races a turn.
                self._refreshRequested.emit()
        elif isinstance(event, SessionStarted):
            self.changed.emit(
                ChangeSet(
                    session={
                        "session_id": event.session_id,
                        "parent_session_id": event.parent_session_id,
                        "reason": event.reason,
                    },
                    reasons=["session"],
                )
            )
        elif isinstance(event, ReplyFinished):
            pass  # replyFinished carries the richer TurnResult once the turn returns

    # -- memory panel and pending writes ---------------------------------------------------

    @Slot()
    def refresh(self) -> None:
        """Re-read what is on disk (the file watcher saw a change)."""
        self.changed.emit(self._memory_state(["disk"]))

    @Slot(str, object)
    def edit_memory(self, target: str, operations: object) -> None:
        """Add, replace or remove entries from the panel: same lock, scanner, limits and
        approval gate as the model's tool, recorded with origin ``foreground``."""
        service = self._need_memory()
        if service is None:
            # Every request gets its answer: the panel pairs answers with requests in order.
            self.memoryEdited.emit(
                {"ok": False, "error": "internal", "message": "memory could not be opened"}
            )
            return
        from engine.memory.entries import Target
        from engine.memory.errors import MemoryToolError

        try:
            result = service.write(Target(target), operations, origin="foreground")
        except MemoryToolError as exc:
            result = exc.to_dict()
        except Exception as exc:
            result = {"ok": False, "error": "internal", "message": str(exc)}
        self.memoryEdited.emit(result)
        self.changed.emit(self._memory_state(["edit"]))

    @Slot(str)
    def approve(self, pending_id: str) -> None:
        self._settle(pending_id, approve=True)

    @Slot(str)
    def reject(self, pending_id: str) -> None:
        self._settle(pending_id, approve=False)

    @Slot(bool)
    def settle_all(self, approve: bool) -> None:
        service = self._need_memory()
        if service is None:
            return
        try:
            outcomes = self._pending(service).settle_all(approve)
        except Exception as exc:
            outcomes = [{"ok": False, "error": "internal", "message": str(exc)}]
        for outcome in outcomes:
            self.memoryEdited.emit(outcome)
        self.changed.emit(self._memory_state(["pending"]))

    def _pending(self, service: MemoryService) -> PendingWrites:
        from engine.pending import PendingWrites

        return PendingWrites(self.home, service)

    def _settle(self, pending_id: str, approve: bool) -> None:
        service = self._need_memory()
        if service is None:
            return
        from engine.memory.errors import MemoryToolError
        from engine.plugins.holographic.store import FactStoreError
        from engine.skills import SkillError

        try:
            pending = self._pending(service)
            result = pending.approve(pending_id) if approve else pending.reject(pending_id)
        except (MemoryToolError, SkillError, FactStoreError) as exc:
            result = exc.to_dict()
        except Exception as exc:
            result = {
                "ok": False,
                "error": "internal",
                "pending_id": pending_id,
                "message": str(exc),
            }
        self.memoryEdited.emit(result)
        self.changed.emit(self._memory_state(["pending"]))

    # -- journey ---------------------------------------------------------------------------

    @Slot()
    def load_journey(self) -> None:
        """The journey and its graph layout, built here so the GUI thread only draws."""
        service = self._need_memory()
        if service is None:
            self.journeyLoaded.emit("memory could not be opened")
            return
        try:
            # numpy and networkx come with these: loaded when the journey is first opened.
            from app.models.journey_model import bundle
            from engine.journey import JourneyBuilder, load_journey

            if self._journey is None:
                self._journey = JourneyBuilder()
            loaded = bundle(load_journey(service, builder=self._journey))
        except Exception as exc:  # every request gets an answer: the view waits for one
            log.exception("journey failed to load")
            self.journeyLoaded.emit(f"the journey could not be built: {exc}")
            return
        self.journeyLoaded.emit(loaded)

    @Slot(str, str)
    def edit_chunk(self, node_id: str, text: str) -> None:
        from engine.journey import edit_chunk

        self._journey_write(lambda service: edit_chunk(service, node_id, text))

    @Slot(str)
    def delete_chunk(self, node_id: str) -> None:
        from engine.journey import delete_chunk

        self._journey_write(lambda service: delete_chunk(service, node_id))

    def _journey_write(self, write: Any) -> None:
        service = self._need_memory()
        if service is None:
            self.journeyEdited.emit(
                {"ok": False, "error": "internal", "message": "memory could not be opened"}
            )
            return
        from engine.memory.errors import MemoryToolError

        try:
            result = write(service)
        except MemoryToolError as exc:
            result = exc.to_dict()
        except Exception as exc:
            log.exception("journey edit failed")
            result = {"ok": False, "error": "internal", "message": str(exc)}
        self.journeyEdited.emit(result)
        self.changed.emit(self._memory_state(["journey"]))

    # -- sessions --------------------------------------------------------------------------

    @Slot(str)
    def search_sessions(self, query: str) -> None:
        agent = self._need_agent()
        if agent is None:
            return
        arguments = {"mode": "discover", "query": query} if query.strip() else {"mode": "browse"}
        self.sessionsFound.emit(query, agent.search_tool(arguments, for_user=True))

    @Slot(str)
    def load_session(self, session_id: str) -> None:
        agent = self._need_agent()
        if agent is None:
            return
        self.sessionLoaded.emit(
            agent.search_tool({"mode": "read", "session_id": session_id}, for_user=True)
        )

    # -- model setup -----------------------------------------------------------------------

    @Slot()
    def detect_servers(self) -> None:
        from engine.providers.detect import detect_local_servers

        self.serversDetected.emit([s.model_dump() for s in detect_local_servers()])

    @Slot(object)
    def configure_model(self, patch: object) -> None:
        """Write ``model`` settings to config.yaml and start a session on the new model."""
        from engine.config import update_config

        try:
            update_config(self.home, {"model": dict(patch)})  # type: ignore[call-overload]
        except Exception as exc:
            self.failed.emit(str(exc))
            return
        # The new agent is opened before the old one is closed: if it cannot start, the
        # conversation in progress carries on.
        agent = self._open_agent()
        if agent is None:
            return
        if self.agent is not None:
            self.agent.close(review_timeout=REVIEW_GRACE_SECONDS)
        self.agent, self._memory = agent, agent.memory
        self.commandFinished.emit(
            {
                "ok": True,
                "text": f"model changed; a new session started ({agent.session_id[:8]})",
                "data": {},
                "action": "new_session",
            }
        )
        self.changed.emit(self._full_state(["model"]))

    # -- state -----------------------------------------------------------------------------

    def _need_agent(self) -> Agent | None:
        if self.agent is None:
            self.failed.emit("the engine is not running")
        return self.agent

    def _need_memory(self) -> MemoryService | None:
        if self._memory is None:
            try:
                from engine.config import load_config
                from engine.memory.service import MemoryService

                self._memory = MemoryService(self.home, load_config(self.home))
            except Exception as exc:
                self.failed.emit(str(exc))
                return None
        return self._memory

    def _memory_state(self, reasons: list[str]) -> ChangeSet:
        service = self._need_memory()
        changes = ChangeSet(reasons=reasons)
        if service is None:
            return changes
        from engine.config import load_config
        from engine.memory.entries import Target
        from engine.memory.errors import MemoryToolError
        from engine.memory.service import usage_of

        # Another process (or the background review) may have changed the settings.
        try:
            service.config = load_config(self.home)
            service.store.config = service.config
        except Exception as exc:
            log.warning("config.yaml could not be re-read: %s", exc)
        memory: dict[str, Any] = {}
        for target in Target:
            try:
                current = service.read(target)
                memory[target.value] = {
                    **usage_of(target, current.entries, current.limit),
                    "items": current.entries,
                    "error": None,
                }
            except MemoryToolError as exc:
                memory[target.value] = {"target": target.value, "items": [], "error": exc.message}
        changes.memory = memory
        changes.approval = bool(service.config.memory.write_approval)
        try:  # staged memory, skill and fact writes wait in the same dialog
            changes.pending = [p.model_dump() for p in self._pending(service).records()]
        except Exception as exc:
            log.warning("staged writes could not be read: %s", exc)
            changes.pending = [p.model_dump() for p in service.pending()]
        if self.agent is not None:
            diff = self.agent.memory_changes_since_start()
            count = sum(len(d["added"]) + len(d["removed"]) for d in diff.values())
            changes.snapshot = {"changes": count, "diff": diff}
        return changes

    def _full_state(self, reasons: list[str]) -> ChangeSet:
        changes = self._memory_state(reasons)
        agent = self.agent
        if agent is None:
            return changes
        changes.session = {
            "session_id": agent.session_id,
            "parent_session_id": agent.parent_session_id,
            "reason": reasons[0],
        }
        notifications = agent.config.display.memory_notifications
        try:
            name, error = agent.provider.name, None
        except Exception as exc:  # not configured, or a key variable missing: say which
            name, error = None, str(exc)
        changes.model = {
            "configured": name is not None,
            # Nothing chosen: the built-in tiny model answers (the setup panel says so).
            "builtin": name is not None and bool(getattr(agent.provider, "builtin", False)),
            "name": name,
            "error": error,
            "notifications": notifications,
        }
        browse = agent.search_tool({"mode": "browse", "limit": 50}, for_user=True)
        changes.sessions = browse.get("sessions", []) if browse.get("ok") else []
        return changes
