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


# -- links inside the home ---------------------------------------------------------------------


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _one_line_error(err: str) -> None:
    assert err.startswith("cairn: ") and err.count("\n") == 1 and "Traceback" not in err


def test_a_profile_folder_linked_to_a_system_folder_is_refused(
    home: Home, outside: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Tried: profiles/evil -> /etc, then `cairn --profile evil memory add`. The user sees a
    one-line error naming the link; nothing is created in /etc; `profile list` still lists
    the others and shows the problem."""
    home.profiles_dir.mkdir(parents=True)
    os.symlink(outside, home.profiles_dir / "evil")
    before = sorted(p.name for p in outside.iterdir())
    code, _, err = _run(
        capsys, "--home", str(home.root), "--profile", "evil", "memory", "add", "A fact"
    )
    assert code == 1
    _one_line_error(err)
    assert "is a link to" in err and "outside the home" in err
    assert sorted(p.name for p in outside.iterdir()) == before
    code, out, _ = _run(capsys, "--home", str(home.root), "profile", "list", "--json")
    assert code == 0 and "outside the home" in out


def test_a_profiles_folder_linked_out_of_the_root_is_refused(
    home: Home, outside: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Tried: profiles -> /etc, then `cairn profile create work`. Refused; /etc unchanged."""
    home.root.mkdir(parents=True)
    os.symlink(outside, home.profiles_dir)
    before = sorted(p.name for p in outside.iterdir())
    code, _, err = _run(capsys, "--home", str(home.root), "profile", "create", "work")
    assert code == 1
    _one_line_error(err)
    assert sorted(p.name for p in outside.iterdir()) == before


@pytest.mark.parametrize("linked", ["skills", "skills/ops", "memories", "pending"])
def test_writes_through_a_linked_home_folder_are_refused(
    home: Home, outside: Path, capsys: pytest.CaptureFixture[str], linked: str
) -> None:
    """Tried: a home folder Cairn writes in (skills/, a skill category, memories/, pending/)
    is a link to /etc, then a skill create or a memory add / staged add. The user sees a
    one-line error naming the link; nothing appears in /etc."""
    link = home.root / linked
    link.parent.mkdir(parents=True)
    os.symlink(outside, link)
    before = sorted(p.name for p in outside.rglob("*"))
    base = ["--home", str(home.root)]
    if linked.startswith("skills"):
        argv = [*base, "skills", "create", "deploy", "--description", "How to deploy"]
        argv += ["--body", "Run the deploy script."]
        if linked == "skills/ops":
            argv += ["--category", "ops"]
    elif linked == "pending":
        assert _run(capsys, *base, "memory", "approval", "on")[0] == 0
        argv = [*base, "memory", "add", "A fact"]
    else:
        argv = [*base, "memory", "add", "A fact"]
    code, _, err = _run(capsys, *argv)
    assert code == 1, err
    _one_line_error(err)
    assert "is a link to" in err
    assert sorted(p.name for p in outside.rglob("*")) == before


def test_a_memory_file_linked_into_a_dotfiles_folder_stays_supported(
    home: Home, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Tried: MEMORY.md is a link to a dotfiles file outside the home. Writes go through the
    link (the documented exception for single files)."""
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    home.memories_dir.mkdir(parents=True)
    os.symlink(dotfiles / "MEMORY.md", home.memories_dir / "MEMORY.md")
    code, _, err = _run(capsys, "--home", str(home.root), "memory", "add", "A fact")
    assert code == 0, err
    assert (dotfiles / "MEMORY.md").read_text("utf-8") == "A fact"


def test_skill_ledgers_and_cron_jobs_are_not_written_through_linked_folders(
    home: Home, outside: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Tried: skills -> a folder elsewhere holding a skill, then `cairn skills trust` (the trust
    ledger would be written there); cron -> /etc, then `cairn cron add`. Both are one-line
    refusals and nothing appears in the linked folders."""
    (outside / "deploy").mkdir()
    (outside / "deploy" / "SKILL.md").write_text(
        "---\nname: deploy\ndescription: How to deploy\n---\n\nSteps.\n", encoding="utf-8"
    )
    home.root.mkdir(parents=True)
    os.symlink(outside, home.skills_dir)
    before = sorted(p.name for p in outside.rglob("*"))
    base = ["--home", str(home.root)]
    code, _, err = _run(capsys, *base, "skills", "trust", "deploy", "trusted")
    assert code == 1
    _one_line_error(err)
    os.symlink(outside, home.cron_dir)
    code, _, err = _run(
        capsys, *base, "cron", "add", "daily", "--schedule", "every 1h", "--prompt", "Hi"
    )
    assert code == 1
    _one_line_error(err)
    assert "is a link to" in err
    assert sorted(p.name for p in outside.rglob("*")) == before
