"""Hostile files, folders, permissions and inputs: each gets a clear error and changes nothing.

Every test states what was tried. "Changes nothing" is checked on a snapshot of every file and
folder in the home (names, kinds, modes, bytes, link targets), except the SQLite database,
whose pages SQLite may touch on any read; the change history is compared by its events.

Permission cases run the write in a process forked from this one that drops to uid/gid 65534
(nobody) when the tests run as root, because root ignores file permissions. A fork, rather than
``subprocess.run(user=...)``: the interpreter and the virtualenv may live where nobody cannot
read them (inside root's home folder), and a forked child already has everything imported.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.config import Config, MemoryConfig
from engine.db import dispose_engines
from engine.fsutil import TEMP_PREFIX
from engine.home import Home
from engine.memory.entries import Target, render
from engine.memory.errors import MemoryToolError
from engine.memory.service import MemoryService
from tests.conftest import REPO, run_cairn

M = Target.MEMORY
NOBODY = 65534
DB_FILES = re.compile(r"^(state|cairn)\.db(-wal|-shm|-journal)?$")
CLI = [sys.executable, "-m", "engine.cli"]
ENTRIES = ["User prefers tea over coffee", "Staging runs on Hetzner, deploys from main"]


def snapshot(root: Path) -> dict[str, tuple[Any, ...]]:
    """Every path under ``root`` (the database excepted) with its kind, mode and content."""
    result: dict[str, tuple[Any, ...]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = str(path.relative_to(root))
            if DB_FILES.match(name) and Path(dirpath) == root:
                continue
            info = path.lstat()
            if stat.S_ISLNK(info.st_mode):
                result[rel] = ("link", os.readlink(path))
            elif stat.S_ISDIR(info.st_mode):
                result[rel] = ("dir", stat.S_IMODE(info.st_mode))
            else:
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
                result[rel] = ("file", stat.S_IMODE(info.st_mode), info.st_size, digest)
    return result


def seeded(home: Home, limit: int = 2200) -> MemoryService:
    service = MemoryService(home, Config(memory=MemoryConfig(memory_char_limit=limit)))
    service.write(M, [{"action": "add", "content": e} for e in ENTRIES])
    return service


def refused(service: MemoryService, operations: Any) -> MemoryToolError:
    with pytest.raises(MemoryToolError) as err:
        service.write(M, operations)
    return err.value


def event_count(service: MemoryService) -> int:
    return len(service.events())


# -- broken MEMORY.md ---------------------------------------------------------------------------

BROKEN_FILES: dict[str, tuple[Callable[[Path], None], str]] = {
    "invalid_utf8": (
        lambda p: p.write_bytes(b"User prefers tea\n\xc3\x28 broken\n\xa7\nsecond"),
        "MEMORY.md is not valid UTF-8 (byte 0xc3 at offset 17); re-save it as UTF-8",
    ),
    "nul_bytes": (
        lambda p: p.write_bytes(b"User prefers tea\n\x00\x00\n\xc2\xa7\nsecond"),
        "MEMORY.md contains NUL bytes at offset 17; fix it",
    ),
    "ten_megabytes": (
        lambda p: p.write_bytes((b"x" * 1023 + b"\n") * 10 * 1024),
        "MEMORY.md is larger than 256 KiB",
    ),
    "a_folder": (
        lambda p: (p.mkdir(), (p / "notes.txt").write_text("inside")),
        "MEMORY.md is a folder, not a file",
    ),
}


@pytest.mark.parametrize("case", list(BROKEN_FILES))
def test_broken_memory_file_is_reported_and_left_alone(home: Home, case: str) -> None:
    """Tried, with MEMORY.md replaced by (a) bytes that are not UTF-8, (b) text with NUL bytes,
    (c) a 10 MB file, (d) a folder holding a file: reading, adding, replacing, removing and
    a batch through the service, the prompt snapshot, and ``cairn memory add`` from the CLI.
    Each must answer ``file`` with a message naming the problem, and leave the home as it was."""
    service = seeded(home)
    path = service.read(M).path
    path.unlink()
    make, message = BROKEN_FILES[case]
    make(path)
    before, events = snapshot(home.root), event_count(service)

    with pytest.raises(MemoryToolError) as err:
        service.read(M)
    assert err.value.code == "file" and message in err.value.message
    assert str(path) in err.value.message
    for ops in (
        [{"action": "add", "content": "A new fact"}],
        [{"action": "replace", "old_text": "tea", "content": "User prefers green tea"}],
        [{"action": "remove", "old_text": "Hetzner"}],
        [{"action": "remove", "old_text": "tea"}, {"action": "add", "content": "Other fact"}],
    ):
        error = refused(service, ops)
        assert error.code == "file" and message in error.message
    snap = service.prompt_snapshot()
    assert "[MEMORY.md could not be loaded: " + message in snap

    proc = run_cairn("memory", "add", "A new fact", "--json", home=home)
    assert proc.returncode == 1, proc.stderr
    payload = json.loads(proc.stdout)
    assert payload["ok"] is False and payload["error"] == "file"
    assert message in payload["message"]

    assert snapshot(home.root) == before
    assert event_count(service) == events


def test_lock_path_that_is_a_folder_is_an_io_error(home: Home) -> None:
    """Tried: MEMORY.md.lock forged as a folder (with a file inside), then an add and a batch.
    The writer cannot take the lock, so it must refuse with ``io`` naming the lock path, and
    leave MEMORY.md and the folder untouched. Reading needs no lock and still works."""
    service = seeded(home)
    lock = home.memories_dir / "MEMORY.md.lock"
    lock.unlink()
    lock.mkdir()
    (lock / "decoy").write_text("not a lock")
    before, events = snapshot(home.root), event_count(service)

    for ops in (
        [{"action": "add", "content": "A new fact"}],
        [{"action": "remove", "old_text": "tea"}, {"action": "add", "content": "Other fact"}],
    ):
        error = refused(service, ops)
        assert error.code == "io"
        assert "cannot lock MEMORY.md: Is a directory" in error.message
        assert str(lock) in error.message
    assert service.read(M).entries == ENTRIES
    assert snapshot(home.root) == before
    assert event_count(service) == events


# -- permissions ----------------------------------------------------------------------------------


def _traversable_by_all(folder: Path) -> bool:
    return all(p.stat().st_mode & stat.S_IXOTH for p in [folder, *folder.parents])


@pytest.fixture
def shared_tmp() -> Iterator[Path]:
    """A temp folder the unprivileged child can reach (pytest's own tmp_path is mode 0700)."""
    for candidate in (tempfile.gettempdir(), "/tmp", "/var/tmp", "/dev/shm"):
        base = Path(candidate)
        if base.is_dir() and os.access(base, os.W_OK) and _traversable_by_all(base):
            break
    else:
        pytest.skip("no temp folder that an unprivileged user can traverse")
    folder = Path(tempfile.mkdtemp(prefix="cairn-perm-", dir=base))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        for dirpath, _, _ in os.walk(folder):
            os.chmod(dirpath, 0o755)
        shutil.rmtree(folder)


def give_to_writer(root: Path) -> None:
    """Make the unprivileged writer the owner of everything under ``root`` (when we are root)."""
    if os.geteuid() != 0:
        return
    for dirpath, dirnames, filenames in os.walk(root):
        os.chown(dirpath, NOBODY, NOBODY)
        for name in dirnames + filenames:
            os.lchown(os.path.join(dirpath, name), NOBODY, NOBODY)


def unprivileged(home: Home, operations: Any) -> dict[str, Any]:
    """Write ``operations`` from a forked child running as nobody (or as ourselves when we
    are not root); the service result, or the error, as a dict."""
    dispose_engines()  # no SQLite connection may cross the fork
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_fd)
            if os.geteuid() == 0:
                os.setgroups([])
                os.setgid(NOBODY)
                os.setuid(NOBODY)
            out: dict[str, Any] = {"uid": os.geteuid()}
            try:
                service = MemoryService(home, Config())
                out["result"] = service.write(M, operations)
                out["entries"] = service.read(M).entries
            except MemoryToolError as exc:
                out.update(code=exc.code, message=exc.message)
            except BaseException as exc:
                out["raw"] = f"{type(exc).__name__}: {exc}"
            os.write(write_fd, json.dumps(out, default=str).encode())
        finally:
            os._exit(0)
    os.close(write_fd)
    chunks = []
    while chunk := os.read(read_fd, 65536):
        chunks.append(chunk)
    os.close(read_fd)
    os.waitpid(pid, 0)
    out = json.loads(b"".join(chunks))
    assert out["uid"] != 0, "the child must not write as root"
    assert "raw" not in out, out["raw"]
    return out


