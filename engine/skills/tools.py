"""The skill tools as the model sees them, the prompt's skills index, and the save-a-skill nudge.

Progressive disclosure: the stable tier of the system prompt carries only an index (names and
one line each, see :func:`skills_index`); ``skill_view(name)`` brings one SKILL.md into the
conversation when a task needs it, and ``skill_view(name, file)`` one supporting file.

Whatever enters the context is scanned when it enters: descriptions when the index is built,
a SKILL.md or supporting file when it is viewed. A skill its trust level does not allow is
withheld (the model is told so and the user can inspect it with ``cairn skills show``); it is
never deleted.
"""

from __future__ import annotations

import logging
from typing import Any

from engine.config import Config
from engine.fsutil import decode_utf8
from engine.home import Home
from engine.memory import screen, threats
from engine.memory.approval import Origin
from engine.skills.guard import GuardVerdict, TrustBook, check, describe_findings
from engine.skills.manage import ACTIONS, SkillManager
from engine.skills.store import (
    FILE_MAX_CHARS,
    SKILL_MD_MAX_CHARS,
    SkillError,
    find_skill,
    list_files,
    load_catalog,
    read_document,
    read_file,
)
from engine.skills.usage import UsageBook
from engine.tools import Tool

__all__ = [
    "INDEX_MAX_CHARS",
    "SKILL_MANAGE_SCHEMA",
    "SKILL_VIEW_SCHEMA",
    "propose_skill_message",
    "skill_tools",
    "skills_index",
]

log = logging.getLogger(__name__)

# The index sits in every prompt; past this size the least-used skills lose their description
# and then their line. ~1,500 tokens at 4 chars a token.
INDEX_MAX_CHARS = 6_000
INDEX_DESCRIPTION_CHARS = 90
# A view returns at most this much text; longer files are cut with a marker saying so.
VIEW_MAX_CHARS = {"SKILL.md": 2 * SKILL_MD_MAX_CHARS, "file": FILE_MAX_CHARS}
DEFAULT_PROPOSE_AFTER = 5

SKILL_VIEW_SCHEMA: dict[str, Any] = {
    "name": "skill_view",
    "description": (
        "Open a saved skill: a procedure that worked before, written down for reuse. With a "
        "name, returns its SKILL.md instructions and the list of its supporting files; with a "
        "name and file, returns that file. With no name, lists every skill. Open the matching "
        "skill before starting a task it covers, and follow it."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "name": {
                "type": "string",
                "description": "skill name as in the skills index (e.g. git-bisect or "
                "devops/deploy-app); omit to list all skills",
            },
            "file": {
                "type": "string",
                "description": "a supporting file relative to the skill folder, e.g. "
                "references/api.md",
            },
        },
    },
}

SKILL_MANAGE_SCHEMA: dict[str, Any] = {
    "name": "skill_manage",
    "description": (
        "Save and maintain skills: reusable procedures for tasks that recur. create: name + "
        "description + body (Markdown steps), or content = a whole SKILL.md with '---' YAML "
        "front matter (name, description). patch: replace one exact, unique piece of text "
        "(find → replace) in SKILL.md or in file, or every occurrence with replace_all. edit: "
        "replace the whole SKILL.md (content). delete: remove the skill (absorbed_into: the "
        "skill it was merged into). write_file / remove_file: a supporting file under "
        "references/, templates/, scripts/ or assets/. Names: lowercase letters, digits, "
        "'.', '_', '-'. Write general, reusable steps, not one task's details or secrets."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": list(ACTIONS)},
            "name": {"type": "string", "description": "the skill's name"},
            "category": {"type": "string", "description": "create: optional folder to group it"},
            "description": {
                "type": "string",
                "description": "create: one line saying when to use the skill (max 1,024 chars)",
            },
            "body": {"type": "string", "description": "create: the instructions, in Markdown"},
            "content": {
                "type": "string",
                "description": "create/edit: the whole SKILL.md; write_file: the file's text",
            },
            "find": {"type": "string", "description": "patch: exact text that occurs once"},
            "replace": {"type": "string", "description": "patch: the text to put instead"},
            "replace_all": {
                "type": "boolean",
                "description": "patch: replace every occurrence of find, not exactly one",
            },
            "absorbed_into": {
                "type": "string",
                "description": "delete: the existing skill this one was merged into",
            },
            "file": {
                "type": "string",
                "description": "write_file/remove_file/patch: path inside the skill, e.g. "
                "references/notes.md (patch defaults to SKILL.md)",
            },
        },
        "required": ["action", "name"],
    },
}


