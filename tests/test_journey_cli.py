"""``cairn journey list | show | edit | delete``, in process (and once as a real child)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from engine.cli import main
from engine.home import Home
from engine.memory.entries import Target
from engine.memory.service import MemoryService
from tests.conftest import run_cairn


def cairn(capsys: pytest.CaptureFixture[str], home: Home, *args: str) -> tuple[int, str, str]:
    code = main([*args, "--home", str(home.root)])
    out, err = capsys.readouterr()
    return code, out, err


def listed(capsys: pytest.CaptureFixture[str], home: Home) -> list[dict[str, object]]:
    code, out, _ = cairn(capsys, home, "journey", "list", "--json")
    assert code == 0
    return json.loads(out)["chunks"]


@pytest.fixture
def filled(service: MemoryService) -> MemoryService:
    service.write(Target.MEMORY, [{"action": "add", "content": "Deploys go through CI"}])
    service.write(Target.MEMORY, [{"action": "add", "content": "Staging DB is db2"}])
    service.write(Target.USER, [{"action": "add", "content": "Name: Ada"}])
    return service


def test_list_shows_versioned_ids_and_real_times(
    capsys: pytest.CaptureFixture[str], home: Home, filled: MemoryService
) -> None:
    chunks = listed(capsys, home)
    assert [c["text"] for c in chunks] == [
        "Deploys go through CI",
        "Staging DB is db2",
        "Name: Ada",
    ]
    assert str(chunks[0]["id"]).startswith("memory:memory:0#")
    assert str(chunks[2]["id"]).startswith("memory:user:0#")
    events = {e.entry_after: e.at for e in filled.events()}
    assert chunks[1]["learned_at"] == events["Staging DB is db2"]
    code, out, _ = cairn(capsys, home, "journey", "list")
    assert code == 0 and str(chunks[1]["id"]) in out and "Staging DB is db2" in out


def test_list_at_a_past_event_shows_memory_as_it_was(
    capsys: pytest.CaptureFixture[str], home: Home, filled: MemoryService
) -> None:
    first = filled.events()[-1].id
    code, out, _ = cairn(capsys, home, "journey", "list", "--at", f"#{first}", "--json")
    data = json.loads(out)
    assert code == 0
    assert [e["text"] for e in data["memory"]] == ["Deploys go through CI"]
    assert data["user"] == []


def test_show_gives_text_versions_and_accepts_upstreams_profile_ids(
    capsys: pytest.CaptureFixture[str], home: Home, filled: MemoryService
) -> None:
    filled.write(Target.USER, [{"action": "replace", "old_text": "Ada", "content": "Name: Ada L."}])
    code, out, _ = cairn(capsys, home, "journey", "show", "memory:profile:0", "--json")
    data = json.loads(out)
    assert code == 0 and data["text"] == "Name: Ada L."
    assert [v["text"] for v in data["versions"]] == ["Name: Ada", "Name: Ada L."]
    assert [v["action"] for v in data["versions"]] == ["add", "replace"]


def test_edit_with_text_then_undo(
    capsys: pytest.CaptureFixture[str], home: Home, filled: MemoryService
) -> None:
    ident = str(listed(capsys, home)[1]["id"])
    code, out, _ = cairn(capsys, home, "journey", "edit", ident, "Staging DB is db3", "--json")
    result = json.loads(out)
    assert code == 0 and result["status"] == "applied"
    assert filled.read(Target.MEMORY).entries[1] == "Staging DB is db3"
    code, _, _ = cairn(capsys, home, "memory", "undo", str(result["event_id"]))
    assert code == 0 and filled.read(Target.MEMORY).entries[1] == "Staging DB is db2"


def test_edit_opens_the_editor_on_the_entry(
    capsys: pytest.CaptureFixture[str],
    home: Home,
    filled: MemoryService,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen = tmp_path / "seen.txt"
    script = tmp_path / "fake_editor.py"
    script.write_text(
        "import sys, pathlib\n"
        "p = pathlib.Path(sys.argv[1])\n"
        f"pathlib.Path({str(seen)!r}).write_text(p.read_text())\n"
        "p.write_text(p.read_text().replace('db2', 'db9'))\n",
        encoding="utf-8",
    )
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", f"{sys.executable} {script}")
    # A bare position is fine here: the editor shows which entry is being edited.
    code, out, _ = cairn(capsys, home, "journey", "edit", "memory:memory:1")
    assert code == 0, out
    assert seen.read_text().strip() == "Staging DB is db2"
    assert filled.read(Target.MEMORY).entries[1] == "Staging DB is db9"
    assert "new id: memory:memory:1#" in out
    # An editor that fails changes nothing.
    monkeypatch.setenv("EDITOR", f"{sys.executable} -c 'raise SystemExit(3)'")
    code, _, err = cairn(capsys, home, "journey", "edit", "memory:memory:1")
    assert code == 1 and "exited with 3" in err
    assert filled.read(Target.MEMORY).entries[1] == "Staging DB is db9"


def test_a_stale_id_is_refused_with_exit_1_and_nothing_changes(
    capsys: pytest.CaptureFixture[str], home: Home, filled: MemoryService
) -> None:
    ids = [str(c["id"]) for c in listed(capsys, home)]
    filled.write(Target.MEMORY, [{"action": "remove", "old_text": "Deploys"}])
    before = filled.read(Target.MEMORY).entries
    code, out, _ = cairn(capsys, home, "journey", "delete", ids[1], "--json")
    refusal = json.loads(out)
    assert code == 1 and refusal["error"] == "stale"
    assert "that entry is now memory:memory:0#" in refusal["message"]
    code, _, err = cairn(capsys, home, "journey", "edit", ids[0], "new text")
    assert code == 1 and "no longer in memory" in err
    assert filled.read(Target.MEMORY).entries == before


def test_delete_refuses_a_bare_position_unless_told_what_to_expect(
    capsys: pytest.CaptureFixture[str], home: Home, filled: MemoryService
) -> None:
    code, _, err = cairn(capsys, home, "journey", "delete", "memory:memory:0")
    assert code == 1 and "names a position" in err
    code, _, _ = cairn(capsys, home, "journey", "delete", "memory:memory:0", "--expect", "Deploys")
    assert code == 0
    assert filled.read(Target.MEMORY).entries == ["Staging DB is db2"]


def test_the_real_entry_point_lists_and_deletes(home: Home, filled: MemoryService) -> None:
    listing = run_cairn("journey", "list", "--json", home=home)
    assert listing.returncode == 0, listing.stderr
    ident = json.loads(listing.stdout)["chunks"][0]["id"]
    deleted = run_cairn("journey", "delete", ident, home=home)
    assert deleted.returncode == 0, deleted.stderr
    assert "undo with: cairn memory undo" in deleted.stdout
    assert filled.read(Target.MEMORY).entries == ["Staging DB is db2"]
