"""``cairn`` commands run in the test process, through the installed entry point's ``main``.

The same parser, handlers, output, one-line errors and exit codes as a child process, without
the second or more of imports every child pays. The streams are swapped for the call: stdin is
never a terminal (as under ``subprocess`` with a pipe), stdout and stderr are captured and
decoded with the same newline translation ``subprocess.run(text=True)`` applies. The root
logger's handlers (pytest's) are set aside for the call, so a warning reaches stderr through
logging's last-resort handler, as in a fresh process that configured no logging.

Tests that need a real process — a signal, a crash, two processes at once, a closed pipe, the
exit status the operating system reports — use :func:`tests.conftest.run_cairn` instead.
"""

from __future__ import annotations

import io
import logging
import os
import subprocess
import sys
from collections.abc import Mapping

from app.launch import main
from engine.home import Home


def _stream(raw: io.BytesIO) -> io.TextIOWrapper:
    return io.TextIOWrapper(raw, encoding="utf-8", write_through=True)


def _text(raw: io.BytesIO) -> str:
    text = raw.getvalue().decode("utf-8", errors="replace")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def cairn_here(
    *args: str,
    home: Home | None = None,
    stdin: str | None = None,
    env: Mapping[str, str | None] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run one command line as :func:`tests.conftest.run_cairn` would, in this process.

    ``env`` sets (or, with ``None``, removes) environment variables for the call only.
    """
    argv = [*args, *(["--home", str(home.root)] if home is not None else [])]
    saved_env = {name: os.environ.get(name) for name in env or {}}
    saved = sys.stdin, sys.stdout, sys.stderr
    out, err = io.BytesIO(), io.BytesIO()
    streams = _stream(io.BytesIO((stdin or "").encode("utf-8"))), _stream(out), _stream(err)
    sys.stdin, sys.stdout, sys.stderr = streams
    saved_handlers, logging.root.handlers = logging.root.handlers, []
    for name, value in (env or {}).items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    try:
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse: usage errors (2) and --help (0)
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            if isinstance(exc.code, str):
                print(exc.code, file=sys.stderr)
    finally:
        for stream in streams:
            stream.flush()
        sys.stdin, sys.stdout, sys.stderr = saved
        logging.root.handlers = saved_handlers
        for name, value in saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return subprocess.CompletedProcess(["cairn", *argv], code, _text(out), _text(err))
