"""Journey data for tests, benchmarks and screenshots.

* :func:`write_history` drives a real home through the memory service (sessions, adds,
  refinements, consolidation, approvals, rejections, hand edits), then spreads the recorded
  times over a few weeks so a picture of it looks like weeks of use, not one second.
* :func:`write_layers` adds skills (through the skill manager: created, patched, a file
  written, one deleted) and provider facts (through the fact store: added, updated, removed)
  to such a home, with times inside its sessions.
* :func:`synthetic_events` makes a long event stream of a bounded memory in memory only, for
  timeline benchmarks at 10,000 events.
* :func:`big_journey` makes a journey of any number of chunks directly, for graph benchmarks.
"""

from __future__ import annotations

import contextlib
import json
import random
import time
from collections.abc import Iterator

from sqlalchemy import select
from sqlalchemy import text as sql

from engine.config import Config, MemoryConfig
from engine.home import Home
from engine.journey import (
    Chunk,
    ChunkVersion,
    DiskSkill,
    FactRow,
    HomeLayers,
    Item,
    Journey,
    SessionNode,
    term_edges,
)
from engine.memory.entries import Target, render
from engine.memory.errors import MemoryToolError
from engine.memory.history import MemoryEvent
from engine.memory.service import MemoryService
from engine.sessions.store import SessionStore, sessions_t
from engine.skills.manage import SkillChange

