"""Cost of semantic search (the semantic extra): embedding messages, and a nearest search.

    python tests/benchmarks/semantic.py [--embed 1000] [--sizes 10000,100000] [--queries 50]

Embedding: the first ``--embed`` messages of recall.py's archive through ``catch_up`` on a real
SQLite store, CPU and wall time (NumPy's BLAS may use both cores). Nearest: a store of N
messages whose vectors are random unit vectors (a product costs the same whatever the vectors
hold; embedding 10^5 real messages would take ten minutes), then ``VectorIndex.nearest`` for
real questions, p50/p95 of CPU time, with the time of the one product alone beside it. The
first search of a process also reads every vector: its time is printed apart.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
for path in (ROOT, HERE):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from sqlalchemy import text  # noqa: E402

from engine.config import Config  # noqa: E402
from engine.home import Home  # noqa: E402
from engine.sessions.fulltext import Filters  # noqa: E402
from engine.sessions.meaning import DIMENSIONS, encoder  # noqa: E402
from engine.sessions.store import NewMessage, SessionStore  # noqa: E402
from engine.sessions.vectors import VectorIndex  # noqa: E402

QUESTIONS = [
    "Which of my friends owns an animal?",
    "Who changed jobs this year?",
    "What did we decide about the database migration?",
    "Where did Caroline travel in the summer?",
    "Which instrument is Gina learning?",
]


def _ms(values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return f"p50 {statistics.median(ordered) * 1e3:6.2f} ms  p95 {p95 * 1e3:6.2f} ms"


def embedding(count: int, folder: Path) -> None:
    import recall

    archive = recall.build_archive(recall.SEED)
    store = SessionStore.open(Home(folder / "embed"), Config())
    left = count
    for s in archive.sessions:
        if left <= 0:
            break
        start = s.when.timestamp()
        store.create_session(session_id=s.key, source="import", title=None, started_at=start)
        turns = s.turns[:left]
        store.append(
            s.key,
            [
                NewMessage(role="user", content=t.content(), timestamp=start + i)
                for i, t in enumerate(turns)
            ],
        )
        left -= len(turns)
    encoder()  # the weights' load is not the embedding's cost
    cpu, wall = time.process_time(), time.perf_counter()
    done = VectorIndex(store.engine, store.writer).catch_up()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    print(
        f"embed {done:,} messages: {cpu:.1f} s CPU ({done / cpu:,.0f} a second), "
        f"{wall:.1f} s wall ({done / wall:,.0f} a second)"
    )


def nearest(size: int, queries: int, folder: Path) -> None:
    store = SessionStore.open(Home(folder / f"near{size}"), Config())
    rng = np.random.default_rng(7)
    store.create_session(session_id="s", source="import", title=None, started_at=1.0)
    ids: list[int] = []
    for start in range(0, size, 20_000):
        batch = [
            NewMessage(role="user", content=f"message {i}", timestamp=float(i))
            for i in range(start, min(size, start + 20_000))
        ]
        ids += store.append("s", batch)
    vectors = rng.standard_normal((size, DIMENSIONS)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    blobs = vectors.astype(np.float16)
    with store.writer.begin() as conn:
        conn.execute(
            text("INSERT INTO message_vectors (message_id, vector) VALUES (:i, :v)"),
            [{"i": i, "v": blobs[k].tobytes()} for k, i in enumerate(ids)],
        )
    index = VectorIndex(store.engine)
    encoder()
    with store.engine.connect() as conn:
        cpu = time.process_time()
        index.nearest(conn, QUESTIONS[0], Filters())
        first = time.process_time() - cpu
        times, products = [], []
        for k in range(queries):
            cpu = time.process_time()
            index.nearest(conn, QUESTIONS[k % len(QUESTIONS)], Filters())
            times.append(time.process_time() - cpu)
            q = vectors[k]
            cpu = time.process_time()
            vectors @ q
            products.append(time.process_time() - cpu)
    print(
        f"nearest at {size:>9,} vectors: {_ms(times)}  (the product alone: {_ms(products)}); "
        f"first search of the process {first * 1e3:.0f} ms"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embed", type=int, default=1000)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=50)
    args = parser.parse_args(argv)
    print("load average: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    with tempfile.TemporaryDirectory(prefix="cairn-semantic-") as folder:
        if args.embed:
            embedding(args.embed, Path(folder))
        for size in (int(s) for s in args.sizes.split(",") if s):
            nearest(size, args.queries, Path(folder))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
