"""The one question about memory's change history every start asks, answered without
SQLAlchemy: what did Cairn last write to a file? (:meth:`MemoryStore.read_noting_edits`
compares it with the file to notice an edit made outside Cairn.) Everything else goes through
:class:`engine.memory.history.History`.
"""

from __future__ import annotations

import logging
import sqlite3
from typing import TYPE_CHECKING, Any

from engine.db_files import connect_readonly, database_path
from engine.home import Home

if TYPE_CHECKING:
    from engine.memory.history import History

log = logging.getLogger(__name__)

# The actions whose event carries the file's whole text after it.
COMMITTING_ACTIONS = ("add", "replace", "remove", "batch", "approved", "undo", "external_edit")

_LAST_STATE = (
    "SELECT state_after FROM memory_events WHERE target = ? AND action IN ("
    + ", ".join("?" for _ in COMMITTING_ACTIONS)
    + ") ORDER BY id DESC LIMIT 1"
)


class NotAnswered(Exception):
    """The file could not answer (no table yet, an older schema, not SQLite): ask History."""


def last_state(home: Home, target: str) -> str | None:
    """The file text as of the newest recorded change of ``target``; None if never seen
    (or there is no database yet)."""
    try:
        path = database_path(home)
        if not path.exists() or path.stat().st_size == 0:
            return None
        conn = connect_readonly(path)
        try:
            row = conn.execute(_LAST_STATE, (target, *COMMITTING_ACTIONS)).fetchone()
        finally:
            conn.close()
    except (sqlite3.Error, OSError, RuntimeError) as exc:
        raise NotAnswered(str(exc)) from exc
    return None if row is None else row[0]


class LazyHistory:
    """Memory's change history, opened on first use.

    Opening it imports SQLAlchemy and, for a new home, creates the database: a command that
    only reads never does either. ``last_state`` is answered from the file when it can be;
    everything else opens :class:`~engine.memory.history.History` (once). If opening fails,
    :attr:`error` says why and the history behaves as absent: nothing is recorded, reads
    find nothing, and the memory files keep working.
    """

    def __init__(self, home: Home) -> None:
        self.home = home
        self._history: History | None = None
        self.error: str | None = None
        self._tried = False

    def open(self) -> History | None:
        """The history, opened now if it was not; None (and :attr:`error`) if it cannot be."""
        if not self._tried:
            self._tried = True
            try:
                from engine.db import open_engine
                from engine.memory.history import History

                self._history = History(open_engine(self.home))
            except Exception as exc:  # memory keeps working without its log
                log.debug("memory history unavailable: %s", exc)
                self._history, self.error = None, str(exc)
        return self._history

    def last_state(self, target: str) -> str | None:
        if not self._tried:
            try:
                return last_state(self.home, target)
            except NotAnswered:
                pass  # opening History migrates or says what is wrong
        history = self.open()
        return history.last_state(target) if history is not None else None

    def record(self, target: str, action: str, **fields: Any) -> int | None:
        history = self.open()
        return history.record(target, action, **fields) if history is not None else None
