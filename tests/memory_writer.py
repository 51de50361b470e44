"""Writers that hammer one memory store from outside the test process.

Two uses:

* ``python tests/memory_writer.py add|edit --home DIR --writer N --count K`` is a child process
  for the concurrency tests. It prints ``ready``, waits for a ``go`` line on stdin (so every
  writer starts together), then prints one JSON line per write: what it asked for and what it
  got.
* :func:`run_crash_trials` forks writers from the already-imported parent (no interpreter
  start-up per trial) and kills them with SIGKILL mid-loop, then checks the store. The crash
  test and ``tests/benchmarks/memory_crash.py`` share it.
"""

from __future__ import annotations

import argparse
import itertools
import json
import mmap
import os
import random
import select
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __name__ == "__main__":  # run as a script: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine import fsutil
from engine.config import Config, MemoryConfig, load_config
from engine.db import dispose_engines
from engine.fsutil import TEMP_PREFIX
from engine.home import Home
from engine.memory.entries import Target, render
from engine.memory.errors import MemoryToolError
from engine.memory.service import MemoryService
from engine.memory.store import MemoryStore

M = Target.MEMORY
FILLER_TEXT = (
    "the user keeps release notes short and prefers tables over prose in status reports; "
    "staging deploys run from the main branch after review"
)
FILLER = FILLER_TEXT.split()


# -- concurrency children ---------------------------------------------------------------------


def add_entry(writer: int, index: int, length: int) -> str:
    """A unique entry of exactly ``length`` characters."""
    head = f"writer {writer} note {index:03d}:"
    words = " ".join(FILLER * 3)
    return (head + " " + words)[:length].rstrip().ljust(length, ".")


def edit_entry(writer: int, index: int, version: int) -> str:
    return f"writer {writer} item {index:03d} version {version}"


def _emit(record: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(record) + "\n")
    sys.stdout.flush()


def _attempt(service: MemoryService, ops: list[dict[str, str]], **extra: Any) -> None:
    try:
        result = service.write(M, ops)
    except MemoryToolError as exc:
        _emit({**extra, "error": exc.code, "message": exc.message})
    else:
        _emit(
            {
                **extra,
                "status": result["status"],
                "event_id": result["event_id"],
                "warnings": result["warnings"],
            }
        )


def child_main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("mode", choices=["add", "edit"])
    parser.add_argument("--home", required=True)
    parser.add_argument("--writer", type=int, required=True)
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--length", type=int, default=40)
    args = parser.parse_args(argv)
    home = Home(Path(args.home))
    service = MemoryService(home, load_config(home))
    _emit({"ready": args.writer, "pid": os.getpid()})
    if sys.stdin.readline().strip() != "go":
        return 2
    for i in range(args.count):
        if args.mode == "add":
            content = add_entry(args.writer, i, args.length)
            _attempt(service, [{"action": "add", "content": content}], content=content)
            continue
        old, new = edit_entry(args.writer, i, 0), edit_entry(args.writer, i, 1)
        op = {"action": "replace", "old_text": old, "content": new}
        _attempt(service, [op], op="replace", old=old, new=new)
        if i % 3 == 0:
            _attempt(service, [{"action": "remove", "old_text": new}], op="remove", old=new)
    _emit({"done": args.writer})
    return 0


# -- crash trials -----------------------------------------------------------------------------

# Where the child was when it died, kept in a byte of shared memory that outlives it.
IDLE, IN_WRITE, IN_REPLACE, AFTER_REPLACE = 0, 1, 2, 3
PHASES = {
    IDLE: "between writes",
    IN_WRITE: "in write, before the file replace",
    IN_REPLACE: "in the temp-write/fsync/replace step",
    AFTER_REPLACE: "in write, after the replace (history, unlock)",
}


def apply_ops(entries: list[str], ops: list[dict[str, str]]) -> list[str]:
    """What the crash writer's operations do, restated independently: the writer only adds
    fresh text and replaces or removes whole entries by their exact text."""
    result = list(entries)
    for op in ops:
        if op["action"] == "add":
            if op["content"] not in result:
                result.append(op["content"])
        elif op["action"] == "replace":
            result[result.index(op["old_text"])] = op["content"]
        else:
            result.remove(op["old_text"])
    return result


