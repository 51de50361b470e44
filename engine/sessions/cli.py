"""``cairn sessions …``: stored sessions from a terminal or a script.

Every command takes ``--json``. A refused operation (unknown session, a damaged database, a
delete without confirmation) exits 1 with the reason, a usage error 2. ``list``, ``show``,
``search`` and ``export`` also take ``--readonly``: the database is opened with SQLite's
``mode=ro`` and nothing on disk changes, which suits another profile's or a backup's database.
A session id may be abbreviated to any unique prefix.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import IO, Any

from sqlalchemy.exc import SQLAlchemyError

from engine.cli_output import emit as _emit
from engine.config import ConfigError, load_config
from engine.db import DatabaseError
from engine.errors import CairnError
from engine.sessions import hermes, maintenance
from engine.sessions.search import SearchError, SessionSearch
from engine.sessions.store import (
    ROLES,
    Message,
    SessionInfo,
    SessionStore,
    SessionStoreError,
)
from engine.sessions.transfer import (
    DEFAULT_BATCH_SIZE,
    ImportReport,
    bounded_lines,
    import_sessions,
)
from engine.sessions.transfer import export_sessions as write_export

PREVIEW_CHARS = 200  # of a message's text, in search results on a terminal


class Refused(CairnError):
    """A refused sessions command; ``code`` is machine-readable."""


class UsageError(Exception):
    pass


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    sessions = sub.add_parser("sessions", parents=[common], help="stored sessions and their search")
    cmds = sessions.add_subparsers(dest="sessions_command", required=True, metavar="COMMAND")

    def command(name: str, help_text: str, readonly: bool = False) -> argparse.ArgumentParser:
        parser = cmds.add_parser(name, parents=[common], help=help_text)
        parser.set_defaults(handler=_guarded(globals()[f"cmd_{name}"]), readonly=False)
        if readonly:
            parser.add_argument(
                "--readonly",
                action="store_true",
                help="open the database read-only (nothing on disk changes)",
            )
        return parser

    listing = command("list", "recent sessions, newest first", readonly=True)
    listing.add_argument("--limit", "-n", type=int, default=20)
    listing.add_argument("--offset", type=int, default=0)
    listing.add_argument("--source", help="only sessions from this source (cli, gui, cron, ...)")

    command("show", "a session's header, lineage and every message", readonly=True).add_argument(
        "id", help="session id (or a unique prefix)"
    )

    delete = command("delete", "delete a session and its messages")
    delete.add_argument("id", help="session id (or a unique prefix)")
    delete.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")

    search = command("search", "search past sessions (session_search)", readonly=True)
    search.add_argument("query", nargs="?", default="", help="what to look for (discover)")
    search.add_argument(
        "--mode", choices=["discover", "scroll", "read", "browse"], default="discover"
    )
    search.add_argument("--limit", "-n", type=int, help="results (discover) or sessions (browse)")
    search.add_argument("--role", action="append", choices=ROLES, help="repeatable")
    search.add_argument("--source", action="append", help="repeatable (browse: one)")
    search.add_argument("--since", help="ISO 8601 date/time or unix seconds")
    search.add_argument("--until", help="ISO 8601 date/time or unix seconds")
    search.add_argument("--order", choices=["relevance", "newest", "oldest"], default="relevance")
    search.add_argument("--session", help="session id for scroll and read")
    search.add_argument("--anchor", type=int, help="message id to scroll from")
    search.add_argument("--direction", choices=["around", "forward", "backward"], default="around")
    search.add_argument("--window", type=int, help="messages on each side (discover, scroll)")
    search.add_argument(
        "--semantic",
        action="store_true",
        help="rank questions by meaning as well (sessions.semantic in config.yaml; the extra)",
    )

    embed = command("embed", "embed stored messages for semantic search (the semantic extra)")
    embed.add_argument(
        "--limit", "-n", type=int, help="embed at most this many, newest first (default: all)"
    )
    embed.add_argument(
        "--again",
        action="store_true",
        help="embed every message anew, replacing its vectors (after an upgrade of how)",
    )

    importing = command("import", "import sessions from a JSONL file or a Hermes Agent home")
    importing.add_argument("file", nargs="?", help="JSONL file, one session a line ('-' = stdin)")
    importing.add_argument(
        "--from-hermes",
        action="store_true",
        help="copy the sessions of the Hermes Agent state.db in this home (read-only there)",
    )
    importing.add_argument(
        "--batch-size", type=int, default=DEFAULT_BATCH_SIZE, help="sessions per transaction"
    )

    export = command("export", "export sessions as JSONL", readonly=True)
    export.add_argument("--out", "-o", help="file to write (default: stdout)")
    export.add_argument("--session", action="append", help="export only this session (repeatable)")

    reindex = command("reindex", "rebuild the full-text indexes, or check the database")
    reindex.add_argument(
        "--check", action="store_true", help="only check (exit 1 if something is wrong)"
    )
    reindex.add_argument("--quick", action="store_true", help="with --check: quick_check only")
    reindex.add_argument(
        "--catch-up",
        action="store_true",
        help="only index what a large import left to the substring and phrase indexes",
    )


# -- plumbing ------------------------------------------------------------------------------------


def _fail(args: argparse.Namespace, code: str, message: str) -> None:
    if args.json:
        payload = {"ok": False, "error": code, "message": message}
        print(json.dumps(payload, ensure_ascii=False, indent=2))
    else:
        print(f"cairn: {message}", file=sys.stderr)


def _guarded(handler: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """Turn every expected failure into a message and an exit status."""

    @functools.wraps(handler)
    def run(args: argparse.Namespace) -> int:
        try:
            return handler(args)
        except BrokenPipeError:
            # The reader went away (`cairn sessions show X | head`): stop quietly.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            return 1
        except UsageError as exc:
            _fail(args, "usage", str(exc))
            return 2
        except CairnError as exc:  # Refused, and the store's own (SessionNotFound)
            _fail(args, exc.code, exc.message)
            return 1
        except maintenance.CorruptDatabaseError as exc:
            _fail(args, "corrupt_database", str(exc))
            return 1
        except DatabaseError as exc:
            _fail(args, "database", str(exc))
            return 1
        except SearchError as exc:
            _fail(args, "invalid", str(exc))
            return 1
        except SessionStoreError as exc:
            _fail(args, "refused", str(exc))
            return 1
        except SQLAlchemyError as exc:
            detail = str(getattr(exc, "orig", None) or exc).splitlines()[0]
            if maintenance.is_corruption(exc):
                _fail(
                    args,
                    "corrupt_database",
                    f"the session database is damaged ({detail}). Run `cairn sessions reindex "
                    "--check`; if it fails, move the database aside and import an export, or "
                    "restore a backup.",
                )
            else:
                _fail(args, "database", f"the session database failed: {detail}")
            return 1

    return run


def _store(args: argparse.Namespace) -> SessionStore:
    return maintenance.open_store(args.home_path, readonly=bool(getattr(args, "readonly", False)))


def _resolve(store: SessionStore, given: str) -> SessionInfo:
    """The session ``given`` names, exactly or by a unique prefix."""
    return store.resolve(given)


def _when(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    try:
        return datetime.fromtimestamp(seconds).strftime("%Y-%m-%d %H:%M:%S")
    except (OverflowError, OSError, ValueError):
        return str(seconds)


def _one_line(text: str, limit: int = PREVIEW_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _session_line(info: SessionInfo | dict[str, Any]) -> str:
    data = info.model_dump() if isinstance(info, SessionInfo) else info
    sid = data.get("id") or data.get("session_id")
    return (
        f"{sid}  {_when(data['started_at'])}  {data['source']:<9} "
        f"{data['message_count']:>6} msgs  {data.get('title') or '(untitled)'}"
    )


def _message_block(message: dict[str, Any], marker: str = " ", full: bool = True) -> str:
    role = message["role"]
    if message.get("tool_name"):
        role += f" ({message['tool_name']})"
    head = f"{marker}[#{message['id']}] {_when(message['timestamp'])}  {role}"
    body = message.get("content") or ""
    if message.get("tool_calls"):
        calls = json.dumps(message["tool_calls"], ensure_ascii=False)
        body += ("\n" if body else "") + f"tool calls: {calls}"
    if not full:
        return f"{head}: {_one_line(body)}"
    indented = "\n".join("    " + line for line in body.splitlines()) if body else "    (empty)"
    return f"{head}\n{indented}"


def _msg_dict(message: Message) -> dict[str, Any]:
    return message.model_dump()


class _Progress:
    """A one-line text bar on stderr, drawn only when stderr is a terminal."""

    def __init__(self, total_bytes: int | None, label: str) -> None:
        self.enabled = sys.stderr.isatty()
        self.total = total_bytes
        self.label = label
        self.done_bytes = 0

    def draw(self, messages: int) -> None:
        if not self.enabled:
            return
        if self.total:
            share = min(1.0, self.done_bytes / self.total)
            filled = int(share * 30)
            bar = f"[{'#' * filled}{'.' * (30 - filled)}] {share:4.0%}"
        else:
            bar = f"{self.done_bytes / 1e6:,.1f} MB read"
        sys.stderr.write(f"\r{self.label} {bar}  {messages:,} messages")
        sys.stderr.flush()

    def say(self, text: str) -> None:
        """A progress line of the caller's own, in place of the last."""
        if self.enabled:
            sys.stderr.write(f"\r{self.label}: {text}")
            sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\n")
            sys.stderr.flush()

    def count(self, lines: Iterable[bytes]) -> Iterator[bytes]:
        for line in lines:
            self.done_bytes += len(line)
            yield line


