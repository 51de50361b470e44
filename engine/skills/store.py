"""Skills on disk: ``<home>/skills/[<category>/]<name>/SKILL.md`` plus supporting files.

A skill is a folder. Its ``SKILL.md`` starts with YAML front matter (``name``, ``description``,
optional ``version``, ``tags``, ``related_skills``; unknown keys are kept) and continues with
Markdown instructions. Supporting files live in ``references/``, ``templates/``, ``scripts/``
and ``assets/``.

Loading is forgiving: one broken skill becomes a :class:`LoadProblem` naming its file and line,
and every other skill still loads. Limits are enforced when writing; at load a skill over a
limit still loads (a cap enforced at load time would lock users out of what they already have),
except above hard ceilings that protect the process itself.

Paths asked for by the model go through :func:`check_relpath` and :func:`resolve_in_skill`,
which refuse anything that could name a file outside the skill's folder.
"""

from __future__ import annotations

import os
import re
import stat
import time
import unicodedata
from pathlib import Path, PurePosixPath
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from engine.errors import CairnError
from engine.fsutil import decode_utf8, resolves_inside
from engine.home import Home

__all__ = [
    "DESCRIPTION_MAX",
    "FILE_MAX_CHARS",
    "NAME_MAX",
    "NAME_RE",
    "SKILL_FILE",
    "SKILL_MAX_BYTES",
    "SKILL_MAX_FILES",
    "SKILL_MD_MAX_CHARS",
    "SUPPORT_DIRS",
    "Catalog",
    "LoadProblem",
    "Skill",
    "SkillDocument",
    "SkillError",
    "SkillMeta",
    "check_name",
    "check_relpath",
    "find_skill",
    "list_files",
    "load_catalog",
    "parse_skill_md",
    "read_document",
    "read_file",
    "resolve_in_skill",
]

SKILL_FILE = "SKILL.md"
SUPPORT_DIRS = ("references", "templates", "scripts", "assets")
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
NAME_MAX = 64
DESCRIPTION_MAX = 1024
TAG_MAX = 64
MAX_TAGS = 32

# Write-time limits. A SKILL.md is read into the model's context whole, so it is kept to
# roughly 12k tokens; bulk material belongs in supporting files, which are read on demand.
SKILL_MD_MAX_CHARS = 50_000
FILE_MAX_CHARS = 200_000
SKILL_MAX_FILES = 100
SKILL_MAX_BYTES = 5 * 1024 * 1024
FRONT_MATTER_MAX_CHARS = 16_384
# Read-time ceilings: above these a file is not read at all, so a stray disk image dropped
# into the skills folder cannot exhaust memory or flood the context.
READ_CEILING_BYTES = 4 * 1024 * 1024
# Enough bytes to hold the largest front matter in any encoding of its characters.
_HEAD_BYTES = 4 * FRONT_MATTER_MAX_CHARS + 4096
# Path shape limits for supporting files.
RELPATH_MAX = 255
COMPONENT_MAX = 100
DEPTH_MAX = 6

_WINDOWS_DEVICES = frozenset(
    {"con", "prn", "aux", "nul", "conin$", "conout$", "clock$"}
    | {f"com{i}" for i in range(10)}
    | {f"lpt{i}" for i in range(10)}
)
_FORBIDDEN_CHARS = frozenset('<>:"|?*\\')


class SkillError(CairnError):
    """A skill operation was refused; nothing was written.

    ``code`` is stable for scripts: ``invalid``, ``not_found``, ``exists``, ``no_match``,
    ``ambiguous``, ``too_large``, ``path``, ``blocked``, ``malformed``, ``io``.
    """


# --------------------------------------------------------------------------------------------
# Front matter
# --------------------------------------------------------------------------------------------