def read_only(*paths: Path) -> None:
    for path in paths:
        path.chmod(0o555 if path.is_dir() else 0o444)


def test_unprivileged_child_can_write_a_home_it_owns(shared_tmp: Path) -> None:
    """Control for the permission tests: the same forked, unprivileged child, on a home it
    owns and may write, succeeds, so the refusals below come from the permissions alone."""
    home = Home(shared_tmp / "home")
    seeded(home)
    give_to_writer(shared_tmp)
    out = unprivileged(home, [{"action": "add", "content": "Written by nobody"}])
    assert out.get("result", {}).get("status") == "applied", out
    assert out["entries"] == [*ENTRIES, "Written by nobody"]


def test_read_only_home_refuses_writes(shared_tmp: Path) -> None:
    """Tried: a home whose every folder is r-x and every file r-- for the user running Cairn
    (who owns them), then an add. The writer cannot even open the lock file, so it must
    answer ``io`` naming MEMORY.md and the cause, and change nothing."""
    home = Home(shared_tmp / "home")
    seeded(home)
    give_to_writer(shared_tmp)
    read_only(*[Path(d) / n for d, ds, fs in os.walk(home.root) for n in ds + fs], home.root)
    before = snapshot(home.root)

    out = unprivileged(home, [{"action": "add", "content": "A new fact"}])
    assert out.get("code") == "io", out
    assert "cannot lock MEMORY.md: Permission denied" in out["message"]
    assert snapshot(home.root) == before
    assert (home.memories_dir / "MEMORY.md").read_text() == render(ENTRIES)


