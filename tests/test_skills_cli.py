"""`cairn skills` as a user would type it, and the usage ledger under concurrent writers.

Most commands run through ``engine.cli.main`` in this process (a child process costs a second
or more of imports per command); one test runs the real entry point end to end.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from typing import Any

import pytest

from engine.cli import main
from engine.config import Config, SkillsConfig, update_config
from engine.home import Home
from engine.skills.manage import SkillManager
from engine.skills.usage import UsageBook
from tests.conftest import REPO, run_cairn


class Cli:
    def __init__(self, home: Home, capsys: pytest.CaptureFixture[str], mp: pytest.MonkeyPatch):
        self.home, self.capsys, self.mp = home, capsys, mp

    def run(self, *args: str, stdin: str = "") -> tuple[int, str, str]:
        self.capsys.readouterr()
        self.mp.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin.encode("utf-8"))))
        code = main(["skills", *args, "--home", str(self.home.root)])
        out, err = self.capsys.readouterr()
        return code, out, err

    def json(self, *args: str, stdin: str = "", ok: bool = True) -> Any:
        code, out, err = self.run(*args, "--json", stdin=stdin)
        assert (code == 0) is ok, (code, out, err)
        return json.loads(out)


@pytest.fixture
def cli(home: Home, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Cli:
    return Cli(home, capsys, monkeypatch)


def test_the_real_entry_point(home: Home) -> None:
    proc = run_cairn(
        "skills", "create", "smoke", "-d", "Smoke test", "-b", "Steps.", "--json", home=home
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["status"] == "applied"
    proc = run_cairn("skills", "show", "ghost", home=home)
    assert proc.returncode == 1 and proc.stderr.startswith("cairn: no skill named 'ghost'")


def test_create_list_show_patch_delete(home: Home, cli: Cli) -> None:
    body = "1. git bisect start\n2. git bisect bad\n"
    made = cli.json(
        "create", "git-bisect", "-d", "Find a regression", "--body-file", "-", "--category", "git",
        stdin=body,
    )  # fmt: skip
    assert made["status"] == "applied" and made["skill"] == "git/git-bisect"
    listed = cli.json("list")
    [row] = listed["skills"]
    assert (row["ref"], row["trust"], row["uses"]) == ("git/git-bisect", "trusted", 0)
    shown = cli.json("show", "git-bisect")
    assert "2. git bisect bad" in shown["content"] and shown["withheld"] is False
    patched = cli.json("patch", "git-bisect", "--find", "bad", "--replace", "bad HEAD")
    assert patched["status"] == "applied"
    assert "bisect bad HEAD" in cli.json("show", "git/git-bisect")["content"]
    # Plain-text output too, as a person would read it.
    text = cli.run("list")[1]
    assert text.startswith("git/git-bisect") and "trusted" in text
    cli.json("delete", "git-bisect")
    assert cli.json("list")["skills"] == []


def test_refusals_exit_1_with_the_reason(home: Home, cli: Cli) -> None:
    cli.json("create", "s", "-d", "A skill", "-b", "Steps.")
    # Tried: an ambiguous patch, a missing skill, a critical finding, a bad name.
    cli.json("patch", "s", "--find", "s", "--replace", "t", ok=False)  # 's' is everywhere
    missing = cli.json("show", "ghost", ok=False)
    assert missing["error"] == "not_found"
    blocked = cli.json("patch", "s", "--find", "A skill", "--replace", "rm -rf /", ok=False)
    assert blocked["error"] == "blocked" and "destructive.rm_root" in blocked["message"]
    bad = cli.json("create", "Bad", "-d", "x", "-b", "Steps.", ok=False)
    assert bad["error"] == "invalid"
    code, _out, err = cli.run("show", "ghost")
    assert code == 1 and err.startswith("cairn: no skill named 'ghost'")
    unreadable = cli.json("create", "t", "-d", "x", "--body-file", "/nonexistent", ok=False)
    assert unreadable["error"] == "invalid" and "/nonexistent" in unreadable["message"]


def test_list_reports_a_broken_skill_and_still_lists_the_others(home: Home, cli: Cli) -> None:
    cli.json("create", "good", "-d", "Fine", "-b", "Steps.")
    broken = home.skills_dir / "bad" / "SKILL.md"
    broken.parent.mkdir(parents=True)
    broken.write_text("---\nname: bad\ndescription: [unclosed\n---\n")
    listed = cli.json("list")
    assert [s["name"] for s in listed["skills"]] == ["good"]
    [problem] = listed["problems"]
    assert problem["path"] == "bad/SKILL.md" and problem["line"] == 3


def test_show_inspects_a_withheld_skill(home: Home, cli: Cli) -> None:
    folder = home.skills_dir / "dropped"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        "---\nname: dropped\ndescription: d\n---\nRun cat ~/.aws/credentials\n"
    )
    shown = cli.json("show", "dropped")
    assert shown["trust"] == "community" and shown["withheld"] is True
    assert shown["findings"][0]["id"] == "credential_exposure.read_secret_file"
    assert cli.json("trust", "dropped", "trusted")["trust"] == "trusted"
    assert cli.json("show", "dropped")["withheld"] is False


def test_pending_approve_and_reject(home: Home, cli: Cli) -> None:
    update_config(home, {"skills": {"write_approval": True}})
    agent = SkillManager(home, Config(skills=SkillsConfig(write_approval=True)), author="agent")
    first = agent.run({"action": "create", "name": "one", "description": "d", "body": "b"})
    second = agent.run({"action": "create", "name": "two", "description": "d", "body": "b"})
    listed = cli.json("pending")
    assert [r["id"] for r in listed["pending"]] == [first["pending_id"], second["pending_id"]]
    assert all(r["subsystem"] == "skills" for r in listed["pending"])
    assert cli.json("pending", "approve", first["pending_id"])["status"] == "applied"
    assert cli.json("pending", "reject", "all")["ok"]
    assert cli.json("pending")["pending"] == []
    assert [s["name"] for s in cli.json("list")["skills"]] == ["one"]
    assert cli.json("pending", "approve", "deadbeef", ok=False)["error"] == "not_found"
    code, _out, err = cli.run("pending", "approve")
    assert code == 1 and "needs an id" in err


_RECORDER = """
import sys
from pathlib import Path
from engine.skills.usage import UsageBook
book = UsageBook(Path(sys.argv[1]))
for _ in range(int(sys.argv[2])):
    book.record("shared")
"""


def test_usage_counts_survive_concurrent_processes(home: Home) -> None:
    home.skills_dir.mkdir(parents=True)
    procs = [
        subprocess.Popen([sys.executable, "-c", _RECORDER, str(home.skills_dir), "25"], cwd=REPO)
        for _ in range(4)
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0, 0]
    assert UsageBook(home.skills_dir).counts()["shared"].uses == 100


def test_unreadable_usage_ledger_is_kept_aside(home: Home) -> None:
    home.skills_dir.mkdir(parents=True)
    ledger = home.skills_dir / ".usage.json"
    ledger.write_text("{not json")
    book = UsageBook(home.skills_dir)
    assert book.counts() == {}  # reading never fails
    assert book.record("a") == 1
    [aside] = home.skills_dir.glob(".usage.json.corrupt-*")
    assert aside.read_text() == "{not json"  # the damaged file is kept for inspection
