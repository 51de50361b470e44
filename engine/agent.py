"""The turn loop: one conversation with a model, its tools, and the stores behind them.

An :class:`Agent` owns the current session. Its system prompt is built once when the session
starts and sent byte-identical on every call (a stable prefix providers can cache); memory
written mid-session reaches the prompt only in the next session or after compression. Every
message is written to the session store the moment it exists, so a crash, a cancel or a
failed call leaves a transcript that reads as what happened.

The agent runs on one thread (the CLI's, or the desktop client's worker); ``cancel`` may be
called from any other. Events go to ``listener`` on the agent's thread.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.compression import (
    CompressionAborted,
    Compressor,
    estimate_tokens,
    is_summary_message,
    message_tokens,
    needs_compression,
)
from engine.config import Config, ConfigError, answers_on_tiny_model, load_config
from engine.errors import CairnError
from engine.events import (
    AgentEvent,
    Listener,
    Notice,
    ReplyFinished,
    SessionStarted,
    TokenReceived,
    ToolFinished,
    ToolStarted,
)
from engine.home import Home
from engine.memory import screen
from engine.memory import tool as memory_tool
from engine.memory.entries import Target
from engine.memory.errors import MemoryToolError
from engine.memory.service import MemoryService
from engine.plugins.base import MemoryProvider
from engine.plugins.manager import ProviderLoadError, ProviderManager, load_provider
from engine.prompt import SystemPrompt, build_system_prompt
from engine.providers import make_provider
from engine.providers.base import CancelToken, ChatMessage, ChatProvider, ProviderError, Reply
from engine.review import BackgroundReview
from engine.sessions import tool as sessions_tool
from engine.sessions.search import SessionSearch
from engine.sessions.store import NewMessage, SessionInfo, SessionStore
from engine.skills import propose_skill_message, skill_tools, skills_index
from engine.tools import Tool, ToolOutcome, ToolRegistry
from engine.window import WindowBudget, schema_tokens

log = logging.getLogger(__name__)

TITLE_CHARS = 80
# Offered even in the smallest window: what Cairn's memory depends on.
CORE_TOOLS = frozenset({"memory", "session_search"})
COMPRESS_RETRY_TURNS = 3


@dataclass
class TurnResult:
    reply: str = ""
    cancelled: bool = False
    error: str | None = None
    error_kind: str | None = None
    iterations: int = 0
    tool_calls: int = 0
    outcomes: list[ToolOutcome] = field(default_factory=list)
    # The reply stopped at the model's length limit (finish_reason "length"), not at its end.
    truncated: bool = False


# -- the agent -------------------------------------------------------------------------------


def _stored(message: ChatMessage) -> NewMessage:
    return NewMessage(
        role=message["role"],
        content=str(message.get("content") or ""),
        tool_calls=message.get("tool_calls"),
        tool_call_id=message.get("tool_call_id"),
        tool_name=message.get("name"),
    )


def _unanswered(messages: list[ChatMessage]) -> list[ChatMessage]:
    """Results for tool calls in ``messages`` that have none (a crash between a call and
    its result), so the conversation stays one every server accepts."""
    answered = {m.get("tool_call_id") for m in messages if m.get("role") == "tool"}
    missing = []
    for message in messages:
        for call in message.get("tool_calls") or []:
            if call.get("id") not in answered:
                missing.append(
                    {
                        "role": "tool",
                        "tool_call_id": call.get("id"),
                        "name": call.get("function", {}).get("name"),
                        "content": '{"ok": false, "error": "interrupted", "message": '
                        '"this call was interrupted before it returned"}',
                    }
                )
    return missing


class Agent:
    def __init__(
        self,
        home: Home,
        config: Config | None = None,
        *,
        provider: ChatProvider | None = None,
        store: SessionStore | None = None,
        source: str = "cli",
        cwd: Path | None = None,
        listener: Listener | None = None,
        extra_tools: Sequence[Tool] = (),
        background_review: bool = True,
        memory_provider: MemoryProvider | None = None,
    ) -> None:
        self.home = home
        self.config = config if config is not None else load_config(home)
        self.source = source
        self.cwd = cwd
        self.listener = listener
        self.store = store if store is not None else SessionStore.open(home, self.config)
        self._provider = provider
        self._extra_tools = list(extra_tools)
        self._cancel = CancelToken()
        self._busy = threading.Lock()
        self.user_turns = 0
        # Callables given the conversation before compression; their text (an external memory
        # provider's notes) goes to the summariser with the messages.
        self.pre_compress_hooks: list[Callable[[list[ChatMessage]], str]] = []
        self._compress_again_at_turn = 0
        self.review = BackgroundReview(self, self._emit) if background_review else None
        self.messages: list[ChatMessage] = []
        self.session: SessionInfo | None = None
        self.session_id = ""
        self.parent_session_id: str | None = None
        self.memory = MemoryService(home, self.config)
        # The external memory provider (``memory.provider``, or ``memory_provider`` given
        # directly), always in addition to the built-in memory; None when there is none.
        self.external_memory = self._start_external_memory(memory_provider)
        self.search_tool = sessions_tool.SessionSearchTool(
            SessionSearch(self.store, semantic=self.config.sessions.semantic),
            mark_untrusted=screen.mark_untrusted,
        )
        self._memory_tool = memory_tool.MemoryTool(self.memory)
        self.tools = self._registry()
        # Notices about the window said once per agent, not at every prompt rebuild.
        self._window_said: set[str] = set()
        self.budget: WindowBudget | None = None
        self.prompt: SystemPrompt = self._build_prompt()
        self._new_session_id(parent=None)
        self._emit(SessionStarted(self.session_id, None, "start"))

    # -- setup ---------------------------------------------------------------------------

    @property
    def provider(self) -> ChatProvider:
        """The main model, created on first use so everything else works without one."""
        if self._provider is None:
            self._provider = make_provider(self.config, "main")
        return self._provider

    @property
    def has_model(self) -> bool:
        if self._provider is not None:
            return True
        try:
            self._provider = make_provider(self.config, "main")
        except ProviderError:
            return False
        return True

    def _registry(self) -> ToolRegistry:
        registry = ToolRegistry()
        if self.config.memory.memory_enabled or self.config.memory.user_profile_enabled:
            registry.register(
                Tool(
                    "memory",
                    memory_tool.SCHEMA,
                    self._memory_tool,
                    memory_tool.summarize,
                    parallel_safe=False,
                )
            )
        registry.register(
            Tool("session_search", sessions_tool.SCHEMA, self.search_tool, sessions_tool.summarize)
        )
        for tool in skill_tools(self.home, self.config, "foreground", session_id=self.session_id):
            registry.register(tool)
        for tool in self._extra_tools:
            registry.register(tool)
        if self.external_memory is not None:
            # After every core tool, so a provider's tool can never take a core tool's name.
            for tool in self.external_memory.tools(reserved=registry.names()):
                registry.register(tool)
        return registry

    def _start_external_memory(self, given: MemoryProvider | None) -> ProviderManager | None:
        name = self.config.memory.provider
        if given is None and not name:
            return None
        try:
            provider = (
                given if given is not None else load_provider(name or "", self.home, self.config)
            )
        except ProviderLoadError as exc:
            log.warning("%s", exc)
            self._emit(Notice("provider", f"{exc}; continuing with built-in memory only"))
            return None
        manager = ProviderManager(
            provider, notify=lambda text: self._emit(Notice("provider", text))
        )
        self.memory.on_committed.append(manager.memory_written)
        self.pre_compress_hooks.append(manager.pre_compress)
        return manager

    def _context_length(self) -> int:
        configured = self.config.model.context_length
        if configured:
            return configured
        if self._provider is None and not self.has_model:
            return 8192
        return self.provider.context_length

    def _window_known(self) -> bool:
        """False when the window is only the 8,192 default (the server did not say, as most
        cloud APIs do not): then nothing is shortened or refused on its account."""
        if self.config.model.context_length:
            return True
        if self._provider is None and not self.has_model:
            return False
        return getattr(self.provider, "context_source", "config") != "default"

    def _build_prompt(self) -> SystemPrompt:
        # What the frozen prompt holds, kept so a client can show what changed on disk since.
        self.memory_at_start = self._entries_now()
        window = self._context_length()
        known = self._window_known()
        # Full; in a small window the compact persona, guidance and schemas; in a tiny one
        # only the core tools besides (no skills): the first form that fits is used.
        forms = ((False, False), (True, False), (True, True)) if known else ((False, False),)
        if answers_on_tiny_model(self.config.model):
            # A 135M-parameter model follows a short prompt and two tools; given every tool
            # it calls ones it cannot use (skill_view with no skill) and never answers.
            forms = ((True, True),)
        for compact, core_only in forms:
            prompt = self._assemble_prompt(window, compact=compact, core_only=core_only)
            budget = WindowBudget.measure(
                window,
                prompt.text,
                self._schemas_for(compact, core_only),
                compact=compact,
                core_only=core_only,
                known=known,
            )
            if not budget.wants_smaller:
                break
        for warning in prompt.warnings:
            self._emit(Notice("info", warning))
        self.budget = budget
        self._announce_window(budget)
        return prompt

    def _assemble_prompt(self, window: int, *, compact: bool, core_only: bool) -> SystemPrompt:
        return build_system_prompt(
            self.home,
            self.config,
            memory=self.memory,
            tool_names=self._offered_names(core_only),
            context_length=window,
            cwd=self.cwd,
            skills_index="" if core_only else self._skills_index(),
            provider_block=self.external_memory.prompt_block() if self.external_memory else "",
            compact=compact,
        )

    def _offered_names(self, core_only: bool) -> list[str]:
        names = self.tools.names()
        return [n for n in names if n in CORE_TOOLS] if core_only else names

    def _schemas_for(self, compact: bool, core_only: bool) -> list[dict[str, Any]]:
        offered = set(self._offered_names(core_only))
        return [s for s in self.tools.schemas(compact=compact) if s.get("name") in offered]

    def _announce_window(self, budget: WindowBudget) -> None:
        if not budget.known:
            return
        if not budget.fits:
            key = f"small:{budget.window}"
            if key not in self._window_said:
                self._window_said.add(key)
                self._emit(Notice("error", budget.too_small()))
        elif budget.compact and "compact" not in self._window_said:
            self._window_said.add("compact")
            skills = "; skills are not offered" if budget.core_only else ""
            self._emit(
                Notice(
                    "info",
                    f"small model window ({budget.window:,} tokens): using a trimmed persona "
                    f"and compact tool descriptions{skills}; {budget.figures()}",
                )
            )

    @property
    def window(self) -> WindowBudget:
        assert self.budget is not None  # set by the first _build_prompt
        return self.budget

    def _schemas(self) -> list[dict[str, Any]]:
        return self._schemas_for(self.window.compact, self.window.core_only)

    def _refresh_window(self) -> None:
        """Measure again when the model's window changed (a server restarted with another
        context size): the prompt stays frozen until the next session, the budget follows
        the window at once."""
        window = self._context_length()
        old = self.window
        known = self._window_known()
        if window == old.window and known == old.known:
            return
        self.budget = WindowBudget.measure(
            window,
            self.prompt.text,
            self._schemas_for(old.compact, old.core_only),
            compact=old.compact,
            core_only=old.core_only,
            known=known,
        )
        if not known:
            return
        self._emit(
            Notice("info", f"the model's window is now {window:,} tokens (was {old.window:,})")
        )
        if self.budget.wants_smaller or (not self.budget.fits and not old.core_only):
            # The frozen prompt no longer fits the smaller window: a shorter form of it is
            # the only way the conversation can go on. A session keeps the prompt its
            # requests carried, so the shorter one starts a child session (lineage kept,
            # messages carried over), as compression does; before the first turn there is
            # no session yet and the prompt is simply rebuilt.
            log.info("window shrank from %d to %d: rebuilding the prompt", old.window, window)
            if self.session is None:
                self.prompt = self._build_prompt()
                return
            failure = self._continue_in_child("window", list(self.messages))
            if failure is not None:
                self._emit(Notice("error", f"the shorter prompt could not be started: {failure}"))
                return
            self._emit(SessionStarted(self.session_id, self.parent_session_id, "window"))
            return
        self._announce_window(self.budget)

    def _message_problem(self, text: str) -> str | None:
        """Why ``text`` cannot be sent at all in this window (before it is stored)."""
        budget = self.window
        if not budget.known:
            return None
        if not budget.fits:
            # The figures were said when the session started; this one is short.
            return (
                f"nothing was sent: the model's window ({budget.window:,} tokens) is too small "
                f"for what every request carries (~{budget.fixed_tokens + budget.reply_tokens:,}"
                " tokens with the reply); start the server with a larger context or choose "
                "another model (`cairn model`)"
            )
        tokens = message_tokens({"role": "user", "content": text})
        # The same test the request itself will meet (with its margin), so a message that
        # passes here is not stored only to be refused after a compression.
        if tokens <= budget.room and budget.fits_request(
            budget.prompt_tokens + tokens, budget.tools_tokens
        ):
            return None
        fits_chars = max(0, budget.room - 8) * 4
        return (
            f"this message is ~{tokens:,} tokens; the model's window ({budget.window:,} "
            f"tokens) leaves ~{budget.room:,} for the conversation after what every request "
            f"carries ({budget.figures()}). Shorten it to under ~{fits_chars:,} characters or "
            "split it, or use a model with a larger window; nothing was sent or stored"
        )

    def _entries_now(self) -> dict[str, list[str]]:
        entries = {}
        for target in Target:
            try:
                entries[target.value] = self.memory.read(target).entries
            except MemoryToolError:
                entries[target.value] = []
        return entries

    def memory_changes_since_start(self) -> dict[str, dict[str, list[str]]]:
        """Entries added to and removed from each file on disk since the prompt was frozen;
        they reach the model next session (or after compression)."""
        now = self._entries_now()
        changes = {}
        for target, before in self.memory_at_start.items():
            after = now.get(target, [])
            changes[target] = {
                "added": [e for e in after if e not in before],
                "removed": [e for e in before if e not in after],
            }
        return changes

    def _new_session_id(self, parent: str | None) -> None:
        # The row is written with the first message, so opening and closing the app without
        # talking leaves no empty sessions behind.
        self.session = None
        self.session_id = uuid.uuid4().hex
        self.parent_session_id = parent
        self.memory.session_id = self.session_id
        self.search_tool.current_session_id = self.session_id

    def _ensure_session(self, title_hint: str) -> None:
        if self.session is not None:
            return
        title = " ".join(title_hint.split())[:TITLE_CHARS] or None
        self.session = self.store.create_session(
            session_id=self.session_id,
            source=self.source,
            title=title,
            model=self._model_name(),
            system_prompt=self.prompt.text,
            parent_session_id=self.parent_session_id,
        )

    def _model_name(self) -> str | None:
        try:
            return self.provider.name if self.has_model else None
        except ProviderError:
            return None

    def _emit(self, event: AgentEvent) -> None:
        if self.listener is None:
            return
        try:
            self.listener(event)
        except Exception:  # a broken view must not break the conversation
            log.exception("agent listener failed on %s", type(event).__name__)

    # -- persistence -------------------------------------------------------------------

    def _record(self, message: ChatMessage) -> None:
        """Store ``message``, then keep it in the conversation: what the model is sent next
        is never something the store does not have."""
        self._ensure_session(str(message.get("content") or ""))
        self.store.append(self.session_id, [_stored(message)])
        self.messages.append(message)

    # -- control -------------------------------------------------------------------------

    def cancel(self) -> None:
        """Stop the reply in progress (from any thread); the transcript stays consistent."""
        self._cancel.cancel()

    @property
    def busy(self) -> bool:
        return self._busy.locked()

    def send(self, text: str) -> TurnResult:
        """One user turn: the reply, with every tool round it needs."""
        if not self._busy.acquire(blocking=False):
            return TurnResult(error="a reply is already in progress", error_kind="busy")
        try:
            return self._turn(text)
        finally:
            # A fresh token after the turn, not before: a Stop pressed just as the turn
            # starts must reach the token this turn uses.
            self._cancel = CancelToken()
            self._busy.release()

    def _turn(self, text: str) -> TurnResult:
        result = TurnResult()
        try:
            provider = self.provider
        except ProviderError as exc:
            result.error, result.error_kind = str(exc), exc.kind
            self._emit(Notice("error", str(exc)))
            return result
        self._refresh_window()
        problem = self._message_problem(text)
        if problem is not None:
            result.error, result.error_kind = problem, "context"
            self._emit(Notice("error", problem))
            return result
        self._say_tool_mode(provider)
        self._memory_tool.begin_turn()
        for repair in _unanswered(self.messages):
            self._record(repair)
        self._record({"role": "user", "content": text})
        self.user_turns += 1
        limit = self.config.agent.max_iterations
        seen_calls: set[tuple[str, str]] = set()
        offer_tools = True
        tiny = answers_on_tiny_model(self.config.model)
        compressed_for_size = False
        while True:
            if result.iterations >= limit:
                result.error = (
                    f"stopped after {limit} model calls in one turn (agent.max_iterations); "
                    "ask again to continue"
                )
                result.error_kind = "iteration_limit"
                self._emit(Notice("error", result.error))
                break
            self._maybe_compress()
            result.iterations += 1
            request = self._request_messages(text)
            nudge = propose_skill_message(
                result.tool_calls, self.config.skills.propose_after_tool_calls
            )
            if nudge and "skill_manage" in self.tools:
                # Sent with the request that will likely write the final reply, never stored.
                request.append({"role": "system", "content": nudge})
            tools = self._schemas() if offer_tools else None
            request_tokens = estimate_tokens(request)
            if not self.window.fits_request(request_tokens, schema_tokens(tools)):
                # Checked here, not learnt from an HTTP 400: compress once, then say so.
                retry_ok = self.user_turns >= self._compress_again_at_turn
                if not compressed_for_size and retry_ok and self.compress(requested=False):
                    compressed_for_size = True
                    continue
                result.error = (
                    f"this conversation (~{request_tokens + schema_tokens(tools):,} tokens "
                    f"with the system prompt and tools) does not fit the model's "
                    f"{self.window.window:,}-token window even after compression; nothing was "
                    "sent. Send /compress to summarise more of it or /new to start afresh"
                )
                result.error_kind = "context"
                self._emit(Notice("error", result.error))
                break
            try:
                reply = provider.chat(
                    request,
                    tools=tools,
                    temperature=self.config.model.temperature,
                    on_token=lambda piece: self._emit(TokenReceived(piece)),
                    cancel=self._cancel,
                )
            except ProviderError as exc:
                if exc.partial:
                    self._record({"role": "assistant", "content": exc.partial})
                result.reply = exc.partial
                result.error, result.error_kind = str(exc), exc.kind
                self._emit(Notice("error", str(exc)))
                break
            self._count_usage(reply)
            if reply.cancelled:
                # A half-streamed tool call is dropped: it never ran, so it has no result.
                if reply.content:
                    self._record({"role": "assistant", "content": reply.content})
                result.reply, result.cancelled = reply.content, True
                break
            self._record(reply.to_message())
            result.reply = reply.content
            if reply.finish_reason == "length":
                # The model stopped at its output limit, not at the end of what it meant.
                result.truncated = True
                self._emit(
                    Notice(
                        "info",
                        "the reply was cut at the model's length limit; send `continue` "
                        "to get the rest",
                    )
                )
            if not reply.tool_calls:
                break
            calls = {(c.name, " ".join(c.arguments.split())) for c in reply.tool_calls}
            # A model repeating calls it already made this turn is stuck (small local models
            # are prone to it): answer these, then ask for a reply with no tools on offer.
            offer_tools = not calls <= seen_calls
            if tiny:
                # The tiny built-in model gets one tool round a turn: after it, it answers
                # (offered tools again, it calls more, often invalid ones, and never replies).
                offer_tools = False
            seen_calls |= calls
            outcomes = self._run_tools(reply)
            result.tool_calls += len(outcomes)
            result.outcomes.extend(outcomes)
            if self._cancel.cancelled:
                result.cancelled = True
                break
        self._emit(ReplyFinished(result.reply, result.cancelled))
        if not result.cancelled and result.error is None:
            if self.external_memory is not None:
                self.external_memory.turn_done(text, result.reply, self.session_id)
            if self.review is not None:
                self.review.after_turn()
        return result

    def _say_tool_mode(self, provider: ChatProvider) -> None:
        """Tell the user, once, when the server cannot take tools the usual way."""
        mode = getattr(provider, "tool_mode", None)
        if "tool_mode" in self._window_said or not callable(mode) or not len(self.tools.names()):
            return
        self._window_said.add("tool_mode")
        if mode() == "prompted":
            self._emit(
                Notice(
                    "provider",
                    "the model server's chat template has no tool support and would drop "
                    "Cairn's tools (memory, session_search): they are described in the prompt "
                    "instead, with replies held to a JSON schema. A template with tool "
                    "support (llama-server --jinja --chat-template-file …) works better",
                )
            )

    def _request_messages(self, query: str) -> list[ChatMessage]:
        """What the model is sent: the frozen prompt and the conversation, with the external
        provider's recall for ``query`` fenced into this request's copy of the latest user
        message — never into ``self.messages`` or the store."""
        messages = [self._system_message(), *self.messages]
        if self.external_memory is None:
            return messages
        recalled = self.external_memory.recall(query, self.session_id)
        if not recalled:
            return messages
        for index in range(len(messages) - 1, 0, -1):
            if messages[index].get("role") == "user":
                original = messages[index]
                content = f"{recalled}\n\n{original.get('content') or ''}"
                messages[index] = {**original, "content": content}
                break
        return messages

    def _skills_index(self) -> str:
        try:
            return skills_index(self.home)
        except Exception as exc:  # a broken skills folder must not stop a session
            log.warning("skills index unavailable: %s", exc)
            return ""

    def _system_message(self) -> ChatMessage:
        return {"role": "system", "content": self.prompt.text}

    def _count_usage(self, reply: Reply) -> None:
        if reply.usage is None or self.session is None:
            return
        try:
            self.store.add_usage(
                self.session_id, reply.usage.input_tokens, reply.usage.output_tokens
            )
        except Exception as exc:  # counters are nice to have; the transcript is what matters
            log.warning("could not record token usage: %s", exc)

    def _run_tools(self, reply: Reply) -> list[ToolOutcome]:
        for call in reply.tool_calls:
            self._emit(ToolStarted(call.id, call.name, call.arguments))

        def done(outcome: ToolOutcome) -> None:
            self._record(outcome.to_message())
            self._emit(
                ToolFinished(
                    outcome.call.id,
                    outcome.call.name,
                    outcome.summary,
                    outcome.ok,
                    outcome.result,
                )
            )

        return self.tools.run(
            reply.tool_calls, on_done=done, should_stop=lambda: self._cancel.cancelled
        )

    # -- sessions and compression --------------------------------------------------------

    def new_session(self) -> None:
        """End this session and start a fresh one with a freshly built prompt."""
        if self.session is not None:
            self.store.end_session(self.session_id, "new_session")
            if self.external_memory is not None:
                self.external_memory.session_ended(self.messages)
        self.messages = []
        self.user_turns = 0
        self.prompt = self._build_prompt()
        self._follow_search_setting()
        self._new_session_id(parent=None)
        self._emit(SessionStarted(self.session_id, None, "new"))

    def _follow_search_setting(self) -> None:
        """sessions.semantic as config.yaml says now: the settings dialog promises a change of
        it from the next session, without a new agent."""
        try:
            semantic = load_config(self.home).sessions.semantic
        except ConfigError:
            return  # the file does not read: keep what the agent started with
        self.config.sessions.semantic = semantic
        self.search_tool.search.semantic = semantic

    def take_back_last_turn(self) -> str | None:
        """Take the last user message and everything after it (the reply, its tool rounds)
        out of the conversation the model is sent, to ask again (regenerate, /retry); returns
        that message, or None when there is none or a reply is in progress.

        The store keeps all of it (nothing stored is lost, and a search still finds the
        first answer); the next :meth:`send` of the text records it again with the new reply.
        """
        if not self._busy.acquire(blocking=False):
            return None
        try:
            for index in range(len(self.messages) - 1, -1, -1):
                message = self.messages[index]
                if message.get("role") == "user" and not is_summary_message(message):
                    self.messages = self.messages[:index]
                    return str(message.get("content") or "")
            return None
        finally:
            self._busy.release()

    def continue_session(self, session_id: str) -> None:
        """Go on with a stored conversation: end this session and start a child of
        ``session_id`` that carries its messages under a prompt built now (memory as it is
        today; the old session keeps the prompt it had). The child holds the carried messages
        itself, as a compressed session does, so it can be continued in turn; search counts
        a lineage once. Raises :class:`CairnError` when the session is not stored or a
        reply is in progress."""
        if not self._busy.acquire(blocking=False):
            raise CairnError("busy", "a reply is in progress: stop it or wait, then continue")
        try:
            info = self.store.get_session(session_id)
            if info is None:
                raise CairnError("not_found", f"no stored session {session_id!r}")
            carried: list[ChatMessage] = []
            for stored in self.store.messages(info.id):
                if stored.role not in ("user", "assistant", "tool"):
                    continue
                message: ChatMessage = {"role": stored.role, "content": stored.content}
                if stored.tool_calls:
                    message["tool_calls"] = stored.tool_calls
                if stored.tool_call_id:
                    message["tool_call_id"] = stored.tool_call_id
                if stored.tool_name:
                    message["name"] = stored.tool_name
                carried.append(message)
            # A crash between a call and its result left calls unanswered: answer them, so
            # the continued conversation is one every server accepts.
            carried.extend(_unanswered(carried))
            # The child is written whole before anything is switched: if that fails, the
            # conversation in progress goes on as it was.
            before, budget_before = self.memory_at_start, self.budget
            child_id = uuid.uuid4().hex
            try:
                prompt = self._build_prompt()
                child = self.store.create_session(
                    session_id=child_id,
                    source=self.source,
                    title=info.title,
                    model=self._model_name(),
                    system_prompt=prompt.text,
                    parent_session_id=info.id,
                )
                self.store.append(child_id, [_stored(m) for m in carried])
            except Exception:
                self.memory_at_start, self.budget = before, budget_before
                with contextlib.suppress(Exception):
                    self.store.delete_session(child_id)
                raise
            if self.session is not None:
                self.store.end_session(self.session_id, "new_session")
                if self.external_memory is not None:
                    self.external_memory.session_ended(self.messages)
            self.session_id, self.parent_session_id = child_id, info.id
            self.memory.session_id = child_id
            self.search_tool.current_session_id = child_id
            self.session, self.prompt, self.messages = child, prompt, carried
            self.user_turns = 0  # turns of this session: the review's interval starts again
        finally:
            self._busy.release()
        self._emit(SessionStarted(self.session_id, info.id, "continue"))

    def close(
        self, review_timeout: float = 30.0, provider_timeout: float = 5.0, reason: str = "closed"
    ) -> None:
        """End the session (``reason`` is stored as its end reason: ``closed``, or ``signal``
        when a stop signal ended the process); a background review still running gets
        ``review_timeout`` seconds to finish (its writes are atomic either way), the external
        memory provider ``provider_timeout`` seconds to finish its queued work and shut down."""
        if self.review is not None:
            self.review.wait(timeout=review_timeout)
        if self.session is not None and self.session.ended_at is None:
            self.store.end_session(self.session_id, reason)
            self.session = self.session.model_copy(update={"ended_at": time.time()})
            if self.external_memory is not None:
                self.external_memory.session_ended(self.messages)
        if self.external_memory is not None:
            self.external_memory.close(timeout=provider_timeout)

    def _maybe_compress(self) -> None:
        # After a failed attempt, wait a few turns: retrying before every model call would
        # pay the summariser's timeout again and again.
        if not self.messages or self.user_turns < self._compress_again_at_turn:
            return
        context = self._context_length()
        if needs_compression(
            self.prompt.text,
            self.messages,
            context,
            self.config.compression.threshold,
            reserved_tokens=self.window.reserved_tokens,
        ) and not self.compress(requested=False):
            self._compress_again_at_turn = self.user_turns + COMPRESS_RETRY_TURNS

    def compress(self, focus: str | None = None, *, requested: bool = True) -> bool:
        """Summarise the middle of the conversation and continue in a child session.

        ``requested`` (``/compress``) keeps only the minimum tail; the automatic trigger keeps
        a token-budgeted one. Returns False (session unchanged) when there is nothing to
        compress or the summariser could not be reached.
        """
        try:
            return self._compress(focus, requested)
        finally:
            if requested and not self.busy:
                self._cancel = CancelToken()  # a Stop of /compress must not stop the next turn

    def _compress(self, focus: str | None, requested: bool) -> bool:
        if self.session is None:
            self._emit(Notice("compression", "nothing to compress yet"))
            return False
        extra = []
        for hook in self.pre_compress_hooks:
            try:
                extra.append(hook(list(self.messages)))
            except Exception as exc:  # a provider's notes are optional; compression is not
                log.warning("pre-compress hook failed: %s", exc)
        try:
            compressor = Compressor(
                make_provider(self.config, "compression"),
                threshold=self.config.compression.threshold,
                context_length=self._context_length(),
                reserved_tokens=self.window.reserved_tokens,
            )
            outcome = compressor.compress(
                self.prompt.text,
                self.messages,
                focus=focus,
                extra_context="\n\n".join(e for e in extra if e),
                cancel=self._cancel,
                tail_tokens=0 if requested else None,
            )
        except (CompressionAborted, ProviderError) as exc:
            self._emit(Notice("compression", f"compression skipped, session unchanged: {exc}"))
            return False
        if not outcome.compressed:
            self._emit(Notice("compression", outcome.note or "nothing to compress yet"))
            return False
        failure = self._continue_in_child("compression", outcome.messages)
        if failure is not None:
            self._emit(Notice("compression", f"compression failed, session unchanged: {failure}"))
            return False
        how = (
            " (fallback summary: the summariser's answer was unusable)" if outcome.fallback else ""
        )
        self._emit(
            Notice(
                "compression",
                f"compressed {outcome.summarised} messages into a summary{how}",
                outcome.summary,
            )
        )
        self._emit(SessionStarted(self.session_id, self.parent_session_id, "compression"))
        return True

    def _continue_in_child(self, reason: str, messages: list[dict[str, Any]]) -> Exception | None:
        """End this session with ``reason`` and go on in a child that holds ``messages`` under
        a prompt built now (memory written this session shows in it): a session's stored
        prompt is the one its requests carried, so a new prompt means a new session.

        Everything the child needs is written before anything is switched: on failure
        (returned, not raised) the running session is exactly as it was.
        """
        assert self.session is not None
        old_id, child_id = self.session_id, uuid.uuid4().hex
        before, budget_before = self.memory_at_start, self.budget
        try:
            prompt = self._build_prompt()
            child = self.store.create_session(
                session_id=child_id,
                source=self.source,
                title=self.session.title,
                model=self.session.model,
                system_prompt=prompt.text,
                parent_session_id=old_id,
            )
            self.store.append(child_id, [_stored(m) for m in messages])
        except Exception as exc:
            self.memory_at_start, self.budget = before, budget_before
            log.exception("could not start the child session (%s)", reason)
            with contextlib.suppress(Exception):
                self.store.delete_session(child_id)
            return exc
        self.store.end_session(old_id, reason)
        if self.external_memory is not None:
            self.external_memory.session_ended(self.messages)
        self.session_id, self.parent_session_id = child_id, old_id
        self.memory.session_id = child_id
        self.search_tool.current_session_id = child_id
        self.session, self.prompt, self.messages = child, prompt, list(messages)
        return None
