"""``cairn claw cleanup``: leftover OpenClaw folders are renamed, never deleted, never
overwritten, and never moved from under a running process."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.migrate import cleanup
from engine.migrate.cleanup import (
    CleanupError,
    apply_cleanup,
    archive_name,
    find_leftovers,
    plan_cleanup,
    processes_using,
)


def folder(path: Path, marker: str) -> Path:
    (path / "workspace").mkdir(parents=True)
    (path / "workspace" / "MEMORY.md").write_text(marker)
    return path


def wait_started(child: subprocess.Popen[bytes]) -> None:
    # Right after the fork the child's command line can still be empty.
    deadline = time.monotonic() + 10
    while not Path(f"/proc/{child.pid}/cmdline").read_bytes() and time.monotonic() < deadline:
        time.sleep(0.01)


def tree(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): p.read_text() if p.is_file() else "<dir>"
        for p in sorted(root.rglob("*"))
    }


def test_every_known_folder_is_renamed_and_nothing_is_lost(tmp_path: Path) -> None:
    folder(tmp_path / ".openclaw", "new")
    folder(tmp_path / ".clawdbot", "old")
    (tmp_path / "unrelated").mkdir()
    before = tree(tmp_path)
    report = plan_cleanup(user_home=tmp_path, environ={})
    assert [(r.source.name, r.destination.name) for r in report.renames] == [  # type: ignore[union-attr]
        (".openclaw", ".openclaw.pre-migration"),
        (".clawdbot", ".clawdbot.pre-migration"),
    ]
    assert tree(tmp_path) == before  # planning renames nothing

    done = apply_cleanup(report)
    assert [r.status for r in done.renames] == ["renamed", "renamed"]
    after = tree(tmp_path)
    assert sorted(after.values()) == sorted(before.values())  # same content, new names
    assert (tmp_path / ".openclaw.pre-migration" / "workspace" / "MEMORY.md").read_text() == "new"
    assert not (tmp_path / ".openclaw").exists()
    assert plan_cleanup(user_home=tmp_path, environ={}).renames == []


def test_name_collisions_get_numbered_suffixes(tmp_path: Path) -> None:
    folder(tmp_path / ".openclaw", "third")
    folder(tmp_path / ".openclaw.pre-migration", "first")
    folder(tmp_path / ".openclaw.pre-migration.2", "second")
    (tmp_path / ".openclaw.pre-migration.3").write_text("a file holds this name too")
    done = apply_cleanup(plan_cleanup(user_home=tmp_path, environ={}))
    assert done.renames[0].destination == tmp_path / ".openclaw.pre-migration.4"
    for name, marker in [
        (".openclaw.pre-migration", "first"),
        (".openclaw.pre-migration.2", "second"),
        (".openclaw.pre-migration.4", "third"),
    ]:
        assert (tmp_path / name / "workspace" / "MEMORY.md").read_text() == marker
    assert (tmp_path / ".openclaw.pre-migration.3").read_text() == "a file holds this name too"


def test_a_name_taken_after_planning_is_not_overwritten(tmp_path: Path) -> None:
    folder(tmp_path / ".openclaw", "data")
    report = plan_cleanup(user_home=tmp_path, environ={})
    # rename(2) would silently replace an empty folder of that name: it must not.
    (tmp_path / ".openclaw.pre-migration").mkdir()
    (tmp_path / ".openclaw.pre-migration.2").mkdir()
    done = apply_cleanup(report)
    assert done.renames[0].destination == tmp_path / ".openclaw.pre-migration.3"
    assert (tmp_path / ".openclaw.pre-migration").is_dir()
    assert list((tmp_path / ".openclaw.pre-migration").iterdir()) == []
    assert (tmp_path / ".openclaw.pre-migration.3" / "workspace" / "MEMORY.md").exists()


def test_a_symlinked_folder_is_renamed_as_a_link_and_its_target_untouched(tmp_path: Path) -> None:
    real = folder(tmp_path / "real-openclaw", "data")
    (tmp_path / "user").mkdir()
    os.symlink(real, tmp_path / "user" / ".moltbot")
    done = apply_cleanup(plan_cleanup(user_home=tmp_path / "user", environ={}))
    moved = tmp_path / "user" / ".moltbot.pre-migration"
    assert done.renames[0].status == "renamed" and moved.is_symlink()
    assert (real / "workspace" / "MEMORY.md").read_text() == "data"


def test_a_folder_in_use_is_refused(tmp_path: Path) -> None:
    state = folder(tmp_path / ".openclaw", "live")
    child = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"], cwd=state / "workspace"
    )
    try:
        wait_started(child)
        users = processes_using(state)
        assert any(f"pid {child.pid}:" in u for u in users)
        report = plan_cleanup(user_home=tmp_path, environ={})
        [rename] = report.renames
        assert rename.status == "refused" and "stop it first" in (rename.reason or "")
        done = apply_cleanup(report)
        assert done.renames[0].status == "refused"
        assert state.is_dir()
    finally:
        child.kill()
        child.wait()
    assert plan_cleanup(user_home=tmp_path, environ={}).renames[0].status == "planned"


def test_a_process_of_the_same_program_counts_as_using_it(tmp_path: Path) -> None:
    state = folder(tmp_path / ".openclaw", "x")
    fake = tmp_path / "bin" / "openclaw"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\nsleep 60\n")
    fake.chmod(0o755)
    child = subprocess.Popen([str(fake), "gateway"], cwd=tmp_path)
    try:
        wait_started(child)
        assert any(f"pid {child.pid}:" in u for u in processes_using(state))
    finally:
        child.kill()
        child.wait()


def test_explicit_sources_and_the_environment(tmp_path: Path) -> None:
    custom = folder(tmp_path / "state", "x")
    assert find_leftovers(user_home=tmp_path / "none", environ={"OPENCLAW_STATE_DIR": str(custom)})
    assert find_leftovers(sources=[custom]) == [custom]
    with pytest.raises(CleanupError):
        find_leftovers(sources=[tmp_path / "missing"])
    assert find_leftovers(user_home=tmp_path / "none", environ={}) == []


def test_archive_name_gives_up_rather_than_overwrite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cleanup, "MAX_SUFFIX", 2)
    (tmp_path / ".openclaw.pre-migration").mkdir()
    (tmp_path / ".openclaw.pre-migration.2").mkdir()
    with pytest.raises(CleanupError):
        archive_name(tmp_path / ".openclaw")


def test_an_archived_folder_is_never_renamed_again(tmp_path: Path) -> None:
    archived = folder(tmp_path / ".openclaw.pre-migration.2", "x")
    assert find_leftovers(sources=[archived]) == []
