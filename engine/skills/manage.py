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
"""

from __future__ import annotations

import contextlib
import difflib
import os
import secrets
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from engine.config import Config, load_config
from engine.config_follow import FollowedConfig
from engine.fsutil import TEMP_PREFIX, atomic_write_text, decode_utf8, fsync_dir, locked
from engine.home import Home, HomeError
from engine.memory.approval import Origin, PendingQueue, PendingWrite
from engine.memory.errors import MemoryToolError
from engine.skills.guard import (
    GuardVerdict,
    Mode,
    TrustBook,
    TrustLevel,
    check,
    describe_findings,
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

ACTIONS = ("create", "patch", "edit", "delete", "write_file", "remove_file")
Author = Literal["agent", "user"]
TRASH_DIR = ".trash"
LOCK_FILE = ".skills.lock"
HISTORY_FILE = ".history.jsonl"
# Texts kept in the history: a SKILL.md always fits; a bigger supporting file is noted as
# changed without its text, so the log stays a few megabytes at most.
HISTORY_TEXT_MAX = SKILL_MD_MAX_CHARS
_PREVIEW = 60
_MAX_PREVIEWS = 5


# --------------------------------------------------------------------------------------------
# Requests
# --------------------------------------------------------------------------------------------


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str


class CreateRequest(_Request):
    action: Literal["create"]
    category: str | None = None
    content: str | None = None
    description: str | None = None
    body: str | None = None


class PatchRequest(_Request):
    action: Literal["patch"]
    find: str
    replace: str
    file: str | None = None
    # Every occurrence instead of exactly one: for renaming a command or path throughout.
    replace_all: bool = False


class EditRequest(_Request):
    action: Literal["edit"]
    content: str


class DeleteRequest(_Request):
    action: Literal["delete"]
    # The skill that now holds this one's steps, when two were merged: it must exist, and the
    # history says where the deleted skill went.
    absorbed_into: str | None = None


class WriteFileRequest(_Request):
    action: Literal["write_file"]
    file: str
    content: str


class RemoveFileRequest(_Request):
    action: Literal["remove_file"]
    file: str


SkillRequest = Annotated[
    CreateRequest
    | PatchRequest
    | EditRequest
    | DeleteRequest
    | WriteFileRequest
    | RemoveFileRequest,
    Field(discriminator="action"),
]
_ADAPTER: TypeAdapter[Any] = TypeAdapter(SkillRequest)
_FIELDS = {
    "create": {"name", "category", "content", "description", "body"},
    "patch": {"name", "find", "replace", "file", "replace_all"},
    "edit": {"name", "content"},
    "delete": {"name", "absorbed_into"},
    "write_file": {"name", "file", "content"},
    "remove_file": {"name", "file"},
}


# Optional fields where "" can only mean "not given" (a model filling in every field).
_OPTIONAL = {
    "create": {"category", "content", "description", "body"},
    "patch": {"file"},
    "delete": {"absorbed_into"},
}


def parse_request(arguments: object) -> SkillRequest:
    """A validated request from tool or CLI arguments, or an ``invalid`` :class:`SkillError`.

    Models often send every field of the schema, unused ones as null or empty; those are
    dropped. An unused field with a value is refused, since it shows a misunderstanding.
    """
    if not isinstance(arguments, dict):
        raise SkillError("invalid", "the arguments must be an object")
    action = arguments.get("action")
    if action not in _FIELDS:
        raise SkillError("invalid", f"action must be one of {', '.join(ACTIONS)} (got {action!r})")
    allowed = _FIELDS[action]
    cleaned: dict[str, Any] = {"action": action}
    optional = _OPTIONAL.get(action, set())
    for key, value in arguments.items():
        if key == "action" or value is None or (value == "" and key in optional):
            continue
        if key not in allowed:
            if value in ("", [], {}):
                continue
            raise SkillError(
                "invalid",
                f"{key!r} is not used by {action}; it takes {', '.join(sorted(allowed))}",
            )
        cleaned[key] = value
    try:
        return _ADAPTER.validate_python(cleaned)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            key = ".".join(str(p) for p in err["loc"][1:]) or "arguments"
            if err["type"] == "missing":
                problems.append(f"{key} is required")
            else:
                problems.append(f"{key}: {err['msg']}")
        raise SkillError("invalid", f"{action}: " + "; ".join(problems)) from None


def _preview(text: str, limit: int = _PREVIEW) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def describe_request(request: SkillRequest) -> str:
    """One line for logs, the pending queue and the chat pane."""
    name = request.name
    if isinstance(request, CreateRequest):
        where = f" in {request.category}" if request.category else ""
        return f"create skill {name!r}{where}"
    if isinstance(request, PatchRequest):
        file = request.file or SKILL_FILE
        every = " (every occurrence)" if request.replace_all else ""
        return (
            f"patch {name}/{file}: {_preview(request.find, 30)!r} → "
            f"{_preview(request.replace, 30)!r}{every}"
        )
    if isinstance(request, EditRequest):
        return f"rewrite {name}/SKILL.md ({len(request.content):,} chars)"
    if isinstance(request, DeleteRequest):
        into = f" (absorbed into {request.absorbed_into!r})" if request.absorbed_into else ""
        return f"delete skill {name!r}{into}"
    if isinstance(request, WriteFileRequest):
        return f"write {name}/{request.file} ({len(request.content):,} chars)"
    return f"remove {name}/{request.file}"


# --------------------------------------------------------------------------------------------
# Pending queue
# --------------------------------------------------------------------------------------------


class SkillPendingQueue(PendingQueue):
    """The memory queue's records and rules, in ``<home>/pending/skills``."""

    SUBSYSTEM = "skills"

    def __init__(self, home: Home) -> None:
        super().__init__(home.pending_dir / self.SUBSYSTEM, self.SUBSYSTEM, home)

    def stage(
        self,
        action: str,
        summary: str,
        payload: dict[str, Any],
        origin: Origin,
        session_id: str | None = None,
    ) -> PendingWrite:
        try:
            return super().stage(action, summary, payload, origin, session_id)
        except MemoryToolError as exc:
            raise SkillError(exc.code, exc.message) from None

    def fetch(self, pending_id: str) -> PendingWrite:
        try:
            record = self.get(pending_id)
        except MemoryToolError as exc:
            raise SkillError(exc.code, exc.message) from None
        if record.subsystem != self.SUBSYSTEM:
            raise SkillError("not_found", f"pending write {pending_id!r} is not a skill write")
        return record


