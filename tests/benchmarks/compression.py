"""Wall time of context compression on agent transcripts, against the scripted server.

    python tests/benchmarks/compression.py [--sizes 200,1000,5000] [--rounds 20]

For each size, the deterministic transcript of ``tests/test_compression.py`` (user asks,
assistant tool calls with one to three results each, repeated and long outputs, paths) is
compressed ``--rounds`` times by the real ``Compressor`` through the real OpenAI-compatible
provider, talking to the scripted loopback server, which streams a fixed nine-section summary
word by word. Printed per size, p50 / p95 over the rounds:

* prepare: the split, pruning of the middle, and building the summariser's request;
* round trip: the summariser call, from request to parsed summary (loopback, so this is the
  client's and the HTTP stack's cost, not a model's generation time);
* the pure steps alone (``estimate_tokens``, ``needs_compression``, ``prune_tool_results``,
  ``plan_split``), timed outside ``compress``;
* sizes: estimated tokens before and after, messages summarised, tool results pruned, and the
  characters of the summariser's request.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from engine.compression import (
    Compressor,
    estimate_tokens,
    needs_compression,
    plan_split,
    prune_tool_results,
)
from engine.config import Config, ModelConfig
from engine.providers import make_provider
from tests.scripted_server import ScriptedServer, reply
from tests.test_compression import GOOD_SUMMARY, is_summary_request, make_session

SYSTEM_PROMPT = "You are Cairn, a desktop agent. " * 40
CONTEXT_LENGTH = 32_768


def _ms(values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return f"{statistics.median(ordered) * 1000:8.2f} / {p95 * 1000:8.2f} ms"


def _time(action: Callable[[], Any], rounds: int) -> list[float]:
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        action()
        samples.append(time.perf_counter() - started)
    return samples


def bench_size(compressor: Compressor, server: ScriptedServer, size: int, rounds: int) -> None:
    messages = make_session(size)
    prepare, trip = [], []
    result = None
    for _ in range(rounds):
        before = len(server.requests)
        result = compressor.compress(
            SYSTEM_PROMPT, messages, focus="the CSV export", extra_context="notes"
        )
        assert not result.fallback and len(server.requests) == before + 1
        prepare.append(result.prepare_seconds)
        trip.append(result.summarise_seconds)
    assert result is not None
    request = server.chat_requests()[-1]
    request_chars = sum(len(m["content"]) for m in request["messages"])
    total = [a + b for a, b in zip(prepare, trip, strict=True)]
    keep = len(messages) // 10
    budget = compressor.tail_budget_tokens
    rows = [
        ("prepare (split + prune + request)", prepare),
        ("summariser round trip (loopback)", trip),
        ("compress total", total),
        ("estimate_tokens", _time(lambda: estimate_tokens(messages), rounds)),
        (
            "needs_compression",
            _time(lambda: needs_compression(SYSTEM_PROMPT, messages, CONTEXT_LENGTH, 0.5), rounds),
        ),
        (
            "prune_tool_results (keep last 10%)",
            _time(lambda: prune_tool_results(messages, keep), rounds),
        ),
        ("plan_split", _time(lambda: plan_split(messages, budget), rounds)),
    ]
    print(f"\n{size:,} messages (p50 / p95)")
    for label, samples in rows:
        print(f"  {label:<36} {_ms(samples)}")
    print(
        f"  tokens {result.tokens_before:,} -> {result.tokens_after:,}; "
        f"{result.summarised:,} summarised, {result.pruned:,} tool results pruned, "
        f"{len(result.messages):,} messages kept; request {request_chars:,} chars"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="200,1000,5000")
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    print(
        f"cpus: {os.cpu_count()}, python {platform.python_version()}, "
        f"load average {os.getloadavg()[0]:.2f}, rounds {args.rounds}, "
        f"context {CONTEXT_LENGTH:,} tokens (main and summariser)"
    )
    server = ScriptedServer(context_length=CONTEXT_LENGTH).start()
    server.responders.append(lambda body: reply(GOOD_SUMMARY) if is_summary_request(body) else None)
    try:
        config = Config(
            model=ModelConfig(
                provider="openai",
                base_url=server.url,
                model=server.model,
                context_length=CONTEXT_LENGTH,
                max_retries=0,
                timeout=30,
            )
        )
        compressor = Compressor(make_provider(config, "compression"))
        compressor.compress(SYSTEM_PROMPT, make_session(200))  # warm the client and imports
        for size in sizes:
            bench_size(compressor, server, size, args.rounds)
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
