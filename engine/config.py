"""``<home>/config.yaml``: typed settings with the reference design's keys.

The file is shared with other tools (a Hermes Agent home has one too), so Cairn never rewrites it
from its own model: a change is a small patch merged into the file as it is on disk, written with
a round-trip YAML library so comments, key order, quoting and style survive and only the changed
keys change; keys Cairn does not know survive untouched.

The file is input like any other: it is refused past :data:`MAX_CONFIG_BYTES`, alias expansion is
bounded (a "billion laughs" file is refused, not expanded), and error messages quote at most a
short, clipped piece of a value, never one that looks like a secret.
"""

from __future__ import annotations

import io
import logging
import os
import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from engine import builtin_model, yamlsafe
from engine.fsutil import atomic_write_text, decode_utf8, locked
from engine.home import Home

log = logging.getLogger(__name__)

# A configuration is a few kilobytes; a file of megabytes is not one (and was re-parsed on
# every command, for minutes). Parsing costs about 2 s of CPU per MiB, so the cap also bounds
# what a large but legitimate file adds to each command's start.
MAX_CONFIG_BYTES = 512 * 1024
SHOWN_CHARS = 60
# Keys whose values are never quoted back, and shapes of values that look like credentials.
_SECRET_KEY = re.compile(r"(key|token|secret|password|passwd|credential|auth)", re.IGNORECASE)
_SECRET_VALUE = re.compile(
    r"^(sk-|sk_|ghp_|gho_|ghs_|github_pat_|xox[abp]-|AKIA|AIza|glpat-|hf_|eyJ)"
    r"|^[A-Za-z0-9+/_\-]{32,}={0,2}$"
)


class ConfigError(ValueError):
    """config.yaml cannot be read or holds an invalid value; the message names file and key."""


class _Section(BaseModel):
    # Unknown keys are kept (and written back) so another tool's settings are never dropped.
    model_config = ConfigDict(extra="allow", validate_assignment=True)

    @model_validator(mode="before")
    @classmethod
    def _blank_means_default(cls, data: Any) -> Any:
        # A section whose keys are all commented out reads as null, and other tools write
        # "" for "unset": both mean "use the default", not an error.
        if data is None:
            return {}
        if not isinstance(data, dict):
            return data
        cleaned = dict(data)
        for name, field in cls.model_fields.items():
            if name in cleaned and cleaned[name] in (None, ""):
                # Where None is the default, keep it as None: this validator also runs on
                # attribute assignment (validate_assignment) with the whole model's values,
                # and a deleted key would leave the attribute missing, not defaulted.
                if field.default is None:
                    cleaned[name] = None
                else:
                    del cleaned[name]
        return cleaned


APPROVAL_ON = frozenset({"approve", "approval", "on", "yes", "true", "1", "required", "always"})
APPROVAL_OFF = frozenset({"off", "no", "false", "0", "never", "auto", "none", "disabled"})


def approval_word(value: Any) -> Any:
    """A write_approval value as other tools sharing the file write it (`approve`): none may
    stop Cairn starting. An unknown word means off, and load_config warns about it."""
    if isinstance(value, str):
        return value.strip().lower() in APPROVAL_ON
    return value


class MemoryConfig(_Section):
    memory_enabled: bool = True
    user_profile_enabled: bool = True
    memory_char_limit: int = Field(default=2200, ge=1, le=1_000_000)
    user_char_limit: int = Field(default=1375, ge=1, le=1_000_000)
    # Unset: on with the in-process tiny model (it writes poor memories), off otherwise.
    write_approval: bool | None = None
    nudge_interval: int = Field(default=10, ge=0)
    provider: str | None = None

    @field_validator("write_approval", mode="before")
    @classmethod
    def _approval_words(cls, value: Any) -> Any:
        return approval_word(value)


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


class SessionsConfig(_Section):
    # Rank session_search's questions by meaning as well as by words: synonyms, a general idea
    # for its case. Needs the semantic extra (docs/sessions.md); without it, words only.
    semantic: bool = False


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


