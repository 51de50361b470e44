"""Benchmark of the holographic fact store at 10^4 and 10^5 facts.

    python tests/benchmarks/holographic.py [--sizes 10000,100000] [--queries 300]

For each size: a fresh store in a temporary folder, filled with a deterministic synthetic
corpus (people, projects, tools, places and the statements a model would store about them:
roles, stacks, versions, schedules, preferences, incidents), through ``FactStore.add_many`` —
the same validation and threat scan as ``fact_store add``. Then, timed around the public calls:

* search: questions made from a random fact's words (two to four of them, sometimes with its
  entity's name), p50/p95/max, first with cold caches (a fresh ``FactStore`` and empty vector
  caches), then warm (the same queries again); plus how often the source fact is in the top 5
  (the corpus has many near-duplicates, so this is a floor, not a quality measure — quality is
  measured on the hand-labelled fixture by tests/test_holographic.py);
* probe / related / reason on random entities (warm), p50/p95/max.

The last output is a markdown table for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from engine.plugins.holographic import hrr  # noqa: E402
from engine.plugins.holographic.store import FactStore, NewFact  # noqa: E402


def _words(text: str) -> list[str]:
    return text.split()


FIRST = _words(
    "Ada Bram Chen Dana Emil Farah Gus Hana Ivan Juno Kofi Lena Mira Noah Omar Priya Quinn Rosa "
    "Sven Tara Umar Vera Wen Xavi Yara Zoe Alma Boris Clio Dev Elif Femi Greta Hugo Ines Jonas"
)
LAST = _words(
    "Moreau Okafor Wei Kowalski Sato Haddad Lindqvist Ito Petrov Reyes Mensah Vogel Castellanos "
    "Berg Nakamura Silva Novak Fischer Costa Dubois Kaya Larsen Rossi Tanaka Weber Young Zhang"
)
PROJECT_ROOTS = _words(
    "Kestrel Osprey Heron Wren Falcon Merlin Harrier Plover Swift Tern Egret Ibis Kite Lark "
    "Martin Petrel Robin Shrike Starling Thrush Curlew Dunlin Gannet Hobby Jay Knot Linnet "
    "Merganser"
)
TOOLS = _words(
    "PostgreSQL Redis Kafka Kubernetes Terraform Grafana Sentry React Swift Kotlin Python Rust Go "
    "Airflow Snowflake Figma Vault Helm Prometheus Loki Nginx Envoy Consul Nomad RabbitMQ "
    "Elasticsearch ClickHouse DuckDB SQLite MongoDB Cassandra Spark Flink dbt Django FastAPI Flask "
    "Rails Phoenix Svelte Vue Angular Tailwind Storybook Playwright Cypress Jest pytest Ansible"
)
CITIES = _words(
    "Lisbon Oslo Montreal Berlin Kyoto Nairobi Porto Madrid Vienna Prague Warsaw Dublin Austin "
    "Denver Seattle Toronto Lagos Accra Cairo Istanbul Athens Helsinki Tallinn Riga Bergen Lyon"
)
WEEKDAYS = _words("Monday Tuesday Wednesday Thursday Friday")
TOPICS = _words(
    "billing invoices payments search ranking onboarding notifications reporting analytics "
    "exports imports checkout pricing inventory shipping refunds auditing logging tracing "
    "caching scheduling messaging uploads thumbnails permissions accounts sessions webhooks"
)
ROLES = [
    "backend engineer",
    "frontend engineer",
    "data engineer",
    "designer",
    "product manager",
    "site reliability engineer",
    "security engineer",
    "technical writer",
    "engineering manager",
    "mobile developer",
]


class Corpus:
    def __init__(self, seed: int = 7) -> None:
        self.rng = random.Random(seed)
        self.people = [f"{f} {last}" for f in FIRST for last in LAST]
        self.projects = [
            f"{root} {n}" if n else root for n in ("", "II", "Labs") for root in PROJECT_ROOTS
        ]

    def facts(self, count: int) -> Iterator[NewFact]:
        rng = self.rng
        seen: set[str] = set()
        templates: list[Callable[[], NewFact]] = [
            lambda: self._fact(
                "{p} works as a {r} on {j}.",
                ["p", "j"],
                p=self._person(),
                r=rng.choice(ROLES),
                j=self._project(),
            ),
            lambda: self._fact(
                "{j} stores its {t} data in {x} {v}.",
                ["j", "x"],
                j=self._project(),
                t=rng.choice(TOPICS),
                x=rng.choice(TOOLS),
                v=rng.randint(2, 17),
            ),
            lambda: self._fact(
                "{p} lives in {c} and prefers {x} for {t}.",
                ["p", "c", "x"],
                p=self._person(),
                c=rng.choice(CITIES),
                x=rng.choice(TOOLS),
                t=rng.choice(TOPICS),
            ),
            lambda: self._fact(
                "{j} deploys {t} changes on {d} after review by {p}.",
                ["j", "p"],
                j=self._project(),
                t=rng.choice(TOPICS),
                d=rng.choice(WEEKDAYS),
                p=self._person(),
            ),
            lambda: self._fact(
                "In {d} week {n} the {t} service of {j} failed because {x} ran out of memory.",
                ["j", "x"],
                d=rng.choice(WEEKDAYS),
                n=rng.randint(1, 52),
                t=rng.choice(TOPICS),
                j=self._project(),
                x=rng.choice(TOOLS),
            ),
            lambda: self._fact(
                "{p} mentors {q} on {t} for the {j} team.",
                ["p", "q", "j"],
                p=self._person(),
                q=self._person(),
                t=rng.choice(TOPICS),
                j=self._project(),
            ),
            lambda: self._fact(
                "The {t} pipeline of {j} runs every {n} minutes on {x}.",
                ["j", "x"],
                t=rng.choice(TOPICS),
                j=self._project(),
                n=rng.choice((5, 10, 15, 30, 60)),
                x=rng.choice(TOOLS),
            ),
        ]
        while len(seen) < count:
            fact = rng.choice(templates)()
            if fact.content not in seen:
                seen.add(fact.content)
                yield fact

    def _person(self) -> str:
        # A few people appear in many facts, most in a handful: like a real team's history.
        return (
            self.people[min(int(self.rng.paretovariate(1.2)) - 1, len(self.people) - 1)]
            if (self.rng.random() < 0.3)
            else self.rng.choice(self.people)
        )

    def _project(self) -> str:
        return self.rng.choice(self.projects)

    @staticmethod
    def _fact(template: str, entity_slots: list[str], **values: object) -> NewFact:
        content = template.format(**values)
        entities = [str(values[slot]) for slot in entity_slots]
        return NewFact(content=content, entities=entities, tags=[template.split()[1].lower()])


def summary(times: list[float]) -> tuple[float, float, float]:
    p95 = statistics.quantiles(times, n=100, method="inclusive")[94]
    return statistics.median(times), p95, max(times)


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    start = time.perf_counter_ns()
    result = fn()
    return (time.perf_counter_ns() - start) / 1e6, result


def queries_from(store: FactStore, rng: random.Random, count: int) -> list[tuple[str, int]]:
    with store.engine.connect() as conn:
        total = store.count()
        picked = rng.sample(range(1, total + 1), min(count, total))
    queries = []
    for fact_id in picked:
        fact = store.get(fact_id)
        words = [w.strip(".,") for w in fact.content.split() if len(w) > 3]
        chosen = rng.sample(words, min(len(words), rng.randint(2, 4)))
        if rng.random() < 0.5 and fact.entities:
            chosen.append(fact.entities[0])
        queries.append((" ".join(chosen), fact_id))
    del conn
    return queries


def run(
    size: int, query_count: int, keep: bool
) -> list[tuple[str, str, tuple[float, float, float], str]]:
    root = Path(tempfile.mkdtemp(prefix=f"cairn-holo-{size}-"))
    path = root / "memory_store.db"
    rows: list[tuple[str, str, tuple[float, float, float], str]] = []
    try:
        store = FactStore(path)
        corpus = Corpus()
        start = time.perf_counter()
        stored = store.add_many(corpus.facts(size), batch=1000)
        build = time.perf_counter() - start
        stats = store.stats()
        on_disk = sum(p.stat().st_size for p in root.iterdir()) / 1e6
        print(
            f"{size:,} facts: built in {build:.1f} s ({stored / build:,.0f} facts/s), "
            f"{stats['entities']:,} entities, {on_disk:.1f} MB on disk",
            flush=True,
        )
        rng = random.Random(size)
        queries = queries_from(store, rng, query_count)
        store.close()

        # Cold: a new store object (empty vector cache) and empty symbol caches.
        hrr.symbol.cache_clear()
        hrr.bound.cache_clear()
        store = FactStore(path)
        cold, warm, found = [], [], 0
        for query, _ in queries:
            cold.append(timed(lambda q=query: store.search(q, limit=5))[0])
        for query, source in queries:
            took, results = timed(lambda q=query: store.search(q, limit=5))
            warm.append(took)
            found += any(r.id == source for r in results)  # type: ignore[attr-defined]
        rows.append((f"{size:,}", "search, cold", summary(cold), ""))
        rows.append(
            (f"{size:,}", "search, warm", summary(warm), f"source in top 5: {found}/{len(queries)}")
        )

        with store.engine.connect() as conn:
            from sqlalchemy import text

            names = [
                r[0]
                for r in conn.execute(
                    text("SELECT name FROM entities ORDER BY random() LIMIT :n"), {"n": 200}
                )
            ]
        for label, call in (
            ("probe", lambda n: store.probe(n, limit=10)),
            ("related", lambda n: store.related(n, limit=10)),
            ("reason (2 entities)", None),
        ):
            times = []
            for i, name in enumerate(names[:100]):
                if call is None:
                    other = names[100 + i]
                    times.append(timed(lambda a=name, b=other: store.reason([a, b]))[0])
                else:
                    times.append(timed(lambda n=name, c=call: c(n))[0])
            rows.append((f"{size:,}", label, summary(times), ""))
        store.close()
    finally:
        if keep:
            print(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--keep", action="store_true", help="keep the databases")
    args = parser.parse_args()
    print(
        f"{platform.python_version()} on {platform.machine()}, {os.cpu_count()} cores, "
        f"load {os.getloadavg()[0]:.2f}",
        flush=True,
    )
    rows = []
    for size in (int(s) for s in args.sizes.split(",")):
        rows += run(size, args.queries, args.keep)
    print()
    print("| facts   | call                | p50 ms | p95 ms | max ms | note |")
    print("|---------|---------------------|-------:|-------:|-------:|------|")
    for size, call, (p50, p95, top), note in rows:
        print(f"| {size:<7} | {call:<19} | {p50:6.2f} | {p95:6.2f} | {top:6.1f} | {note} |")
    print(f"\nload average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
