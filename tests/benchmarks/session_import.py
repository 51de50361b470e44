"""Import speed of ``cairn sessions import``: bulk indexing per batch against a trigger per row.

    python tests/benchmarks/session_import.py                          # 10^5, both ways
    python tests/benchmarks/session_import.py --sizes 100000,1000000 --per-row-sizes 100000

For each size the deterministic corpus of ``session_corpus.py`` is written to a JSONL file and
imported into a fresh home through ``engine.sessions.transfer.import_sessions``, as the command
does: once as it is (each batch's rows first, then every index filled in bulk: bulk.py), and,
for the sizes in ``--per-row-sizes``, once with the indexing left to the per-row triggers (the
way before). Wall and CPU time of this process (SQLite runs in it), messages per second of
each, and the ratio. A bulk import past ``backlog.INLINE`` messages leaves the trigram and
word-pair indexes to a catch-up (engine/sessions/backlog.py): that is timed after it, as
``cairn sessions reindex --catch-up`` runs it, and the sum printed too. Then ``reindex --check``
on the bulk-imported database, which compares every index with the messages.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from session_corpus import Corpus

from engine.config import Config
from engine.db import database_path, dispose_engines
from engine.home import Home
from engine.sessions import maintenance, transfer
from engine.sessions.store import SessionStore


def _import(workdir: Path, corpus_file: Path, per_row: bool) -> tuple[float, float, int, Path]:
    home = Home(workdir / ("per-row" if per_row else "bulk"))
    store = SessionStore.open(home, Config())
    original = transfer.deferred_indexing
    if per_row:
        transfer.deferred_indexing = lambda conn: nullcontext()  # type: ignore[assignment]
    try:
        wall, cpu = time.perf_counter(), time.process_time()
        with corpus_file.open(encoding="utf-8") as lines:
            report = transfer.import_sessions(store, lines)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    finally:
        transfer.deferred_indexing = original
    if report.errors_total:
        raise SystemExit(f"import errors: {report.errors[:3]}")
    return wall, cpu, report.messages_imported, database_path(home)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000")
    parser.add_argument("--per-row-sizes", default="100000", help="also timed the way before")
    parser.add_argument("--tmp", default=None)
    parser.add_argument("--no-check", action="store_true", help="skip reindex --check")
    args = parser.parse_args(argv)
    per_row_sizes = {int(s) for s in args.per_row_sizes.split(",") if s}
    for size in (int(s) for s in args.sizes.split(",")):
        workdir = Path(tempfile.mkdtemp(prefix=f"cairn-import-{size}-", dir=args.tmp))
        try:
            corpus = Corpus(size)
            corpus_file = workdir / "corpus.jsonl"
            with corpus_file.open("w", encoding="utf-8") as out:
                for line in corpus.lines():
                    out.write(line + "\n")
            print(
                f"\n== {size:,} messages in {len(corpus.sessions):,} sessions, "
                f"{corpus_file.stat().st_size / 2**20:,.0f} MB of JSONL ==",
                flush=True,
            )
            rows = []
            for per_row in [False, True] if size in per_row_sizes else [False]:
                load = os.getloadavg()[0]
                wall, cpu, messages, db = _import(workdir, corpus_file, per_row)
                name = "per-row triggers" if per_row else "bulk per batch"
                rows.append((name, wall, cpu))
                print(
                    f"  {name:17} wall {wall:7.1f} s  CPU {cpu:7.1f} s  "
                    f"{messages / wall:7,.0f} msg/s wall  {messages / cpu:7,.0f} msg/s CPU  "
                    f"database {db.stat().st_size / 2**20:,.0f} MB  (load {load:.1f})",
                    flush=True,
                )
                if not per_row:
                    wall2, cpu2 = time.perf_counter(), time.process_time()
                    caught = maintenance.catch_up(SessionStore.open(Home(db.parent), Config()))
                    wall2, cpu2 = time.perf_counter() - wall2, time.process_time() - cpu2
                    print(
                        f"  {'then catch-up':17} wall {wall2:7.1f} s  CPU {cpu2:7.1f} s  "
                        f"({caught.messages:,} messages); import and catch-up: "
                        f"{messages / (wall + wall2):7,.0f} msg/s wall  "
                        f"{messages / (cpu + cpu2):7,.0f} msg/s CPU  "
                        f"database {db.stat().st_size / 2**20:,.0f} MB",
                        flush=True,
                    )
                if not per_row and not args.no_check:
                    started = time.perf_counter()
                    check = maintenance.check(SessionStore.open(Home(db.parent), Config()))
                    print(
                        f"  reindex --check: {'ok' if check.ok else check.fts} "
                        f"({time.perf_counter() - started:.0f} s)",
                        flush=True,
                    )
                dispose_engines()
            if len(rows) == 2:
                (_, bulk_wall, bulk_cpu), (_, row_wall, row_cpu) = rows
                print(
                    f"  bulk / per-row: {row_wall / bulk_wall:.2f}x wall, "
                    f"{row_cpu / bulk_cpu:.2f}x CPU"
                )
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