class ModelConfig(_Section):
    """Which model answers. ``provider`` ``openai`` is any OpenAI-compatible endpoint (Ollama,
    LM Studio, llama.cpp's server, vLLM, OpenRouter …); ``embedded`` and ``local`` run a GGUF
    file in-process; ``none`` means none chosen: the built-in offline model answers when it is
    installed (``engine.builtin_model``). Any other name (``openrouter``, ``ollama``,
    ``custom`` as other agents sharing the home write it) is an OpenAI-compatible endpoint too.

    The API key is never stored here: ``api_key_env`` names the environment variable holding it.
    """

    provider: str = "none"
    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    # None: asked of the server where it says (llama.cpp, LM Studio, Ollama), else 8,192.
    context_length: int | None = Field(default=None, ge=512)
    timeout: float = Field(default=120.0, gt=0)
    max_retries: int = Field(default=3, ge=0, le=10)
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    # The longest reply asked for, in tokens; None: the server's own limit (the in-process
    # models default to 1,024).
    max_tokens: int | None = Field(default=None, ge=1)
    gguf_path: str | None = None

    @model_validator(mode="after")
    def _auto_provider(self) -> ModelConfig:
        # Another agent's `auto` picks a backend itself; with a URL given, that is an
        # OpenAI-compatible endpoint, without one there is nothing Cairn can call yet.
        if self.provider.strip().lower() == "auto":
            self.provider = "openai" if self.base_url else "none"
        return self

    @field_validator("api_key_env")
    @classmethod
    def _variable_name(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", value):
            raise ValueError(
                "api_key_env names an environment variable (like OPENROUTER_API_KEY), "
                "not the key itself"
            )
        return value


class AuxiliaryTask(_Section):
    """Overrides for one background task; every unset field falls back to ``model``.

    ``auto`` and ``main`` (as other agents sharing the home write them) mean "the main model".
    """

    provider: str | None = None
    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    context_length: int | None = Field(default=None, ge=512)
    timeout: float | None = Field(default=None, gt=0)
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)

    @field_validator("provider", mode="before")
    @classmethod
    def _main_model_words(cls, value: Any) -> Any:
        if isinstance(value, str) and value.strip().lower() in ("auto", "main", "default"):
            return None
        return value


class AuxiliaryConfig(_Section):
    compression: AuxiliaryTask = Field(default_factory=AuxiliaryTask)
    background_review: AuxiliaryTask = Field(default_factory=AuxiliaryTask)


class AgentConfig(_Section):
    max_iterations: int = Field(default=25, ge=1, le=500)
    # Characters of the project context file; None scales it with the model's context.
    context_file_max_chars: int | None = Field(default=None, ge=1000)


TINY_MODEL_PROVIDERS = ("local", "embedded")


def answers_on_tiny_model(model: ModelConfig) -> bool:
    """Whether the bundled tiny model answers: chosen, or the default with nothing chosen."""
    provider = model.provider.strip().lower()
    if provider in TINY_MODEL_PROVIDERS:
        return True
    if provider not in ("", "none") or model.base_url:
        return False
    return builtin_model.available(model.gguf_path)


class SkillsConfig(_Section):
    # Stage every skill write in the pending queue, like memory.write_approval does for memory.
    # Unset: on for the bundled tiny models, as memory approval is.
    write_approval: bool | None = None

    @field_validator("write_approval", mode="before")
    @classmethod
    def _approval_words(cls, value: Any) -> Any:
        return approval_word(value)

    # After a turn with at least this many tool calls the agent offers to save the workflow.
    propose_after_tool_calls: int = Field(default=5, ge=0)


FileStamp = tuple[int, int, int] | None  # inode, size, mtime_ns; None: no file


def file_stamp(home: Home) -> FileStamp:
    """config.yaml's identity, one ``stat``: it changes when the file is written."""
    try:
        info = os.stat(home.config_file)
    except OSError:
        return None
    return (info.st_ino, info.st_size, info.st_mtime_ns)


