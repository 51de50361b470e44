"""Latency of memory writes and of the threat scanner, through the real service on a real home.

    python tests/benchmarks/memory_ops.py [--samples N] [--profile]

Every write goes through ``MemoryService.write``: lock, re-read, threat scan, temp file, fsync,
``os.replace``, folder fsync, and the history row in SQLite. Two stores are measured:

* ``default``: the product's default budget (2,200 chars), holding 10 entries of ~100 chars
  (about half full), as a real MEMORY.md does;
* ``large``: a 100,000-char budget holding about 50,000 chars (~480 entries), to show how the
  cost grows with the file.

The store never fills: each timed add is followed by an untimed remove of the same entry, a
replace alternates an entry between two versions, and the 20-operation batch removes 10
entries and adds 10 new ones of the same size. The goal is p95 <= 5 ms for every write.
``--profile`` adds where the time goes: wall time per step of a default-store add and batch
(measured by wrapping the steps), then cProfile of adds and of the 2,000-char scan.
"""

from __future__ import annotations

import argparse
import cProfile
import itertools
import os
import pstats
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from engine.config import Config, MemoryConfig
from engine.db import dispose_engines
from engine.home import Home
from engine.memory import store as store_module
from engine.memory import threats
from engine.memory.entries import Target
from engine.memory.history import History
from engine.memory.service import MemoryService

M = Target.MEMORY
# Writes are applied, not staged: approval is on by default with the bundled tiny model, and a
# staged write measures the pending queue, not the write path.
APPLIED = Config(memory=MemoryConfig(write_approval=False))
GOAL_MS = 5.0
WORDS_TEXT = (
    "user prefers concise answers with code first then a short why; staging deploys go out "
    "from main after review and the nightly job rotates logs at three in the morning utc; "
    "postgres fifteen runs in docker compose and migrations use alembic with autogenerate off"
)
WORDS = WORDS_TEXT.split()


def entry(tag: str, n: int, length: int = 100) -> str:
    start = n % len(WORDS)
    words = itertools.islice(itertools.cycle(WORDS), start, start + 25)
    text = f"{tag} {n:05d}: " + " ".join(words)
    return text[:length].rstrip()


def prose(length: int) -> str:
    """Realistic note text: sentences of ordinary words, with a path, a version and a URL."""
    sentences = [
        "The user keeps the deploy checklist in docs/ops/deploy.md and wants it followed.",
        "Staging is on Hetzner; production moved to Fly.io in March, region fra.",
        "Use Python 3.11 and uv for environments, never bare pip into the system interpreter.",
        "Release notes are short, in English, and state why a change was made.",
        "The nightly backup job writes to s3://acme-backups/nightly and keeps 30 days.",
        "Meetings with the design team are on Tuesdays at 10:00 CET; avoid scheduling then.",
        "See https://example.com/handbook/onboarding for the onboarding steps.",
    ]
    text = " ".join(itertools.islice(itertools.cycle(sentences), 60))
    return text[:length]


def measure(fn: Callable[[int], None], samples: int, between: Callable[[int], None]) -> list[float]:
    times = []
    for i in range(samples):
        start = time.perf_counter_ns()
        fn(i)
        times.append((time.perf_counter_ns() - start) / 1e6)
        between(i)
    return times


def nothing(_: int) -> None:
    pass


def summary(times: list[float]) -> tuple[float, float, float]:
    p95 = statistics.quantiles(times, n=100, method="inclusive")[94]
    return statistics.median(times), p95, max(times)


