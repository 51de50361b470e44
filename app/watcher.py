"""Notice when Cairn's files change on disk, whoever changed them.

:class:`HomeWatcher` watches three folders of a home with a watchdog observer:

* ``memories/`` (not recursive): ``MEMORY.md`` → kind ``"memory"``, ``USER.md`` → ``"user"``;
* ``skills/`` (recursive): any file → ``"skills"``;
* ``pending/`` (recursive): any file → ``"pending"``.

It watches the folders, not the files: an atomic save (temp file + ``os.replace``) arrives as
``moved(src=tmp, dest=MEMORY.md)`` and a watch on the old inode would go blind after it.

Events cross from the observer thread to the GUI thread through a private signal with a queued
connection; the observer thread never touches a Qt object otherwise. A single-shot timer
debounces them (trailing, ``debounce_ms``; a steady stream still flushes every
``max_delay_ms``), then :attr:`HomeWatcher.filesChanged` carries the kinds whose **content**
changed. A path counts as changed only if its content hash differs from the last one the
watcher saw, so touching a file, rewriting the same bytes or temp-file churn emits nothing.

Echoes of the app's own writes are dropped with :meth:`HomeWatcher.expect_write`::

    watcher.expect_write(path, new_bytes)   # before writing; any thread
    atomic_write_bytes(path, new_bytes)

If, when the burst settles, the file's hash is the expected one, the change is not reported.

Create the watcher on the GUI thread (its timer and slots live there). Call :meth:`start` once
the event loop runs and :meth:`stop` before quitting; ``stop`` is also connected to
``QCoreApplication.aboutToQuit``.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from PySide6.QtCore import QCoreApplication, QObject, Qt, QTimer, Signal, Slot
from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver, ObservedWatch

from engine.fsutil import TEMP_PREFIX
from engine.home import Home

log = logging.getLogger(__name__)

MEMORY, USER, SKILLS, PENDING = "memory", "user", "skills", "pending"
KINDS = frozenset({MEMORY, USER, SKILLS, PENDING})
MEMORY_FILES = {"MEMORY.md": MEMORY, "USER.md": USER}

# Opened/closed/attrib events are left out on purpose: hashing a file opens and closes it, and
# reacting to that would feed the watcher its own reads.
FILE_EVENTS: list[type[FileSystemEvent]] = [
    FileCreatedEvent,
    FileModifiedEvent,
    FileDeletedEvent,
    FileMovedEvent,
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
]
# The home root is watched only to notice one of the three folders vanish or come back.
LAYOUT_EVENTS: list[type[FileSystemEvent]] = [DirCreatedEvent, DirDeletedEvent, DirMovedEvent]

IGNORED_DIRS = frozenset({".git", "__pycache__"})
# Vim probes a folder's writability with a file called 4913 before saving.
IGNORED_NAMES = frozenset({"4913", ".DS_Store"})
IGNORED_SUFFIXES = (".lock", ".swp", ".swo", ".swx", ".pyc", "~")
IGNORED_PREFIXES = (TEMP_PREFIX, ".#")

# Files above this size are fingerprinted by size and mtime, not hashed: hashing runs on the
# GUI thread and a skill may ship a large asset.
HASH_LIMIT = 4 * 1024 * 1024
# An expectation the app never fulfilled (its write failed) must not mask a later external
# write of the same bytes forever.
EXPECT_TTL_S = 30.0


def is_ignored_name(name: str) -> bool:
    """Temp, lock and editor swap/backup files: never content a view shows."""
    return (
        name in IGNORED_NAMES
        or name.startswith(IGNORED_PREFIXES)
        or name.endswith(IGNORED_SUFFIXES)
    )


def fingerprint(path: Path) -> str | None:
    """The content hash of a regular file, or ``None`` if there is none (missing, a folder,
    unreadable)."""
    try:
        info = path.stat()
        if not path.is_file():
            return None
        if info.st_size > HASH_LIMIT:
            return f"stat:{info.st_size}:{info.st_mtime_ns}"
        return digest(path.read_bytes())
    except OSError:
        return None


def digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


@dataclass
class _Root:
    path: Path
    recursive: bool
    watch: ObservedWatch | None = None
    identity: tuple[int, int] | None = None  # (st_dev, st_ino) of the folder being watched
    missing_logged: bool = False


@dataclass
class _Burst:
    """What arrived since the last flush."""

    files: dict[Path, str] = field(default_factory=dict)  # path → kind
    trees: set[Path] = field(default_factory=set)  # folders to rescan
    layout: bool = False  # a watched folder itself was created, deleted or moved
    first_at: float = 0.0

    def __bool__(self) -> bool:
        return bool(self.files or self.trees or self.layout)


class _Handler(FileSystemEventHandler):
    """Runs on watchdog's thread: pure path logic, then a thread-safe signal emission."""

    def __init__(self, watcher: HomeWatcher) -> None:
        self._watcher = watcher

    def on_any_event(self, event: FileSystemEvent) -> None:
        paths = [event.src_path]
        if isinstance(event, FileMovedEvent | DirMovedEvent):
            paths.append(event.dest_path)
        for raw in paths:
            if raw:
                self._watcher._relay_path(os.fsdecode(raw), event.is_directory)


