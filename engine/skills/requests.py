"""The six skill requests (create, patch, edit, delete, write_file, remove_file): their models,
the parsing of a tool call's arguments into one, and the one-line description of each.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from engine.skills.store import (
    SKILL_FILE,
    SkillError,
)

ACTIONS = ("create", "patch", "edit", "delete", "write_file", "remove_file")
Author = Literal["agent", "user"]


_PREVIEW = 60
_MAX_PREVIEWS = 5


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str


class CreateRequest(_Request):
    action: Literal["create"]
    category: str | None = None
    content: str | None = None
    description: str | None = None
    body: str | None = None


class PatchRequest(_Request):
    action: Literal["patch"]
    find: str
    replace: str
    file: str | None = None
    # Every occurrence instead of exactly one: for renaming a command or path throughout.
    replace_all: bool = False


class EditRequest(_Request):
    action: Literal["edit"]
    content: str


class DeleteRequest(_Request):
    action: Literal["delete"]
    # The skill that now holds this one's steps, when two were merged: it must exist, and the
    # history says where the deleted skill went.
    absorbed_into: str | None = None


class WriteFileRequest(_Request):
    action: Literal["write_file"]
    file: str
    content: str


class RemoveFileRequest(_Request):
    action: Literal["remove_file"]
    file: str


SkillRequest = Annotated[
    CreateRequest
    | PatchRequest
    | EditRequest
    | DeleteRequest
    | WriteFileRequest
    | RemoveFileRequest,
    Field(discriminator="action"),
]
_ADAPTER: TypeAdapter[SkillRequest] = TypeAdapter(SkillRequest)
_FIELDS = {
    "create": {"name", "category", "content", "description", "body"},
    "patch": {"name", "find", "replace", "file", "replace_all"},
    "edit": {"name", "content"},
    "delete": {"name", "absorbed_into"},
    "write_file": {"name", "file", "content"},
    "remove_file": {"name", "file"},
}


# Optional fields where "" can only mean "not given" (a model filling in every field).
_OPTIONAL = {
    "create": {"category", "content", "description", "body"},
    "patch": {"file"},
    "delete": {"absorbed_into"},
}


def parse_request(arguments: object) -> SkillRequest:
    """A validated request from tool or CLI arguments, or an ``invalid`` :class:`SkillError`.

    Models often send every field of the schema, unused ones as null or empty; those are
    dropped. An unused field with a value is refused, since it shows a misunderstanding.
    """
    if not isinstance(arguments, dict):
        raise SkillError("invalid", "the arguments must be an object")
    action = arguments.get("action")
    if action not in _FIELDS:
        raise SkillError("invalid", f"action must be one of {', '.join(ACTIONS)} (got {action!r})")
    allowed = _FIELDS[action]
    cleaned: dict[str, Any] = {"action": action}
    optional = _OPTIONAL.get(action, set())
    for key, value in arguments.items():
        if key == "action" or value is None or (value == "" and key in optional):
            continue
        if key not in allowed:
            if value in ("", [], {}):
                continue
            raise SkillError(
                "invalid",
                f"{key!r} is not used by {action}; it takes {', '.join(sorted(allowed))}",
            )
        cleaned[key] = value
    try:
        return _ADAPTER.validate_python(cleaned)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            key = ".".join(str(p) for p in err["loc"][1:]) or "arguments"
            if err["type"] == "missing":
                problems.append(f"{key} is required")
            else:
                problems.append(f"{key}: {err['msg']}")
        raise SkillError("invalid", f"{action}: " + "; ".join(problems)) from None


def _preview(text: str, limit: int = _PREVIEW) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def describe_request(request: SkillRequest) -> str:
    """One line for logs, the pending queue and the chat pane."""
    name = request.name
    if isinstance(request, CreateRequest):
        where = f" in {request.category}" if request.category else ""
        return f"create skill {name!r}{where}"
    if isinstance(request, PatchRequest):
        file = request.file or SKILL_FILE
        every = " (every occurrence)" if request.replace_all else ""
        return (
            f"patch {name}/{file}: {_preview(request.find, 30)!r} → "
            f"{_preview(request.replace, 30)!r}{every}"
        )
    if isinstance(request, EditRequest):
        return f"rewrite {name}/SKILL.md ({len(request.content):,} chars)"
    if isinstance(request, DeleteRequest):
        into = f" (absorbed into {request.absorbed_into!r})" if request.absorbed_into else ""
        return f"delete skill {name!r}{into}"
    if isinstance(request, WriteFileRequest):
        return f"write {name}/{request.file} ({len(request.content):,} chars)"
    return f"remove {name}/{request.file}"
