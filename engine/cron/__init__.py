"""Scheduled jobs: a prompt the agent answers on a schedule, in its own ``cron`` session.

Layout inside a home::

    cron/jobs.yaml              job definitions (hand-editable; written atomically under a lock)
    cron/jobs.yaml.lock         serialises read-modify-write of jobs.yaml
    cron/state/<job>.json       what the last run did, and the reply kept for continuity
    cron/locks/<job>.lock       held (flock, non-blocking) for the whole of a run
    cron/output/<job>/*.md      one file per run: a short header, then the reply

A run is an ordinary :class:`~engine.agent.Agent` session with source ``cron``: it starts from
the frozen memory snapshot and may write memory through the memory tool, staged for approval
when approval is on. Only the holder of a job's run lock writes that job's state file, so two
schedulers (system cron and the desktop app, say) can never run one job twice at once.

Schedules are five-field cron expressions (minute hour day-of-month month day-of-week, in local
time; ``*``, lists, ranges, steps, month and day names, ``@daily``-style macros) or
``every N{m,h,d}``. Day of month and day of week follow classic cron: when both are restricted a
day matching either is enough; when either field starts with ``*`` both must match. Interval
schedules are anchored on the job's creation time so they do not drift with late ticks. A job
that missed slots while nothing was ticking runs once, not once per missed slot.

The package, one job per module: ``schedule`` (parsing schedules, the next slot), ``models``
(jobs, state, results, :class:`CronError`), ``store`` (jobs.yaml and the state files), ``lock``
(the run lock), ``continuity`` (the previous reply carried forward) and ``runner`` (a run, a
tick). Names with a leading underscore are shared inside the package only.
"""

from __future__ import annotations

from engine.cron.continuity import clean_reply, compose_prompt
from engine.cron.lock import running_jobs, running_pid
from engine.cron.models import (
    CONTINUITY_CHARS,
    CONTINUITY_CLOSE,
    CONTINUITY_OPEN,
    JOB_NAME,
    KEEP_OUTPUTS,
    BrokenJob,
    CronError,
    CronJob,
    JobState,
    JobView,
    RunResult,
    RunStatus,
    TickReport,
    validate_job_name,
)
from engine.cron.runner import AgentHook, due_jobs, run_job, tick, utc_iso
from engine.cron.schedule import (
    SEARCH_DAYS,
    CronExpression,
    Interval,
    Schedule,
    ScheduleError,
    parse_schedule,
)
from engine.cron.store import (
    add_job,
    all_runs_held,
    get_job,
    is_due,
    list_jobs,
    load_jobs,
    load_state,
    next_run_at,
    output_dir,
    remove_job,
    set_enabled,
)

__all__ = [
    "CONTINUITY_CHARS",
    "CONTINUITY_CLOSE",
    "CONTINUITY_OPEN",
    "JOB_NAME",
    "KEEP_OUTPUTS",
    "SEARCH_DAYS",
    "AgentHook",
    "BrokenJob",
    "CronError",
    "CronExpression",
    "CronJob",
    "Interval",
    "JobState",
    "JobView",
    "RunResult",
    "RunStatus",
    "Schedule",
    "ScheduleError",
    "TickReport",
    "add_job",
    "all_runs_held",
    "clean_reply",
    "compose_prompt",
    "due_jobs",
    "get_job",
    "is_due",
    "list_jobs",
    "load_jobs",
    "load_state",
    "next_run_at",
    "output_dir",
    "parse_schedule",
    "remove_job",
    "run_job",
    "running_jobs",
    "running_pid",
    "set_enabled",
    "tick",
    "utc_iso",
    "validate_job_name",
]

# Held by a caller standing in for a tick that is running the job (the window's tests do).
from engine.cron.lock import _run_lock as _run_lock
