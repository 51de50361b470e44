"""``cairn claw cleanup``: move leftover OpenClaw folders out of the way, deleting nothing.

After a migration the old folders still sit in the home directory, and tools (or an agent
told to "check your configuration") keep finding them. Cleanup renames each one to
``<name>.pre-migration`` — ``.pre-migration.2``, ``.3`` … when that name is taken — so undoing
it is one ``mv``.

A folder that a running process uses is not renamed: a running OpenClaw gateway would recreate
an empty ``~/.openclaw`` at once and lose track of its configuration (upstream users lost
multi-agent setups this way). On Linux the check looks at every process's working directory
and command line; elsewhere it cannot look, and says so.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from engine.errors import CairnError
from engine.migrate.openclaw import STATE_DIR_ENV, STATE_DIR_NAMES

SUFFIX = ".pre-migration"
ARCHIVED = re.compile(r"\.pre-migration(\.\d+)?$")  # already renamed: never renamed again
MAX_SUFFIX = 999

RenameStatus = Literal["planned", "renamed", "refused", "failed"]


class CleanupError(CairnError):
    """A refused cleanup of a migrated source; ``code`` is stable for scripts."""


class Rename(BaseModel):
    source: Path
    destination: Path | None = None
    status: RenameStatus = "planned"
    reason: str | None = None
    processes: list[str] = Field(default_factory=list)


class CleanupReport(BaseModel):
    renames: list[Rename]
    applied: bool = False
    notes: list[str] = Field(default_factory=list)

    @property
    def planned(self) -> list[Rename]:
        return [r for r in self.renames if r.status == "planned"]


def _exists(path: Path) -> bool:
    return os.path.lexists(path)


def find_leftovers(
    *,
    sources: list[Path] | None = None,
    user_home: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> list[Path]:
    """The OpenClaw folders present: ``sources`` if given, else ``$OPENCLAW_STATE_DIR`` and
    ``~/.openclaw``, ``~/.clawdbot``, ``~/.moltbot``, ``~/.moldbot``."""
    if sources:
        missing = [p for p in sources if not _exists(p)]
        if missing:
            raise CleanupError("not_found", f"{missing[0]} does not exist")
        found = [p.absolute() for p in sources]
    else:
        env = os.environ if environ is None else environ
        home = user_home if user_home is not None else Path.home()
        found = [home / name for name in STATE_DIR_NAMES]
        if env.get(STATE_DIR_ENV):
            found.insert(0, Path(env[STATE_DIR_ENV]).expanduser().absolute())
        found = [p for p in found if _exists(p)]
    unique: list[Path] = []
    for path in found:
        if path not in unique and not ARCHIVED.search(path.name):
            unique.append(path)
    return unique


def archive_name(path: Path, taken: set[Path] | None = None) -> Path:
    """The first free ``<path>.pre-migration[.N]`` (also avoiding names in ``taken``)."""
    taken = taken or set()
    for n in range(1, MAX_SUFFIX + 1):
        candidate = path.with_name(path.name + SUFFIX + ("" if n == 1 else f".{n}"))
        if candidate not in taken and not _exists(candidate):
            return candidate
    raise CleanupError("collision", f"every name up to {path.name}{SUFFIX}.{MAX_SUFFIX} is taken")


# -- who is using a folder -----------------------------------------------------------------------


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _product(folder: Path) -> str:
    return folder.name.lstrip(".").lower()


def processes_using(folder: Path, proc: Path = Path("/proc")) -> list[str]:
    """``"pid N: command"`` for each other process whose working directory or command line
    lies in ``folder``, or that runs the program the folder belongs to (``openclaw`` …)."""
    if not proc.is_dir():
        return []
    real = os.path.realpath(folder)
    product = _product(folder)
    users = []
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            raw = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        # Empty for kernel threads, and for a moment for a process being started.
        args = [a.decode("utf-8", "replace") for a in raw.split(b"\0") if a]
        cwd = ""
        with contextlib.suppress(OSError):
            cwd = os.readlink(entry / "cwd")
        hit = _inside(cwd, real) if cwd else False
        for arg in args[:3]:
            parts = Path(arg).parts
            if (arg.startswith("/") and _inside(os.path.realpath(arg), real)) or any(
                part.lower() in (product, f"{product}-gateway") for part in parts
            ):
                hit = True
        if hit:
            users.append(f"pid {entry.name}: {' '.join(args)[:120] or '(starting)'}")
    return users


# -- plan and apply ------------------------------------------------------------------------------


def plan_cleanup(
    *,
    sources: list[Path] | None = None,
    user_home: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> CleanupReport:
    report = CleanupReport(renames=[])
    taken: set[Path] = set()
    for folder in find_leftovers(sources=sources, user_home=user_home, environ=environ):
        rename = Rename(source=folder)
        users = processes_using(folder)
        if users:
            rename.status, rename.processes = "refused", users
            rename.reason = (
                "in use by a running process; stop it first (for OpenClaw: "
                "`openclaw gateway stop`, or stop its service), then run cleanup again"
            )
        else:
            rename.destination = archive_name(folder, taken)
            taken.add(rename.destination)
        report.renames.append(rename)
    if not sys.platform.startswith("linux"):
        report.notes.append("running processes could not be checked on this system")
    return report


def _rename(source: Path, destination: Path) -> None:
    if source.is_dir() and not source.is_symlink():
        # Reserve the name first: rename(2) onto an existing *empty* folder replaces it
        # silently, so creating it exclusively is what makes "never overwrite" hold even if
        # another program creates that name between the plan and now.
        os.mkdir(destination)
        try:
            os.rename(source, destination)
        except BaseException:
            with contextlib.suppress(OSError):
                os.rmdir(destination)  # our own empty placeholder, nothing else
            raise
        return
    if _exists(destination):
        raise FileExistsError(destination)
    os.rename(source, destination)


def apply_cleanup(report: CleanupReport) -> CleanupReport:
    done = report.model_copy(deep=True)
    done.applied = True
    taken: set[Path] = set()
    for rename in done.renames:
        if rename.status != "planned" or rename.destination is None:
            continue
        destination = rename.destination
        if _exists(destination) or destination in taken:
            destination = archive_name(rename.source, taken)
        try:
            _rename(rename.source, destination)
        except FileExistsError:
            try:
                destination = archive_name(rename.source, taken)
                _rename(rename.source, destination)
            except OSError as exc:
                rename.status, rename.reason = "failed", str(exc.strerror or exc)
                continue
        except OSError as exc:
            rename.status, rename.reason = "failed", str(exc.strerror or exc)
            continue
        taken.add(destination)
        rename.destination, rename.status = destination, "renamed"
    return done
