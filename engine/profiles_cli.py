"""``cairn profile …``: list, create, choose, show and delete profiles.

Profiles belong to the root home (``--home`` > ``CAIRN_HOME`` > ``~/.cairn``); these commands
manage the root's profiles whichever profile is active. ``default`` is the root itself. Every
command takes ``--json``; a refused operation exits 1 with the reason.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from collections.abc import Callable

from engine.cli_output import emit as _emit
from engine.home import ROOT_PROFILE, resolve_root
from engine.profiles import CloneMode, ProfileError, ProfileInfo, Profiles


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    profile = sub.add_parser(
        "profile", parents=[common], help="separate homes: list, create, use, show, delete"
    )
    cmds = profile.add_subparsers(dest="profile_command", required=True, metavar="COMMAND")

    def command(name: str, help_text: str) -> argparse.ArgumentParser:
        parser = cmds.add_parser(name, parents=[common], help=help_text)
        parser.set_defaults(handler=_guarded(globals()[f"cmd_{name}"]))
        return parser

    command("list", "every profile, the active one marked")
    show = command("show", "one profile's folder and what it holds (default: the active one)")
    show.add_argument("name", nargs="?", help="profile name ('default' = the root home)")
    create = command("create", "create an empty profile, or a copy of one")
    create.add_argument("name")
    how = create.add_mutually_exclusive_group()
    how.add_argument(
        "--clone",
        action="store_const",
        dest="clone",
        const="config",
        help="copy config.yaml and SOUL.md (model settings and persona, no knowledge)",
    )
    how.add_argument(
        "--clone-all",
        action="store_const",
        dest="clone",
        const="all",
        help="copy everything: memories, sessions, skills, pending writes, fact store",
    )
    create.add_argument("--from", dest="source", help="profile to copy (default: the active one)")
    create.add_argument("--use", action="store_true", help="make it the active profile")
    create.set_defaults(clone="none")
    command("use", "make a profile the one commands use ('default' = the root)").add_argument(
        "name"
    )
    delete = command("delete", "delete a profile and everything in it")
    delete.add_argument("name")
    delete.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")


# -- plumbing ------------------------------------------------------------------------------


def _guarded(handler: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    @functools.wraps(handler)
    def run(args: argparse.Namespace) -> int:
        try:
            return handler(args)
        except ProfileError as exc:
            if args.json:
                payload = {"ok": False, "error": exc.code, "message": exc.message}
                print(json.dumps(payload, ensure_ascii=False, indent=2))
            else:
                print(f"cairn: {exc.message}", file=sys.stderr)
            return 1

    return run


def _profiles(args: argparse.Namespace) -> Profiles:
    return Profiles(resolve_root(args.home))


def _line(info: ProfileInfo) -> str:
    mark = "*" if info.active else " "
    if not info.exists:
        return f"{mark} {info.name:<16} (no folder yet) {info.path}"
    sessions = "-" if info.sessions is None else str(info.sessions)
    return (
        f"{mark} {info.name:<16} model {info.model or '-'} · memory {info.memory_chars} chars · "
        f"user {info.user_chars} chars · {sessions} sessions · {info.skills} skills · "
        f"{info.pending} pending · {info.cron_jobs} cron jobs"
    )


# -- commands ------------------------------------------------------------------------------


def cmd_list(args: argparse.Namespace) -> int:
    infos = _profiles(args).list()
    _emit(
        args,
        {"ok": True, "profiles": [i.model_dump() for i in infos]},
        "\n".join(_line(i) for i in infos),
    )
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    profiles = _profiles(args)
    name = args.name or args.profile or profiles.active()
    info = profiles.info(name)
    lines = [
        f"profile  {info.name}{' (active)' if info.active else ''}",
        f"folder   {info.path}{'' if info.exists else ' (does not exist yet)'}",
    ]
    if info.exists:
        lines += [
            f"model    {info.model or '-'}",
            f"memory   {info.memory_chars} chars (MEMORY.md), {info.user_chars} chars (USER.md)",
            f"sessions {'-' if info.sessions is None else info.sessions}",
            f"skills   {info.skills}",
            f"pending  {info.pending}",
            f"cron     {info.cron_jobs} jobs",
        ]
        lines += [f"problem  {p}" for p in info.problems]
    _emit(args, {"ok": True, **info.model_dump()}, "\n".join(lines))
    return 0


def cmd_create(args: argparse.Namespace) -> int:
    profiles = _profiles(args)
    mode: CloneMode = args.clone
    report = profiles.create(args.name, clone=mode, source=args.source)
    if args.use:
        profiles.use(args.name)
    what = {
        "none": "empty",
        "config": f"with config and persona of {report.source!r}",
        "all": f"as a full copy of {report.source!r} ({len(report.copied)} files)",
    }[mode]
    lines = [f"created profile {report.name!r} {what} at {report.path}"]
    lines += [f"  skipped: {s}" for s in report.skipped]
    lines += [f"  note: {w}" for w in report.warnings]
    if args.use:
        lines.append(f"now using {report.name!r}")
    else:
        lines.append(
            f"use it with `cairn --profile {report.name} …` or `cairn profile use {report.name}`"
        )
    _emit(args, {"ok": True, "active": args.use, **report.model_dump()}, "\n".join(lines))
    return 0


def cmd_use(args: argparse.Namespace) -> int:
    profiles = _profiles(args)
    profiles.use(args.name)
    info = profiles.info(args.name)
    where = "the root home" if args.name == ROOT_PROFILE else info.path
    _emit(
        args, {"ok": True, "active": args.name, "path": info.path}, f"using {args.name!r} ({where})"
    )
    return 0


def cmd_delete(args: argparse.Namespace) -> int:
    profiles = _profiles(args)
    if not args.yes:
        if not sys.stdin.isatty():
            raise ProfileError(
                "confirm", f"deleting profile {args.name!r} needs --yes when not interactive"
            )
        info = profiles.info(args.name)
        if not info.exists:
            raise ProfileError("not_found", f"no profile {args.name!r}")
        sessions = "?" if info.sessions is None else info.sessions
        print(
            f"Delete profile {args.name!r} at {info.path}: {sessions} sessions, "
            f"{info.memory_chars + info.user_chars} chars of memory, {info.skills} skills? "
            "This cannot be undone.",
            file=sys.stderr,
        )
        try:
            answer = input(f"Type {args.name} to confirm: ")
        except EOFError:
            answer = ""
        if answer.strip() != args.name:
            raise ProfileError("cancelled", "nothing deleted")
    path = profiles.delete(args.name)
    _emit(args, {"ok": True, "deleted": args.name, "path": path}, f"deleted {args.name!r} ({path})")
    return 0
