"""What every request to the model carries, and what that leaves for the conversation.

The system prompt (persona, tool guidance, memory, skills index) and the tool schemas ride in
every request and compression never shrinks them; the reply needs room too. In a large window
they are a few percent; in a 1,024-token one they are most of it. :class:`WindowBudget`
measures them once per session so the agent can switch to the compact prompt, say upfront
when a window cannot hold them, and check each request before it is sent.

Estimates, not a tokenizer's counts: prose at ~4 characters a token (as
:func:`engine.compression.estimate_tokens`), schemas, which are JSON, at ~3.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from engine.compression import conversation_tokens

# The reply's room: a quarter of the window, between 64 and 1,024 tokens.
REPLY_SHARE = 0.25
REPLY_MIN_TOKENS = 64
REPLY_MAX_TOKENS = 1_024
# A fixed part above this share of the window switches the session to the compact prompt
# (an 8,192-token window keeps the full one; 4,096 and below are compact).
COMPACT_FIXED_SHARE = 0.4
# Less room than this for the conversation and no exchange fits: the window is too small.
MIN_CONVERSATION_TOKENS = 128
# JSON (tool schemas) runs denser than prose.
SCHEMA_CHARS_PER_TOKEN = 3
# Each tool's framing in a chat template.
TOOL_OVERHEAD_TOKENS = 8
# A request is refused when its estimate, raised by this much for the estimate's error, and
# the smallest reply room do not fit the window.
REQUEST_MARGIN = 1.1


def reply_tokens(window: int) -> int:
    return max(REPLY_MIN_TOKENS, min(REPLY_MAX_TOKENS, int(window * REPLY_SHARE)))


def schema_tokens(schemas: Sequence[dict[str, Any]] | None) -> int:
    if not schemas:
        return 0
    text = json.dumps(list(schemas), ensure_ascii=False, separators=(",", ":"))
    return math.ceil(len(text) / SCHEMA_CHARS_PER_TOKEN) + TOOL_OVERHEAD_TOKENS * len(schemas)


class WindowBudget(BaseModel):
    """One session's fixed costs against its model's window, in estimated tokens."""

    model_config = ConfigDict(frozen=True)

    window: int
    prompt_tokens: int
    tools_tokens: int
    reply_tokens: int
    compact: bool = False
    # Only the core tools (memory, session_search) are offered: the compact prompt alone
    # did not fit.
    core_only: bool = False
    # False when the window is a default guess, not a figure from the config or the server:
    # requests are then never refused on its account.
    known: bool = True

    @classmethod
    def measure(
        cls,
        window: int,
        system_prompt: str,
        schemas: Sequence[dict[str, Any]] | None,
        *,
        compact: bool = False,
        core_only: bool = False,
        known: bool = True,
    ) -> WindowBudget:
        return cls(
            window=window,
            prompt_tokens=conversation_tokens(system_prompt, []),
            tools_tokens=schema_tokens(schemas),
            reply_tokens=reply_tokens(window),
            compact=compact,
            core_only=core_only,
            known=known,
        )

    @property
    def fixed_tokens(self) -> int:
        return self.prompt_tokens + self.tools_tokens

    @property
    def reserved_tokens(self) -> int:
        """Besides the system prompt, what every request needs: schemas and the reply. None
        is reserved on a guessed window: a guess shortens nothing (compression keeps its
        threshold of the whole default)."""
        if not self.known:
            return 0
        return self.tools_tokens + self.reply_tokens

    @property
    def room(self) -> int:
        """Tokens the conversation may use."""
        return self.window - self.fixed_tokens - self.reply_tokens

    @property
    def fits(self) -> bool:
        return self.room >= MIN_CONVERSATION_TOKENS

    @property
    def wants_smaller(self) -> bool:
        """Whether a smaller form of the fixed part should be tried: the full one takes over
        40% of the window, or the compact one leaves no room."""
        if self.core_only or not self.known:
            return False
        if self.compact:
            return not self.fits
        return self.fixed_tokens > self.window * COMPACT_FIXED_SHARE

    def figures(self) -> str:
        return (
            f"system prompt ~{self.prompt_tokens:,} tokens (persona, tool guidance, memory, "
            f"skills), tool schemas ~{self.tools_tokens:,}, reply ~{self.reply_tokens:,}"
        )

    def too_small(self) -> str:
        """The upfront message for a window that cannot hold the fixed part."""
        need = self.fixed_tokens + self.reply_tokens + MIN_CONVERSATION_TOKENS
        return (
            f"the model's window ({self.window:,} tokens) cannot hold what every request "
            f"carries: {self.figures()}; it needs at least ~{need:,}. Start the server with a "
            "larger context (llama-server -c 4096, Ollama num_ctx) or choose another model "
            "(`cairn model`); emptying memory or removing skills also helps"
        )

    def fits_request(self, request_tokens: int, tools_tokens: int) -> bool:
        """Whether a request of ``request_tokens`` (system prompt and messages) plus
        ``tools_tokens`` leaves room for at least a short reply."""
        if not self.known:
            return True  # the server will say if it is too long; a guess must not refuse
        needed = (request_tokens + tools_tokens) * REQUEST_MARGIN + REPLY_MIN_TOKENS
        return needed <= self.window