def bench_store(name: str, limit: int, fill_chars: int, samples: int) -> list[tuple]:
    root = Path(tempfile.mkdtemp(prefix=f"cairn-bench-{name}-"))
    service = MemoryService(
        Home(root / "home"),
        Config(memory=MemoryConfig(memory_char_limit=limit, write_approval=False)),
    )
    seed = []
    while sum(len(e) + 3 for e in seed) < fill_chars:
        seed.append(entry("seed", len(seed)))
    for start in range(0, len(seed), 100):  # a batch takes at most 100 operations
        service.write(M, [{"action": "add", "content": e} for e in seed[start : start + 100]])

    def write(ops: list[dict[str, str]]) -> None:
        result = service.write(M, ops)
        assert result["status"] == "applied" and not result["warnings"], result

    for i in range(20):  # warm up: first writes open the database and fill caches
        write([{"action": "add", "content": entry("warm", i)}])
        write([{"action": "remove", "old_text": entry("warm", i)}])

    rows = []
    added = measure(
        lambda i: write([{"action": "add", "content": entry("add", i)}]),
        samples,
        lambda i: write([{"action": "remove", "old_text": entry("add", i)}]),
    )
    rows.append((name, "add", added))

    target = seed[len(seed) // 2]
    versions = [target, entry("replaced", 1)]
    replaced = measure(
        lambda i: write(
            [{"action": "replace", "old_text": versions[i % 2], "content": versions[(i + 1) % 2]}]
        ),
        samples,
        nothing,
    )
    rows.append((name, "replace", replaced))

    current = seed[:10]

    def batch(i: int) -> None:
        nonlocal current
        fresh = [entry(f"batch{i}", k) for k in range(10)]
        ops = [{"action": "remove", "old_text": e} for e in current]
        write(ops + [{"action": "add", "content": e} for e in fresh])
        current = fresh

    rows.append((name, "batch of 20 (10 remove + 10 add)", measure(batch, samples, nothing)))
    final = service.read(M)
    print(f"{name} store: {final.chars:,}/{limit:,} chars in {len(final.entries)} entries")
    dispose_engines()
    shutil.rmtree(root)
    return rows


def breakdown(count: int) -> None:
    """Wall time per write spent in each step, measured by wrapping the steps (no profiler
    overhead): where a default-store add and a 20-operation batch spend their time."""
    spent: dict[str, int] = {}

    def wrap(owner: object, attr: str, label: str) -> Callable[[], None]:
        original = getattr(owner, attr)

        def timed(*args: object, **kwargs: object) -> object:
            start = time.perf_counter_ns()
            try:
                return original(*args, **kwargs)
            finally:
                spent[label] = spent.get(label, 0) + time.perf_counter_ns() - start

        setattr(owner, attr, timed)
        return lambda: setattr(owner, attr, original)

    steps = [
        (store_module, "read_memory_text", "read + decode MEMORY.md"),
        (threats, "scan", "threats.scan of the new text"),
        (History, "last_state", "history: last_state query"),
        (store_module, "atomic_write_text", "temp file + fsync + replace + dir fsync"),
        (History, "record", "history: insert + commit"),
    ]
    root = Path(tempfile.mkdtemp(prefix="cairn-bench-breakdown-"))
    service = MemoryService(Home(root / "home"), APPLIED)
    seed = [entry("seed", i) for i in range(10)]
    service.write(M, [{"action": "add", "content": e} for e in seed])
    undo = [wrap(*step) for step in steps]
    kinds = {"add": 0, "batch": 0}
    for kind in kinds:
        spent.clear()
        total = 0
        for i in range(count):
            if kind == "add":
                ops = [{"action": "add", "content": entry("add", i)}]
            else:
                fresh = [entry(f"b{i}", k) for k in range(10)]
                ops = [{"action": "remove", "old_text": e} for e in seed]
                ops += [{"action": "add", "content": e} for e in fresh]
                seed = fresh
            start = time.perf_counter_ns()
            service.write(M, ops)
            total += time.perf_counter_ns() - start
            if kind == "add":
                saved = dict(spent)  # the untimed remove must not count
                service.write(M, [{"action": "remove", "old_text": entry("add", i)}])
                spent.clear()
                spent.update(saved)
        print(f"\nwhere a default-store {kind} spends its time (mean of {count}, wall ms):")
        print(f"  {'whole write':<44} {total / count / 1e6:6.2f}")
        for label, ns in spent.items():
            print(f"  {label:<44} {ns / count / 1e6:6.2f}")
        print(
            f"  {'the rest (lock, parse, validate, render)':<44} "
            f"{(total - sum(spent.values())) / count / 1e6:6.2f}"
        )
    for restore in undo:
        restore()
    dispose_engines()
    shutil.rmtree(root)


def profile_adds(count: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="cairn-bench-profile-"))
    service = MemoryService(Home(root / "home"), APPLIED)
    for i in range(10):
        service.write(M, [{"action": "add", "content": entry("seed", i)}])
    profiler = cProfile.Profile()
    for i in range(count):
        profiler.enable()
        service.write(M, [{"action": "add", "content": entry("add", i)}])
        profiler.disable()
        service.write(M, [{"action": "remove", "old_text": entry("add", i)}])
    stats = pstats.Stats(profiler)
    stats.sort_stats("cumulative").print_stats(30)
    stats.sort_stats("tottime").print_stats(15)
    text = prose(2_000)
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(100):
        uncached_scan(text)
    profiler.disable()
    print("threats.scan of a 2,000-char entry, 100 calls:")
    pstats.Stats(profiler).sort_stats("tottime").print_stats(15)
    dispose_engines()
    shutil.rmtree(root)


def uncached_scan(text: str) -> None:
    """Time the scan itself, not the cache of verdicts in front of it (a write scans new text)."""
    threats._scan_cached.cache_clear()
    threats.scan(text)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    if args.samples < 200:
        parser.error("use at least 200 samples")

    print(
        f"cpus: {os.cpu_count()}, python {sys.version.split()[0]}, samples: {args.samples}, "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    rows = bench_store("default", 2_200, 1_100, args.samples)
    rows += bench_store("large", 100_000, 50_000, args.samples)
    text = prose(2_000)
    assert len(text) == 2_000 and not threats.scan(text).blocked
    scans = measure(lambda _: uncached_scan(text), max(args.samples, 1_000), nothing)
    rows.append(("-", "threats.scan, 2,000-char entry", scans))

    print(
        f"{'store':<8} {'operation':<34} {'n':>5} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}  goal"
    )
    missed = False
    for store, op, times in rows:
        p50, p95, worst = summary(times)
        verdict = ""
        if store != "-":
            ok = p95 <= GOAL_MS
            missed |= not ok
            verdict = f"{'PASS' if ok else 'MISS'} (p95 <= {GOAL_MS:g} ms)"
        print(
            f"{store:<8} {op:<34} {len(times):>5} {p50:>8.2f} {p95:>8.2f} {worst:>8.2f}  {verdict}"
        )
    print("writes:", "MISS" if missed else "PASS", f"against p95 <= {GOAL_MS:g} ms")
    if args.profile:
        breakdown(args.samples)
        profile_adds(args.samples)
    return 0


if __name__ == "__main__":
    sys.exit(main())
