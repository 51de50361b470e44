"""The one base of every refusal Cairn anticipates.

A :class:`CairnError` says that an operation was refused and nothing was changed (unless the
message says otherwise): ``code`` is stable for scripts (``invalid``, ``not_found``, ``io``, …,
each subsystem lists its own), ``message`` is written for the user and the model alike, and
``details`` are extra fields a caller may show (``pending_id``, ``id``, …).

Every subsystem's error derives from it, so there is one way to turn a refusal into output:
the tool registry makes it the tool's result (``to_dict``), ``engine.cli.main`` one line on
stderr (or a JSON error) and exit code 1, the window the message beside what was asked.
"""

from __future__ import annotations

from typing import Any


class CairnError(Exception):
    def __init__(self, code: str, message: str, **details: Any) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details

    def to_dict(self) -> dict[str, Any]:
        """The refusal as a result: ``{"ok": false, "error": code, "message": …, **details}``."""
        return {"ok": False, "error": self.code, "message": self.message, **self.details}
