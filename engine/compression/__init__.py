"""Context compression (layer 3): keep a long conversation inside the model's window.

The agent measures its transcript with :func:`needs_compression`; past the threshold it calls
:meth:`Compressor.compress`, which

1. splits the messages (the system prompt is not among them: the agent rebuilds it) into a
   *head* (the first three messages, stretched so it never ends inside a tool call's results or
   on a user message), a token-budgeted *tail* (at least eight messages, never starting inside a
   tool call's results, always holding the last user message) and the *middle* between them;
2. prunes the middle's old tool results without a model (repeats collapse to a reference, long
   outputs to a one-line description) so the summariser reads less;
3. asks the auxiliary model, once, for a summary of the middle in fixed sections;
4. returns head + one user-role summary message + tail, as new lists and new dicts.

A transient provider failure (network, timeout, auth, rate limit, server, stream cut) or a
cancel raises :class:`CompressionAborted` and the caller keeps its session as it was. Any other
failure (a reply that is not a summary, a request the server rejects) still compresses, with a
summary assembled from the messages themselves and ``fallback=True``.

Token counts here are estimates, never a tokenizer's: see :func:`estimate_tokens`.

The package, one job per module: ``tokens`` (estimates and the threshold), ``boundaries``
(tool-call structure and safe cuts), ``prune`` (tool results pruned without a model), ``split``
(head, middle, tail), ``request`` (the summariser's request and the check of its reply),
``fallback`` (the summary without a model) and ``compressor`` (the whole run). Names with a
leading underscore are shared inside the package only.
"""

from __future__ import annotations

from engine.compression.boundaries import safe_boundaries
from engine.compression.compressor import (
    HEAD_SHARE_OF_THRESHOLD,
    TAIL_SHARE_OF_THRESHOLD,
    CompressionAborted,
    CompressionResult,
    Compressor,
    summary_message,
)
from engine.compression.fallback import FALLBACK_MAX_CHARS, fallback_summary, mentioned_paths
from engine.compression.prune import LONG_TOOL_OUTPUT_CHARS, PRUNED_PREFIX, prune_tool_results
from engine.compression.request import (
    COMPACT_INSTRUCTIONS_BELOW,
    COMPACT_SECTIONS,
    MIN_SECTIONS,
    MIN_SUMMARY_TOKENS,
    SUMMARY_LABEL,
    SUMMARY_SECTIONS,
    SUMMARY_SHARE_OF_ROOM,
    SUMMARY_TEMPERATURE,
    is_summary_message,
    summary_token_target,
)
from engine.compression.split import (
    HEAD_MESSAGES,
    MIN_TAIL_MESSAGES,
    TAIL_STRETCH,
    CompressionPlan,
    plan_split,
)
from engine.compression.tokens import (
    CHARS_PER_TOKEN,
    MESSAGE_OVERHEAD_TOKENS,
    NON_TEXT_PART_TOKENS,
    TOOL_CALL_OVERHEAD_TOKENS,
    content_text,
    conversation_tokens,
    estimate_tokens,
    message_tokens,
    needs_compression,
    room_tokens,
)

__all__ = [
    "CHARS_PER_TOKEN",
    "COMPACT_INSTRUCTIONS_BELOW",
    "COMPACT_SECTIONS",
    "FALLBACK_MAX_CHARS",
    "HEAD_MESSAGES",
    "HEAD_SHARE_OF_THRESHOLD",
    "LONG_TOOL_OUTPUT_CHARS",
    "MESSAGE_OVERHEAD_TOKENS",
    "MIN_SECTIONS",
    "MIN_SUMMARY_TOKENS",
    "MIN_TAIL_MESSAGES",
    "NON_TEXT_PART_TOKENS",
    "PRUNED_PREFIX",
    "SUMMARY_LABEL",
    "SUMMARY_SECTIONS",
    "SUMMARY_SHARE_OF_ROOM",
    "SUMMARY_TEMPERATURE",
    "TAIL_SHARE_OF_THRESHOLD",
    "TAIL_STRETCH",
    "TOOL_CALL_OVERHEAD_TOKENS",
    "CompressionAborted",
    "CompressionPlan",
    "CompressionResult",
    "Compressor",
    "content_text",
    "conversation_tokens",
    "estimate_tokens",
    "fallback_summary",
    "is_summary_message",
    "mentioned_paths",
    "message_tokens",
    "needs_compression",
    "plan_split",
    "prune_tool_results",
    "room_tokens",
    "safe_boundaries",
    "summary_message",
    "summary_token_target",
]
