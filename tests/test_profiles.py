"""Profiles: resolution of the active profile, the CLI, cloning, and isolation of every store.

The isolation proof runs real work in one profile (chat turns writing memory, a staged write,
a cron run, a config change, a skill, a fact store) through the real CLI, then checks that no
byte changed anywhere else under the root, and that the other profile's agent cannot find any
of it.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from engine.config import load_config, update_config
from engine.db import dispose_engines
from engine.home import ROOT_PROFILE, Home, HomeError, resolve_home
from engine.memory.entries import Target
from engine.memory.service import MemoryService
from engine.profiles import ProfileError, Profiles
from engine.sessions.store import SessionStore
from tests.inprocess import cairn_here
from tests.scripted_server import ScriptedServer, reply, tool_calls


def ok(proc: subprocess.CompletedProcess[str], code: int = 0) -> subprocess.CompletedProcess[str]:
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    return proc


def as_json(proc: subprocess.CompletedProcess[str]) -> Any:
    return json.loads(proc.stdout)


def snapshot(root: Path, *, skip: tuple[Path, ...] = ()) -> dict[str, str]:
    """Every file, folder and link under ``root`` with its content hash (``skip``: subtrees)."""
    seen: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        if any(path == s or s in path.parents for s in skip):
            continue
        key = path.relative_to(root).as_posix()
        if path.is_symlink():
            seen[key] = "link:" + os.readlink(path)
        elif path.is_dir():
            seen[key] = "dir"
        else:
            seen[key] = hashlib.sha256(path.read_bytes()).hexdigest()
    return seen


# -- resolution --------------------------------------------------------------------------------


def test_active_profile_file_and_its_precedence(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "profiles" / "work").mkdir(parents=True)
    assert resolve_home(root, environ={}).root == root
    (root / "active_profile").write_text("work\n")
    assert resolve_home(root, environ={}).root == root / "profiles" / "work"
    # An explicit --profile beats the file; "default" is the root whatever is active.
    assert resolve_home(root, "other", environ={}).root == root / "profiles" / "other"
    assert resolve_home(root, ROOT_PROFILE, environ={}).root == root
    # The file lives in the root, so it follows CAIRN_HOME as well as --home.
    assert resolve_home(None, environ={"CAIRN_HOME": str(root)}).root == root / "profiles" / "work"
    # --home straight at a profile folder: that folder, no second hop.
    assert resolve_home(root / "profiles" / "work", environ={}).root == root / "profiles" / "work"


def test_a_damaged_pointer_is_an_error_not_a_silent_fall_back(tmp_path: Path) -> None:
    (tmp_path / "active_profile").write_text("../../etc\n")
    with pytest.raises(HomeError, match="not a profile name"):
        resolve_home(tmp_path, environ={})
    # The root stays reachable explicitly, to repair it.
    assert resolve_home(tmp_path, ROOT_PROFILE, environ={}).root == tmp_path


def test_every_home_path_of_a_profile_lies_inside_it(tmp_path: Path) -> None:
    """Each store a Home names (now and any added later) is under its own profile folder."""
    root = Home(tmp_path)
    a, b = root.profile("a"), root.profile("b")
    names = [
        n
        for n in dir(Home)
        if isinstance(getattr(Home, n, None), property) and n not in {"profiles_dir"}
    ]
    assert {"memories_dir", "state_db", "skills_dir", "pending_dir", "memory_store_db"} <= set(
        names
    )
    assert {f.name for f in fields(Home)} == {"root"}  # nothing else a profile could share
    for name in names:
        pa, pb, pr = getattr(a, name), getattr(b, name), getattr(root, name)
        assert a.root in pa.parents, name
        assert b.root in pb.parents, name
        assert pa != pb and pa != pr and pb != pr, name
        # The root's own store is never inside a profile folder.
        assert root.profiles_dir not in pr.parents, name


# -- the CLI -----------------------------------------------------------------------------------


def test_create_list_use_show_delete(home: Home) -> None:
    ok(cairn_here("memory", "add", "Root fact", home=home))
    created = as_json(ok(cairn_here("profile", "create", "work", "--json", home=home)))
    assert created["path"] == str(home.root / "profiles" / "work")
    assert (home.root / "profiles" / "work").is_dir()

    listed = as_json(ok(cairn_here("profile", "list", "--json", home=home)))["profiles"]
    assert [(p["name"], p["active"]) for p in listed] == [("default", True), ("work", False)]
    assert listed[0]["memory_chars"] == len("Root fact") and listed[1]["memory_chars"] == 0

    ok(cairn_here("profile", "use", "work", home=home))
    assert (home.root / "active_profile").read_text().strip() == "work"
    ok(cairn_here("memory", "add", "Work fact", home=home))  # no --profile: the active one
    assert "Work fact" in (home.profile("work").memories_dir / "MEMORY.md").read_text()
    assert "Work fact" not in (home.memories_dir / "MEMORY.md").read_text()
    shown = as_json(ok(cairn_here("profile", "show", "--json", home=home)))
    assert shown["name"] == "work" and shown["active"] and shown["memory_chars"] == 9

    refused = ok(cairn_here("profile", "delete", "work", "--yes", "--json", home=home), 1)
    assert as_json(refused)["error"] == "active"
    ok(cairn_here("profile", "use", "default", home=home))
    assert not (home.root / "active_profile").exists()
    unconfirmed = ok(cairn_here("profile", "delete", "work", "--json", home=home, stdin=""), 1)
    assert as_json(unconfirmed)["error"] == "confirm"
    assert (home.root / "profiles" / "work").is_dir()
    ok(cairn_here("profile", "delete", "work", "--yes", home=home))
    assert not (home.root / "profiles" / "work").exists()
    assert [p.name for p in (home.root / "profiles").iterdir() if not p.name.startswith(".")] == []


@pytest.mark.parametrize(
    ("args", "code", "error"),
    [
        (["create", "default"], 1, "invalid"),
        (["create", "Bad Name"], 1, "invalid"),
        (["use", "ghost"], 1, "not_found"),
        (["delete", "ghost", "--yes"], 1, "not_found"),
        (["delete", "default", "--yes"], 1, "refused"),
        (["create", "x", "--clone", "--from", "ghost"], 1, "not_found"),
    ],
)
def test_refusals(home: Home, args: list[str], code: int, error: str) -> None:
    proc = ok(cairn_here("profile", *args, "--json", home=home), code)
    assert as_json(proc)["error"] == error


def test_create_refuses_an_existing_profile(home: Home) -> None:
    ok(cairn_here("--profile", "lazy", "memory", "add", "made by use", home=home))
    proc = ok(cairn_here("profile", "create", "lazy", "--json", home=home), 1)
    assert as_json(proc)["error"] == "exists"
    assert "made by use" in (home.profile("lazy").memories_dir / "MEMORY.md").read_text()


def test_a_running_cron_job_blocks_deleting_its_profile(home: Home) -> None:
    from engine import cron

    profiles = Profiles(home)
    profiles.create("busy")
    with cron._run_lock(profiles.home("busy"), "job") as held:
        assert held
        with pytest.raises(ProfileError, match="job") as caught:
            profiles.delete("busy")
        assert caught.value.code == "busy"
    assert profiles.exists("busy")
    profiles.delete("busy")
    assert not profiles.exists("busy")


# -- cloning -----------------------------------------------------------------------------------


def _fill_source(home: Home) -> None:
    update_config(home, {"model": {"provider": "openai", "base_url": "http://127.0.0.1:9/v1"}})
    home.soul_file.write_text("You are terse.\n")
    service = MemoryService(home)
    service.write(Target.MEMORY, [{"action": "add", "content": "Source fact"}])
    store = SessionStore.open(home)
    session = store.create_session(session_id="s-source", source="cli", title="About otters")
    store.add_message(session.id, "user", "tell me about otters")
    skill = home.skills_dir / "otters" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\nname: otters\ndescription: otter facts\n---\nBe nice to otters.\n")
    (home.pending_memory_dir).mkdir(parents=True)
    (home.pending_memory_dir / "0123abcd.json").write_text("{}")
    facts = sqlite3.connect(home.memory_store_db)
    facts.execute("CREATE TABLE facts (content TEXT)")
    facts.execute("INSERT INTO facts VALUES ('otters hold hands')")
    facts.commit()
    facts.close()
    (home.cron_dir).mkdir()
    (home.cron_dir / "jobs.yaml").write_text("jobs: []\n")
    dispose_engines()


def test_clone_copies_config_and_persona_only(home: Home) -> None:
    _fill_source(home)
    update_config(home, {"database": {"url": "postgresql+psycopg://u@db.example/shared"}})
    report = as_json(ok(cairn_here("profile", "create", "lite", "--clone", "--json", home=home)))
    lite = home.profile("lite")
    assert sorted(report["copied"]) == ["SOUL.md", "config.yaml"]
    assert sorted(p.name for p in lite.root.iterdir()) == ["SOUL.md", "config.yaml"]
    assert lite.soul_file.read_text() == "You are terse.\n"
    config = load_config(lite)
    assert config.model.base_url == "http://127.0.0.1:9/v1"
    # Sharing a session database would share sessions: the URL stays behind, with a note.
    assert config.database.url is None
    assert any("database.url" in w for w in report["warnings"])


def test_clone_all_copies_every_store_and_then_shares_nothing(home: Home) -> None:
    _fill_source(home)
    # A symlinked memory file (a dotfiles repo) must become a copy, not a second link.
    outside = home.root.parent / "dotfiles-USER.md"
    outside.write_text("Likes otters")
    os.symlink(outside, home.memories_dir / "USER.md")
    ok(cairn_here("profile", "create", "full", "--clone-all", home=home))
    full = home.profile("full")
    assert not any(p.name.endswith((".lock", "-wal", "-shm")) for p in full.root.rglob("*"))

    assert not (full.memories_dir / "USER.md").is_symlink()
    assert (full.memories_dir / "USER.md").read_text() == "Likes otters"
    assert MemoryService(full).read(Target.MEMORY).entries == ["Source fact"]
    assert [s.id for s in SessionStore.open(full).list_sessions()] == ["s-source"]
    found = as_json(ok(cairn_here("--profile", "full", "sessions", "search", "otters", "--json",
                                 home=home)))  # fmt: skip
    assert [r["session_id"] for r in found["results"]] == ["s-source"]
    assert (full.skills_dir / "otters" / "SKILL.md").is_file()
    assert (full.pending_memory_dir / "0123abcd.json").is_file()
    facts = sqlite3.connect(full.memory_store_db)
    assert facts.execute("SELECT content FROM facts").fetchall() == [("otters hold hands",)]
    facts.close()
    assert not full.cron_dir.exists() and not full.profiles_dir.exists()

    # From here on the two are independent.
    source_before = snapshot(home.root, skip=(home.profiles_dir, outside))
    ok(cairn_here("--profile", "full", "memory", "add", "Only in the copy", home=home))
    ok(cairn_here("--profile", "full", "memory", "add", "--target", "user", "Copy user note",
                 home=home))  # fmt: skip
    ok(cairn_here("--profile", "full", "sessions", "delete", "s-source", "--yes", home=home))
    dispose_engines()
    assert snapshot(home.root, skip=(home.profiles_dir,)) == source_before
    assert outside.read_text() == "Likes otters"
    assert [s.id for s in SessionStore.open(home).list_sessions()] == ["s-source"]


# -- isolation of every store ------------------------------------------------------------------


def test_nothing_crosses_profiles(model_home: Home, scripted: ScriptedServer) -> None:
    root = model_home
    ok(cairn_here("memory", "add", "ROOT-ONLY: the router is called lantern", home=root))
    ok(cairn_here("profile", "create", "a", "--clone", home=root))
    ok(cairn_here("profile", "create", "b", "--clone", home=root))
    a = root.profile("a")
    ok(cairn_here("--profile", "b", "memory", "add", "B-ONLY: the printer is called quill",
                 home=root))  # fmt: skip
    dispose_engines()
    outside_a = snapshot(root.root, skip=(a.root, root.active_profile_file))

    # -- work in profile a, chosen by `profile use` (no --profile from here on) --
    ok(cairn_here("profile", "use", "a", home=root))
    scripted.add(
        tool_calls(("memory", {"action": "add", "content": "A-ONLY: the build host is kiln"})),
        reply("Noted: kiln builds."),
    )
    ok(cairn_here("chat", "-q", "Remember that kiln is our build host", home=root))
    first_prompt = scripted.chat_requests()[0]["messages"][0]["content"]
    assert "lantern" not in first_prompt and "quill" not in first_prompt

    ok(cairn_here("memory", "approval", "on", home=root))  # a config change, in a only
    scripted.add(
        tool_calls(("memory", {"target": "user", "action": "add", "content": "Likes kiln"})),
        reply("Staged."),
    )
    ok(cairn_here("chat", "-q", "I like kiln", home=root))
    ok(cairn_here("cron", "add", "kilnwatch", "--schedule", "@daily", "--prompt",
                 "Is kiln up?", "--continuity", home=root))  # fmt: skip
    scripted.add(reply("kiln is up"))
    ok(cairn_here("cron", "run", "kilnwatch", home=root))
    skill = a.skills_dir / "kiln-deploy" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\nname: kiln-deploy\ndescription: deploy to kiln\n---\nSteps.\n")
    facts = sqlite3.connect(a.memory_store_db)
    facts.execute("CREATE TABLE facts (content TEXT)")
    facts.execute("INSERT INTO facts VALUES ('kiln runs the builds')")
    facts.commit()
    facts.close()
    dispose_engines()

    # Every store of a holds its part ...
    assert "kiln" in (a.memories_dir / "MEMORY.md").read_text()
    assert len(MemoryService(a).pending()) == 1
    assert len(SessionStore.open(a).list_sessions()) == 3
    assert list((a.cron_dir / "output" / "kilnwatch").glob("*.md"))
    assert load_config(a).memory.write_approval is True
    # ... and not one byte changed anywhere else under the root.
    dispose_engines()
    assert snapshot(root.root, skip=(a.root, root.active_profile_file)) == outside_a

    # -- the other profile and the root cannot see any of it --
    for other in ("b", "default"):
        home = root.profile(other)
        shown = as_json(ok(cairn_here("--profile", other, "memory", "show", "--json", home=root)))
        assert "kiln" not in json.dumps(shown)
        pending = as_json(ok(cairn_here("--profile", other, "memory", "pending", "--json",
                                       home=root)))  # fmt: skip
        assert pending["pending"] == []
        found = as_json(ok(cairn_here("--profile", other, "sessions", "search", "kiln", "--json",
                                     home=root)))  # fmt: skip
        assert found["results"] == []
        assert not (home.skills_dir / "kiln-deploy").exists()
        assert not home.memory_store_db.exists()
        assert not (home.cron_dir / "jobs.yaml").exists()
        assert load_config(home).memory.write_approval is False

    # b's agent, searching its past sessions, finds nothing of a's.
    ok(cairn_here("profile", "use", "b", home=root))
    scripted.add(
        tool_calls(("session_search", {"query": "kiln"})),
        reply("I found nothing about kiln."),
    )
    ok(cairn_here("chat", "-q", "What do you know about kiln?", home=root))
    request = scripted.chat_requests()[-1]
    system = request["messages"][0]["content"]
    assert "kiln" not in system and "quill" in system  # b's own memory, only
    tool_result = json.loads(next(m for m in request["messages"] if m["role"] == "tool")["content"])
    assert tool_result.get("results") == []

    # Looking into a is possible, but only when asked for, and read-only.
    dispose_engines()
    a_before = snapshot(a.root)
    peek = as_json(ok(cairn_here("--profile", "a", "sessions", "search", "kiln", "--readonly",
                                "--json", home=root)))  # fmt: skip
    assert peek["results"]
    assert snapshot(a.root) == a_before


def test_profile_list_reports_each_homes_contents(home: Home) -> None:
    _fill_source(home)
    Profiles(home).create("empty")
    infos = {i.name: i for i in Profiles(home).list()}
    root = infos["default"]
    assert root.sessions == 1 and root.skills == 1 and root.pending == 1
    assert root.memory_chars == len("Source fact") and root.model == "openai"
    empty = infos["empty"]
    assert (empty.sessions, empty.skills, empty.pending, empty.memory_chars) == (None, 0, 0, 0)
