"""How every ``cairn`` subcommand prints: JSON for scripts (``--json``), text for people."""

from __future__ import annotations

import argparse
import json
from typing import Any


def emit(args: argparse.Namespace, payload: Any, text: str) -> None:
    if args.json:
        print(json.dumps(payload, ensure_ascii=False, indent=2, default=str))
    else:
        print(text)