# --------------------------------------------------------------------------------------------
# Changes
# --------------------------------------------------------------------------------------------


class SkillChange(BaseModel):
    """One applied skill change: a line of ``<skills>/.history.jsonl``."""

    at: float  # unix seconds, when it was committed
    action: str  # one of ACTIONS
    skill: str  # category/name, or name
    file: str = SKILL_FILE  # the file the change wrote or removed (delete: SKILL.md)
    author: Author
    origin: str
    session_id: str | None = None
    pending_id: str | None = None
    summary: str
    before: str | None = None  # the file's text before; None when it did not exist
    after: str | None = None  # and after; None when it no longer exists
    omitted: bool = False  # a text was too long (or not UTF-8) to keep: before/after are None
    absorbed_into: str | None = None  # delete: the skill that took over this one's steps


def _kept(text: str | None) -> tuple[str | None, bool]:
    """``text`` if the history keeps it, and whether it was left out."""
    if text is None or len(text) <= HISTORY_TEXT_MAX:
        return text, False
    return None, True


@dataclass
class _Change:
    """A change worked out and checked, waiting to be committed."""

    request: SkillRequest
    ref: str
    summary: str
    commit: Callable[[], None]
    verdict: GuardVerdict | None = None
    notes: list[str] = field(default_factory=list)
    # For the history: the file changed and its text before and after.
    file: str = SKILL_FILE
    before: str | None = None
    after: str | None = None
    unreadable: bool = False  # the old text could not be read as UTF-8


def _read_text(path: Path, shown: str) -> str:
    try:
        return decode_utf8(path.read_bytes())
    except FileNotFoundError:
        raise SkillError("not_found", f"{shown} does not exist") from None
    except UnicodeDecodeError:
        raise SkillError("invalid", f"{shown} is not UTF-8 text; it cannot be patched") from None
    except IsADirectoryError:
        raise SkillError("invalid", f"{shown} is a folder, not a file") from None
    except OSError as exc:
        raise SkillError("io", f"{shown} cannot be read ({exc.strerror})") from None


def _old_text(path: Path) -> tuple[str | None, bool]:
    """For the history: ``path``'s text, and whether it existed but could not be read."""
    if path.is_symlink() or not path.is_file():
        return None, path.is_symlink()
    try:
        if path.stat().st_size > 4 * HISTORY_TEXT_MAX:
            return None, True
        return decode_utf8(path.read_bytes()), False
    except (OSError, UnicodeDecodeError):
        return None, True


def _positions(text: str, needle: str) -> list[int]:
    # Overlapping matches count: "aa" occurs twice in "aaa", so it does not name one place.
    found, start = [], 0
    while len(found) <= _MAX_PREVIEWS:
        index = text.find(needle, start)
        if index < 0:
            break
        found.append(index)
        start = index + 1
    return found


def _line_preview(text: str, index: int, length: int) -> str:
    """``line N: '…'``, the line(s) holding a match, cut to a window around it."""
    line = text.count("\n", 0, index) + 1
    start = text.rfind("\n", 0, index) + 1
    end = text.find("\n", index + length)
    end = len(text) if end < 0 else end
    if end - start > 90:
        start = max(start, index - 30)
        end = min(end, index + length + 30)
    return f"line {line}: {_preview(text[start:end], 90)!r}"


def _closest_lines(text: str, needle: str) -> list[str]:
    probe = needle.strip().splitlines()[0] if needle.strip() else needle
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return difflib.get_close_matches(probe.strip(), lines, n=2, cutoff=0.6)


def _check_size(new: str, old: str | None, limit: int, shown: str) -> None:
    # Growing past the limit is refused; an over-limit file (hand-edited, or another tool's)
    # may still be changed as long as the change does not make it larger.
    if len(new) > limit and (old is None or len(new) > len(old)):
        raise SkillError(
            "too_large",
            f"{shown} would be {len(new):,} chars; the limit is {limit:,}. Move detail into "
            "references/ files, which are read only when needed.",
            chars=len(new),
            limit=limit,
        )


def _require_body(body: str, shown: str) -> None:
    # A SKILL.md is its instructions; front matter alone is an index line with nothing to
    # read on demand, and other tools sharing the home refuse to load such a file.
    if not body.strip():
        raise SkillError(
            "invalid",
            f"{shown} has no instructions after its front matter; give a body (Markdown steps)",
        )


def _skill_usage(folder: Path) -> tuple[int, int]:
    """(files, bytes) of everything in a skill folder, SKILL.md included."""
    files = size = 0
    for dirpath, _dirs, names in os.walk(folder):
        for name in names:
            with contextlib.suppress(OSError):
                size += os.lstat(Path(dirpath) / name).st_size
                files += 1
    return files, size


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
