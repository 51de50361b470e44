"""What session_search needs from a database's full-text engine, whichever it is.

A query is tried in forms from the most precise down: the whole query as a phrase, all terms,
any term, then substrings (also the path for CJK). A backend answers one form at a time, with
the cost of each answer bounded, and returns ``None`` for a form it cannot express.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from engine.sessions.query import Query

Form = Literal["phrase", "all", "any", "substring"]
FORMS: tuple[Form, ...] = ("phrase", "all", "any", "substring")
Order = Literal["relevance", "newest", "oldest"]


@dataclass(frozen=True)
class Filters:
    roles: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    since: float | None = None
    until: float | None = None
    exclude_root: str | None = None
    # What the model's own searches leave out unless it asks: tool output and the sessions of
    # tools and sub-agents (they echo what the main conversation already holds).
    exclude_roles: tuple[str, ...] = ()
    exclude_sources: tuple[str, ...] = ()

    @property
    def on_sessions(self) -> bool:
        """Whether a condition is on the session (``s``) rather than the message alone."""
        return bool(self.sources or self.exclude_sources) or self.exclude_root is not None

    def sql(self) -> tuple[str, dict[str, object]]:
        """Extra ``AND …`` conditions on ``m`` (messages) and ``s`` (sessions), with params."""
        clauses: list[str] = []
        params: dict[str, object] = {}
        if self.roles:
            names = [f"role{i}" for i in range(len(self.roles))]
            clauses.append(f"m.role IN ({', '.join(':' + n for n in names)})")
            params.update(zip(names, self.roles, strict=True))
        if self.sources:
            names = [f"source{i}" for i in range(len(self.sources))]
            clauses.append(f"s.source IN ({', '.join(':' + n for n in names)})")
            params.update(zip(names, self.sources, strict=True))
        if self.since is not None:
            clauses.append("m.timestamp >= :since")
            params["since"] = self.since
        if self.until is not None:
            clauses.append("m.timestamp <= :until")
            params["until"] = self.until
        if self.exclude_root is not None:
            clauses.append("s.root_session_id != :exclude_root")
            params["exclude_root"] = self.exclude_root
        for column, values, prefix in (
            ("m.role", self.exclude_roles, "xrole"),
            ("s.source", self.exclude_sources, "xsource"),
        ):
            if values:
                names = [f"{prefix}{i}" for i in range(len(values))]
                clauses.append(f"{column} NOT IN ({', '.join(':' + n for n in names)})")
                params.update(zip(names, values, strict=True))
        return "".join(f" AND {c}" for c in clauses), params


@dataclass(frozen=True)
class Hit:
    message_id: int
    session_id: str
    root_session_id: str
    score: float


class FullText(Protocol):
    def hits(
        self, query: Query, form: Form, filters: Filters, limit: int, order: Order
    ) -> list[Hit] | None: ...
