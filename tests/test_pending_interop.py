"""The pending queue shared with Hermes Agent: its records are listed and approved by Cairn,
and Cairn's records are in the shape it lists (sorted by numeric created_at) and replays
(payload.action with content/old_text, or "batch" with operations).

The other tool's record is written out here by hand, in its format (REFERENCE §3 and its
staging code): an 8-hex id, created_at in unix seconds, the replay payload."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from engine.config import Config, MemoryConfig
from engine.home import Home
from engine.memory.entries import Target
from engine.memory.service import MemoryService

REPLAY_KEYS = {"add": {"content"}, "replace": {"old_text", "content"}, "remove": {"old_text"}}


def their_record(folder: Path, pid: str, payload: dict[str, Any], at: float) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    record = {
        "id": pid,
        "subsystem": "memory",
        "action": payload.get("action", ""),
        "summary": f"{payload['action']} from the other tool",
        "origin": "background_review",
        "created_at": at,
        "payload": payload,
    }
    (folder / f"{pid}.json").write_text(json.dumps(record, indent=2), encoding="utf-8")


def replayable_by_them(record: dict[str, Any]) -> bool:
    """What the other tool needs of a record to list and approve it."""
    payload = record["payload"]
    action = payload.get("action")
    if not isinstance(record.get("created_at"), int | float):
        return False
    if action == "batch":
        return isinstance(payload.get("operations"), list)
    return action in REPLAY_KEYS and REPLAY_KEYS[action] <= payload.keys()


@pytest.fixture
def gated(home: Home) -> MemoryService:
    return MemoryService(home, Config(memory=MemoryConfig(write_approval=True)))


def test_their_records_are_listed_in_order_and_approved(home: Home, gated: MemoryService) -> None:
    now = time.time()
    folder = home.pending_dir / "memory"
    their_record(
        folder, "a1b2c3d4", {"action": "add", "target": "user", "content": "Name: Ada"}, now - 60
    )
    staged = gated.write(Target.MEMORY, [{"action": "add", "content": "Uses Podman"}])
    their_record(
        folder,
        "0badc0de",
        {"action": "replace", "target": "memory", "old_text": "Podman", "content": "Uses Docker"},
        now + 60,
    )
    ids = [r.id for r in gated.pending()]
    assert ids == ["a1b2c3d4", staged["pending_id"], "0badc0de"], "oldest first, mixed writers"

    for pending_id in ids:
        gated.approve(pending_id)
    assert gated.read(Target.USER).entries == ["Name: Ada"]
    assert gated.read(Target.MEMORY).entries == ["Uses Docker"]
    assert gated.pending() == []


def test_cairn_records_are_in_the_shape_they_replay(home: Home, gated: MemoryService) -> None:
    gated.write(Target.MEMORY, [{"action": "add", "content": "Uses Podman"}])
    gated.write(
        Target.MEMORY,
        [{"action": "add", "content": "a"}, {"action": "add", "content": "b"}],
    )
    records = [json.loads(p.read_text()) for p in (home.pending_dir / "memory").glob("*.json")]
    assert len(records) == 2
    assert all(replayable_by_them(r) for r in records), records
    # Sorting by created_at, as they do, works beside their numeric times.
    their_record(home.pending_dir / "memory", "12345678", {"action": "add", "content": "x"}, 1.0)
    records = [json.loads(p.read_text()) for p in (home.pending_dir / "memory").glob("*.json")]
    assert sorted(records, key=lambda r: r["created_at"])[0]["id"] == "12345678"


def test_an_older_cairn_record_with_iso_time_still_lists(home: Home, gated: MemoryService) -> None:
    folder = home.pending_dir / "memory"
    folder.mkdir(parents=True)
    old = {
        "id": "cafebabe",
        "subsystem": "memory",
        "action": "add",
        "summary": "add 'Uses zsh'",
        "origin": "foreground",
        "created_at": "2026-05-09T10:15:00.000000+00:00",
        "payload": {"target": "memory", "operations": [{"action": "add", "content": "Uses zsh"}]},
    }
    (folder / "cafebabe.json").write_text(json.dumps(old))
    [record] = gated.pending()
    assert record.created_at == pytest.approx(1778321700.0)
    gated.approve("cafebabe")
    assert gated.read(Target.MEMORY).entries == ["Uses zsh"]
