"""Pruning old tool results without a model: repeats collapse to a reference, long outputs
to a one-line description.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from engine.compression.boundaries import _tool_calls_by_id
from engine.compression.tokens import content_text
from engine.providers.base import ChatMessage

LONG_TOOL_OUTPUT_CHARS = 1_000
PRUNED_PREFIX = "[Pruned"
_FIRST_LINE_CHARS = 160


def _first_line(text: str) -> str:
    for line in text.splitlines():
        line = line.strip()
        if line:
            return line if len(line) <= _FIRST_LINE_CHARS else line[: _FIRST_LINE_CHARS - 1] + "…"
    return ""


def _prune(
    messages: Sequence[ChatMessage], protected: Callable[[int], bool]
) -> tuple[list[ChatMessage], int]:
    calls = _tool_calls_by_id(messages)
    first_seen: dict[str, tuple[str, str]] = {}
    out = list(messages)
    count = 0
    for index, message in enumerate(messages):
        if message.get("role") != "tool":
            continue
        text = content_text(message.get("content"))
        if text.startswith(PRUNED_PREFIX):
            continue
        call_id = str(message.get("tool_call_id") or "")
        owner = calls.get(call_id)
        name = str(message.get("name") or (owner[1] if owner else "tool"))
        earlier = first_seen.get(text)
        if earlier is None:
            first_seen[text] = (name, call_id)
        if protected(index):
            continue
        replacement = None
        if earlier is not None:
            replacement = (
                f"{PRUNED_PREFIX}: same output as the earlier {earlier[0]} result "
                f"(call {earlier[1] or '?'}), {len(text):,} chars]"
            )
            # A short repeat ("ok", "") is cheaper kept than referenced.
            if len(replacement) >= len(text):
                replacement = None
        if replacement is None and len(text) > LONG_TOOL_OUTPUT_CHARS:
            lines = text.count("\n") + 1
            replacement = (
                f"{PRUNED_PREFIX}: {name} output of {len(text):,} chars in {lines:,} lines; "
                f"first line: {_first_line(text)}]"
            )
        if replacement is not None:
            out[index] = {**message, "content": replacement}
            count += 1
    return out, count


def prune_tool_results(
    messages: Sequence[ChatMessage], keep_recent: int
) -> tuple[list[ChatMessage], int]:
    """Shrink old tool results without a model; returns (new list, how many were shrunk).

    The last ``keep_recent`` messages are left alone. Before them, a tool result identical to an
    earlier one becomes a one-line reference to it, and one longer than 1,000 chars becomes a
    one-line description (tool name, size, first line). Only ``content`` changes, so every
    result keeps its ``tool_call_id`` and its place after its call. The input is not modified.
    """
    if keep_recent < 0:
        raise ValueError(f"keep_recent must be >= 0, got {keep_recent}")
    keep_from = len(messages) - keep_recent
    return _prune(messages, lambda index: index >= keep_from)
