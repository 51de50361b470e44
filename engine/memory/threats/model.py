"""The model layer: a linear classifier for what no rule or signal names.

Placeholder until trained weights are committed: judges nothing.
"""

from __future__ import annotations

CLASSES = ("injection", "exfiltration", "persistence", "secret", "obfuscation")


def judge(lc: str) -> str | None:
    return None
