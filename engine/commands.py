"""Slash commands, one implementation for the terminal and the desktop client.

A command returns a :class:`CommandResult`: text for a terminal, structured ``data`` for a
view, and an optional ``action`` a client may act on (open the journey, show pending writes).
Commands work without a model, except ``/compress`` which needs the summariser.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from engine.memory.errors import MemoryToolError

if TYPE_CHECKING:
    from engine.agent import Agent
    from engine.pending import PendingWrites

HELP = """\
/new                      end this session and start a fresh one
/retry                    ask the last message again (the first answer stays in the history)
/compress [focus]         summarise the middle of this session now (optionally about a topic)
/memory                   memory usage; /memory pending lists writes waiting for approval
/memory approve ID|all    apply staged writes      /memory reject ID|all  drop them
/memory approval on|off   stage every memory write for review, or apply at once
/journey                  recent memory changes, newest first
/sessions [query]         recent sessions, or search earlier sessions
/sessions import-hermes   copy the sessions of a Hermes Agent state.db in this home
/help                     this list"""


# Not in the command table: asking again is a streamed turn, which the chat loops run
# (``Agent.take_back_last_turn`` then ``send``), not text in and text out.
RETRY = "/retry"


@dataclass
class CommandResult:
    ok: bool
    text: str
    data: dict[str, Any] = field(default_factory=dict)
    action: str | None = None  # journey | pending | sessions | new_session | compressed


def is_command(line: str) -> bool:
    """Whether ``line`` names a slash command. Other text starting with ``/`` (a path such as
    ``/etc/hosts is wrong``) is a message; ``//`` escapes a leading slash."""
    if not line.startswith("/") or line.startswith("//"):
        return False
    name = line[1:].split(maxsplit=1)[0].lower() if line[1:].strip() else ""
    return name in _COMMANDS


def as_message(line: str) -> str:
    """The text to send for a line that is not a command: ``//x`` becomes ``/x``."""
    return line[1:] if line.startswith("//") else line


def run_command(agent: Agent, line: str) -> CommandResult:
    try:
        words = shlex.split(line[1:])
    except ValueError:
        words = line[1:].split()
    if not words:
        return CommandResult(False, "an empty command; /help lists them")
    name, args = words[0].lower(), words[1:]
    handler = _COMMANDS.get(name)
    if handler is None:
        return CommandResult(False, f"unknown command /{name}\n\n{HELP}")
    try:
        return handler(agent, args)
    except MemoryToolError as exc:
        return CommandResult(False, exc.message, exc.to_dict())
    except Exception as exc:  # a failing command must not end the chat it was typed in
        return CommandResult(False, f"/{name} failed: {exc}")


def _help(agent: Agent, args: list[str]) -> CommandResult:
    return CommandResult(True, HELP)


def _new(agent: Agent, args: list[str]) -> CommandResult:
    old = agent.session_id
    agent.new_session()
    return CommandResult(
        True,
        "new session started; memory written so far is in its prompt",
        {"previous_session_id": old, "session_id": agent.session_id},
        "new_session",
    )


def _compress(agent: Agent, args: list[str]) -> CommandResult:
    focus = " ".join(args) or None
    before = agent.session_id
    if not agent.compress(focus=focus):
        return CommandResult(False, "session not compressed (see the notice above)")
    return CommandResult(
        True,
        # The new session's id is announced with the session change itself.
        f"compressed; the earlier part stays in session {before[:8]}",
        {"parent_session_id": before, "session_id": agent.session_id},
        "compressed",
    )


def _pending(agent: Agent) -> PendingWrites:
    """Staged memory, skill and fact writes: /memory pending lists and settles all of them."""
    from engine.pending import PendingWrites

    return PendingWrites(agent.home, agent.memory)