def test_read_only_memories_folder_refuses_writes(shared_tmp: Path) -> None:
    """Tried: the lock file writable but the memories folder r-x, so the lock is taken and the
    failure comes at the temp file: an add and a batch must answer ``io`` with "cannot write
    MEMORY.md: Permission denied; nothing was changed", leaving no temp file behind."""
    home = Home(shared_tmp / "home")
    seeded(home)
    give_to_writer(shared_tmp)
    read_only(home.memories_dir, home.memories_dir / "MEMORY.md")
    before = snapshot(home.root)

    for ops in (
        [{"action": "add", "content": "A new fact"}],
        [{"action": "remove", "old_text": "tea"}, {"action": "add", "content": "Other fact"}],
    ):
        out = unprivileged(home, ops)
        assert out.get("code") == "io", out
        assert "cannot write MEMORY.md: Permission denied; nothing was changed" in out["message"]
    assert snapshot(home.root) == before


def test_read_only_fresh_home_refuses_writes(shared_tmp: Path) -> None:
    """Tried: a brand-new home folder that is r-x (no memories folder yet), then an add: the
    memories folder cannot be created, so the answer is ``io`` naming the folder."""
    home = Home(shared_tmp / "home")
    home.root.mkdir()
    give_to_writer(shared_tmp)
    read_only(home.root)

    out = unprivileged(home, [{"action": "add", "content": "A new fact"}])
    assert out.get("code") == "io", out
    assert "cannot lock MEMORY.md: Permission denied" in out["message"]
    assert str(home.memories_dir) in out["message"]
    assert os.listdir(home.root) == []


