"""The ``fact_store`` and ``fact_feedback`` tools as the model sees them."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from engine.memory import screen
from engine.plugins.holographic.store import (
    Fact,
    FactStore,
    FactStoreError,
    NewFact,
    ScoredFact,
    screen_fact,
)
from engine.tools import Tool

if TYPE_CHECKING:
    from engine.plugins.holographic.pending import FactStaging

_REQUEST_FIELDS = ("action", "content", "entities", "tags", "fact_id")
_screen = screen_fact


def _preview(text: str, width: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


ACTIONS = ("add", "search", "probe", "related", "reason", "contradict", "update", "remove", "list")
MAX_LIMIT = 50

FACT_STORE_SCHEMA: dict[str, Any] = {
    "name": "fact_store",
    "description": (
        "Your long-term fact store, beside the bounded memory in the prompt: many short, "
        "durable facts about people, projects, tools and places, each with the entities it is "
        "about. add: store one fact (content, entities, tags). search: facts answering a "
        "question (query). probe: facts about one entity. related: entities connected to one "
        "entity. reason: facts linking several entities (entities). contradict: facts that "
        "conflict with a fact (fact_id) or a statement (content); with neither, conflicts "
        "across the store. update / remove: by fact_id. list: recent facts (optional entity, "
        "tag). Results carry a trust score; tell fact_feedback whether a fact helped."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": list(ACTIONS)},
            "content": {"type": "string", "description": "one self-contained statement"},
            "entities": {
                "type": "array",
                "items": {"type": "string"},
                "description": "names the fact is about (add, update); names to link (reason)",
            },
            "tags": {"type": "array", "items": {"type": "string"}},
            "query": {"type": "string", "description": "what to look for (search)"},
            "entity": {"type": "string", "description": "one name (probe, related, list)"},
            "fact_id": {"type": "integer"},
            "tag": {"type": "string", "description": "only facts with this tag (list)"},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT},
            "min_trust": {"type": "number", "minimum": 0, "maximum": 1},
        },
        "required": ["action"],
    },
}

FEEDBACK_SCHEMA: dict[str, Any] = {
    "name": "fact_feedback",
    "description": (
        "Say whether a fact from the fact store helped: helpful raises its trust by 0.05, "
        "unhelpful (wrong or outdated) lowers it by 0.10. Low-trust facts rank lower and, "
        "below 0.1, are no longer returned."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "fact_id": {"type": "integer"},
            "feedback": {"type": "string", "enum": ["helpful", "unhelpful"]},
        },
        "required": ["fact_id", "feedback"],
    },
}


def _brief(fact: Fact) -> dict[str, Any]:
    shown: dict[str, Any] = {
        "id": fact.id,
        "content": fact.content,
        "entities": fact.entities,
        "trust": fact.trust,
    }
    if fact.tags:
        shown["tags"] = fact.tags
    if isinstance(fact, ScoredFact):
        shown["score"] = fact.score
        if fact.covers:
            shown["covers"] = fact.covers
    return shown


def _int(arguments: dict[str, Any], name: str, default: int | None = None) -> int:
    value = arguments.get(name, default)
    try:
        if isinstance(value, bool):
            raise TypeError
        return int(value)  # type: ignore[arg-type]
    except (TypeError, ValueError) as exc:
        raise FactStoreError("invalid", f"{name} must be an integer") from exc


def _text(arguments: dict[str, Any], name: str) -> str:
    value = arguments.get(name)
    if not isinstance(value, str) or not value.strip():
        raise FactStoreError("invalid", f"give {name} for this action")
    return value


def _names(arguments: dict[str, Any], name: str) -> list[str] | None:
    value = arguments.get(name)
    if value is None:
        return None
    if isinstance(value, str):  # small models send "a, b" for a list
        value = [part for part in value.split(",") if part.strip()]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise FactStoreError("invalid", f"{name} must be a list of strings")
    return value


WRITES = ("add", "update", "remove")


class FactStoreTool:
    """Dispatches ``fact_store`` calls. With ``staging`` given and saying yes (memory write
    approval is on), add, update and remove are checked now and queued for the user instead
    of applied: a fact is recalled into later prompts, so it is memory-like state."""

    def __init__(self, store: FactStore, staging: FactStaging | None = None) -> None:
        self.store = store
        self.staging = staging

    def __call__(self, arguments: dict[str, Any]) -> dict[str, Any]:
        try:
            if (
                self.staging is not None
                and isinstance(arguments, dict)
                and arguments.get("action") in WRITES
                and self.staging.wanted()
            ):
                return self._stage(arguments)
            return self._dispatch(arguments)
        except FactStoreError as exc:
            return exc.to_dict()

    def apply(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Carry out ``arguments`` now, whatever the approval setting (an approved record)."""
        return self._dispatch(arguments)

    def _stage(self, arguments: dict[str, Any]) -> dict[str, Any]:
        assert self.staging is not None
        action = str(arguments["action"])
        request = {k: arguments[k] for k in _REQUEST_FIELDS if arguments.get(k) is not None}
        # Refuse now what could never be approved, so the model hears it in the same turn.
        if action == "add":
            content = _text(arguments, "content")
            _screen(content, _names(arguments, "entities") or [])
            summary = f"add fact {_preview(content)!r}"
        else:
            fact = self.store.get(_int(arguments, "fact_id"))
            new = arguments.get("content")
            if action == "update" and isinstance(new, str):
                _screen(new, _names(arguments, "entities") or [])
                summary = f"update fact #{fact.id} to {_preview(new)!r}"
            elif action == "update":
                summary = f"update fact #{fact.id} ({_preview(fact.content)!r})"
            else:
                summary = f"remove fact #{fact.id} ({_preview(fact.content)!r})"
        pending_id = self.staging.stage(action, summary, request)
        return {
            "ok": True,
            "status": "staged",
            "pending_id": pending_id,
            "message": f"Staged for approval as {pending_id} ({summary}); the fact store is "
            "unchanged until the user approves it.",
        }

    def _limit(self, arguments: dict[str, Any], default: int) -> int:
        return max(1, min(MAX_LIMIT, _int(arguments, "limit", default)))

    def _min_trust(self, arguments: dict[str, Any]) -> float:
        value = arguments.get("min_trust", 0.1)
        try:
            return min(1.0, max(0.0, float(value)))
        except (TypeError, ValueError) as exc:
            raise FactStoreError("invalid", "min_trust must be a number from 0 to 1") from exc

    def _dispatch(self, arguments: dict[str, Any]) -> dict[str, Any]:
        action = arguments.get("action")
        handler: Callable[[dict[str, Any]], dict[str, Any]] | None = getattr(
            self, f"_{action}", None
        )
        if action not in ACTIONS or handler is None:
            raise FactStoreError("invalid", f"action must be one of: {', '.join(ACTIONS)}")
        return handler(arguments)

    def _add(self, arguments: dict[str, Any]) -> dict[str, Any]:
        fact, created = self.store.add(
            NewFact(
                content=_text(arguments, "content"),
                entities=_names(arguments, "entities") or [],
                tags=_names(arguments, "tags") or [],
            )
        )
        result: dict[str, Any] = {
            "ok": True,
            "status": "added" if created else "unchanged",
            "fact": _brief(fact),
        }
        if created:
            conflicts = self.store.contradict(fact_id=fact.id, limit=3)
            if conflicts:
                result["possible_conflicts"] = [
                    {"kind": c.kind, "detail": c.detail, "fact": _brief(c.other)}
                    for c in conflicts
                    if c.other is not None
                ]
                result["message"] = (
                    "Stored; it may conflict with the facts listed: update or remove the one "
                    "that is wrong."
                )
        return result

    def _search(self, arguments: dict[str, Any]) -> dict[str, Any]:
        found = self.store.search(
            _text(arguments, "query"),
            limit=self._limit(arguments, 5),
            min_trust=self._min_trust(arguments),
        )
        facts = [_brief(f) for f in found]
        # Facts are kept (the model searched for them) but marked as stored data; the store
        # scans on write, and this catches facts written before a scanner update.
        return screen.untrusted({"ok": True, "facts": facts}, screen.mark_all(facts))

    def _probe(self, arguments: dict[str, Any]) -> dict[str, Any]:
        result = self.store.probe(
            _text(arguments, "entity"),
            limit=self._limit(arguments, 10),
            min_trust=self._min_trust(arguments),
        )
        facts = [_brief(f) for f in result.facts]
        shown = {"ok": True, "entity": result.entity, "known": result.known, "facts": facts}
        return screen.untrusted(shown, screen.mark_all(facts))

    def _related(self, arguments: dict[str, Any]) -> dict[str, Any]:
        entity = _text(arguments, "entity")
        found = self.store.related(
            entity, limit=self._limit(arguments, 10), min_trust=self._min_trust(arguments)
        )
        return {"ok": True, "entity": entity, "related": [r.model_dump() for r in found]}

    def _reason(self, arguments: dict[str, Any]) -> dict[str, Any]:
        names = _names(arguments, "entities")
        if not names:
            raise FactStoreError("invalid", "give entities (two or more) for reason")
        result = self.store.reason(
            names, limit=self._limit(arguments, 10), min_trust=self._min_trust(arguments)
        )
        facts = [_brief(f) for f in result.facts]
        shown = {
            "ok": True,
            "entities": result.entities,
            "unknown": result.unknown,
            "facts": facts,
            "chains": [c.model_dump() for c in result.chains],
        }
        return screen.untrusted(shown, screen.mark_all(facts))

    def _contradict(self, arguments: dict[str, Any]) -> dict[str, Any]:
        fact_id = _int(arguments, "fact_id") if arguments.get("fact_id") is not None else None
        content = arguments.get("content") if isinstance(arguments.get("content"), str) else None
        found = self.store.contradict(
            fact_id=fact_id,
            content=content,
            entities=_names(arguments, "entities") or [],
            limit=self._limit(arguments, 10),
        )
        return {
            "ok": True,
            "conflicts": [
                {
                    "kind": c.kind,
                    "detail": c.detail,
                    "fact": _brief(c.fact),
                    **({"other": _brief(c.other)} if c.other is not None else {}),
                }
                for c in found
            ],
        }

    def _update(self, arguments: dict[str, Any]) -> dict[str, Any]:
        content = arguments.get("content")
        fact = self.store.update(
            _int(arguments, "fact_id"),
            content=content if isinstance(content, str) else None,
            entities=_names(arguments, "entities"),
            tags=_names(arguments, "tags"),
        )
        return {"ok": True, "status": "updated", "fact": _brief(fact)}

    def _remove(self, arguments: dict[str, Any]) -> dict[str, Any]:
        fact = self.store.remove(_int(arguments, "fact_id"))
        return {"ok": True, "status": "removed", "fact": _brief(fact)}

    def _list(self, arguments: dict[str, Any]) -> dict[str, Any]:
        found = self.store.list(
            tag=arguments.get("tag") if isinstance(arguments.get("tag"), str) else None,
            entity=arguments.get("entity") if isinstance(arguments.get("entity"), str) else None,
            min_trust=float(arguments.get("min_trust", 0.0) or 0.0),
            limit=self._limit(arguments, 20),
        )
        facts = [_brief(f) for f in found]
        shown = {"ok": True, "count": self.store.count(), "facts": facts}
        return screen.untrusted(shown, screen.mark_all(facts))


