"""Writing skills: create, patch, edit, delete, write_file and remove_file.

Every change is worked out in full before anything touches the disk: the request is validated
(names, sizes, paths), the new text is parsed (a SKILL.md must keep valid front matter and its
name) and scanned by the guard. Only a change that passes is committed, and each commit is one
atomic filesystem step (a file replaced by rename, a new skill folder renamed into place, a
deleted one renamed into ``.trash``). A refused change therefore leaves the skill folder
byte-identical, and a crash leaves either the old state or the new one.

With ``skills.write_approval`` on, the agent's changes are checked the same way and then
staged in ``<home>/pending/skills/<id>.json`` (the memory queue's record format, subsystem
``skills``); approving replays them through the same checks against the skills as they are
then. Changes typed by the user on the command line apply directly: the user is the reviewer.

Every applied change is also appended to ``<home>/skills/.history.jsonl`` (one
:class:`SkillChange` per line, with the file's text before and after), so the journey can show
when each skill was created, patched or deleted, and what changed.

This module holds :class:`SkillManager`, which works out and commits changes; the requests it
takes are in ``requests``, the checks on a change's text and the history record in
``changes``, the pending queue in ``queue``.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import tempfile
import time
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from engine.config import Config, load_config
from engine.config_follow import FollowedConfig
from engine.fsutil import TEMP_PREFIX, atomic_write_text, fsync_dir, locked
from engine.home import Home, HomeError
from engine.memory.approval import Origin, PendingWrite
from engine.skills.changes import (
    SkillChange,
    _Change,
    _check_size,
    _closest_lines,
    _kept,
    _line_preview,
    _old_text,
    _positions,
    _read_text,
    _require_body,
    _skill_usage,
)
from engine.skills.guard import (
    GuardVerdict,
    Mode,
    TrustBook,
    TrustLevel,
    check,
    describe_findings,
)
from engine.skills.queue import SkillPendingQueue
from engine.skills.requests import (
    _MAX_PREVIEWS,
    ACTIONS,
    Author,
    CreateRequest,
    DeleteRequest,
    EditRequest,
    PatchRequest,
    RemoveFileRequest,
    SkillRequest,
    WriteFileRequest,
    _preview,
    describe_request,
    parse_request,
)
from engine.skills.store import (
    FILE_MAX_CHARS,
    SKILL_FILE,
    SKILL_MAX_BYTES,
    SKILL_MAX_FILES,
    SKILL_MD_MAX_CHARS,
    SkillError,
    check_name,
    check_relpath,
    parse_skill_md,
    resolve_in_skill,
)
from engine.skills.usage import UsageBook

__all__ = [
    "ACTIONS",
    "HISTORY_FILE",
    "Author",
    "SkillChange",
    "SkillManager",
    "SkillPendingQueue",
    "SkillRequest",
    "parse_request",
]


TRASH_DIR = ".trash"
LOCK_FILE = ".skills.lock"
HISTORY_FILE = ".history.jsonl"


class SkillManager:
    """Applies (or stages) skill changes for one writer.

    ``author`` is who asked: ``agent`` (the skill_manage tool, including background review)
    writes at trust ``agent-created`` and goes through write approval when it is on; ``user``
    (the CLI) writes at ``trusted`` and applies directly.
    """

    def __init__(
        self,
        home: Home,
        config: Config | None = None,
        *,
        author: Author = "agent",
        origin: Origin = "foreground",
        session_id: str | None = None,
    ) -> None:
        self.home = home
        self._followed = FollowedConfig(home, config if config is not None else load_config(home))
        self.author: Author = author
        self.origin: Origin = origin
        self.session_id = session_id
        self.queue = SkillPendingQueue(home)
        self.trust = TrustBook(home.skills_dir)
        self.usage = UsageBook(home.skills_dir)

    @property
    def config(self) -> Config:
        """As config.yaml says now: approval switched on in a terminal applies at once."""
        return self._followed.current()

    @property
    def writer_trust(self) -> TrustLevel:
        return "agent-created" if self.author == "agent" else "trusted"

    @property
    def root(self) -> Path:
        return self.home.skills_dir

    # -- entry points ----------------------------------------------------------------------

    def run(self, arguments: object) -> dict[str, Any]:
        """Parse and carry out one request; staged instead when approval applies to it."""
        request = parse_request(arguments)
        if self.author == "agent" and self.config.skills.write_approval:
            return self.stage(request)
        return self.apply(request)

    def apply(
        self, request: SkillRequest, *, reviewed: bool = False, pending_id: str | None = None
    ) -> dict[str, Any]:
        """Check ``request`` against the skills as they are now and commit it."""
        mode: Mode = "review" if reviewed else "write"
        self._safe(self.root).mkdir(parents=True, exist_ok=True)
        with locked(self.root / LOCK_FILE):
            change = self._plan(request, mode)
            try:
                change.commit()
            except OSError as exc:
                raise SkillError(
                    "io", f"{change.summary} failed ({exc.strerror}); nothing was changed"
                ) from exc
            # Under the lock, so the history's order is the order the changes were made in.
            self._record(change, pending_id)
        result: dict[str, Any] = {
            "ok": True,
            "status": "applied",
            "action": request.action,
            "skill": change.ref,
            "message": f"Done: {change.summary}.",
            "warnings": self._warnings(change),
        }
        if pending_id:
            result["pending_id"] = pending_id
        return result

    def stage(self, request: SkillRequest) -> dict[str, Any]:
        """Check ``request`` now (so the model hears at once what could never be approved)
        and queue it for the user."""
        self._safe(self.root).mkdir(parents=True, exist_ok=True)
        with locked(self.root / LOCK_FILE):
            change = self._plan(request, "review")
        warnings = self._warnings(change)
        record = self.queue.stage(
            request.action,
            change.summary,
            {
                "request": request.model_dump(exclude_none=True),
                "skill": change.ref,
                "warnings": warnings,
            },
            self.origin,
            self.session_id,
        )
        return {
            "ok": True,
            "status": "staged",
            "action": request.action,
            "skill": change.ref,
            "pending_id": record.id,
            "message": f"Staged for approval as {record.id} ({change.summary}); the skills are "
            "unchanged until the user approves it.",
            "warnings": warnings,
        }

    def pending(self) -> list[PendingWrite]:
        return self.queue.list()

    def _record(self, change: _Change, pending_id: str | None) -> None:
        """Append ``change`` to the history. Best effort: the change is made already, and a
        full disk must not turn it into a reported failure."""
        before, cut_before = _kept(change.before)
        after, cut_after = _kept(change.after)
        record = SkillChange(
            at=time.time(),
            action=change.request.action,
            skill=change.ref,
            file=change.file,
            author=self.author,
            origin=self.origin,
            session_id=self.session_id,
            pending_id=pending_id,
            summary=change.summary,
            before=before,
            after=after,
            omitted=cut_before or cut_after or change.unreadable,
            absorbed_into=getattr(change.request, "absorbed_into", None),
        )
        line = (record.model_dump_json(exclude_defaults=True) + "\n").encode("utf-8")
        try:
            # One write of a whole line in append mode: readers take whole lines only. A line
            # a crash cut short is ended first, so it spoils only itself, not this one.
            with (self.root / HISTORY_FILE).open("a+b") as handle:
                if handle.seek(0, os.SEEK_END):
                    handle.seek(-1, os.SEEK_END)
                    if handle.read(1) != b"\n":
                        line = b"\n" + line
                handle.write(line)
        except OSError as exc:
            change.notes.append(
                f"the change could not be added to the skills history ({exc.strerror})"
            )

    def approve(self, pending_id: str) -> dict[str, Any]:
        # Under the queue's lock, as memory's and the fact store's: the window and a terminal
        # approving one record must not both apply it.
        with self.queue.settling():
            return self._approve(pending_id)

    def _approve(self, pending_id: str) -> dict[str, Any]:
        record = self.queue.fetch(pending_id)
        try:
            request = parse_request(record.payload.get("request"))
            replay = SkillManager(
                self.home,
                self.config,
                author="agent",
                origin=record.origin,
                session_id=record.session_id,
            )
            result = replay.apply(request, reviewed=True, pending_id=record.id)
        except SkillError as exc:
            raise SkillError(
                exc.code,
                f"approval of {record.id} failed, the staged write is kept: {exc.message}",
                pending_id=record.id,
            ) from exc
        self.queue.discard(record.id)
        result["message"] = f"Approved {record.id}: {record.summary}."
        return result

    def reject(self, pending_id: str) -> dict[str, Any]:
        with self.queue.settling():
            record = self.queue.fetch(pending_id)
            self.queue.discard(record.id)
        return {
            "ok": True,
            "status": "rejected",
            "pending_id": record.id,
            "message": f"Rejected {record.id} ({record.summary}); the skills are unchanged.",
        }

    def settle_all(self, approve: bool) -> list[dict[str, Any]]:
        settle = self.approve if approve else self.reject
        outcomes = []
        for record in self.pending():
            try:
                outcomes.append(settle(record.id))
            except SkillError as exc:
                outcomes.append(exc.to_dict())
        return outcomes

    # -- planning ----------------------------------------------------------------------------

    def _warnings(self, change: _Change) -> list[str]:
        notes = list(change.notes)
        if change.verdict is not None:
            notes += [f.describe() for f in change.verdict.warnings]
        return notes

    def _guard(self, text: str, file: str, mode: Mode, before: str | None = None) -> GuardVerdict:
        verdict = check(text, self.writer_trust, mode, file=file, before=before)
        if verdict.blocked:
            raise SkillError(
                "blocked",
                f"refused by the skills guard ({self.writer_trust} content): "
                f"{describe_findings(verdict.blocking)}. Nothing was written.",
                findings=[f.model_dump() for f in verdict.blocking],
            )
        return verdict

    def _safe(self, folder: Path) -> Path:
        """``folder``, refused when a link takes it out of the home (``skills -> /etc``)."""
        try:
            return self.home.safe_folder(folder)
        except HomeError as exc:
            raise SkillError("path", f"{exc}; nothing was written") from exc

    def _plan(self, request: SkillRequest, mode: Mode) -> _Change:
        if isinstance(request, CreateRequest):
            return self._plan_create(request, mode)
        folder, ref = self._locate(request.name)
        self._safe(folder)
        if isinstance(request, PatchRequest):
            return self._plan_patch(request, folder, ref, mode)
        if isinstance(request, EditRequest):
            return self._plan_edit(request, folder, ref, mode)
        if isinstance(request, DeleteRequest):
            return self._plan_delete(request, folder, ref)
        if isinstance(request, WriteFileRequest):
            return self._plan_write_file(request, folder, ref, mode)
        return self._plan_remove_file(request, folder, ref)

    def _locate(self, name: str) -> tuple[Path, str]:
        """The folder of skill ``name`` (or ``category/name``), valid or broken."""
        category, _, bare = name.rpartition("/")
        check_name(bare)
        if category:
            check_name(category, "category")
            candidates = [(self.root / category / bare, f"{category}/{bare}")]
        else:
            candidates = [(self.root / bare, bare)]
            with contextlib.suppress(OSError):
                for entry in sorted(os.scandir(self.root), key=lambda e: e.name):
                    if entry.name.startswith(".") or not entry.is_dir():
                        continue
                    candidates.append((Path(entry.path) / bare, f"{entry.name}/{bare}"))
        for folder, ref in candidates:
            if (folder / SKILL_FILE).is_file():
                return folder, ref
        raise SkillError("not_found", f"no skill named {name!r}")

    def _taken(self, name: str) -> str | None:
        if (self.root / name).exists() or (self.root / name).is_symlink():
            return name
        with contextlib.suppress(OSError):
            for entry in os.scandir(self.root):
                if entry.name.startswith(".") or not entry.is_dir():
                    continue
                if (Path(entry.path) / name / SKILL_FILE).exists():
                    return f"{entry.name}/{name}"
        return None

    def _plan_create(self, request: CreateRequest, mode: Mode) -> _Change:
        name = check_name(request.name)
        category = check_name(request.category, "category") if request.category else None
        content = request.content
        if content is not None and content.lstrip("\ufeff").startswith("---"):
            if request.description is not None or request.body is not None:
                raise SkillError(
                    "invalid",
                    "give either content (a whole SKILL.md with front matter) or description "
                    "and body, not both",
                )
            text = content
        else:
            if not request.description:
                raise SkillError(
                    "invalid",
                    "create needs content (a whole SKILL.md starting with '---' front matter) "
                    "or a description (and a body, or content without front matter)",
                )
            if content is not None and request.body is not None:
                raise SkillError("invalid", "give the instructions as body or content, not both")
            body = content if content is not None else request.body or ""
            front = yaml.safe_dump(
                {"name": name, "description": request.description},
                sort_keys=False,
                allow_unicode=True,
                width=1_000_000,
            )
            text = f"---\n{front}---\n\n{body.strip()}\n"
        shown = f"{name}/{SKILL_FILE}"
        _check_size(text, None, SKILL_MD_MAX_CHARS, shown)
        parsed = parse_skill_md(text, shown)
        _require_body(parsed.body, shown)
        if parsed.meta.name != name:
            raise SkillError(
                "invalid",
                f"the front matter names {parsed.meta.name!r}, but create asked for "
                f"{name!r}; make them the same",
            )
        verdict = self._guard(text, SKILL_FILE, mode)
        taken = self._taken(name)
        if taken is not None:
            raise SkillError(
                "exists",
                f"a skill or folder named {name!r} already exists ({taken}); "
                "patch or edit it, or choose another name",
            )
        parent = self._safe(self.root / category if category else self.root)
        if category and (parent / SKILL_FILE).exists():
            raise SkillError("invalid", f"{category!r} is a skill, not a category")
        ref = f"{category}/{name}" if category else name

        def commit() -> None:
            made_parent = not parent.exists()
            parent.mkdir(parents=True, exist_ok=True)
            staging = Path(tempfile.mkdtemp(prefix=TEMP_PREFIX, dir=parent))
            try:
                atomic_write_text(staging / SKILL_FILE, text)
                os.chmod(staging, 0o755)
                os.rename(staging, parent / name)
            except BaseException:
                shutil.rmtree(staging, ignore_errors=True)
                if made_parent:
                    with contextlib.suppress(OSError):
                        parent.rmdir()
                raise
            fsync_dir(parent)
            self._record_trust(name, change)

        change = _Change(request, ref, describe_request(request), commit, verdict, after=text)
        return change

    def _record_trust(self, name: str, change: _Change) -> None:
        try:
            self.trust.set(name, self.writer_trust)
        except OSError as exc:
            change.notes.append(
                f"the skill's trust level could not be recorded ({exc.strerror}); it is "
                "treated as community"
            )

    def _skill_md_change(
        self,
        request: PatchRequest | EditRequest,
        folder: Path,
        ref: str,
        old: str,
        new: str,
        mode: Mode,
    ) -> _Change:
        shown = f"{ref}/{SKILL_FILE}"
        _check_size(new, old, SKILL_MD_MAX_CHARS, shown)
        parsed = parse_skill_md(new, shown)
        _require_body(parsed.body, shown)
        if parsed.meta.name != folder.name:
            raise SkillError(
                "invalid",
                f"the front matter must keep name: {folder.name} (got {parsed.meta.name!r}); "
                "to rename a skill, create the new one and delete the old",
            )
        verdict = self._guard(new, SKILL_FILE, mode, before=old)
        target = resolve_in_skill(folder, PurePosixPath(SKILL_FILE), for_write=True)
        return _Change(
            request,
            ref,
            describe_request(request),
            lambda: atomic_write_text(target, new),
            verdict,
            before=old,
            after=new,
        )

    def _plan_patch(self, request: PatchRequest, folder: Path, ref: str, mode: Mode) -> _Change:
        if request.find == "":
            raise SkillError("invalid", "find must be a non-empty piece of the current text")
        if request.find == request.replace:
            raise SkillError("invalid", "find and replace are the same; nothing would change")
        if request.file in (None, SKILL_FILE):
            rel = PurePosixPath(SKILL_FILE)
            path = resolve_in_skill(folder, rel, for_write=True)
        else:
            rel = check_relpath(request.file, for_write=True)
            path = resolve_in_skill(folder, rel, for_write=True)
        shown = f"{ref}/{rel}"
        old = _read_text(path, shown)
        where = _positions(old, request.find)
        if not where:
            close = _closest_lines(old, request.find)
            hint = f" Closest lines: {'; '.join(repr(c) for c in close)}." if close else ""
            raise SkillError(
                "no_match",
                f"{_preview(request.find)!r} does not occur in {shown} (matching is exact and "
                f"case-sensitive; view the file with skill_view first).{hint}",
            )
        if len(where) > 1 and not request.replace_all:
            shown_at = [_line_preview(old, i, len(request.find)) for i in where[:_MAX_PREVIEWS]]
            count = f"at least {_MAX_PREVIEWS}" if len(where) > _MAX_PREVIEWS else len(where)
            raise SkillError(
                "ambiguous",
                f"{_preview(request.find)!r} occurs {count} times in {shown}; include "
                f"more surrounding text so it names one place, or set replace_all: "
                f"{'; '.join(shown_at)}",
                matches=shown_at,
            )
        if request.replace_all:
            new = old.replace(request.find, request.replace)
        else:
            index = where[0]
            new = old[:index] + request.replace + old[index + len(request.find) :]
        if rel.as_posix() == SKILL_FILE:
            return self._skill_md_change(request, folder, ref, old, new, mode)
        _check_size(new, old, FILE_MAX_CHARS, shown)
        verdict = self._guard(new, rel.as_posix(), mode, before=old)
        return _Change(
            request,
            ref,
            describe_request(request),
            lambda: atomic_write_text(path, new),
            verdict,
            file=rel.as_posix(),
            before=old,
            after=new,
        )

    def _plan_edit(self, request: EditRequest, folder: Path, ref: str, mode: Mode) -> _Change:
        path = resolve_in_skill(folder, PurePosixPath(SKILL_FILE), for_write=True)
        old = _read_text(path, f"{ref}/{SKILL_FILE}")
        return self._skill_md_change(request, folder, ref, old, request.content, mode)

    def _plan_delete(self, request: DeleteRequest, folder: Path, ref: str) -> _Change:
        name = folder.name
        absorbed: str | None = None
        if request.absorbed_into is not None:
            into, into_ref = self._locate(request.absorbed_into)
            if into == folder:
                raise SkillError("invalid", f"{ref} cannot be absorbed into itself")
            absorbed = into_ref

        def commit() -> None:
            trash = self.root / TRASH_DIR
            trash.mkdir(exist_ok=True)
            stamp = time.strftime("%Y%m%d-%H%M%S")
            # Deleted skills are kept in .trash (skipped by every loader) so a mistaken delete,
            # by the agent or anyone, can be undone by moving the folder back.
            os.rename(folder, trash / f"{name}.{stamp}.{secrets.token_hex(2)}")
            fsync_dir(folder.parent)
            # A category folder the delete left empty goes too, so the tree holds no
            # leftovers (rmdir refuses a folder that still holds anything).
            if folder.parent != self.root:
                with contextlib.suppress(OSError):
                    folder.parent.rmdir()
                    fsync_dir(self.root)
            for book in (self.trust, self.usage):
                with contextlib.suppress(OSError):
                    book.forget(name)

        change = _Change(request, ref, describe_request(request), commit)
        change.notes.append(f"the folder was moved to skills/{TRASH_DIR}/ and can be restored")
        if absorbed:
            change.notes.append(f"its steps now live in {absorbed}")
        change.before, change.unreadable = _old_text(folder / SKILL_FILE)
        return change

    def _plan_write_file(
        self, request: WriteFileRequest, folder: Path, ref: str, mode: Mode
    ) -> _Change:
        rel = check_relpath(request.file, for_write=True)
        path = resolve_in_skill(folder, rel, for_write=True)
        shown = f"{ref}/{rel}"
        old: str | None = None
        old_bytes = 0
        unreadable = False
        if os.path.lexists(path):
            if path.is_dir():
                raise SkillError("invalid", f"{shown} is a folder, not a file")
            old_bytes = path.stat().st_size
            try:
                old = _read_text(path, shown)
            except SkillError:
                unreadable = True
        _check_size(request.content, old, FILE_MAX_CHARS, shown)
        files, size = _skill_usage(folder)
        new_bytes = len(request.content.encode("utf-8"))
        if old is None and not os.path.lexists(path) and files + 1 > SKILL_MAX_FILES:
            raise SkillError(
                "too_large", f"{ref} already has {files} files; at most {SKILL_MAX_FILES}"
            )
        if size - old_bytes + new_bytes > SKILL_MAX_BYTES:
            raise SkillError(
                "too_large",
                f"{ref} would hold {size - old_bytes + new_bytes:,} bytes; at most "
                f"{SKILL_MAX_BYTES:,}",
            )
        verdict = self._guard(request.content, rel.as_posix(), mode, before=old)

        def commit() -> None:
            created: list[Path] = []
            try:
                current = folder
                for part in rel.parts[:-1]:
                    current = current / part
                    if not current.exists():
                        current.mkdir()
                        created.append(current)
                # Checked again now that the folders exist: nothing may have become a link.
                resolve_in_skill(folder, rel, for_write=True)
                atomic_write_text(path, request.content)
            except BaseException:
                for made in reversed(created):
                    with contextlib.suppress(OSError):
                        made.rmdir()
                raise

        change = _Change(request, ref, describe_request(request), commit, verdict)
        change.file, change.before, change.after = rel.as_posix(), old, request.content
        change.unreadable = unreadable
        return change

    def _plan_remove_file(self, request: RemoveFileRequest, folder: Path, ref: str) -> _Change:
        rel = check_relpath(request.file, for_write=True)
        path = folder.joinpath(*rel.parts)
        # The parents must be real folders inside the skill; the file itself may be a link
        # (unlinking a link never touches what it points to).
        resolve_in_skill(folder, PurePosixPath(*rel.parts[:-1]), for_write=True)
        shown = f"{ref}/{rel}"
        if not os.path.lexists(path):
            raise SkillError("not_found", f"{shown} does not exist")
        if path.is_dir() and not path.is_symlink():
            raise SkillError("invalid", f"{shown} is a folder; remove its files one by one")

        def commit() -> None:
            path.unlink()
            parent = path.parent
            while parent != folder and not any(parent.iterdir()):
                parent.rmdir()
                parent = parent.parent

        change = _Change(request, ref, describe_request(request), commit, file=rel.as_posix())
        change.before, change.unreadable = _old_text(path)
        return change
