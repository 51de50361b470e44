"""Where Cairn keeps its data: the home folder, its profiles and the paths inside it.

Two steps pick the home a command uses:

1. The *root*: an explicit ``--home`` beats ``CAIRN_HOME``, which beats ``~/.cairn``.
2. The *profile* inside that root: an explicit ``--profile`` beats the name in
   ``<root>/active_profile`` (written by ``cairn profile use``), which beats the root itself.

A profile is a complete, separate home under ``<root>/profiles/<name>``. The name ``default``
means the root itself, so ``--profile default`` reaches it whatever profile is active. Because
the active profile is a file inside the root, it follows whichever root ``--home`` or
``CAIRN_HOME`` chose; a ``--home`` pointing straight at a profile's folder uses that folder as a
root of its own (its data, no active profile of its parent).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from engine.fsutil import link_target, read_text, resolves_inside

PROFILE_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
HOME_ENV = "CAIRN_HOME"
ROOT_PROFILE = "default"  # the root home itself, never a folder under profiles/
ACTIVE_PROFILE_FILE = "active_profile"


class HomeError(ValueError):
    """The home or profile asked for cannot be used."""


@dataclass(frozen=True)
class Home:
    root: Path

    @property
    def config_file(self) -> Path:
        return self.root / "config.yaml"

    @property
    def memories_dir(self) -> Path:
        return self.root / "memories"

    @property
    def pending_memory_dir(self) -> Path:
        return self.root / "pending" / "memory"

    @property
    def state_db(self) -> Path:
        return self.root / "state.db"

    @property
    def own_db(self) -> Path:
        """Cairn's database when ``state.db`` belongs to another program (a shared Hermes home)."""
        return self.root / "cairn.db"

    @property
    def soul_file(self) -> Path:
        return self.root / "SOUL.md"

    @property
    def skills_dir(self) -> Path:
        return self.root / "skills"

    @property
    def pending_dir(self) -> Path:
        return self.root / "pending"

    @property
    def memory_store_db(self) -> Path:
        """The holographic provider's fact store."""
        return self.root / "memory_store.db"

    @property
    def cron_dir(self) -> Path:
        return self.root / "cron"

    @property
    def migration_dir(self) -> Path:
        return self.root / "migration"

    @property
    def profiles_dir(self) -> Path:
        return self.root / "profiles"

    @property
    def active_profile_file(self) -> Path:
        return self.root / ACTIVE_PROFILE_FILE

    def profile(self, name: str) -> Home:
        """The profile ``name`` of this (root) home; ``default`` is the home itself.

        A profile folder (or ``profiles/`` itself) that is a link leading out of the root is
        refused: ``profiles/evil -> /etc`` would make every write of that profile land there.
        """
        if validate_profile_name(name) == ROOT_PROFILE:
            return self
        return Home(self.safe_folder(self.profiles_dir / name))

    def safe_folder(self, folder: Path) -> Path:
        """``folder`` (a folder of this home Cairn creates files in), checked not to lead out of
        the home through a link; :class:`HomeError` naming the link otherwise.

        The rule (docs/profiles-and-cron.md): single files of a home may be links anywhere (a
        MEMORY.md kept in a dotfiles repository is written through), folders may not; a link
        to a folder is followed only while it stays inside the home.
        """
        if not resolves_inside(folder, self.root):
            link = _outermost_link(folder, self.root)
            raise HomeError(
                f"{link} is a link to {link_target(link)}, outside the home {self.root}; "
                "Cairn does not create files through a linked folder. Replace the link with a "
                "real folder (links to single files, such as MEMORY.md, are fine)"
            )
        return folder


def _outermost_link(folder: Path, root: Path) -> Path:
    """The first component of ``folder`` below ``root`` that is a link (for the message)."""
    try:
        parts = folder.relative_to(root).parts
    except ValueError:
        return folder
    current = root
    for part in parts:
        current = current / part
        if current.is_symlink():
            return current
    return folder


def validate_profile_name(name: str) -> str:
    if not PROFILE_NAME.fullmatch(name):
        raise HomeError(
            f"invalid profile name {name!r}: use 1-64 characters, lowercase letters, digits, "
            "'_' or '-', starting with a letter or digit"
        )
    return name


def read_active_profile(root: Home) -> str | None:
    """The profile ``cairn profile use`` chose for ``root``, or None for the root itself.

    A damaged file is an error rather than a silent fall-back to the root: running as the wrong
    profile would mix one profile's memory and sessions into another's.
    """
    path = root.active_profile_file
    try:
        text = read_text(path).strip()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise HomeError(f"{path} cannot be read ({exc}); fix or delete that file") from exc
    if not text or text == ROOT_PROFILE:
        return None
    if not PROFILE_NAME.fullmatch(text):
        raise HomeError(
            f"{path} names {text[:80]!r}, which is not a profile name; fix or delete that file"
        )
    return text


def resolve_root(
    home: str | os.PathLike[str] | None = None, environ: Mapping[str, str] | None = None
) -> Home:
    """The root home (``--home`` > ``CAIRN_HOME`` > ``~/.cairn``), before any profile."""
    env = os.environ if environ is None else environ
    if home is not None and str(home) != "":
        root = Path(home)
    elif env.get(HOME_ENV):
        root = Path(env[HOME_ENV])
    else:
        root = Path.home() / ".cairn"
    base = Home(root.expanduser().absolute())
    if base.root.exists() and not base.root.is_dir():
        raise HomeError(f"home {base.root} exists and is not a folder")
    return base


def resolve_home(
    home: str | os.PathLike[str] | None = None,
    profile: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> Home:
    base = resolve_root(home, environ)
    if profile is None:
        profile = read_active_profile(base)
        if profile is None:
            return base
    return base.profile(profile)
