"""Benchmark of session_search on a synthetic history of 10^4 to 10^6 messages.

    python tests/benchmarks/session_search.py [--sizes 10000,100000,1000000] [--profile]

For each size: a fresh home in a temporary folder, the deterministic corpus of
``session_corpus.py`` written to a JSONL file and imported through the real import path
(``engine.sessions.transfer.import_sessions``), then

* build: import time, messages per second, database and WAL size;
* discover: p50/p95/max over ~260 queries (rare and common words, phrases, mixed, loose
  multi-word queries, identifiers/paths/URLs/versions, CJK substrings, filters and
  ``order=newest``, planted needles), each timed around the public ``session_search`` call,
  run ``--passes`` times (3): each query's median over the passes, and the first pass alone
  (which also pays for reading index pages the import left on disk);
* scroll: p50/p95/max over 250 calls on random sessions around random anchors, wall and CPU;
* needles: how many planted messages come back in the top 3 for their query (the newest copy
  first for ``order=newest``), split into needles with a rare token and needles made only of
  common parts.

Goals at 10^6 messages on a 2-core machine: discover p95 <= 10 ms, scroll p95 <= 0.5 ms.
``--profile`` then re-runs the queries instrumented and prints where the time goes: the walks
through the indexes, ranking, confirming long phrases, each form of the query
(phrase/all/any/substring), snippets and the result cards, and the steps of the slowest
queries. The last output is a markdown table for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import functools
import inspect
import os
import platform
import random
import re
import resource
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
for entry in (ROOT, HERE):
    if str(entry) not in sys.path:
        sys.path.insert(0, str(entry))

from session_corpus import CJK_WORDS, NEEDLES, Corpus, Needle  # noqa: E402

from engine.config import Config  # noqa: E402
from engine.db import database_path, dispose_engines  # noqa: E402
from engine.home import Home  # noqa: E402
from engine.sessions import fts_sqlite, maintenance, search  # noqa: E402
from engine.sessions.search import SessionSearch  # noqa: E402
from engine.sessions.store import SessionStore  # noqa: E402
from engine.sessions.transfer import import_sessions  # noqa: E402

DISCOVER_GOAL_MS, SCROLL_GOAL_MS = 10.0, 0.5
DEFAULT_SIZES = "10000,100000"
SCROLLS = 250
QUERY_SEED = 7


# -- query set ----------------------------------------------------------------------------------


@dataclass
class Q:
    category: str
    text: str
    options: dict[str, Any] = field(default_factory=dict)
    needle: Needle | None = None


_PATH = re.compile(r"\b(?:[a-z]+/)+[a-z0-9_]+\.[a-z]+\b")
_URL = re.compile(r"https://[^\s\"'`),]+")
_VERSION = re.compile(r"\bv?\d+\.\d+\.\d+\b")
_SNAKE = re.compile(r"\b[a-z]+(?:_[a-z]+){1,2}\b")
_CAMEL = re.compile(r"\b(?:[A-Z][a-z]+){2,3}\b")
_PLAIN = re.compile(r"^[a-z]+$")


def _messages(corpus: Corpus, rng: random.Random) -> Iterator[dict[str, Any]]:
    """Random messages of the corpus, rebuilt from their session's seed."""
    while True:
        session = corpus.session(rng.randrange(len(corpus.sessions)))
        yield rng.choice(session["messages"])


def _prose_words(message: dict[str, Any]) -> list[str]:
    return [w.strip(".?!:") for w in message["content"].split()]


