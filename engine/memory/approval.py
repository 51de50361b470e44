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

import json
import secrets
import time
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ValidationError, field_validator

from engine.fsutil import atomic_write_text
from engine.memory.errors import MemoryToolError

Origin = Literal["foreground", "background_review"]


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

    def __init__(self, folder: Path, subsystem: str = "memory") -> None:
        self.folder = folder
        self.subsystem = subsystem

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
            return PendingWrite.model_validate(json.loads(path.read_text(encoding="utf-8")))
        except FileNotFoundError as exc:
            raise MemoryToolError("not_found", f"no pending write {pending_id!r}") from exc
        except (ValueError, ValidationError) as exc:
            raise MemoryToolError(
                "file", f"pending write {path.name} is unreadable: {exc}; kept for inspection"
            ) from exc

    def list(self) -> list[PendingWrite]:
        """Readable records, oldest first; unreadable ones are skipped, never deleted."""
        records = []
        for path in sorted(self.folder.glob("*.json")) if self.folder.is_dir() else []:
            try:
                records.append(self.get(path.stem))
            except MemoryToolError:
                continue
        return sorted(records, key=lambda r: (r.created_at, r.id))

    def discard(self, pending_id: str) -> None:
        self._path(pending_id).unlink(missing_ok=True)