def _crash_child(home: Home, limit: int, seed: int, tag: str, out: int, phase: mmap.mmap) -> None:
    """Write forever: announce each batch, write it, acknowledge it. Never returns."""
    original = fsutil.atomic_write_bytes

    def traced(path: Path, data: bytes, **kwargs: Any) -> None:
        phase[0] = IN_REPLACE
        original(path, data, **kwargs)
        phase[0] = AFTER_REPLACE

    fsutil.atomic_write_bytes = traced  # this process only: it was forked

    def send(record: dict[str, Any]) -> None:
        os.write(out, (json.dumps(record) + "\n").encode())

    rng = random.Random(seed)
    service = MemoryService(home, Config(memory=MemoryConfig(memory_char_limit=limit)))
    entries = service.read(M).entries
    need_room = False
    n = 0
    while True:
        content = f"{tag} note {n:05d} " + " ".join(rng.choices(FILLER, k=rng.randint(2, 14)))
        if need_room and len(entries) >= 2:
            ops = [{"action": "remove", "old_text": e} for e in entries[:2]]
            ops.append({"action": "add", "content": content})
        elif n % 5 == 4 and entries:
            ops = [{"action": "replace", "old_text": rng.choice(entries), "content": content}]
        else:
            ops = [{"action": "add", "content": content}]
        send({"begin": ops})
        phase[0] = IN_WRITE
        try:
            result = service.write(M, ops)
        except MemoryToolError as exc:
            phase[0] = IDLE
            if exc.code != "overflow":
                send({"error": exc.code, "message": exc.message})
                os._exit(3)
            need_room = True
            send({"refused": exc.code})
            continue
        phase[0] = IDLE
        entries = apply_ops(entries, ops)
        need_room = False
        n += 1
        send({"ack": result["status"]})


@dataclass
class TrialResult:
    acks: int
    phase: int
    temp_files: int
    failures: list[str] = field(default_factory=list)


@dataclass
class CrashReport:
    trials: int = 0
    acks: int = 0
    phases: dict[int, int] = field(default_factory=dict)
    trials_with_temp_files: int = 0
    failures: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def kills_during_write(self) -> int:
        return sum(n for phase, n in self.phases.items() if phase != IDLE)


class _Lines:
    """Newline-framed records from a pipe, read with a deadline."""

    def __init__(self, fd: int) -> None:
        self.fd, self.buffer, self.eof = fd, b"", False

    def read(self, timeout: float | None) -> list[dict[str, Any]]:
        if not self.eof:
            ready, _, _ = select.select([self.fd], [], [], timeout)
            if ready:
                chunk = os.read(self.fd, 65536)
                self.eof = not chunk
                self.buffer += chunk
        *lines, self.buffer = self.buffer.split(b"\n")
        return [json.loads(line) for line in lines]


def crash_trial(
    home: Home, limit: int, rng: random.Random, tag: str, acks_before_kill: int, delay: float
) -> TrialResult:
    """Fork a writer, let it acknowledge ``acks_before_kill`` writes, wait ``delay`` seconds
    more, SIGKILL it, then check the store against what was acknowledged."""
    store = MemoryStore(home, Config(memory=MemoryConfig(memory_char_limit=limit)))
    start = store.read(M).entries
    old_temps = {p.name for p in home.memories_dir.glob(TEMP_PREFIX + "*")}
    dispose_engines()  # no SQLite connection may cross the fork
    phase = mmap.mmap(-1, 1)
    read_fd, write_fd = os.pipe()
    seed = rng.getrandbits(32)
    pid = os.fork()
    if pid == 0:  # the writer
        try:
            os.close(read_fd)
            _crash_child(home, limit, seed, tag, write_fd, phase)
        finally:
            os._exit(4)
    os.close(write_fd)
    failures: list[str] = []
    lines = _Lines(read_fd)
    acked, inflight, acks = list(start), None, 0

    def consume(records: list[dict[str, Any]]) -> None:
        nonlocal acked, inflight, acks
        for record in records:
            if "begin" in record:
                inflight = record["begin"]
            elif "ack" in record:
                assert inflight is not None
                acked, inflight, acks = apply_ops(acked, inflight), None, acks + 1
            elif "refused" in record:
                inflight = None
            else:
                failures.append(f"writer failed: {record}")

    try:
        deadline = time.monotonic() + 30
        while acks < acks_before_kill and not lines.eof and not failures:
            if time.monotonic() > deadline:
                failures.append(f"writer stalled after {acks} acks")
                break
            consume(lines.read(timeout=1.0))
        if delay:
            time.sleep(delay)
    finally:
        os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
    while not lines.eof:  # acks already in the pipe count: those writes returned
        consume(lines.read(timeout=5.0))
    consume(lines.read(timeout=0))
    os.close(read_fd)
    died = phase[0]
    phase.close()
    if not (os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL):
        failures.append(f"writer was not killed by SIGKILL (wait status {status})")

    folder = home.memories_dir
    names = sorted(p.name for p in folder.iterdir())
    temps = [n for n in names if n.startswith(TEMP_PREFIX)]
    stray = [n for n in names if n not in ("MEMORY.md", "MEMORY.md.lock") and n not in temps]
    new_temps = [n for n in temps if n not in old_temps]
    if stray:
        failures.append(f"unexpected files after the kill: {stray}")
    try:
        now = store.read(M)
    except MemoryToolError as exc:
        failures.append(f"MEMORY.md unreadable after the kill: {exc.code}: {exc.message}")
        return TrialResult(acks, died, len(new_temps), failures)
    allowed = [acked] + ([apply_ops(acked, inflight)] if inflight else [])
    if now.entries not in allowed:
        lost = [e for e in acked if e not in now.entries]
        failures.append(
            f"MEMORY.md is neither the acknowledged state nor that plus the write in flight "
            f"({len(now.entries)} entries; acknowledged entries missing: {lost[:3]})"
        )
    if now.text != render(now.entries):
        failures.append(f"MEMORY.md is not whole/canonical: {now.text[-80:]!r}")
    if now.chars > limit:
        failures.append(f"usage {now.chars} over the limit {limit}")
    return TrialResult(acks, died, len(new_temps), failures)