def build_queries(corpus: Corpus, seed: int = QUERY_SEED) -> list[Q]:
    rng = random.Random(seed)
    vocab = corpus.vocab
    rank = {w: i for i, w in enumerate(vocab)}
    messages = _messages(corpus, rng)
    queries: list[Q] = []

    def rare() -> str:
        return vocab[int(5000 * (len(vocab) / 5000) ** rng.random())]

    def common() -> str:
        return vocab[rng.randint(40, 600)]

    def mid() -> str:
        return vocab[rng.randint(600, 5000)]

    queries += [Q("rare word", rare()) for _ in range(40)]
    queries += [Q("common word", common()) for _ in range(40)]
    while sum(q.category.endswith("phrase") for q in queries) < 50:
        words = _prose_words(next(messages))
        n = rng.choice((2, 3))
        if len(words) < n + 1:
            continue
        at = rng.randrange(len(words) - n)
        run = [w.lower() for w in words[at : at + n]]
        if all(_PLAIN.match(w) for w in run):
            quoted = len(queries) % 5 == 0
            text = " ".join(run)
            queries.append(
                Q("quoted phrase" if quoted else "phrase", f'"{text}"' if quoted else text)
            )
    mixed = 0
    while mixed < 30:
        if mixed % 2:  # a rare and a common word together, as in one real message
            words = [w.lower() for w in _prose_words(next(messages)) if _PLAIN.match(w.lower())]
            rares = [w for w in words if rank.get(w, 0) > 5000]
            commons = [w for w in words if 40 <= rank.get(w, 10**9) < 600]
            if not rares or not commons:
                continue
            pair = [rng.choice(commons), rng.choice(rares)]
        else:
            pair = [common(), rare()]
        rng.shuffle(pair)
        queries.append(Q("rare + common", " ".join(pair)))
        mixed += 1
    queries += [Q("loose words", " ".join(mid() for _ in range(3))) for _ in range(20)]
    tokens: dict[str, list[str]] = defaultdict(list)
    while (
        min((len(tokens[k]) for k in ("path", "url", "version", "snake", "camel")), default=0) < 4
    ):
        content = next(messages)["content"]
        for kind, pattern in (
            ("path", _PATH),
            ("url", _URL),
            ("version", _VERSION),
            ("snake", _SNAKE),
            ("camel", _CAMEL),
        ):
            tokens[kind] += pattern.findall(content)
    for kind in ("path", "url", "version", "snake", "camel"):
        picks = rng.sample(tokens[kind], 4)
        queries += [Q("identifier/path/url", p.rstrip(".")) for p in picks]
    for _ in range(15):
        word = rng.choice(CJK_WORDS)
        text = word if len(word) <= 4 or rng.random() < 0.5 else word[1:4]
        queries.append(Q("CJK", text))
    since = corpus.sessions[len(corpus.sessions) // 2].started_at
    filtered = [
        {"role": "tool"},
        {"role": "user"},
        {"source": "cron"},
        {"source": "telegram"},
        {"since": since},
        {"until": since},
        {"order": "newest"},
        {"order": "oldest"},
        {"role": "assistant", "order": "newest"},
        {"limit": 10},
    ]
    for i in range(20):
        text = common() if i % 2 else f"{common()} {mid()}"
        queries.append(Q("filters/order", text, dict(filtered[i % len(filtered)])))
    for needle in NEEDLES:
        queries.append(Q(f"needle ({needle.kind})", needle.query, dict(needle.filters), needle))
    # A quoted phrase with a word beside it: the phrase and the word are found through
    # different indexes, and either may be the rare side.
    phrases = [q.text.strip('"') for q in queries if q.category.endswith("phrase")]
    for i in range(10):
        word = rare() if i % 2 else common()
        queries.append(Q("phrase + word", f'"{phrases[i * 3]}" {word}'))
    rng.shuffle(queries)
    return queries


# -- measuring -----------------------------------------------------------------------------------


def _pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


@dataclass
class Stats:
    p50: float
    p95: float
    max: float
    n: int

    @classmethod
    def of(cls, ms: list[float]) -> Stats:
        return cls(statistics.median(ms), _pct(ms, 0.95), max(ms), len(ms))

    def __str__(self) -> str:
        return f"p50 {self.p50:7.2f}  p95 {self.p95:7.2f}  max {self.max:7.2f} ms  (n={self.n})"


@dataclass
class Result:
    size: int
    sessions: int = 0
    generate_s: float = 0.0
    import_s: float = 0.0
    per_second: float = 0.0
    db_bytes: int = 0
    wal_bytes: int = 0
    discover: Stats | None = None  # each query's median over the passes
    discover_cpu: Stats | None = None  # the same in CPU time
    first_pass: Stats | None = None
    scroll: Stats | None = None
    scroll_cpu: Stats | None = None  # the same in CPU time
    needles_rare: tuple[int, int] = (0, 0)
    needles_common: tuple[int, int] = (0, 0)
    peak_rss_mb: float = 0.0


def _mb(n: int) -> str:
    return f"{n / 2**20:,.1f} MB"


def _import(store: SessionStore, corpus_file: Path, total: int) -> float:
    started, cpu = time.perf_counter(), time.process_time()
    last = [started]

    def progress(lines: int, messages: int) -> None:
        now = time.perf_counter()
        if now - last[0] >= 30:
            last[0] = now
            rate = messages / (now - started)
            print(f"    … {messages:,}/{total:,} messages, {rate:,.0f}/s", flush=True)

    with corpus_file.open(encoding="utf-8") as lines:
        report = import_sessions(store, lines, progress=progress)
    if report.errors_total or report.messages_imported != total:
        raise SystemExit(
            f"import: {report.messages_imported:,} messages, errors {report.errors[:3]}"
        )
    cpu = time.process_time() - cpu
    print(f"  import CPU time: {cpu:.1f} s, {total / cpu:,.0f} messages/s of CPU", flush=True)
    return time.perf_counter() - started


def _catch_up(store: SessionStore, corpus: Corpus) -> None:
    """One pass of the queries while the trigram and pair indexes trail the import, then the
    catch-up, timed: the rest of the run measures search on indexes that hold everything."""
    tool = SessionSearch(store)
    trailing: dict[str, list[float]] = defaultdict(list)
    for q in build_queries(corpus):
        start = time.perf_counter()
        _discover(tool, q)
        trailing[q.category].append((time.perf_counter() - start) * 1000)
    every = Stats.of([t for times in trailing.values() for t in times])
    print(f"  discover while the indexes trail (one pass): {every}", flush=True)
    slowest = sorted(trailing.items(), key=lambda kv: -statistics.median(kv[1]))[:3]
    print(
        "    slowest kinds (median): "
        + ", ".join(f"{kind} {statistics.median(t):.1f} ms" for kind, t in slowest),
        flush=True,
    )
    started, cpu = time.perf_counter(), time.process_time()
    caught = maintenance.catch_up(store)
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    print(
        f"  then catch-up ({caught.messages:,} messages): {wall:.1f} s, {cpu:.1f} s CPU",
        flush=True,
    )


def _discover(tool: SessionSearch, q: Q) -> dict[str, Any]:
    return tool("discover", query=q.text, **q.options)


def _needle_found(corpus: Corpus, q: Q, result: dict[str, Any]) -> bool:
    assert q.needle is not None
    expected = corpus.needle_sessions(q.needle)
    found = [r["session_id"] for r in result["results"]]
    if q.options.get("order") == "newest":
        return bool(found) and found[0] == expected[-1]
    return any(sid in found[:3] for sid in expected)


def run_size(size: int, args: argparse.Namespace) -> Result:
    result = Result(size)
    reused = args.reuse is not None
    if reused:
        workdir = Path(args.reuse)
    else:
        workdir = Path(tempfile.mkdtemp(prefix=f"cairn-bench-{size}-", dir=args.tmp))
    try:
        corpus = Corpus(size)
        result.sessions = len(corpus.sessions)
        print(f"\n== {size:,} messages in {len(corpus.sessions):,} sessions ==", flush=True)
        print("  load average: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
        if reused:
            # A home kept by an earlier run (--keep) over the same corpus: opening it brings
            # it to this schema (migrations timed here) and the import is skipped.
            home = Home(workdir / "home")
            started, cpu = time.perf_counter(), time.process_time()
            store = SessionStore.open(home, Config())
            print(
                f"  reused {workdir}: opened (migrations included) in "
                f"{time.perf_counter() - started:.1f} s, {time.process_time() - cpu:.1f} s CPU",
                flush=True,
            )
            return _measure(size, args, result, corpus, store, home)
        corpus_file = workdir / "corpus.jsonl"
        started = time.perf_counter()
        with corpus_file.open("w", encoding="utf-8") as out:
            for line in corpus.lines():
                out.write(line + "\n")
        result.generate_s = time.perf_counter() - started
        print(
            f"  corpus: {_mb(corpus_file.stat().st_size)} of JSONL, "
            f"generated in {result.generate_s:.1f} s",
            flush=True,
        )
        home = Home(workdir / "home")
        store = SessionStore.open(home, Config())
        result.import_s = _import(store, corpus_file, size)
        result.per_second = size / result.import_s
        db = database_path(home)
        wal = db.with_name(db.name + "-wal")
        result.db_bytes = db.stat().st_size
        result.wal_bytes = wal.stat().st_size if wal.exists() else 0
        print(
            f"  import (import_sessions): {result.import_s:.1f} s, "
            f"{result.per_second:,.0f} messages/s; database {_mb(result.db_bytes)} "
            f"+ WAL {_mb(result.wal_bytes)}",
            flush=True,
        )
        corpus_file.unlink()
        _catch_up(store, corpus)
        return _measure(size, args, result, corpus, store, home)
    finally:
        if args.keep or reused:
            print(f"  kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)


def _measure(
    size: int,
    args: argparse.Namespace,
    result: Result,
    corpus: Corpus,
    store: SessionStore,
    home: Home,
) -> Result:
    tool = SessionSearch(store)
    queries = build_queries(corpus)
    for q in queries[:10]:  # open the pool's connection, warm the schema cache
        _discover(tool, q)
    # The first pass reads index pages the import left to the page cache (or that the
    # kernel has dropped since); later passes show the design's own cost. Each query's
    # time is its median over the passes.
    passes: list[list[float]] = [[] for _ in queries]
    cpu: list[list[float]] = [[] for _ in queries]  # the process's CPU time: less noisy
    outs: list[dict[str, Any]] = []
    for n in range(args.passes):
        for i, q in enumerate(queries):
            start, start_cpu = time.perf_counter(), time.process_time()
            out = _discover(tool, q)
            passes[i].append((time.perf_counter() - start) * 1000)
            cpu[i].append((time.process_time() - start_cpu) * 1000)
            if n == 0:
                outs.append(out)
    result.first_pass = Stats.of([p[0] for p in passes])
    timings = [
        (statistics.median(p), q, out) for p, q, out in zip(passes, queries, outs, strict=True)
    ]
    result.discover = Stats.of([t for t, _, _ in timings])
    result.discover_cpu = Stats.of([statistics.median(c) for c in cpu])
    print(f"  discover, first pass:     {result.first_pass}")
    print(
        f"  discover, median of {args.passes}: {result.discover}   "
        f"p95/goal {result.discover.p95 / DISCOVER_GOAL_MS:.2f}"
    )
    print(f"  discover CPU time, median: {result.discover_cpu}")
    by_category: dict[str, list[float]] = defaultdict(list)
    by_form: dict[str, list[float]] = defaultdict(list)
    empty = 0
    for ms, q, out in timings:
        by_category[q.category].append(ms)
        by_form[out.get("matched_as", "none") if out["results"] else "no result"].append(ms)
        empty += not out["results"]
    for name, ms in sorted(by_category.items()):
        print(f"    {name:22s} {Stats.of(ms)}")
    print("    by the form that answered:")
    for name, ms in sorted(by_form.items()):
        print(f"    {name:22s} {Stats.of(ms)}")
    print(f"    queries with no result: {empty}/{len(timings)}")
    rare, common = [0, 0], [0, 0]
    misses = []
    for _, q, out in timings:
        if q.needle is None:
            continue
        tally = rare if q.needle.kind == "rare" else common
        ok = _needle_found(corpus, q, out)
        tally[0] += ok
        tally[1] += 1
        if not ok:
            misses.append(f"{q.needle.name} ({q.text!r}, form {out.get('matched_as')})")
    result.needles_rare, result.needles_common = tuple(rare), tuple(common)  # type: ignore[assignment]
    print(
        f"  needles in top 3: rare-token {rare[0]}/{rare[1]}, common-parts {common[0]}/{common[1]}"
    )
    for miss in misses:
        print(f"    missed: {miss}")
    result.scroll, result.scroll_cpu = _scrolls(store, tool, args.scrolls)
    print(f"  scroll:   {result.scroll}   p95/goal {result.scroll.p95 / SCROLL_GOAL_MS:.2f}")
    print(f"  scroll CPU time: {result.scroll_cpu}   (load {os.getloadavg()[0]:.2f})")
    if args.profile:
        profile(tool, queries, timings)
    result.peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"  peak RSS of this process so far: {result.peak_rss_mb:,.0f} MB")
    store.engine.dispose()
    dispose_engines()
    return result


def _scrolls(store: SessionStore, tool: SessionSearch, count: int) -> tuple[Stats, Stats]:
    rng = random.Random(QUERY_SEED + 1)
    with store.engine.connect() as conn:
        top = conn.exec_driver_sql("SELECT max(id) FROM messages").scalar() or 0
    calls = []
    for _ in range(count):
        message = store.message(rng.randint(1, top))
        assert message is not None
        direction = rng.choice(("around", "around", "forward", "backward"))
        calls.append((message.session_id, message.id, direction))
    for sid, anchor, direction in calls[:10]:
        tool("scroll", session_id=sid, anchor_id=anchor, direction=direction)
    samples, cpu = [], []
    for sid, anchor, direction in calls:
        start, start_cpu = time.perf_counter(), time.process_time()
        tool("scroll", session_id=sid, anchor_id=anchor, direction=direction)
        samples.append((time.perf_counter() - start) * 1000)
        cpu.append((time.process_time() - start_cpu) * 1000)
    return Stats.of(samples), Stats.of(cpu)


# -- profile -------------------------------------------------------------------------------------


class Recorder:
    """Wraps backend and search methods to add up the wall time of each step of a query."""

    def __init__(self) -> None:
        self.steps: dict[str, float] = defaultdict(float)
        self.forms: list[tuple[str, float, int]] = []  # form, ms, hits (None: not expressible)
        self._undo: list[Callable[[], None]] = []

    def reset(self) -> None:
        self.steps = defaultdict(float)
        self.forms = []

    def wrap(self, owner: Any, name: str, step: str) -> None:
        original = getattr(owner, name, None)
        if original is None:
            return
        # A static method read from its class is a plain function; put back as one, it would
        # be bound to the instance and get one argument too many.
        descriptor = inspect.getattr_static(owner, name)
        recorder = self

        @functools.wraps(original)
        def timed(*a: Any, **kw: Any) -> Any:
            start = time.perf_counter()
            try:
                return original(*a, **kw)
            finally:
                recorder.steps[step] += (time.perf_counter() - start) * 1000

        setattr(owner, name, staticmethod(timed) if isinstance(descriptor, staticmethod) else timed)
        self._undo.append(lambda: setattr(owner, name, descriptor))

    def wrap_hits(self, owner: Any) -> None:
        original = owner.hits
        recorder = self

        @functools.wraps(original)
        def timed(this: Any, query: Any, form: str, *a: Any, **kw: Any) -> Any:
            start = time.perf_counter()
            out = original(this, query, form, *a, **kw)
            ms = (time.perf_counter() - start) * 1000
            recorder.steps[f"hits:{form}"] += ms
            recorder.forms.append((form, ms, -1 if out is None else len(out)))
            return out

        owner.hits = timed
        self._undo.append(lambda: setattr(owner, "hits", original))

    def undo(self) -> None:
        for undo in reversed(self._undo):
            undo()
        self._undo.clear()


def profile(tool: SessionSearch, queries: list[Q], timings: list[tuple[float, Q, Any]]) -> None:
    backend = fts_sqlite.SqliteFullText
    recorder = Recorder()
    recorder.wrap(backend, "_id_range", "date bounds to id range")
    recorder.wrap(backend, "_walk", "walks through the indexes")
    recorder.wrap(backend, "_ranked", "ranking (BM25)")
    recorder.wrap(backend, "_confirmed", "confirming long phrases")
    recorder.wrap(backend, "_rows", "sessions of the hits")
    recorder.wrap_hits(backend)
    recorder.wrap(search, "snippet", "snippets")
    recorder.wrap(search.SessionSearch, "_cards", "cards (context, bookends)")
    recorder.wrap(search.SessionSearch, "_filters", "filters (current session)")
    totals: dict[str, float] = defaultdict(float)
    per_query: list[tuple[float, Q, dict[str, float], list[tuple[str, float, int]]]] = []
    try:
        for q in queries:
            recorder.reset()
            start = time.perf_counter()
            _discover(tool, q)
            ms = (time.perf_counter() - start) * 1000
            for k, v in recorder.steps.items():
                totals[k] += v
            totals["total"] += ms
            per_query.append((ms, q, dict(recorder.steps), list(recorder.forms)))
    finally:
        recorder.undo()
    print("  profile: wall time per step, summed over all queries (steps nest: hits includes")
    print("  the walks, ranking and confirmation; cards include snippets):")
    for step, ms in sorted(totals.items(), key=lambda kv: -kv[1]):
        print(f"    {step:32s} {ms:9.1f} ms  {100 * ms / totals['total']:5.1f}%")
    per_query.sort(key=lambda t: -t[0])
    print("  slowest queries: steps, then each form tried (ms, hits):")
    for ms, q, steps, forms in per_query[:15]:
        parts = ", ".join(f"{k} {v:.1f}" for k, v in sorted(steps.items(), key=lambda kv: -kv[1]))
        print(f"    {ms:7.1f} ms  [{q.category}] {q.text!r} {q.options or ''}")
        print(f"               {parts}")
        for form, form_ms, hits in forms:
            if hits >= 0:
                print(f"               {form:9s} {form_ms:7.1f} ms  hits {hits:3d}")


# -- report --------------------------------------------------------------------------------------


def markdown(results: list[Result]) -> str:
    head = (
        "| messages | sessions | import | messages/s | database + WAL | discover p50 / p95 / max "
        "| discover CPU p50 / p95 / max | first pass p50 / p95 / max | scroll p50 / p95 / max "
        "| scroll CPU p50 / p95 | needles in top 3 (rare / common parts) |\n"
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
    )
    rows = []
    for r in results:
        assert r.discover is not None and r.scroll is not None and r.first_pass is not None
        assert r.discover_cpu is not None and r.scroll_cpu is not None
        c = r.discover_cpu
        rows.append(
            f"| {r.size:,} | {r.sessions:,} | {r.import_s:,.1f} s | {r.per_second:,.0f} "
            f"| {r.db_bytes / 2**20:,.0f} + {r.wal_bytes / 2**20:,.0f} MB "
            f"| {r.discover.p50:.1f} / {r.discover.p95:.1f} / {r.discover.max:.1f} ms "
            f"| {c.p50:.1f} / {c.p95:.1f} / {c.max:.1f} ms "
            f"| {r.first_pass.p50:.1f} / {r.first_pass.p95:.1f} / {r.first_pass.max:.1f} ms "
            f"| {r.scroll.p50:.2f} / {r.scroll.p95:.2f} / {r.scroll.max:.2f} ms "
            f"| {r.scroll_cpu.p50:.2f} / {r.scroll_cpu.p95:.2f} ms "
            f"| {r.needles_rare[0]}/{r.needles_rare[1]} / "
            f"{r.needles_common[0]}/{r.needles_common[1]} |"
        )
    return head + "\n".join(rows)


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (
        f"{os.cpu_count()} cores ({cpu}), Python {platform.python_version()}, "
        f"SQLite {sqlite3.sqlite_version}, {platform.system()} {platform.release()}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=DEFAULT_SIZES, help="comma-separated message counts")
    parser.add_argument("--scrolls", type=int, default=SCROLLS)
    parser.add_argument("--passes", type=int, default=3, help="runs of the discover queries")
    parser.add_argument("--profile", action="store_true", help="where discover spends its time")
    parser.add_argument("--keep", action="store_true", help="keep the temporary homes")
    parser.add_argument("--tmp", default=None, help="folder for the temporary homes")
    parser.add_argument(
        "--reuse", default=None, help="a folder kept by --keep for the same (single) size"
    )
    args = parser.parse_args(argv)
    sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    print(f"machine: {machine()}")
    print("load average at start: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    print(f"ranking budget (fts_sqlite.RANK_BUDGET): {fts_sqlite.RANK_BUDGET}")
    results = [run_size(size, args) for size in sizes]
    print(f"\ngoals: discover p95 <= {DISCOVER_GOAL_MS:g} ms, scroll p95 <= {SCROLL_GOAL_MS:g} ms")
    for r in results:
        assert r.discover is not None and r.scroll is not None
        d_ok = "met" if r.discover.p95 <= DISCOVER_GOAL_MS else "MISSED"
        s_ok = "met" if r.scroll.p95 <= SCROLL_GOAL_MS else "MISSED"
        print(
            f"  {r.size:>9,}: discover p95 {r.discover.p95:.1f} ms ({d_ok}, "
            f"{r.discover.p95 / DISCOVER_GOAL_MS:.2f}x goal), scroll p95 {r.scroll.p95:.2f} ms "
            f"({s_ok}, {r.scroll.p95 / SCROLL_GOAL_MS:.2f}x goal)"
        )
    print("\n" + markdown(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
