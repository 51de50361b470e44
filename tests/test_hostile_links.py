"""Links that lead out of their tree: a migration source whose files link to secrets elsewhere,
a ``--workspace-target`` whose AGENTS.md is a dangling link, and a home whose folders are links
to system folders. Nothing outside may be read into memory or written through."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from engine.cli import main
from engine.home import Home
from tests.test_migrate import workspace

SECRET = "root:x:0:0:secret-line-from-outside"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder standing for /etc: files the migration must never read."""
    folder = tmp_path / "etc"
    folder.mkdir()
    (folder / "passwd").write_text(f"{SECRET}\n", encoding="utf-8")
    (folder / "shadow").write_text(f"- {SECRET} shadow\n", encoding="utf-8")
    (folder / "2024-01-09.md").write_text(f"- {SECRET} daily\n", encoding="utf-8")
    return folder


def _home_text(home: Home) -> str:
    return "\n".join(
        p.read_text("utf-8", errors="replace")
        for p in home.root.rglob("*")
        if p.is_file()
        if p.suffix in (".md", ".json")
    )


def test_migration_never_follows_file_links_out_of_the_workspace(
    tmp_path: Path, home: Home, outside: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Tried: SOUL.md -> /etc/passwd and memory/2024-01-06.md -> /etc/shadow, then
    `cairn claw migrate --yes`. The user sees both listed as links not followed; the persona,
    MEMORY.md and the report hold nothing of either file; a link inside the workspace still
    works."""
    user = tmp_path / "user"
    state = workspace(user, {"notes/kept.md": "- Kept through an inner link\n"})
    ws = state / "workspace"
    (ws / "memory").mkdir()
    os.symlink(outside / "passwd", ws / "SOUL.md")
    os.symlink(outside / "shadow", ws / "memory" / "2024-01-06.md")
    os.symlink(ws / "notes" / "kept.md", ws / "memory" / "2024-01-07.md")
    code = main(["claw", "migrate", "--yes", "--source", str(state), "--home", str(home.root)])
    out = capsys.readouterr().out
    assert code == 0
    assert "Links leading out of their folder (not followed):" in out
    assert "SOUL.md" in out and "memory/2024-01-06.md" in out
    assert SECRET not in _home_text(home)
    assert not home.soul_file.exists()
    assert "Kept through an inner link" in (home.memories_dir / "MEMORY.md").read_text("utf-8")
    [report] = home.migration_dir.glob("*/report.json")
    assert stat.S_IMODE(report.stat().st_mode) == 0o600
    assert "2024-01-06.md" in report.read_text("utf-8")  # the refusal is in the report


def test_migration_never_follows_a_memory_folder_that_leaves_the_workspace(
    tmp_path: Path, home: Home, outside: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Tried: memory/ is a link to /etc, which holds a date-named file. The dry run lists the
    folder as a link not followed and would import nothing from it."""
    state = workspace(tmp_path / "user", {"USER.md": "- Name: Ada\n"})
    os.symlink(outside, state / "workspace" / "memory")
    code = main(["claw", "migrate", "--dry-run", "--source", str(state), "--home", str(home.root)])
    out = capsys.readouterr().out
    assert code == 0
    assert "memory/ -> a link to" in out and SECRET not in out


def test_a_dangling_agents_md_link_in_the_workspace_target_is_not_written_through(
    tmp_path: Path, home: Home, capsys: pytest.CaptureFixture[str]
) -> None:
    """Tried: --workspace-target holds AGENTS.md -> a file outside it that does not exist yet.
    The user sees AGENTS.md skipped as not written through; no file appears at the link's
    target."""
    state = workspace(tmp_path / "user", {"AGENTS.md": "# Agents\nRun the tests.\n"})
    project = tmp_path / "project"
    project.mkdir()
    victim = tmp_path / "elsewhere" / "victim.md"
    victim.parent.mkdir()
    os.symlink(victim, project / "AGENTS.md")
    argv = ["claw", "migrate", "--yes", "--source", str(state), "--home", str(home.root)]
    code = main([*argv, "--workspace-target", str(project)])
    out = capsys.readouterr().out
    assert code == 0
    assert "not written through" in out
    assert not victim.exists()
