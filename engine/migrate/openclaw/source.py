"""Finding the source: the OpenClaw state folder and workspace, from options, the environment
and the workspace named in ``openclaw.json``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from engine.migrate.openclaw.models import (
    CONFIG_NAMES,
    PROFILE_ENV,
    STATE_DIR_ENV,
    STATE_DIR_NAMES,
    WORKSPACE_ENV,
    MigrationError,
    Source,
)


def _config_workspace(config_file: Path, user_home: Path) -> Path | None:
    """The workspace ``openclaw.json`` names, if any. The file is JSON5 in practice, so a
    strict parse is tried first and a tolerant search for the key second."""
    try:
        raw = config_file.read_text("utf-8", errors="replace")
    except OSError:
        return None
    value: str | None = None
    try:
        data = json.loads(raw)
        for path in (("agents", "defaults", "workspace"), ("agent", "workspace")):
            node: Any = data
            for key in path:
                node = node.get(key) if isinstance(node, dict) else None
            if isinstance(node, str) and node.strip():
                value = node
                break
    except ValueError:
        match = re.search(r"""["']?\bworkspace["']?\s*:\s*["']([^"'\n]+)["']""", raw)
        value = match.group(1) if match else None
    if not value:
        return None
    text = value.strip()
    if text == "~" or text.startswith("~/"):
        return user_home / text[2:]
    return Path(text)


def _looks_like_workspace(folder: Path) -> bool:
    names = ("memory", "MEMORY.md", "memory.md", "USER.md", "SOUL.md", "AGENTS.md")
    return any((folder / name).exists() for name in names)


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:  # a symlink loop, a permission problem
        return False


def find_source(
    given: Path | None = None,
    *,
    user_home: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> Source:
    """Where the OpenClaw data is: ``given``, else ``$OPENCLAW_STATE_DIR``, else the first of
    ``~/.openclaw``, ``~/.clawdbot``, ``~/.moltbot``, ``~/.moldbot`` that exists."""
    env = os.environ if environ is None else environ
    user_home = user_home if user_home is not None else Path.home()
    candidates: list[tuple[Path, str]] = []
    if given is not None:
        given = given.expanduser()
        if not _is_dir(given):
            raise MigrationError("no_source", f"--source {given} is not a folder")
        candidates.append((given.absolute(), "--source"))
    else:
        if env.get(STATE_DIR_ENV):
            candidates.append((Path(env[STATE_DIR_ENV]).expanduser(), f"${STATE_DIR_ENV}"))
        candidates += [(user_home / name, f"~/{name}") for name in STATE_DIR_NAMES]
    existing = [(path, how) for path, how in candidates if _is_dir(path)]
    if not existing:
        looked = ", ".join(how for _, how in candidates)
        raise MigrationError(
            "no_source", f"no OpenClaw folder found (looked at {looked}); name one with --source"
        )
    root, found_by = existing[0]
    others = [path for path, _ in existing[1:] if path != root]
    config_file = next((root / n for n in CONFIG_NAMES if (root / n).is_file()), None)

    workspace: Path | None = None
    if given is None and env.get(WORKSPACE_ENV):
        workspace = Path(env[WORKSPACE_ENV]).expanduser()
    elif _is_dir(root / "workspace"):
        workspace = root / "workspace"
    elif config_file is not None:
        workspace = _config_workspace(config_file, user_home)
    if workspace is None and given is None:
        profile = env.get(PROFILE_ENV, "")
        if profile and profile != "default" and _is_dir(root / f"workspace-{profile}"):
            workspace = root / f"workspace-{profile}"
    if workspace is None and _looks_like_workspace(root):
        workspace = root  # the workspace folder itself was given
    if workspace is None or not _is_dir(workspace):
        raise MigrationError(
            "no_source",
            f"{root} has no OpenClaw workspace (no workspace/ folder, none named in its "
            "config, and no MEMORY.md, USER.md, SOUL.md, AGENTS.md or memory/ in it)",
        )
    return Source(
        root=root,
        workspace=workspace.absolute(),
        found_by=found_by,
        config_file=config_file,
        others=others,
    )
