"""What a command that only reads memory loads: not SQLAlchemy, not Alembic (its history is
read with the standard library), and `cairn --version` not even the config models. A read
that finds an edit made outside Cairn still records it, through the full history."""

from __future__ import annotations

import subprocess
import sys

from engine.home import Home
from engine.memory.entries import Target
from engine.memory.service import MemoryService
from tests.conftest import REPO

HEAVY = ("sqlalchemy", "alembic", "engine.db", "engine.memory.history", "engine.plugins.manager")


def loaded_after(args: list[str], modules: tuple[str, ...]) -> tuple[list[str], str]:
    code = (
        "import sys, io, contextlib\n"
        "from engine import cli\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        f"    try:\n        cli.main({args!r})\n    except SystemExit:\n        pass\n"
        f"print('LOADED:' + ','.join(m for m in {modules!r} if m in sys.modules))\n"
        "print('OUT:' + out.getvalue().replace(chr(10), ' | '))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True
    )
    lines = proc.stdout.strip().splitlines()
    loaded = lines[-2].removeprefix("LOADED:")
    return [m for m in loaded.split(",") if m], lines[-1].removeprefix("OUT:")


def test_memory_show_reads_the_history_without_sqlalchemy(home: Home) -> None:
    service = MemoryService(home)
    service.write(Target.MEMORY, [{"action": "add", "content": "Deploys go through CI"}])
    loaded, out = loaded_after(["memory", "show", "--home", str(home.root)], HEAVY)
    assert loaded == []
    assert "[0] Deploys go through CI" in out


def test_an_edit_made_outside_cairn_is_still_recorded_by_a_read(home: Home) -> None:
    service = MemoryService(home)
    service.write(Target.MEMORY, [{"action": "add", "content": "Deploys go through CI"}])
    (home.memories_dir / "MEMORY.md").write_text("Deploys go through CI\n§\nStaging is db3\n")
    loaded, out = loaded_after(["memory", "show", "--home", str(home.root)], HEAVY)
    assert "sqlalchemy" in loaded  # the history opened to record the edit
    assert "[1] Staging is db3" in out
    events = MemoryService(home).events(Target.MEMORY)
    assert [e.action for e in events][:2] == ["external_edit", "add"]


def test_the_version_needs_no_config_models() -> None:
    from engine import __version__

    loaded, out = loaded_after(["--version"], ("pydantic", "engine.config", *HEAVY))
    assert loaded == []
    assert __version__ in out
