"""Benchmark: what the provider adds between a streamed token and the engine's callback.

Run as ``python tests/benchmarks/provider_overhead.py``. The scripted server runs in a child
process (so it does not share the GIL with the reader) and streams to three readers of the
same SSE stream, each calling a no-op ``on_token``:

- **raw**: ``http.client`` reading lines and ``json.loads`` on each event (the floor);
- **sdk**: ``client.chat.completions.create(stream=True)`` iterated directly (typed chunks);
- **provider**: ``OpenAICompatProvider.chat`` (SDK transport with untyped chunks, reader
  thread, queue, assembly).

Two measurements: throughput (N tokens sent back to back; wall time per token) and latency
(tokens 2 ms apart, each carrying the monotonic time it was written; the delay until the
callback sees it, a clock both processes share).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

# Allow running the script straight from a checkout without installing the package.
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from engine.providers.openai_compat import OpenAICompatProvider  # noqa: E402
from tests.scripted_server import ScriptedServer, Step, reply  # noqa: E402

Reader = Callable[[str, str, Callable[[str], None]], None]
GAP = 0.002  # seconds between tokens in the latency run


class _Stamps(list[str]):
    """Chunks that wait, then read the clock, as the server iterates them: each is stamped
    just before it is written."""

    def __init__(self, count: int) -> None:
        super().__init__([""] * count)

    def __iter__(self) -> Iterator[str]:
        for _ in range(len(self)):
            time.sleep(GAP)
            yield f"{time.monotonic_ns()} "


def _serve() -> int:
    server = ScriptedServer().start()

    def respond(body: dict) -> Step | None:
        kind, count = body["messages"][-1]["content"].split()
        if kind == "latency":
            return reply(chunks=_Stamps(int(count)))
        return reply(chunks=["tok "] * int(count))

    server.responders.append(respond)
    print(server.url, flush=True)
    sys.stdin.read()  # until the parent closes our stdin
    server.stop()
    return 0


def _messages(prompt: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": prompt}]


def read_raw(url: str, prompt: str, on_token: Callable[[str], None]) -> None:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=30)
    body = json.dumps({"model": "m", "messages": _messages(prompt), "stream": True})
    conn.request(
        "POST", f"{parts.path}/chat/completions", body, {"Content-Type": "application/json"}
    )
    response = conn.getresponse()
    while line := response.readline():
        if not line.startswith(b"data: "):
            continue
        data = line[6:].strip()
        if data == b"[DONE]":
            break
        for choice in json.loads(data).get("choices") or ():
            text = choice.get("delta", {}).get("content")
            if text:
                on_token(text)
    conn.close()


def make_sdk_reader() -> Reader:
    import openai

    clients: dict[str, openai.OpenAI] = {}

    def read_sdk(url: str, prompt: str, on_token: Callable[[str], None]) -> None:
        client = clients.setdefault(url, openai.OpenAI(base_url=url, api_key="x", max_retries=0))
        stream = client.chat.completions.create(
            model="m",
            messages=_messages(prompt),
            stream=True,  # type: ignore[arg-type]
        )
        for chunk in stream:
            for choice in chunk.choices:
                if choice.delta.content:
                    on_token(choice.delta.content)

    return read_sdk


def make_provider_reader() -> Reader:
    providers: dict[str, OpenAICompatProvider] = {}

    def read_provider(url: str, prompt: str, on_token: Callable[[str], None]) -> None:
        model = providers.setdefault(url, OpenAICompatProvider(url, "m", max_retries=0))
        model.chat(_messages(prompt), on_token=on_token)  # type: ignore[arg-type]

    return read_provider


def throughput(read: Reader, url: str, tokens: int, runs: int) -> float:
    """Median microseconds of wall time per token."""
    samples = []
    for _ in range(runs):
        seen = 0

        def count(_: str) -> None:
            nonlocal seen
            seen += 1

        started = time.perf_counter()
        read(url, f"throughput {tokens}", count)
        samples.append((time.perf_counter() - started) / tokens * 1e6)
        assert seen == tokens, (seen, tokens)
    return statistics.median(samples)


def latency(read: Reader, url: str, tokens: int) -> tuple[float, float]:
    """p50 and p95 microseconds from a token's write to its callback."""
    delays: list[float] = []

    def stamp(text: str) -> None:
        delays.append((time.monotonic_ns() - int(text)) / 1000)

    read(url, f"latency {tokens}", stamp)
    delays.sort()
    return statistics.median(delays), delays[round(0.95 * (len(delays) - 1))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=2000, help="tokens per throughput run")
    parser.add_argument("--runs", type=int, default=15, help="throughput runs per reader")
    parser.add_argument("--latency-tokens", type=int, default=500)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        return _serve()

    print(
        f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    child = subprocess.Popen(
        [sys.executable, __file__, "--serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        assert child.stdout is not None
        url = child.stdout.readline().strip()
        readers: dict[str, Reader] = {
            "raw": read_raw,
            "sdk": make_sdk_reader(),
            "provider": make_provider_reader(),
        }
        for read in readers.values():  # warm up: imports, connections, code paths
            read(url, "throughput 50", lambda _: None)
        print(f"throughput: {args.tokens} tokens back to back, median of {args.runs} runs")
        per_token = {
            name: throughput(r, url, args.tokens, args.runs) for name, r in readers.items()
        }
        for name, micros in per_token.items():
            print(
                f"  {name:<9} {micros:7.1f} µs/token  {1e6 / micros:9.0f} tokens/s  "
                f"x{micros / per_token['raw']:.2f} of raw"
            )
        print(f"latency: {args.latency_tokens} tokens {GAP * 1000:g} ms apart, write → callback")
        for name, read in readers.items():
            p50, p95 = latency(read, url, args.latency_tokens)
            print(f"  {name:<9} p50 {p50:7.1f} µs  p95 {p95:7.1f} µs")
    finally:
        if child.stdin is not None:
            child.stdin.close()
        child.wait(timeout=10)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
