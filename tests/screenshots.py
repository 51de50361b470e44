"""Screenshots of the main window for the README, from fixed sample data.

    python tests/screenshots.py                 # writes into docs/images
    python tests/screenshots.py OUT_DIR

Runs the real window offscreen (engine worker thread, file watcher) on a throwaway home with
the scripted server (``tests/scripted_server.py``) as the model:

* ``window-chat.png``: a streamed reply with a code block after a memory tool call, the
  session list with a continued session, the memory panel with MEMORY.md above 80 %;
* ``pending-dialog.png``: writes staged by a background review, one approved, a replace
  previewed as a diff against current memory;
* ``window-dark.png``: the chat window in the dark palette of ``app.theme``;
* ``window-empty.png``: the window as it opens, before the first message (the empty state);
* ``settings-dialog.png``: the settings, with a key variable that is not one flagged at its
  field;
* ``sessions-long.png``: a long session list grouped by day;
* ``journey-chunk-view.png``: one chunk's versions and sessions, opened from the journey;
* ``window-1000x700.png``: every dock open in a 1000×700 window.

Everything but the clock is the same on every run (the pending writes carry the time they
were staged).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from datetime import date, datetime, timedelta
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from PySide6.QtCore import QElapsedTimer, QEventLoop, Qt  # noqa: E402
from PySide6.QtTest import QTest  # noqa: E402
from PySide6.QtWidgets import QApplication, QWidget  # noqa: E402

from app.main_window import MainWindow  # noqa: E402
from app.theme import palette_for  # noqa: E402
from engine.config import Config, load_config, update_config  # noqa: E402
from engine.db import dispose_engines  # noqa: E402
from engine.home import Home  # noqa: E402
from engine.memory.entries import Target  # noqa: E402
from engine.memory.service import MemoryService  # noqa: E402
from engine.sessions.store import SessionStore  # noqa: E402
from tests.scripted_server import ScriptedServer, reply, tool_calls  # noqa: E402

MEMORY = [
    "Production runs on Kubernetes 1.30 (EKS), namespace cairn-prod, three node groups",
    "Staging DB is db3.internal (PostgreSQL 16); the VPN must be up to reach it",
    "Deploys go through CI only: merge to main, then the release workflow tags and ships",
    "The API gateway is Envoy; its config lives in infra/envoy and is linted in CI",
    "Migrations are Alembic scripts; never edit one that has shipped, add a new one",
    "Local dev uses docker compose (postgres, redis, minio); `make up` starts it",
    "Grafana alert api-p99 pages the on-call when p99 latency is above 300 ms for 5 min",
    "The loader caches parsed manifests in Redis for 12 h; keys are manifest:<sha256>",
    "Large files go to Git LFS (models/, fixtures/*.parquet); CI fails on files > 5 MB",
    "Error budgets: API p99 under 300 ms, availability 99.9 % per 30 days",
    "Docs are MkDocs Material, published from docs/ on every merge to main",
    "Rust image service builds with cargo 1.78 and needs libvips 8.15 on the runner",
    "Flaky test test_upload_resume times out on ARM runners; rerun, do not skip it",
    "On-call rotation is in PagerDuty; handover is Monday 10:00 UTC",
    "Secrets live in AWS Secrets Manager; never put keys in config.yaml or the repo",
    "Feature flags are Unleash; flag names are kebab-case and start with the team name",
    "Backups: nightly pg_dump to s3://cairn-backups, kept 35 days; restore drill monthly",
    "The search service is Meilisearch 1.8; reindexing takes ~20 min, run it off-peak",
    "Python services use uv and ruff; line length 100, type hints everywhere",
    "Terraform state is in the cairn-tfstate bucket, one workspace per environment",
    "Release notes are written from merged PR titles; keep PR titles user-facing",
    "Deploy freeze: Friday 15:00 UTC to Monday 09:00; hotfixes need two approvals",
]
USER = [
    "Name: Ada Lovelace; works in UTC+1, meetings after 10:00, no meetings on Fridays",
    "Prefers short commit messages in English that state the why",
    "Uses Neovim with LazyVim; terminal is Ghostty",
]
# Title, days before today at 09:00 plus hours, index of the session it continues.
SESSIONS = [
    ("Postgres 16 upgrade plan for staging", 40, 5.5, None),
    ("Why the ARM runners time out", 6, 2.0, None),
    ("Envoy rate limits for the upload API", 4, 6.25, None),
    ("Cold cache on the manifest loader", 1, 1.0, None),
    ("Cold cache on the manifest loader, continued", 1, 3.5, 3),
]
# Older sessions, for a session list long enough to page and to fall into many days.
HISTORY_TOPICS = [
    "Flaky upload test on ARM",
    "Terraform plan for the search cluster",
    "Rotate the staging database password",
    "Why p99 jumped after the deploy",
    "Meilisearch reindex off-peak",
    "Grafana alert for queue depth",
    "Unleash flag clean-up",
    "Envoy retries for the image service",
    "Backups restore drill",
    "MkDocs navigation for the runbooks",
    "PagerDuty handover notes",
    "Redis memory pressure",
]
PROMPT = "The manifest loader times out when the Redis cache is cold. How should it retry?"
NEW_FACT = "Manifest loader: retry cold-cache reads 3 times, backoff from 200 ms, cap 2 s"
REPLY = """\
A cold cache means the first reads go to S3, which is slow for the large manifests, so the \
timeout fires before the first fill completes. Retry with **exponential backoff and jitter**, \
and only for errors that can heal:

```python
import random
import time

RETRYABLE = (TimeoutError, ConnectionError)


def load_manifest(key: str, attempts: int = 3) -> bytes:
    delay = 0.2
    for attempt in range(attempts):
        try:
            return cache.get_or_fill(key, fetch_from_s3)
        except RETRYABLE:
            if attempt == attempts - 1:
                raise
            time.sleep(delay + random.uniform(0, delay))
            delay = min(delay * 2, 2.0)
```

- Keep the total under the API's 5 s budget: 0.2 + 0.4 + 0.8 s leaves room for the reads.
- Warm the cache after a deploy (`make warm-manifests`) so most users never hit this path.

I saved the retry policy to memory; it takes effect in your next session.
"""


def wait_for(app: QApplication, done: Callable[[], bool], timeout_ms: int = 20_000) -> None:
    clock = QElapsedTimer()
    clock.start()
    while not done():
        if clock.elapsed() > timeout_ms:
            raise TimeoutError("the window did not get there in time")
        app.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 20)


def settle(app: QApplication, ms: int = 300) -> None:
    clock = QElapsedTimer()
    clock.start()
    while clock.elapsed() < ms:
        app.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 20)


def save(widget: QWidget, path: Path) -> None:
    widget.grab().save(str(path))
    print(f"wrote {path}")


def seed_home(home: Home, server: ScriptedServer) -> None:
    service = MemoryService(home, Config())
    service.write(Target.MEMORY, [{"action": "add", "content": text} for text in MEMORY])
    service.write(Target.USER, [{"action": "add", "content": text} for text in USER])
    store = SessionStore.open(home, Config())
    made: list[str] = []
    morning = datetime.combine(date.today(), datetime.min.time()).replace(hour=9)
    for title, days, hours, parent in SESSIONS:
        started = (morning - timedelta(days=days) + timedelta(hours=hours)).timestamp()
        session = store.create_session(
            source="gui",
            title=title,
            started_at=started,
            parent_session_id=made[parent] if parent is not None else None,
        )
        store.add_message(session.id, "user", title)
        store.add_message(session.id, "assistant", "…")
        continued = any(p == len(made) for *_, p in SESSIONS)
        reason = "compression" if continued else "closed"
        store.end_session(session.id, reason, ended_at=started + 3_000)
        made.append(session.id)
    for n in range(60):
        started = (morning - timedelta(days=2 + n // 3, hours=3 * (n % 3))).timestamp()
        session = store.create_session(
            source="cli", title=HISTORY_TOPICS[n % len(HISTORY_TOPICS)], started_at=started
        )
        store.add_message(session.id, "user", HISTORY_TOPICS[n % len(HISTORY_TOPICS)])
        store.end_session(session.id, "closed", ended_at=started + 1_800)
    update_config(
        home,
        {
            "model": {
                "provider": "openai",
                "base_url": server.url,
                "model": server.model,
                "context_length": server.context_length,
            },
            "memory": {"nudge_interval": 0},
        },
    )
    dispose_engines()


def stage_review_writes(home: Home) -> list[str]:
    """What a background review with approval on would stage."""
    config = load_config(home)
    config.memory.write_approval = True
    review = MemoryService(home, config)
    ids = []
    for target, operations in (
        (
            Target.MEMORY,
            [
                {
                    "action": "replace",
                    "old_text": "Grafana alert api-p99",
                    "content": "Alert api-p99 (Grafana) pages on-call: p99 > 300 ms for 5 min",
                },
                {"action": "remove", "old_text": "Error budgets:"},
            ],
        ),
        (Target.USER, [{"action": "add", "content": "Reviews PRs in the morning, UTC+1"}]),
        (
            Target.MEMORY,
            [{"action": "add", "content": "Upload API rate limit: 20 req/s per token (Envoy)"}],
        ),
    ):
        result = review.write(target, operations, origin="background_review")
        ids.append(str(result["pending_id"]))
    dispose_engines()
    return ids


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "docs" / "images")
    out.mkdir(parents=True, exist_ok=True)
    app = QApplication.instance() or QApplication([])
    assert isinstance(app, QApplication)
    app.setStyle("Fusion")
    app.setPalette(palette_for(dark=False))
    server = ScriptedServer(model="qwen2.5-coder-7b", context_length=32_768).start()
    # A fixed place, so the status bar reads the same on every run.
    base = Path(tempfile.gettempdir()) / "cairn-screenshots"
    shutil.rmtree(base, ignore_errors=True)
    try:
        home = Home(base / ".cairn")
        seed_home(home, server)
        server.add(
            tool_calls(("memory", {"action": "add", "content": NEW_FACT})),
            reply(REPLY),
        )
        window = MainWindow(home)
        window.resize(1280, 800)
        window.show()
        wait_for(app, lambda: not window._first_state and window.sessions.model.rowCount() > 3)
        wait_for(app, lambda: server.model in window.statusBar().currentMessage())
        settle(app)
        save(window, out / "window-empty.png")
        window.chat.input.setPlainText(PROMPT)
        QTest.keyClick(window.chat.input, Qt.Key.Key_Return)
        wait_for(app, lambda: not window.chat.busy)
        box = window.memory.boxes["memory"]
        wait_for(app, lambda: NEW_FACT in box.model.entries())
        box.select_row(len(box.model.entries()) - 1)
        window.chat.input.setPlainText("Also warm the cache from the release workflow?")
        settle(app)
        save(window, out / "window-chat.png")

        ids = stage_review_writes(home)
        wait_for(app, lambda: window.pending.model.rowCount() == len(ids))
        window.show_pending()
        window.pending.select(ids[1])
        window.pending.approve_button.click()
        wait_for(app, lambda: window.pending.model.rowCount() == len(ids) - 1)
        window.pending.select(ids[0])
        settle(app)
        save(window.pending, out / "pending-dialog.png")
        window.pending.close()

        window.open_settings()
        wait_for(app, lambda: window.settings_dialog is not None)
        dialog = window.settings_dialog
        assert dialog is not None
        dialog.key_env.setText("sk-or-v1-5d2c…")  # the key itself, not its variable
        dialog.context.setValue(32_768)
        settle(app)
        save(dialog, out / "settings-dialog.png")
        dialog.reject()

        window.sessions_dock.resize(300, 760)
        window.sessions.list.verticalScrollBar().setValue(
            window.sessions.list.verticalScrollBar().maximum() // 3
        )
        settle(app)
        save(window.sessions_dock, out / "sessions-long.png")

        # A second version of the chat's fact, edited from the panel in this session.
        refined = NEW_FACT + ", jitter up to the delay"
        window.memory.editRequested.emit(
            "memory", [{"action": "replace", "old_text": NEW_FACT, "content": refined}]
        )
        wait_for(app, lambda: refined in box.model.entries())
        window.show_journey()
        journey = window.journey
        wait_for(
            app,
            lambda: (
                journey.bundle is not None
                and any(c.text == refined for c in journey.bundle.journey.chunks)
            ),
        )
        chunk = next(c for c in journey.bundle.journey.chunks if c.text == refined)
        journey.view_item(chunk.key)
        viewer = journey.viewer
        assert viewer is not None
        viewer.resize(720, 560)
        settle(app)
        save(viewer, out / "journey-chunk-view.png")
        viewer.close()

        window.resize(1000, 700)
        settle(app, 600)
        save(window, out / "window-1000x700.png")
        window.journey_dock.hide()
        window.resize(1280, 800)

        app.setPalette(palette_for(dark=True))
        settle(app)
        save(window, out / "window-dark.png")
        window.close()
    finally:
        server.stop()
        dispose_engines()
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