def test_unwritable_lock_file_refuses_writes(shared_tmp: Path) -> None:
    """Tried: a writable home whose MEMORY.md.lock is r-- and owned by someone else (root, when
    the tests run as root), then an add: ``io`` naming the lock file, nothing changed."""
    home = Home(shared_tmp / "home")
    seeded(home)
    give_to_writer(shared_tmp)
    lock = home.memories_dir / "MEMORY.md.lock"
    if os.geteuid() == 0:
        os.chown(lock, 0, 0)
    lock.chmod(0o444)
    before = snapshot(home.root)

    out = unprivileged(home, [{"action": "add", "content": "A new fact"}])
    assert out.get("code") == "io", out
    assert f"cannot lock MEMORY.md: Permission denied ({lock})" in out["message"]
    assert snapshot(home.root) == before


# -- hostile operations -------------------------------------------------------------------------


@pytest.mark.parametrize("content", ["   \n\t  ", "§", "§\n§\n§", "\n§\n", " § \n §\n"])
def test_entry_of_only_whitespace_or_delimiters_is_invalid(home: Home, content: str) -> None:
    """Tried: adding, and replacing an entry with, text that is only whitespace or only §
    delimiters (which would write an empty or delimiter-only entry and shift every entry
    after it). Each must answer ``invalid`` saying the content is empty."""
    service = seeded(home)
    before, events = snapshot(home.root), event_count(service)
    for ops in (
        [{"action": "add", "content": content}],
        [{"action": "replace", "old_text": "tea", "content": content}],
        [{"action": "add", "content": "Fine"}, {"action": "add", "content": content}],
    ):
        error = refused(service, ops)
        assert error.code == "invalid"
        assert "content is empty (only whitespace or § delimiters)" in error.message
    assert snapshot(home.root) == before
    assert event_count(service) == events


@pytest.mark.parametrize("action", ["replace", "remove"])
@pytest.mark.parametrize("old_text", ["", "   ", "\n\t"])
def test_empty_old_text_is_invalid(home: Home, action: str, old_text: str) -> None:
    """Tried: replace and remove with an empty or blank ``old_text`` (which every entry
    "contains"). Each must answer ``invalid`` asking for part of the entry, not pick one."""
    service = seeded(home)
    before = snapshot(home.root)
    op = {"action": action, "old_text": old_text}
    if action == "replace":
        op["content"] = "Something else"
    error = refused(service, [op])
    assert error.code == "invalid"
    assert "old_text is empty: quote part of the entry to change" in error.message
    assert snapshot(home.root) == before


WRONG_TYPES: list[tuple[Any, str]] = [
    ([{"action": "add", "content": 123}], "operations[0].content: Input should be a valid string"),
    ([{"action": "add", "content": None}], "content: Input should be a valid string"),
    ("x", "operations must be a list of {action, ...} objects"),
    ({"operations": "x"}, "operations must be a list of {action, ...} objects"),
    (None, "operations must be a list"),
    ([], "operations is empty"),
    ([{"action": "explode", "content": "boom"}], "Input tag 'explode' found using 'action'"),
    (["add"], "operations[0]"),
    ([{"content": "no action"}], "Unable to extract tag using discriminator 'action'"),
    ([{"action": "add"}], "content: Field required"),
    ([{"action": "replace", "old_text": ["tea"], "content": "x"}], "old_text: Input should be"),
    ([{"action": "add", "content": "x", "sudo": True}], "sudo: Extra inputs are not permitted"),
    (
        [{"action": "add", "content": "ok"}, {"action": "remove", "old_text": 7}],
        "operations[1].old_text: Input should be a valid string",
    ),
]


