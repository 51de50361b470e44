"""``cairn claw migrate`` and ``cairn claw cleanup`` through the entry point: in this process,
and once as a real child process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine.home import Home
from engine.memory.entries import parse
from tests.conftest import REPO
from tests.inprocess import cairn_here
from tests.test_migrate import BASIC, workspace

OPENCLAW_ENV = ("OPENCLAW_STATE_DIR", "OPENCLAW_WORKSPACE_DIR", "OPENCLAW_PROFILE")


def cairn(
    *args: str, user: Path, home: Home | None = None, real: bool = False
) -> subprocess.CompletedProcess[str]:
    """One command with ``user`` as the home folder; in this process unless ``real``."""
    if not real:
        env: dict[str, str | None] = {"HOME": str(user), **dict.fromkeys(OPENCLAW_ENV)}
        return cairn_here(*args, home=home, env=env)
    argv = [sys.executable, "-m", "engine.cli", *args]
    if home is not None:
        argv += ["--home", str(home.root)]
    real_env = {**os.environ, "PYTHONPATH": str(REPO), "HOME": str(user)}
    for name in OPENCLAW_ENV:
        real_env.pop(name, None)
    return subprocess.run(
        argv,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        env=real_env,
        cwd=REPO,
    )


@pytest.fixture
def user(tmp_path: Path) -> Path:
    workspace(tmp_path / "user", BASIC)
    return tmp_path / "user"


def test_dry_run_shows_the_changes_and_makes_none(user: Path, home: Home) -> None:
    result = cairn("claw", "migrate", "--dry-run", user=user, home=home, real=True)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "Would add to MEMORY.md:" in out and "+ [2024-03-05 · Work] Deploys go through CI" in out
    assert "SOUL.md    would create" in out
    assert "Dry run: nothing was changed." in out
    assert not home.root.exists()

    result = cairn("claw", "migrate", "--dry-run", "--json", user=user, home=home)
    payload = json.loads(result.stdout)
    assert payload["ok"] and payload["dry_run"] and payload["changes"]
    assert payload["counts"]["imported"] == 5
    assert not home.root.exists()


def test_without_a_terminal_it_refuses_unless_told_yes(user: Path, home: Home) -> None:
    result = cairn("claw", "migrate", user=user, home=home)
    assert result.returncode == 1
    assert "not migrating without --yes" in result.stderr
    assert not (home.memories_dir / "MEMORY.md").exists()

    result = cairn("claw", "migrate", "--json", user=user, home=home)
    payload = json.loads(result.stdout)
    assert result.returncode == 1 and payload["error"] == "confirm"
    assert payload["counts"]["imported"] == 5  # the plan it would have applied

    result = cairn("claw", "migrate", "--yes", "--json", user=user, home=home)
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["applied"] and payload["changed"]
    assert Path(payload["backup"]).is_file() and Path(payload["report_file"]).is_file()
    memory = parse((home.memories_dir / "MEMORY.md").read_text())
    assert "[2024-03-05 · Work] Deploys go through CI" in memory

    again = cairn("claw", "migrate", "--yes", user=user, home=home)
    assert again.returncode == 0
    assert "Nothing to change: everything is already migrated." in again.stdout
    assert len(list(home.migration_dir.iterdir())) == 2  # one run folder and the lock


def test_no_source_and_bad_options(tmp_path: Path, home: Home) -> None:
    result = cairn("claw", "migrate", "--dry-run", user=tmp_path, home=home)
    assert result.returncode == 1 and "no OpenClaw folder found" in result.stderr
    result = cairn("claw", "migrate", "--priority", "random", user=tmp_path, home=home)
    assert result.returncode == 2
    result = cairn("claw", user=tmp_path, home=home)
    assert result.returncode == 2


def test_cleanup_asks_then_renames_with_a_free_name(user: Path) -> None:
    (user / ".openclaw.pre-migration").mkdir()
    result = cairn("claw", "cleanup", "--dry-run", user=user)
    assert result.returncode == 0
    assert f"would rename: {user / '.openclaw'} → {user / '.openclaw.pre-migration.2'}" in (
        result.stdout
    )

    result = cairn("claw", "cleanup", user=user)
    assert result.returncode == 1 and "not renaming without --yes" in result.stderr
    assert (user / ".openclaw").is_dir()

    result = cairn("claw", "cleanup", "--yes", "--json", user=user)
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert [r["status"] for r in payload["renames"]] == ["renamed"]
    assert (user / ".openclaw.pre-migration.2" / "workspace" / "SOUL.md").is_file()
    assert (user / ".openclaw.pre-migration").is_dir()

    result = cairn("claw", "cleanup", "--yes", user=user)
    assert result.returncode == 0 and "nothing to clean up" in result.stdout