def run_crash_trials(
    root: Path,
    trials: int,
    *,
    seed: int,
    limit: int = 1500,
    homes: int = 10,
    progress: Callable[[int, CrashReport], None] | None = None,
) -> CrashReport:
    """``trials`` kills spread over ``homes`` homes (each home takes a run of kills in a row,
    so leftovers of one crash meet the next writer). Each home ends with a clean write and a
    check of the change history."""
    rng = random.Random(seed)
    report = CrashReport()
    began = time.perf_counter()
    per_home = -(-trials // homes)
    for h in range(homes):
        home = Home(root / f"home{h}")
        home.memories_dir.mkdir(parents=True, exist_ok=True)
        for t in range(min(per_home, trials - report.trials)):
            # Half the kills come a random moment after the first ack, half after N acks.
            if rng.random() < 0.5:
                acks, delay = 1, rng.uniform(0, 0.03)
            else:
                acks, delay = rng.randint(2, 12), rng.uniform(0, 0.004)
            result = crash_trial(home, limit, rng, f"h{h}t{t}", acks, delay)
            report.trials += 1
            report.acks += result.acks
            report.phases[result.phase] = report.phases.get(result.phase, 0) + 1
            report.trials_with_temp_files += result.temp_files > 0
            report.failures += [f"home {h} trial {t}: {f}" for f in result.failures]
            if progress is not None:
                progress(report.trials, report)
        report.failures += [f"home {h}: {f}" for f in check_after_crashes(home, limit)]
    report.seconds = time.perf_counter() - began
    return report


def check_after_crashes(home: Home, limit: int) -> list[str]:
    """After a run of kills: the service reads the file, a new write goes through, and the
    change history is one unbroken chain ending in the file as it is."""
    failures = []
    dispose_engines()
    service = MemoryService(home, Config(memory=MemoryConfig(memory_char_limit=limit)))
    try:
        before = service.read(M)
        room = [{"action": "remove", "old_text": e} for e in before.entries[:3]]
        result = service.write(M, [*room, {"action": "add", "content": "written after crashes"}])
        if result["status"] != "applied" or result["warnings"]:
            failures.append(f"write after the crashes: {result}")
        events = [e for e in reversed(service.events(M)) if e.state_after is not None]
        for prev, cur in itertools.pairwise(events):
            if cur.state_before != prev.state_after:
                failures.append(f"history skips a state between events #{prev.id} and #{cur.id}")
        final = service.read(M).text
        if not events or events[-1].state_after != final:
            failures.append("the newest history event does not match MEMORY.md")
    except MemoryToolError as exc:
        failures.append(f"store unusable after the crashes: {exc.code}: {exc.message}")
    finally:
        dispose_engines()
    return failures


if __name__ == "__main__":
    sys.exit(child_main())
