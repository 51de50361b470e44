"""Durable file primitives shared by every writer in the engine.

Every write follows one recipe: temp file in the destination's own folder, fsync, ``os.replace``,
fsync of the folder. A reader therefore sees the old bytes or the new bytes, never a torn file, and
the rename itself survives a power cut. Symlinked destinations (dotfiles repos) are written through:
the link's target is replaced and the link stays a link.

One exception: a file that is itself a mount point (a single-file Docker bind mount) cannot be
renamed over (EBUSY, or EXDEV across devices). Such a file is rewritten in place, then fsynced;
callers hold the file's lock, so no other Cairn or Hermes writer interleaves, but a crash in the
middle of that write can leave it torn, which the rename otherwise rules out.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

TEMP_PREFIX = ".cairn-tmp-"


def real_target(path: Path) -> Path:
    """The file a write to ``path`` must replace: the symlink's target, or ``path`` itself."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write_bytes(path: Path, data: bytes, *, mode: int | None = None) -> None:
    """Replace ``path`` with ``data`` atomically and durably."""
    target = real_target(path)
    folder = target.parent
    if mode is None:
        try:
            mode = target.stat().st_mode & 0o7777
        except FileNotFoundError:
            mode = 0o644
    fd, tmp_name = tempfile.mkstemp(prefix=TEMP_PREFIX, dir=folder)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp_name, mode)
        try:
            os.replace(tmp_name, target)
        except OSError as exc:
            if exc.errno not in (errno.EXDEV, errno.EBUSY):
                raise
            _write_in_place(target, data)
            os.unlink(tmp_name)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise
    fsync_dir(folder)


def _write_in_place(target: Path, data: bytes) -> None:
    """Overwrite ``target``'s bytes without replacing the file (a mount point cannot be)."""
    fd = os.open(target, os.O_WRONLY)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.ftruncate(fd, len(data))
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write_text(path: Path, text: str, *, mode: int | None = None) -> None:
    atomic_write_bytes(path, text.encode("utf-8"), mode=mode)


@contextlib.contextmanager
def locked(lock_path: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``lock_path`` (created if missing) for the block.

    The lock lives in its own file so that ``os.replace`` of the data file never swaps the
    locked inode out from under a waiting writer.
    """
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
