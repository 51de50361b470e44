"""One error base: every subsystem's refusal is a CairnError, which the tool registry turns
into the tool's result and the CLI into one line and exit code 1."""

from __future__ import annotations

import json

import pytest

from engine.cron import CronError
from engine.errors import CairnError
from engine.memory.errors import MemoryToolError
from engine.migrate.cleanup import CleanupError
from engine.migrate.openclaw import MigrationCancelled, MigrationError
from engine.plugins.holographic.store import FactStoreError
from engine.profiles import ProfileError
from engine.providers.base import ToolCall
from engine.skills import SkillError
from engine.tools import Tool, ToolRegistry

REFUSALS = [
    MemoryToolError,
    SkillError,
    FactStoreError,
    MigrationError,
    CleanupError,
    CronError,
    ProfileError,
]


@pytest.mark.parametrize("cls", REFUSALS)
def test_every_subsystem_refusal_is_a_cairn_error_of_one_shape(cls: type[CairnError]) -> None:
    exc = cls("not_found", "no such thing", id="x1")
    assert isinstance(exc, CairnError)
    assert (exc.code, exc.message, str(exc)) == ("not_found", "no such thing", "no such thing")
    result = exc.to_dict()
    assert result["ok"] is False and result["error"] == "not_found"
    assert result["message"] == "no such thing" and result["id"] == "x1"


def test_details_are_part_of_the_result_and_cancelled_keeps_its_code() -> None:
    exc = MemoryToolError("stale", "changed since", id="memory:memory:0")
    assert exc.details == {"id": "memory:memory:0"}
    assert exc.to_dict() == {
        "ok": False,
        "error": "stale",
        "message": "changed since",
        "id": "memory:memory:0",
    }
    assert MigrationCancelled().code == "cancelled"


def test_the_tool_registry_turns_a_refusal_into_the_tools_result() -> None:
    def refuse(arguments: dict[str, object]) -> dict[str, object]:
        raise SkillError("exists", f"a skill named {arguments['name']!r} exists", skill="x")

    def crash(arguments: dict[str, object]) -> dict[str, object]:
        raise RuntimeError("a bug")

    schema = {"name": "refuse", "description": "", "parameters": {"type": "object"}}
    registry = ToolRegistry()
    registry.register(Tool("refuse", schema, refuse))
    registry.register(Tool("crash", {**schema, "name": "crash"}, crash))
    refused = registry.call(ToolCall(id="1", name="refuse", arguments=json.dumps({"name": "x"})))
    assert refused.result == {
        "ok": False,
        "error": "exists",
        "message": "a skill named 'x' exists",
        "skill": "x",
    }
    crashed = registry.call(ToolCall(id="2", name="crash", arguments="{}"))
    assert crashed.result["error"] == "internal"


def test_the_cli_says_a_refusal_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    from engine.cli import run_guarded

    def refused() -> int:
        raise ProfileError("exists", "profile 'work' exists\nsecond line never shown")

    assert run_guarded(refused, lambda: False) == 1
    err = capsys.readouterr().err
    assert err.strip().splitlines() == ["cairn: profile 'work' exists"]
    assert run_guarded(refused, lambda: True) == 1
    out = capsys.readouterr()
    payload = json.loads(out.out or out.err)
    assert payload == {"ok": False, "error": "exists", "message": "profile 'work' exists"}
