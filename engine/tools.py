"""One registry for every tool the model can call: schemas out, calls in, results as dicts.

A tool call never raises into the turn loop. Unknown names, arguments that are not a JSON
object and handler crashes all come back as ``{"ok": false, "error", "message"}`` results the
model can read and correct, and the transcript stays a valid call/result sequence.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from engine.errors import CairnError
from engine.providers.base import ToolCall

log = logging.getLogger(__name__)

Handler = Callable[[dict[str, Any]], dict[str, Any]]
Summarizer = Callable[[dict[str, Any], dict[str, Any]], str]

MAX_PARALLEL = 4


class ToolRegistryError(ValueError):
    pass


@dataclass(frozen=True)
class Tool:
    name: str
    schema: dict[str, Any]
    handler: Handler
    # One line for the chat pane ("memory: added 1 entry"); None: a generic line.
    summarize: Summarizer | None = None
    # False for tools whose calls must apply in the order the model gave them (memory edits).
    parallel_safe: bool = True


@dataclass(frozen=True)
class ToolOutcome:
    call: ToolCall
    result: dict[str, Any]
    summary: str

    @property
    def ok(self) -> bool:
        return bool(self.result.get("ok", True))

    def to_message(self) -> dict[str, Any]:
        return {
            "role": "tool",
            "tool_call_id": self.call.id,
            "name": self.call.name,
            "content": json.dumps(self.result, ensure_ascii=False, default=str),
        }


def _failure(code: str, message: str) -> dict[str, Any]:
    return {"ok": False, "error": code, "message": message}


def _generic_summary(name: str, result: dict[str, Any]) -> str:
    if result.get("ok", True) is False:
        return f"{name}: failed ({result.get('error', 'error')})"
    return f"{name}: done"


# A compact description keeps the first sentence, at most this long.
COMPACT_DESCRIPTION_CHARS = 120
# Keys of a JSON schema that only explain; the model still gets every name, type and enum.
_EXPLANATORY_KEYS = frozenset({"description", "examples", "title", "default"})


def _first_sentence(text: str, cap: int) -> str:
    text = " ".join(text.split())
    end = text.find(". ")
    sentence = text[: end + 1] if 0 <= end < cap else text
    return sentence if len(sentence) <= cap else sentence[: cap - 1].rstrip() + "…"


def _strip_explanations(node: Any) -> Any:
    if isinstance(node, list):
        return [_strip_explanations(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "properties" and isinstance(value, dict):
            # Parameter names, not schema keys: a parameter may be called "description".
            out[key] = {name: _strip_explanations(sub) for name, sub in value.items()}
        elif key not in _EXPLANATORY_KEYS:
            out[key] = _strip_explanations(value)
    return out


def compact_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` for a small window: the description cut to its first sentence, the
    parameters without their descriptions, defaults and examples (names, types, enums and
    required fields stay, so every call the full schema allows is still well formed)."""
    compact = dict(schema)
    if isinstance(compact.get("description"), str):
        compact["description"] = _first_sentence(compact["description"], COMPACT_DESCRIPTION_CHARS)
    if isinstance(compact.get("parameters"), dict):
        compact["parameters"] = _strip_explanations(compact["parameters"])
    return compact


class ToolRegistry:
    def __init__(self, tools: Sequence[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool) -> None:
        """Add ``tool``; a name already taken is refused, so a plug-in cannot shadow a core
        tool (or another plug-in)."""
        if tool.name in self._tools:
            raise ToolRegistryError(f"a tool named {tool.name!r} is already registered")
        if tool.schema.get("name") != tool.name:
            raise ToolRegistryError(
                f"tool {tool.name!r}: its schema names {tool.schema.get('name')!r}"
            )
        self._tools[tool.name] = tool

    def unregister(self, name: str) -> None:
        self._tools.pop(name, None)

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return list(self._tools)

    def schemas(self, compact: bool = False) -> list[dict[str, Any]]:
        """Every tool's schema; ``compact`` (a small window) in the short form of
        :func:`compact_schema`."""
        if compact:
            return [compact_schema(tool.schema) for tool in self._tools.values()]
        return [tool.schema for tool in self._tools.values()]

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def call(self, call: ToolCall) -> ToolOutcome:
        tool = self._tools.get(call.name)
        if tool is None:
            known = ", ".join(self._tools) or "none"
            result = _failure(
                "unknown_tool", f"there is no tool named {call.name!r}; tools: {known}"
            )
            return ToolOutcome(call, result, f"{call.name}: unknown tool")
        try:
            arguments = json.loads(call.arguments) if call.arguments.strip() else {}
        except ValueError as exc:
            result = _failure(
                "invalid_arguments",
                f"the arguments are not valid JSON ({exc}); send one JSON object",
            )
            return ToolOutcome(call, result, f"{call.name}: invalid arguments")
        if not isinstance(arguments, dict):
            result = _failure("invalid_arguments", "the arguments must be a JSON object")
            return ToolOutcome(call, result, f"{call.name}: invalid arguments")
        try:
            result = tool.handler(arguments)
        except CairnError as exc:  # a refusal: the model reads why, in the subsystem's words
            result = exc.to_dict()
        except Exception as exc:
            log.exception("tool %s failed", call.name)
            result = _failure("internal", f"{call.name} failed: {exc}"[:500])
        if not isinstance(result, dict):
            result = {"ok": True, "result": result}
        try:
            json.dumps(result, default=str)
        except (TypeError, ValueError) as exc:  # e.g. a circular structure
            result = _failure("internal", f"{call.name} returned a result that is not JSON: {exc}")
        try:
            summary = (tool.summarize or (lambda _a, r: _generic_summary(call.name, r)))(
                arguments, result
            )
        except Exception:
            summary = _generic_summary(call.name, result)
        return ToolOutcome(call, result, summary)

    def run(
        self,
        calls: Sequence[ToolCall],
        on_done: Callable[[ToolOutcome], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> list[ToolOutcome]:
        """Run one reply's calls; outcomes come back in the model's order.

        Calls run concurrently when every tool involved allows it, else one by one so order-
        dependent edits apply as asked. ``should_stop`` is checked before each sequential call;
        skipped calls get a "cancelled" result so every call still has its answer.
        """
        if not calls:
            return []
        concurrent = len(calls) > 1 and all(
            self._tools[c.name].parallel_safe for c in calls if c.name in self._tools
        )
        outcomes: list[ToolOutcome] = []
        if concurrent:
            with ThreadPoolExecutor(max_workers=min(MAX_PARALLEL, len(calls))) as pool:
                futures = [pool.submit(self.call, c) for c in calls]
                for future in futures:
                    outcome = future.result()
                    outcomes.append(outcome)
                    if on_done:
                        on_done(outcome)
            return outcomes
        for call in calls:
            if should_stop is not None and should_stop():
                outcome = ToolOutcome(
                    call,
                    _failure("cancelled", "the user stopped the reply"),
                    f"{call.name}: stopped",
                )
            else:
                outcome = self.call(call)
            outcomes.append(outcome)
            if on_done:
                on_done(outcome)
        return outcomes
