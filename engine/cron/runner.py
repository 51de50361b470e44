"""Running jobs: one run of a job as an agent session under its run lock, its output file,
and the tick that runs every due job.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.config import load_config
from engine.cron.continuity import clean_reply, compose_prompt
from engine.cron.lock import _run_lock
from engine.cron.models import (
    CronError,
    CronJob,
    JobState,
    RunResult,
    TickReport,
    validate_job_name,
)
from engine.cron.store import _save_state, get_job, is_due, load_jobs, load_state, output_dir
from engine.errors import CairnError
from engine.fsutil import atomic_write_text
from engine.home import Home

if TYPE_CHECKING:
    from engine.agent import Agent


def _output_path(home: Home, name: str, started: float) -> Path:
    folder = home.safe_folder(output_dir(home, name))
    folder.mkdir(parents=True, exist_ok=True)
    stamp = datetime.fromtimestamp(started).strftime("%Y%m%d-%H%M%S")
    path = folder / f"{stamp}.md"
    suffix = 2
    while path.exists():  # two runs in one second; the run lock makes this check race-free
        path = folder / f"{stamp}-{suffix}.md"
        suffix += 1
    return path


def _write_output(
    home: Home, job: CronJob, result: RunResult, continuity: str, started: float
) -> Path:
    path = _output_path(home, job.name, started)
    when = datetime.fromtimestamp(started).astimezone().isoformat(timespec="seconds")
    lines = [
        f"# {job.name} · {when}",
        "",
        f"- status: {result.status}",
        f"- trigger: {result.trigger}",
        f"- schedule: {job.schedule}",
        f"- session: {result.session_id or '-'}",
        f"- continuity: {continuity}",
    ]
    if result.error:
        lines.append(f"- error: {' '.join(result.error.split())}")
    lines += ["", result.reply.rstrip(), ""]
    atomic_write_text(path, "\n".join(lines))
    _prune(path.parent, job.keep_outputs)
    return path


def _prune(folder: Path, keep: int) -> None:
    files = sorted(folder.glob("*.md"), key=lambda p: (p.stat().st_mtime, p.name))
    for old in files[: max(0, len(files) - keep)]:
        old.unlink(missing_ok=True)


AgentHook = Callable[["Agent"], None]


def run_job(
    home: Home,
    name: str,
    *,
    trigger: str = "manual",
    only_if_due: bool = False,
    now: float | None = None,
    on_agent: AgentHook | None = None,
) -> RunResult:
    """Run job ``name`` once, unless another process is running it (status ``busy``).

    ``only_if_due`` (schedulers) re-checks the schedule once the lock is held, so two
    schedulers that both saw the job due run it once between them. ``on_agent`` receives the
    run's Agent before it starts, so a caller can cancel it from another thread.
    """
    validate_job_name(name)
    with _run_lock(home, name) as held:
        if not held:
            return RunResult(job=name, status="busy", trigger=trigger, error="already running")
        try:
            job = get_job(home, name)
        except CronError as exc:
            if exc.code == "not_found":
                return RunResult(job=name, status="missing", trigger=trigger, error=exc.message)
            raise
        state = load_state(home, name)
        moment = time.time() if now is None else now
        if only_if_due and not is_due(job, state, moment):
            return RunResult(job=name, status="not_due", trigger=trigger)
        return _run_locked(home, job, state, trigger, moment, on_agent)


def _run_locked(
    home: Home,
    job: CronJob,
    state: JobState,
    trigger: str,
    started: float,
    on_agent: AgentHook | None,
) -> RunResult:
    from engine.agent import Agent  # deferred: listing and parsing must not load the agent

    prompt, used = compose_prompt(job, state)
    result = RunResult(
        job=job.name, status="error", trigger=trigger, started_at=started, continuity_used=used
    )
    # Recorded before the model is asked: a run that crashes still counts as the slot's run,
    # so a failing job does not retry on every tick.
    state = state.model_copy(update={"last_run_at": started, "runs": state.runs + 1})
    _save_state(home, job.name, state)
    agent: Agent | None = None
    try:
        agent = Agent(home, load_config(home), source="cron", cwd=None)
        if on_agent is not None:
            on_agent(agent)
        turn = agent.send(prompt)
        result.session_id = agent.session_id if agent.session is not None else None
        result.reply = turn.reply
        if turn.cancelled:
            result.status, result.error = "cancelled", "the run was stopped"
        elif turn.error is not None:
            result.error = turn.error
        else:
            result.status = "ok"
    except Exception as exc:  # a run fails alone; the scheduler and other jobs carry on
        result.error = f"{type(exc).__name__}: {exc}"
    finally:
        if agent is not None:
            with contextlib.suppress(Exception):
                agent.close()
    result.finished_at = time.time()
    if used:
        continuity = "previous reply included"
    elif job.continuity:
        continuity = "on (no previous reply yet)"
    else:
        continuity = "off"
    output = _write_output(home, job, result, continuity, started)
    result.output = str(output)
    update: dict[str, Any] = {
        "last_finished_at": result.finished_at,
        "last_status": result.status,
        "last_error": result.error,
        "last_session_id": result.session_id,
        "last_output": str(output.relative_to(home.root)),
    }
    if result.status == "ok":
        # Only a finished reply carries over; a failed run leaves the last good one in place.
        update["last_reply"] = clean_reply(result.reply, job.continuity_chars)
        update["last_reply_at"] = started
    _save_state(home, job.name, state.model_copy(update=update))
    return result


def due_jobs(home: Home, now: float | None = None) -> list[CronJob]:
    moment = time.time() if now is None else now
    jobs, _ = load_jobs(home)
    return [job for job in jobs if is_due(job, load_state(home, job.name), moment)]


def tick(
    home: Home,
    *,
    now: float | None = None,
    trigger: str = "tick",
    on_agent: AgentHook | None = None,
    should_stop: Callable[[], bool] | None = None,
    on_result: Callable[[RunResult], None] | None = None,
) -> TickReport:
    """Run every job that is due, one after another. Jobs another process is running are
    skipped (they are not due any more once it finishes)."""
    report = TickReport(home=str(home.root))
    try:
        _, broken = load_jobs(home)
        due = due_jobs(home, now)
    except CronError as exc:
        report.problems.append(exc.message)
        _catch_up_session_indexes(home, report, should_stop)  # jobs.yaml is not its business
        return report
    report.problems += [
        f"jobs.yaml entry {b.index + 1} ({b.name or 'unnamed'}) is invalid: {b.error}"
        for b in broken
    ]
    for job in due:
        if should_stop is not None and should_stop():
            break
        try:
            result = run_job(
                home, job.name, trigger=trigger, only_if_due=True, now=now, on_agent=on_agent
            )
        except CronError as exc:
            result = RunResult(job=job.name, status="error", trigger=trigger, error=exc.message)
        report.runs.append(result)
        if on_result is not None:
            on_result(result)
    _catch_up_session_indexes(home, report, should_stop)
    return report


# A tick's share of an import's index catch-up: jobs that fall due meanwhile wait no longer
# than this for the next tick (a catch-up of 10^6 messages is about 100 s of work).
CATCH_UP_SECONDS = 20.0


def _catch_up_session_indexes(
    home: Home, report: TickReport, should_stop: Callable[[], bool] | None
) -> None:
    """Fill what a large import left to the session store's trigram and pair indexes
    (engine/sessions/backlog.py), after the jobs, for ``CATCH_UP_SECONDS`` at most and
    stopping between chunks when asked: the app's scheduler and ``cairn cron tick`` both end
    a backlog without anyone asking. A home without a database of its own file (none yet,
    or a server) has none to end."""
    if should_stop is not None and should_stop():
        return
    from sqlalchemy.exc import SQLAlchemyError

    from engine.db import DatabaseError
    from engine.sessions.maintenance import catch_up
    from engine.sessions.store import SessionStore, SessionStoreError

    try:
        config = load_config(home)
        if config.database.url or not home.state_db.exists():
            return
        until = time.monotonic() + CATCH_UP_SECONDS
        done = catch_up(
            SessionStore.open(home, config),
            keep_going=lambda: (
                time.monotonic() < until and (should_stop is None or not should_stop())
            ),
        )
    except (CairnError, DatabaseError, SessionStoreError, SQLAlchemyError) as exc:
        report.problems.append(f"catching up the session indexes: {exc}")
        return
    report.indexed, report.index_left = done.messages, done.left


def utc_iso(ts: float | None) -> str | None:
    return None if ts is None else datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds")
