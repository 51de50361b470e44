"""One error type for every way a memory call can fail, with a stable code for scripts."""

from __future__ import annotations

from typing import Any


class MemoryToolError(Exception):
    """A memory operation was refused; nothing was written.

    ``code`` is stable (``invalid``, ``no_match``, ``ambiguous``, ``overflow``, ``blocked``,
    ``disabled``, ``file``, ``io``, ``not_found``, ``conflict``, ``breaker``); ``message`` is
    written for the model and the user alike.
    """

    def __init__(self, code: str, message: str, **details: Any) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details

    def to_dict(self) -> dict[str, Any]:
        return {"ok": False, "error": self.code, "message": self.message, **self.details}
