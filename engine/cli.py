"""``cairn``: the command line. Subcommands share ``--home``, ``--profile`` and ``--json``."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from engine import __version__, chat_cli, cron_cli, journey_cli, profiles_cli
from engine.config import ConfigError, load_config
from engine.home import HomeError, resolve_home
from engine.memory import cli as memory_cli
from engine.memory.errors import MemoryToolError
from engine.memory.service import MemoryService
from engine.migrate import cli as migrate_cli
from engine.sessions import cli as sessions_cli
from engine.skills import cli as skills_cli


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


def main(argv: Sequence[str] | None = None) -> int:
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
        if args.json:
            print(json.dumps(payload, ensure_ascii=False, indent=2, default=str))
        else:
            print(f"cairn: {payload['message']}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
