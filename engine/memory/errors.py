"""One error type for every way a memory call can fail, with a stable code for scripts."""

from __future__ import annotations

from engine.errors import CairnError


class MemoryToolError(CairnError):
    """A memory operation was refused; nothing was written.

    ``code`` is stable (``invalid``, ``no_match``, ``ambiguous``, ``overflow``, ``blocked``,
    ``disabled``, ``file``, ``io``, ``not_found``, ``conflict``, ``breaker``); ``message`` is
    written for the model and the user alike.
    """
