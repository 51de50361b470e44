"""The compressor: split, prune, one summariser call (or the fallback), and the new
transcript; a transient failure or a cancel aborts and leaves the session as it was.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from engine.compression.fallback import FALLBACK_MAX_CHARS, fallback_summary
from engine.compression.prune import _prune
from engine.compression.request import (
    _MESSAGE_FLOOR_CHARS,
    _MIN_TRANSCRIPT_CHARS,
    _REQUEST_CHARS_PER_TOKEN,
    _REQUEST_SAFETY_TOKENS,
    COMPACT_INSTRUCTIONS_BELOW,
    COMPACT_SECTIONS,
    MIN_SECTIONS,
    SUMMARY_LABEL,
    SUMMARY_TEMPERATURE,
    _clean_summary,
    _instructions,
    _NotASummary,
    _request_text,
    summary_token_target,
)
from engine.compression.split import HEAD_MESSAGES, MIN_TAIL_MESSAGES, CompressionPlan, plan_split
from engine.compression.tokens import (
    CHARS_PER_TOKEN,
    MESSAGE_OVERHEAD_TOKENS,
    _check_threshold,
    conversation_tokens,
    estimate_tokens,
    needs_compression,
    room_tokens,
)
from engine.providers.base import CancelToken, ChatMessage, ChatProvider, ProviderError

# The tail's budget, as a share of the threshold's token count: with the default 0.5 the tail
# gets 20% of the window, leaving room for head and summary well below the threshold.
TAIL_SHARE_OF_THRESHOLD = 0.4
# In a small window the head gets at most this share of the threshold's token count.
HEAD_SHARE_OF_THRESHOLD = 0.2


class CompressionAborted(RuntimeError):
    """Compression stopped without a result; the caller keeps its session unchanged.

    ``kind`` is the provider error's kind, or ``"cancelled"``.
    """

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass
class CompressionResult:
    """``messages`` replaces the caller's list (new list, new dicts); when ``compressed`` is
    False nothing could be summarised and ``messages`` is a copy of the input."""

    messages: list[ChatMessage]
    summary: str
    compressed: bool
    fallback: bool = False
    # Why there was nothing to compress, or why the fallback summary was used.
    note: str = ""
    pruned: int = 0
    summarised: int = 0
    tokens_before: int = 0
    tokens_after: int = 0
    # Wall time: the split, pruning and request building; the summariser round trip.
    prepare_seconds: float = 0.0
    summarise_seconds: float = 0.0
    plan: CompressionPlan | None = field(default=None, repr=False)


def summary_message(summary: str, summarised: int, *, fallback: bool) -> ChatMessage:
    """The user-role message standing in for the summarised messages."""
    how = (
        "The summariser was unavailable, so this outline was assembled without a model."
        if fallback
        else ""
    )
    intro = (
        f"{SUMMARY_LABEL} {summarised} earlier messages were condensed into this summary to "
        "stay within the context window; the full transcript is kept in the session history. "
        "The messages after it are the most recent ones, unchanged. " + how
    ).rstrip()
    return {"role": "user", "content": f"{intro}\n\n{summary}"}


class Compressor:
    """Compresses transcripts with one auxiliary-model call each.

    ``provider`` writes the summary and bounds its request; ``context_length`` is the *main*
    model's window, which sizes the tail and the threshold (it defaults to the provider's,
    right when the same model does both jobs). ``reserved_tokens`` is what every main request
    carries besides the system prompt and the messages (tool schemas, room for the reply):
    head, tail and summary are sized on the room that leaves.
    """

    def __init__(
        self,
        provider: ChatProvider,
        *,
        threshold: float = 0.5,
        context_length: int | None = None,
        reserved_tokens: int = 0,
    ) -> None:
        _check_threshold(threshold)
        self.provider = provider
        self.threshold = threshold
        self._context_length = context_length
        self.reserved_tokens = max(0, reserved_tokens)

    @property
    def context_length(self) -> int:
        return self._context_length or self.provider.context_length

    def should_compress(self, system_prompt: str, messages: Sequence[ChatMessage]) -> bool:
        return needs_compression(
            system_prompt,
            messages,
            self.context_length,
            self.threshold,
            reserved_tokens=self.reserved_tokens,
        )

    def split_sizes(
        self, system_prompt: str, messages: Sequence[ChatMessage], tail_tokens: int | None
    ) -> tuple[int, int, int]:
        """(head messages, minimum tail messages, tail token budget) for this window.

        A large window keeps the fixed counts (3 and 8). When the room the conversation has
        cannot hold a head of 3, a tail of 8 and the summary below the threshold (a small
        window, or long messages), both are cut to what fits their token shares, down to an
        empty head and a one-message tail: compression then works from the second turn, not
        only once 13 messages exist.
        """
        room = max(0, room_tokens(system_prompt, self.context_length, self.reserved_tokens))
        target = room * self.threshold
        budget = int(target * TAIL_SHARE_OF_THRESHOLD) if tail_tokens is None else tail_tokens
        head = estimate_tokens(messages[:HEAD_MESSAGES])
        tail = estimate_tokens(messages[-MIN_TAIL_MESSAGES:])
        summary = summary_token_target(self.provider_window(), room)
        if head + tail + summary <= target:
            return HEAD_MESSAGES, MIN_TAIL_MESSAGES, budget
        head_budget = int(target * HEAD_SHARE_OF_THRESHOLD)
        head_messages = 0
        while (
            head_messages < HEAD_MESSAGES
            and estimate_tokens(messages[: head_messages + 1]) <= head_budget
        ):
            head_messages += 1
        min_tail = 1
        while (
            min_tail < MIN_TAIL_MESSAGES and estimate_tokens(messages[-(min_tail + 1) :]) <= budget
        ):
            min_tail += 1
        return head_messages, min_tail, budget

    def provider_window(self) -> int:
        return self.provider.context_length

    def compress(
        self,
        system_prompt: str,
        messages: Sequence[ChatMessage],
        *,
        focus: str | None = None,
        extra_context: str = "",
        cancel: CancelToken | None = None,
        tail_tokens: int | None = None,
    ) -> CompressionResult:
        """Summarise the middle of ``messages``; see the module docstring for the contract.

        ``tail_tokens`` overrides the tail's token budget: ``/compress`` passes 0 so a user
        who asks for compression gets it down to the minimum tail.
        Raises :class:`CompressionAborted` on a transient provider error or a cancel.
        """
        started = time.perf_counter()
        snapshot = list(messages)
        tokens_before = conversation_tokens(system_prompt, snapshot)
        self._check_cancel(cancel)
        try:
            head_messages, min_tail, budget = self.split_sizes(system_prompt, snapshot, tail_tokens)
            plan = plan_split(snapshot, budget, head_messages=head_messages, min_tail=min_tail)
            room = max(0, room_tokens(system_prompt, self.context_length, self.reserved_tokens))
        except ProviderError as exc:  # the window size may need a request to the server
            aborted = self._abort_or_none(exc)
            if aborted is not None:
                raise aborted from exc
            raise
        if not plan.middle:
            return CompressionResult(
                messages=copy.deepcopy(snapshot),
                summary="",
                compressed=False,
                note="nothing to compress: the first and latest messages are all there is",
                tokens_before=tokens_before,
                tokens_after=tokens_before,
                prepare_seconds=time.perf_counter() - started,
                plan=plan,
            )
        middle_set = set(plan.middle)
        pruned_list, pruned = _prune(snapshot, lambda index: index not in middle_set)
        middle = [(index, pruned_list[index]) for index in plan.middle]

        fallback, note, summary = False, "", ""
        summarise_started = time.perf_counter()
        try:
            summary = self._summarise(
                snapshot,
                plan,
                middle,
                focus=focus,
                extra_context=extra_context,
                cancel=cancel,
                room=room,
            )
        except ProviderError as exc:
            aborted = self._abort_or_none(exc)
            if aborted is not None:
                raise aborted from exc
            fallback, note = True, f"{exc.kind}: {exc}"
        except _NotASummary as exc:
            fallback, note = True, str(exc)
        self._check_cancel(cancel)
        summarise_seconds = time.perf_counter() - summarise_started
        if fallback:
            # No longer than a summary would be: in a small window a 6,000-character outline
            # would overflow the very window it was made for.
            cap = summary_token_target(self._window_or_default(), room) * CHARS_PER_TOKEN
            summary = fallback_summary(
                [message for _, message in middle],
                extra_context=extra_context,
                reason=note,
                max_chars=min(FALLBACK_MAX_CHARS, max(_MESSAGE_FLOOR_CHARS, cap)),
            )
        kept_head = copy.deepcopy(snapshot[: plan.head_end])
        kept_tail = [copy.deepcopy(snapshot[i]) for i in plan.kept_tail(len(snapshot))]
        new_messages = [
            *kept_head,
            summary_message(summary, len(plan.middle), fallback=fallback),
            *kept_tail,
        ]
        return CompressionResult(
            messages=new_messages,
            summary=summary,
            compressed=True,
            fallback=fallback,
            note=note,
            pruned=pruned,
            summarised=len(plan.middle),
            tokens_before=tokens_before,
            tokens_after=conversation_tokens(system_prompt, new_messages),
            prepare_seconds=(time.perf_counter() - started) - summarise_seconds,
            summarise_seconds=summarise_seconds,
            plan=plan,
        )

    # -- internals -------------------------------------------------------------------------

    @staticmethod
    def _check_cancel(cancel: CancelToken | None) -> None:
        if cancel is not None and cancel.cancelled:
            raise CompressionAborted("cancelled", "compression was cancelled")

    @staticmethod
    def _abort_or_none(exc: ProviderError) -> CompressionAborted | None:
        if exc.transient:
            return CompressionAborted(exc.kind, f"compression aborted ({exc.kind}): {exc}")
        return None

    def _summarise(
        self,
        snapshot: Sequence[ChatMessage],
        plan: CompressionPlan,
        middle: Sequence[tuple[int, ChatMessage]],
        *,
        focus: str | None,
        extra_context: str,
        cancel: CancelToken | None,
        room: int | None = None,
    ) -> str:
        window = self.provider.context_length
        target = summary_token_target(window, room)
        compact = window < COMPACT_INSTRUCTIONS_BELOW
        instructions = _instructions(words=target * 3 // 4, compact=compact)
        # Room for the reply (half again the target, as models overshoot) and the framing.
        room_tokens = (
            window
            - target * 3 // 2
            - math.ceil(len(instructions) / _REQUEST_CHARS_PER_TOKEN)
            - 2 * MESSAGE_OVERHEAD_TOKENS
            - _REQUEST_SAFETY_TOKENS
        )
        budget = room_tokens * _REQUEST_CHARS_PER_TOKEN
        if budget < _MIN_TRANSCRIPT_CHARS:
            raise _NotASummary(
                f"the compression model's window ({window:,} tokens) is too small for a summary"
            )
        request = _request_text(
            snapshot[: plan.head_end],
            middle,
            snapshot,
            focus=focus,
            extra_context=extra_context,
            budget=budget,
        )
        self._check_cancel(cancel)
        reply = self.provider.chat(
            [
                {"role": "system", "content": instructions},
                {"role": "user", "content": request},
            ],
            tools=None,
            temperature=SUMMARY_TEMPERATURE,
            cancel=cancel,
        )
        if reply.cancelled:
            raise CompressionAborted("cancelled", "compression was cancelled")
        return _clean_summary(
            reply.content,
            max_chars=target * CHARS_PER_TOKEN * 2,
            min_sections=len(COMPACT_SECTIONS) - 1 if compact else MIN_SECTIONS,
        )

    def _window_or_default(self) -> int:
        try:
            return self.provider.context_length
        except ProviderError:
            return self.context_length
