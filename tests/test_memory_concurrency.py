"""Several processes writing one store at once: no acknowledged write is lost, nothing overflows.

The writers are real child processes (``tests/memory_writer.py``) that each build their own
``MemoryService`` from the home's config.yaml, as separate Cairn instances would. They report
``ready`` and wait for a ``go`` line so that all of them really write at the same time, then
print one JSON line per write.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from engine.config import Config, MemoryConfig, update_config
from engine.db import dispose_engines
from engine.home import Home
from engine.memory.entries import DELIMITER, Target, parse, render
from engine.memory.history import COMMITTING_ACTIONS, MemoryEvent
from engine.memory.service import MemoryService
from tests.memory_writer import add_entry, edit_entry

REPO = Path(__file__).resolve().parent.parent
WRITER = Path(__file__).resolve().parent / "memory_writer.py"
M = Target.MEMORY


def run_writers(home: Home, mode: str, writers: int, count: int) -> list[list[dict[str, Any]]]:
    """Start ``writers`` children, release them together, and return each one's records."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    argv = [sys.executable, str(WRITER), mode, "--home", str(home.root), "--count", str(count)]
    procs = [
        subprocess.Popen(
            [*argv, "--writer", str(w)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=REPO,
        )
        for w in range(writers)
    ]
    try:
        for proc in procs:  # blocks until that child has imported everything and opened the db
            assert proc.stdout is not None
            line = proc.stdout.readline()
            assert line, f"writer exited before it was ready: {proc.stderr and proc.stderr.read()}"
            assert "ready" in json.loads(line)
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        outputs = []
        for proc in procs:
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err
            records = [json.loads(line) for line in out.splitlines()]
            assert "done" in records[-1], records[-3:]
            outputs.append(records[:-1])
        return outputs
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def committed(events: list[MemoryEvent]) -> list[MemoryEvent]:
    return sorted((e for e in events if e.action in COMMITTING_ACTIONS), key=lambda e: e.id)


def assert_unbroken_chain(events: list[MemoryEvent], final_text: str) -> None:
    """Each committed change starts from the state the previous one ended in."""
    for prev, cur in itertools.pairwise(events):
        assert cur.state_before == prev.state_after, f"history skips from #{prev.id} to #{cur.id}"
    assert events[-1].state_after == final_text


@pytest.mark.slow
def test_eight_processes_adding_lose_nothing_and_never_overflow(home: Home) -> None:
    """Tried: 8 processes x 200 adds of distinct 40-char entries, released together, against a
    limit that holds exactly 800 of the 1,600. Every ``applied`` answer must be in the final
    file; every refusal must be ``overflow``; the file must parse, stay canonical and within
    the limit; the history must hold one ``add`` event per applied add (same event ids), and
    its states must chain without a gap. The home is brand new: the writers also race to
    create its database."""
    writers, count, length, fit = 8, 200, 40, 800
    limit = fit * length + (fit - 1) * len(DELIMITER)
    update_config(home, {"memory": {"memory_char_limit": limit}})
    outputs = run_writers(home, "add", writers, count)

    records = [r for out in outputs for r in out]
    assert len(records) == writers * count
    applied = [r for r in records if r.get("status") == "applied"]
    refused = [r for r in records if "error" in r]
    assert len(applied) + len(refused) == len(records), Counter(r.get("status") for r in records)
    assert Counter(r["error"] for r in refused) == Counter({"overflow": len(refused)})
    assert all("would exceed the limit" in r["message"] for r in refused)
    # Equal-length entries: exactly ``fit`` can go in, whoever wins the races.
    assert len(applied) == fit
    assert [r for r in applied if r["warnings"]] == []
    for w, out in enumerate(outputs):  # each writer's own adds were answered in its order
        assert [r["content"] for r in out] == [add_entry(w, i, length) for i in range(count)]

    service = MemoryService(home, Config(memory=MemoryConfig(memory_char_limit=limit)))
    final = service.read(M)
    assert sorted(final.entries) == sorted(r["content"] for r in applied)
    assert final.chars <= limit and final.chars == limit
    assert final.text == render(final.entries) and parse(final.text) == final.entries

    events = committed(service.events(M))
    assert [e.action for e in events] == ["add"] * fit
    assert sorted(e.id for e in events) == sorted(r["event_id"] for r in applied)
    assert sorted(e.entry_after or "" for e in events) == sorted(r["content"] for r in applied)
    assert_unbroken_chain(events, final.text)
    # The writers really interleaved: the file is not one writer's block after another's.
    owners = [entry.split()[1] for entry in final.entries]
    assert sum(a != b for a, b in itertools.pairwise(owners)) > writers


@pytest.mark.slow
def test_two_processes_editing_different_entries_keep_each_others_changes(home: Home) -> None:
    """Tried: two processes each own 120 entries and, at the same time, replace every one of
    theirs (version 0 -> 1) and remove every third right after replacing it. A write that
    applied its change to a stale copy of the file would silently undo the other process's
    last change; here every change from both must be in the final file, and the history must
    chain without a gap."""
    writers, count = 2, 120
    update_config(home, {"memory": {"memory_char_limit": 50_000}})
    service = MemoryService(home, Config(memory=MemoryConfig(memory_char_limit=50_000)))
    initial = [edit_entry(w, i, 0) for i in range(count) for w in range(writers)]
    for start in range(0, len(initial), 100):
        ops = [{"action": "add", "content": e} for e in initial[start : start + 100]]
        assert service.write(M, ops)["status"] == "applied"

    outputs = run_writers(home, "edit", writers, count)
    for out in outputs:
        assert [r.get("status") for r in out] == ["applied"] * len(out), [
            r for r in out if "error" in r
        ][:3]
        assert [r for r in out if r["warnings"]] == []

    final = service.read(M).entries
    expected = [edit_entry(w, i, 1) for i in range(count) for w in range(writers) if i % 3]
    assert final == expected  # every change of both, in the original order
    events = committed(service.events(M))
    assert len(events) == 3 + writers * (count + count // 3)
    edits = events[3:]
    assert_unbroken_chain(events, render(final))
    # The two writers' changes are interleaved in the history, not one after the other.
    owners = [(e.entry_before or "").split()[1] for e in edits]
    assert sum(a != b for a, b in itertools.pairwise(owners)) >= 2


def test_processes_opening_a_fresh_home_together_all_get_a_history(tmp_path: Path) -> None:
    """Tried: 6 rounds of 8 processes, forked from this one (so they are ready at once) and
    released together by closing a pipe, each opening the same brand-new home and adding one
    entry: several Cairn windows or CLI calls starting at once on a new machine. Every one
    must come up with a change history (no ``history_error``, no warning in its result), and
    the history must hold the 8 adds as one unbroken chain. Found broken: the database used to
    be created with check-then-create, and a loser ran its whole life without history (its
    writes later showed up as someone else's "external edit"); the 8-writer test above caught
    it first."""
    for round_ in range(6):
        home = Home(tmp_path / f"fresh{round_}")
        dispose_engines()  # no SQLite connection may cross the fork
        gate_r, gate_w = os.pipe()
        result_r, result_w = os.pipe()
        pids = []
        for k in range(8):
            pid = os.fork()
            if pid == 0:
                try:
                    os.close(gate_w)
                    os.close(result_r)
                    os.read(gate_r, 1)  # returns (EOF) when the parent closes the gate
                    service = MemoryService(home, Config())
                    out: dict[str, Any] = {"history_error": service.history_error}
                    try:
                        result = service.write(M, [{"action": "add", "content": f"fact {k}"}])
                        out["warnings"] = result["warnings"]
                    except Exception as exc:
                        out["error"] = f"{type(exc).__name__}: {exc}"
                    os.write(result_w, json.dumps(out).encode() + b"\n")
                finally:
                    os._exit(0)
            pids.append(pid)
        for fd in (gate_r, result_w, gate_w):  # closing gate_w releases all eight at once
            os.close(fd)
        data = b""
        while chunk := os.read(result_r, 65536):
            data += chunk
        os.close(result_r)
        for pid in pids:
            os.waitpid(pid, 0)
        outs = [json.loads(line) for line in data.splitlines()]
        assert len(outs) == 8, outs
        problems = [o for o in outs if o["history_error"] or o.get("warnings") or "error" in o]
        assert problems == [], f"round {round_}: {problems[0]}"
        service = MemoryService(home, Config())
        events = committed(service.events(M))
        assert sorted(e.entry_after or "" for e in events) == [f"fact {k}" for k in range(8)]
        assert_unbroken_chain(events, service.read(M).text)