def check_name(name: object, what: str = "skill name") -> str:
    """``name`` if it is a valid skill (or category) name, else a :class:`SkillError`."""
    if not isinstance(name, str) or not name:
        raise SkillError("invalid", f"a {what} is required")
    if len(name) > NAME_MAX:
        raise SkillError(
            "invalid", f"{what} {name[:80]!r} is {len(name)} chars; at most {NAME_MAX}"
        )
    if not NAME_RE.fullmatch(name):
        raise SkillError(
            "invalid",
            f"{what} {name[:80]!r} is not allowed: use lowercase letters, digits, '.', '_' and "
            "'-', starting with a letter or digit",
        )
    return name


def _str_list(value: Any, field: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        # `tags: git, debugging` is a common hand-written form.
        value = [part.strip() for part in value.split(",") if part.strip()]
    if not isinstance(value, list) or not all(isinstance(v, str | int | float) for v in value):
        raise ValueError(f"{field} must be a list of strings")
    items = [str(v).strip() for v in value if str(v).strip()]
    if len(items) > MAX_TAGS:
        raise ValueError(f"{field} has {len(items)} items; at most {MAX_TAGS}")
    for item in items:
        if len(item) > TAG_MAX:
            raise ValueError(f"{field} item {item[:40]!r}… is over {TAG_MAX} chars")
    return items


class SkillMeta(BaseModel):
    """The front matter. Unknown keys (``license``, ``metadata`` …) are kept as they are."""

    model_config = ConfigDict(extra="allow")

    name: str
    description: str
    version: str | None = None
    tags: list[str] = Field(default_factory=list)
    related_skills: list[str] = Field(default_factory=list)

    @field_validator("name", mode="before")
    @classmethod
    def _name(cls, value: Any) -> str:
        try:
            return check_name(value)
        except SkillError as exc:
            raise ValueError(exc.message) from None

    @field_validator("description", mode="before")
    @classmethod
    def _description(cls, value: Any) -> str:
        if not isinstance(value, str) or not value.strip():
            raise ValueError("description must be a non-empty string")
        value = value.strip()
        if len(value) > DESCRIPTION_MAX:
            raise ValueError(f"description is {len(value)} chars; at most {DESCRIPTION_MAX}")
        return value

    @field_validator("version", mode="before")
    @classmethod
    def _version(cls, value: Any) -> str | None:
        # YAML reads `version: 1.0` as a float; the author meant the text.
        if value is None or isinstance(value, str):
            return value
        if isinstance(value, int | float) and not isinstance(value, bool):
            return str(value)
        raise ValueError("version must be a string such as 1.0.2")

    @field_validator("tags", "related_skills", mode="before")
    @classmethod
    def _lists(cls, value: Any, info: Any) -> list[str]:
        return _str_list(value, info.field_name)

    @property
    def one_line(self) -> str:
        """The description's first line, whitespace collapsed."""
        first = self.description.strip().splitlines()[0] if self.description.strip() else ""
        return " ".join(first.split())


class _Parsed(BaseModel):
    meta: SkillMeta
    body: str
    body_line: int  # 1-based line where the body starts


def _line_of_key(front: str, key: str) -> int | None:
    for number, line in enumerate(front.splitlines(), start=2):
        if re.match(rf"{re.escape(key)}\s*:", line):
            return number
    return None


def _fail(path: str, line: int | None, message: str) -> SkillError:
    where = f"{path} line {line}" if line is not None else path
    return SkillError("malformed", f"{where}: {message}", file=path, line=line)


def _refuse_aliases(front: str, path: str) -> None:
    # An alias repeats a node without copying it; nested aliases turn a few hundred bytes into
    # billions of items as soon as anything walks the result. Front matter never needs them.
    if "*" not in front:
        return
    try:
        for event in yaml.parse(front, Loader=_LOADER):
            if isinstance(event, yaml.AliasEvent):
                line = event.start_mark.line + 2 if event.start_mark else None
                raise _fail(path, line, "YAML anchors and aliases are not allowed here")
    except yaml.YAMLError:
        return  # the real load below reports the syntax error with its line


_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def parse_skill_md(text: str, path: str = SKILL_FILE) -> _Parsed:
    """Split and validate a SKILL.md; a :class:`SkillError` names ``path`` and the line."""
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.split("\n")
    if not lines or lines[0].rstrip("\r").rstrip() != "---":
        raise _fail(path, 1, "must start with YAML front matter: a line '---', the fields, '---'")
    end = None
    for index in range(1, len(lines)):
        if lines[index].rstrip("\r").rstrip() in ("---", "..."):
            end = index
            break
    if end is None:
        raise _fail(path, 1, "front matter is not closed: add a line '---' after the fields")
    front = "\n".join(line.rstrip("\r") for line in lines[1:end])
    if len(front) > FRONT_MATTER_MAX_CHARS:
        raise _fail(
            path, 2, f"front matter is {len(front):,} chars; at most {FRONT_MATTER_MAX_CHARS:,}"
        )
    _refuse_aliases(front, path)
    try:
        data = yaml.load(front, Loader=_LOADER)  # a safe loader (C or Python)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        context = getattr(exc, "context_mark", None)
        # An unclosed bracket or quote is noticed only at the end of the text; where it was
        # opened is the line to fix.
        if context is not None and (mark is None or mark.line >= front.count("\n")):
            mark = context
        line = mark.line + 2 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise _fail(path, line, f"front matter is not valid YAML: {problem}") from None
    if not isinstance(data, dict):
        kind = "empty" if data is None else f"a {type(data).__name__}"
        raise _fail(path, 2, f"front matter must be a mapping of fields, not {kind}")
    version = data.get("version")
    if isinstance(version, int | float) and not isinstance(version, bool):
        # YAML reads `version: 1.10` as the float 1.1; the author meant the text as written.
        raw = re.search(r"^version\s*:\s*([0-9][0-9A-Za-z.+-]*)\s*(?:#.*)?$", front, re.M)
        if raw:
            data["version"] = raw.group(1)
    try:
        meta = SkillMeta.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        key = str(err["loc"][0]) if err["loc"] else ""
        message = str(err["msg"]).removeprefix("Value error, ")
        if err["type"] == "missing":
            raise _fail(path, 2, f"front matter lacks the required field {key!r}") from None
        raise _fail(path, _line_of_key(front, key), f"{key}: {message}") from None
    body = "\n".join(lines[end + 1 :])
    return _Parsed(meta=meta, body=body, body_line=end + 2)


# --------------------------------------------------------------------------------------------
# Paths
# --------------------------------------------------------------------------------------------


def check_relpath(file: object, *, for_write: bool) -> PurePosixPath:
    """Validate a path the model gave, relative to a skill folder, by its shape alone.

    Refused: empty, absolute, ``~``, Windows drives, UNC and device names, backslashes,
    colons (alternate data streams), ``.``/``..``, hidden components, trailing dots or spaces
    (Windows drops them, so ``x.`` is ``x`` there), control and format characters, and any
    text that Unicode NFKC would change (``‥`` and fullwidth ``．／`` become ``..`` and ``/``
    in some tools). Writes must also stay inside a supporting folder.
    """
    if not isinstance(file, str) or not file:
        raise SkillError("path", "a file path relative to the skill folder is required")
    shown = repr(file[:80])
    if len(file) > RELPATH_MAX:
        raise SkillError("path", f"file path {shown}… is over {RELPATH_MAX} chars")
    for ch in file:
        category = unicodedata.category(ch)
        if category in ("Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"):
            raise SkillError(
                "path", f"file path {shown} contains the control character U+{ord(ch):04X}"
            )
    if unicodedata.normalize("NFKC", file) != file:
        raise SkillError(
            "path",
            f"file path {shown} changes under Unicode normalisation (to "
            f"{unicodedata.normalize('NFKC', file)[:80]!r}); use plain characters",
        )
    if file.startswith(("/", "~")) or re.match(r"^[A-Za-z]:", file):
        raise SkillError("path", f"file path {shown} is absolute; give it relative to the skill")
    bad = sorted(_FORBIDDEN_CHARS.intersection(file))
    if bad:
        raise SkillError("path", f"file path {shown} contains {' '.join(bad)}; use '/' only")
    parts = file.split("/")
    if len(parts) > DEPTH_MAX:
        raise SkillError("path", f"file path {shown} is nested deeper than {DEPTH_MAX} levels")
    for part in parts:
        if part in ("", ".", ".."):
            raise SkillError("path", f"file path {shown} may not contain empty, '.' or '..' parts")
        if part.startswith("."):
            raise SkillError("path", f"file path {shown}: hidden names ({part!r}) are not allowed")
        if part.endswith((".", " ")) or part.startswith(" "):
            raise SkillError("path", f"file path {shown}: {part!r} starts or ends badly")
        if len(part) > COMPONENT_MAX:
            raise SkillError("path", f"file path {shown}: a part is over {COMPONENT_MAX} chars")
        if part.split(".")[0].strip().lower() in _WINDOWS_DEVICES:
            raise SkillError("path", f"file path {shown}: {part!r} is a reserved device name")
    rel = PurePosixPath(file)
    if for_write:
        if rel.name == SKILL_FILE and len(parts) == 1:
            raise SkillError("path", "SKILL.md is changed with edit or patch, not write_file")
        if len(parts) < 2 or parts[0] not in SUPPORT_DIRS:
            raise SkillError(
                "path",
                f"file path {shown} must be inside one of {', '.join(SUPPORT_DIRS)} "
                "(e.g. references/notes.md)",
            )
    return rel


def resolve_in_skill(skill_dir: Path, rel: PurePosixPath, *, for_write: bool) -> Path:
    """The real path of ``rel`` inside ``skill_dir``, after checking the filesystem.

    Reads may follow a symlink that stays inside the skill; writes refuse every symlink below
    the skill folder, since a link that points inside today can be re-pointed tomorrow.
    Either way the resolved path must lie inside the skill folder.
    """
    target = skill_dir.joinpath(*rel.parts)
    if for_write:
        current = skill_dir
        for part in rel.parts:
            current = current / part
            try:
                mode = os.lstat(current).st_mode
            except FileNotFoundError:
                break
            if stat.S_ISLNK(mode):
                raise SkillError(
                    "path", f"{rel} goes through a symbolic link ({current.name}); refused"
                )
    if not resolves_inside(target, skill_dir):
        raise SkillError("path", f"{rel} resolves outside the skill folder; refused")
    return target


# --------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------


class LoadProblem(BaseModel):
    """A skill that could not be loaded, with where and why."""

    path: str
    line: int | None = None
    message: str


class Skill(BaseModel):
    """One loaded skill: its front matter and where it lives (the body is read on demand)."""

    meta: SkillMeta
    category: str | None = None
    folder: Path
    size: int  # bytes of SKILL.md

    @property
    def name(self) -> str:
        return self.meta.name

    @property
    def ref(self) -> str:
        """``category/name`` or ``name``: what the index shows."""
        return f"{self.category}/{self.name}" if self.category else self.name

    @property
    def skill_md(self) -> Path:
        return self.folder / SKILL_FILE


class SkillDocument(BaseModel):
    skill: Skill
    text: str
    body: str
    body_line: int


class Catalog(BaseModel):
    skills: list[Skill] = Field(default_factory=list)
    problems: list[LoadProblem] = Field(default_factory=list)

    def find(self, name: str) -> Skill:
        """The skill called ``name`` (or ``category/name``), else ``not_found``."""
        if not isinstance(name, str) or not name:
            raise SkillError("invalid", "a skill name is required")
        category, _, bare = name.rpartition("/")
        for skill in self.skills:
            if skill.name == bare and (not category or skill.category == category):
                return skill
        for problem in self.problems:
            if f"/{bare}/" in f"/{problem.path}":
                raise SkillError(
                    "malformed", f"skill {name!r} is broken: {problem.message}", path=problem.path
                )
        known = ", ".join(s.ref for s in self.skills[:20]) or "none"
        raise SkillError("not_found", f"no skill named {name!r}; skills: {known}")


def _rel(home: Home, path: Path) -> str:
    try:
        return str(path.relative_to(home.skills_dir))
    except ValueError:
        return str(path)


# Front matter of files already parsed in this process, keyed by what changes on any rewrite
# (every Cairn write replaces the inode). Parsing is most of the cost of loading a catalogue,
# and the index, skill_view() and the desktop client load it again and again.
_META_CACHE: dict[tuple[str, int, int, int], SkillMeta] = {}
_META_CACHE_MAX = 4096
_RACY_NS = 2_000_000_000


def _load_one(home: Home, folder: Path, category: str | None) -> Skill:
    path = folder / SKILL_FILE
    shown = _rel(home, path)
    try:
        info = os.lstat(path)
        if stat.S_ISLNK(info.st_mode):
            if not resolves_inside(path, folder):
                raise SkillError("path", f"{shown}: a symbolic link pointing outside the skill")
            info = path.stat()
        size = info.st_size
        key = (str(path), info.st_ino, info.st_mtime_ns, size)
        cached = _META_CACHE.get(key)
        if cached is not None:
            return Skill(meta=cached, category=category, folder=folder, size=size)
        if size > READ_CEILING_BYTES:
            raise SkillError("too_large", f"{shown}: {size:,} bytes is too large to read")
        # Loading needs the front matter only; the body is read when the skill is viewed.
        with path.open("rb") as handle:
            head = handle.read(_HEAD_BYTES)
        if len(head) == _HEAD_BYTES:
            head = head[: head.rfind(b"\n") + 1]
        text = decode_utf8(head)
    except UnicodeDecodeError as exc:
        raise SkillError(
            "malformed", f"{shown}: not valid UTF-8 (byte offset {exc.start})", file=shown
        ) from None
    except OSError as exc:
        raise SkillError("io", f"{shown}: cannot be read ({exc.strerror})") from None
    parsed = parse_skill_md(text, shown)
    if parsed.meta.name != folder.name:
        front = text.split("\n", 1)[-1].split("\n---", 1)[0]
        line = _line_of_key(front, "name")
        raise _fail(
            shown,
            line,
            f"name {parsed.meta.name!r} does not match its folder {folder.name!r}; "
            "rename one so they agree",
        )
    # File times tick coarsely (a few ms), so a same-size rewrite in place moments after a
    # load could look unchanged; like git's "racily clean" entries, a file modified in the last
    # seconds is parsed again next time rather than trusted to the cache.
    if time.time_ns() - info.st_mtime_ns > _RACY_NS:
        if len(_META_CACHE) >= _META_CACHE_MAX:
            _META_CACHE.clear()
        _META_CACHE[key] = parsed.meta
    return Skill(meta=parsed.meta, category=category, folder=folder, size=size)


def _subdirs(folder: Path) -> list[Path]:
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return []
    # Dot-folders hold Cairn's bookkeeping and other tools' (.hub, .trash, temp dirs).
    return [Path(e.path) for e in entries if not e.name.startswith(".") and e.is_dir()]


def load_catalog(home: Home) -> Catalog:
    """Every skill under ``<home>/skills``; broken ones become problems, never exceptions.

    Uncategorised skills come first, then categories alphabetically. A name already taken
    by an earlier skill is a problem for the later one: names are what the model asks for.
    """
    catalog = Catalog()
    seen: dict[str, Skill] = {}

    def add(folder: Path, category: str | None) -> None:
        try:
            skill = _load_one(home, folder, category)
        except SkillError as exc:
            line = exc.details.get("line")
            catalog.problems.append(
                LoadProblem(path=_rel(home, folder / SKILL_FILE), line=line, message=exc.message)
            )
            return
        earlier = seen.get(skill.name)
        if earlier is not None:
            catalog.problems.append(
                LoadProblem(
                    path=_rel(home, skill.skill_md),
                    message=f"skill name {skill.name!r} is already used by {earlier.ref}; "
                    "this copy is ignored until one is renamed",
                )
            )
            return
        seen[skill.name] = skill
        catalog.skills.append(skill)

    top = _subdirs(home.skills_dir)
    categories = []
    for folder in top:
        if (folder / SKILL_FILE).exists():
            add(folder, None)
        else:
            categories.append(folder)
    for category in categories:
        for folder in _subdirs(category):
            if (folder / SKILL_FILE).exists():
                add(folder, category.name)
    return catalog


def find_skill(home: Home, name: str) -> Skill:
    """Load the one skill called ``name`` (or ``category/name``) without loading the others.

    Looks where :func:`load_catalog` would find it first: uncategorised, then categories in
    alphabetical order.
    """
    if not isinstance(name, str) or not name:
        raise SkillError("invalid", "a skill name is required")
    category, _, bare = name.rpartition("/")
    check_name(bare)
    if category:
        check_name(category, "category")
        candidates = [(home.skills_dir / category / bare, category)]
    else:
        candidates = [(home.skills_dir / bare, None)]
        candidates += [(folder / bare, folder.name) for folder in _subdirs(home.skills_dir)]
    for folder, cat in candidates:
        if folder.name.startswith(".") or not (folder / SKILL_FILE).is_file():
            continue
        if cat is not None and (folder.parent / SKILL_FILE).exists():
            continue  # inside a skill folder, not a category
        return _load_one(home, folder, cat)
    raise SkillError(
        "not_found", f"no skill named {name!r}; call skill_view without a name to list them"
    )


def read_document(skill: Skill) -> SkillDocument:
    """The SKILL.md of a loaded skill, read now (it may have changed since loading)."""
    path = skill.skill_md
    try:
        if not resolves_inside(path, skill.folder):
            raise SkillError("path", f"{skill.ref}/SKILL.md points outside the skill")
        if path.stat().st_size > READ_CEILING_BYTES:
            raise SkillError("too_large", f"{skill.ref}/SKILL.md is too large to read")
        text = decode_utf8(path.read_bytes())
    except FileNotFoundError:
        raise SkillError("not_found", f"skill {skill.ref!r} was removed") from None
    except UnicodeDecodeError as exc:
        raise SkillError(
            "malformed", f"{skill.ref}/SKILL.md is not valid UTF-8 (byte offset {exc.start})"
        ) from None
    except OSError as exc:
        raise SkillError("io", f"{skill.ref}/SKILL.md cannot be read ({exc.strerror})") from None
    parsed = parse_skill_md(text, f"{skill.ref}/SKILL.md")
    return SkillDocument(skill=skill, text=text, body=parsed.body, body_line=parsed.body_line)


def read_file(skill: Skill, file: str) -> tuple[PurePosixPath, bytes]:
    """A supporting file's path and bytes, after the path checks."""
    rel = check_relpath(file, for_write=False)
    path = resolve_in_skill(skill.folder, rel, for_write=False)
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            raise SkillError("not_found", f"{skill.ref} has no file {file!r}")
        if info.st_size > READ_CEILING_BYTES:
            raise SkillError("too_large", f"{skill.ref}/{rel} is {info.st_size:,} bytes; too large")
        return rel, path.read_bytes()
    except FileNotFoundError:
        files = ", ".join(f for f, _ in list_files(skill)[:30]) or "none"
        raise SkillError(
            "not_found", f"{skill.ref} has no file {file!r}; its files: {files}"
        ) from None
    except OSError as exc:
        raise SkillError("io", f"{skill.ref}/{rel} cannot be read ({exc.strerror})") from None


def list_files(skill: Skill) -> list[tuple[str, int]]:
    """Supporting files (relative path, bytes), sorted; links and hidden names are skipped."""
    found: list[tuple[str, int]] = []
    root = skill.folder
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if name.startswith("."):
                continue
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            if rel == SKILL_FILE:
                continue
            try:
                info = os.lstat(path)
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode):
                found.append((rel, info.st_size))
    return found
