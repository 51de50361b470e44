"""Background review: every ``memory.nudge_interval`` user turns, a second look at the
conversation decides whether anything durable should be remembered.

It runs after the reply is delivered, on its own thread, so the next turn never waits for it.
It may only call memory (and, once they exist, skill) tools, and its writes carry origin
``background_review`` so write approval stages them for the user.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from typing import Any, Protocol

from engine.config import Config
from engine.events import Notice
from engine.home import Home
from engine.memory import tool as memory_tool
from engine.memory.service import MemoryService
from engine.providers import make_provider
from engine.providers.base import ChatMessage, ProviderError
from engine.skills import skill_tools
from engine.tools import Tool, ToolOutcome, ToolRegistry

log = logging.getLogger(__name__)

RECENT_MESSAGES = 30
MESSAGE_CHARS = 2000
MAX_ROUNDS = 4
THREAD_NAME = "cairn-review"
# Tools a review may use; anything else the agent has is left out of its registry.
REVIEW_TOOLS = ("memory", "skill_manage", "skill_view")

INSTRUCTIONS = """\
You review a conversation between a user and an assistant, after the fact, to decide whether \
anything in it should be kept in the assistant's long-term memory. Memory is small and shown in \
every future session, so the bar is high: save only durable facts that will still matter in \
weeks — corrections the user made, stable preferences, facts about the user or their \
environment, procedures that worked. Never save task progress, one-off details, ids, or \
anything already in memory. Use the memory tool (target "user" for who the user is and what \
they like, "memory" for environment facts and lessons). A reusable procedure that worked \
belongs in a skill (skill_manage) rather than in memory. If nothing qualifies, answer exactly \
NOTHING TO SAVE and call no tool."""


def _transcript(messages: list[ChatMessage]) -> str:
    lines = []
    for message in messages[-RECENT_MESSAGES:]:
        content = str(message.get("content") or "")
        if len(content) > MESSAGE_CHARS:
            content = content[:MESSAGE_CHARS] + " […]"
        calls = message.get("tool_calls") or []
        names = ", ".join(c.get("function", {}).get("name", "?") for c in calls)
        suffix = f" [called: {names}]" if names else ""
        lines.append(f"{message['role'].upper()}: {content}{suffix}")
    return "\n\n".join(lines)


class ReviewHost(Protocol):
    """What a review reads from the agent it follows (an :class:`~engine.agent.Agent`); a
    protocol so this module never imports the agent, which imports it."""

    @property
    def home(self) -> Home: ...
    @property
    def config(self) -> Config: ...
    @property
    def user_turns(self) -> int: ...
    @property
    def messages(self) -> list[ChatMessage]: ...
    @property
    def session_id(self) -> str: ...
    @property
    def memory(self) -> MemoryService: ...


class BackgroundReview:
    """``notify`` shows a notice to the agent's listener (the agent's own event path)."""

    def __init__(self, agent: ReviewHost, notify: Callable[[Notice], None]) -> None:
        self.agent = agent
        self._notify = notify
        self._thread: threading.Thread | None = None
        self.last_outcomes: list[ToolOutcome] = []
        self.runs = 0

    def after_turn(self) -> bool:
        """Start a review when this turn completes an interval; True when one started."""
        agent = self.agent
        interval = agent.config.memory.nudge_interval
        if interval <= 0 or agent.user_turns % interval != 0:
            return False
        if not (agent.config.memory.memory_enabled or agent.config.memory.user_profile_enabled):
            return False
        if self._thread is not None and self._thread.is_alive():
            return False  # the previous review is still reading; skip rather than queue up
        # Captured now: by the time the thread runs, /new or compression may have moved on.
        snapshot = [dict(m) for m in agent.messages]
        context = (agent.config, agent.session_id)
        self._thread = threading.Thread(
            target=self._run_safely, args=(snapshot, *context), name=THREAD_NAME, daemon=True
        )
        self._thread.start()
        return True

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the running review (if any) ends; False on timeout."""
        thread = self._thread
        if thread is None:
            return True
        thread.join(timeout)
        return not thread.is_alive()

    def _run_safely(self, messages: list[ChatMessage], config: Config, session_id: str) -> None:
        try:
            self.last_outcomes = self.run(messages, config, session_id)
        except ProviderError as exc:
            self._notify(Notice("review", f"background review skipped: {exc}"))
        except Exception as exc:
            log.exception("background review failed")
            self._notify(Notice("review", f"background review failed: {exc}"))
        finally:
            self.runs += 1

    def run(
        self, messages: list[ChatMessage], config: Config, session_id: str
    ) -> list[ToolOutcome]:
        agent = self.agent
        provider = make_provider(config, "background_review")
        # Its own service: the review thread must not share the foreground tool's state.
        service = MemoryService(agent.home, config, session_id=session_id)
        # Its committed writes reach the external memory provider like the foreground's.
        service.on_committed.extend(agent.memory.on_committed)
        tools = ToolRegistry()
        tools.register(
            Tool(
                "memory",
                memory_tool.SCHEMA,
                memory_tool.MemoryTool(service, origin="background_review"),
                memory_tool.summarize,
                parallel_safe=False,
            )
        )
        # Its own skill tools too: the review's writes carry its origin, so approval stages
        # them like its memory writes.
        for tool in skill_tools(agent.home, config, "background_review", session_id=session_id):
            if tool.name in REVIEW_TOOLS:
                tools.register(tool)
        conversation: list[ChatMessage] = [
            {"role": "system", "content": INSTRUCTIONS},
            {
                "role": "user",
                "content": "Current memory:\n\n"
                + (service.prompt_snapshot() or "(empty)")
                + "\n\nConversation to review:\n\n"
                + _transcript(messages),
            },
        ]
        outcomes: list[ToolOutcome] = []
        for _ in range(MAX_ROUNDS):
            reply = provider.chat(conversation, tools=tools.schemas(), temperature=0.2)
            conversation.append(reply.to_message())
            if not reply.tool_calls:
                break
            done = tools.run(reply.tool_calls)
            outcomes.extend(done)
            conversation.extend(o.to_message() for o in done)
        self._announce(outcomes)
        return outcomes

    def _announce(self, outcomes: list[ToolOutcome]) -> None:
        mode = self.agent.config.display.memory_notifications
        changed = [o for o in outcomes if o.ok and o.result.get("status") in ("applied", "staged")]
        if mode == "off" or not changed:
            return
        staged = [o for o in changed if o.result.get("status") == "staged"]
        if staged:
            ids = ", ".join(str(o.result.get("pending_id")) for o in staged)
            text = f"💾 Memory change waiting for your approval ({ids})"
        else:
            text = "💾 Memory updated"
        detail = "\n".join(_diff_line(o) for o in changed) if mode == "verbose" else ""
        self._notify(Notice("memory", text, detail))


def _diff_line(outcome: ToolOutcome) -> str:
    """A compact diff of one review write: ``+ new entry`` / ``- old`` / ``~ old → new``."""
    try:
        arguments: dict[str, Any] = json.loads(outcome.call.arguments or "{}")
    except ValueError:
        return outcome.summary
    target = "USER" if arguments.get("target") == "user" else "MEMORY"
    lines = []
    for op in arguments.get("operations") or [arguments]:
        action = op.get("action")
        if action == "add":
            lines.append(f"{target} + {op.get('content', '')}")
        elif action == "remove":
            lines.append(f"{target} - {op.get('old_text', '')}")
        elif action == "replace":
            lines.append(f"{target} ~ {op.get('old_text', '')} → {op.get('content', '')}")
    return "\n".join(lines) or outcome.summary
