"""Memory files and the pending queue as other tools and unlucky users leave them: text
appended without delimiters, byte-order marks, unreadable bytes, broken or forged pending
records. Nothing is lost, nothing is applied twice, every failure says what is wrong."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine.cli import main
from engine.config import Config, MemoryConfig
from engine.home import Home
from engine.memory.entries import Target, parse, render
from engine.memory.errors import MemoryToolError
from engine.memory.service import MemoryService
from tests.conftest import REPO

M = Target.MEMORY
FOREIGN = "\n\n" + "\n".join(
    f"Note {n} from another tool: kept by it, not by Cairn." for n in range(45)
)


def service(home: Home, **memory: object) -> MemoryService:
    return MemoryService(home, Config(memory=MemoryConfig(**memory)))


def backups(home: Home) -> list[Path]:
    return sorted(p for p in home.memories_dir.iterdir() if ".bak." in p.name)


# -- text Cairn did not write ----------------------------------------------------------------


def test_a_replace_over_foreign_text_backs_it_up_and_says_so(home: Home) -> None:
    """Tried: another tool appends ~2.4 KB without § delimiters to MEMORY.md (it joins the last
    entry), then `replace` of that entry. The file used to shrink to one line with no backup.
    Now the file as it was is kept verbatim beside it and the result says so."""
    mem = service(home)
    mem.write(M, [{"action": "add", "content": "User prefers tea"}])
    mem.write(M, [{"action": "add", "content": "Deploys go through CI"}])
    path = home.memories_dir / "MEMORY.md"
    with path.open("a", encoding="utf-8") as handle:
        handle.write(FOREIGN + "\n")
    appended = path.read_bytes()
    result = mem.write(
        M, [{"action": "replace", "old_text": "Deploys", "content": "Deploys use GitHub CI"}]
    )
    [backup] = backups(home)
    assert backup.read_bytes() == appended
    assert backup.name in result["message"] and "outside Cairn" in result["message"]


def test_an_add_beside_foreign_text_makes_no_backup(home: Home) -> None:
    """Tried: the same foreign append, then an add: nothing of it is lost, so no copy is made
    and the foreign text is still in the file."""
    mem = service(home, memory_char_limit=5000)
    mem.write(M, [{"action": "add", "content": "User prefers tea"}])
    with (home.memories_dir / "MEMORY.md").open("a", encoding="utf-8") as handle:
        handle.write(FOREIGN)
    mem.write(M, [{"action": "add", "content": "Another fact"}])
    assert backups(home) == []
    assert "Note 44 from another tool" in (home.memories_dir / "MEMORY.md").read_text("utf-8")


def test_undo_returns_to_a_state_that_existed_whatever_the_cap(home: Home) -> None:
    """Tried: the foreign append pushes MEMORY.md past its limit, a replace cuts it back,
    then `cairn memory undo` (refused as over the limit before). Undo restores the entry
    with the foreign text, over budget, as it was."""
    mem = service(home)
    mem.write(M, [{"action": "add", "content": "Deploys go through CI"}])
    path = home.memories_dir / "MEMORY.md"
    with path.open("a", encoding="utf-8") as handle:
        handle.write(FOREIGN)
    long_entry = parse(path.read_text("utf-8"))[0]
    assert len(long_entry) > 2200
    mem.write(M, [{"action": "replace", "old_text": "Deploys", "content": "Deploys use CI"}])
    assert main(["memory", "undo", "--home", str(home.root)]) == 0
    assert parse(path.read_text("utf-8")) == [long_entry]


# -- byte-order marks -----------------------------------------------------------------------


def test_a_bom_never_becomes_part_of_an_entry(home: Home) -> None:
    """Tried: USER.md saved by a Windows editor with a UTF-8 byte-order mark. The first entry
    reads without it (it was counted and sent to the model), and adding the same text again
    is recognised as already there."""
    home.memories_dir.mkdir(parents=True)
    (home.memories_dir / "USER.md").write_bytes("\ufeffName: Ada\n§\nTimezone: Berlin".encode())
    mem = service(home)
    current = mem.read(Target.USER)
    assert current.entries == ["Name: Ada", "Timezone: Berlin"]
    assert "\ufeff" not in mem.prompt_snapshot()
    result = mem.write(Target.USER, [{"action": "add", "content": "Name: Ada"}])
    assert result["status"] == "unchanged"


def test_a_bom_in_a_pending_record_or_on_stdin_is_read(home: Home, tmp_path: Path) -> None:
    """Tried: a pending record re-saved with a BOM (it was then skipped as unreadable) and an
    operations file with a BOM for `cairn memory apply`. Both are read."""
    mem = service(home, write_approval=True)
    staged = mem.write(M, [{"action": "add", "content": "Staged fact"}])
    record = home.pending_memory_dir / f"{staged['pending_id']}.json"
    record.write_bytes(b"\xef\xbb\xbf" + record.read_bytes())
    assert [r.id for r in mem.pending()] == [staged["pending_id"]]
    ops = tmp_path / "ops.json"
    ops.write_bytes(b"\xef\xbb\xbf" + json.dumps([{"action": "add", "content": "A"}]).encode())
    assert main(["memory", "apply", str(ops), "--home", str(home.root)]) == 0


# -- unreadable memory ----------------------------------------------------------------------


def test_journey_list_says_an_unreadable_file_is_unreadable(
    home: Home, capsys: pytest.CaptureFixture[str]
) -> None:
    """Tried: invalid UTF-8 in MEMORY.md, then `cairn journey list` (it said "memory is empty",
    exit 0, and --json `{"ok": true, "chunks": []}`). One line naming the byte, exit 1."""
    home.memories_dir.mkdir(parents=True)
    (home.memories_dir / "MEMORY.md").write_bytes(b"A fact \xc3\x28 broken\n")
    code = main(["journey", "list", "--home", str(home.root)])
    err = capsys.readouterr().err
    assert code == 1 and "not valid UTF-8" in err and err.count("\n") == 1
    code = main(["journey", "list", "--json", "--home", str(home.root)])
    payload = json.loads(capsys.readouterr().out)
    assert code == 1 and payload["ok"] is False and payload["error"] == "file"
    # The other file can still be listed on its own.
    assert main(["journey", "list", "--target", "user", "--home", str(home.root)]) == 0


# -- the pending queue -------------------------------------------------------------------


def _stage(mem: MemoryService, content: str) -> Path:
    staged = mem.write(M, [{"action": "add", "content": content}])
    return mem.home.pending_memory_dir / f"{staged['pending_id']}.json"


def test_a_record_with_a_bad_target_is_skipped_and_the_others_approved(
    home: Home, capsys: pytest.CaptureFixture[str]
) -> None:
    """Tried: one pending record whose target is "bogus" among good ones, then
    `cairn memory approve all` (a traceback, and the others blocked). The good ones are
    applied; the bad one is listed as invalid, skipped and kept for inspection; `pending`
    shows it as invalid; `approve <id>` of it is one line."""
    mem = service(home, write_approval=True)
    first = _stage(mem, "First fact")
    bad = _stage(mem, "Bad fact")
    last = _stage(mem, "Last fact")
    data = json.loads(bad.read_text("utf-8"))
    data["payload"]["target"] = "bogus"
    bad.write_text(json.dumps(data), encoding="utf-8")
    base = ["--home", str(home.root)]
    assert main(["memory", "pending", *base]) == 0
    assert "invalid" not in capsys.readouterr().out  # readable, the target is checked on use
    code = main(["memory", "approve", bad.stem, *base])
    err = capsys.readouterr().err
    assert code == 1 and "neither memory nor user" in err and err.count("\n") == 1
    code = main(["memory", "approve", "all", *base])
    out = capsys.readouterr().out
    assert code == 0 or "neither memory nor user" in out
    entries = parse((home.memories_dir / "MEMORY.md").read_text("utf-8"))
    assert entries == ["First fact", "Last fact"]
    assert bad.exists() and not first.exists() and not last.exists()


def test_a_record_naming_another_id_is_never_applied(
    home: Home, capsys: pytest.CaptureFixture[str]
) -> None:
    """Tried: a record whose id differs from its file name (it was applied, reported failed,
    left queued, and could be applied again). It is listed as invalid and skipped, nothing is
    applied, and `reject` clears it."""
    mem = service(home, write_approval=True)
    record = _stage(mem, "Forged fact")
    data = json.loads(record.read_text("utf-8"))
    data["id"] = "deadbeef"
    record.write_text(json.dumps(data), encoding="utf-8")
    base = ["--home", str(home.root)]
    assert main(["memory", "pending", "--json", *base]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["pending"] == [] and payload["invalid"][0]["file"] == record.name
    main(["memory", "approve", "all", "--json", *base])
    results = json.loads(capsys.readouterr().out)["results"]
    assert results[0]["skipped"] and "file name" in results[0]["message"]
    assert not (home.memories_dir / "MEMORY.md").exists()
    assert main(["memory", "reject", record.stem, *base]) == 0
    assert not record.exists()


def test_approving_twice_applies_once(home: Home) -> None:
    """Tried: a record approved, then its file put back (a crash between applying and removing
    it, or a second approver), then approved again. The second approval applies nothing and
    removes the leftover file."""
    mem = service(home, write_approval=True)
    record = _stage(mem, "Counted once")
    saved = record.read_bytes()
    first = mem.approve(record.stem)
    assert first["status"] == "applied"
    service(home).write(M, [{"action": "remove", "old_text": "Counted once"}])
    record.write_bytes(saved)  # the leftover: replaying it would add the entry again
    again = mem.approve(record.stem)
    assert again["status"] == "unchanged" and "already settled" in again["message"]
    assert not record.exists()
    assert render(mem.read(M).entries) == ""


def test_a_record_with_broken_operations_is_invalid_not_a_crash(home: Home) -> None:
    """Tried: a record whose operations are not a list of operations. Approving it is an
    `invalid` error naming the record; it stays queued."""
    mem = service(home, write_approval=True)
    record = _stage(mem, "Fact")
    data = json.loads(record.read_text("utf-8"))
    data["payload"]["operations"] = {"action": 5}
    record.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(MemoryToolError) as err:
        mem.approve(record.stem)
    assert err.value.code == "invalid" and record.stem in err.value.message
    assert record.exists()


# -- two Cairn processes on one home ------------------------------------------------------

WRITER = """
import sys
from engine.config import Config
from engine.home import Home
from engine.memory.entries import Target
from engine.memory.service import MemoryService