def _memory(agent: Agent, args: list[str]) -> CommandResult:
    service = agent.memory
    sub = args[0].lower() if args else ""
    if sub == "":
        lines = []
        data: dict[str, Any] = {}
        from engine.memory.entries import Target
        from engine.memory.service import usage_of

        for target in Target:
            current = service.read(target)
            use = usage_of(target, current.entries, current.limit)
            data[target.value] = use
            lines.append(
                f"{target.filename}: {use['entries']} entries, "
                f"{use['chars']:,}/{use['limit']:,} chars ({use['percent']}%)"
            )
        pending = _pending(agent).records()
        approval = "on" if service.config.memory.write_approval else "off"
        lines.append(f"write approval {approval}; {len(pending)} pending")
        return CommandResult(True, "\n".join(lines), data)
    if sub == "pending":
        records = _pending(agent).records()
        if not records:
            return CommandResult(True, "no writes are waiting for approval", {"pending": []})
        lines = [f"{r.id}  {r.when()}  {r.origin}  {r.summary}" for r in records]
        return CommandResult(
            True, "\n".join(lines), {"pending": [r.model_dump() for r in records]}, "pending"
        )
    if sub in ("approve", "reject"):
        if len(args) != 2:
            return CommandResult(False, f"usage: /memory {sub} ID|all")
        approve = sub == "approve"
        queue = _pending(agent)
        if args[1].lower() == "all":
            outcomes = queue.settle_all(approve)
            text = "\n".join(o.get("message", "") for o in outcomes) or "nothing was pending"
            ok = all(o.get("ok") for o in outcomes)
            return CommandResult(ok, text, {"outcomes": outcomes}, "pending")
        outcome = queue.approve(args[1]) if approve else queue.reject(args[1])
        return CommandResult(bool(outcome.get("ok")), outcome["message"], outcome, "pending")
    if sub == "approval":
        if len(args) != 2 or args[1].lower() not in ("on", "off"):
            return CommandResult(False, "usage: /memory approval on|off")
        outcome = service.set_approval(args[1].lower() == "on")
        agent.config = service.config
        return CommandResult(True, outcome["message"], outcome)
    return CommandResult(False, f"unknown /memory subcommand {sub!r}\n\n{HELP}")


def _journey(agent: Agent, args: list[str]) -> CommandResult:
    events = agent.memory.events(limit=20)
    if not events:
        return CommandResult(True, "memory has no recorded changes yet", {"events": []}, "journey")
    lines = []
    for event in events:
        when = datetime.fromtimestamp(event.at).strftime("%Y-%m-%d %H:%M")
        entry = event.entry_after or event.entry_before or ""
        entry = " ".join(entry.split())
        entry = entry if len(entry) <= 70 else entry[:69] + "…"
        lines.append(f"#{event.id:<5} {when}  {event.target:<6} {event.action:<14} {entry}")
    data = {"events": [e.model_dump() for e in events]}
    return CommandResult(True, "\n".join(lines), data, "journey")


def _sessions(agent: Agent, args: list[str]) -> CommandResult:
    if args == ["import-hermes"]:
        return _import_hermes(agent)
    query = " ".join(args)
    if not query:
        result = agent.search_tool({"mode": "browse", "limit": 10}, for_user=True)
        lines = [_session_line(card) for card in result.get("sessions", [])]
        return CommandResult(True, "\n".join(lines) or "no sessions yet", result, "sessions")
    result = agent.search_tool({"mode": "discover", "query": query})
    if not result.get("ok"):
        return CommandResult(False, result.get("message", "search failed"), result)
    lines = []
    for card in result.get("results", []):
        lines.append(_session_line(card))
        lines.append(f"    {card.get('snippet', '')}")
    return CommandResult(
        True, "\n".join(lines) or f"nothing found for {query!r}", result, "sessions"
    )


def _import_hermes(agent: Agent) -> CommandResult:
    from engine.sessions import hermes

    try:
        report = hermes.import_from(agent.home, agent.store)
    except hermes.HermesError as exc:
        return CommandResult(False, str(exc))
    text = (
        f"copied {report.sessions_imported:,} sessions ({report.messages_imported:,} messages) "
        f"from the Hermes Agent state.db"
    )
    if report.sessions_skipped:
        text += f"; {report.sessions_skipped:,} were already here"
    if report.errors_total:
        text += f"; {report.errors_total:,} could not be read"
    return CommandResult(True, text, report.model_dump(), "sessions")


def _session_line(card: dict[str, Any]) -> str:
    when = datetime.fromtimestamp(card["started_at"]).strftime("%Y-%m-%d %H:%M")
    return f"{card['session_id'][:8]}  {when}  {card.get('title') or '(untitled)'}"


_COMMANDS: dict[str, Callable[[Agent, list[str]], CommandResult]] = {
    "help": _help,
    "new": _new,
    "compress": _compress,
    "memory": _memory,
    "journey": _journey,
    "sessions": _sessions,
}
