"""The engine must run where Qt cannot: importing any engine module never loads PySide6."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import engine
from tests.conftest import REPO


def test_no_engine_module_imports_qt() -> None:
    # Alembic scripts run only inside an Alembic context; they import nothing but the models.
    modules = [
        m.name
        for m in pkgutil.walk_packages(engine.__path__, "engine.")
        if not m.name.startswith("engine.migrations.")
    ]
    assert "engine.memory.store" in modules and "engine.cli" in modules
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('PySide6', 'shiboken6', 'pyqtgraph'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True
    )
    assert out.stdout.strip() == ""
