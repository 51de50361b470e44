"""The installed ``cairn`` command: the engine's command line, with the desktop window for
``cairn`` alone and ``cairn gui``.

It lives in the app package so the engine never imports the desktop client (CI checks the
import contract); importing it loads no Qt, so terminal commands start as fast as the
engine's own ``python -m engine.cli``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from engine.home import Home


def _open_window(home: Home) -> int:
    from app.__main__ import run  # Qt loads only when the window is asked for

    return run(home)


def main(argv: Sequence[str] | None = None) -> int:
    from engine import cli

    return cli.main(argv, open_window=_open_window)


if __name__ == "__main__":
    sys.exit(main())
