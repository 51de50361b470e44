"""Migrating a generated OpenClaw workspace of 1,000 daily logs, with duplicates, near
duplicates, hostile entries, a huge file, a Latin-1 file, empty files and symlink loops: the
report's counts match the files, the blocked entries are exactly the hostile ones, the memory
files stay within their caps, and a second run is a no-op."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from engine.config import load_config
from engine.home import Home
from engine.memory import threats
from engine.memory.entries import Target, parse, render
from engine.memory.service import MemoryService
from engine.migrate.openclaw import MigrationReport, Options, apply_migration, plan_migration
from tests.benchmarks.migration import HOSTILE, Manifest, build_workspace

LOGS = 1000


class Migrated:
    def __init__(self, manifest: Manifest, home: Home, report: MigrationReport) -> None:
        self.manifest = manifest
        self.home = home
        self.report = report


@pytest.fixture(scope="module")
def migrated(tmp_path_factory: pytest.TempPathFactory) -> Migrated:
    root = tmp_path_factory.mktemp("openclaw")
    manifest = build_workspace(root / "user", LOGS, seed=8)
    home = Home(root / "home")
    report = apply_migration(home, plan_migration(home, Options(source=manifest.state_dir)))
    return Migrated(manifest, home, report)


def test_the_corpus_has_what_it_claims(migrated: Migrated) -> None:
    manifest = migrated.manifest
    assert len(manifest.logs) == LOGS
    status = Counter(f.status for f in manifest.logs)
    assert status == {"parsed": LOGS - 9, "skipped": 5, "empty": 4}
    assert len(manifest.hostile) == len(HOSTILE) + 1
    assert all(threats.scan(h).blocked for h in HOSTILE)
    assert (manifest.workspace / manifest.logs[100].path).stat().st_size > 2 * 1024 * 1024


def test_every_file_is_accounted_for_with_the_entries_it_holds(migrated: Migrated) -> None:
    report, manifest = migrated.report, migrated.manifest
    files = {f.path: f for f in report.files}
    for log in manifest.logs:
        got = files[log.path]
        assert (got.status, got.counts.parsed) == (log.status, log.entries), log.path
        assert got.kind == "daily" and got.date == Path(log.path).stem
        if log.status == "skipped":
            assert got.reason
    reasons = {f.path: f.reason or "" for f in report.files if f.status == "skipped"}
    assert "too large" in reasons[manifest.logs[100].path]
    assert "not UTF-8" in reasons[manifest.logs[200].path]
    assert sum("symlink loop" in r for r in reasons.values()) == 3
    for name in [*manifest.not_logs, *manifest.not_migrated]:
        assert files[name].status == "skipped", name
    assert files["MEMORY.md"].counts.parsed == manifest.curated_memory
    assert files["USER.md"].counts.parsed == manifest.curated_user


def test_the_counts_add_up_per_file_and_overall(migrated: Migrated) -> None:
    report, manifest = migrated.report, migrated.manifest
    expected = sum(f.entries for f in manifest.logs) + manifest.curated_memory
    expected += manifest.curated_user
    counts = report.counts
    assert counts.parsed == expected
    buckets = ["imported", "already_present", "duplicate", "near_duplicate", "blocked"]
    buckets += ["invalid", "overflow"]
    assert sum(getattr(counts, b) for b in buckets) == counts.parsed
    for f in report.files:
        assert sum(getattr(f.counts, b) for b in buckets) == f.counts.parsed, f.path
    listed = Counter(e.status for e in report.entries)
    for bucket in buckets:
        if bucket != "duplicate":  # exact duplicates are counted, not listed
            assert listed[bucket] == getattr(counts, bucket), bucket
    # The corpus repeats itself on purpose; both kinds of repeat are caught.
    assert counts.duplicate > 500 and counts.near_duplicate > 500
    assert counts.imported == sum(len(t.add) for t in report.targets)


def test_the_blocked_entries_are_exactly_the_hostile_ones(migrated: Migrated) -> None:
    blocked = migrated.report.outcomes("blocked")
    assert {(e.file, e.line) for e in blocked} == migrated.manifest.hostile
    assert all(e.categories for e in blocked)
    memory = (migrated.home.memories_dir / "MEMORY.md").read_text()
    overflow = migrated.report.overflow_file.read_text()  # type: ignore[union-attr]
    for hostile in HOSTILE:
        assert hostile not in memory and hostile not in overflow


def test_memory_is_within_its_caps_and_holds_what_the_report_says(migrated: Migrated) -> None:
    home, report = migrated.home, migrated.report
    config = load_config(home)
    limits = {
        Target.MEMORY: config.memory.memory_char_limit,
        Target.USER: config.memory.user_char_limit,
    }
    for plan in report.targets:
        stored = parse((home.memories_dir / plan.target.filename).read_text("utf-8"))
        assert stored == plan.add
        assert len(render(stored)) == plan.chars_after <= limits[plan.target]
    # Newest first: what got in is the curated file and the latest days.
    dates = [e.date for e in report.outcomes("imported") if e.date]
    overflow_dates = [e.date for e in report.outcomes("overflow") if e.date]
    assert min(dates) >= max(d for d in overflow_dates if d not in dates)
    # What did not fit is in the overflow file, each entry once.
    text = report.overflow_file.read_text("utf-8")  # type: ignore[union-attr]
    for entry in report.outcomes("overflow"):
        assert text.count(f"- {entry.text.splitlines()[0]}") >= 1
    assert text.count("\n- ") == report.counts.overflow


def test_the_writes_are_in_the_memory_history(migrated: Migrated) -> None:
    events = MemoryService(migrated.home).events()
    assert [(e.target, e.origin) for e in events] == [
        ("user", "migration"),
        ("memory", "migration"),
    ]
    assert events[1].state_after == render(migrated.report.targets[0].add)


def test_a_second_run_is_a_no_op(migrated: Migrated) -> None:
    home = migrated.home

    def state() -> dict[str, bytes]:
        return {
            str(p.relative_to(home.root)): p.read_bytes()
            for p in sorted(home.root.rglob("*"))
            if p.is_file() and not p.name.startswith("state.db")
        }

    before = state()
    again = plan_migration(home, Options(source=migrated.manifest.state_dir))
    assert not again.writes_anything
    assert again.counts.parsed == migrated.report.counts.parsed
    assert again.counts.imported == 0 and again.counts.blocked == migrated.report.counts.blocked
    assert again.overflow_recorded == migrated.report.overflow_file
    done = apply_migration(home, again)
    assert done.migration_dir is None and not done.changed
    assert state() == before
    assert len(MemoryService(home).events()) == 2
