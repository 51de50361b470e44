"""The fact store: ``<home>/memory_store.db``, its own SQLite database.

Facts are short statements with the entities they are about, tags, a trust score and usage
counts. Finding them takes two steps: SQLite (FTS5 full text, and the entity links) proposes
candidates cheaply, then each candidate is scored with keyword overlap and with holographic
reduced representations (``hrr.py``), which answer the questions plain text search cannot:

* ``search``: BM25 rank, the share of the query's keywords the fact holds, and the similarity
  of the fact's vector to the query's (words and the entities named in the query).
* ``probe``: facts *about* an entity: unbinding a fact's vector with the entity role and
  comparing with the entity shows whether it is one of the fact's subjects, and how central
  (a fact about fewer things holds each more strongly). Facts that only mention the name in
  passing come after.
* ``related``: the entities that share facts with one, each weighted by how strongly it
  decodes from those facts, times their trust.
* ``reason``: facts linking several entities, ranked by how many of them each fact binds and
  by similarity to the bundle of all of them; when no fact links a pair, two-step chains
  through a shared entity.
* ``contradict``: facts about the same entities that say the same thing but negated, or with a
  different value in the same place ("Kestrel uses PostgreSQL 15" / "… 16").

Every fact (content, entities and tags) passes the memory threat scanner before it is stored.
Trust starts at 0.5; helpful feedback adds 0.05 and unhelpful takes 0.10, within [0, 1]; scores
are multiplied by (0.5 + trust), so a fact marked unhelpful twice ranks at 80 %.
"""

from __future__ import annotations

import builtins
import json
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field
from sqlalchemy import (
    Column,
    ColumnElement,
    Connection,
    Engine,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    bindparam,
    delete,
    func,
    insert,
    select,
    text,
    true,
    update,
)
from sqlalchemy.engine import Row

from engine.db import sqlite_engine
from engine.errors import CairnError
from engine.memory import threats
from engine.plugins.holographic import hrr
from engine.plugins.holographic.text import (
    NEGATIONS,
    STOPWORDS,
    capitalised_names,
    entity_key,
    keywords,
    ngrams,
    words,
)

__all__ = [
    "Chain",
    "Conflict",
    "Fact",
    "FactStore",
    "FactStoreError",
    "NewFact",
    "ProbeResult",
    "ReasonResult",
    "RelatedEntity",
    "ScoredFact",
]

SCHEMA_VERSION = "1"
DEFAULT_TRUST = 0.5
HELPFUL_STEP = 0.05
UNHELPFUL_STEP = 0.10
MAX_CONTENT_CHARS = 2000
MAX_ENTITIES = 16
MAX_TAGS = 16
MAX_NAME_CHARS = 100
# Candidates re-ranked per query: enough to hold every plausible answer, few enough that
# scoring them (a vector each) stays in the low milliseconds.
FTS_CANDIDATES = 150
NAMED_CANDIDATES = 50  # facts of each entity a search query names
RERANK = 40  # candidates re-ranked with vectors, after a first cut on text and keywords
ENTITY_CANDIDATES = 300
MENTION_CANDIDATES = 100
# BM25 ranks every match, so a word in thousands of facts makes a query slow while telling
# little about relevance. Words matching at least COMMON_DF facts are looked up only together
# with the query's other words (all of them in one fact) — alone, they count in the keyword
# overlap only; a look-up with more matches than that ranks its newest RANK_BUDGET.
COMMON_DF = 500
RANK_BUDGET = 1000
QUERY_WORDS = 16
# A fact "binds" an entity when unbinding shows it at least this strongly (unrelated vectors
# sit at 0 ± 0.02; one entity among twenty parts shows about 0.2 with its double weight).
BINDS = 0.08
ENTITY_WEIGHT = 2.0
# A "different value" is a word or two ("15"/"16", "New York"/"Lisbon"); longer differences are
# usually different statements about the same subject, not conflicting ones.
MAX_VALUE_WORDS = 2


metadata = MetaData()

