"""``cairn``: the command line. Subcommands share ``--home``, ``--profile`` and ``--json``.

``cairn`` and ``cairn gui`` skip building the full parser: the subcommands' modules import
most of the engine (about a second), which the window loads on its worker thread instead,
after it is on screen.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from engine import __version__
from engine.home import HomeError, resolve_home


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


def build_parser() -> argparse.ArgumentParser:
    from engine import chat_cli, cron_cli, journey_cli, profiles_cli
    from engine.memory import cli as memory_cli
    from engine.migrate import cli as migrate_cli
    from engine.sessions import cli as sessions_cli
    from engine.skills import cli as skills_cli

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
    memory_cli.register(sub, common)
    sessions_cli.register(sub, common)
    skills_cli.register(sub, common)
    chat_cli.register(sub, common)
    migrate_cli.register(sub, common)
    profiles_cli.register(sub, common)
    cron_cli.register(sub, common)
    journey_cli.register(sub, common)
    return parser


def _gui(args: argparse.Namespace) -> int:
    from app.__main__ import run  # deferred: the CLI must work where Qt cannot load

    return run(args.home_path)


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


def _open_window(args: argparse.Namespace) -> int:
    try:
        args.home_path = resolve_home(getattr(args, "home", None), getattr(args, "profile", None))
        return _gui(args)
    except HomeError as exc:
        payload = {"ok": False, "error": "config", "message": str(exc)}
        return _fail(payload, bool(getattr(args, "json", False)))
    except KeyboardInterrupt:
        return 130


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    window = _gui_only(argv)
    if window is not None:
        return _open_window(window)

    from engine.config import ConfigError, load_config
    from engine.memory.errors import MemoryToolError
    from engine.memory.service import MemoryService

    parser = build_parser()
    args = parser.parse_args(argv)
    for name, default in (("home", None), ("profile", None), ("json", False)):
        if not hasattr(args, name):
            setattr(args, name, default)
    if not hasattr(args, "handler"):
        args.handler = _gui
    try:
        home = resolve_home(args.home, args.profile)
        args.home_path = home
        args.service_factory = lambda: MemoryService(home, load_config(home))
        return int(args.handler(args) or 0)
    except (MemoryToolError, ConfigError, HomeError) as exc:
        if isinstance(exc, MemoryToolError):
            payload = exc.to_dict()
        else:
            payload = {"ok": False, "error": "config", "message": str(exc)}
        return _fail(payload, args.json)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
