"""``cairn``: the command line. Subcommands share ``--home``, ``--profile`` and ``--json``.

``cairn`` and ``cairn gui`` skip building the full parser: the subcommands' modules import
most of the engine (about a second), which the window loads on its worker thread instead,
after it is on screen.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

from engine import __version__
from engine.home import Home, HomeError, resolve_home, resolve_root


def _common() -> argparse.ArgumentParser:
    # SUPPRESS lets the options appear before or after the subcommand without the later
    # parser resetting what the earlier one read.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--home", default=argparse.SUPPRESS, help="home folder (default ~/.cairn)")
    common.add_argument("--profile", default=argparse.SUPPRESS, help="profile inside the home")
    common.add_argument(
        "--json", action="store_true", default=argparse.SUPPRESS, help="machine-readable output"
    )
    return common


# Each command group's module, imported only when its command runs: together they import most
# of the engine, which `cairn memory show` has no use for. Plain imports inside functions, so
# the import contracts still see every edge.
def _memory_cli() -> ModuleType:
    from engine.memory import cli

    return cli


def _sessions_cli() -> ModuleType:
    from engine.sessions import cli

    return cli


def _skills_cli() -> ModuleType:
    from engine.skills import cli

    return cli


def _chat_cli() -> ModuleType:
    from engine import chat_cli

    return chat_cli


def _migrate_cli() -> ModuleType:
    from engine.migrate import cli

    return cli


def _profiles_cli() -> ModuleType:
    from engine import profiles_cli

    return profiles_cli


def _cron_cli() -> ModuleType:
    from engine import cron_cli

    return cron_cli


def _journey_cli() -> ModuleType:
    from engine import journey_cli

    return journey_cli


COMMAND_MODULES: dict[str, Callable[[], ModuleType]] = {
    "memory": _memory_cli,
    "sessions": _sessions_cli,
    "skills": _skills_cli,
    "chat": _chat_cli,
    "model": _chat_cli,
    "claw": _migrate_cli,
    "profile": _profiles_cli,
    "cron": _cron_cli,
    "journey": _journey_cli,
}


def _command_of(argv: Sequence[str]) -> str | None:
    """The command group ``argv`` names (the first word that is not an option or the value
    of --home/--profile), or None."""
    skip = False
    for word in argv:
        if skip:
            skip = False
        elif word in ("--home", "--profile"):
            skip = True
        elif not word.startswith("-"):
            return word if word in COMMAND_MODULES else None
    return None


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser; with ``argv`` naming a command, only that command's module is loaded
    (help, errors and unknown words get every command)."""
    command = _command_of(argv) if argv is not None else None
    if command:
        loaders = [COMMAND_MODULES[command]]
    elif argv is not None and list(argv) == ["--version"]:
        loaders = []  # answered by the top-level parser alone
    else:
        loaders = list(dict.fromkeys(COMMAND_MODULES.values()))
    common = _common()
    parser = argparse.ArgumentParser(
        prog="cairn",
        parents=[common],
        description="Cairn, a desktop agent whose memory is bounded by design. "
        "With no command, the desktop app opens.",
    )
    parser.add_argument("--version", action="version", version=f"cairn {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    gui = sub.add_parser("gui", parents=[common], help="open the desktop app")
    gui.set_defaults(handler=_gui)
    for load in loaders:
        load().register(sub, common)
    return parser


# Opens the desktop window on a home and returns its exit code. The engine never imports the
# desktop client: the installed ``cairn`` command (app.launch) passes one in.
WindowOpener = Callable[[Home], int]


class _NoWindow(Exception):
    code = "no_window"
    message = (
        "this entry point has no desktop window; run the installed `cairn` command, or "
        "`python -m app`"
    )


def _gui(args: argparse.Namespace) -> int:
    opener: WindowOpener | None = getattr(args, "open_window", None)
    if opener is None:
        raise _NoWindow(_NoWindow.message)
    return opener(args.home_path)


def _gui_only(argv: Sequence[str]) -> argparse.Namespace | None:
    """The options when the command line asks for nothing but the window (no command, or
    ``gui``); None for anything else, help and errors included, which the full parser
    handles."""
    parser = argparse.ArgumentParser(add_help=False, parents=[_common()], exit_on_error=False)
    try:
        args, rest = parser.parse_known_args(argv)
    except argparse.ArgumentError:
        return None
    return args if rest in ([], ["gui"]) else None


def _fail(payload: dict[str, Any], as_json: bool) -> int:
    if as_json:
        print(json.dumps(payload, ensure_ascii=False, indent=2, default=str))
    else:
        print(f"cairn: {payload['message']}", file=sys.stderr)
    return 1


EXIT_FAILED = 1
EXIT_INTERNAL = 70  # EX_SOFTWARE: a bug in Cairn, not in the input
EXIT_INTERRUPTED = 130
EXIT_PIPE_CLOSED = 141  # 128 + SIGPIPE, what a shell reports for `… | head`
DEBUG_ENV = "CAIRN_DEBUG"
MESSAGE_CHARS = 600


def _one_line(text: str) -> str:
    """A message as one line of bounded length: the first line (SQLAlchemy appends a
    "Background on this error" line), cut when it would flood a terminal."""
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    line = lines[0] if lines else ""
    return line if len(line) <= MESSAGE_CHARS else line[: MESSAGE_CHARS - 1] + "…"


def _expected(exc: BaseException) -> tuple[str, str] | None:
    """``(code, message)`` for a failure Cairn anticipates (refused input, a damaged or
    unreadable file, a full disk, a database that is not one); None for a bug."""
    import sqlite3

    from sqlalchemy.exc import SQLAlchemyError

    from engine.config import ConfigError
    from engine.db import DatabaseError
    from engine.errors import CairnError

    if isinstance(exc, CairnError):  # every refusal of a subsystem
        return exc.code, exc.message
    code = getattr(exc, "code", None)
    message = getattr(exc, "message", None)
    if isinstance(code, str) and isinstance(message, str):  # a command's own refusal
        return code, message
    if isinstance(exc, ConfigError | HomeError):
        return "config", str(exc)
    if isinstance(exc, DatabaseError | sqlite3.DatabaseError):
        return "database", str(exc)
    if isinstance(exc, SQLAlchemyError):
        orig = getattr(exc, "orig", None)
        return "database", str(orig if orig is not None else exc)
    if isinstance(exc, MemoryError):
        return "too_large", "out of memory: the input is too large"
    if isinstance(exc, OSError):
        where = f" ({exc.filename})" if exc.filename else ""
        return "io", f"{exc.strerror or exc}{where}"
    return None


def _quiet_stdout() -> None:
    """After the reader of a pipe went away: point stdout at /dev/null so the interpreter's
    final flush does not print "Exception ignored … BrokenPipeError"."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # stdout is no real file (tests, embedding)
        pass


def run_guarded(run: Callable[[], int], as_json: Callable[[], bool]) -> int:
    """Call ``run``; every failure becomes one line on stderr (or a JSON error) and an exit
    code, never a traceback. ``CAIRN_DEBUG=1`` re-raises unexpected errors for debugging.
    Whatever happened, the databases are checkpointed and closed at the end."""
    try:
        return _run_and_report(run, as_json)
    finally:
        if "engine.db" in sys.modules:  # only if the command opened a database at all
            from engine.db import checkpoint_engines

            checkpoint_engines()


def _run_and_report(run: Callable[[], int], as_json: Callable[[], bool]) -> int:
    try:
        return run()
    except BrokenPipeError:
        _quiet_stdout()
        return EXIT_PIPE_CLOSED
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except Exception as exc:
        known = _expected(exc)
        if known is None and os.environ.get(DEBUG_ENV):
            raise
        if known is not None:
            code, message = known
            payload: dict[str, Any] = {"ok": False, "error": code, "message": _one_line(message)}
            to_dict = getattr(exc, "to_dict", None)
            if callable(to_dict):
                details = to_dict()
                payload.update({k: v for k, v in details.items() if k not in payload})
            status = EXIT_FAILED
        else:
            message = f"unexpected error ({type(exc).__name__}: {_one_line(str(exc))}); set "
            message += f"{DEBUG_ENV}=1 to see where"
            payload = {"ok": False, "error": "internal", "message": message}
            status = EXIT_INTERNAL
        try:
            _fail(payload, as_json())
        except BrokenPipeError:
            _quiet_stdout()
            return EXIT_PIPE_CLOSED
        return status


def _open_window(args: argparse.Namespace, opener: WindowOpener | None) -> int:
    args.open_window = opener

    def run() -> int:
        args.home_path = resolve_home(getattr(args, "home", None), getattr(args, "profile", None))
        return _gui(args)

    return run_guarded(run, lambda: bool(getattr(args, "json", False)))


# Commands that only read: on a home that does not exist they must not create it (a state.db,
# its -wal and -shm, lock files), least of all under a mistyped --profile.
READ_ONLY = {
    "memory": {"show", "pending", "history"},
    "sessions": {"list", "show", "search", "export"},
    "skills": {"list", "show"},
    "journey": {"list", "show"},
    "cron": {"list"},
}


def _reads_only(args: argparse.Namespace) -> bool:
    command = getattr(args, "command", None)
    if command not in READ_ONLY:
        return False
    if command == "skills" and getattr(args, "skills_command", None) == "pending":
        return False
    return getattr(args, f"{command}_command", None) in READ_ONLY[command]


def _nothing_stored(args: argparse.Namespace, home: Home) -> int:
    """What a read-only command says about a home that does not exist: nothing is stored there
    yet, or, for a profile, that there is no such profile (a typo must not go unnoticed)."""
    root = resolve_root(args.home)
    if home.root != root.root:
        from engine.memory.errors import MemoryToolError

        raise MemoryToolError(
            "not_found",
            f"no profile at {home.root}; `cairn profile list` shows the profiles, "
            "`cairn profile create NAME` makes one",
        )
    message = f"no Cairn home at {home.root} yet: nothing is stored there"
    if getattr(args, "sessions_command", None) == "export":
        print(message, file=sys.stderr)  # stdout is the (empty) export itself
    elif args.json:
        print(json.dumps({"ok": True, "empty": True, "home": str(home.root), "message": message}))
    else:
        print(message)
    return 0


def main(argv: Sequence[str] | None = None, open_window: WindowOpener | None = None) -> int:
    """Run one ``cairn`` command line; ``open_window`` serves ``cairn`` and ``cairn gui``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    window = _gui_only(argv)
    if window is not None:
        return _open_window(window, open_window)
    state: dict[str, Any] = {"json": "--json" in argv}

    def run() -> int:
        from engine.config import load_config
        from engine.memory.service import MemoryService

        parser = build_parser(argv)
        args = parser.parse_args(argv)
        for name, default in (("home", None), ("profile", None), ("json", False)):
            if not hasattr(args, name):
                setattr(args, name, default)
        state["json"] = args.json
        if not hasattr(args, "handler"):
            args.handler = _gui
        args.open_window = open_window
        home = resolve_home(args.home, args.profile)
        args.home_path = home
        if _reads_only(args) and not home.root.exists():
            return _nothing_stored(args, home)
        reads_only = _reads_only(args)
        args.service_factory = lambda: MemoryService(
            home, load_config(home), create_database=not reads_only
        )
        return int(args.handler(args) or 0)

    return run_guarded(run, lambda: bool(state["json"]))


if __name__ == "__main__":
    sys.exit(main())