facts_table = Table(
    "facts",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("content", Text, nullable=False),
    # Whitespace- and case-folded content: adding the same fact twice finds the first.
    Column("content_key", Text, nullable=False, unique=True),
    Column("entities", Text, nullable=False, default="[]"),  # JSON list of display names
    Column("tags", Text, nullable=False, default="[]"),  # JSON list
    # Derived at write time so a query reads them instead of recomputing them per candidate:
    # the keywords of content, entities and tags (space-joined), and the packed vector.
    Column("terms", Text, nullable=False, default=""),
    Column("vector", LargeBinary, nullable=True),
    Column("source", String(64), nullable=False, default="tool"),
    Column("trust", Float, nullable=False, default=DEFAULT_TRUST),
    Column("retrieval_count", Integer, nullable=False, default=0),
    Column("helpful_count", Integer, nullable=False, default=0),
    Column("unhelpful_count", Integer, nullable=False, default=0),
    Column("created_at", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
)
entities_table = Table(
    "entities",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("key", Text, nullable=False, unique=True),
    Column("name", Text, nullable=False),
)
links_table = Table(
    "fact_entities",
    metadata,
    Column("fact_id", Integer, ForeignKey("facts.id", ondelete="CASCADE"), primary_key=True),
    Column("entity_id", Integer, ForeignKey("entities.id"), primary_key=True),
)
Index("fact_entities_entity", links_table.c.entity_id, links_table.c.fact_id)
# Built once: constructing a statement with a long IN list costs more than running it.
_FACTS_BY_ID = select(facts_table).where(facts_table.c.id.in_(bindparam("ids", expanding=True)))
_ENTITIES_BY_KEY = select(entities_table.c.key, entities_table.c.name).where(
    entities_table.c.key.in_(bindparam("keys", expanding=True))
)
_ENTITY_IDS = select(entities_table.c.id, entities_table.c.key).where(
    entities_table.c.key.in_(bindparam("keys", expanding=True))
)
_INSERT_ENTITY = insert(entities_table).prefix_with("OR IGNORE")
_INSERT_LINK = insert(links_table).prefix_with("OR IGNORE")
_UNLINK = delete(links_table).where(links_table.c.fact_id == bindparam("fact"))
_INSERT_FACT = insert(facts_table).prefix_with("OR IGNORE")
_TERMS_BY_ID = select(facts_table.c.id, facts_table.c.terms, facts_table.c.trust).where(
    facts_table.c.id.in_(bindparam("ids", expanding=True))
)
_ENTITY_BY_KEY = select(entities_table.c.id, entities_table.c.name).where(
    entities_table.c.key == bindparam("key")
)
_FTS_RANKED = text(
    "SELECT rowid, rank FROM facts_fts WHERE facts_fts MATCH :q ORDER BY rank LIMIT :n"
)
# Walks the index newest first and stops: its cost is bounded by :n, not by the matches.
_FTS_NEWEST = text(
    "SELECT rowid, bm25(facts_fts, 1.0, 2.0, 0.5) AS rank FROM facts_fts "
    "WHERE facts_fts MATCH :q ORDER BY rowid DESC LIMIT :n"
)
_FTS_COUNT = text(
    "SELECT count(*) FROM (SELECT 1 FROM facts_fts WHERE facts_fts MATCH :q LIMIT :cap)"
)
_LINKED = (
    select(links_table.c.fact_id)
    .join(facts_table, facts_table.c.id == links_table.c.fact_id)
    .where(links_table.c.entity_id == bindparam("entity"))
    .order_by(facts_table.c.trust.desc(), facts_table.c.updated_at.desc())
    .limit(bindparam("limit"))
)

meta_table = Table(
    "store_meta",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("value", Text, nullable=False),
)

# External-content FTS5 over the facts table, kept in step by triggers; trust and counter
# updates do not touch the index (AFTER UPDATE OF only the indexed columns).
_FTS_DDL = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS facts_fts USING fts5(content, entities, tags, "
    "content='facts', content_rowid='id', tokenize='porter unicode61')",
    "CREATE TRIGGER IF NOT EXISTS facts_ai AFTER INSERT ON facts BEGIN "
    "INSERT INTO facts_fts(rowid, content, entities, tags) "
    "VALUES (new.id, new.content, new.entities, new.tags); END",
    "CREATE TRIGGER IF NOT EXISTS facts_ad AFTER DELETE ON facts BEGIN "
    "INSERT INTO facts_fts(facts_fts, rowid, content, entities, tags) "
    "VALUES ('delete', old.id, old.content, old.entities, old.tags); END",
    "CREATE TRIGGER IF NOT EXISTS facts_au AFTER UPDATE OF content, entities, tags ON facts "
    "BEGIN INSERT INTO facts_fts(facts_fts, rowid, content, entities, tags) "
    "VALUES ('delete', old.id, old.content, old.entities, old.tags); "
    "INSERT INTO facts_fts(rowid, content, entities, tags) "
    "VALUES (new.id, new.content, new.entities, new.tags); END",
    # Entity names count double, tags half, in BM25.
    "INSERT INTO facts_fts(facts_fts, rank) VALUES ('rank', 'bm25(1.0, 2.0, 0.5)')",
)


class FactStoreError(CairnError):
    """A refused fact store operation; ``code`` is stable for scripts."""


# -- data -------------------------------------------------------------------------------------


class NewFact(BaseModel):
    content: str
    entities: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    source: str = "tool"


class Fact(BaseModel):
    id: int
    content: str
    entities: list[str]
    tags: list[str]
    source: str
    trust: float
    retrieval_count: int
    helpful_count: int
    unhelpful_count: int
    created_at: float
    updated_at: float


class ScoredFact(Fact):
    score: float
    # reason: which of the asked entities the fact binds or names
    covers: list[str] = Field(default_factory=list)


class ProbeResult(BaseModel):
    entity: str  # the stored name the query resolved to (or the query itself)
    known: bool
    facts: list[ScoredFact]


class RelatedEntity(BaseModel):
    name: str
    score: float
    facts: list[int]  # the shared facts, strongest first


class Chain(BaseModel):
    start: str
    via: str
    end: str
    facts: list[int]  # [start–via fact, via–end fact]
    score: float


class ReasonResult(BaseModel):
    entities: list[str]
    unknown: list[str]
    facts: list[ScoredFact]
    chains: list[Chain]


class Conflict(BaseModel):
    kind: Literal["negation", "value"]
    fact: Fact
    other: Fact | None  # None when checking text that is not stored
    detail: str


# -- helpers ----------------------------------------------------------------------------------


def _content_key(content: str) -> str:
    return " ".join(content.casefold().split())


def _clean_names(values: Iterable[str] | None, what: str, limit: int) -> list[str]:
    names: list[str] = []
    seen: set[str] = set()
    for value in values or []:
        if not isinstance(value, str):
            raise FactStoreError("invalid", f"{what} must be strings")
        name = " ".join(value.split())
        key = entity_key(name)
        if not key or key in seen:
            continue
        if len(name) > MAX_NAME_CHARS:
            raise FactStoreError("invalid", f"{what[:-1]} {name[:40]!r}… is too long")
        seen.add(key)
        names.append(name)
    if len(names) > limit:
        raise FactStoreError("invalid", f"at most {limit} {what} per fact")
    return names


def screen_fact(content: str, names: Sequence[str]) -> None:
    """Refuse a fact whose text or entity names the threat scanner blocks."""
    _screen(content, names)


def _screen(content: str, names: Sequence[str]) -> None:
    for part in (content, *names):
        verdict = threats.scan(part)
        if verdict.blocked:
            raise FactStoreError(
                "blocked",
                f"refused by the threat scanner ({', '.join(verdict.categories)}); "
                "facts may not carry instructions, secrets or hidden characters",
                categories=verdict.categories,
            )


def _fts_words(text_: str) -> list[str]:
    """The words of ``text_`` to look up: its topic words, or all of them when it has none."""
    every = words(text_)
    topical = [w for w in every if w not in NEGATIONS and w not in STOPWORDS]
    return list(dict.fromkeys(topical or every))[:QUERY_WORDS]


def _any_of(chosen: Sequence[str]) -> str:
    """An FTS5 query matching any of ``chosen``; every word quoted, so nothing a user types
    can be FTS syntax."""
    return " OR ".join(f'"{w}"' for w in chosen)


def _phrase(name: str) -> str | None:
    spelled = " ".join(words(name))
    return f'"{spelled}"' if spelled else None


def _fact(row: Row[Any]) -> Fact:
    # Built without validation: every value comes from a row this store wrote (a search
    # converts hundreds of rows, and validating them was a third of its time).
    return Fact.model_construct(
        id=row.id,
        content=row.content,
        entities=json.loads(row.entities),
        tags=json.loads(row.tags),
        source=row.source,
        trust=row.trust,
        retrieval_count=row.retrieval_count,
        helpful_count=row.helpful_count,
        unhelpful_count=row.unhelpful_count,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


def _clamp(value: float) -> float:
    return round(min(1.0, max(0.0, value)), 6)


def _weight(trust: float) -> float:
    return 0.5 + trust


def conflict_between(
    a: str, b: str, names: Iterable[str] = ()
) -> tuple[Literal["negation", "value"], str] | None:
    """Whether statements ``a`` and ``b`` look like they contradict each other, and why.

    ``negation``: the same topic words, one of them negated. ``value``: the same opening (at
    least two topic words, one of them not part of an entity in ``names``: a subject and what
    is said of it), then different words (at most two on each side), then the same ending —
    "Kestrel uses PostgreSQL 15" / "Kestrel uses PostgreSQL 16", but not "Alice leads Kestrel"
    / "Alice lives in Lisbon".
    """
    name_words = {w for n in names for w in keywords(n)}
    ta, tb = keywords(a, keep_negations=True), keywords(b, keep_negations=True)
    negated_a = sum(t in NEGATIONS for t in ta) % 2 == 1
    negated_b = sum(t in NEGATIONS for t in tb) % 2 == 1
    pa = [t for t in ta if t not in NEGATIONS]
    pb = [t for t in tb if t not in NEGATIONS]
    sa, sb = set(pa), set(pb)
    if len(sa) >= 2 and len(sb) >= 2 and (sa <= sb or sb <= sa):
        if negated_a != negated_b:
            return "negation", "one says the opposite of the other"
        return None
    prefix = 0
    while prefix < min(len(pa), len(pb)) and pa[prefix] == pb[prefix]:
        prefix += 1
    suffix = 0
    while (
        suffix < min(len(pa), len(pb)) - prefix
        and pa[len(pa) - 1 - suffix] == pb[len(pb) - 1 - suffix]
    ):
        suffix += 1
    middle_a, middle_b = pa[prefix : len(pa) - suffix], pb[prefix : len(pb) - suffix]
    if (
        prefix >= 2
        and any(t not in name_words for t in pa[:prefix])
        and middle_a
        and middle_b
        and len(middle_a) <= MAX_VALUE_WORDS
        and len(middle_b) <= MAX_VALUE_WORDS
        and not set(middle_a) & set(middle_b)
        and negated_a == negated_b
    ):
        return "value", f"{' '.join(middle_a)!r} against {' '.join(middle_b)!r}"
    return None


def _encode(content: str, entities: Sequence[str], tags: Sequence[str]) -> tuple[bytes, str]:
    """A fact's packed vector and its keyword set (space-joined), as stored with it."""
    said = keywords(content)
    held = set(said).union(*(keywords(n) for n in [*entities, *tags]))
    parts = [hrr.bound(hrr.ROLE_WORD, w) for w in dict.fromkeys(said)]
    weights = [1.0] * len(parts)
    for name in entities:
        parts.append(hrr.bound(hrr.ROLE_ENTITY, entity_key(name)))
        weights.append(ENTITY_WEIGHT)
    for tag in tags:
        parts.append(hrr.bound(hrr.ROLE_TAG, entity_key(tag)))
        weights.append(1.0)
    vector = hrr.bundle(parts, weights) if parts else hrr.symbol("empty")
    return hrr.pack(vector), " ".join(sorted(held))


def _chains(
    resolved: list[tuple[int, str]], by_entity: dict[int, list[Fact]], per_pair: int = 3
) -> list[Chain]:
    """For each pair of entities (a, b), the best facts a–x and x–b through shared entities x:
    the strongest by the product of the two facts' trust, one chain per x."""
    chains: list[Chain] = []
    for left in range(len(resolved)):
        for right in range(left + 1, len(resolved)):
            (a_id, a_name), (b_id, b_name) = resolved[left], resolved[right]
            ends = {entity_key(a_name), entity_key(b_name)}
            # The most trusted b-side fact for each entity it shares with b.
            b_side: dict[str, Fact] = {}
            for fact in by_entity.get(b_id, []):
                for name in fact.entities:
                    key = entity_key(name)
                    if key not in ends and (key not in b_side or fact.trust > b_side[key].trust):
                        b_side[key] = fact
            best: dict[str, Chain] = {}
            for fa in by_entity.get(a_id, []):
                for name in fa.entities:
                    key = entity_key(name)
                    fb = b_side.get(key)
                    if fb is None or fb.id == fa.id or key in ends:
                        continue
                    score = round(fa.trust * fb.trust, 4)
                    if key not in best or score > best[key].score:
                        best[key] = Chain(
                            start=a_name, via=name, end=b_name, facts=[fa.id, fb.id], score=score
                        )
            chains += sorted(best.values(), key=lambda c: (-c.score, c.via))[:per_pair]
    return chains


# -- the store --------------------------------------------------------------------------------


class FactStore:
    """The facts in one SQLite file; safe to share between threads."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.engine: Engine = sqlite_engine(path)
            self._writer = self.engine.execution_options(sqlite_immediate=True)
            self._write_lock = threading.Lock()
            self._create()
        except Exception as exc:
            raise FactStoreError("io", f"the fact store {path} cannot be opened: {exc}") from exc

    def close(self) -> None:
        self.engine.dispose()

    def _create(self) -> None:
        with self._writer.begin() as conn:
            version = None
            if conn.exec_driver_sql(
                "SELECT 1 FROM sqlite_master WHERE name = 'store_meta'"
            ).first():
                version = conn.execute(
                    select(meta_table.c.value).where(meta_table.c.key == "schema")
                ).scalar()
            if version == SCHEMA_VERSION:
                self._check_vectors(conn)
                return
            if version is not None:
                raise FactStoreError(
                    "io", f"schema version {version} is not one this Cairn knows ({SCHEMA_VERSION})"
                )
            metadata.create_all(conn)
            for statement in _FTS_DDL:
                conn.exec_driver_sql(statement)
            conn.execute(insert(meta_table).values(key="schema", value=SCHEMA_VERSION))
            conn.execute(insert(meta_table).values(key="vectors", value=hrr.FORMAT))

    def _check_vectors(self, conn: Connection) -> None:
        """Forget vectors stored under another format (a different dimension or seed); reads
        derive them again from the text until the fact is next written."""
        stored = conn.execute(
            select(meta_table.c.value).where(meta_table.c.key == "vectors")
        ).scalar()
        if stored == hrr.FORMAT:
            return
        conn.execute(update(facts_table).values(vector=None))
        conn.execute(delete(meta_table).where(meta_table.c.key == "vectors"))
        conn.execute(insert(meta_table).values(key="vectors", value=hrr.FORMAT))

    @contextmanager
    def _write(self) -> Iterator[Connection]:
        # Writers of one process queue here rather than in SQLite's busy handler, which backs
        # off in sleeps of up to 100 ms; other processes still meet busy_timeout.
        try:
            with self._write_lock, self._writer.begin() as conn:
                yield conn
        except sqlite3.Error as exc:  # pragma: no cover - surfaced as SQLAlchemy errors
            raise FactStoreError("io", f"fact store write failed: {exc}") from exc

    # -- writing ---------------------------------------------------------------------------

    def _entities_for(self, conn: Connection, content: str, explicit: list[str]) -> list[str]:
        """The given entities, plus known entities named in ``content``; with none given,
        the capitalised names in it."""
        names = list(explicit)
        keys = {entity_key(n) for n in names}
        runs = capitalised_names(content)
        candidates: set[str] = set()
        for run in runs:
            candidates |= ngrams(words(run))
        candidates -= keys
        if candidates:
            known = conn.execute(_ENTITIES_BY_KEY, {"keys": sorted(candidates)}).all()
            for row in sorted(known, key=lambda r: -len(r.key)):
                if row.key not in keys:
                    keys.add(row.key)
                    names.append(row.name)
        if not explicit:
            for run in capitalised_names(content, sentence_initial=False):
                key = entity_key(run)
                if key not in keys and not any(key in k.split() for k in keys):
                    keys.add(key)
                    names.append(run)
        return names[:MAX_ENTITIES]

    def _link(self, conn: Connection, fact_id: int, names: list[str]) -> None:
        conn.execute(_UNLINK, {"fact": fact_id})
        if not names:
            return
        keys = {entity_key(n): n for n in names}
        ids = {r.key: r.id for r in conn.execute(_ENTITY_IDS, {"keys": list(keys)})}
        missing = [{"key": k, "name": n} for k, n in keys.items() if k not in ids]
        if missing:
            conn.execute(_INSERT_ENTITY, missing)
            added = conn.execute(_ENTITY_IDS, {"keys": [m["key"] for m in missing]})
            ids.update({r.key: r.id for r in added})
        conn.execute(_INSERT_LINK, [{"fact_id": fact_id, "entity_id": ids[k]} for k in keys])

    def _prune_entities(self, conn: Connection) -> None:
        conn.execute(
            delete(entities_table).where(
                ~select(links_table.c.fact_id)
                .where(links_table.c.entity_id == entities_table.c.id)
                .exists()
            )
        )

    def _validate(self, fact: NewFact) -> tuple[str, list[str], list[str]]:
        content = fact.content.strip() if isinstance(fact.content, str) else ""
        if not content:
            raise FactStoreError("invalid", "a fact needs content")
        if len(content) > MAX_CONTENT_CHARS:
            raise FactStoreError(
                "invalid",
                f"a fact is at most {MAX_CONTENT_CHARS} characters (this one has "
                f"{len(content)}); state one thing per fact",
            )
        entities = _clean_names(fact.entities, "entities", MAX_ENTITIES)
        tags = _clean_names(fact.tags, "tags", MAX_TAGS)
        _screen(content, [*entities, *tags])
        return content, entities, tags

    def _insert(
        self, conn: Connection, content: str, explicit: list[str], tags: list[str], source: str
    ) -> int | None:
        """Insert one validated fact and link its entities; None when it is already stored."""
        entities = self._entities_for(conn, content, explicit)
        found = [e for e in entities if e not in explicit]
        if found:
            _screen(found[0], found[1:])  # names taken from the content or the store
        now = time.time()
        vector, terms = _encode(content, entities, tags)
        done = conn.execute(
            _INSERT_FACT,
            {
                "vector": vector,
                "terms": terms,
                "content": content,
                "content_key": _content_key(content),
                "entities": json.dumps(entities, ensure_ascii=False),
                "tags": json.dumps(tags, ensure_ascii=False),
                "source": source,
                "trust": DEFAULT_TRUST,
                "retrieval_count": 0,
                "helpful_count": 0,
                "unhelpful_count": 0,
                "created_at": now,
                "updated_at": now,
            },
        )
        if not done.rowcount:
            return None
        fact_id = int(done.lastrowid)
        self._link(conn, fact_id, entities)
        return fact_id

    def add(self, fact: NewFact) -> tuple[Fact, bool]:
        """Store ``fact``; (the stored fact, True) or (the existing equal fact, False)."""
        content, explicit, tags = self._validate(fact)
        with self._write() as conn:
            fact_id = self._insert(conn, content, explicit, tags, fact.source)
            if fact_id is None:
                condition = facts_table.c.content_key == _content_key(content)
            else:
                condition = facts_table.c.id == fact_id
            row = conn.execute(select(facts_table).where(condition)).one()
        return _fact(row), fact_id is not None

    def add_many(self, new_facts: Iterable[NewFact], batch: int = 500) -> int:
        """Store many facts (imports, benchmarks), validated and scanned like any other, in
        transactions of ``batch`` facts; the number stored (duplicates are skipped)."""
        stored = 0
        pending: list[tuple[str, list[str], list[str], str]] = []

        def flush() -> None:
            nonlocal stored
            with self._write() as conn:
                for content, explicit, tags, source in pending:
                    stored += self._insert(conn, content, explicit, tags, source) is not None
            pending.clear()

        for fact in new_facts:
            content, entities, tags = self._validate(fact)
            pending.append((content, entities, tags, fact.source))
            if len(pending) >= batch:
                flush()
        if pending:
            flush()
        return stored

    def update(
        self,
        fact_id: int,
        *,
        content: str | None = None,
        entities: list[str] | None = None,
        tags: list[str] | None = None,
    ) -> Fact:
        current = self.get(fact_id)
        fact = NewFact(
            content=current.content if content is None else content,
            entities=current.entities if entities is None else entities,
            tags=current.tags if tags is None else tags,
        )
        new_content, explicit, new_tags = self._validate(fact)
        with self._write() as conn:
            clash = conn.execute(
                select(facts_table.c.id).where(
                    facts_table.c.content_key == _content_key(new_content),
                    facts_table.c.id != fact_id,
                )
            ).scalar()
            if clash is not None:
                raise FactStoreError(
                    "duplicate", f"fact #{clash} already says this; remove one of them instead"
                )
            names = (
                self._entities_for(conn, new_content, explicit)
                if content is not None and entities is None
                else explicit
            )
            vector, terms = _encode(new_content, names, new_tags)
            done = conn.execute(
                update(facts_table)
                .where(facts_table.c.id == fact_id)
                .values(
                    vector=vector,
                    terms=terms,
                    content=new_content,
                    content_key=_content_key(new_content),
                    entities=json.dumps(names, ensure_ascii=False),
                    tags=json.dumps(new_tags, ensure_ascii=False),
                    updated_at=max(time.time(), current.updated_at + 1e-6),
                )
            )
            if done.rowcount == 0:
                raise FactStoreError("not_found", f"there is no fact #{fact_id}")
            self._link(conn, fact_id, names)
            self._prune_entities(conn)
            row = conn.execute(select(facts_table).where(facts_table.c.id == fact_id)).one()
        return _fact(row)

    def remove(self, fact_id: int) -> Fact:
        with self._write() as conn:
            row = conn.execute(select(facts_table).where(facts_table.c.id == fact_id)).first()
            if row is None:
                raise FactStoreError("not_found", f"there is no fact #{fact_id}")
            conn.execute(delete(facts_table).where(facts_table.c.id == fact_id))
            self._prune_entities(conn)
        return _fact(row)

    def remove_where(self, *, source: str, content: str | None = None) -> int:
        """Remove facts from ``source`` (all, or only the one with ``content``)."""
        condition = facts_table.c.source == source
        if content is not None:
            condition = condition & (facts_table.c.content_key == _content_key(content))
        with self._write() as conn:
            removed = conn.execute(delete(facts_table).where(condition)).rowcount
            if removed:
                self._prune_entities(conn)
        return removed

    def feedback(self, fact_id: int, helpful: bool) -> Fact:
        """Helpful: trust + 0.05; unhelpful: trust − 0.10; clamped to [0, 1]."""
        with self._write() as conn:
            row = conn.execute(select(facts_table).where(facts_table.c.id == fact_id)).first()
            if row is None:
                raise FactStoreError("not_found", f"there is no fact #{fact_id}")
            trust = _clamp(row.trust + (HELPFUL_STEP if helpful else -UNHELPFUL_STEP))
            counter = facts_table.c.helpful_count if helpful else facts_table.c.unhelpful_count
            conn.execute(
                update(facts_table)
                .where(facts_table.c.id == fact_id)
                .values({facts_table.c.trust: trust, counter: counter + 1})
            )
            row = conn.execute(select(facts_table).where(facts_table.c.id == fact_id)).one()
        return _fact(row)

    def _note_retrieved(self, ids: Sequence[int]) -> None:
        if not ids:
            return
        with self._write() as conn:
            conn.execute(
                update(facts_table)
                .where(facts_table.c.id.in_(list(ids)))
                .values(retrieval_count=facts_table.c.retrieval_count + 1)
            )

    # -- reading ---------------------------------------------------------------------------

    def get(self, fact_id: int) -> Fact:
        with self.engine.connect() as conn:
            row = conn.execute(select(facts_table).where(facts_table.c.id == fact_id)).first()
        if row is None:
            raise FactStoreError("not_found", f"there is no fact #{fact_id}")
        return _fact(row)

    def count(self) -> int:
        with self.engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(facts_table)).scalar() or 0)

    def stats(self) -> dict[str, Any]:
        with self.engine.connect() as conn:
            facts = conn.execute(select(func.count()).select_from(facts_table)).scalar() or 0
            entities = conn.execute(select(func.count()).select_from(entities_table)).scalar()
            trust = conn.execute(select(func.avg(facts_table.c.trust))).scalar()
        return {
            "facts": int(facts),
            "entities": int(entities or 0),
            "mean_trust": round(float(trust), 3) if trust is not None else None,
            "path": str(self.path),
        }

    def list(
        self,
        *,
        tag: str | None = None,
        entity: str | None = None,
        source: str | None = None,
        min_trust: float = 0.0,
        limit: int = 20,
        offset: int = 0,
    ) -> builtins.list[Fact]:
        query = select(facts_table).where(facts_table.c.trust >= min_trust)
        if source is not None:
            query = query.where(facts_table.c.source == source)
        if entity is not None:
            query = query.where(
                facts_table.c.id.in_(
                    select(links_table.c.fact_id)
                    .join(entities_table, entities_table.c.id == links_table.c.entity_id)
                    .where(entities_table.c.key == entity_key(entity))
                )
            )
        if tag is not None:
            # Tags are few per fact; filter exactly in Python after a coarse LIKE.
            query = query.where(facts_table.c.tags.like(f"%{tag.strip()}%"))
        query = query.order_by(facts_table.c.updated_at.desc(), facts_table.c.id.desc())
        with self.engine.connect() as conn:
            rows = conn.execute(query.limit(max(1, limit) * (4 if tag else 1)).offset(offset))
            found = [_fact(r) for r in rows]
        if tag is not None:
            wanted = entity_key(tag)
            found = [f for f in found if wanted in {entity_key(t) for t in f.tags}]
        return found[:limit]

    # -- vectors ---------------------------------------------------------------------------

    def _load(
        self, conn: Connection, ids: Iterable[int], min_trust: float = 0.0
    ) -> tuple[builtins.list[Fact], np.ndarray]:
        """The facts ``ids`` (trust ≥ ``min_trust``) and their vectors, one row each."""
        wanted = list(dict.fromkeys(ids))
        facts: builtins.list[Fact] = []
        blobs: builtins.list[bytes] = []
        for start in range(0, len(wanted), 500):
            for row in conn.execute(_FACTS_BY_ID, {"ids": wanted[start : start + 500]}):
                if row.trust < min_trust:
                    continue
                fact = _fact(row)
                blob = row.vector
                if blob is None or len(blob) != hrr.PACKED_BYTES:
                    # Stored under another vector format (or not at all): derive it again.
                    blob = _encode(fact.content, fact.entities, fact.tags)[0]
                facts.append(fact)
                blobs.append(blob)
        matrix = hrr.unpack(blobs) if blobs else np.empty((0, hrr.DIM), np.complex64)
        return facts, matrix

    @staticmethod
    def _binding(matrix: np.ndarray, name: str) -> np.ndarray:
        """How strongly each fact binds entity ``name``.

        That is the similarity of the fact unbound by the entity role to the entity; since
        ``sim(unbind(f, r), e) == sim(f, bind(r, e))`` exactly, it is computed the cheap way
        round (one bound vector instead of a whole unbound matrix)."""
        return hrr.similarities(matrix, hrr.bound(hrr.ROLE_ENTITY, entity_key(name)))

    # -- candidates ------------------------------------------------------------------------

    def _rows(self, conn: Connection, ids: Iterable[int]) -> dict[int, Fact]:
        wanted = list(dict.fromkeys(ids))
        found: dict[int, Fact] = {}
        for start in range(0, len(wanted), 500):
            rows = conn.execute(_FACTS_BY_ID, {"ids": wanted[start : start + 500]})
            for row in rows:
                found[row.id] = _fact(row)
        return found

    def _fts(self, conn: Connection, match: str, limit: int) -> builtins.list[tuple[int, float]]:
        """Matches of ``match``, best BM25 rank first."""
        try:
            rows = conn.execute(_FTS_RANKED, {"q": match, "n": limit}).all()
        except Exception:  # a query FTS cannot parse finds nothing rather than failing
            return []
        return [(int(r.rowid), float(r.rank)) for r in rows]

    def _fts_newest(self, conn: Connection, match: str | None, limit: int) -> builtins.list[int]:
        """The newest ``limit`` matches of ``match``, unranked."""
        if not match:
            return []
        try:
            rows = conn.execute(_FTS_NEWEST, {"q": match, "n": limit}).all()
        except Exception:
            return []
        return [int(r.rowid) for r in rows]

    def _candidates(
        self, conn: Connection, query: str, limit: int
    ) -> builtins.list[tuple[int, float]]:
        """Full-text candidates for ``query`` with their BM25 rank, at a bounded cost.

        First the facts holding every query word (an intersection FTS5 computes cheaply, and
        the most specific answer when there is one), then any fact holding one of the rarer
        words; a query of only common words with no such intersection ranks its newest
        matches.
        """
        chosen = _fts_words(query)
        if not chosen:
            return []
        found: dict[int, float] = {}
        if len(chosen) > 1:
            found.update(self._bounded_rank(conn, " AND ".join(f'"{w}"' for w in chosen), limit))
        rare = [w for w in chosen if self._count(conn, f'"{w}"') < COMMON_DF]
        if rare:
            for fact_id, rank in self._fts(conn, _any_of(rare), limit):
                found.setdefault(fact_id, rank)
        elif not found:
            found.update(self._bounded_rank(conn, _any_of(chosen), limit))
        return sorted(found.items(), key=lambda pair: pair[1])[:limit]

    def _count(self, conn: Connection, match: str) -> int:
        """How many facts match, counted up to ``COMMON_DF``."""
        try:
            return int(conn.execute(_FTS_COUNT, {"q": match, "cap": COMMON_DF}).scalar() or 0)
        except Exception:
            return 0

    def _bounded_rank(
        self, conn: Connection, match: str, limit: int
    ) -> builtins.list[tuple[int, float]]:
        """Matches of ``match`` by BM25: all of them when they are few, else the newest
        ``RANK_BUDGET``."""
        if self._count(conn, match) < COMMON_DF:
            return self._fts(conn, match, limit)
        try:
            rows = conn.execute(_FTS_NEWEST, {"q": match, "n": RANK_BUDGET}).all()
        except Exception:
            return []
        ranked = sorted(((int(r.rowid), float(r.rank)) for r in rows), key=lambda p: p[1])
        return ranked[:limit]

    def _resolve(self, conn: Connection, name: str) -> tuple[int, str] | None:
        """The stored entity ``name`` means: exact (case and spacing aside), else the entity
        with the most facts whose name holds all of its words."""
        key = entity_key(name)
        if not key:
            return None
        row = conn.execute(_ENTITY_BY_KEY, {"key": key}).first()
        if row is not None:
            return int(row.id), str(row.name)
        condition: ColumnElement[bool] = true()
        for word in key.split():
            condition = condition & entities_table.c.key.like(f"%{word}%")
        rows = conn.execute(
            select(entities_table.c.id, entities_table.c.name, entities_table.c.key)
            .join(links_table, links_table.c.entity_id == entities_table.c.id)
            .where(condition)
            .group_by(entities_table.c.id)
            .order_by(func.count().desc())
            .limit(20)
        ).all()
        for candidate in rows:
            if set(key.split()) <= set(str(candidate.key).split()):
                return int(candidate.id), str(candidate.name)
        return None

    def _linked(self, conn: Connection, entity_id: int, limit: int) -> builtins.list[int]:
        rows = conn.execute(_LINKED, {"entity": entity_id, "limit": limit})
        return [int(r.fact_id) for r in rows]

    def _query_entities(self, conn: Connection, query: str) -> builtins.list[str]:
        grams = ngrams(words(query))
        if not grams:
            return []
        rows = conn.execute(_ENTITIES_BY_KEY, {"keys": sorted(grams)}).all()
        keys = sorted((str(r.key) for r in rows), key=len, reverse=True)
        # "alice moreau" covers "alice": keep the longest names only.
        kept: builtins.list[str] = []
        for key in keys:
            if not any(f" {key} " in f" {k} " for k in kept):
                kept.append(key)
        return kept

    # -- queries ---------------------------------------------------------------------------

    def search(
        self, query: str, *, limit: int = 5, min_trust: float = 0.1, record: bool = True
    ) -> builtins.list[ScoredFact]:
        """Facts that answer ``query``, best first.

        Two stages: every candidate (full-text matches, facts of the entities the query
        names) is scored by BM25 rank and keyword overlap from its stored keyword set; the
        best ``RERANK`` are loaded with their vectors and re-ranked with the holographic
        similarity to the query added.
        """
        wanted = keywords(query)
        with self.engine.connect() as conn:
            ranked = self._candidates(conn, query, FTS_CANDIDATES)
            named = self._query_entities(conn, query)
            linked: builtins.list[int] = []
            for key in named:
                resolved = self._resolve(conn, key)
                if resolved is not None:
                    linked += self._linked(conn, resolved[0], NAMED_CANDIDATES)
            if not (wanted or named):
                return []
            query_words = set(wanted) | {w for k in named for w in keywords(k)}
            bm25 = dict(ranked)
            best_rank = min(bm25.values(), default=0.0)
            first: builtins.list[tuple[float, int, float, float]] = []
            candidates = list(dict.fromkeys([i for i, _ in ranked] + linked))
            for start in range(0, len(candidates), 500):
                chunk = candidates[start : start + 500]
                for row in conn.execute(_TERMS_BY_ID, {"ids": chunk}):
                    if row.trust < min_trust:
                        continue
                    held = set(row.terms.split())
                    overlap = len(query_words & held) / len(query_words)
                    rank = bm25.get(row.id)
                    text_score = rank / best_rank if rank is not None and best_rank < 0 else 0.0
                    if overlap == 0.0 and text_score == 0.0:
                        continue
                    cheap = (0.35 * text_score + 0.4 * overlap) * _weight(row.trust)
                    first.append((cheap, row.id, text_score, overlap))
            first.sort(key=lambda item: (-item[0], item[1]))
            shortlist = {item[1]: item for item in first[:RERANK]}
            facts, matrix = self._load(conn, shortlist)
        if not facts:
            return []
        probe_parts = [hrr.bound(hrr.ROLE_WORD, w) for w in dict.fromkeys(wanted)]
        probe_parts += [hrr.bound(hrr.ROLE_ENTITY, k) for k in named]
        sims = hrr.similarities(matrix, hrr.bundle(probe_parts))
        top_sim = float(sims.max()) if sims.max() > 0 else 1.0
        scored = []
        for index, fact in enumerate(facts):
            _, _, text_score, overlap = shortlist[fact.id]
            vector_score = max(0.0, float(sims[index]) / top_sim)
            relevance = 0.35 * text_score + 0.4 * overlap + 0.25 * vector_score
            scored.append((relevance * _weight(fact.trust), fact))
        scored.sort(key=lambda pair: (-pair[0], pair[1].id))
        results = [ScoredFact(**f.model_dump(), score=round(s, 4)) for s, f in scored[:limit]]
        if record:
            self._note_retrieved([r.id for r in results])
        return results

    def probe(
        self, entity: str, *, limit: int = 10, min_trust: float = 0.1, record: bool = True
    ) -> ProbeResult:
        """Facts about ``entity``: those binding it first (the fewer other things a fact is
        about, the higher), then facts that only mention it."""
        with self.engine.connect() as conn:
            resolved = self._resolve(conn, entity)
            ids = self._linked(conn, resolved[0], ENTITY_CANDIDATES) if resolved else []
            name = resolved[1] if resolved else " ".join(entity.split())
            mentions = self._fts_newest(conn, _phrase(name), MENTION_CANDIDATES)
            candidates, matrix = self._load(conn, ids + mentions, min_trust)
        if not candidates:
            return ProbeResult(entity=name, known=resolved is not None, facts=[])
        binding = self._binding(matrix, name)
        name_words = words(name)
        scored = []
        for index, fact in enumerate(candidates):
            said = words(fact.content)
            mentioned = any(
                said[i : i + len(name_words)] == name_words
                for i in range(len(said) - len(name_words) + 1)
            )
            strength = float(binding[index])
            if strength < BINDS and not mentioned:
                continue
            score = (max(strength, 0.0) + (0.05 if mentioned else 0.0)) * _weight(fact.trust)
            scored.append((score, fact))
        scored.sort(key=lambda pair: (-pair[0], pair[1].id))
        results = [ScoredFact(**f.model_dump(), score=round(s, 4)) for s, f in scored[:limit]]
        if record:
            self._note_retrieved([r.id for r in results])
        return ProbeResult(entity=name, known=resolved is not None, facts=results)

    def related(
        self, entity: str, *, limit: int = 10, min_trust: float = 0.1
    ) -> builtins.list[RelatedEntity]:
        """Entities sharing facts with ``entity``, strongest association first: the sum over
        shared facts of how strongly each decodes from the fact, times the fact's trust."""
        with self.engine.connect() as conn:
            resolved = self._resolve(conn, entity)
            if resolved is None:
                return []
            ids = self._linked(conn, resolved[0], ENTITY_CANDIDATES)
            found, matrix = self._load(conn, ids, min_trust)
        own = entity_key(resolved[1])
        rows: builtins.list[int] = []
        others: builtins.list[tuple[str, str]] = []
        for index, fact in enumerate(found):
            for other in fact.entities:
                key = entity_key(other)
                if key != own:
                    rows.append(index)
                    others.append((key, other))
        if not rows:
            return []
        # One similarity per (fact, co-entity) pair, as a batch of real dot products.
        keys = np.stack([hrr.bound(hrr.ROLE_ENTITY, key) for key, _ in others])
        facts_f = matrix[rows].view(np.float32)
        strengths = np.einsum("ij,ij->i", facts_f, keys.view(np.float32)) / hrr.DIM
        totals: dict[str, float] = {}
        names: dict[str, str] = {}
        support: dict[str, list[tuple[float, int]]] = {}
        for (key, other), index, strength in zip(others, rows, strengths, strict=True):
            if strength < BINDS:
                continue
            fact = found[index]
            totals[key] = totals.get(key, 0.0) + float(strength) * _weight(fact.trust)
            names.setdefault(key, other)
            support.setdefault(key, []).append((float(strength), fact.id))
        ranked = sorted(totals, key=lambda k: (-totals[k], k))[:limit]
        return [
            RelatedEntity(
                name=names[k],
                score=round(totals[k], 4),
                facts=[i for _, i in sorted(support[k], key=lambda p: (-p[0], p[1]))][:5],
            )
            for k in ranked
        ]

    def reason(
        self, entities: Sequence[str], *, limit: int = 10, min_trust: float = 0.1
    ) -> ReasonResult:
        """Facts linking several of ``entities`` (all of them first); for pairs no fact links,
        chains through a third entity."""
        asked = list(dict.fromkeys(" ".join(e.split()) for e in entities if e.strip()))
        if len(asked) < 2:
            raise FactStoreError("invalid", "reason needs at least two entities")
        with self.engine.connect() as conn:
            resolved: builtins.list[tuple[int, str]] = []
            unknown: builtins.list[str] = []
            for name in asked:
                hit = self._resolve(conn, name)
                if hit is None:
                    unknown.append(name)
                elif hit not in resolved:
                    resolved.append(hit)
            linked = {
                entity_id: self._linked(conn, entity_id, ENTITY_CANDIDATES)
                for entity_id, _ in resolved
            }
            ids = [i for group in linked.values() for i in group]
            for name in unknown:
                ids += self._fts_newest(conn, _phrase(name), MENTION_CANDIDATES)
            candidates, matrix = self._load(conn, ids, min_trust)
        names = [n for _, n in resolved] + unknown
        by_id = {f.id: f for f in candidates}
        by_entity = {
            entity_id: [by_id[i] for i in group if i in by_id]
            for entity_id, group in linked.items()
        }
        chains = _chains(resolved, by_entity)
        if not candidates:
            return ReasonResult(entities=names, unknown=unknown, facts=[], chains=chains)
        strengths = np.stack([self._binding(matrix, n) for n in names], axis=1)
        together = hrr.similarities(
            matrix, hrr.bundle([hrr.bound(hrr.ROLE_ENTITY, entity_key(n)) for n in names])
        )
        spelled = [f" {' '.join(words(n))} " for n in names]
        scored = []
        for index, fact in enumerate(candidates):
            said = f" {' '.join(words(fact.content))} "
            covers = [
                n for j, n in enumerate(names) if strengths[index, j] >= BINDS or spelled[j] in said
            ]
            if len(covers) < 2:
                continue
            score = (len(covers) / len(names) + max(0.0, float(together[index]))) * _weight(
                fact.trust
            )
            scored.append((score, fact, covers))
        scored.sort(key=lambda item: (-item[0], item[1].id))
        results = [
            ScoredFact(**f.model_dump(), score=round(s, 4), covers=c) for s, f, c in scored[:limit]
        ]
        linked_pairs = {frozenset(entity_key(n) for n in r.covers) for r in results}
        chains = [
            c
            for c in chains
            if not any({entity_key(c.start), entity_key(c.end)} <= pair for pair in linked_pairs)
        ]
        return ReasonResult(entities=names, unknown=unknown, facts=results, chains=chains)

    def contradict(
        self,
        *,
        fact_id: int | None = None,
        content: str | None = None,
        entities: Sequence[str] = (),
        limit: int = 20,
    ) -> builtins.list[Conflict]:
        """Facts that may contradict fact ``fact_id``, or ``content`` (not stored), or — with
        neither — each other (pairs of facts that share an entity)."""
        with self.engine.connect() as conn:
            if fact_id is not None or content is not None:
                subject: Fact | None = None
                if fact_id is not None:
                    row = conn.execute(
                        select(facts_table).where(facts_table.c.id == fact_id)
                    ).first()
                    if row is None:
                        raise FactStoreError("not_found", f"there is no fact #{fact_id}")
                    subject = _fact(row)
                    statement, names = subject.content, subject.entities
                else:
                    statement = str(content)
                    names = list(entities) or self._entities_for(conn, statement, [])
                ids: builtins.list[int] = []
                for name in names:
                    hit = self._resolve(conn, name)
                    if hit is not None:
                        ids += self._linked(conn, hit[0], ENTITY_CANDIDATES)
                ids += [i for i, _ in self._candidates(conn, statement, 50)]
                others = self._rows(conn, ids)
                found = []
                for other in others.values():
                    if subject is not None and other.id == subject.id:
                        continue
                    verdict = conflict_between(statement, other.content, [*names, *other.entities])
                    if verdict is not None:
                        found.append(
                            Conflict(
                                kind=verdict[0],
                                fact=subject or other,
                                other=other if subject is not None else None,
                                detail=verdict[1],
                            )
                        )
                found.sort(key=lambda c: -(c.other or c.fact).trust)
                return found[:limit]
            return self._all_conflicts(conn, limit)

    def _all_conflicts(
        self, conn: Connection, limit: int, budget: int = 200_000
    ) -> builtins.list[Conflict]:
        groups: dict[int, list[int]] = {}
        for row in conn.execute(select(links_table.c.entity_id, links_table.c.fact_id)):
            groups.setdefault(int(row.entity_id), []).append(int(row.fact_id))
        seen: set[tuple[int, int]] = set()
        pairs: builtins.list[tuple[int, int]] = []
        for members in groups.values():
            for i, a in enumerate(members):
                for b in members[i + 1 :]:
                    pair = (min(a, b), max(a, b))
                    if pair not in seen:
                        seen.add(pair)
                        pairs.append(pair)
            if len(pairs) >= budget:  # huge stores: check the first pairs, not forever
                break
        rows = self._rows(conn, [i for pair in pairs for i in pair])
        found = []
        for a, b in pairs:
            fa, fb = rows.get(a), rows.get(b)
            if fa is None or fb is None:
                continue
            verdict = conflict_between(fa.content, fb.content, [*fa.entities, *fb.entities])
            if verdict is not None:
                found.append(Conflict(kind=verdict[0], fact=fa, other=fb, detail=verdict[1]))
                if len(found) >= limit:
                    break
        return found
