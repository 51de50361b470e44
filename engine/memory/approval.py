"""The pending-writes queue: staged memory writes waiting for a human's yes or no.

One JSON file per write in ``<home>/pending/memory/<id>.json``, written atomically, so a second
Cairn, the desktop client and the CLI all see the same queue and a crash never leaves half a
record.

The folder is shared with Hermes Agent when both use one home, so records are written in its
shape and read in either: ``created_at`` in unix seconds (older Cairn records hold ISO text,
still read), and a memory payload that names its ``action`` with ``content``/``old_text`` for a
single operation (what the other tool replays) beside the ``operations`` list Cairn replays.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import math
import secrets
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ValidationError, field_validator

from engine.fsutil import atomic_write_text, locked, read_text, remove_file
from engine.home import Home, HomeError
from engine.memory.errors import MemoryToolError

Origin = Literal["foreground", "background_review"]
# Unix seconds past the year 5000 are milliseconds, or garbage.
MAX_STAGED_AT = 95_617_584_000.0


class PendingWrite(BaseModel):
    id: str
    subsystem: str = "memory"
    action: str
    summary: str
    origin: Origin
    created_at: float  # unix seconds
    payload: dict[str, Any]
    session_id: str | None = None

    @field_validator("created_at", mode="before")
    @classmethod
    def _seconds(cls, value: Any) -> Any:
        # Cairn once wrote ISO 8601 text here; a record staged then still sorts and shows.
        if isinstance(value, str):
            try:
                return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
            except ValueError:
                return value  # not a time: pydantic says so
        return value

    @field_validator("created_at")
    @classmethod
    def _plausible(cls, value: float) -> float:
        # Milliseconds or infinity would break every listing that shows the time: such a
        # record is invalid (listed as such), not a crash.
        if not math.isfinite(value) or not 0 <= value <= MAX_STAGED_AT:
            raise ValueError(f"created_at {value!r} is not a time in unix seconds")
        return value

    def when(self) -> str:
        """The staging time for a terminal: local, to the second."""
        return datetime.fromtimestamp(self.created_at).astimezone().strftime("%Y-%m-%d %H:%M:%S")


def memory_payload(target: str, operations: list[dict[str, Any]]) -> dict[str, Any]:
    """A staged memory write in the shape both tools sharing a home can replay."""
    if len(operations) == 1:
        op = operations[0]
        return {"target": target, **op, "operations": operations}
    return {"action": "batch", "target": target, "operations": operations}


def payload_operations(payload: dict[str, Any]) -> Any:
    """The operations a staged memory write replays: Cairn's list, or the single operation
    the other tool writes as ``action`` with ``content``/``old_text``."""
    if "operations" in payload:
        return payload["operations"]
    op = {key: payload[key] for key in ("action", "content", "old_text") if key in payload}
    return [op] if op else None


class PendingQueue:
    """Staged writes of one subsystem (memory, skills), one JSON file each in ``folder``."""

    def __init__(self, folder: Path, subsystem: str = "memory", home: Home | None = None) -> None:
        self.folder = folder
        self.subsystem = subsystem
        self.home = home  # given: the folder must not lead out of it through a link

    def _path(self, pending_id: str) -> Path:
        # Ids are 8 hex digits; anything else could be a path trick.
        if len(pending_id) != 8 or any(c not in "0123456789abcdef" for c in pending_id):
            raise MemoryToolError("not_found", f"no pending write {pending_id!r}")
        return self.folder / f"{pending_id}.json"

    def stage(
        self,
        action: str,
        summary: str,
        payload: dict[str, Any],
        origin: Origin,
        session_id: str | None = None,
    ) -> PendingWrite:
        if self.home is not None:
            try:
                self.home.safe_folder(self.folder)
            except HomeError as exc:
                raise MemoryToolError("unsafe", f"{exc}; nothing was staged") from exc
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            while True:
                pending_id = secrets.token_hex(4)
                path = self._path(pending_id)
                if not path.exists():
                    break
            record = PendingWrite(
                id=pending_id,
                subsystem=self.subsystem,
                action=action,
                summary=summary,
                origin=origin,
                created_at=time.time(),
                payload=payload,
                session_id=session_id,
            )
            atomic_write_text(path, record.model_dump_json(indent=2) + "\n")
        except OSError as exc:
            raise MemoryToolError(
                "io", f"cannot stage the write in {self.folder}: {exc.strerror}"
            ) from exc
        return record

    def get(self, pending_id: str) -> PendingWrite:
        path = self._path(pending_id)
        try:
            record = PendingWrite.model_validate(json.loads(read_text(path)))
        except FileNotFoundError as exc:
            raise MemoryToolError("not_found", f"no pending write {pending_id!r}") from exc
        except (ValueError, ValidationError) as exc:
            reason = " ".join(str(exc).split())[:300]
            raise MemoryToolError(
                "invalid", f"pending write {path.name} is unreadable: {reason}; kept for inspection"
            ) from exc
        if record.id != pending_id:
            # The file name is the record's identity (approving removes that file); a record
            # naming another id would be applied and then stay queued, to be applied again.
            raise MemoryToolError(
                "invalid",
                f"pending write {path.name} names itself {record.id[:40]!r}; a record's id "
                "must be its file name. Kept for inspection, not applied",
            )
        return record

    def _files(self) -> list[Path]:
        if not self.folder.is_dir():
            return []
        return sorted(p for p in self.folder.glob("*.json") if not p.name.startswith("."))

    def list(self) -> list[PendingWrite]:
        """Readable records, oldest first; invalid ones (see :meth:`invalid`) are skipped,
        never deleted."""
        records = []
        for path in self._files():
            try:
                records.append(self.get(path.stem))
            except MemoryToolError:
                continue
        return sorted(records, key=lambda r: (r.created_at, r.id))

    def invalid(self) -> builtins.list[dict[str, str]]:
        """The records :meth:`list` skips, each with the reason: a user must see them."""
        found = []
        for path in self._files():
            try:
                self.get(path.stem)
            except MemoryToolError as exc:
                if exc.code == "not_found" and self.valid_id(path.stem):
                    continue  # approved or rejected meanwhile
                reason = exc.message if self.valid_id(path.stem) else "not a pending-write id"
                found.append({"file": path.name, "reason": reason})
        return found

    @staticmethod
    def valid_id(stem: str) -> bool:
        return len(stem) == 8 and all(c in "0123456789abcdef" for c in stem)

    @contextlib.contextmanager
    def settling(self) -> Iterator[None]:
        """Held while a record is approved or rejected, so two approvers (the desktop app
        and a terminal) never apply one record twice."""
        if self.home is not None:
            try:
                self.home.safe_folder(self.folder)
            except HomeError as exc:
                raise MemoryToolError("unsafe", f"{exc}; nothing was settled") from exc
        self.folder.mkdir(parents=True, exist_ok=True)
        with locked(self.folder / ".lock"):
            yield

    def discard(self, pending_id: str) -> None:
        remove_file(self._path(pending_id))