class HomeWatcher(QObject):
    """Reports which parts of a home changed on disk; see the module docstring."""

    filesChanged = Signal(object)  # frozenset of "memory" | "user" | "skills" | "pending"

    # Observer thread → GUI thread; (path, is_directory). Queued: the slot runs on our thread.
    _pathTouched = Signal(str, bool)

    def __init__(
        self,
        home: Home,
        *,
        debounce_ms: int = 150,
        max_delay_ms: int = 1000,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        # Event paths are built from the watched paths; expect_write keys are absolute.
        self.home = Home(Path(os.path.abspath(home.root)))
        home = self.home
        self.debounce_ms = debounce_ms
        self.max_delay_ms = max(max_delay_ms, debounce_ms)
        # Home has no properties for these two folders; the layout is Cairn's own.
        self.skills_dir = home.root / "skills"
        self.pending_dir = home.root / "pending"
        self._roots = {
            home.memories_dir: _Root(home.memories_dir, recursive=False),
            self.skills_dir: _Root(self.skills_dir, recursive=True),
            self.pending_dir: _Root(self.pending_dir, recursive=True),
        }
        self._home_watch: ObservedWatch | None = None
        self._observer: BaseObserver | None = None
        self._handler = _Handler(self)
        # Read by the observer thread; a plain bool is enough to stop relaying after stop().
        self._running = False
        self._known: dict[Path, str | None] = {}
        self._burst = _Burst()
        self._expect_lock = threading.Lock()
        self._expected: dict[Path, list[tuple[str | None, float]]] = {}

        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self._flush)
        self._pathTouched.connect(self._on_path_touched, Qt.ConnectionType.QueuedConnection)
        app = QCoreApplication.instance()
        if app is not None:
            app.aboutToQuit.connect(self.stop)

    # -- public API ----------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self._running

    def start(self) -> None:
        """Create the folders if missing, baseline their content and start watching.

        Idempotent. A home that cannot be created or watched is logged, not raised: the app
        works without live updates.
        """
        if self._running:
            return
        for folder in [*self._roots, self.home.pending_memory_dir]:
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                log.warning("cannot create %s: %s; it is watched once it exists", folder, exc)
        observer = Observer()
        observer.daemon = True
        observer.name = "cairn-home-watcher"
        observer.start()
        self._observer = observer
        self._running = True
        self._known.clear()
        self._burst = _Burst()
        self._arm_home()
        for root in self._roots.values():
            self._arm(root)
            self._scan_tree(root.path, report=False)

    @Slot()
    def stop(self) -> None:
        """Stop watching and join watchdog's threads. Idempotent; safe at app quit."""
        if not self._running:
            return
        self._running = False
        self._timer.stop()
        self._burst = _Burst()
        observer, self._observer = self._observer, None
        if observer is not None:
            observer.stop()
            observer.join(timeout=5)
            if observer.is_alive():
                log.warning("file watcher thread did not stop within 5 s")
        self._home_watch = None
        for root in self._roots.values():
            root.watch, root.identity, root.missing_logged = None, None, False

    def expect_write(self, path: str | os.PathLike[str], content: bytes | str | None) -> None:
        """Declare that the app itself is about to give ``path`` this content.

        ``content`` is the file's new bytes (``str`` is encoded as UTF-8, as
        ``atomic_write_text`` does), or ``None`` for a deletion. Call it *before* writing. When
        the burst of events for ``path`` settles and its content hash equals an expected one,
        the change is not reported; that expectation and any older ones for the path are
        consumed. Expectations lapse after 30 s. Safe to call from any thread.
        """
        if isinstance(content, str):
            content = content.encode("utf-8")
        expected = None if content is None else digest(content)
        key = Path(os.path.abspath(path))
        with self._expect_lock:
            self._expected.setdefault(key, []).append((expected, time.monotonic()))

    # -- observer thread -----------------------------------------------------------------------

    def _relay_path(self, path: str, is_directory: bool) -> None:
        # Called on watchdog's thread: emitting a signal is the only Qt thing done here.
        if not self._running:
            return
        name = os.path.basename(path)
        if is_ignored_name(name):
            return
        self._pathTouched.emit(path, is_directory)

    # -- GUI thread ----------------------------------------------------------------------------

    @Slot(str, bool)
    def _on_path_touched(self, raw: str, is_directory: bool) -> None:
        if not self._running:
            return  # queued before stop()
        path = Path(raw)
        burst = self._burst
        if path == self.home.root or path in self._roots:
            # One of the watched folders (or the home) was created, deleted or renamed: its
            # watch may be dead and its files may differ without any file event.
            burst.layout = True
        elif path.parent == self.home.root:
            return  # another folder of the home (profiles, logs…)
        elif is_directory:
            root = self._root_of(path)
            if root is None or not root.recursive:
                return
            if any(part in IGNORED_DIRS for part in path.relative_to(root.path).parts):
                return
            burst.trees.add(path)
        else:
            kind = self._kind_of(path)
            if kind is None:
                return
            burst.files[path] = kind
        now = time.monotonic()
        if not self._timer.isActive():
            burst.first_at = now
        left_ms = self.max_delay_ms - (now - burst.first_at) * 1000
        self._timer.start(int(max(0, min(self.debounce_ms, left_ms))))

    @Slot()
    def _flush(self) -> None:
        if not self._running:
            return
        burst, self._burst = self._burst, _Burst()
        changed: set[str] = set()
        if burst.layout:
            if not self.home.root.is_dir():
                log.warning("Cairn home %s is gone; watching stops until restarted", self.home.root)
            for root in self._roots.values():
                self._arm(root)
                changed |= self._scan_tree(root.path, report=True)
        for tree in burst.trees:
            changed |= self._scan_tree(tree, report=True)
        for path, kind in burst.files.items():
            if self._settle(path):
                changed.add(kind)
        if changed:
            self.filesChanged.emit(frozenset(changed))

    # -- helpers (GUI thread) ------------------------------------------------------------------

    def _root_of(self, path: Path) -> _Root | None:
        for root in self._roots.values():
            if path.is_relative_to(root.path) and path != root.path:
                return root
        return None

    def _kind_of(self, path: Path) -> str | None:
        """The kind a file belongs to, or ``None`` if the views do not care about it."""
        if is_ignored_name(path.name):
            return None
        if path.parent == self.home.memories_dir:
            return MEMORY_FILES.get(path.name)
        root = self._root_of(path)
        if root is None or any(
            part in IGNORED_DIRS for part in path.relative_to(root.path).parts[:-1]
        ):
            return None
        return SKILLS if root.path == self.skills_dir else PENDING

    def _settle(self, path: Path) -> bool:
        """Record ``path``'s current hash; whether it is a change someone else made."""
        now_hash = fingerprint(path)
        previous = self._known.get(path)
        if now_hash is None:
            self._known.pop(path, None)
        else:
            self._known[path] = now_hash
        if self._consume_expectation(path, now_hash):
            return False
        return now_hash != previous

    def _consume_expectation(self, path: Path, now_hash: str | None) -> bool:
        with self._expect_lock:
            waiting = self._expected.get(path)
            if not waiting:
                return False
            cutoff = time.monotonic() - EXPECT_TTL_S
            waiting[:] = [(h, at) for h, at in waiting if at >= cutoff]
            hashes = [h for h, _ in waiting]
            matched = now_hash in hashes
            if matched:
                del waiting[: hashes.index(now_hash) + 1]
            if not waiting:
                del self._expected[path]
            return matched

    def _scan_tree(self, tree: Path, *, report: bool) -> set[str]:
        """Compare every file under ``tree`` (and every file known to have been there) with
        what was last seen; with ``report=False`` just record the baseline."""
        present: list[Path] = []
        if tree == self.home.memories_dir:
            present = [tree / name for name in MEMORY_FILES]
        else:
            for folder, dirs, files in os.walk(tree):
                dirs[:] = [d for d in dirs if d not in IGNORED_DIRS]
                present += [Path(folder, f) for f in files if not is_ignored_name(f)]
        known_here = [p for p in self._known if p.is_relative_to(tree)]
        changed: set[str] = set()
        for path in dict.fromkeys([*present, *known_here]):
            kind = self._kind_of(path)
            if kind is None:
                continue
            if report:
                if self._settle(path):
                    changed.add(kind)
            elif (now_hash := fingerprint(path)) is not None:
                self._known[path] = now_hash
        return changed

    def _arm_home(self) -> None:
        assert self._observer is not None
        try:
            self._home_watch = self._observer.schedule(
                self._handler, str(self.home.root), recursive=False, event_filter=LAYOUT_EVENTS
            )
        except OSError as exc:
            log.warning("cannot watch Cairn home %s: %s", self.home.root, exc)

    def _arm(self, root: _Root) -> None:
        """Watch ``root`` if it exists and is not already watched under the same inode: a
        folder deleted and created again is a new inode whose old watch is dead."""
        observer = self._observer
        assert observer is not None
        try:
            info = root.path.stat()
            identity: tuple[int, int] | None = (info.st_dev, info.st_ino)
        except OSError:
            identity = None
        if identity is not None and identity == root.identity and root.watch is not None:
            return
        if root.watch is not None:
            with contextlib.suppress(KeyError, RuntimeError):
                observer.unschedule(root.watch)
            root.watch, root.identity = None, None
        if identity is None:
            if not root.missing_logged:
                log.warning("%s is missing; it is watched again once it exists", root.path)
                root.missing_logged = True
            return
        try:
            root.watch = observer.schedule(
                self._handler, str(root.path), recursive=root.recursive, event_filter=FILE_EVENTS
            )
        except OSError as exc:
            log.warning("cannot watch %s: %s", root.path, exc)
            return
        root.identity, root.missing_logged = identity, False
