"""Skill writes other tools sharing the home can read back: a SKILL.md always has a body,
patch can replace every occurrence, a delete can say which skill absorbed it, and a category a
delete leaves empty is removed."""

from __future__ import annotations

import json
from typing import Any

import pytest

from engine.config import Config
from engine.home import Home
from engine.skills.manage import SkillManager
from engine.skills.store import SkillError

FRONT = "---\nname: {name}\ndescription: Deploy a branch\n---\n"


def manager(home: Home) -> SkillManager:
    return SkillManager(home, Config(), author="agent")


def refused(m: SkillManager, args: dict[str, Any], code: str) -> SkillError:
    with pytest.raises(SkillError) as err:
        m.run(args)
    assert err.value.code == code, err.value.message
    return err.value


def history(home: Home) -> list[dict[str, Any]]:
    lines = (home.skills_dir / ".history.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


@pytest.mark.parametrize(
    "args",
    [
        # A description and nothing to read on demand.
        {"action": "create", "name": "deploy", "description": "Deploy a branch"},
        {"action": "create", "name": "deploy", "description": "Deploy", "body": "  \n\n "},
        # A whole SKILL.md that ends with its front matter.
        {"action": "create", "name": "deploy", "content": FRONT.format(name="deploy")},
    ],
)
def test_a_skill_md_without_instructions_is_refused_and_nothing_is_written(
    home: Home, args: dict[str, Any]
) -> None:
    err = refused(manager(home), args, "invalid")
    assert "no instructions" in err.message
    assert not (home.skills_dir / "deploy").exists()


def test_edit_and_patch_may_not_empty_the_body(home: Home) -> None:
    """Tried: rewriting SKILL.md to front matter only, and patching the whole body away."""
    m = manager(home)
    m.run({"action": "create", "name": "deploy", "description": "Deploy", "body": "Run make."})
    before = (home.skills_dir / "deploy" / "SKILL.md").read_bytes()
    refused(
        m, {"action": "edit", "name": "deploy", "content": FRONT.format(name="deploy")}, "invalid"
    )
    refused(m, {"action": "patch", "name": "deploy", "find": "Run make.", "replace": ""}, "invalid")
    assert (home.skills_dir / "deploy" / "SKILL.md").read_bytes() == before


def test_patch_replace_all_changes_every_occurrence_and_plain_patch_stays_unique(
    home: Home,
) -> None:
    m = manager(home)
    body = "1. make build\n2. make test\n3. make build again"
    m.run({"action": "create", "name": "ci", "description": "Run CI", "body": body})
    plain = {"action": "patch", "name": "ci", "find": "make", "replace": "just"}
    refused(m, plain, "ambiguous")
    result = m.run({**plain, "replace_all": True})
    assert result["status"] == "applied"
    text = (home.skills_dir / "ci" / "SKILL.md").read_text()
    assert "make" not in text.split("---")[-1]
    assert text.count("just") == 3
    assert "every occurrence" in history(home)[-1]["summary"]


def test_delete_absorbed_into_names_an_existing_other_skill(home: Home) -> None:
    m = manager(home)
    for name in ("deploy-a", "deploy-b"):
        m.run({"action": "create", "name": name, "description": "Deploy", "body": "Steps."})
    refused(m, {"action": "delete", "name": "deploy-a", "absorbed_into": "ghost"}, "not_found")
    refused(m, {"action": "delete", "name": "deploy-a", "absorbed_into": "deploy-a"}, "invalid")
    assert (home.skills_dir / "deploy-a" / "SKILL.md").exists()

    result = m.run({"action": "delete", "name": "deploy-a", "absorbed_into": "deploy-b"})
    assert any("deploy-b" in w for w in result["warnings"]) or "deploy-b" in result["message"]
    assert not (home.skills_dir / "deploy-a").exists()
    last = history(home)[-1]
    assert (last["action"], last["absorbed_into"]) == ("delete", "deploy-b")


def test_deleting_the_last_skill_of_a_category_removes_the_folder(home: Home) -> None:
    m = manager(home)
    for name in ("bisect", "blame"):
        m.run(
            {"action": "create", "name": name, "category": "git", "description": "d", "body": "b"}
        )
    m.run({"action": "delete", "name": "bisect"})
    assert (home.skills_dir / "git").is_dir(), "a category that still holds a skill stays"
    m.run({"action": "delete", "name": "blame"})
    assert not (home.skills_dir / "git").exists()
    assert (home.skills_dir / ".trash").is_dir()