MEMORY_FACTS = [
    "Deploys go through the GitHub Actions pipeline; never push to main directly",
    "Staging database is PostgreSQL 16 on db3.internal (port 5433)",
    "Production runs on Kubernetes 1.29, namespace cairn-prod",
    "Tests run with pytest -q; the Qt tests need QT_QPA_PLATFORM=offscreen",
    "The monorepo uses uv for Python and pnpm for the web client",
    "Backups of db3.internal run nightly at 02:00 UTC via restic",
    "The API gateway is Envoy; its config lives in infra/envoy/",
    "Feature flags come from Unleash; flag names are kebab-case",
    "Logs go to Loki; dashboards are in Grafana under 'Cairn'",
    "The web client is SvelteKit with Tailwind; no CSS-in-JS",
    "Migrations are Alembic; never edit a migration that was released",
    "The Rust image service builds with cargo 1.78 and needs libvips",
    "On-call rotation is in PagerDuty, team 'platform'",
    "Redis 7 is the cache; keys expire after 24 h unless pinned",
    "Docs are MkDocs Material, published from docs/ on every tag",
    "The CI cache key includes uv.lock; bump it when Python changes",
    "Sentry DSN is read from SENTRY_DSN, never from config files",
    "The repo's pre-commit runs ruff, mypy and prettier",
    "Release tags look like v2.14.3; the changelog is generated from PR titles",
    "Large files go to Git LFS (models/, assets/video/)",
    "The ML service pins torch 2.3 with CUDA 12.1 on the gpu-a10 nodes",
    "Terraform state is in S3 bucket cairn-tfstate, locked with DynamoDB",
    "The VPN must be on to reach db3.internal and the Grafana instance",
    "Use the Makefile targets (make dev, make test) rather than raw commands",
    "The search index is Meilisearch 1.7; reindex with make reindex",
    "Error budgets: API p99 under 300 ms, checked weekly in Grafana",
    "Code review needs one approval from platform for infra/ changes",
    "Local dev uses docker compose with the postgres and redis services",
    "The mobile app is Flutter 3.22; release builds are signed in CI",
    "Secrets live in 1Password vault 'Engineering', never in the repo",
]
USER_FACTS = [
    "Name: Ada; works in UTC+1 and prefers meetings after 10:00",
    "Prefers concise answers with the command first, explanation after",
    "Writes commit messages in English, short, stating why",
    "Uses Neovim with LazyVim; terminal is WezTerm",
    "Prefers tabs over spaces in Go, spaces elsewhere",
    "Team lead for platform; reviews infra/ changes",
    "Dislikes emojis in code comments and commit messages",
    "Is learning Rust; likes worked examples over theory",
    "Runs Fedora 40 on a ThinkPad; also has a MacBook for iOS builds",
    "Wants risky commands explained before they run",
]
# Each fact's later versions, in order: what a refinement turns it into.
REFINEMENTS = {
    "Staging database is PostgreSQL 16 on db3.internal (port 5433)": [
        "Staging database is PostgreSQL 16 on db3.internal (port 5433), read replica db4",
        "Staging database is PostgreSQL 16.3 on db3.internal:5433; read replica on db4.internal",
    ],
    "Production runs on Kubernetes 1.29, namespace cairn-prod": [
        "Production runs on Kubernetes 1.30, namespace cairn-prod",
        "Production runs on Kubernetes 1.30 (EKS), namespace cairn-prod, 3 node groups",
    ],
    "Tests run with pytest -q; the Qt tests need QT_QPA_PLATFORM=offscreen": [
        "Tests run with pytest -q -x; Qt tests need QT_QPA_PLATFORM=offscreen and pytest-qt",
    ],
    "Deploys go through the GitHub Actions pipeline; never push to main directly": [
        "Deploys go through GitHub Actions (deploy.yml); main is protected, merge via PR only",
    ],
    "The monorepo uses uv for Python and pnpm for the web client": [
        "The monorepo uses uv 0.4 for Python and pnpm 9 for the web client",
    ],
    "Redis 7 is the cache; keys expire after 24 h unless pinned": [
        "Redis 7.2 is the cache; keys expire after 12 h unless pinned (changed for the misses)",
    ],
    "The search index is Meilisearch 1.7; reindex with make reindex": [
        "The search index is Meilisearch 1.8; reindex with make reindex (takes ~4 min)",
    ],
    "Release tags look like v2.14.3; the changelog is generated from PR titles": [
        "Release tags look like v2.14.3; changelog from PR titles, so titles must be imperative",
    ],
    "Local dev uses docker compose with the postgres and redis services": [
        "Local dev uses docker compose (postgres, redis, meilisearch); make dev starts it",
    ],
    "Name: Ada; works in UTC+1 and prefers meetings after 10:00": [
        "Name: Ada Lovelace; works in UTC+1, meetings after 10:00, no meetings on Fridays",
    ],
    "Uses Neovim with LazyVim; terminal is WezTerm": [
        "Uses Neovim with LazyVim; terminal is Ghostty since June",
    ],
    "Is learning Rust; likes worked examples over theory": [
        "Is learning Rust (on chapter 10 of the book); likes worked examples over theory",
    ],
    "Prefers concise answers with the command first, explanation after": [
        "Prefers concise answers: the command first, a one-line why after, no preamble",
    ],
}
# Notes a background review might propose; the user approves some and rejects others.
CANDIDATES = [
    "The flaky deploy job was a race in the cache restore step",
    "User seems to prefer dark themes in screenshots",
    "Grafana alert 'api-p99' pages the platform rotation",
    "The staging VPN profile is called cairn-staging.ovpn",
    "User asked twice about Rust lifetimes; explain with diagrams",
    "Restic repository password is in 1Password, item 'restic-prod'",
    "Envoy retries are capped at 2 for POST requests",
    "The nightly backup took 41 minutes on Tuesday",
    "User is on holiday the first week of August",
    "Kubernetes upgrade window is Sunday 06:00 UTC",
]
# Written into the files by hand, outside Cairn.
HAND_NOTES = [
    "TODO for me: ask about the Envoy timeout defaults",
    "Ada's laptop hostname is tp-ada (ssh via tailscale)",
    "Pinned: use --no-verify only for the docs repo",
    "Team offsite is in Lisbon, 14-16 October",
]
SESSION_TITLES = [
    "Fix the flaky deploy job",
    "Set up the staging database",
    "Review the Envoy config",
    "Migrate CI to uv",
    "Debug the Redis cache misses",
    "Plan the Kubernetes upgrade",
    "Write the backup runbook",
    "Triage Sentry errors",
    "Tune the search index",
    "Release v2.14",
    "Onboarding notes",
    "Grafana dashboards for p99",
    "Terraform state cleanup",
    "Flutter release signing",
    "Rust image service build",
    "Pair on the migration",
    "Secrets audit",
    "Feature flag naming",
    "Docs site refresh",
    "Weekly planning",
]


