"""Memory operations and their pure semantics: no files, no locks, just lists of entries.

A batch applies in order and is all-or-nothing; the budget is checked on the final state only,
so a batch may remove before it adds.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from engine.memory.entries import EntryError, Target, clean_entry, usage
from engine.memory.errors import MemoryToolError

MAX_OPERATIONS = 100
PREVIEW_CHARS = 60
# Entries quoted in a tool result are bounded by the file's cap, but never below this, so a
# small cap still shows its entries.
ENTRIES_SHOWN_MIN = 2_000


class _Op(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class AddOp(_Op):
    action: Literal["add"]
    content: str


class ReplaceOp(_Op):
    action: Literal["replace"]
    old_text: str
    content: str


class RemoveOp(_Op):
    action: Literal["remove"]
    old_text: str


Operation = Annotated[AddOp | ReplaceOp | RemoveOp, Field(discriminator="action")]
_operations = TypeAdapter(list[Operation])


def parse_operations(data: Any) -> list[AddOp | ReplaceOp | RemoveOp]:
    """Validate untrusted operations (from the model, a file or a script) into typed ones."""
    if isinstance(data, dict) and "operations" in data:
        data = data["operations"]
    if not isinstance(data, list):
        raise MemoryToolError("invalid", "operations must be a list of {action, ...} objects")
    if not data:
        raise MemoryToolError("invalid", "operations is empty")
    if len(data) > MAX_OPERATIONS:
        raise MemoryToolError(
            "invalid",
            f"too many operations ({len(data):,}); one batch takes at most {MAX_OPERATIONS}",
        )
    try:
        return _operations.validate_python(data)
    except ValidationError as exc:
        problems = []
        for err in exc.errors()[:5]:
            # loc is (index, action tag, field...): name the operation and the field, if any.
            index, fields = err["loc"][0], [str(p) for p in err["loc"][2:]]
            where = f"operations[{index}]" + ("." + ".".join(fields) if fields else "")
            problems.append(f"{where}: {err['msg']}")
        raise MemoryToolError("invalid", "malformed operations: " + "; ".join(problems)) from exc


def preview(text: str, width: int = PREVIEW_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _content(op: AddOp | ReplaceOp) -> str:
    try:
        return clean_entry(op.content)
    except EntryError as exc:
        raise MemoryToolError("invalid", f"{op.action}: {exc}") from exc


def find_entry(entries: list[str], old_text: str) -> int:
    """Index of the entry ``old_text`` designates: an exact entry first, else the one entry
    containing it (identical duplicates count as one). Case-sensitive."""
    needle = old_text.strip()
    if not needle:
        raise MemoryToolError("invalid", "old_text is empty: quote part of the entry to change")
    if needle in entries:
        return entries.index(needle)
    hits = [i for i, entry in enumerate(entries) if needle in entry]
    if not hits:
        raise MemoryToolError("no_match", f"no entry contains {preview(needle)!r}")
    distinct = {entries[i] for i in hits}
    if len(distinct) > 1:
        shown = [preview(entries[i]) for i in hits]
        raise MemoryToolError(
            "ambiguous",
            f"{preview(needle)!r} matches {len(distinct)} different entries; "
            "be more specific: " + " | ".join(shown),
            matches=shown,
        )
    return hits[0]


def shown_entries(entries: list[str], budget: int) -> list[str]:
    """``entries`` whole, as many as fit in ``budget`` chars, then one line saying what was
    left out: a model consolidating needs the real text, but an over-budget file must not
    flood a tool result."""
    shown: list[str] = []
    used = 0
    for index, entry in enumerate(entries):
        if shown and used + len(entry) > budget:
            rest = entries[index:]
            shown.append(
                f"[… {len(rest):,} more entries ({sum(map(len, rest)):,} chars) not shown]"
            )
            break
        shown.append(entry)
        used += len(entry)
    return shown


def apply_to_entries(entries: list[str], ops: list[AddOp | ReplaceOp | RemoveOp]) -> list[str]:
    """The entries after ``ops``, in order; raises on the first operation that cannot apply.

    Identical entries (left by a hand edit or another tool) collapse into the first: they only
    cost space, and every operation already treats them as one."""
    result = list(dict.fromkeys(entries))
    for op in ops:
        if isinstance(op, AddOp):
            entry = _content(op)
            if entry not in result:  # an exact duplicate is a no-op success
                result.append(entry)
        elif isinstance(op, ReplaceOp):
            entry = _content(op)
            result[find_entry(result, op.old_text)] = entry
        else:
            del result[find_entry(result, op.old_text)]
    return result


def check_budget(
    target: Target, before: list[str], after: list[str], limit: int, ops: list[Any]
) -> None:
    """Refuse a final state over the limit, unless it does not grow a file already over it."""
    old, new = usage(before), usage(after)
    if new <= limit or new <= old:
        return
    adds = [op for op in ops if isinstance(op, AddOp)]
    if len(ops) == 1 and adds:
        size = len(clean_entry(adds[0].content))
        lead = (
            f"{target.heading.split(' (')[0].title()} at {old:,}/{limit:,} chars. "
            f"Adding this entry ({size:,} chars) would exceed the limit."
        )
    else:
        lead = (
            f"{target.heading.split(' (')[0].title()} at {old:,}/{limit:,} chars. "
            f"This change would bring it to {new:,} chars, over the limit by {new - limit:,}."
        )
    raise MemoryToolError(
        "overflow",
        lead + " Nothing was written. Consolidate first: merge related entries with replace, "
        "remove stale ones, then add — or send them together as one `operations` batch, "
        "which is checked against the final total.",
        target=target.value,
        usage=old,
        limit=limit,
        would_be=new,
        entries=shown_entries(before, max(limit, ENTRIES_SHOWN_MIN)),
    )
