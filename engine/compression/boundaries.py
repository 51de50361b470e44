"""Tool-call structure of a transcript: which call each result answers, and where a cut
keeps every call together with its results.
"""

from __future__ import annotations

from collections.abc import Sequence

from engine.providers.base import ChatMessage


def _tool_calls_by_id(messages: Sequence[ChatMessage]) -> dict[str, tuple[int, str, str]]:
    """tool_call_id -> (index of the assistant message, tool name, raw arguments)."""
    calls: dict[str, tuple[int, str, str]] = {}
    for index, message in enumerate(messages):
        if message.get("role") != "assistant":
            continue
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            call_id = call.get("id")
            if call_id:
                calls[str(call_id)] = (
                    index,
                    str(function.get("name") or "tool"),
                    str(function.get("arguments") or ""),
                )
    return calls


def safe_boundaries(messages: Sequence[ChatMessage]) -> list[bool]:
    """``result[i]``: whether cutting the list before index ``i`` keeps every tool call with
    its results (``len(messages) + 1`` entries; both ends are always safe).

    A cut is unsafe before a tool result, and anywhere between an assistant message and the
    last result answering one of its calls, even when other messages sit in between.
    """
    calls = _tool_calls_by_id(messages)
    # reach[a]: the last index holding a result for a call made by the assistant at a.
    reach: dict[int, int] = {}
    for index, message in enumerate(messages):
        if message.get("role") == "tool":
            owner = calls.get(str(message.get("tool_call_id")))
            if owner is not None and owner[0] < index:
                reach[owner[0]] = max(reach.get(owner[0], -1), index)
    safe = [True] * (len(messages) + 1)
    furthest = -1
    for index, message in enumerate(messages):
        if index > 0 and (message.get("role") == "tool" or furthest >= index):
            safe[index] = False
        furthest = max(furthest, reach.get(index, -1))
    return safe
