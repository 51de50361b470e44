"""Profiles: complete, separate homes under one root, and which one commands use.

A profile ``work`` is the folder ``<root>/profiles/work``, laid out exactly like the root home:
its own config.yaml, SOUL.md, memories, session database, skills, pending writes, fact store
and cron jobs. Nothing reads across: every store is a path inside the profile's folder. The
only way to look into another profile is explicit and read-only
(``cairn sessions search --profile other --readonly``).

``default`` names the root itself. ``cairn profile use NAME`` writes ``<root>/active_profile``;
commands given no ``--profile`` use the profile named there (see :mod:`engine.home`).

Creating a profile copies nothing unless asked:

* ``--clone`` copies config.yaml and SOUL.md: the model settings and the persona, no
  knowledge. ``database.url`` is left out: two profiles on one session database would share
  their sessions.
* ``--clone-all`` copies the whole home: memories, skills, pending writes, and the SQLite
  databases (sessions and the fact store) through SQLite's online backup, so a database in use
  is copied consistently. Left out: other profiles, the active-profile pointer, cron jobs (a
  copied job would run twice, once per profile), migration backups, locks and temp files.
  Symlinked files are copied as files, never as links, so the two profiles cannot end up
  writing one file; symlinked folders are skipped and reported.

After a clone the two profiles share nothing: a later change in one never shows in the other.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from engine import cron
from engine.config import DELETE, ConfigError, read_raw, update_config
from engine.errors import CairnError
from engine.fsutil import TEMP_PREFIX, atomic_write_text, locked
from engine.home import (
    PROFILE_NAME,
    ROOT_PROFILE,
    Home,
    HomeError,
    read_active_profile,
    validate_profile_name,
)

CloneMode = Literal["none", "config", "all"]

CONFIG_FILES = ("config.yaml", "SOUL.md")
# Top-level names --clone-all never copies (see the module docstring for why).
NOT_CLONED = frozenset({"profiles", "active_profile", "cron", "migration"})
SQLITE_SIDECARS = ("-wal", "-shm", "-journal")
SQLITE_MAGIC = b"SQLite format 3\x00"
STAGING_PREFIX = ".creating-"
DELETING_PREFIX = ".deleting-"


class ProfileError(CairnError):
    """A refused profile operation (``code``: ``invalid``, ``exists``, ``not_found``, …)."""


class ProfileInfo(BaseModel):
    name: str
    path: str
    active: bool
    exists: bool
    model: str | None = None
    memory_chars: int = 0
    user_chars: int = 0
    sessions: int | None = None
    skills: int = 0
    pending: int = 0
    cron_jobs: int = 0
    problems: list[str] = Field(default_factory=list)


class CreateReport(BaseModel):
    name: str
    path: str
    mode: CloneMode
    source: str | None = None
    copied: list[str] = Field(default_factory=list)
    skipped: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)


class Profiles:
    """The profiles of one root home."""

    def __init__(self, root: Home) -> None:
        self.root = root

    # -- naming and lookup -----------------------------------------------------------------

    def home(self, name: str) -> Home:
        try:
            return self.root.profile(name)
        except HomeError as exc:
            raise ProfileError("invalid", str(exc)) from exc

    def names(self) -> list[str]:
        """Profiles on disk (folders with a valid name), sorted; ``default`` not included."""
        folder = self.root.profiles_dir
        if not folder.is_dir():
            return []
        return sorted(
            p.name
            for p in folder.iterdir()
            if PROFILE_NAME.fullmatch(p.name) and p.name != ROOT_PROFILE and p.is_dir()
        )

    def exists(self, name: str) -> bool:
        return name == ROOT_PROFILE or name in self.names()

    def active(self) -> str:
        try:
            return read_active_profile(self.root) or ROOT_PROFILE
        except HomeError as exc:
            raise ProfileError("invalid", str(exc)) from exc

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        try:
            self.root.safe_folder(self.root.profiles_dir).mkdir(parents=True, exist_ok=True)
        except HomeError as exc:
            raise ProfileError("unsafe", str(exc)) from exc
        with locked(self.root.profiles_dir / ".lock"):
            yield

    # -- reading -----------------------------------------------------------------------------

    def info(self, name: str) -> ProfileInfo:
        home = self.home(name)
        try:
            active = self.active() == name
        except ProfileError:
            active = False
        info = ProfileInfo(name=name, path=str(home.root), active=active, exists=self.exists(name))
        if not info.exists:
            return info
        _describe(home, info)
        return info

    def list(self) -> list[ProfileInfo]:
        infos = []
        for name in [ROOT_PROFILE, *self.names()]:
            try:
                infos.append(self.info(name))
            except ProfileError as exc:  # a linked folder leading out: listed, never used
                path = str(self.root.profiles_dir / name)
                infos.append(
                    ProfileInfo(
                        name=name, path=path, active=False, exists=True, problems=[exc.message]
                    )
                )
        return infos

    # -- changing ------------------------------------------------------------------------

    def use(self, name: str) -> None:
        self.home(name)  # a bad name fails here, before the pointer changes
        if not self.exists(name):
            raise ProfileError(
                "not_found", f"no profile {name!r}; create it with `cairn profile create {name}`"
            )
        self.root.root.mkdir(parents=True, exist_ok=True)
        with self._locked():
            if name == ROOT_PROFILE:
                self.root.active_profile_file.unlink(missing_ok=True)
            else:
                atomic_write_text(self.root.active_profile_file, name + "\n")

    def create(
        self, name: str, clone: CloneMode = "none", source: str | None = None
    ) -> CreateReport:
        try:
            validate_profile_name(name)
        except HomeError as exc:
            raise ProfileError("invalid", str(exc)) from exc
        if name == ROOT_PROFILE:
            raise ProfileError("invalid", f"{ROOT_PROFILE!r} is the root home; pick another name")
        origin_name = source if source is not None else self.active()
        origin = self.home(origin_name)
        if clone != "none" and not self.exists(origin_name):
            raise ProfileError("not_found", f"no profile {origin_name!r} to clone from")
        report = CreateReport(
            name=name,
            path=str(self.home(name).root),
            mode=clone,
            source=origin_name if clone != "none" else None,
        )
        with self._locked():
            target = self.home(name).root
            if target.exists():
                raise ProfileError("exists", f"profile {name!r} exists at {target}")
            # Built aside and renamed into place: a crash or a failed copy never leaves a
            # half-made profile under the real name.
            staging = self.root.profiles_dir / f"{STAGING_PREFIX}{name}-{secrets.token_hex(4)}"
            staging.mkdir()
            try:
                if clone == "config":
                    _clone_config(origin, Home(staging), report)
                elif clone == "all":
                    _clone_all(origin, Home(staging), report)
                try:
                    os.rename(staging, target)
                except OSError as exc:
                    raise ProfileError(
                        "exists", f"profile {name!r} appeared at {target} meanwhile"
                    ) from exc
            except BaseException:
                shutil.rmtree(staging, ignore_errors=True)
                raise
        return report

    def delete(self, name: str) -> str:
        """Delete profile ``name`` and everything in it; refuses the active profile, the root,
        and a profile with a cron job running. Returns the deleted path."""
        home = self.home(name)
        if name == ROOT_PROFILE:
            raise ProfileError("refused", "the root home cannot be deleted as a profile")
        if not self.exists(name):
            raise ProfileError("not_found", f"no profile {name!r}")
        with self._locked():
            if self.active() == name:
                raise ProfileError(
                    "active",
                    f"{name!r} is the active profile; `cairn profile use default` (or another) "
                    "first",
                )
            # Holding every run lock: no job of the profile can start while it goes away.
            with cron.all_runs_held(home) as busy:
                if busy:
                    raise ProfileError(
                        "busy", f"cron job(s) {', '.join(busy)} of {name!r} are running"
                    )
                # Renamed first so the profile disappears at once; the removal after may take
                # a while and a failure half-way leaves only a hidden folder behind.
                doomed = self.root.profiles_dir / f"{DELETING_PREFIX}{name}-{secrets.token_hex(4)}"
                os.rename(home.root, doomed)
        shutil.rmtree(doomed, ignore_errors=True)
        if doomed.exists():
            raise ProfileError(
                "partial", f"profile {name!r} is gone, but {doomed} could not be fully removed"
            )
        return str(home.root)


# -- describing ----------------------------------------------------------------------------


def _chars(path: Path) -> int:
    try:
        return len(path.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return 0


def _describe(home: Home, info: ProfileInfo) -> None:
    try:
        raw = read_raw(home.config_file)
        model = raw.get("model")
        if isinstance(model, dict):
            info.model = model.get("model") or model.get("provider")
        elif isinstance(model, str):
            info.model = model
    except ConfigError as exc:  # bounded like every config read: size, aliases
        info.problems.append(str(exc))
    info.memory_chars = _chars(home.memories_dir / "MEMORY.md")
    info.user_chars = _chars(home.memories_dir / "USER.md")
    info.sessions = _count_sessions(home)
    if home.skills_dir.is_dir():
        info.skills = sum(1 for _ in home.skills_dir.rglob("SKILL.md"))
    if home.pending_dir.is_dir():
        info.pending = sum(1 for _ in home.pending_dir.rglob("*.json"))
    try:
        jobs, _ = cron.load_jobs(home)
        info.cron_jobs = len(jobs)
    except cron.CronError as exc:
        info.problems.append(exc.message)


def _count_sessions(home: Home) -> int | None:
    """Sessions in the profile's embedded database, read-only; None when there is none."""
    for path in (home.own_db, home.state_db):
        if not _is_sqlite(path):
            continue
        try:
            conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
        except sqlite3.Error:
            continue
        try:
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
            if "sessions" in tables:
                return int(conn.execute("SELECT count(*) FROM sessions").fetchone()[0])
        except sqlite3.Error:
            continue
        finally:
            conn.close()
    return None