class FeedbackTool:
    def __init__(self, store: FactStore) -> None:
        self.store = store

    def __call__(self, arguments: dict[str, Any]) -> dict[str, Any]:
        try:
            verdict = arguments.get("feedback")
            if verdict not in ("helpful", "unhelpful"):
                raise FactStoreError("invalid", "feedback must be 'helpful' or 'unhelpful'")
            fact = self.store.feedback(_int(arguments, "fact_id"), verdict == "helpful")
        except FactStoreError as exc:
            return exc.to_dict()
        return {"ok": True, "fact": _brief(fact)}


def summarize_store(arguments: dict[str, Any], result: dict[str, Any]) -> str:
    action = arguments.get("action", "?")
    if not result.get("ok"):
        return f"fact store: {action} refused ({result.get('error', 'error')})"
    if result.get("status") == "staged":
        return f"fact store: {action} staged for approval ({result.get('pending_id')})"
    if "fact" in result:
        return f"fact store: {result.get('status', action)} #{result['fact']['id']}"
    for key in ("facts", "related", "conflicts"):
        if key in result:
            return f"fact store: {action}, {len(result[key])} {key}"
    return f"fact store: {action}"


def summarize_feedback(arguments: dict[str, Any], result: dict[str, Any]) -> str:
    if not result.get("ok"):
        return f"fact feedback: refused ({result.get('error', 'error')})"
    fact = result["fact"]
    return f"fact feedback: #{fact['id']} {arguments.get('feedback')} (trust {fact['trust']:.2f})"


def make_tools(store: FactStore, staging: FactStaging | None = None) -> list[Tool]:
    return [
        Tool("fact_store", FACT_STORE_SCHEMA, FactStoreTool(store, staging), summarize_store),
        Tool("fact_feedback", FEEDBACK_SCHEMA, FeedbackTool(store), summarize_feedback),
    ]
