"""Shared fixtures. Qt runs offscreen so the suite needs no display."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# A home with no model chats on the built-in one when it is installed; tests start from "no
# model" (the scripted server is the model) unless they test the built-in one, which unset
# this (tests/test_provider_embedded.py). Processes the tests start inherit it.
os.environ["CAIRN_NO_BUILTIN_MODEL"] = "1"

import pytest

from engine.config import Config, DatabaseConfig, MemoryConfig, update_config
from engine.db import dispose_engines
from engine.home import Home
from engine.memory.service import MemoryService
from engine.sessions.store import SessionStore
from tests.scripted_server import ScriptedServer

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _fresh_engines() -> object:
    # Engines are cached per database path; tests reuse tmp paths across runs of one process.
    yield
    dispose_engines()


@pytest.fixture
def home(tmp_path: Path) -> Home:
    return Home(tmp_path / "home")


PG_URL_ENV = "CAIRN_TEST_PG_URL"  # e.g. postgresql+psycopg://cairn:cairn@127.0.0.1/cairn_test
PG_REQUIRED_ENV = "CAIRN_TEST_PG_REQUIRED"  # CI sets it: a missing server fails, not skips


def _reset_postgres(url: str) -> None:
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("DROP SCHEMA IF EXISTS public CASCADE"))
        conn.execute(text("CREATE SCHEMA public"))
    engine.dispose()


def open_store(backend: str, home: Home) -> SessionStore:
    """A session store on ``backend``: the embedded SQLite file, or a real PostgreSQL server
    (emptied first) when one is configured; skipped, or failed in CI, when it is not."""
    if backend == "sqlite":
        return SessionStore.open(home, Config())
    url = os.environ.get(PG_URL_ENV)
    if not url:
        if os.environ.get(PG_REQUIRED_ENV):
            pytest.fail(f"{PG_REQUIRED_ENV} is set but {PG_URL_ENV} is not")
        pytest.skip(f"no PostgreSQL server: set {PG_URL_ENV} to run these tests on it")
    _reset_postgres(url)
    return SessionStore.open(home, Config(database=DatabaseConfig(url=url)))


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, home: Home) -> SessionStore:
    """A session store on each backend."""
    return open_store(request.param, home)


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
    argv = [sys.executable, "-m", "app.launch", *args]
    if home is not None:
        argv += ["--home", str(home.root)]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        argv, input=stdin, capture_output=True, text=True, timeout=timeout, env=env, cwd=REPO
    )


def insert_behind_the_index(store: SessionStore, session_id: str, content: str) -> None:
    """Write a message the way a bug or another tool could: with the word and trigram
    indexes' insert triggers off, so the SQLite full-text indexes no longer match the table."""
    from sqlalchemy import text

    names = ("messages_ai", "messages_trigram_ai")
    with store.engine.begin() as conn:
        triggers = [
            conn.execute(
                text("SELECT sql FROM sqlite_master WHERE name = :name"), {"name": name}
            ).scalar_one()
            for name in names
        ]
        for name in names:
            conn.execute(text(f"DROP TRIGGER {name}"))
        conn.execute(
            text(
                "INSERT INTO messages(session_id, role, content, timestamp) "
                "VALUES (:sid, 'user', :content, 1)"
            ),
            {"sid": session_id, "content": content},
        )
        for trigger in triggers:
            conn.execute(text(trigger))


def downgrade_to(store: SessionStore, revision: str) -> None:
    """Take the store's database back to ``revision``, as a history written before a later
    migration was, to check that migration's upgrade (and its downgrade on the way)."""
    from alembic import command
    from alembic.config import Config as AlembicConfig

    config = AlembicConfig()
    config.set_main_option("script_location", "engine:migrations")
    with store.engine.begin() as conn:
        config.attributes["connection"] = conn
        command.downgrade(config, revision)


@pytest.fixture
def scripted() -> Iterator[ScriptedServer]:
    """A scripted OpenAI-compatible server on loopback; queue steps with ``scripted.add``."""
    server = ScriptedServer().start()
    yield server
    server.stop()


@pytest.fixture
def model_home(home: Home, scripted: ScriptedServer) -> Home:
    """A home whose config.yaml points the model at the scripted server."""
    update_config(
        home,
        {
            "model": {
                "provider": "openai",
                "base_url": scripted.url,
                "model": scripted.model,
                "context_length": scripted.context_length,
                "timeout": 10,
                "max_retries": 0,
            }
        },
    )
    return home


@pytest.fixture(autouse=True)
def _no_qthread_left_running(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Fail a test that leaves a QThread it started still running.

    Such a thread races the tests after it, and Qt aborts the interpreter if its QThread object
    is destroyed while it runs. Every ``QThread.start`` during the test is noted (a weak
    reference: noting must not keep an object alive); at teardown, after the test's other
    fixtures (qtbot closing its widgets among them), none of those may still be running.
    Tests that never loaded Qt skip this.
    """
    if "PySide6.QtCore" not in sys.modules:
        yield
        return
    import weakref

    import shiboken6
    from PySide6.QtCore import QThread

    started: list[weakref.ref[QThread]] = []
    original = QThread.start

    def start(self: QThread, *args: object) -> None:
        started.append(weakref.ref(self))
        original(self, *args)

    monkeypatch.setattr(QThread, "start", start)
    yield
    running = [
        thread
        for ref in started
        if (thread := ref()) is not None and shiboken6.isValid(thread) and thread.isRunning()
    ]
    if running:
        names = ", ".join(t.objectName() or type(t).__name__ for t in running)
        for thread in running:  # so the tests after this one start clean
            thread.quit()
            thread.wait(5_000)
        pytest.fail(f"QThread left running after the test: {names}")
