"""How every ``cairn`` subcommand prints: JSON for scripts (``--json``), text for people."""

from __future__ import annotations

import argparse
import json
from typing import Any


def clip(value: object, limit: int = 60) -> str:
    """``repr(value)`` cut to about ``limit`` characters, for messages that quote user input: a
    5,000-digit id or a pasted secret must not come back whole."""
    text = value if isinstance(value, str) else repr(value)
    if len(text) <= limit:
        return repr(text) if isinstance(value, str) else text
    shown = text[: limit - 1]
    return (
        f"{shown!r}… ({len(text):,} characters)"
        if isinstance(value, str)
        else (f"{shown}… ({len(text):,} characters)")
    )


def emit(args: argparse.Namespace, payload: Any, text: str) -> None:
    if args.json:
        print(json.dumps(payload, ensure_ascii=False, indent=2, default=str))
    else:
        print(text)
