"""The streamed text of a schema-held ``{"reply": "..."}``: what reaches the screen while the
JSON is still arriving, however the server cuts it into pieces."""

from __future__ import annotations

import itertools
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.providers.prompted_tools import ReplyStream


def _stream(pieces: list[str]) -> tuple[list[str], ReplyStream]:
    shown = ReplyStream()
    return [shown.feed(piece) for piece in pieces], shown


def _cut(text: str, cuts: list[int]) -> list[str]:
    points = sorted({0, len(text), *(c % (len(text) + 1) for c in cuts)})
    return [text[a:b] for a, b in itertools.pairwise(points)]


@settings(max_examples=300, deadline=None)
@given(
    reply=st.text(),
    ascii_only=st.booleans(),
    spaces=st.sampled_from(["", " ", "\n  "]),
    cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=40),
)
def test_every_cut_of_a_reply_streams_exactly_its_text(
    reply: str, ascii_only: bool, spaces: str, cuts: list[int]
) -> None:
    """Escapes (\\n, \\", \\uXXXX, surrogate pairs for emoji) cut anywhere between pieces
    still come out as the reply's characters, in order, each once; nothing after the
    closing quote is shown."""
    raw = "{" + spaces + '"reply":' + spaces + json.dumps(reply, ensure_ascii=ascii_only) + "}"
    shown, stream = _stream(_cut(raw, cuts))
    assert "".join(shown) == reply == stream.sent


def test_half_a_surrogate_pair_waits_for_its_other_half() -> None:
    shown, _ = _stream(['{"reply": "a', "\\ud83d", "\\ude00", 'b"}'])
    assert shown == ["a", "", "\U0001f600", "b"]


def test_raw_newlines_the_grammar_lets_through_are_kept() -> None:
    shown, _ = _stream(['{"reply": "line one\nline', ' two"}'])
    assert "".join(shown) == "line one\nline two"


def test_a_tool_call_streams_nothing() -> None:
    shown, stream = _stream(['{"tool": "memory", ', '"arguments": {"reply": "x"}}'])
    assert shown == ["", ""] and stream.sent == ""


def test_a_long_reply_in_one_character_pieces_is_streamed_whole() -> None:
    """200,000 one-character pieces: the decoder used to decode the whole reply again at
    every piece (quadratic: ~2e10 character steps here, hours); it now reads each piece
    once. Timings are in docs/benchmarks.md (tests/benchmarks/reply_stream.py)."""
    reply = ('A line with "quotes", a tab\t and é — ' * 5000)[:200_000]
    raw = json.dumps({"reply": reply}, ensure_ascii=True)
    stream = ReplyStream()
    total = sum(len(stream.feed(char)) for char in raw)
    assert total == len(reply) and stream.sent == reply
