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

import codecs
import contextlib
import errno
import fcntl
import os
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

TEMP_PREFIX = ".cairn-tmp-"

# (path, its new bytes, or None for a removal): told before the write or removal happens.
WriteListener = Callable[[Path, bytes | None], None]
_listeners = threading.local()


@contextlib.contextmanager
def announcing(listener: WriteListener) -> Iterator[None]:
    """Tell ``listener`` about each durable write and removal this thread makes in the block,
    before it happens.

    The desktop client's file watcher is told this way which changes on disk are the client's
    own (an echo it need not report back); the engine itself never needs it.
    """
    stack: list[WriteListener] = getattr(_listeners, "stack", [])
    _listeners.stack = [*stack, listener]
    try:
        yield
    finally:
        _listeners.stack = stack


def _announce(path: Path, data: bytes | None) -> None:
    for listener in getattr(_listeners, "stack", ()):
        with contextlib.suppress(Exception):  # a listener never stops a write
            listener(Path(os.path.abspath(path)), data)


def remove_file(path: Path) -> None:
    """Remove ``path`` if it exists (announced like a write)."""
    _announce(path, None)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def real_target(path: Path) -> Path:
    """The file a write to ``path`` must replace: the symlink's target, or ``path`` itself."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def decode_utf8(data: bytes) -> str:
    """Strict UTF-8, without the byte-order mark Windows editors put first (kept, it would sit
    inside the first entry: counted, sent to the model, and defeating duplicate checks).
    A :class:`UnicodeDecodeError` gives offsets into ``data`` as given."""
    skip = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    try:
        return data[skip:].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UnicodeDecodeError(
            "utf-8", data, exc.start + skip, exc.end + skip, exc.reason
        ) from None


class LineTooLong(ValueError):
    """A line of line-by-line input is longer than any valid one; reading stopped there."""

    def __init__(self, number: int, limit: int, what: str) -> None:
        self.code = "too_large"
        self.number = number
        self.message = (
            f"line {number:,} is longer than {limit // (1024 * 1024):,} MiB, which no {what} "
            "is; lines before it were read, nothing after it"
        )
        super().__init__(self.message)


def bounded_lines(handle: IO[bytes], limit: int, what: str = "line") -> Iterator[bytes]:
    """The lines of ``handle``, each read with at most ``limit`` bytes held in memory (a plain
    ``for line in handle`` on /dev/zero grows until memory runs out); :class:`LineTooLong`
    naming the line when one is longer."""
    number = 0
    while True:
        line = handle.readline(limit + 1)
        if not line:
            return
        number += 1
        if len(line) > limit and not line.endswith(b"\n"):
            raise LineTooLong(number, limit, what)
        yield line


def read_text(path: Path) -> str:
    """A text file read with :func:`decode_utf8`."""
    return decode_utf8(path.read_bytes())


def resolves_inside(path: Path, root: Path) -> bool:
    """Whether ``path``, with every symlink on the way followed, ends inside ``root`` (itself
    resolved). A dangling link counts by where it points. A link loop inside ``root`` counts
    as inside (Python stops resolving where the loop starts): nothing can be read or written
    through it, and the caller then says "symlink loop", which is what the user must fix.

    The one check for "does this path stay in its tree": migration uses it for the source
    workspace, the home for its own folders.
    """
    try:
        real = os.path.realpath(path, strict=False)
        base = os.path.realpath(root, strict=False)
    except (OSError, RuntimeError, ValueError):  # a loop on some Pythons raises
        return False
    return os.path.commonpath([real, base]) == base


def link_target(path: Path) -> str:
    """Where a link at ``path`` leads, for messages (the resolved path, or the raw link)."""
    try:
        return os.path.realpath(path)
    except (OSError, RuntimeError, ValueError):
        try:
            return os.readlink(path)
        except OSError:
            return "?"


def fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write_bytes(path: Path, data: bytes, *, mode: int | None = None) -> None:
    """Replace ``path`` with ``data`` atomically and durably."""
    _announce(path, data)
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
            _write_in_place(target, data, mode)
            os.unlink(tmp_name)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise
    fsync_dir(folder)


def _write_in_place(target: Path, data: bytes, mode: int) -> None:
    """Overwrite ``target``'s bytes without replacing the file (a mount point cannot be)."""
    fd = os.open(target, os.O_WRONLY)
    try:
        with contextlib.suppress(PermissionError):  # another owner's file: its mode stays
            os.fchmod(fd, mode)
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