# -- commands ------------------------------------------------------------------------------------


def cmd_list(args: argparse.Namespace) -> int:
    store = _store(args)
    sessions = store.list_sessions(
        limit=max(1, args.limit), offset=max(0, args.offset), source=args.source
    )
    hint = _hermes_hint(args, store)
    payload: dict[str, Any] = {"ok": True, "sessions": [s.model_dump() for s in sessions]}
    if hint:
        payload["hint"] = hint
    text = "\n".join(_session_line(s) for s in sessions) or "no sessions"
    _emit(args, payload, text + (f"\n{hint}" if hint else ""))
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    store = _store(args)
    info = _resolve(store, args.id)
    parent = store.get_session(info.parent_session_id) if info.parent_session_id else None
    children = [s for s in store.lineage(info.id) if s.parent_session_id == info.id]
    messages = [_msg_dict(m) for m in store.messages(info.id)]
    payload = {
        "ok": True,
        "session": info.model_dump(),
        "parent": parent.model_dump() if parent else None,
        "children": [c.model_dump() for c in children],
        "messages": messages,
    }
    if args.json:
        _emit(args, payload, "")
        return 0
    lines = [
        f"session  {info.id}",
        f"title    {info.title or '(untitled)'}",
        f"source   {info.source}" + (f" ({info.platform})" if info.platform else ""),
    ]
    if info.model:
        lines.append(f"model    {info.model}")
    lines.append(f"started  {_when(info.started_at)}")
    if info.ended_at is not None:
        lines.append(f"ended    {_when(info.ended_at)} ({info.end_reason or 'no reason'})")
    lines.append(f"messages {info.message_count} ({info.tool_call_count} tool calls)")
    if parent is not None:
        lines.append(f"parent   {parent.id}  {parent.title or '(untitled)'}")
    elif info.parent_session_id:
        lines.append(f"parent   {info.parent_session_id} (no longer stored)")
    for child in children:
        lines.append(f"child    {child.id}  {child.title or '(untitled)'}")
    if info.root_session_id != info.id:
        lines.append(f"lineage  {info.root_session_id}")
    lines.append("")
    lines += [_message_block(m) for m in messages]
    print("\n".join(lines))
    return 0


