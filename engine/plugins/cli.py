"""``cairn memory setup | status | off``: choosing the external memory provider.

Built-in memory is unaffected by all three; ``off`` keeps the provider's data (the fact store
file stays where it is) so ``setup`` can bring it back.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from engine.cli_output import emit as _emit
from engine.home import Home


def register(cmds: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Add the provider commands to ``cairn memory``'s subcommands."""
    setup = cmds.add_parser(
        "setup",
        parents=[common],
        help="list external memory providers, or turn one on (e.g. holographic)",
    )
    setup.add_argument("name", nargs="?", help="the provider to use; omitted: list them")
    setup.set_defaults(handler=cmd_setup)
    cmds.add_parser(
        "status", parents=[common], help="the external memory provider in use"
    ).set_defaults(handler=cmd_status)
    cmds.add_parser(
        "off", parents=[common], help="stop using the external memory provider"
    ).set_defaults(handler=cmd_off)


def _failed(args: argparse.Namespace, message: str) -> int:
    if args.json:
        print(json.dumps({"ok": False, "error": "provider", "message": message}, indent=2))
    else:
        print(f"cairn: {message}", file=sys.stderr)
    return 1


def _listing(active: str | None) -> tuple[list[dict[str, Any]], list[str]]:
    from engine.plugins.manager import available_providers

    rows, lines = [], []
    for info in available_providers().values():
        mark = "*" if info.name == active else " "
        source = info.origin if info.distribution is None else f"{info.distribution}"
        rows.append({**info.model_dump(), "active": info.name == active})
        lines.append(f"{mark} {info.name:<16} {source}")
    return rows, lines


def cmd_setup(args: argparse.Namespace) -> int:
    from engine.config import load_config, update_config
    from engine.plugins.manager import ProviderLoadError, load_provider

    home: Home = args.home_path
    config = load_config(home)
    if args.name is None:
        rows, lines = _listing(config.memory.provider)
        lines.append("")
        lines.append("turn one on with: cairn memory setup NAME")
        _emit(args, {"ok": True, "providers": rows}, "\n".join(lines))
        return 0
    try:
        provider = load_provider(args.name, home, config)
    except ProviderLoadError as exc:
        return _failed(args, str(exc))
    try:
        done = provider.setup()
    except Exception as exc:
        return _failed(args, f"{args.name} could not be set up: {exc}")
    finally:
        provider.shutdown()
    update_config(home, {"memory": {"provider": args.name}})
    _emit(
        args,
        {"ok": True, "provider": args.name, "setup": done},
        f"memory provider: {args.name} ({done}); built-in memory stays on. "
        "It takes effect in the next session.",
    )
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from engine.config import load_config
    from engine.plugins.manager import ProviderLoadError, load_provider

    home: Home = args.home_path
    config = load_config(home)
    name = config.memory.provider
    if not name:
        _emit(
            args,
            {"ok": True, "provider": None},
            "memory provider: none (built-in memory only); see cairn memory setup",
        )
        return 0
    try:
        provider = load_provider(name, home, config)
    except ProviderLoadError as exc:
        _emit(
            args,
            {"ok": False, "provider": name, "error": "provider", "message": str(exc)},
            f"memory provider: {name} (NOT WORKING: {exc})",
        )
        return 1
    try:
        status = provider.status()
    finally:
        provider.shutdown()
    details = "\n".join(f"  {key}: {value}" for key, value in status.items())
    _emit(
        args,
        {"ok": True, "provider": name, "status": status},
        f"memory provider: {name} (with built-in memory)" + (f"\n{details}" if details else ""),
    )
    return 0


def cmd_off(args: argparse.Namespace) -> int:
    from engine.config import load_config, update_config

    home: Home = args.home_path
    previous = load_config(home).memory.provider
    update_config(home, {"memory": {"provider": None}})
    text = (
        f"memory provider {previous} is off (its data is kept); built-in memory stays on"
        if previous
        else "no memory provider was on"
    )
    _emit(args, {"ok": True, "provider": None, "previous": previous}, text)
    return 0
