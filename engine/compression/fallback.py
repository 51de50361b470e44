"""The summary assembled from the messages themselves, when the summariser's reply cannot be
used.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence

from engine.compression.request import _trim, is_summary_message
from engine.compression.tokens import content_text
from engine.providers.base import ChatMessage

FALLBACK_MAX_CHARS = 6_000
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://\S+", re.IGNORECASE)
_PATH = re.compile(
    r"(?<![\w/.~-])(?:[A-Za-z]:\\(?:[\w.-]+\\)*[\w.-]+|(?:~|\.{1,2})?/?(?:[\w.-]+/)+[\w.-]+"
    r"|[\w-]+\.[A-Za-z][A-Za-z0-9]{0,4})(?![\w/])"
)
_PATH_KEYS = re.compile(r"path|file|dir|cwd", re.IGNORECASE)
_NOT_A_PATH_SUFFIX = re.compile(r"\.(?:e|g|i|etc|com|org|net|io)$", re.IGNORECASE)


def _looks_like_path(candidate: str) -> bool:
    if candidate.startswith(("/", "~/", "./", "../")) or re.match(r"[A-Za-z]:\\", candidate):
        return len(candidate) > 2
    last = re.split(r"[/\\]", candidate)[-1]
    if "/" in candidate:
        return "." in last or candidate.count("/") >= 2
    return not _NOT_A_PATH_SUFFIX.search(candidate) and not candidate[0].isdigit()


def mentioned_paths(messages: Sequence[ChatMessage], limit: int = 40) -> list[str]:
    """File paths named in the messages' text and tool arguments, first mention first."""
    found: dict[str, None] = {}

    def add(candidate: str) -> None:
        candidate = candidate.rstrip(".,:;")
        if candidate and candidate not in found and len(found) < limit:
            found[candidate] = None

    def scan(text: str) -> None:
        for match in _PATH.finditer(_URL.sub(" ", text)):
            if _looks_like_path(match.group(0).rstrip(".,:;")):
                add(match.group(0))

    for message in messages:
        if is_summary_message(message):
            continue
        scan(content_text(message.get("content")))
        for call in message.get("tool_calls") or ():
            arguments = str((call.get("function") or {}).get("arguments") or "")
            try:
                parsed = json.loads(arguments)
            except ValueError:
                parsed = None
            if isinstance(parsed, dict):
                for key, value in parsed.items():
                    if isinstance(value, str) and _PATH_KEYS.search(str(key)) and value.strip():
                        add(value.strip())
            scan(arguments)
    return list(found)


def _one_line(text: str, limit: int) -> str:
    return _trim(" ".join(text.split()), limit)


def fallback_summary(
    middle: Sequence[ChatMessage],
    *,
    extra_context: str = "",
    reason: str = "",
    max_chars: int = FALLBACK_MAX_CHARS,
) -> str:
    """A summary of ``middle`` built without a model, at most ``max_chars`` (6,000) chars: the
    user's asks, the tools used, the paths mentioned, the last thing the assistant said, and
    any earlier summary carried over (shortened)."""
    asks = [
        _one_line(content_text(m.get("content")), 240)
        for m in middle
        if m.get("role") == "user" and not is_summary_message(m)
    ]
    asks = [ask for ask in asks if ask]
    tools: Counter[str] = Counter()
    for message in middle:
        if message.get("role") == "assistant":
            for call in message.get("tool_calls") or ():
                tools[str((call.get("function") or {}).get("name") or "tool")] += 1
    statements = [
        content_text(m.get("content")).strip()
        for m in middle
        if m.get("role") == "assistant" and content_text(m.get("content")).strip()
    ]
    earlier = [content_text(m.get("content")) for m in middle if is_summary_message(m)]

    lines = [
        "(Assembled without a model"
        + (f" because the summariser failed: {_one_line(reason, 200)}" if reason else "")
        + "; an outline, not a full summary.)",
        "",
        "## User asks (oldest first)",
    ]
    if len(asks) > 12:
        # The first asks usually state the goal and the last ones what is still open.
        skipped = len(asks) - 12
        shown = [*asks[:2], f"… {skipped} asks in between not listed", *asks[-10:]]
    else:
        shown = asks
    lines += [f"- {ask}" for ask in shown] or ["None"]
    lines += ["", "## Tools used"]
    lines.append(
        ", ".join(f"{name} ×{count}" for name, count in tools.most_common(20)) if tools else "None"
    )
    lines += ["", "## Files and paths mentioned"]
    paths = mentioned_paths(middle)
    lines.append(", ".join(paths) if paths else "None")
    lines += ["", "## Last assistant statement"]
    lines.append(_trim(statements[-1], 800) if statements else "None")
    if extra_context.strip():
        lines += ["", "## Notes from the memory provider", _trim(extra_context.strip(), 800)]
    text = "\n".join(lines)
    if earlier:
        room = max(0, max_chars - len(text) - 40)
        text += "\n\n## Earlier summary (carried over)\n" + _trim(earlier[-1], room)
    return _trim(text, max_chars)