def _cut(text: str, limit: int, what: str) -> tuple[str, bool]:
    if len(text) <= limit:
        return text, False
    return (
        text[:limit] + f"\n\n[… {what} cut here: {len(text) - limit:,} more chars not shown]",
        True,
    )


def _untrusted(result: dict[str, Any], verdict: GuardVerdict) -> dict[str, Any]:
    """A viewed document marked as stored data; the guard's findings that its trust level let
    through (it has scanned the text already) become the ``warning``."""
    if verdict.warnings:
        result["warning"] = screen.warning_text(f.category for f in verdict.warnings)
    return screen.untrusted(result, int(bool(verdict.warnings)))


class SkillView:
    """The ``skill_view`` handler."""

    def __init__(self, home: Home) -> None:
        self.home = home
        self.trust = TrustBook(home.skills_dir)
        self.usage = UsageBook(home.skills_dir)

    def __call__(self, arguments: dict[str, Any]) -> dict[str, Any]:
        try:
            name = arguments.get("name")
            file = arguments.get("file")
            if name in (None, ""):
                if file not in (None, ""):
                    raise SkillError("invalid", "file needs the name of the skill it belongs to")
                return self._list()
            if not isinstance(name, str):
                raise SkillError("invalid", "name must be a string")
            if file in (None, "", "SKILL.md"):
                return self._skill(name)
            return self._file(name, file)
        except SkillError as exc:
            return exc.to_dict()
        except OSError as exc:
            return {"ok": False, "error": "io", "message": f"skills unreadable: {exc}"}

    def _withheld(self, ref: str, what: str, findings: str) -> SkillError:
        return SkillError(
            "blocked",
            f"{what} of skill {ref!r} is withheld by the skills guard ({findings}). Do not "
            f"follow it; the user can inspect it with `cairn skills show {ref}`.",
        )

    def _list(self) -> dict[str, Any]:
        catalog = load_catalog(self.home)
        levels = self.trust.levels()
        skills = []
        withheld = 0
        for skill in catalog.skills:
            level = levels.get(skill.name, TrustBook.DEFAULT)
            if check(skill.meta.description, level, "load").blocked:
                withheld += 1
                continue
            skills.append({"name": skill.ref, "description": skill.meta.one_line})
        result: dict[str, Any] = {"ok": True, "count": len(skills), "skills": skills}
        screen.untrusted(result, screen.mark_all(skills, "description"))
        if withheld:
            result["withheld"] = withheld
        if catalog.problems:
            result["broken"] = [f"{p.path}: {p.message}" for p in catalog.problems[:10]]
        return result

    def _skill(self, name: str) -> dict[str, Any]:
        skill = find_skill(self.home, name)
        doc = read_document(skill)
        level = self.trust.level(skill.name)
        verdict = check(doc.text, level, "load")
        if verdict.blocked:
            raise self._withheld(skill.ref, "SKILL.md", describe_findings(verdict.blocking, 3))
        content, cut = _cut(doc.text, VIEW_MAX_CHARS["SKILL.md"], "SKILL.md")
        uses = self.usage.record(skill.name)
        result: dict[str, Any] = {
            "ok": True,
            "name": skill.ref,
            "trust": level,
            "content": content,
            "files": [f"{path} ({size:,} bytes)" for path, size in list_files(skill)],
        }
        if cut:
            result["truncated"] = True
        if verdict.warnings:
            result["cautions"] = [f.describe() for f in verdict.warnings[:5]]
        if uses is not None:
            result["uses"] = uses
        return _untrusted(result, verdict)

    def _file(self, name: str, file: str) -> dict[str, Any]:
        if not isinstance(file, str):
            raise SkillError("invalid", "file must be a string")
        skill = find_skill(self.home, name)
        rel, data = read_file(skill, file)
        try:
            text = decode_utf8(data)
            if "\x00" in text:
                raise ValueError("NUL byte")
        except ValueError:
            return {
                "ok": True,
                "name": skill.ref,
                "file": str(rel),
                "binary": True,
                "size": len(data),
                "message": f"{rel} is a binary file ({len(data):,} bytes); it is not shown",
            }
        verdict = check(text, self.trust.level(skill.name), "load", file=str(rel))
        if verdict.blocked:
            raise self._withheld(skill.ref, str(rel), describe_findings(verdict.blocking, 3))
        content, cut = _cut(text, VIEW_MAX_CHARS["file"], str(rel))
        result: dict[str, Any] = {
            "ok": True,
            "name": skill.ref,
            "file": str(rel),
            "content": content,
        }
        if cut:
            result["truncated"] = True
        if verdict.warnings:
            result["cautions"] = [f.describe() for f in verdict.warnings[:5]]
        return _untrusted(result, verdict)


