"""``cairn skills …``: list, inspect and change skills from a terminal or a script.

Every command takes ``--json``. A refused operation exits 1 with the reason (nothing changed),
a usage error 2. Changes made here are the user's own: they apply at once (write approval gates
the agent, not the person at the keyboard) and are checked by the guard at trust ``trusted``.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engine.cli_output import emit as _emit
from engine.config import load_config
from engine.fsutil import decode_utf8
from engine.home import Home
from engine.skills.guard import TRUST_LEVELS, TrustBook, judge, scan_skill_text
from engine.skills.manage import SkillManager
from engine.skills.store import SkillError, find_skill, list_files, load_catalog, read_document
from engine.skills.store import read_file as read_skill_file
from engine.skills.usage import UsageBook

Handler = Callable[[argparse.Namespace], int]


def register(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    skills = sub.add_parser("skills", parents=[common], help="skills (saved procedures)")
    cmds = skills.add_subparsers(dest="skills_command", required=True, metavar="COMMAND")

    def command(name: str, handler: Handler, help_text: str) -> argparse.ArgumentParser:
        parser = cmds.add_parser(name, parents=[common], help=help_text)
        parser.set_defaults(handler=_guarded(handler))
        return parser

    command("list", cmd_list, "every skill, with trust, uses and load problems")
    show = command("show", cmd_show, "a skill's SKILL.md (or FILE), with what the guard found")
    show.add_argument("name")
    show.add_argument("file", nargs="?")
    create = command("create", cmd_create, "create a skill")
    create.add_argument("name")
    create.add_argument("--description", "-d", required=True, help="one line: when to use it")
    body = create.add_mutually_exclusive_group(required=True)
    body.add_argument("--body", "-b", help="the instructions, in Markdown")
    body.add_argument("--body-file", help="Markdown instructions from a file ('-' = stdin)")
    create.add_argument("--category", help="folder to group it in")
    patch = command("patch", cmd_patch, "replace one unique piece of text (or all with --all)")
    patch.add_argument("name")
    patch.add_argument("--find", required=True)
    patch.add_argument("--replace", required=True)
    patch.add_argument("--file", help="a supporting file instead of SKILL.md")
    patch.add_argument(
        "--all", dest="replace_all", action="store_true", help="replace every occurrence"
    )
    delete = command("delete", cmd_delete, "delete a skill (kept in skills/.trash)")
    delete.add_argument("name")
    delete.add_argument("--absorbed-into", metavar="SKILL", help="the skill it was merged into")
    pending = command("pending", cmd_pending, "list staged skill writes, or approve/reject one")
    pending.add_argument("verb", nargs="?", choices=["approve", "reject"])
    pending.add_argument("id", nargs="?", help="pending id, or 'all'")
    trust = command("trust", cmd_trust, "show or set a skill's trust level")
    trust.add_argument("name")
    trust.add_argument("level", nargs="?", choices=list(TRUST_LEVELS))


def _guarded(handler: Handler) -> Handler:
    @functools.wraps(handler)
    def run(args: argparse.Namespace) -> int:
        try:
            return handler(args)
        except (SkillError, OSError) as exc:
            if isinstance(exc, OSError):
                exc = SkillError("io", f"{exc.filename or 'skills'}: {exc.strerror or exc}")
            payload = exc.to_dict()
            if args.json:
                print(json.dumps(payload, ensure_ascii=False, indent=2, default=str))
            else:
                print(f"cairn: {exc.message}", file=sys.stderr)
            return 1

    return run


def _home(args: argparse.Namespace) -> Home:
    home: Home = args.home_path
    return home


def _manager(args: argparse.Namespace) -> SkillManager:
    home = _home(args)
    return SkillManager(home, load_config(home), author="user")


def _result_text(result: dict[str, Any]) -> str:
    text = str(result["message"])
    for warning in result.get("warnings") or []:
        text += f"\nwarning: {warning}"
    return text


def cmd_list(args: argparse.Namespace) -> int:
    home = _home(args)
    catalog = load_catalog(home)
    levels = TrustBook(home.skills_dir).levels()
    counts = UsageBook(home.skills_dir).counts()
    rows: list[dict[str, Any]] = []
    for skill in catalog.skills:
        use = counts.get(skill.name)
        rows.append(
            {
                "name": skill.name,
                "category": skill.category,
                "ref": skill.ref,
                "description": skill.meta.description,
                "version": skill.meta.version,
                "tags": skill.meta.tags,
                "trust": levels.get(skill.name, TrustBook.DEFAULT),
                "uses": use.uses if use else 0,
                "last_used": use.last_used if use else None,
                "path": str(skill.folder),
            }
        )
    problems = [p.model_dump() for p in catalog.problems]
    width = max((len(r["ref"]) for r in rows), default=4)
    lines = [
        f"{r['ref']:<{width}}  {r['trust']:<13} {r['uses']:>4}  {r['description'].splitlines()[0]}"
        for r in rows
    ] or ["no skills"]
    for p in catalog.problems:
        where = f"{p.path} line {p.line}" if p.line else p.path
        lines.append(f"problem: {where}: {p.message}")
    _emit(args, {"ok": True, "skills": rows, "problems": problems}, "\n".join(lines))
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    home = _home(args)
    skill = find_skill(home, args.name)
    level = TrustBook(home.skills_dir).level(skill.name)
    if args.file and args.file != "SKILL.md":
        rel, data = read_skill_file(skill, args.file)
        file = str(rel)
        try:
            text = decode_utf8(data)
        except UnicodeDecodeError:
            payload = {"ok": True, "name": skill.ref, "file": file, "binary": True}
            _emit(args, {**payload, "size": len(data)}, f"{file}: binary, {len(data):,} bytes")
            return 0
    else:
        file, text = "SKILL.md", read_document(skill).text
    verdict = judge(scan_skill_text(text, file), level, "load")
    payload = {
        "ok": True,
        "name": skill.ref,
        "file": file,
        "trust": level,
        "content": text,
        "withheld": verdict.blocked,
        "findings": [f.model_dump() for f in verdict.blocking + verdict.warnings],
        "files": [{"path": p, "bytes": n} for p, n in list_files(skill)],
    }
    lines = [text.rstrip("\n"), "", f"trust: {level}"]
    if file == "SKILL.md":
        lines += [f"file: {p} ({n:,} bytes)" for p, n in list_files(skill)]
    if verdict.blocked:
        lines.append("WITHHELD from the agent at this trust level:")
    for f in verdict.blocking:
        lines.append(f"  blocks: {f.describe()}")
    for f in verdict.warnings:
        lines.append(f"  warns:  {f.describe()}")
    _emit(args, payload, "\n".join(lines))
    return 0


def _read_body(source: str | None) -> str | None:
    if source is None:
        return None
    name = "stdin" if source == "-" else source
    try:
        data = sys.stdin.buffer.read() if source == "-" else Path(source).read_bytes()
        return decode_utf8(data)
    except UnicodeDecodeError as exc:
        raise SkillError("invalid", f"{name} is not valid UTF-8 (offset {exc.start})") from None
    except OSError as exc:
        raise SkillError("invalid", f"cannot read {name}: {exc.strerror}") from None


def cmd_create(args: argparse.Namespace) -> int:
    request = {
        "action": "create",
        "name": args.name,
        "description": args.description,
        "body": args.body if args.body is not None else _read_body(args.body_file),
        "category": args.category,
    }
    result = _manager(args).run(request)
    _emit(args, result, _result_text(result))
    return 0


def cmd_patch(args: argparse.Namespace) -> int:
    request = {
        "action": "patch",
        "name": args.name,
        "find": args.find,
        "replace": args.replace,
        "file": args.file,
        "replace_all": args.replace_all,
    }
    result = _manager(args).run(request)
    _emit(args, result, _result_text(result))
    return 0


def cmd_delete(args: argparse.Namespace) -> int:
    result = _manager(args).run(
        {"action": "delete", "name": args.name, "absorbed_into": args.absorbed_into}
    )
    _emit(args, result, _result_text(result))
    return 0


def cmd_pending(args: argparse.Namespace) -> int:
    manager = _manager(args)
    if args.verb is None:
        if args.id is not None:
            raise SkillError("invalid", "say what to do: pending approve ID or pending reject ID")
        records = manager.pending()
        lines = [
            f"{r.id}  {r.when()}  {r.origin:<17} {r.summary}"
            + "".join(f"\n          warning: {w}" for w in r.payload.get("warnings") or [])
            for r in records
        ]
        _emit(
            args,
            {"ok": True, "pending": [r.model_dump() for r in records]},
            "\n".join(lines) or "no pending skill writes",
        )
        return 0
    if args.id is None:
        raise SkillError("invalid", f"pending {args.verb} needs an id (or 'all')")
    approve = args.verb == "approve"
    if args.id != "all":
        result = manager.approve(args.id) if approve else manager.reject(args.id)
        _emit(args, result, _result_text(result))
        return 0
    outcomes = manager.settle_all(approve)
    failed = [o for o in outcomes if not o.get("ok")]
    lines = [("ok: " if o.get("ok") else "failed: ") + o["message"] for o in outcomes]
    _emit(args, {"ok": not failed, "results": outcomes}, "\n".join(lines) or "nothing pending")
    return 1 if failed else 0


def cmd_trust(args: argparse.Namespace) -> int:
    home = _home(args)
    skill = find_skill(home, args.name)
    book = TrustBook(home.skills_dir)
    if args.level is not None:
        book.set(skill.name, args.level)
    level = book.level(skill.name)
    _emit(
        args,
        {"ok": True, "name": skill.ref, "trust": level},
        f"{skill.ref}: trust {level}",
    )
    return 0