@pytest.mark.parametrize(("operations", "message"), WRONG_TYPES)
def test_wrong_types_are_invalid(home: Home, operations: Any, message: str) -> None:
    """Tried: operations of the wrong shape or with wrong types: a number as content, a string
    or None instead of the list, an unknown action, an operation without action or content,
    a list as old_text, an extra field, and a valid operation followed by a bad one. Each must
    answer ``invalid`` pointing at the offending operation and field, writing nothing."""
    service = seeded(home)
    before = snapshot(home.root)
    error = refused(service, operations)
    assert error.code == "invalid"
    assert message in error.message
    assert snapshot(home.root) == before


def test_ten_thousand_operations_are_refused_whole(home: Home) -> None:
    """Tried: one batch of 10,000 valid adds. The batch limit is 100, so the whole batch must
    be refused with ``invalid`` stating the count and the limit; nothing is applied."""
    service = seeded(home)
    before = snapshot(home.root)
    ops = [{"action": "add", "content": f"Fact number {i}"} for i in range(10_000)]
    error = refused(service, ops)
    assert error.code == "invalid"
    assert "too many operations (10,000); one batch takes at most 100" in error.message
    assert snapshot(home.root) == before


GARBAGE = [
    ("not json at all", "not valid JSON: Expecting value at line 1 column 1"),
    ("", "not valid JSON: Expecting value at line 1 column 1"),
    ('[{"action": "add", "content": ', "not valid JSON: Expecting value at line 1 column 31"),
    ("[1, 2,]", "not valid JSON"),
    ('{"operations": 5}', "operations must be a list of {action, ...} objects"),
    ("[]", "operations is empty"),
    ('[{"action": "explode"}]', "Input tag 'explode' found using 'action'"),
]


@pytest.mark.parametrize(("stdin", "message"), GARBAGE)
def test_cli_apply_with_garbage_on_stdin(home: Home, stdin: str, message: str) -> None:
    """Tried: ``cairn memory apply -`` fed garbage, truncated JSON, empty input, and JSON of the
    wrong shape, with and without ``--json``. Exit code 1 every time; with --json stdout is a
    JSON error (``invalid`` plus the reason), without it stderr says ``cairn: <reason>``."""
    seeded(home)
    before = snapshot(home.root)
    proc = run_cairn("memory", "apply", "-", "--json", home=home, stdin=stdin)
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    payload = json.loads(proc.stdout)
    assert payload["ok"] is False and payload["error"] == "invalid"
    assert message in payload["message"]
    human = run_cairn("memory", "apply", "-", home=home, stdin=stdin)
    assert human.returncode == 1 and human.stdout == ""
    assert human.stderr.startswith("cairn: ") and message in human.stderr
    assert snapshot(home.root) == before


# -- found broken during this work, fixed since: regression tests ----------------------------------


def test_lone_surrogate_in_content_is_invalid(home: Home) -> None:
    """Tried: an add whose content holds a lone UTF-16 surrogate, as a model's tool call
    ``{"content": "\\ud800..."}`` decodes to. Expected ``invalid`` naming the code point, and
    nothing written. (Used to pass validation and the scanner and then escape as a raw
    UnicodeEncodeError from the UTF-8 encode in fsutil.atomic_write_text.)"""
    service = seeded(home)
    before = snapshot(home.root)
    content = json.loads('"User likes \\ud800 emoji"')
    error = refused(service, [{"action": "add", "content": content}])
    assert error.code == "invalid"
    assert "U+D800" in error.message and "surrogate" in error.message
    assert snapshot(home.root) == before