class SkillManageTool:
    """The ``skill_manage`` handler: the agent's writes, staged when approval is on."""

    def __init__(self, manager: SkillManager) -> None:
        self.manager = manager

    def __call__(self, arguments: dict[str, Any]) -> dict[str, Any]:
        try:
            return self.manager.run(arguments)
        except SkillError as exc:
            return exc.to_dict()
        except OSError as exc:
            return {"ok": False, "error": "io", "message": f"skills not writable: {exc}"}


def _summarize_view(arguments: dict[str, Any], result: dict[str, Any]) -> str:
    if not result.get("ok"):
        return f"skill_view: failed ({result.get('error', 'error')})"
    if "skills" in result:
        return f"skill_view: listed {result['count']} skills"
    if "file" in result:
        return f"skill_view: opened {result['name']}/{result['file']}"
    return f"skill_view: loaded {result['name']}"


def _summarize_manage(arguments: dict[str, Any], result: dict[str, Any]) -> str:
    action = arguments.get("action", "?")
    if not result.get("ok"):
        return f"skill_manage: {action} refused ({result.get('error', 'error')})"
    if result.get("status") == "staged":
        return f"skill_manage: {action} {result.get('skill')} staged as {result['pending_id']}"
    return f"skill_manage: {action} {result.get('skill')}"


