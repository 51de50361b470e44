"""Where jobs and their state live in a home: ``cron/jobs.yaml`` read and written atomically
under its lock, one state file per job, whether a job is due, the listing of jobs, and every
job's run lock taken at once.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from engine import yamlsafe
from engine.cron.lock import _run_lock, running_pid
from engine.cron.models import (
    CONTINUITY_CHARS,
    KEEP_OUTPUTS,
    BrokenJob,
    CronError,
    CronJob,
    JobState,
    JobView,
    validate_job_name,
)
from engine.cron.schedule import ScheduleError, parse_schedule
from engine.fsutil import atomic_write_text, locked
from engine.home import Home


def _jobs_file(home: Home) -> Path:
    return home.cron_dir / "jobs.yaml"


def _state_file(home: Home, name: str) -> Path:
    return home.cron_dir / "state" / f"{name}.json"


def output_dir(home: Home, name: str) -> Path:
    return home.cron_dir / "output" / name


def _read_raw(home: Home) -> list[Any]:
    path = _jobs_file(home)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError) as exc:
        raise CronError("file", f"{path} cannot be read: {exc}") from exc
    try:
        data = yamlsafe.load(text)  # aliases bounded: a hand-edited file is input too
    except yamlsafe.YamlLimitError as exc:
        raise CronError("file", f"{path}: {exc}") from None
    except yaml.YAMLError as exc:
        raise CronError("file", f"{path} is not valid YAML: {exc}") from exc
    if data is None:
        return []
    if not isinstance(data, dict) or not isinstance(data.get("jobs", []), list):
        raise CronError("file", f"{path} must hold a mapping with a 'jobs' list")
    return list(data.get("jobs") or [])


def _write_raw(home: Home, jobs: list[Any]) -> None:
    text = yaml.safe_dump({"jobs": jobs}, sort_keys=False, allow_unicode=True)
    atomic_write_text(_jobs_file(home), text)


@contextlib.contextmanager
def _jobs_locked(home: Home) -> Iterator[None]:
    home.safe_folder(home.cron_dir).mkdir(parents=True, exist_ok=True)
    with locked(home.cron_dir / "jobs.yaml.lock"):
        yield


def load_jobs(home: Home) -> tuple[list[CronJob], list[BrokenJob]]:
    """Valid jobs, and the entries that are not (each kept in the file, reported, never run)."""
    jobs: list[CronJob] = []
    broken: list[BrokenJob] = []
    seen: set[str] = set()
    for index, raw in enumerate(_read_raw(home)):
        name = raw.get("name") if isinstance(raw, dict) else None
        name = name if isinstance(name, str) else None
        try:
            job = CronJob.model_validate(raw)
        except (ValidationError, ScheduleError) as exc:
            if isinstance(exc, ValidationError):
                message = "; ".join(
                    f"{'.'.join(str(p) for p in e['loc']) or 'entry'}: {e['msg']}"
                    for e in exc.errors()
                )
            else:
                message = str(exc)
            broken.append(BrokenJob(index=index, name=name, error=message))
            continue
        if job.name in seen:
            broken.append(BrokenJob(index=index, name=job.name, error="duplicate name"))
            continue
        seen.add(job.name)
        jobs.append(job)
    return jobs, broken


def get_job(home: Home, name: str) -> CronJob:
    jobs, broken = load_jobs(home)
    for job in jobs:
        if job.name == name:
            return job
    for entry in broken:
        if entry.name == name:
            raise CronError("broken", f"job {name!r} in jobs.yaml is invalid: {entry.error}")
    raise CronError("not_found", f"no cron job named {name!r}")


def add_job(
    home: Home,
    name: str,
    schedule: str,
    prompt: str,
    *,
    continuity: bool = False,
    continuity_chars: int = CONTINUITY_CHARS,
    keep_outputs: int = KEEP_OUTPUTS,
) -> CronJob:
    validate_job_name(name)
    try:
        parse_schedule(schedule)
    except ScheduleError as exc:
        raise CronError("invalid", f"schedule: {exc}") from exc
    if not prompt.strip():
        raise CronError("invalid", "the prompt is empty")
    try:
        job = CronJob(
            name=name,
            schedule=" ".join(schedule.split()),
            prompt=prompt,
            continuity=continuity,
            created_at=datetime.now().astimezone().replace(microsecond=0),
            continuity_chars=continuity_chars,
            keep_outputs=keep_outputs,
        )
    except ValidationError as exc:
        raise CronError("invalid", str(exc.errors()[0]["msg"])) from exc
    with _jobs_locked(home):
        raw = _read_raw(home)
        if any(isinstance(r, dict) and r.get("name") == name for r in raw):
            raise CronError("exists", f"a cron job named {name!r} exists; remove it first")
        with _run_lock(home, name) as held:
            if not held:
                raise CronError("busy", f"a run of an earlier job {name!r} is still going")
            # A previous job of this name left its continuity behind; a new job starts clean.
            _state_file(home, name).unlink(missing_ok=True)
            entry = job.model_dump(mode="json")
            raw.append(entry)
            _write_raw(home, raw)
    return job


def set_enabled(home: Home, name: str, enabled: bool) -> CronJob:
    with _jobs_locked(home):
        raw = _read_raw(home)
        for entry in raw:
            if isinstance(entry, dict) and entry.get("name") == name:
                entry["enabled"] = enabled
                _write_raw(home, raw)
                break
        else:
            raise CronError("not_found", f"no cron job named {name!r}")
    return get_job(home, name)


def remove_job(home: Home, name: str, *, purge_output: bool = False) -> bool:
    """Remove ``name`` and its continuity; its output files stay unless ``purge_output``."""
    with _jobs_locked(home):
        raw = _read_raw(home)
        kept = [r for r in raw if not (isinstance(r, dict) and r.get("name") == name)]
        if len(kept) == len(raw):
            raise CronError("not_found", f"no cron job named {name!r}")
        with _run_lock(home, name) as held:
            if not held:
                raise CronError("busy", f"job {name!r} is running; remove it when it finishes")
            _write_raw(home, kept)
            _state_file(home, name).unlink(missing_ok=True)
            if purge_output:
                folder = output_dir(home, name)
                for path in folder.glob("*.md") if folder.is_dir() else []:
                    path.unlink(missing_ok=True)
                with contextlib.suppress(OSError):
                    folder.rmdir()
    # The lock file stays: unlinking it could let a process still holding the old inode and
    # one opening a new file both believe they run the job.
    return True


def load_state(home: Home, name: str) -> JobState:
    path = _state_file(home, name)
    try:
        return JobState.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        return JobState()
    except (OSError, ValueError, ValidationError):
        # A damaged state file costs one continuity note, not the job: start over.
        return JobState()


def _save_state(home: Home, name: str, state: JobState) -> None:
    path = _state_file(home, name)
    home.safe_folder(path.parent).mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, state.model_dump_json(indent=2) + "\n")


def next_run_at(job: CronJob, state: JobState) -> float | None:
    created = job.created_at.timestamp()
    after = state.last_run_at if state.last_run_at is not None else created
    return job.parsed.next_after(after, anchor=created)


def is_due(job: CronJob, state: JobState, now: float) -> bool:
    if not job.enabled:
        return False
    slot = next_run_at(job, state)
    return slot is not None and slot <= now


def list_jobs(home: Home) -> tuple[list[JobView], list[BrokenJob]]:
    jobs, broken = load_jobs(home)
    views = []
    for job in jobs:
        state = load_state(home, job.name)
        upcoming = next_run_at(job, state) if job.enabled else None
        views.append(
            JobView(
                job=job,
                state=state,
                next_run_at=upcoming,
                running_pid=running_pid(home, job.name),
            )
        )
    return views, broken


@contextlib.contextmanager
def all_runs_held(home: Home) -> Iterator[list[str]]:
    """Take every existing job's run lock for the block; yields the jobs that were busy.

    For operations (deleting a profile) that must not overlap any run.
    """
    folder = home.cron_dir / "locks"
    names = {p.stem for p in folder.glob("*.lock")} if folder.is_dir() else set()
    # Jobs that never ran have no lock file yet; take theirs too so none can start meanwhile.
    with contextlib.suppress(CronError):
        names |= {job.name for job in load_jobs(home)[0]}
    with contextlib.ExitStack() as stack:
        busy = [n for n in sorted(names) if not stack.enter_context(_run_lock(home, n))]
        yield busy
