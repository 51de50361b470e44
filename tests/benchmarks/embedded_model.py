"""The built-in model (xllamacpp with the SmolLM2-135M file): load, first token, tokens/s.

    python tests/benchmarks/embedded_model.py [--runs N] [--threads N]

Through Cairn's own path (``EmbeddedProvider`` → llama.cpp's server in this process →
``OpenAICompatProvider`` over loopback, streaming). Per window: the load (server start and
model load, wall and process CPU), then ``--runs`` generations of at most 128 tokens each,
plain and held to the reply-or-tool-call JSON schema (how tools go to this model),
interleaved so load on the machine hits both alike. First token: from sending the request
to the first streamed text (for the schema-held reply, the first character of the reply's
text, after the JSON around it). Tokens are the server's own counts; tokens/s is wall time
over the whole reply; CPU is the process's (the server's threads are in it). Medians.
``--threads`` overrides the thread count Cairn picks (half the cores, at least one).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

os.environ.pop("CAIRN_NO_BUILTIN_MODEL", None)

from engine.providers import embedded
from engine.providers.embedded import EmbeddedProvider
from engine.providers.prompted_tools import ReplyStream, plain_messages, tool_schema

PROMPT = [{"role": "user", "content": "Tell me a long story about a lighthouse keeper."}]
TOOLS = [
    {
        "name": "memory",
        "description": "Save a durable fact about the user.",
        "parameters": {
            "type": "object",
            "properties": {"action": {"enum": ["add"]}, "content": {"type": "string"}},
            "required": ["action", "content"],
        },
    }
]


def run(provider: EmbeddedProvider, tools: list[dict] | None) -> tuple[float, float, float]:
    """Tokens a second, seconds to the first token and CPU seconds of one generation, plain
    or held to the schema the agent uses when tools go through the prompt."""
    client = provider.client()
    messages, extra = PROMPT, {"max_tokens": 128}
    shown = ReplyStream() if tools else None
    if tools:
        schema = {"name": "reply_or_tool_call", "schema": tool_schema(tools)}
        messages = plain_messages(PROMPT, tools)
        extra["response_format"] = {"type": "json_schema", "json_schema": schema}
    first: list[float] = []

    def on_token(piece: str) -> None:
        if not first and (shown is None or shown.feed(piece)):
            first.append(time.perf_counter())

    started, cpu = time.perf_counter(), time.process_time()
    reply = client._chat(messages, None, 0.7, on_token, None, extra=extra)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    assert reply.usage is not None
    return reply.usage.output_tokens / seconds, (first or [time.perf_counter()])[0] - started, cpu


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--threads", type=int)
    args = parser.parse_args()
    if args.threads:
        embedded._threads = lambda: args.threads  # type: ignore[assignment]
    print(f"threads {embedded._threads()}")
    print(
        f"{'window':>7} {'load s':>7} {'load cpu s':>10} {'plain tok/s':>12} "
        f"{'first ms':>9} {'cpu s':>6} {'schema tok/s':>13} {'first ms':>9} {'cpu s':>6}"
    )
    for window in (2_048, 4_096):
        provider = EmbeddedProvider(None, context_length=window)
        wall, cpu = time.perf_counter(), time.process_time()
        provider.client()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        plain, held = [], []
        for _ in range(args.runs):
            plain.append(run(provider, None))
            held.append(run(provider, TOOLS))

        def med(rows: list[tuple[float, float, float]], i: int) -> float:
            return statistics.median(row[i] for row in rows)

        print(
            f"{window:>7,} {wall:>7.2f} {cpu:>10.2f} {med(plain, 0):>12.1f} "
            f"{med(plain, 1) * 1000:>9.0f} {med(plain, 2):>6.2f} {med(held, 0):>13.1f} "
            f"{med(held, 1) * 1000:>9.0f} {med(held, 2):>6.2f}"
        )


if __name__ == "__main__":
    main()
