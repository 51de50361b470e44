"""The streamed reply decoder (``ReplyStream``) on long replies, against the decoder it replaced.

    python tests/benchmarks/reply_stream.py

A schema-held reply reaches the screen through ``ReplyStream.feed``, one call per streamed
piece (a token, a few characters). The decoder it replaced (kept below as the baseline)
decoded the whole reply so far again at every piece: quadratic in the reply's length. Each
row feeds ``{"reply": "..."}`` of the given length in 4-character pieces and reports process
CPU time per run (the best of 3), for both, and the ratio.
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from engine.providers.prompted_tools import ReplyStream

_REPLY_START = re.compile(r'\s*\{\s*"reply"\s*:\s*"')


def _string_prefix(body: str) -> str:
    """Decode as much of a JSON string body (after its opening quote) as has arrived."""
    index, end = 0, None
    # Where a \\uD800-\\uDBFF escape that nothing has followed yet starts: half of a
    # surrogate pair decodes to garbage, so it waits for its other half.
    high: int | None = None
    while index < len(body):
        char = body[index]
        if char == '"':
            end = index
            break
        if char != "\\":
            index, high = index + 1, None
            continue
        size = 6 if body[index + 1 : index + 2] == "u" else 2
        if index + size > len(body):
            break  # an escape cut off mid-way: wait for the rest
        is_high = size == 6 and body[index + 2] in "dD" and body[index + 3] in "89abAB"
        index, high = index + size, (index if is_high else None)
    if end is None:
        end = high if high is not None else min(index, len(body))
    try:
        # strict=False: the grammar lets raw newlines into strings, which JSON forbids.
        return str(json.loads(f'"{body[:end]}"', strict=False))
    except ValueError:
        return ""


class QuadraticReplyStream:
    """The decoder before: each piece decodes the whole reply so far again."""

    def __init__(self) -> None:
        self.raw = ""
        self.sent = ""
        self._body_at: int | None = None

    def feed(self, piece: str) -> str:
        self.raw += piece
        if self._body_at is None:
            match = _REPLY_START.match(self.raw)
            if match is None:
                return ""
            self._body_at = match.end()
        decoded = _string_prefix(self.raw[self._body_at :])
        if not decoded.startswith(self.sent):
            return ""
        new, self.sent = decoded[len(self.sent) :], decoded
        return new


def cpu_seconds(make: type, pieces: list[str], expected: str) -> float:
    best = float("inf")
    for _ in range(3):
        started = time.process_time()
        stream = make()
        for piece in pieces:
            stream.feed(piece)
        best = min(best, time.process_time() - started)
        assert stream.sent == expected
    return best


def main() -> None:
    print(f"{'reply chars':>11} {'pieces':>7} {'linear ms':>10} {'before ms':>10} {'× faster':>9}")
    for length in (1_000, 4_000, 16_000, 64_000):
        reply = ('The keeper climbed the "stairs" at dusk, lamp in hand. ' * 2000)[:length]
        raw = json.dumps({"reply": reply})
        pieces = [raw[i : i + 4] for i in range(0, len(raw), 4)]
        new = cpu_seconds(ReplyStream, pieces, reply)
        old = cpu_seconds(QuadraticReplyStream, pieces, reply)
        print(
            f"{length:>11,} {len(pieces):>7,} {new * 1000:>10.1f} {old * 1000:>10.1f} "
            f"{old / new:>9.1f}"
        )


if __name__ == "__main__":
    main()