def cmd_delete(args: argparse.Namespace) -> int:
    store = _store(args)
    info = _resolve(store, args.id)
    if not args.yes:
        if not sys.stdin.isatty():
            raise Refused(
                "confirm",
                f"not deleting session {info.id} without --yes (stdin is not a terminal)",
            )
        answer = input(
            f"Delete session {info.id} ({info.title or 'untitled'}, "
            f"{info.message_count} messages)? [y/N] "
        )
        if answer.strip().lower() not in ("y", "yes"):
            raise Refused("cancelled", "nothing deleted")
    store.delete_session(info.id)
    _emit(
        args,
        {"ok": True, "deleted": info.id, "messages": info.message_count},
        f"deleted session {info.id} and its {info.message_count} messages",
    )
    return 0


def _search_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    if args.mode == "discover":
        if not args.query.strip():
            raise UsageError("discover needs a QUERY (use --mode browse to list sessions)")
        return {
            "query": args.query,
            "limit": args.limit,
            "role": args.role,
            "source": args.source,
            "since": args.since,
            "until": args.until,
            "order": args.order,
            "window": args.window,
        }
    if args.mode in ("scroll", "read"):
        if not args.session:
            raise UsageError(f"--mode {args.mode} needs --session ID")
        return {}  # filled in once the store is open (the id may be a prefix)
    if args.source and len(args.source) > 1:
        raise UsageError("browse takes one --source")
    return {"limit": args.limit, "source": args.source[0] if args.source else None}


