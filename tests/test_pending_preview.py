"""The one preview of a staged write, built by the engine for every queue: the window's
pending dialog draws it, and it needs no Qt (it was built inside the dialog from raw payload
keys, once per queue)."""

from __future__ import annotations

from engine.pending_preview import file_of, preview_of


def memory_record(operations: list[dict[str, str]]) -> dict[str, object]:
    return {
        "subsystem": "memory",
        "action": "batch",
        "summary": "a staged write",
        "payload": {"target": "memory", "operations": operations},
    }


def test_a_memory_write_shows_the_file_after_approval_and_what_would_refuse_it() -> None:
    state = {"items": ["Deploys on Tuesdays", "Staging is db3"], "limit": 2200, "error": None}
    replace = memory_record(
        [{"action": "replace", "old_text": "Tuesdays", "content": "Deploys on Wednesdays"}]
    )
    preview = preview_of(replace, state)
    assert preview.heading.startswith("MEMORY.md after approval — ")
    assert preview.lines == [
        ("-", "Deploys on Tuesdays"),
        ("+", "Deploys on Wednesdays"),
        (" ", "Staging is db3"),
    ]
    # The entry it names is gone meanwhile: the preview says approval will fail.
    stale = memory_record([{"action": "remove", "old_text": "Fridays"}])
    lines = preview_of(stale, state).lines
    assert lines[0][0] == "!" and "no longer applies to MEMORY.md" in lines[0][1]
    # Over the cap: shown, with the refusal first.
    big = memory_record([{"action": "add", "content": "x" * 2300}])
    assert "will be refused" in preview_of(big, state).lines[0][1]
    assert preview_of(replace, None).lines == [("!", "Current memory has not been loaded yet.")]


def test_skill_and_fact_writes_show_what_they_write() -> None:
    skill = {
        "subsystem": "skills",
        "action": "patch",
        "summary": "fix the deploy step",
        "payload": {"request": {"name": "deploy", "find": "make ship", "replace": "make deploy"}},
    }
    preview = preview_of(skill, None)
    assert preview.heading == "Skill deploy: patch — fix the deploy step"
    assert preview.lines == [("-", "make ship"), ("+", "make deploy")]
    assert file_of(skill) == "skill deploy"
    fact = {
        "subsystem": "facts",
        "summary": "add a fact",
        "payload": {"request": {"content": "Ada owns the billing service", "entities": ["Ada"]}},
    }
    assert preview_of(fact, None).lines == [
        ("+", "Ada owns the billing service"),
        ("+", "about: Ada"),
    ]
    assert file_of(fact) == "fact store"
