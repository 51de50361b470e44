"""The data of cron: a job's definition, its state after a run, a run's result and a
tick's report, and the error every refused cron operation raises.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from engine.cron.schedule import Schedule, parse_schedule
from engine.errors import CairnError

JOB_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
CONTINUITY_CHARS = 2000
KEEP_OUTPUTS = 200
CONTINUITY_OPEN = "<previous_run_reply>"
CONTINUITY_CLOSE = "</previous_run_reply>"


class CronError(CairnError):
    """A refused cron operation; ``code`` is machine-readable."""


def validate_job_name(name: str) -> str:
    if not JOB_NAME.fullmatch(name):
        raise CronError(
            "invalid",
            f"invalid job name {name!r}: use 1-64 characters, lowercase letters, digits, '_' or "
            "'-', starting with a letter or digit",
        )
    return name


class CronJob(BaseModel):
    # Keys Cairn does not know are kept, so a hand-added note survives the next write.
    model_config = ConfigDict(extra="allow")

    name: str
    schedule: str
    prompt: str = Field(min_length=1)
    continuity: bool = False
    enabled: bool = True
    created_at: datetime
    continuity_chars: int = Field(default=CONTINUITY_CHARS, ge=100, le=100_000)
    keep_outputs: int = Field(default=KEEP_OUTPUTS, ge=1, le=100_000)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not JOB_NAME.fullmatch(value):
            raise ValueError("use lowercase letters, digits, '_' or '-'")
        return value

    @field_validator("schedule")
    @classmethod
    def _schedule(cls, value: str) -> str:
        parse_schedule(value)
        return value

    @field_validator("created_at")
    @classmethod
    def _aware(cls, value: datetime) -> datetime:
        return value if value.tzinfo is not None else value.astimezone()

    @property
    def parsed(self) -> Schedule:
        return parse_schedule(self.schedule)


class JobState(BaseModel):
    """What the last run did; written only by the process holding the job's run lock."""

    last_run_at: float | None = None  # when the last run started, whatever its outcome
    last_finished_at: float | None = None
    last_status: Literal["ok", "error", "cancelled"] | None = None
    last_error: str | None = None
    last_session_id: str | None = None
    last_output: str | None = None
    # The reply of the last successful run, cleaned and capped: the only text continuity feeds
    # into the next run.
    last_reply: str = ""
    last_reply_at: float | None = None
    runs: int = 0


class BrokenJob(BaseModel):
    index: int
    name: str | None
    error: str


class JobView(BaseModel):
    """A job as ``cron list`` shows it."""

    job: CronJob
    state: JobState
    next_run_at: float | None
    running_pid: int | None


RunStatus = Literal["ok", "error", "cancelled", "busy", "not_due", "missing"]


class RunResult(BaseModel):
    job: str
    status: RunStatus
    trigger: str
    reply: str = ""
    error: str | None = None
    session_id: str | None = None
    output: str | None = None
    started_at: float | None = None
    finished_at: float | None = None
    continuity_used: bool = False


class TickReport(BaseModel):
    home: str
    runs: list[RunResult] = Field(default_factory=list)
    problems: list[str] = Field(default_factory=list)
    indexed: int = 0  # messages a large import had left to the session indexes, filled now
    index_left: int = 0  # and those still left to a later tick

    @property
    def ok(self) -> bool:
        return not self.problems and all(r.status in ("ok", "busy", "not_due") for r in self.runs)