# -- cloning -------------------------------------------------------------------------------


def _is_sqlite(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(16) == SQLITE_MAGIC
    except OSError:
        return False


def _copy_sqlite(source: Path, target: Path) -> None:
    src = sqlite3.connect(f"{source.as_uri()}?mode=ro", uri=True)
    try:
        dst = sqlite3.connect(target)
        try:
            src.backup(dst)
        finally:
            dst.close()
    finally:
        src.close()


def _clone_config(origin: Home, target: Home, report: CreateReport) -> None:
    for name in CONFIG_FILES:
        source = origin.root / name
        if not source.is_file():
            continue
        shutil.copyfile(source, target.root / name)  # follows a symlink: a copy, not a link
        report.copied.append(name)
    _drop_shared_database(target, report)


def _drop_shared_database(target: Home, report: CreateReport) -> None:
    path = target.config_file
    if not path.is_file():
        return
    try:
        raw = read_raw(path)
    except ConfigError as exc:
        report.warnings.append(f"config.yaml copied as is; it could not be read: {exc}")
        return
    database = raw.get("database")
    if isinstance(database, dict) and database.get("url"):
        try:  # only that key goes: comments and the rest of the file stay as they were
            update_config(target, {"database": {"url": DELETE}})
        except ConfigError as exc:
            report.warnings.append(f"config.yaml copied as is; database.url kept: {exc}")
            return
        finally:  # the profile is still being built aside: nobody else holds its lock
            (target.root / "config.yaml.lock").unlink(missing_ok=True)
        report.warnings.append(
            "database.url was not copied: two profiles on one database would share their "
            "sessions; the new profile uses its own SQLite file until you set another URL"
        )


def _skip_file(name: str) -> bool:
    return name.startswith(TEMP_PREFIX) or name.endswith(".lock") or name.endswith(SQLITE_SIDECARS)


def _clone_all(origin: Home, target: Home, report: CreateReport) -> None:
    base = origin.root
    for folder, dirnames, filenames in os.walk(base, followlinks=False):
        here = Path(folder)
        relative = here.relative_to(base)
        keep_dirs = []
        for name in sorted(dirnames):
            path = here / name
            rel = (relative / name).as_posix()
            if relative == Path(".") and name in NOT_CLONED:
                continue
            if name.startswith((STAGING_PREFIX, DELETING_PREFIX)):
                continue
            if path.is_symlink():
                report.skipped.append(f"{rel}/ (a symlinked folder)")
                continue
            keep_dirs.append(name)
            (target.root / rel).mkdir()
        dirnames[:] = keep_dirs
        for name in sorted(filenames):
            path = here / name
            rel = (relative / name).as_posix()
            if relative == Path(".") and name in NOT_CLONED:
                continue
            if _skip_file(name):
                continue
            destination = target.root / rel
            try:
                if not path.is_file():  # dangling link, socket, fifo
                    report.skipped.append(f"{rel} (not a regular file)")
                    continue
                if _is_sqlite(path):
                    _copy_sqlite(path, destination)
                else:
                    shutil.copyfile(path, destination)
                    shutil.copymode(path, destination)
            except (OSError, sqlite3.Error) as exc:
                raise ProfileError("copy", f"could not copy {path}: {exc}") from exc
            report.copied.append(rel)
    _drop_shared_database(target, report)
