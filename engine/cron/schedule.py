"""Schedule parsing: five-field cron expressions (local time, names, ranges, steps, macros)
and ``every N{m,h,d}`` intervals, each able to name its next slot.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass
from datetime import date, datetime, timedelta

# Classic cron cannot express an impossible date forever; 28 years is the weekday cycle of
# 29 February, so a schedule with no slot in that span has none at all.
SEARCH_DAYS = 366 * 29


class ScheduleError(ValueError):
    """A schedule that cannot be parsed or never fires."""


_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
_MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_EVERY = re.compile(
    r"^every\s+(\d{1,6})\s*(m|min|mins|minutes?|h|hr|hrs|hours?|d|days?)$", re.IGNORECASE
)
_UNIT_SECONDS = {"m": 60, "h": 3600, "d": 86400}


@dataclass(frozen=True)
class _Field:
    label: str
    low: int
    high: int
    names: tuple[str, ...] = ()
    name_base: int = 0


_FIELDS = (
    _Field("minute", 0, 59),
    _Field("hour", 0, 23),
    _Field("day of month", 1, 31),
    _Field("month", 1, 12, _MONTHS, 1),
    # 7 is Sunday too, as in every cron; folded to 0 after parsing.
    _Field("day of week", 0, 7, _DAYS, 0),
)


def _value(token: str, spec: _Field) -> int:
    lowered = token.lower()
    if lowered in spec.names:
        return spec.names.index(lowered) + spec.name_base
    if not token.isdigit():
        raise ScheduleError(f"{spec.label}: {token!r} is not a number")
    number = int(token)
    if not spec.low <= number <= spec.high:
        raise ScheduleError(f"{spec.label}: {number} is outside {spec.low}-{spec.high}")
    return number


def _parse_field(text: str, spec: _Field) -> frozenset[int]:
    values: set[int] = set()
    for part in text.split(","):
        if not part:
            raise ScheduleError(f"{spec.label}: empty item in {text!r}")
        base, slash, step_text = part.partition("/")
        step = 1
        if slash:
            if not step_text.isdigit() or int(step_text) == 0:
                raise ScheduleError(f"{spec.label}: step {step_text!r} must be a positive number")
            step = int(step_text)
        if base == "*":
            # A bare * in day of week means 0-6: Sunday must not count twice (as 0 and 7).
            start, end = spec.low, 6 if spec.label == "day of week" else spec.high
        elif "-" in base:
            first, _, last = base.partition("-")
            start, end = _value(first, spec), _value(last, spec)
            if start > end:
                raise ScheduleError(f"{spec.label}: range {base!r} runs backwards")
        else:
            start = _value(base, spec)
            # "5/15" means from 5 to the end in steps of 15, as cronie reads it.
            end = spec.high if slash else start
        values.update(range(start, end + 1, step))
    if spec.label == "day of week" and 7 in values:
        values.discard(7)
        values.add(0)
    return frozenset(values)


@dataclass(frozen=True)
class CronExpression:
    text: str
    minutes: tuple[int, ...]
    hours: tuple[int, ...]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Sunday
    day_star: bool
    weekday_star: bool

    def matches_day(self, day: date) -> bool:
        if day.month not in self.months:
            return False
        in_month = day.day in self.days
        in_week = day.isoweekday() % 7 in self.weekdays
        if self.day_star or self.weekday_star:
            return in_month and in_week
        return in_month or in_week

    def next_after(self, after: float, anchor: float | None = None) -> float | None:
        """The first slot strictly after ``after`` (unix seconds), in local time; None if the
        expression never fires. ``anchor`` is unused: cron slots are absolute."""
        start = datetime.fromtimestamp(after).replace(second=0, microsecond=0) + timedelta(
            minutes=1
        )
        day = start.date()
        for _ in range(SEARCH_DAYS):
            if self.matches_day(day):
                first = (start.hour, start.minute) if day == start.date() else (0, 0)
                for hour in self.hours:
                    if hour < first[0]:
                        continue
                    for minute in self.minutes:
                        if (hour, minute) < first:
                            continue
                        # Naive local time: .timestamp() applies the zone's offset for that
                        # day, so 09:00 stays 09:00 across a daylight-saving change.
                        slot = datetime(day.year, day.month, day.day, hour, minute).timestamp()
                        if slot > after:
                            return slot
            day += timedelta(days=1)
        return None


@dataclass(frozen=True)
class Interval:
    text: str
    seconds: int

    def next_after(self, after: float, anchor: float | None = None) -> float:
        """The first slot ``anchor + k * seconds`` strictly after ``after``."""
        base = after if anchor is None else anchor
        if after < base:
            return base + self.seconds
        steps = math.floor((after - base) / self.seconds) + 1
        return base + steps * self.seconds


Schedule = CronExpression | Interval


def parse_schedule(text: str) -> Schedule:
    """A cron expression, an ``@macro`` or ``every N{m,h,d}``; ScheduleError says what is wrong."""
    stripped = " ".join(text.split())
    if not stripped:
        raise ScheduleError("the schedule is empty")
    every = _EVERY.match(stripped)
    if every:
        count = int(every.group(1))
        if count == 0:
            raise ScheduleError("an interval must be at least 1")
        seconds = count * _UNIT_SECONDS[every.group(2)[0].lower()]
        return Interval(stripped, seconds)
    if stripped.lower().startswith("every"):
        raise ScheduleError(
            f"cannot read {stripped!r}: write an interval as 'every 30m', 'every 2h' or 'every 1d'"
        )
    expanded = _MACROS.get(stripped.lower(), stripped)
    if expanded.startswith("@"):
        raise ScheduleError(f"unknown schedule {stripped!r} (known: {', '.join(_MACROS)})")
    parts = expanded.split(" ")
    if len(parts) != 5:
        raise ScheduleError(
            f"a cron expression has 5 fields (minute hour day-of-month month day-of-week), "
            f"{stripped!r} has {len(parts)}"
        )
    sets = [_parse_field(part, spec) for part, spec in zip(parts, _FIELDS, strict=True)]
    expression = CronExpression(
        text=stripped,
        minutes=tuple(sorted(sets[0])),
        hours=tuple(sorted(sets[1])),
        days=sets[2],
        months=sets[3],
        weekdays=sets[4],
        day_star=parts[2].startswith("*"),
        weekday_star=parts[4].startswith("*"),
    )
    if expression.next_after(time.time()) is None:
        raise ScheduleError(f"{stripped!r} names no date that exists; it would never run")
    return expression
