"""The run lock: one flock per job, held for a whole run, so two schedulers never run one job
twice at once; and which jobs are running now.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from engine.home import Home


def _lock_file(home: Home, name: str) -> Path:
    return home.cron_dir / "locks" / f"{name}.lock"


@contextlib.contextmanager
def _run_lock(home: Home, name: str) -> Iterator[bool]:
    """Try to take ``name``'s run lock without waiting; yields whether it is held.

    flock belongs to the open file, so a crashed run leaves no stale lock behind.
    """
    path = _lock_file(home, name)
    home.safe_folder(path.parent).mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            # The pid is for `cron list` to show who runs it; the lock itself is the flock.
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
            yield True
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def running_pid(home: Home, name: str) -> int | None:
    """The pid running ``name`` now, or None when idle.

    Read from the pid the holder writes, not by trying the lock: a probe that took the lock,
    even for a moment, could make a real run starting then report ``busy``.
    """
    try:
        text = _lock_file(home, name).read_text(encoding="ascii").strip()
        pid = int(text)
    except (OSError, ValueError):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None  # the holder died; flock went with it
    except PermissionError:
        pass  # alive, another user's
    return pid


def running_jobs(home: Home) -> list[str]:
    folder = home.cron_dir / "locks"
    names = sorted(p.stem for p in folder.glob("*.lock")) if folder.is_dir() else []
    return [n for n in names if running_pid(home, n) is not None]
