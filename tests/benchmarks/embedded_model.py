"""The embedded runtime (xllamacpp) with the bundled SmolLM2-135M file: load time and tokens/s.

    python tests/benchmarks/embedded_model.py [--runs N]

Through Cairn's own path (``EmbeddedProvider`` → llama.cpp's server in this process →
``OpenAICompatProvider`` over loopback, streaming). Per window: the load (server start and
model load, wall and process CPU), then ``--runs`` generations of 128 tokens each, plain and
held to the reply-or-tool-call JSON schema (how tools go to this model), interleaved so load
on the machine hits both alike. Tokens are the server's own counts; tokens/s is wall time.
Needs the ``embedded`` extra.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from engine.providers.embedded import EmbeddedProvider
from engine.providers.prompted_tools import plain_messages, tool_schema

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


def rate(provider: EmbeddedProvider, tools: list[dict] | None) -> float:
    """Tokens a second of one generation, plain or held to the schema the agent uses when
    tools go through the prompt (this model's case)."""
    client = provider.client()
    messages, extra = PROMPT, {"max_tokens": 128}
    if tools:
        schema = {"name": "reply_or_tool_call", "schema": tool_schema(tools)}
        messages = plain_messages(PROMPT, tools)
        extra["response_format"] = {"type": "json_schema", "json_schema": schema}
    started = time.perf_counter()
    reply = client._chat(messages, None, 0.7, None, None, extra=extra)
    seconds = time.perf_counter() - started
    assert reply.usage is not None
    return reply.usage.output_tokens / seconds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print(
        f"{'window':>7} {'load s':>7} {'load cpu s':>10} {'plain tok/s':>12} {'schema tok/s':>13}"
    )
    for window in (2_048, 8_192):
        provider = EmbeddedProvider(None, context_length=window)
        wall, cpu = time.perf_counter(), time.process_time()
        provider.client()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        plain, held = [], []
        for _ in range(args.runs):
            plain.append(rate(provider, None))
            held.append(rate(provider, TOOLS))
        print(
            f"{window:>7,} {wall:>7.2f} {cpu:>10.2f} {statistics.median(plain):>12.1f} "
            f"{statistics.median(held):>13.1f}"
        )


if __name__ == "__main__":
    main()