def _search_text(result: dict[str, Any]) -> str:
    mode = result["mode"]
    if mode == "browse":
        return "\n".join(_session_line(s) for s in result["sessions"]) or "no sessions"
    if mode == "discover":
        if not result["results"]:
            return result.get("note") or "no matches"
        blocks = []
        for card in result["results"]:
            lines = [_session_line(card)]
            if card.get("snippet"):
                lines.append(f"  {_one_line(card['snippet'])}")
            for message in card["messages"]:
                marker = ">" if message["id"] == card["match_message_id"] else " "
                lines.append("  " + _message_block(message, marker, full=False))
            blocks.append("\n".join(lines))
        return "\n\n".join(blocks)
    lines = [_session_line(result)]
    messages = result["messages"]
    lines += [_message_block(m) for m in messages]
    if result.get("omitted"):
        lines.append(f"    … {result['omitted']} messages omitted …")
        lines += [_message_block(m) for m in result.get("last_messages", [])]
    return "\n".join(lines)


def _semantic_configured(args: argparse.Namespace) -> bool:
    try:
        return load_config(args.home_path).sessions.semantic
    except ConfigError:
        return False  # a config.yaml that does not read is reported where it matters


def cmd_search(args: argparse.Namespace) -> int:
    kwargs = _search_kwargs(args)
    store = _store(args)
    if args.mode in ("scroll", "read"):
        kwargs["session_id"] = _resolve(store, args.session).id
        if args.mode == "scroll":
            kwargs.update(anchor_id=args.anchor, direction=args.direction, window=args.window)
    semantic = args.semantic or _semantic_configured(args)
    result = SessionSearch(store, semantic=semantic, embed=not args.readonly)(args.mode, **kwargs)
    text = _search_text(result)
    hint: str | None = None
    foreign: list[dict[str, Any]] = []
    if args.mode == "discover":
        # The hint and the matches of the other program's database in one read of it.
        hint, foreign = hermes.search(args.home_path, store, args.query or "")
    elif args.mode == "browse":
        hint = _hermes_hint(args, store)
    if hint:
        result["hint"] = hint
        if args.mode == "discover":
            result["hermes_results"] = foreign
            text += "".join(
                f"\n  {f['session_id'][:8]}  (Hermes Agent, not imported)  "
                f"{f['role']}: {_one_line(f['content'])}"
                for f in foreign
            )
        text += f"\n{hint}"
    _emit(args, {"ok": True, **result}, text)
    return 0


def _import_text(report: ImportReport, source: str) -> str:
    lines = [
        f"imported {report.sessions_imported:,} sessions ({report.messages_imported:,} messages) "
        f"from {source} in {report.seconds:.1f} s "
        f"({report.messages_per_second:,.0f} messages/s)"
    ]
    if report.sessions_skipped:
        lines.append(f"skipped {report.sessions_skipped:,} sessions already present")
    if report.parents_missing:
        lines.append(
            f"{report.parents_missing:,} sessions named a parent that is not stored; "
            "imported without it"
        )
    if report.errors_total:
        lines.append(f"{report.errors_total:,} malformed lines, not imported:")
        lines += [f"  line {e.line}: {e.message}" for e in report.errors]
        if report.errors_total > len(report.errors):
            lines.append(f"  … and {report.errors_total - len(report.errors):,} more")
    if report.index_backlog:
        lines.append(
            f"every message is searchable now; the substring and phrase indexes still lack "
            f"{report.index_backlog:,} messages (until then substring searches are slower): "
            "`cairn sessions reindex --catch-up` indexes them now, the app and `cairn cron "
            "tick` on their own"
        )
    return "\n".join(lines)


def _import_from_hermes(args: argparse.Namespace) -> int:
    store = _store(args)
    try:
        report = hermes.import_from(args.home_path, store, batch_size=args.batch_size)
    except hermes.HermesError as exc:
        raise Refused("not_found", str(exc)) from exc
    payload = {"ok": True, **report.model_dump()}
    _emit(args, payload, _import_text(report, "the Hermes Agent state.db"))
    return 1 if report.errors_total and not report.sessions_imported else 0


def _hermes_hint(args: argparse.Namespace, store: SessionStore) -> str | None:
    return hermes.hint(args.home_path, store)