def test_cli_apply_with_invalid_utf8_on_stdin(home: Home) -> None:
    """Tried: ``cairn memory apply - --json`` with a JSON batch containing the byte 0xff, in
    Python's UTF-8 mode (what a C, POSIX or C.UTF-8 locale gives: containers, CI, cron),
    where text stdin decodes with surrogateescape. Expected: exit 1 with a JSON ``invalid``
    error naming the byte, no traceback, nothing written. (Used to die with a
    UnicodeEncodeError traceback: the UnicodeDecodeError handler never fired.)"""
    seeded(home)
    before = snapshot(home.root)
    proc = subprocess.run(
        [*CLI, "memory", "apply", "-", "--json", "--home", str(home.root)],
        input=b'[{"action": "add", "content": "bad \xff byte"}]',
        capture_output=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(REPO), "PYTHONUTF8": "1"},
        cwd=REPO,
    )
    assert snapshot(home.root) == before
    assert b"Traceback" not in proc.stderr, proc.stderr.decode(errors="replace")[-300:]
    assert proc.returncode == 1
    payload = json.loads(proc.stdout)
    assert payload["error"] == "invalid"
    assert "not valid UTF-8 (byte 0xff" in payload["message"]


def test_a_store_within_its_char_limit_never_becomes_unreadable(make_service: Callable) -> None:
    """Tried: memory_char_limit 100,000 (config allows up to 1,000,000) and adds of Japanese
    notes (3 bytes a char) until the budget refuses one: the file ends well over 256 KiB.
    Every accepted write must leave a readable store, and the only refusal is ``overflow``.
    (Used to brick the store: reads refused any file over 256 KiB, writes never checked.)"""
    service = make_service(memory_char_limit=100_000)
    note = "日本語のメモです。" * 200
    for i in range(100):
        try:
            service.write(M, [{"action": "add", "content": f"{i}: {note}"}])
        except MemoryToolError as exc:
            assert exc.code == "overflow", f"after {i} adds: {exc.code}: {exc.message}"
            break
        service.read(M)
    else:
        pytest.fail("the budget never refused an add")
    assert service.read(M).path.stat().st_size > 256 * 1024


# -- drift guard ----------------------------------------------------------------------------------

BACKUP_NAME = re.compile(r"^MEMORY\.md\.bak\.\d{8}T\d{6}\.\d{6}$")


def test_hand_edit_in_non_canonical_form_is_backed_up_verbatim(home: Home) -> None:
    """Tried: MEMORY.md hand-edited with CRLF line ends, extra blank lines and trailing blank
    lines, then an add. The rewrite normalises the file, so first the exact hand-edited bytes
    must be kept as MEMORY.md.bak.<timestamp>, and the result message must name that copy.
    The edit enters the history as an external edit before the add. A second write, on the
    now canonical file, makes no further copy."""
    service = seeded(home)
    path = service.read(M).path
    edited = (
        b"User prefers tea over coffee\r\n\r\n\r\n\xc2\xa7\r\n\r\n"
        b"Staging runs on Hetzner\r\nand deploys from main\r\n\r\n"
    )
    path.write_bytes(edited)

    result = service.write(M, [{"action": "add", "content": "Deploys on Fridays are banned"}])
    backups = sorted(p for p in path.parent.iterdir() if ".bak." in p.name)
    assert len(backups) == 1 and BACKUP_NAME.match(backups[0].name), backups
    assert backups[0].read_bytes() == edited
    assert result["backup"] == str(backups[0])
    assert f"the edited file was saved as {backups[0].name} first" in result["message"]
    assert "edited by hand" in result["message"]
    entries = [
        "User prefers tea over coffee",
        "Staging runs on Hetzner\nand deploys from main",
        "Deploys on Fridays are banned",
    ]
    assert path.read_bytes() == render(entries).encode()
    actions = [e.action for e in service.events(M, limit=2)]
    assert actions == ["add", "external_edit"]

    again = service.write(M, [{"action": "remove", "old_text": "Fridays"}])
    assert again["backup"] is None and "by hand" not in again["message"]
    assert len([p for p in path.parent.iterdir() if ".bak." in p.name]) == 1


