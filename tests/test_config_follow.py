"""Approval switched on outside a running session applies to that session's next write.

Tried as a user would: the agent (here its memory service and skill manager, as the agent
holds them) is running with approval off; `cairn memory approval on` is typed in a terminal
(the real entry point, in this process); the agent's next write must be staged, not applied.
An invalid edit of config.yaml meanwhile keeps the last good setting."""

from __future__ import annotations

import pytest

from engine import cli
from engine.config import Config, load_config, update_config
from engine.home import Home
from engine.memory.entries import Target
from engine.memory.service import MemoryService
from engine.skills.manage import SkillManager


def test_memory_approval_turned_on_in_a_terminal_stages_the_next_write(
    home: Home, capsys: pytest.CaptureFixture[str]
) -> None:
    service = MemoryService(home, load_config(home))
    assert service.write(Target.MEMORY, [{"action": "add", "content": "a"}])["status"] == "applied"
    assert cli.main(["memory", "approval", "on", "--home", str(home.root)]) == 0
    capsys.readouterr()
    staged = service.write(Target.MEMORY, [{"action": "add", "content": "b"}])
    assert staged["status"] == "staged"
    assert service.read(Target.MEMORY).entries == ["a"]

    home.config_file.write_text("memory: {write_approval: [not, a, switch]}\n")
    kept = service.write(Target.MEMORY, [{"action": "add", "content": "c"}])
    assert kept["status"] == "staged", "an invalid edit keeps the last good setting"


def test_a_switch_written_between_reading_the_config_and_starting_the_service_is_seen(
    home: Home, capsys: pytest.CaptureFixture[str]
) -> None:
    """The agent reads config.yaml, then builds its memory service, which noted the file's
    identity only then: `cairn memory approval on` typed in between was never seen (the
    window missed it while it opened). The identity is now taken before the read."""
    update_config(home, {"memory": {"write_approval": False}})
    config = load_config(home)  # the agent, starting
    assert cli.main(["memory", "approval", "on", "--home", str(home.root)]) == 0
    capsys.readouterr()
    service = MemoryService(home, config)  # built from the config read before the switch
    staged = service.write(Target.MEMORY, [{"action": "add", "content": "a"}])
    assert staged["status"] == "staged"


def test_skills_approval_turned_on_while_running_stages_the_next_skill_write(home: Home) -> None:
    manager = SkillManager(home, Config(), author="agent")
    create = {"action": "create", "name": "one", "description": "d", "body": "Steps."}
    assert manager.run(create)["status"] == "applied"
    update_config(home, {"skills": {"write_approval": True}})
    staged = manager.run({**create, "name": "two"})
    assert staged["status"] == "staged"
    assert not (home.skills_dir / "two").exists()


def test_a_limit_raised_in_config_applies_to_the_next_write(home: Home) -> None:
    service = MemoryService(home, load_config(home))
    update_config(home, {"memory": {"memory_char_limit": 5_000}})
    assert service.read(Target.MEMORY).limit == 5_000


@pytest.mark.parametrize("provider", ["local", "embedded"])
def test_the_bundled_tiny_models_stage_memory_and_skill_writes_by_default(
    home: Home, provider: str
) -> None:
    """Tried: `cairn model set --provider local|embedded` with nothing else configured. A
    135M model's memory and skill writes both wait for the user; a setting in config wins."""
    update_config(home, {"model": {"provider": provider}})
    config = load_config(home)
    assert (config.memory.write_approval, config.skills.write_approval) == (True, True)
    service = MemoryService(home, config)
    assert service.write(Target.MEMORY, [{"action": "add", "content": "x"}])["status"] == "staged"
    manager = SkillManager(home, config, author="agent")
    create = {"action": "create", "name": "one", "description": "d", "body": "Steps."}
    assert manager.run(create)["status"] == "staged"

    update_config(home, {"skills": {"write_approval": False}})
    assert load_config(home).skills.write_approval is False
    assert load_config(home).memory.write_approval is True
    update_config(home, {"model": {"provider": "openai"}})
    assert load_config(home).memory.write_approval is False