def cmd_embed(args: argparse.Namespace) -> int:
    from engine.sessions import meaning
    from engine.sessions.vectors import VectorIndex

    if args.limit is not None and args.limit < 1:
        raise UsageError("--limit must be at least 1")
    if not meaning.available():
        raise Refused("unavailable", meaning.NOT_INSTALLED)
    store = _store(args)
    started = time.perf_counter()
    shown = sys.stderr.isatty() and not args.json

    def progress(done: int) -> None:
        if shown:
            print(f"\r  {done:,} messages embedded", end="", file=sys.stderr, flush=True)

    done = VectorIndex(store.engine, store.writer).catch_up(args.limit, progress, args.again)
    if shown:
        print(file=sys.stderr)
    seconds = time.perf_counter() - started
    payload = {"ok": True, "embedded": done, "seconds": round(seconds, 2)}
    _emit(args, payload, f"embedded {done:,} messages in {seconds:.1f} s")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    if args.batch_size < 1:
        raise UsageError("--batch-size must be at least 1")
    if args.from_hermes:
        if args.file is not None:
            raise UsageError("give a file or --from-hermes, not both")
        return _import_from_hermes(args)
    if args.file is None:
        raise UsageError("give the JSONL file to import ('-' = stdin), or --from-hermes")
    source = "stdin" if args.file == "-" else args.file
    handle: IO[bytes]
    total: int | None = None
    try:
        if args.file == "-":
            handle = sys.stdin.buffer
        else:
            path = Path(args.file)
            handle = path.open("rb")
            total = path.stat().st_size if path.is_file() else None
    except OSError as exc:
        raise Refused("file", f"cannot read {source}: {exc.strerror or exc}") from exc
    bar = _Progress(total, "importing")
    try:
        store = _store(args)
        report = import_sessions(
            store,
            bar.count(bounded_lines(handle)),
            batch_size=args.batch_size,
            progress=lambda _lines, messages: bar.draw(messages),
        )
    except OSError as exc:
        raise Refused("file", f"reading {source} failed: {exc.strerror or exc}") from exc
    finally:
        bar.close()
        if handle is not sys.stdin.buffer:
            handle.close()
    payload = {
        "ok": True,
        **report.model_dump(),
        "messages_per_second": round(report.messages_per_second),
    }
    nothing = report.errors_total and not (report.sessions_imported or report.sessions_skipped)
    if nothing:
        payload["ok"] = False
        payload["error"] = "invalid"
        payload["message"] = f"no line of {source} could be imported"
    _emit(args, payload, _import_text(report, source))
    return 1 if nothing else 0


def cmd_export(args: argparse.Namespace) -> int:
    store = _store(args)
    ids = None
    if args.session:
        ids = [_resolve(store, given).id for given in args.session]
    if not args.out or args.out == "-":
        out = sys.stdout
        if hasattr(out, "reconfigure"):
            out.reconfigure(encoding="utf-8")
        count = write_export(store, out, ids)
        out.flush()
        note = {"ok": True, "exported": count}
        print(json.dumps(note) if args.json else f"exported {count} sessions", file=sys.stderr)
        return 0
    target = Path(args.out)
    # Written beside the target and renamed over it: a failed export leaves no half file.
    try:
        fd, temp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent or ".")
    except OSError as exc:
        raise Refused("file", f"cannot write {target}: {exc.strerror or exc}") from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as out:
            count = write_export(store, out, ids)
        os.replace(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    _emit(
        args,
        {"ok": True, "exported": count, "path": str(target)},
        f"exported {count} sessions to {target}",
    )
    return 0


def _catch_up(args: argparse.Namespace, store: SessionStore) -> int:
    bar = _Progress(None, "indexing")
    try:
        done = maintenance.catch_up(
            store, progress=lambda indexed, left: bar.say(f"{indexed:,} messages, {left:,} left")
        )
    finally:
        bar.close()
    _emit(
        args,
        {"ok": True, **done.model_dump()},
        f"indexed {done.messages:,} messages for substrings and phrases in {done.seconds:.1f} s"
        + ("; nothing is left" if not done.left else f"; {done.left:,} left"),
    )
    return 0


def cmd_reindex(args: argparse.Namespace) -> int:
    store = _store(args)
    if args.catch_up:
        if args.check:
            raise UsageError("give --check or --catch-up, not both")
        return _catch_up(args, store)
    if args.check:
        report = maintenance.check(store, quick=args.quick)
        text = maintenance.describe_check(report)
        text += "\n" + ("the database is sound" if report.ok else "problems found")
        _emit(args, report.model_dump(), text)
        return 0 if report.ok else 1
    bar = _Progress(None, "reindexing")
    try:
        done = maintenance.reindex(store, lambda step, steps: bar.say(f"step {step}/{steps}"))
    finally:
        bar.close()
    _emit(
        args,
        {"ok": True, **done.model_dump()},
        f"rebuilt {', '.join(done.tables)} over {done.messages:,} messages in "
        f"{done.seconds:.1f} s; fixed the counts of {done.counters_fixed} sessions",
    )
    return 0
