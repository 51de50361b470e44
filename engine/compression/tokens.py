"""Token estimates for messages and transcripts, and the threshold test that asks for
compression.

Estimates only, never a tokenizer's: characters over a fixed ratio plus per-message framing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from engine.providers.base import ChatMessage

# English prose runs ~4 characters per token on common BPE vocabularies; code, JSON and
# non-Latin scripts run denser (~3), so the estimate is low for them. The threshold leaves the
# other half of the window as margin, and requests sized here use a stricter ratio.
CHARS_PER_TOKEN = 4
# Role markers and separators a chat template adds around every message.
MESSAGE_OVERHEAD_TOKENS = 4
# The id, type and JSON framing of one tool call.
TOOL_CALL_OVERHEAD_TOKENS = 6
# A non-text content part (an image): a flat guess, since its real cost depends on the model.
NON_TEXT_PART_TOKENS = 256


def _chars_to_tokens(chars: int) -> int:
    return math.ceil(chars / CHARS_PER_TOKEN)


def content_text(content: Any) -> str:
    """The text of a message's ``content``: a string, or the text parts of a part list."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            part["text"]
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return str(content)


def _content_tokens(content: Any) -> int:
    if isinstance(content, list):
        total = 0
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                total += _chars_to_tokens(len(part["text"]))
            else:
                total += NON_TEXT_PART_TOKENS
        return total
    return _chars_to_tokens(len(content_text(content)))


def message_tokens(message: ChatMessage) -> int:
    """Estimated tokens of one message: content, tool calls (name + arguments), tool_call_id."""
    tokens = MESSAGE_OVERHEAD_TOKENS + _content_tokens(message.get("content"))
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        chars = len(str(function.get("name") or "")) + len(str(function.get("arguments") or ""))
        tokens += TOOL_CALL_OVERHEAD_TOKENS + _chars_to_tokens(chars)
    if message.get("tool_call_id"):
        tokens += _chars_to_tokens(len(str(message["tool_call_id"])))
    return tokens


def estimate_tokens(messages: Sequence[ChatMessage]) -> int:
    """Estimated prompt tokens of ``messages``, without a tokenizer.

    Each message costs 4 tokens of framing plus ceil(chars / 4) of its text; an assistant's tool
    calls add 6 tokens each plus ceil(chars / 4) of name and arguments; a non-text content part
    (an image) counts 256. Cheap enough to run before every model call; typically within ~25%
    of a real tokenizer on English and low on code or non-Latin text.
    """
    return sum(message_tokens(message) for message in messages)


def conversation_tokens(system_prompt: str, messages: Sequence[ChatMessage]) -> int:
    """Estimated tokens of the system prompt plus the messages, as sent to the model."""
    return estimate_tokens([{"role": "system", "content": system_prompt}]) + estimate_tokens(
        messages
    )


def _check_threshold(threshold: float) -> None:
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"threshold must be in (0, 1], got {threshold}")


def room_tokens(system_prompt: str, context_length: int, reserved_tokens: int = 0) -> int:
    """Tokens the conversation may use: the window less the system prompt and what else
    every request must carry (``reserved_tokens``: tool schemas, room for the reply)."""
    return context_length - conversation_tokens(system_prompt, []) - max(0, reserved_tokens)


def needs_compression(
    system_prompt: str,
    messages: Sequence[ChatMessage],
    context_length: int,
    threshold: float,
    *,
    reserved_tokens: int = 0,
) -> bool:
    """Whether the messages reach ``threshold`` (a fraction) of the room they have: the
    window less the system prompt and ``reserved_tokens``.

    Measured against the room, not the whole window, so a small window whose fixed part
    already takes half of it is not asked to compress before there is anything to compress.
    """
    _check_threshold(threshold)
    if context_length <= 0:
        raise ValueError(f"context_length must be positive, got {context_length}")
    if not messages:
        return False
    room = room_tokens(system_prompt, context_length, reserved_tokens)
    return room <= 0 or estimate_tokens(messages) >= threshold * room
