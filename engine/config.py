"""``<home>/config.yaml``: typed settings with the reference design's keys.

The file is shared with other tools (a Hermes Agent home has one too), so Cairn never rewrites it
from its own model: a change is a small patch merged into the file as it is on disk, and keys
Cairn does not know survive untouched.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from engine.fsutil import atomic_write_text, locked
from engine.home import Home


class ConfigError(ValueError):
    """config.yaml cannot be read or holds an invalid value; the message names file and key."""


class _Section(BaseModel):
    # Unknown keys are kept (and written back) so another tool's settings are never dropped.
    model_config = ConfigDict(extra="allow", validate_assignment=True)


class MemoryConfig(_Section):
    memory_enabled: bool = True
    user_profile_enabled: bool = True
    memory_char_limit: int = Field(default=2200, ge=1, le=1_000_000)
    user_char_limit: int = Field(default=1375, ge=1, le=1_000_000)
    write_approval: bool = False
    nudge_interval: int = Field(default=10, ge=0)
    provider: str | None = None


class DisplayConfig(_Section):
    memory_notifications: Literal["off", "on", "verbose"] = "on"

    @field_validator("memory_notifications", mode="before")
    @classmethod
    def _yaml_booleans(cls, value: Any) -> Any:
        # YAML 1.1 reads a bare `on`/`off` as a boolean; the documented values are those words.
        if value is True:
            return "on"
        if value is False:
            return "off"
        return value


class CompressionConfig(_Section):
    threshold: float = Field(default=0.5, gt=0.0, le=1.0)


class DatabaseConfig(_Section):
    # None: the embedded SQLite database in the home. A PostgreSQL URL
    # (postgresql+psycopg://user@host/db) shares sessions between machines.
    url: str | None = None

    @field_validator("url")
    @classmethod
    def _supported(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("postgresql", "sqlite")):
            raise ValueError("use a postgresql+psycopg:// or sqlite:/// URL")
        return value


class Config(_Section):
    memory: MemoryConfig = Field(default_factory=MemoryConfig)
    database: DatabaseConfig = Field(default_factory=DatabaseConfig)
    display: DisplayConfig = Field(default_factory=DisplayConfig)
    compression: CompressionConfig = Field(default_factory=CompressionConfig)


def _read_raw(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not valid UTF-8 ({exc.reason} at byte {exc.start})") from exc
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read ({exc.strerror})") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" at line {where.line + 1}" if where is not None else ""
        raise ConfigError(f"{path}: not valid YAML{line}: {exc}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping, not {type(data).__name__}")
    return data


def _validate(raw: dict[str, Any], path: Path) -> Config:
    try:
        return Config.model_validate(raw)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            key = ".".join(str(part) for part in err["loc"])
            problems.append(f"{key}: {err['msg']} (got {err.get('input')!r})")
        raise ConfigError(f"{path}: invalid setting " + "; ".join(problems)) from exc


def load_config(home: Home) -> Config:
    path = home.config_file
    return _validate(_read_raw(path), path)


def _merge(base: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in patch.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def update_config(home: Home, patch: dict[str, Any]) -> Config:
    """Merge ``patch`` into config.yaml on disk, validate the result, then write it atomically.

    An invalid patch raises :class:`ConfigError` and leaves the file byte-identical.
    """
    path = home.config_file
    home.root.mkdir(parents=True, exist_ok=True)
    with locked(path.with_name(path.name + ".lock")):
        merged = _merge(_read_raw(path), patch)
        config = _validate(merged, path)
        text = yaml.safe_dump(merged, sort_keys=False, allow_unicode=True)
        atomic_write_text(path, text)
    return config
