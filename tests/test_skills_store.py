"""Skills on disk: front matter parsed with YAML, broken skills reported while the rest load."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from engine.home import Home
from engine.skills.store import (
    SkillError,
    find_skill,
    list_files,
    load_catalog,
    parse_skill_md,
    read_document,
)


def put(home: Home, rel: str, text: str | bytes) -> Path:
    path = home.skills_dir / rel / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def skill_md(name: str, description: str = "Does a thing", extra: str = "", body: str = "") -> str:
    return f"---\nname: {name}\ndescription: {description}\n{extra}---\n{body}"


def test_round_trip_of_all_fields(home: Home) -> None:
    put(
        home,
        "devops/deploy-app",
        skill_md(
            "deploy-app",
            "Deploy the web app to staging",
            "version: 1.10\ntags: [deploy, ssh]\nrelated_skills:\n  - rollback\nlicense: MIT\n",
            "\n# Steps\n1. Build\n",
        ),
    )
    (home.skills_dir / "devops/deploy-app/references").mkdir()
    (home.skills_dir / "devops/deploy-app/references/hosts.md").write_text("staging: s1\n")
    catalog = load_catalog(home)
    assert catalog.problems == []
    [skill] = catalog.skills
    assert (skill.ref, skill.category, skill.name) == ("devops/deploy-app", "devops", "deploy-app")
    # YAML reads `version: 1.10` as the float 1.1; it must come back as the author wrote it.
    assert skill.meta.version == "1.10"
    assert skill.meta.tags == ["deploy", "ssh"]
    assert skill.meta.related_skills == ["rollback"]
    assert skill.meta.model_extra == {"license": "MIT"}
    doc = read_document(skill)
    assert doc.body == "\n# Steps\n1. Build\n"
    assert doc.body_line == 10
    assert list_files(skill) == [("references/hosts.md", 12)]
    assert find_skill(home, "deploy-app").ref == "devops/deploy-app"
    assert find_skill(home, "devops/deploy-app").ref == "devops/deploy-app"


BROKEN = [
    # (what was tried, SKILL.md text, expected line, part of the message)
    ("bad YAML indentation", "---\nname: bad\ndescription: x\n  tags: [a\n---\n", 4, "not valid"),
    ("no front matter", "# Just markdown\n", 1, "must start with YAML front matter"),
    ("front matter never closed", "---\nname: bad\ndescription: x\n", 1, "not closed"),
    ("front matter is a list", "---\n- a\n- b\n---\n", 2, "mapping"),
    ("front matter empty", "---\n---\nbody\n", 2, "mapping"),
    ("description missing", "---\nname: bad\n---\n", 2, "'description'"),
    ("description empty", "---\nname: bad\ndescription: ''\n---\n", 3, "non-empty"),
    ("description too long", f"---\nname: bad\ndescription: {'d' * 1025}\n---\n", 3, "1024"),
    ("tags not a list", "---\nname: bad\ndescription: x\ntags: {a: 1}\n---\n", 4, "tags"),
    ("name with capitals", "---\nname: Bad\ndescription: x\n---\n", 2, "lowercase"),
    ("name differs from folder", "---\nname: other\ndescription: x\n---\n", 2, "folder"),
    (
        "billion laughs through aliases",
        "---\nname: bad\ndescription: x\na: &a [1, 1]\nb: &b [*a, *a]\nc: [*b, *b]\n---\n",
        5,
        "aliases",
    ),
]


@pytest.mark.parametrize(("tried", "text", "line", "fragment"), BROKEN, ids=[b[0] for b in BROKEN])
def test_broken_skill_is_reported_with_file_and_line_and_others_load(
    home: Home, tried: str, text: str, line: int, fragment: str
) -> None:
    put(home, "alpha", skill_md("alpha"))
    put(home, "bad", text)
    put(home, "tools/zeta", skill_md("zeta"))
    catalog = load_catalog(home)
    assert [s.ref for s in catalog.skills] == ["alpha", "tools/zeta"], tried
    [problem] = catalog.problems
    assert problem.path == "bad/SKILL.md", tried
    assert problem.line == line, (tried, problem)
    assert fragment in problem.message, (tried, problem.message)
    assert f"bad/SKILL.md line {line}" in problem.message
    # Asking for the broken skill by name names the problem instead of "not found".
    with pytest.raises(SkillError) as err:
        catalog.find("bad")
    assert err.value.code == "malformed"


def test_undecodable_and_oversized_files_do_not_stop_loading(home: Home) -> None:
    # Tried: a SKILL.md in Latin-1 and a 5 MB file dropped into the folder.
    put(home, "latin", b"---\nname: latin\ndescription: caf\xe9\n---\n")
    put(home, "huge", "---\nname: huge\ndescription: x\n---\n" + "x" * (5 * 1024 * 1024))
    put(home, "fine", skill_md("fine"))
    catalog = load_catalog(home)
    assert [s.name for s in catalog.skills] == ["fine"]
    messages = {p.path: p.message for p in catalog.problems}
    assert "UTF-8" in messages["latin/SKILL.md"]
    assert "too large" in messages["huge/SKILL.md"]


def test_over_the_write_limit_still_loads(home: Home) -> None:
    # A hand-written SKILL.md above the 50,000-char write limit is the user's; it loads.
    put(home, "long", skill_md("long", body="x" * 80_000))
    assert [s.name for s in load_catalog(home).skills] == ["long"]


def test_duplicate_names_across_categories(home: Home) -> None:
    put(home, "a/dup", skill_md("dup", "first"))
    put(home, "b/dup", skill_md("dup", "second"))
    catalog = load_catalog(home)
    assert [(s.ref, s.meta.description) for s in catalog.skills] == [("a/dup", "first")]
    assert "already used by a/dup" in catalog.problems[0].message
    assert find_skill(home, "dup").ref == "a/dup"
    assert find_skill(home, "b/dup").meta.description == "second"


def test_dot_folders_and_stray_files_are_ignored(home: Home) -> None:
    put(home, "real", skill_md("real"))
    put(home, ".trash/old", skill_md("old"))
    put(home, ".cairn-tmp-abc", skill_md("half"))
    (home.skills_dir / "notes.txt").write_text("not a skill")
    (home.skills_dir / "empty-category").mkdir()
    catalog = load_catalog(home)
    assert [s.name for s in catalog.skills] == ["real"]
    assert catalog.problems == []


def test_missing_skills_folder_is_an_empty_catalog(home: Home) -> None:
    assert load_catalog(home).skills == []


def test_symlinked_skill_md_pointing_outside_is_refused(home: Home, tmp_path: Path) -> None:
    # Tried: SKILL.md as a link to a file outside the skill (it would be read into context).
    secret = tmp_path / "outside.md"
    secret.write_text(skill_md("leak"))
    folder = home.skills_dir / "leak"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").symlink_to(secret)
    catalog = load_catalog(home)
    assert catalog.skills == []
    assert "outside" in catalog.problems[0].message


def test_parse_accepts_bom_and_crlf() -> None:
    text = "\ufeff---\r\nname: win\r\ndescription: Written on Windows\r\n---\r\nStep 1\r\n"
    parsed = parse_skill_md(text)
    assert parsed.meta.name == "win"
    assert parsed.meta.description == "Written on Windows"


def test_tags_as_comma_string() -> None:
    parsed = parse_skill_md("---\nname: t\ndescription: x\ntags: git, debugging\n---\n")
    assert parsed.meta.tags == ["git", "debugging"]


def test_a_same_size_edit_in_place_is_seen_at_once(home: Home) -> None:
    # Tried: rewriting SKILL.md in place (same inode, same length) right after a load, and
    # again after its time is backdated (as if it had been parsed long ago and then edited).
    path = put(home, "s", skill_md("s", "Version A"))
    assert find_skill(home, "s").meta.description == "Version A"
    path.write_text(skill_md("s", "Version B"), encoding="utf-8")
    assert find_skill(home, "s").meta.description == "Version B"
    old = path.stat().st_mtime - 3600
    os.utime(path, (old, old))
    assert find_skill(home, "s").meta.description == "Version B"  # now cached
    path.write_text(skill_md("s", "Version C"), encoding="utf-8")  # a new mtime
    assert find_skill(home, "s").meta.description == "Version C"