from pathlib import Path
service = MemoryService(Home(Path(sys.argv[1])), Config())
print("ready", flush=True)
for n in range(200):
    service.write(Target.MEMORY, [{"action": "add", "content": f"Fact {n}"}])
    service.write(Target.MEMORY, [{"action": "remove", "old_text": f"Fact {n}"}])
"""


def test_another_cairn_process_writing_is_never_taken_for_an_external_edit(home: Home) -> None:
    """Tried: this process rescans for outside edits in a loop (as the desktop app does on
    every file change) while a second Cairn process makes 400 writes. Phantom
    `external_edit` events used to appear, recorded just before the real writes (a remove
    and re-add that never happened). Now the rescan compares under the file's lock, against
    the last recorded state: none appear, and the history replays to the file."""
    mem = service(home)
    mem.write(M, [{"action": "add", "content": "Seed"}])
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(home.root)],
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd=REPO,
    )
    assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
    rescans = 0
    while proc.poll() is None:
        mem.rescan()
        rescans += 1
    assert proc.returncode == 0 and rescans > 50
    events = mem.events(M)
    assert [e for e in events if e.action == "external_edit"] == []
    assert sum(1 for e in events if e.action in ("add", "remove")) == 401
    assert parse(events[0].state_after or "") == mem.read(M).entries == ["Seed"]


@pytest.mark.parametrize("created_at", [1.7e12, "Infinity", -5])
def test_a_record_with_an_impossible_time_is_listed_as_invalid(
    home: Home, capsys: pytest.CaptureFixture[str], created_at: object
) -> None:
    """Tried: a staged record whose created_at is in milliseconds, infinite or negative (a
    hand edit or another tool). Listing the queue used to crash on formatting its time."""
    mem = service(home, write_approval=True)
    record = _stage(mem, "Timed oddly")
    data = json.loads(record.read_text("utf-8"))
    data["created_at"] = float(created_at) if isinstance(created_at, str) else created_at
    record.write_text(json.dumps(data), encoding="utf-8")
    assert main(["memory", "pending", "--json", "--home", str(home.root)]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["pending"] == [] and payload["invalid"][0]["file"] == record.name
