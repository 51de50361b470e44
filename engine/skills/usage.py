"""Small JSON ledgers beside the skills: how often each skill is used, and how far it is trusted.

Both live in dot-files inside ``<home>/skills`` (``.usage.json``, ``.trust.json``), so they
travel with the skills when the folder is copied or synced, and every skill loader (Cairn's and
other tools') skips dot-files. Each update is read-modify-write under an exclusive lock with an
atomic replace, so concurrent Cairn processes never lose a count and a crash never leaves half
a file. A ledger that cannot be parsed is moved aside (never overwritten) and a fresh one
started: counts are worth less than the user's ability to inspect what went wrong.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from engine.fsutil import atomic_write_text, locked, resolves_inside

__all__ = ["JsonLedger", "SkillUsage", "UsageBook"]

log = logging.getLogger(__name__)


class JsonLedger:
    """A ``{key: value}`` JSON object in one file, updated under a lock."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock_path = path.with_name(path.name + ".lock")

    def read(self) -> dict[str, Any]:
        """The current mapping; a missing or unreadable file reads as empty (never raises)."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            log.warning("%s is unreadable (%s); treating it as empty", self.path, exc)
            return {}
        return data if isinstance(data, dict) else {}

    def update(self, change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
        """Apply ``change`` to the mapping in place and store it; returns the new mapping."""
        folder = self.path.parent
        if not resolves_inside(folder, folder.parent):
            # `skills -> /etc`: the ledger would be written there (see Home.safe_folder).
            raise PermissionError(
                errno.EPERM, f"{folder} is a link leading out of the home; not written", folder
            )
        folder.mkdir(parents=True, exist_ok=True)
        with locked(self.lock_path):
            data = self._read_for_update()
            change(data)
            atomic_write_text(self.path, json.dumps(data, indent=1, sort_keys=True) + "\n")
        return data

    def _read_for_update(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            if isinstance(data, dict):
                return data
            problem = f"top level is a {type(data).__name__}"
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            problem = str(exc)
        aside = self.path.with_name(f"{self.path.name}.corrupt-{time.strftime('%Y%m%d%H%M%S')}")
        os.replace(self.path, aside)
        log.warning(
            "%s was unreadable (%s); kept as %s, starting afresh", self.path, problem, aside
        )
        return {}


class SkillUsage(BaseModel):
    uses: int = 0
    last_used: str | None = None


class UsageBook:
    """Usage counts per skill name in ``<skills>/.usage.json``.

    A use is a ``skill_view`` of the skill's SKILL.md: the moment its instructions entered a
    conversation. Recording is best effort: a full disk must not fail the view itself.
    """

    FILE = ".usage.json"

    def __init__(self, skills_dir: Path) -> None:
        self.ledger = JsonLedger(skills_dir / self.FILE)

    def record(self, name: str) -> int | None:
        """Count one use of ``name``; the new count, or None when it could not be stored."""
        now = datetime.now(UTC).isoformat(timespec="seconds")

        def bump(data: dict[str, Any]) -> None:
            current = _usage(data.get(name))
            data[name] = SkillUsage(uses=current.uses + 1, last_used=now).model_dump()

        try:
            return int(self.ledger.update(bump)[name]["uses"])
        except OSError as exc:
            log.warning("could not record the use of skill %s: %s", name, exc)
            return None

    def counts(self) -> dict[str, SkillUsage]:
        return {name: _usage(value) for name, value in self.ledger.read().items()}

    def forget(self, name: str) -> None:
        if name in self.ledger.read():
            self.ledger.update(lambda data: data.pop(name, None))


def _usage(value: Any) -> SkillUsage:
    try:
        return SkillUsage.model_validate(value) if isinstance(value, dict) else SkillUsage()
    except ValidationError:
        return SkillUsage()
