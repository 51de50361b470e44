"""Shared fixtures. Qt runs offscreen so the suite needs no display."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402

from engine.config import Config, MemoryConfig  # noqa: E402
from engine.db import dispose_engines  # noqa: E402
from engine.home import Home  # noqa: E402
from engine.memory.service import MemoryService  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _fresh_engines() -> object:
    # Engines are cached per database path; tests reuse tmp paths across runs of one process.
    yield
    dispose_engines()


@pytest.fixture
def home(tmp_path: Path) -> Home:
    return Home(tmp_path / "home")


@pytest.fixture
def make_service(home: Home) -> Callable[..., MemoryService]:
    def make(**memory: object) -> MemoryService:
        return MemoryService(home, Config(memory=MemoryConfig(**memory)))

    return make


@pytest.fixture
def service(make_service: Callable[..., MemoryService]) -> MemoryService:
    return make_service()


def run_cairn(
    *args: str, home: Home | None = None, stdin: str | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """Run the real ``cairn`` entry point in a child process."""
    argv = [sys.executable, "-m", "engine.cli", *args]
    if home is not None:
        argv += ["--home", str(home.root)]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        argv, input=stdin, capture_output=True, text=True, timeout=timeout, env=env, cwd=REPO
    )
