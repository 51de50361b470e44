"""Where Cairn keeps its data: the home folder, its profiles and the paths inside it.

Resolution order: an explicit ``--home`` beats ``CAIRN_HOME``, which beats ``~/.cairn``. A
profile is a complete, separate home under ``<home>/profiles/<name>``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

PROFILE_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
HOME_ENV = "CAIRN_HOME"


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

    def profile(self, name: str) -> Home:
        return Home(self.profiles_dir / validate_profile_name(name))


def validate_profile_name(name: str) -> str:
    if not PROFILE_NAME.fullmatch(name):
        raise HomeError(
            f"invalid profile name {name!r}: use 1-64 characters, lowercase letters, digits, "
            "'_' or '-', starting with a letter or digit"
        )
    return name


def resolve_home(
    home: str | os.PathLike[str] | None = None,
    profile: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> Home:
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
    return base if profile is None else base.profile(profile)
