"""Reading, parsing and threat-scanning many files: in a process pool when there are many
and forking is safe, serially otherwise; progress and cancel between batches.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engine.memory import threats
from engine.migrate.openclaw.files import _Skip, read_source_text
from engine.migrate.openclaw.models import Progress, _check_stop
from engine.migrate.parse import Parsed, parse_markdown

PARALLEL_FROM = 100
SCAN_BATCH = 200


def _parallel_ok(files: int) -> bool:
    # Forking copies only the calling thread; with other threads alive (the desktop app's
    # engine thread, Qt's own) a child could inherit a lock held forever, so work serially.
    # Linux only: macOS system libraries are not fork-safe (Python defaults to spawn there).
    return (
        files >= PARALLEL_FROM
        and (os.cpu_count() or 1) > 1
        and threading.active_count() == 1
        and sys.platform.startswith("linux")
    )


def _read_and_parse(
    path: Path, max_bytes: int, tree: Path | None = None
) -> tuple[str | None, int, Parsed | None]:
    """One file's blocks and its size, or the reason it is skipped."""
    try:
        text, size = read_source_text(path, max_bytes, tree)
    except _Skip as exc:
        return str(exc), 0, None
    return None, size, parse_markdown(text)


_CLEAN = threats.Verdict(blocked=False, findings=[])


def _scan_chunk(texts: list[str]) -> list[threats.Verdict | None]:
    # Clean verdicts all look alike: send None and spare pickling thousands of them.
    return [verdict if (verdict := threats.scan(text)).blocked else None for text in texts]


class _Workers:
    """Threat scans on every core when that is safe and worth it. (Reading and parsing in the
    pool too was measured: shipping the parsed blocks back cost what it saved.) A context
    manager: the pool is always shut down, and killed if the plan fails or is cancelled."""

    def __init__(self, files: int) -> None:
        self.pool: Any = None
        self.batches: list[tuple[list[str], Any]] = []
        self.buffer: list[str] = []
        self.seen: set[str] = set()
        if _parallel_ok(files):
            try:
                self.pool = multiprocessing.get_context("fork").Pool(min(os.cpu_count() or 1, 8))
            except OSError:
                self.pool = None  # no process pool here (a sandbox without /dev/shm)

    @property
    def parallel(self) -> bool:
        return self.pool is not None

    def __enter__(self) -> _Workers:
        return self

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        if self.pool is None:
            return
        if error is None:
            self.pool.close()
        else:
            self.pool.terminate()
        self.pool.join()

    def scan(self, text: str) -> None:
        """Queue ``text`` for scanning (the first pass's ``scan``: it answers "clean")."""
        if text in self.seen:
            return None
        self.seen.add(text)
        self.buffer.append(text)
        if len(self.buffer) >= SCAN_BATCH:
            self.flush()
        return None

    def flush(self) -> None:
        if self.buffer and self.pool is not None:
            self.batches.append((self.buffer, self.pool.map_async(_scan_chunk, [self.buffer])))
        self.buffer = []


class _Scanner:
    """Threat-scan verdicts, each distinct text scanned once, with progress as it goes."""

    def __init__(
        self, total: int, progress: Progress | None, should_stop: Callable[[], bool] | None
    ) -> None:
        self.total = total
        self.done = 0
        self.progress = progress
        self.should_stop = should_stop
        self.cache: dict[str, threats.Verdict] = {}

    def tick(self) -> None:
        self.done += 1
        if self.done % 100 == 0:
            _check_stop(self.should_stop)
            if self.progress is not None:
                self.progress("scan", min(self.done, self.total), self.total)

    def __call__(self, text: str) -> threats.Verdict:
        verdict = self.cache.get(text)
        if verdict is None:
            verdict = self.cache[text] = threats.scan(text)
        return verdict

    def collect(self, workers: _Workers) -> None:
        """Wait for the workers' verdicts and keep them for the real pass."""
        workers.flush()
        done = 0
        total = sum(len(texts) for texts, _ in workers.batches)
        for texts, pending in workers.batches:
            while True:
                try:
                    [verdicts] = pending.get(timeout=0.2)
                    break
                except multiprocessing.TimeoutError:
                    _check_stop(self.should_stop)
            for text, verdict in zip(texts, verdicts, strict=True):
                self.cache[text] = _CLEAN if verdict is None else verdict
            done += len(texts)
            _check_stop(self.should_stop)
            if self.progress is not None:
                self.progress("scan", done, total)
