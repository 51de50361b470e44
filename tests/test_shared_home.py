"""The round trip of a home Hermes Agent and Cairn share: laid out as the reference writes
it, used through Cairn's real entry point, and afterwards still in the reference's formats.

The layout is written here by hand from the reference's formats (REFERENCE §1, §3, §4, §8):
§-delimited memory files beside their lock, its own state.db with sessions, a skill with
front matter and a body, a commented config.yaml with keys Cairn does not know, and a staged
write in its pending queue."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml

from engine import cli
from engine.home import Home
from tests.test_pending_interop import replayable_by_them, their_record
from tests.test_sessions_hermes import files, hermes_home

CONFIG = """\
# Shared by Hermes Agent and Cairn: edit with care.
model:
  default: hermes-3   # the model both tools use
  provider: custom
memory:
  memory_enabled: yes
  write_approval: false
  nudge_interval: 10
terminal:
  backend: local       # a key Cairn does not read
  allowed:
    - git
    - make
"""

SKILL = """\
---
name: deploy
description: Deploy a branch to staging
---

1. Merge into staging.
2. Watch the deploy job.
"""


def entries(path: Path) -> list[str]:
    """The reference's parse: split on the full delimiter, strip, drop empties."""
    return [e.strip() for e in path.read_text(encoding="utf-8").split("\n§\n") if e.strip()]


def skill_parts(path: Path) -> tuple[dict, str]:
    text = path.read_text(encoding="utf-8")
    assert text.startswith("---\n")
    front, _, body = text[4:].partition("\n---\n")
    return yaml.safe_load(front), body


@pytest.fixture
def shared(tmp_path: Path) -> Home:
    home = hermes_home(tmp_path / "home")
    memories = home.root / "memories"
    memories.mkdir()
    (memories / "MEMORY.md").write_text("Repo uses make\n§\nCI runs on push", encoding="utf-8")
    (memories / "USER.md").write_text("Name: Ada", encoding="utf-8")
    (memories / "MEMORY.md.lock").touch()
    skill = home.root / "skills" / "devops" / "deploy"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(SKILL, encoding="utf-8")
    home.config_file.write_text(CONFIG, encoding="utf-8")
    their_record(
        home.root / "pending" / "memory",
        "a1b2c3d4",
        {"action": "add", "target": "user", "content": "Prefers short answers"},
        time.time() - 60,
    )
    return home


def cairn(home: Home, *args: str) -> dict:
    code = cli.main([*args, "--home", str(home.root), "--json"])
    assert code == 0, args
    return {}


def test_a_shared_home_stays_in_the_reference_formats(
    shared: Home, capsys: pytest.CaptureFixture[str]
) -> None:
    home = shared
    state_before = files(home.root)
    cairn(home, "memory", "add", "Staging is db3")
    cairn(home, "memory", "replace", "CI runs", "CI runs on every push and nightly")
    cairn(home, "memory", "approval", "on")
    cairn(home, "memory", "approve", "a1b2c3d4")
    cairn(home, "skills", "patch", "deploy", "--find", "Watch", "--replace", "Follow")
    cairn(home, "sessions", "import", "--from-hermes")
    capsys.readouterr()

    memories = home.root / "memories"
    assert entries(memories / "MEMORY.md") == [
        "Repo uses make",
        "CI runs on every push and nightly",
        "Staging is db3",
    ]
    assert entries(memories / "USER.md") == ["Name: Ada", "Prefers short answers"]
    front, body = skill_parts(home.root / "skills" / "devops" / "deploy" / "SKILL.md")
    assert front == {"name": "deploy", "description": "Deploy a branch to staging"}
    assert "2. Follow the deploy job." in body

    # config.yaml: the one switch changed, every comment, unknown key and style kept.
    after = home.config_file.read_text(encoding="utf-8").splitlines()
    before = CONFIG.splitlines()
    changed = [(a, b) for a, b in zip(before, after, strict=True) if a != b]
    assert changed == [("  write_approval: false", "  write_approval: true")]

    # Their database byte-identical, and a record Cairn stages is one they can replay.
    assert files(home.root) == state_before
    cli.main(["memory", "add", "Deploys need a ticket", "--home", str(home.root)])
    [record] = [
        json.loads(p.read_text()) for p in (home.root / "pending" / "memory").glob("*.json")
    ]
    assert replayable_by_them(record)