def test_canonical_hand_edit_or_a_no_op_write_makes_no_backup(home: Home) -> None:
    """Tried: (a) a hand edit in canonical form plus the final newline editors add, then an
    add: no backup; (b) a non-canonical hand edit followed by a write that changes nothing
    (a duplicate add): no backup and the hand-edited bytes stay exactly as they are."""
    service = seeded(home)
    path = service.read(M).path
    path.write_text(render(["Hand-written fact", *ENTRIES]) + "\n")
    assert service.write(M, [{"action": "add", "content": "More"}])["backup"] is None
    assert not [p for p in path.parent.iterdir() if ".bak." in p.name]

    messy = b"More\r\n\r\n\xc2\xa7\r\nHand-written fact\r\n"
    path.write_bytes(messy)
    assert service.write(M, [{"action": "add", "content": "More"}])["status"] == "unchanged"
    assert path.read_bytes() == messy
    assert not [p for p in path.parent.iterdir() if ".bak." in p.name]


@pytest.mark.parametrize("relative", [False, True], ids=["absolute_link", "relative_link"])
def test_symlinked_memory_file_stays_a_link(home: Home, tmp_path: Path, relative: bool) -> None:
    """Tried: MEMORY.md as a symlink into a dotfiles folder (absolute and relative link), then
    add, replace, remove, a batch, and a non-canonical hand edit followed by a write. After
    each write the link must still be the same link, the dotfiles file must hold the new
    content, temp files must not be left in either folder, and the backup of the hand edit
    must sit beside the real file, not replace the link."""
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    real = dotfiles / "MEMORY.md"
    real.write_text(ENTRIES[0])
    home.memories_dir.mkdir(parents=True)
    link = home.memories_dir / "MEMORY.md"
    target = os.path.relpath(real, link.parent) if relative else str(real)
    link.symlink_to(target)
    service = MemoryService(home, Config())

    steps: list[tuple[list[dict[str, str]], list[str]]] = [
        ([{"action": "add", "content": ENTRIES[1]}], ENTRIES),
        (
            [{"action": "replace", "old_text": "tea", "content": "User prefers green tea"}],
            ["User prefers green tea", ENTRIES[1]],
        ),
        ([{"action": "remove", "old_text": "Hetzner"}], ["User prefers green tea"]),
        (
            [{"action": "add", "content": "A"}, {"action": "add", "content": "B"}],
            ["User prefers green tea", "A", "B"],
        ),
    ]
    for ops, expected in steps:
        assert service.write(M, ops)["status"] == "applied"
        assert link.is_symlink() and os.readlink(link) == target
        assert real.read_text() == render(expected)
        assert service.read(M).entries == expected

    messy = b"A\r\n\xc2\xa7\r\nB\r\n\r\n"
    real.write_bytes(messy)
    result = service.write(M, [{"action": "add", "content": "C"}])
    assert link.is_symlink() and os.readlink(link) == target
    assert real.read_text() == render(["A", "B", "C"])
    backups = [p for p in dotfiles.iterdir() if ".bak." in p.name]
    assert len(backups) == 1 and backups[0].read_bytes() == messy
    assert result["backup"] == str(backups[0])
    for folder in (dotfiles, home.memories_dir):
        assert not [p for p in folder.iterdir() if p.name.startswith(TEMP_PREFIX)]


def test_dangling_symlink_is_written_through(home: Home, tmp_path: Path) -> None:
    """Tried: MEMORY.md as a symlink to a dotfiles file that does not exist yet, then an add:
    the store reads as empty, the add creates the target file, and the link stays a link."""
    real = tmp_path / "dotfiles" / "MEMORY.md"
    real.parent.mkdir()
    home.memories_dir.mkdir(parents=True)
    link = home.memories_dir / "MEMORY.md"
    link.symlink_to(real)
    service = MemoryService(home, Config())
    assert service.read(M).entries == []
    service.write(M, [{"action": "add", "content": "First fact"}])
    assert link.is_symlink() and real.read_text() == "First fact"
