"""What an operation changed, and the engine's one event for committed changes.

A :class:`Changes` names the parts of a home's state that a write touched (which memory
files, which approval queues, skills, facts, sessions, config keys). The subsystem that
commits a write publishes it on :data:`events`, from whichever caller it came (the CLI, the
window, cron, the model's tools, the background review); observers subscribe there instead of
re-reading everything after every call.

:meth:`ChangeEvents.collect` gathers what is published on the calling thread while a block
runs: that is how an operation (``engine.ops``) computes the change set it returns.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator

from pydantic import BaseModel, ConfigDict

log = logging.getLogger(__name__)

# Which queue a staged write waits in (``PendingQueue.subsystem``).
PENDING_SUBSYSTEMS = ("memory", "skills", "facts")


class Changes(BaseModel):
    """The parts of state a write changed; an empty one changed nothing.

    ``targets``: the memory files (``"memory"``, ``"user"``) whose entries changed.
    ``pending``: the approval queues (``"memory"``, ``"skills"``, ``"facts"``) that gained or
    lost a record. ``skills``/``facts``: the skill library / the fact store changed.
    ``sessions``: the session store changed (a turn was recorded, a session imported).
    ``session``: the running session was replaced (``/new``, a new model).
    ``config``: dotted config keys written (``"memory.write_approval"``); ``"*"`` is any.
    """

    model_config = ConfigDict(frozen=True)

    targets: frozenset[str] = frozenset()
    pending: frozenset[str] = frozenset()
    skills: bool = False
    facts: bool = False
    sessions: bool = False
    session: bool = False
    config: frozenset[str] = frozenset()

    @classmethod
    def everything(cls) -> Changes:
        """For a start, or a change too broad to name (a slash command, a migration)."""
        return cls(
            targets=frozenset({"memory", "user"}),
            pending=frozenset(PENDING_SUBSYSTEMS),
            skills=True,
            facts=True,
            sessions=True,
            session=True,
            config=frozenset({"*"}),
        )

    def __or__(self, other: Changes) -> Changes:
        return Changes(
            targets=self.targets | other.targets,
            pending=self.pending | other.pending,
            skills=self.skills or other.skills,
            facts=self.facts or other.facts,
            sessions=self.sessions or other.sessions,
            session=self.session or other.session,
            config=self.config | other.config,
        )

    def __bool__(self) -> bool:
        return bool(
            self.targets
            or self.pending
            or self.skills
            or self.facts
            or self.sessions
            or self.session
            or self.config
        )

    def config_under(self, prefix: str) -> bool:
        """Whether a config key at or under ``prefix`` (``"memory"``, ``"model"``) changed."""
        return any(k == "*" or k == prefix or k.startswith(prefix + ".") for k in self.config)


def config_keys(patch: dict[str, object], prefix: str = "") -> frozenset[str]:
    """The dotted keys a config patch writes (``{"memory": {"x": 1}}`` → ``memory.x``)."""
    keys: set[str] = set()
    for key, value in patch.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            keys |= config_keys(value, dotted + ".")
        else:
            keys.add(dotted)
    return frozenset(keys)


# (changes, initiator): the initiator says who asked — a write's origin ("foreground",
# "background_review"), "cli", "cron", or whatever the caller of an operation named.
Observer = Callable[[Changes, str], None]


class Collector:
    """What was published on one thread inside :meth:`ChangeEvents.collect`."""

    def __init__(self) -> None:
        self.changes = Changes()

    def add(self, changes: Changes) -> None:
        self.changes = self.changes | changes


class ChangeEvents:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._observers: list[Observer] = []
        self._local = threading.local()

    def subscribe(self, observer: Observer) -> Callable[[], None]:
        """Call ``observer`` after every published change; returns the unsubscribe call.

        Observers run on the publishing thread, after the write committed: one that fails
        is logged, and never undoes the write or stops the others.
        """
        with self._lock:
            self._observers.append(observer)

        def unsubscribe() -> None:
            with self._lock, contextlib.suppress(ValueError):
                self._observers.remove(observer)

        return unsubscribe

    def publish(self, changes: Changes, initiator: str) -> None:
        if not changes:
            return
        for collector in getattr(self._local, "collectors", ()):
            collector.add(changes)
        with self._lock:
            observers = list(self._observers)
        for observer in observers:
            try:
                observer(changes, initiator)
            except Exception:
                log.exception("change observer failed")

    def collecting(self) -> bool:
        """Whether this thread is inside :meth:`collect` (an operation is running here)."""
        return bool(getattr(self._local, "collectors", ()))

    @contextlib.contextmanager
    def collect(self) -> Iterator[Collector]:
        """Gather the changes published on this thread while the block runs (nestable)."""
        collector = Collector()
        stack: list[Collector] = getattr(self._local, "collectors", [])
        self._local.collectors = [*stack, collector]
        try:
            yield collector
        finally:
            self._local.collectors = stack


events = ChangeEvents()
