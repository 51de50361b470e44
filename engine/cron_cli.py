"""``cairn cron …``: scheduled prompts.

``tick`` runs whatever is due and exits, for a system scheduler, e.g. a crontab line
``* * * * * cairn cron tick --all-profiles``; the desktop app runs its own scheduler while it is
open, and the run lock keeps the two from running one job twice at once. Every command takes
``--json``; a refused operation exits 1, a run that failed exits 1 too.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from collections.abc import Callable
from datetime import datetime
from typing import Any

from engine import cron
from engine.home import Home, resolve_root
from engine.profiles import Profiles


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    group = sub.add_parser("cron", parents=[common], help="scheduled prompts (cron jobs)")
    cmds = group.add_subparsers(dest="cron_command", required=True, metavar="COMMAND")

    def command(name: str, help_text: str) -> argparse.ArgumentParser:
        parser = cmds.add_parser(name, parents=[common], help=help_text)
        parser.set_defaults(handler=_guarded(globals()[f"cmd_{name}"]))
        return parser

    add = command("add", "add a job")
    add.add_argument("name", help="job name: lowercase letters, digits, '_' or '-'")
    add.add_argument(
        "--schedule",
        required=True,
        help="a cron expression ('*/30 * * * *', '0 9 * * mon-fri', '@daily') or 'every 30m'",
    )
    add.add_argument("--prompt", required=True, help="what to ask each run ('-' = read stdin)")
    add.add_argument(
        "--continuity",
        action="store_true",
        help="give each run the previous run's reply so it reports only what is new",
    )
    add.add_argument(
        "--continuity-chars",
        type=int,
        default=cron.CONTINUITY_CHARS,
        help=f"characters of the previous reply kept (default {cron.CONTINUITY_CHARS})",
    )
    add.add_argument(
        "--keep",
        type=int,
        default=cron.KEEP_OUTPUTS,
        help=f"output files kept per job (default {cron.KEEP_OUTPUTS})",
    )
    command("list", "jobs, their schedule, last and next run")
    command("run", "run a job now (whether due or not)").add_argument("name")
    remove = command("remove", "remove a job (its output files stay)")
    remove.add_argument("name")
    remove.add_argument("--purge", action="store_true", help="delete its output files too")
    command("enable", "let the schedulers run a job again").add_argument("name")
    command("disable", "keep a job but stop scheduling it").add_argument("name")
    tick = command("tick", "run every due job once, then exit (for system cron or a timer)")
    tick.add_argument(
        "--all-profiles",
        action="store_true",
        help="tick the root home and every profile, each with its own jobs",
    )


# -- plumbing ------------------------------------------------------------------------------


def _print(args: argparse.Namespace, payload: Any, text: str) -> None:
    if args.json:
        print(json.dumps(payload, ensure_ascii=False, indent=2, default=str))
    elif text:
        print(text)


def _guarded(handler: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    @functools.wraps(handler)
    def run(args: argparse.Namespace) -> int:
        try:
            return handler(args)
        except cron.CronError as exc:
            if args.json:
                payload = {"ok": False, "error": exc.code, "message": exc.message}
                print(json.dumps(payload, ensure_ascii=False, indent=2))
            else:
                print(f"cairn: {exc.message}", file=sys.stderr)
            return 2 if exc.code == "invalid" else 1

    return run


def _when(ts: float | None) -> str:
    if ts is None:
        return "-"
    return datetime.fromtimestamp(ts).astimezone().isoformat(sep=" ", timespec="minutes")


def _result_payload(result: cron.RunResult) -> dict[str, Any]:
    return {"ok": result.status in ("ok", "not_due"), **result.model_dump()}


# -- commands ------------------------------------------------------------------------------


def cmd_add(args: argparse.Namespace) -> int:
    prompt = sys.stdin.read() if args.prompt == "-" else args.prompt
    home: Home = args.home_path
    job = cron.add_job(
        home,
        args.name,
        args.schedule,
        prompt,
        continuity=args.continuity,
        continuity_chars=args.continuity_chars,
        keep_outputs=args.keep,
    )
    upcoming = cron.next_run_at(job, cron.JobState())
    _print(
        args,
        {"ok": True, "job": job.model_dump(mode="json"), "next_run_at": upcoming},
        f"added {job.name!r} ({job.schedule}); first run {_when(upcoming)}",
    )
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    views, broken = cron.list_jobs(args.home_path)
    payload = {
        "ok": not broken,
        "jobs": [
            {
                **v.job.model_dump(mode="json"),
                "state": v.state.model_dump(),
                "next_run_at": v.next_run_at,
                "running_pid": v.running_pid,
            }
            for v in views
        ],
        "invalid": [b.model_dump() for b in broken],
    }
    lines = []
    for v in views:
        flags = []
        if v.job.continuity:
            flags.append("continuity")
        if not v.job.enabled:
            flags.append("disabled")
        if v.running_pid is not None:
            flags.append(f"running (pid {v.running_pid})")
        status = v.state.last_status or "never run"
        lines.append(
            f"{v.job.name:<20} {v.job.schedule:<18} last {_when(v.state.last_run_at)} "
            f"({status}) · next {_when(v.next_run_at)}"
            + (f" · {', '.join(flags)}" if flags else "")
        )
    lines += [f"invalid entry {b.index + 1} ({b.name or 'unnamed'}): {b.error}" for b in broken]
    _print(args, payload, "\n".join(lines) or "no cron jobs")
    return 0 if not broken else 1


def cmd_run(args: argparse.Namespace) -> int:
    result = cron.run_job(args.home_path, args.name, trigger="manual")
    if result.status == "missing":
        raise cron.CronError("not_found", result.error or f"no cron job named {args.name!r}")
    if result.status == "busy":
        raise cron.CronError("busy", f"job {args.name!r} is already running")
    if args.json:
        _print(args, _result_payload(result), "")
    else:
        print(result.reply)
        if result.error:
            print(f"cairn: {args.name}: {result.error}", file=sys.stderr)
        print(f"(output: {result.output})", file=sys.stderr)
    return 0 if result.status == "ok" else 1


def cmd_remove(args: argparse.Namespace) -> int:
    cron.remove_job(args.home_path, args.name, purge_output=args.purge)
    _print(args, {"ok": True, "removed": args.name}, f"removed {args.name!r}")
    return 0


def cmd_enable(args: argparse.Namespace) -> int:
    job = cron.set_enabled(args.home_path, args.name, True)
    _print(args, {"ok": True, "job": job.model_dump(mode="json")}, f"{job.name!r} enabled")
    return 0


def cmd_disable(args: argparse.Namespace) -> int:
    job = cron.set_enabled(args.home_path, args.name, False)
    _print(args, {"ok": True, "job": job.model_dump(mode="json")}, f"{job.name!r} disabled")
    return 0


def cmd_tick(args: argparse.Namespace) -> int:
    if args.all_profiles:
        root = resolve_root(args.home)
        profiles = Profiles(root)
        homes = [root, *(profiles.home(n) for n in profiles.names())]
    else:
        homes = [args.home_path]
    reports = [cron.tick(home) for home in homes]
    lines = []
    for report in reports:
        for result in report.runs:
            detail = f": {result.error}" if result.error and result.status != "not_due" else ""
            lines.append(f"{report.home} {result.job}: {result.status}{detail}")
        lines += [f"{report.home}: {p}" for p in report.problems]
        if report.indexed:
            lines.append(f"{report.home}: indexed {report.indexed:,} imported messages for search")
    ok = all(r.ok for r in reports)
    _print(
        args,
        {"ok": ok, "homes": [r.model_dump() for r in reports]},
        "\n".join(lines),
    )
    return 0 if ok else 1
