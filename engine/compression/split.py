"""The split of a transcript into head, middle (to be summarised) and a token-budgeted tail."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from engine.compression.boundaries import safe_boundaries
from engine.compression.tokens import estimate_tokens, message_tokens
from engine.providers.base import ChatMessage

HEAD_MESSAGES = 3
MIN_TAIL_MESSAGES = 8
# The tail may grow this much past its budget to reach the last user message contiguously;
# beyond that the message is carried alone and the turns before it are summarised.
TAIL_STRETCH = 1.5


@dataclass(frozen=True)
class CompressionPlan:
    """Which messages stay and which are summarised, by index into the input list.

    Kept: ``[0, head_end)``, then ``pinned_user`` (the last user message, when it sits before
    the tail and too far back to reach contiguously), then ``[tail_start, n)``.
    """

    head_end: int
    tail_start: int
    pinned_user: int | None
    middle: tuple[int, ...]

    def kept_tail(self, total: int) -> list[int]:
        pinned = [self.pinned_user] if self.pinned_user is not None else []
        return pinned + list(range(self.tail_start, total))


def plan_split(
    messages: Sequence[ChatMessage],
    tail_budget_tokens: int,
    *,
    head_messages: int = HEAD_MESSAGES,
    min_tail: int = MIN_TAIL_MESSAGES,
) -> CompressionPlan:
    """Split ``messages`` into head, middle and tail (see the module docstring)."""
    n = len(messages)
    safe = safe_boundaries(messages)

    def role(index: int) -> Any:
        return messages[index].get("role")

    head_end = min(head_messages, n)
    # The summary that follows the head is a user message: end the head on a reply so roles
    # still alternate, and never between a tool call and its results. An empty head (a small
    # window) needs neither: the summary opens the conversation.
    while 0 < head_end < n and (not safe[head_end] or role(head_end - 1) == "user"):
        head_end += 1

    def align(start: int) -> int:
        # Start the tail on a cut that keeps tool calls whole and on a non-user message, for the
        # same alternation reason; moving back only ever keeps more.
        while start > head_end and (not safe[start] or role(start) in ("user", "tool")):
            start -= 1
        return start

    start, used = n, 0
    while start > head_end:
        cost = message_tokens(messages[start - 1])
        if n - start >= min_tail and used + cost > tail_budget_tokens:
            break
        used += cost
        start -= 1
    start = align(start)

    pinned: int | None = None
    last_user = next((i for i in range(n - 1, -1, -1) if role(i) == "user"), None)
    if last_user is not None and head_end <= last_user < start:
        stretched = align(last_user)
        extra = estimate_tokens(messages[stretched:start])
        standalone = safe[last_user] and safe[last_user + 1]
        if not standalone or used + extra <= tail_budget_tokens * TAIL_STRETCH:
            start = stretched
        else:
            pinned = last_user
    middle = tuple(i for i in range(head_end, start) if i != pinned)
    return CompressionPlan(head_end=head_end, tail_start=start, pinned_user=pinned, middle=middle)