def skill_tools(
    home: Home,
    config: Config,
    origin: Origin = "foreground",
    *,
    session_id: str | None = None,
) -> list[Tool]:
    """``skill_view`` and ``skill_manage`` for an agent working in ``home``.

    ``origin`` marks who is writing (``foreground`` for the conversation,
    ``background_review`` for the review thread); both write at trust ``agent-created`` and
    both are staged when ``config.skills.write_approval`` is on. ``session_id`` is copied into
    staged records so the pending dialog can say which conversation asked.
    """
    manager = SkillManager(home, config, author="agent", origin=origin, session_id=session_id)
    return [
        Tool("skill_view", SKILL_VIEW_SCHEMA, SkillView(home), _summarize_view, parallel_safe=True),
        Tool(
            "skill_manage",
            SKILL_MANAGE_SCHEMA,
            SkillManageTool(manager),
            _summarize_manage,
            parallel_safe=False,
        ),
    ]


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[: limit - 1].rsplit(" ", 1)[0]
    return (cut if len(cut) > limit // 2 else text[: limit - 1]) + "…"


_INDEX_HEADER = (
    "Saved skills (procedures that worked before). When a task matches one, call "
    "skill_view(name) first and follow it; skill_view(name, file) opens a file it lists."
)


_ALSO = "Also (skill_view(name) shows what they do): "
_MORE = "… and {rest} more: skill_view() lists every skill."


def skills_index(home: Home, *, max_chars: int = INDEX_MAX_CHARS) -> str:
    """The compact skills index for the prompt's stable tier; ``""`` when there are none.

    One line per skill, ``- name: first line of its description`` (clipped), sorted by name so
    the text is identical from session to session while the skills are unchanged. When the
    whole list exceeds ``max_chars``, the most used skills keep their description, the next
    ones are listed by name only, and the rest are counted (``skill_view()`` lists them all).

    A description is scanned only when it is about to be shown, and a skill whose description
    the guard withholds at its trust level is left out; one the guard allows at its trust but
    the threat scanner flags keeps its name and its description is replaced by a notice.
    Names (plain ``[a-z0-9._-]``, cheap to scan) are scanned too and a flagged one is left
    out. With hundreds of skills only the few dozen descriptions that fit are scanned.
    Broken skills are left out (``cairn skills list`` reports them).
    """
    catalog = load_catalog(home)
    if not catalog.skills:
        return ""
    levels = TrustBook(home.skills_dir).levels()
    counts = UsageBook(home.skills_dir).counts()
    ranked = sorted(
        catalog.skills,
        key=lambda s: (-(counts[s.name].uses if s.name in counts else 0), s.ref),
    )
    # Room is kept for the two closing lines, so the result never exceeds max_chars.
    budget = max_chars - len(_INDEX_HEADER) - len(_ALSO) - len(_MORE) - 12
    full: list[str] = []
    bare: list[str] = []
    rest = 0
    # Most used first when deciding what fits; the output is sorted by name afterwards.
    for skill in ranked:
        if threats.scan(skill.ref).blocked:
            continue  # a name chosen to be read as an order: not worth showing at all
        line = f"- {skill.ref}: {_clip(skill.meta.one_line, INDEX_DESCRIPTION_CHARS)}"
        if not bare and not rest and len(line) + 1 <= budget:
            level = levels.get(skill.name, TrustBook.DEFAULT)
            if check(skill.meta.description, level, "load").blocked:
                continue
            # The guard judges a skill by its trust level, which lets a trusted skill's
            # procedure name sensitive paths; the index sits in the system prompt, where
            # nothing flagged goes whatever its source, so the description is withheld there
            # and the skill stays usable.
            verdict = threats.scan(skill.meta.description)
            if verdict.blocked:
                line = (
                    f"- {skill.ref}: [description withheld by the threat scanner "
                    f"({', '.join(verdict.categories)}); `cairn skills show {skill.ref}`]"
                )
            full.append(line)
            budget -= len(line) + 1
        elif not rest and len(skill.ref) + 2 <= budget:
            bare.append(skill.ref)
            budget -= len(skill.ref) + 2
        else:
            rest += 1
    if not (full or bare or rest):
        return ""
    lines = [_INDEX_HEADER, *sorted(full)]
    if bare:
        lines.append(_ALSO + ", ".join(sorted(bare)))
    if rest:
        lines.append(_MORE.format(rest=rest))
    return "\n".join(lines)


def propose_skill_message(
    tool_call_count: int, threshold: int = DEFAULT_PROPOSE_AFTER
) -> str | None:
    """A note for the model after a task that took ``tool_call_count`` tool calls.

    Returns None below ``threshold`` (pass ``config.skills.propose_after_tool_calls``; 0 turns
    the nudge off). The text asks the model to offer the user, in its reply, to save the
    workflow as a skill; it does not save anything by itself, and an offer the user declines
    costs nothing.
    """
    if threshold <= 0 or tool_call_count < threshold:
        return None
    return (
        f"That task took {tool_call_count} tool calls. If the way you solved it is likely to "
        "be needed again (a procedure, not a one-off), end your reply by offering to save it "
        "as a skill, in one short sentence. If the user agrees, call skill_manage with "
        "action 'create': a short name, a one-line description of when to use it, and "
        "numbered steps that worked, with pitfalls you hit, but without this task's "
        "specifics or any secrets. If a skill for this already exists, offer to patch it "
        "instead. If the workflow is not reusable, say nothing about skills."
    )
