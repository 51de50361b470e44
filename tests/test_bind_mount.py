"""A MEMORY.md that is a single-file bind mount (as Docker mounts one file into a container)
cannot be renamed over: the write falls back to rewriting it in place under the lock.

Tried for real: a child process in its own mount namespace (``unshare -m``) bind-mounts a file
from outside the home onto memories/MEMORY.md and runs ``cairn memory add`` there; the file
outside must hold the new entry afterwards. Skipped where mount namespaces are not allowed."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare(1)")

CHILD = """
import subprocess, sys
from engine import cli
subprocess.run(["mount", "--bind", sys.argv[1], sys.argv[2]], check=True)
code = cli.main(["memory", "add", "Staging runs on db3", "--home", sys.argv[3]])
code |= cli.main(["memory", "replace", "db3", "Staging runs on db4", "--home", sys.argv[3]])
sys.exit(code)
"""


def test_a_bind_mounted_memory_file_is_written_in_place(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "memories").mkdir(parents=True)
    mounted = home / "memories" / "MEMORY.md"
    mounted.write_text("")
    outside = tmp_path / "host-MEMORY.md"
    outside.write_text("Uses Podman")
    probe = subprocess.run(
        ["unshare", "-m", "mount", "--bind", str(outside), str(mounted)],
        capture_output=True,
        text=True,
    )
    if probe.returncode != 0:
        pytest.skip(f"mount namespaces not allowed here: {probe.stderr.strip()}")
    proc = subprocess.run(
        ["unshare", "-m", sys.executable, "-c", CHILD, str(outside), str(mounted), str(home)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Device or resource busy" not in proc.stderr
    assert outside.read_text() == "Uses Podman\n§\nStaging runs on db4"
    assert mounted.read_text() == "", "outside the namespace the mount point was never touched"
    assert not [p for p in (home / "memories").iterdir() if p.name.startswith(".cairn-tmp-")]