class Config(_Section):
    # The file's identity just before this config was read from it (see load_config): a
    # follower of the file compares with it, so a write between the read and the follower's
    # start is not missed. Unset for a config made in code.
    _read_stamp: FileStamp = PrivateAttr(default=None)
    _from_file: bool = PrivateAttr(default=False)
    memory: MemoryConfig = Field(default_factory=MemoryConfig)
    database: DatabaseConfig = Field(default_factory=DatabaseConfig)
    sessions: SessionsConfig = Field(default_factory=SessionsConfig)
    display: DisplayConfig = Field(default_factory=DisplayConfig)
    compression: CompressionConfig = Field(default_factory=CompressionConfig)
    model: ModelConfig = Field(default_factory=ModelConfig)
    auxiliary: AuxiliaryConfig = Field(default_factory=AuxiliaryConfig)
    agent: AgentConfig = Field(default_factory=AgentConfig)
    skills: SkillsConfig = Field(default_factory=SkillsConfig)

    @model_validator(mode="after")
    def _default_approval(self) -> Config:
        # A 135M-parameter model writes poor memories and skills: with the bundled models
        # (chosen, or answering because nothing else is configured) every write waits for the
        # user unless config says.
        if self.memory.write_approval is not None and self.skills.write_approval is not None:
            return self
        tiny = answers_on_tiny_model(self.model)
        if self.memory.write_approval is None:
            self.memory.write_approval = tiny
        if self.skills.write_approval is None:
            self.skills.write_approval = tiny
        return self

    @field_validator("model", mode="before")
    @classmethod
    def _model_name_only(cls, value: Any) -> Any:
        # Other agents sharing the home write `model: some/model-name`; keep it as the name.
        if isinstance(value, str):
            return {"model": value}
        if isinstance(value, dict) and not value.get("model") and value.get("default"):
            return {**value, "model": value["default"]}
        return value


def _read_text(path: Path) -> str | None:
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_CONFIG_BYTES + 1)
    except FileNotFoundError:
        return None
    except IsADirectoryError as exc:
        raise ConfigError(f"{path}: is a folder, not a file") from exc
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read ({exc.strerror})") from exc
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(
            f"{path}: larger than {MAX_CONFIG_BYTES // 1024:,} KiB, which no configuration "
            "is; move it aside or trim it"
        )
    try:
        return decode_utf8(data)
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not valid UTF-8 ({exc.reason} at byte {exc.start})") from exc


def _read_raw(path: Path) -> dict[str, Any]:
    text = _read_text(path)
    if text is None:
        return {}
    try:
        data = yamlsafe.load(text)
    except yamlsafe.YamlLimitError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" at line {where.line + 1}" if where is not None else ""
        problem = getattr(exc, "problem", None) or "cannot be parsed"
        raise ConfigError(f"{path}: not valid YAML{line}: {problem}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping, not {type(data).__name__}")
    return data


def read_raw(path: Path) -> dict[str, Any]:
    """config.yaml at ``path`` as plain data, with every bound applied (size, aliases), not
    validated: for a look at another profile's settings."""
    return _read_raw(path)


def shown_value(value: Any, key: str = "") -> str:
    """A value as an error message may quote it: clipped, and hidden when the key or the value
    looks like a credential (a key pasted where a variable name belongs must not be echoed)."""
    if isinstance(value, dict | list):
        return f"a {'mapping' if isinstance(value, dict) else 'list'}"
    if _SECRET_KEY.search(key) or (isinstance(value, str) and _SECRET_VALUE.search(value)):
        return "a value that looks like a secret (not shown)"
    text = repr(value)
    if len(text) > SHOWN_CHARS:
        return f"{text[: SHOWN_CHARS - 1]}… ({len(text):,} characters)"
    return text


def _validate(raw: dict[str, Any], path: Path) -> Config:
    try:
        return Config.model_validate(raw)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            key = ".".join(str(part) for part in err["loc"])
            message = err["msg"]
            if len(message) > 200:
                message = message[:199] + "…"
            problems.append(f"{key}: {message} (got {shown_value(err.get('input'), key)})")
        raise ConfigError(f"{path}: invalid setting " + "; ".join(problems)) from exc


def config_warnings(raw: dict[str, Any]) -> list[str]:
    """Values Cairn reads, but not as written: said once, never a refusal."""
    memory = raw.get("memory")
    value = memory.get("write_approval") if isinstance(memory, dict) else None
    if (
        isinstance(value, str)
        and value.strip()
        and value.strip().lower() not in (APPROVAL_ON | APPROVAL_OFF)
    ):
        return [
            f"memory.write_approval: {shown_value(value)} is not a known word; taken as off "
            "(use on or off)"
        ]
    return []


def load_config(home: Home) -> Config:
    path = home.config_file
    stamp = file_stamp(home)  # before the read: a write after it shows as a change
    raw = _read_raw(path)
    config = _validate(raw, path)
    config._read_stamp, config._from_file = stamp, True
    for warning in config_warnings(raw):
        log.warning("%s: %s", path, warning)
    return config