def write_history(home: Home, *, seed: int = 7, days: float = 42.0) -> MemoryService:
    """A realistic memory and history in ``home``: ~40 chunks, a few hundred events."""
    rng = random.Random(seed)
    service = MemoryService(home, Config(memory=MemoryConfig(memory_char_limit=4_000)))
    store = SessionStore.open(home)
    sessions = []
    for n, title in enumerate(SESSION_TITLES):
        sid = f"{n:02d}{rng.getrandbits(40):010x}"
        store.create_session(session_id=sid, title=title, source="gui")
        sessions.append(sid)
    pools = {Target.MEMORY: list(MEMORY_FACTS), Target.USER: list(USER_FACTS)}
    rng.shuffle(pools[Target.MEMORY])
    rng.shuffle(pools[Target.USER])
    spare = {t: list(p) for t, p in pools.items()}

    base_of = {v: base for base, versions in REFINEMENTS.items() for v in versions}

    def give_back(target: Target, entry: str) -> None:
        # A fact that was removed may be learned again later, as happens.
        fact = base_of.get(entry, entry)
        if fact in MEMORY_FACTS or fact in USER_FACTS:
            spare[target].append(fact)

    def write(target: Target, ops: list[dict[str, str]]) -> None:
        with contextlib.suppress(MemoryToolError):
            service.write(target, ops)

    candidates = list(CANDIDATES)
    hand_notes = list(HAND_NOTES)
    for round_ in range(300):
        service.session_id = sessions[min(len(sessions) - 1, round_ * len(sessions) // 300)]
        target = Target.USER if rng.random() < 0.25 else Target.MEMORY
        entries = service.read(target).entries
        refinable = [(e, REFINEMENTS[e][0]) for e in entries if REFINEMENTS.get(e)]
        refinable += [
            (e, versions[versions.index(e) + 1])
            for versions in REFINEMENTS.values()
            for e in entries
            if e in versions[:-1]
        ]
        roll = rng.random()
        if spare[target] and (roll < 0.4 or len(entries) < 4):
            write(target, [{"action": "add", "content": spare[target].pop(0)}])
        elif roll < 0.55 and refinable:
            old, new = rng.choice(refinable)
            write(target, [{"action": "replace", "old_text": old, "content": new}])
        elif roll < 0.62 and len(entries) > (18 if target is Target.MEMORY else 7):
            gone = rng.choice(entries)
            write(target, [{"action": "remove", "old_text": gone}])
            give_back(target, gone)
        elif roll < 0.76 and candidates:
            service.set_approval(True)
            note = candidates.pop(0)
            staged = service.write(Target.MEMORY, [{"action": "add", "content": note}])
            if rng.random() < 0.5:
                service.approve(staged["pending_id"])
            else:
                service.reject(staged["pending_id"])
            service.set_approval(False)
        elif roll < 0.8 and len(entries) > 5:
            # The user edits the file in an editor: drops one entry, adds a note of their own.
            edited = list(entries)
            give_back(target, edited.pop(rng.randrange(len(edited))))
            if hand_notes:
                edited.insert(rng.randrange(len(edited) + 1), hand_notes.pop(0))
            path = home.memories_dir / target.filename
            path.write_text(render(edited) + "\n", encoding="utf-8")
            service.rescan()
        elif roll < 0.84:
            with contextlib.suppress(MemoryToolError):
                service.undo()
        elif entries and len(entries) > 5:
            gone = rng.choice(entries)
            ops = [{"action": "remove", "old_text": gone}]
            give_back(target, gone)
            if spare[target]:
                ops.append({"action": "add", "content": spare[target].pop(0)})
            write(target, ops)
    service.session_id = None
    spread_times(home, service, days, rng)
    return service


SKILLS = [
    (
        "deploy-staging",
        "Deploy a branch to staging and check that it came up",
        "1. Merge the PR into the staging branch.\n2. Watch the deploy job in GitHub Actions.\n"
        "3. Check the health page and the Grafana 'Cairn' dashboard.",
    ),
    (
        "restore-backup",
        "Restore db3.internal from the nightly restic backup",
        "1. Find the snapshot with restic snapshots.\n2. Restore it into a scratch database.\n"
        "3. Compare row counts before switching over.",
    ),
    (
        "review-envoy-config",
        "Review a change to the Envoy gateway config",
        "Check timeouts, retries (at most 2 for POST) and the route order in infra/envoy/.",
    ),
    (
        "debug-cache-misses",
        "Find why Redis cache hit rates dropped",
        "Compare key expiry with the traffic pattern; look at the Grafana cache panel first.",
    ),
    (
        "release-checklist",
        "Cut a release: tag, changelog, announcement",
        "1. Check that every PR title is imperative.\n2. Tag vX.Y.Z.\n3. Post the changelog.",
    ),
    (
        "sign-flutter-release",
        "Sign the Flutter release builds in CI",
        "The signing keys come from the CI secrets; never copy them to a laptop.",
    ),
    (
        "tune-search-index",
        "Tune Meilisearch ranking rules and reindex",
        "Change the ranking rules in search/settings.json, then run make reindex.",
    ),
]
SKILL_PATCHES = {
    "deploy-staging": ("Watch the deploy job", "Watch the deploy job (deploy.yml)"),
    "restore-backup": ("scratch database", "scratch database on db4.internal"),
    "release-checklist": ("Post the changelog.", "Post the changelog in #releases."),
}
FACTS = [
    ("Ada owns the staging database on db3.internal", ["Ada", "db3.internal"]),
    ("db3.internal runs PostgreSQL 16.3 with a read replica on db4.internal", ["db3.internal"]),
    ("Restic backups of db3.internal go to the bucket cairn-backups", ["restic", "db3.internal"]),
    ("Envoy retries POST requests at most twice", ["Envoy"]),
    ("The Envoy route for /api has a 30 s timeout", ["Envoy"]),
    ("Grafana alert api-p99 pages the platform rotation", ["Grafana", "platform"]),
    ("The platform team is Ada, Lin and Tomás", ["platform", "Ada", "Lin", "Tomás"]),
    ("Kestrel is the codename of the image service", ["Kestrel"]),
    ("Kestrel is written in Rust and needs libvips", ["Kestrel", "Rust"]),
    ("Lin maintains Kestrel's build in CI", ["Lin", "Kestrel"]),
    ("Meilisearch reindexing takes about four minutes", ["Meilisearch"]),
    ("Loki keeps logs for 30 days", ["Loki"]),
    ("The Unleash flag deploy-v2 gates the new pipeline", ["Unleash", "deploy-v2"]),
    ("Tomás handles the Flutter release signing", ["Tomás", "Flutter"]),
    ("The Flutter app's bundle id is dev.cairn.mobile", ["Flutter"]),
    ("Redis keys for sessions are prefixed sess:", ["Redis"]),
    ("Redis memory limit is 8 GB on the cache nodes", ["Redis"]),
    ("Sentry project for the API is cairn-api", ["Sentry"]),
    ("The EKS cluster has three node groups", ["EKS"]),
    ("gpu-a10 nodes run the ML service", ["gpu-a10"]),
    ("Terraform state lives in the bucket cairn-tfstate", ["Terraform"]),
    ("The VPN profile for staging is cairn-staging", ["VPN"]),
    ("Ada prefers release notes as bullet lists", ["Ada"]),
    ("Lin is on call in even weeks", ["Lin", "platform"]),
    ("The docs site publishes from the docs/ folder on every tag", ["docs"]),
    ("PagerDuty team 'platform' owns the api-p99 alert", ["PagerDuty", "platform"]),
]
FACT_UPDATES = {
    "Loki keeps logs for 30 days": "Loki keeps logs for 14 days since the storage change",
    "Redis memory limit is 8 GB on the cache nodes": "Redis memory limit is 12 GB",
    "The EKS cluster has three node groups": "The EKS cluster has four node groups (one GPU)",
}
FACT_REMOVALS = ["The VPN profile for staging is cairn-staging"]


def write_layers(home: Home, *, seed: int = 11) -> None:
    """Skills and provider facts in ``home`` (made by :func:`write_history` first), written
    through the skill manager and the fact store, then moved to times inside its sessions."""
    from engine.plugins.holographic.store import FactStore, NewFact
    from engine.skills.manage import HISTORY_FILE, SkillManager

    rng = random.Random(seed)
    store = SessionStore.open(home)
    with store.engine.connect() as conn:
        rows = conn.execute(
            select(sessions_t.c.id, sessions_t.c.started_at).order_by(sessions_t.c.started_at)
        ).all()
    sessions = [(row.id, float(row.started_at)) for row in rows]
    # Skills: made in the first two thirds of the sessions, patched and extended later.
    stamps: list[float] = []
    plan: list[tuple[int, dict[str, str]]] = []
    for n, (name, description, body) in enumerate(SKILLS):
        made = n * len(sessions) * 2 // (3 * len(SKILLS))
        plan.append(
            (made, {"action": "create", "name": name, "description": description, "body": body})
        )
        if name in SKILL_PATCHES:
            find, replace = SKILL_PATCHES[name]
            later = min(len(sessions) - 1, made + rng.randrange(2, 6))
            plan.append(
                (later, {"action": "patch", "name": name, "find": find, "replace": replace})
            )
    plan.append(
        (
            len(sessions) - 3,
            {
                "action": "write_file",
                "name": "restore-backup",
                "file": "references/checks.md",
                "content": "Row counts to compare: users, sessions, events.\n",
            },
        )
    )
    plan.append((len(sessions) - 2, {"action": "delete", "name": "sign-flutter-release"}))
    plan.sort(key=lambda step: step[0])
    for index, request in plan:
        sid, started = sessions[index]
        SkillManager(home, author="agent", session_id=sid).run(request)
        stamps.append(started + rng.uniform(300, 3_000))
    log = home.skills_dir / HISTORY_FILE
    records = [json.loads(line) for line in log.read_text("utf-8").splitlines()]
    for record, stamp in zip(records, sorted(stamps), strict=True):
        record["at"] = stamp
    log.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    # Facts: added through the weeks, a few updated or removed later.
    facts = FactStore(home.memory_store_db)
    times: dict[int, tuple[float, float]] = {}
    for n, (content, entities) in enumerate(FACTS):
        _sid, started = sessions[min(len(sessions) - 1, n * len(sessions) // len(FACTS))]
        fact, _new = facts.add(NewFact(content=content, entities=entities))
        created = started + rng.uniform(600, 4_000)
        times[fact.id] = (created, created)
        if content in FACT_UPDATES:
            facts.update(fact.id, content=FACT_UPDATES[content])
            times[fact.id] = (created, created + rng.uniform(3, 9) * 86_400)
        if content in FACT_REMOVALS:
            facts.remove(fact.id)
    with facts.engine.begin() as conn:
        for fact_id, (created, updated) in times.items():
            conn.execute(
                sql("UPDATE facts SET created_at = :c, updated_at = :u WHERE id = :id"),
                {"c": created, "u": min(updated, time.time() - 60), "id": fact_id},
            )
    facts.close()


def spread_times(home: Home, service: MemoryService, days: float, rng: random.Random) -> None:
    """Move the recorded times back over ``days`` days in bursts (sessions), keeping order."""
    assert service.history is not None
    events = service.history.events(newest_first=False)
    start = time.time() - days * 86_400
    moment = start
    stamps: dict[int, float] = {}
    first_seen: dict[str, float] = {}
    last_session = None
    for event in events:
        if event.session_id != last_session:
            moment += rng.uniform(0.3, 2.0) * 86_400 * days / 60  # a pause between sessions
            last_session = event.session_id
        moment += rng.uniform(20, 600)
        stamps[event.id] = moment
        if event.session_id:
            first_seen.setdefault(event.session_id, moment - rng.uniform(60, 900))
    # The pauses add up to more than ``days`` when sessions alternate often: squeeze the
    # times into the span, ending a day ago, so nothing is recorded in the future.
    span = days * 86_400 - 86_400
    if moment - start > span:
        factor = span / (moment - start)
        stamps = {k: start + (v - start) * factor for k, v in stamps.items()}
        first_seen = {k: start + (v - start) * factor for k, v in first_seen.items()}
    engine = service.history._engine
    with engine.begin() as conn:
        for event_id, stamp in stamps.items():
            conn.execute(
                sql("UPDATE memory_events SET at = :at WHERE id = :id"),
                {"at": stamp, "id": event_id},
            )
    store = SessionStore.open(home)
    with store.engine.begin() as conn:
        for sid, stamp in first_seen.items():
            conn.execute(
                sql("UPDATE sessions SET started_at = :at WHERE id = :id"), {"at": stamp, "id": sid}
            )


def _text(rng: random.Random, n: int) -> str:
    base = rng.choice(MEMORY_FACTS + USER_FACTS)
    return f"{base} [{n}]"


def synthetic_events(count: int, *, seed: int = 3, capacity: int = 30) -> list[MemoryEvent]:
    """``count`` events of a bounded memory (about ``capacity`` entries per file), with
    sessions, replaces, removes, staged and rejected writes and hand edits."""
    rng = random.Random(seed)
    files: dict[Target, list[str]] = {Target.MEMORY: [], Target.USER: []}
    events: list[MemoryEvent] = []
    at = time.time() - 90 * 86_400
    serial = 0
    session = None
    for event_id in range(1, count + 1):
        if rng.random() < 0.08 or session is None:
            session = f"s{rng.getrandbits(48):012x}"
        at += rng.uniform(5, 3_000)
        target = Target.USER if rng.random() < 0.25 else Target.MEMORY
        before = list(files[target])
        roll = rng.random()
        action, entry_before, entry_after = "add", None, None
        after = list(before)
        if roll < 0.05:
            action = rng.choice(["staged", "rejected"])
            after = None  # type: ignore[assignment]
        elif (roll < 0.45 or len(before) < 5) and len(before) < capacity:
            serial += 1
            entry_after = _text(rng, serial)
            after.append(entry_after)
        elif roll < 0.75 and before:
            action = "replace"
            i = rng.randrange(len(before))
            entry_before = before[i]
            serial += 1
            entry_after = entry_before.rsplit(" [", 1)[0] + f" [{serial}]"
            after[i] = entry_after
        elif roll < 0.92 and before:
            action = "remove"
            i = rng.randrange(len(before))
            entry_before = after.pop(i)
        else:
            action = "external_edit"
            rng.shuffle(after)
            if after:
                after.pop()
            serial += 1
            after.append(_text(rng, serial))
        if after is not None:
            files[target] = after
        events.append(
            MemoryEvent(
                id=event_id,
                at=at,
                target=target.value,
                action=action,
                entry_before=entry_before,
                entry_after=entry_after,
                state_before=render(before) if after is not None else None,
                state_after=render(after) if after is not None else None,
                origin="external" if action == "external_edit" else "foreground",
                session_id=None if action == "external_edit" else session,
                pending_id=None,
                detail={"summary": f"{action} #{event_id}"} if after is None else {},
            )
        )
    return events


def big_journey(
    nodes: int, *, seed: int = 5, alive_share: float = 1.0, layers: bool = False
) -> Journey:
    """A journey with about ``nodes`` nodes (chunks plus one session per 20 chunks). With
    ``layers``, a quarter of the chunks are provider facts instead and one in fifty a skill."""
    rng = random.Random(seed)
    chunk_count = max(1, round(nodes * 20 / 21))
    session_count = max(1, nodes - chunk_count)
    sessions = [
        SessionNode(id=f"s{n:06d}", title=rng.choice(SESSION_TITLES), started_at=1.7e9 + n * 900)
        for n in range(session_count)
    ]
    chunks: list[Chunk] = []
    items: list[Item] = []
    for n in range(chunk_count):
        session = sessions[min(n * session_count // chunk_count, session_count - 1)]
        learned = (session.started_at or 0) + rng.uniform(10, 800)
        alive = rng.random() < alive_share
        target = Target.USER if rng.random() < 0.25 else Target.MEMORY
        text = _text(rng, n)
        version = ChunkVersion(position=0, event_id=None, at=learned, action="add", text=text)
        # No events: everything is "now" (position 0); removed chunks are never shown in
        # full, only faded with the history.
        common = {
            "versions": [version],
            "born": 0,
            "died": None if alive else 0,
            "learned_at": learned,
            "changed_at": learned,
        }
        roll = rng.random() if layers else 1.0
        if roll < 0.02:
            name = f"skill-{n}"
            items.append(
                Item(
                    key=f"k{n}",
                    layer="skill",
                    subject=name,
                    title=text,
                    session_id=session.id,
                    session_ids=[session.id],
                    node_id=f"skill:{name}" if alive else None,
                    **common,
                )
            )
        elif roll < 0.27:
            items.append(
                Item(
                    key=f"f{n}",
                    layer="fact",
                    subject=str(n),
                    entities=[rng.choice(["Ada", "Kestrel", "db3.internal", "Envoy", "Redis"])],
                    node_id=f"fact:{n}" if alive else None,
                    **common,
                )
            )
        else:
            chunks.append(
                Chunk(
                    key=f"c{n}",
                    target=target,
                    session_id=session.id,
                    session_ids=[session.id],
                    **common,
                )
            )
    nodes_ = [*chunks, *items]
    edges = [
        {"source": c.key, "target": c.session_id, "kind": "session"} for c in nodes_ if c.session_id
    ]
    journey = Journey(
        chunks=chunks,
        items=items,
        sessions=sessions,
        edges=[*edges, *[e.model_dump() for e in term_edges(nodes_)]],
        events=[],
    )
    return journey


class StaticFacts(HomeLayers):
    """Provider facts without a home, for benchmarks: every load sees the same facts."""

    def __init__(self, facts: dict[int, FactRow]) -> None:
        super().__init__(None)
        self.facts = facts

    @contextlib.contextmanager
    def skills_lock(self) -> Iterator[None]:
        yield

    def skill_records(self, offset: int, inode: int | None) -> tuple[list[SkillChange], int, int]:
        return [], 0, 0

    def skills_now(self) -> dict[str, DiskSkill]:
        return {}

    def facts_now(self) -> dict[int, FactRow]:
        return self.facts


def synthetic_facts(events: list[MemoryEvent], count: int, *, seed: int = 9) -> StaticFacts:
    """``count`` facts added at random moments of ``events``' span, one in ten updated."""
    rng = random.Random(seed)
    start, end = events[0].at, events[-1].at
    facts = {}
    for n in range(1, count + 1):
        created = rng.uniform(start, end)
        updated = rng.uniform(created, end) if rng.random() < 0.1 else created
        facts[n] = FactRow(
            id=n,
            content=f"{_text(rng, n)} (fact)",
            entities=[rng.choice(["Ada", "Kestrel", "db3.internal", "Envoy", "Redis"])],
            created_at=created,
            updated_at=updated,
        )
    return StaticFacts(facts)