DELETE = object()  # a patch value meaning "remove this key"


def _merge(base: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in patch.items():
        if key == "model" and isinstance(merged.get(key), str) and isinstance(value, dict):
            # `model: vendor/name` as other agents write it: keep the name where they read it.
            merged[key] = {"default": merged[key]}
        if value is DELETE:
            merged.pop(key, None)
        elif isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _round_trip_merge(doc: Any, patch: dict[str, Any]) -> None:
    from ruamel.yaml.comments import CommentedMap

    for key, value in patch.items():
        current = doc.get(key)
        if key == "model" and isinstance(current, str) and isinstance(value, dict):
            doc[key] = current = CommentedMap({"default": current})
        if isinstance(value, dict) and isinstance(current, dict):
            _round_trip_merge(current, value)
        elif value is DELETE:
            doc.pop(key, None)
        elif isinstance(value, str) and not isinstance(yaml.safe_load(value or "''"), str):
            # ruamel writes YAML 1.2, where `off` or `yes` is a string needing no quotes; the
            # file is read back as YAML 1.1 (PyYAML), where they are booleans. Quote them.
            from ruamel.yaml.scalarstring import SingleQuotedScalarString

            doc[key] = SingleQuotedScalarString(value)
        else:
            doc[key] = value


_OPENS_BLOCK = re.compile(r":\s*(#.*)?$")


def _guess_indent(text: str) -> tuple[int, int]:
    """The file's mapping indent and list-dash offset, from the first block of each kind (the
    writer applies one style to the whole file, so the file's own is what it should be)."""
    mapping: int | None = None
    dash: int | None = None
    parent: int | None = None  # indentation of the line that opened a block, if the last did
    for line in text.splitlines():
        body = line.lstrip(" ")
        if not body or body.startswith("#"):
            continue
        indent = len(line) - len(body)
        if parent is not None:
            step = indent - parent
            if body.startswith("- ") and step >= 0 and dash is None:
                dash = step
            elif step > 0 and mapping is None and not body.startswith("- "):
                mapping = step
        parent = indent if _OPENS_BLOCK.search(body) else None
        if mapping is not None and dash is not None:
            break
    return mapping or 2, dash or 0


def _render(text: str | None, merged: dict[str, Any], patch: dict[str, Any]) -> str:
    """The new file: ``text`` with ``patch`` applied by a round-trip YAML writer, so the
    rest of the file (comments, order, quoting, indentation, `yes`) stays as it was."""
    # Imported here: only writes need it, and every command reads the file.
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError as RoundTripError

    if text is not None and text.strip():
        writer = YAML(typ="rt")
        writer.preserve_quotes = True
        writer.width = 4096
        mapping, dash = _guess_indent(text)
        # A list item's text sits two columns after its dash.
        writer.indent(mapping=mapping, sequence=dash + 2, offset=dash)
        try:
            doc = writer.load(text)
        except RoundTripError as exc:
            log.warning("config.yaml rewritten without its formatting: %s", exc)
        else:
            if isinstance(doc, dict):
                _round_trip_merge(doc, patch)
                out = io.StringIO()
                writer.dump(doc, out)
                rendered = out.getvalue()
                # What is written must read back as what was validated; else keep the values
                # and lose the formatting rather than write a different config.
                if yamlsafe.load(rendered) == merged:
                    return rendered
                log.warning("config.yaml rewritten without its formatting: it did not read back")
    return yaml.safe_dump(merged, sort_keys=False, allow_unicode=True)


def update_config(home: Home, patch: dict[str, Any]) -> Config:
    """Merge ``patch`` into config.yaml on disk, validate the result, then write it atomically.

    Only the keys in ``patch`` change in the file; a value of :data:`DELETE` removes its key.
    An invalid patch raises :class:`ConfigError` and leaves the file byte-identical.
    """
    path = home.config_file
    home.root.mkdir(parents=True, exist_ok=True)
    with locked(path.with_name(path.name + ".lock")):
        text = _read_text(path)
        raw = _read_raw(path)
        merged = _merge(raw, patch)
        config = _validate(merged, path)
        atomic_write_text(path, _render(text, merged, patch))
    return config
