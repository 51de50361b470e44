"""Cron schedules: what the parser accepts and refuses, and when each schedule fires next.

The next-slot search is checked against a brute-force minute scan written independently here,
over generated expressions, and in zones with daylight-saving changes.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from datetime import datetime, timedelta

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from engine.cron import CronExpression, Interval, ScheduleError, parse_schedule


@pytest.fixture
def zone(request: pytest.FixtureRequest) -> Iterator[str]:
    """Run the test in the time zone named by the parameter (default UTC)."""
    name = getattr(request, "param", "UTC")
    before = os.environ.get("TZ")
    os.environ["TZ"] = name
    time.tzset()
    yield name
    if before is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = before
    time.tzset()


def local(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def next_slot(expression: str, after: str, anchor: str | None = None) -> str:
    schedule = parse_schedule(expression)
    start = local(after)
    slot = schedule.next_after(start, anchor=local(anchor) if anchor else start)
    assert slot is not None
    return datetime.fromtimestamp(slot).isoformat(timespec="minutes")


# -- parsing -----------------------------------------------------------------------------


def test_fields_expand_lists_ranges_steps_and_names() -> None:
    expr = parse_schedule("0,15-20/2,58 */6 1-7 jan,JUN-aug mon-fri")
    assert isinstance(expr, CronExpression)
    assert expr.minutes == (0, 15, 17, 19, 58)
    assert expr.hours == (0, 6, 12, 18)
    assert expr.days == frozenset(range(1, 8))
    assert expr.months == frozenset({1, 6, 7, 8})
    assert expr.weekdays == frozenset({1, 2, 3, 4, 5})
    assert not expr.day_star and not expr.weekday_star


def test_sunday_is_0_and_7_and_a_start_with_a_step_runs_to_the_end() -> None:
    assert parse_schedule("0 0 * * 7").weekdays == frozenset({0})
    assert parse_schedule("0 0 * * 5-7").weekdays == frozenset({5, 6, 0})
    assert parse_schedule("0 0 * * */2").weekdays == frozenset({0, 2, 4, 6})
    assert parse_schedule("10/20 * * * *").minutes == (10, 30, 50)


def test_macros_and_intervals() -> None:
    assert parse_schedule("@daily").minutes == (0,)
    assert parse_schedule("@weekly").weekdays == frozenset({0})
    assert parse_schedule("every 30m") == Interval("every 30m", 1800)
    assert parse_schedule("every 2 hours") == Interval("every 2 hours", 7200)
    assert parse_schedule("EVERY 1d").seconds == 86400


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        ("", "empty"),
        ("* * * *", "5 fields"),
        ("* * * * * *", "5 fields"),
        ("60 * * * *", "outside 0-59"),
        ("* 24 * * *", "outside 0-23"),
        ("* * 0 * *", "outside 1-31"),
        ("* * * 13 *", "outside 1-12"),
        ("* * * * 8", "outside 0-7"),
        ("5-1 * * * *", "backwards"),
        ("*/0 * * * *", "positive"),
        ("1,,2 * * * *", "empty item"),
        ("-1 * * * *", "not a number"),
        ("* * * foo *", "not a number"),
        ("0 0 30 2 *", "never run"),
        ("0 0 31 4,6,9,11 *", "never run"),
        ("@reboot", "unknown schedule"),
        ("every 0m", "at least 1"),
        ("every 5 weeks", "every 30m"),
    ],
)
def test_bad_schedules_are_refused_with_the_reason(text: str, complaint: str) -> None:
    with pytest.raises(ScheduleError, match=complaint):
        parse_schedule(text)


# -- next slot -----------------------------------------------------------------------------


@pytest.mark.usefixtures("zone")
@pytest.mark.parametrize(
    ("expression", "after", "expected"),
    [
        ("*/15 * * * *", "2026-01-30T10:07:30", "2026-01-30T10:15"),
        ("*/15 * * * *", "2026-01-30T10:15:00", "2026-01-30T10:30"),  # strictly after
        ("0 9 * * mon-fri", "2026-01-30T10:00", "2026-02-02T09:00"),  # Friday -> Monday
        ("30 23 31 * *", "2026-02-01T00:00", "2026-03-31T23:30"),  # skips short months
        ("0 0 29 2 *", "2026-03-01T00:00", "2028-02-29T00:00"),  # next leap day
        ("0 0 13 * fri", "2026-01-01T00:00", "2026-01-02T00:00"),  # both set: either matches
        ("0 0 13 * fri", "2026-01-10T00:00", "2026-01-13T00:00"),
        ("0 0 */2 * fri", "2026-01-01T00:00", "2026-01-09T00:00"),  # '*' first: both must
        ("59 23 31 12 *", "2026-12-31T23:59", "2027-12-31T23:59"),
        ("@hourly", "2026-01-30T10:00", "2026-01-30T11:00"),
    ],
)
def test_next_cron_slot(expression: str, after: str, expected: str) -> None:
    assert next_slot(expression, after) == expected


def test_intervals_are_anchored_on_creation_and_do_not_drift() -> None:
    # Created 10:00, every 30 minutes; a tick at 10:31 ran it late: the next slot is 11:00.
    assert next_slot("every 30m", "2026-01-30T10:31", "2026-01-30T10:00") == "2026-01-30T11:00"
    assert next_slot("every 30m", "2026-01-30T10:00", "2026-01-30T10:00") == "2026-01-30T10:30"
    # Days of missed ticks: one slot, the next one after now, not a backlog.
    assert next_slot("every 2h", "2026-02-03T09:10", "2026-01-30T10:00") == "2026-02-03T10:00"


@pytest.mark.parametrize("zone", ["Europe/Berlin"], indirect=True)
def test_wall_clock_times_hold_across_daylight_saving_changes(zone: str) -> None:
    # 29 March 2026: clocks jump from 02:00 to 03:00 in Berlin. 09:00 stays 09:00 local.
    before = local("2026-03-28T10:00")
    slot = parse_schedule("0 9 * * *").next_after(before)
    assert slot is not None
    assert datetime.fromtimestamp(slot).isoformat(timespec="minutes") == "2026-03-29T09:00"
    assert slot - before == timedelta(hours=22).total_seconds()  # an hour shorter day
    # 02:30 does not exist that day: the job runs at 03:30, and at 02:30 again the day after.
    gap = parse_schedule("30 2 * * *")
    skipped = gap.next_after(local("2026-03-29T00:00"))
    assert skipped is not None
    assert datetime.fromtimestamp(skipped).isoformat(timespec="minutes") == "2026-03-29T03:30"
    following = gap.next_after(skipped)
    assert following is not None
    assert datetime.fromtimestamp(following).isoformat(timespec="minutes") == "2026-03-30T02:30"
    # 25 October 2026: 02:00-03:00 happens twice; a daily 02:30 job still runs once that day.
    daily = parse_schedule("30 2 * * *")
    first = daily.next_after(local("2026-10-25T00:00"))
    assert first is not None
    second = daily.next_after(first)
    assert second is not None
    assert datetime.fromtimestamp(second).date().isoformat() == "2026-10-26"


# -- against a brute-force scan ------------------------------------------------------------


def _brute_values(field: str, low: int, high: int) -> set[int]:
    """An independent reading of one field, numbers only (what the generator produces)."""
    out: set[int] = set()
    for part in field.split(","):
        base, _, step = part.partition("/")
        if base == "*":
            lo, hi = low, high
        elif "-" in base:
            lo, hi = (int(x) for x in base.split("-"))
        else:
            lo = int(base)
            hi = high if step else lo
        out.update(range(lo, hi + 1, int(step or 1)))
    return out


def _brute_next(expression: str, after: datetime) -> datetime | None:
    minute, hour, dom, month, dow = expression.split()
    minutes = _brute_values(minute, 0, 59)
    hours = _brute_values(hour, 0, 23)
    days = _brute_values(dom, 1, 31)
    months = _brute_values(month, 1, 12)
    # Day of week runs 0-7 (7 is Sunday again), so an open step like "1/1" reaches Sunday.
    weekdays = {d % 7 for d in _brute_values(dow, 0, 7)}
    either = not dom.startswith("*") and not dow.startswith("*")
    moment = after.replace(second=0, microsecond=0) + timedelta(minutes=1)
    # A date and a weekday together ("* * 1 1 */5": 1 January on a Friday or Sunday) can be
    # years away; weekdays and dates repeat within 28 years.
    end = after + timedelta(days=366 * 29)
    while moment < end:
        in_dom = moment.day in days
        in_dow = (moment.weekday() + 1) % 7 in weekdays
        day_ok = moment.month in months and ((in_dom or in_dow) if either else in_dom and in_dow)
        if not day_ok:
            moment = (moment + timedelta(days=1)).replace(hour=0, minute=0)
            continue
        if moment.hour in hours and moment.minute in minutes:
            return moment
        moment += timedelta(minutes=1)
    return None


def _field(low: int, high: int) -> st.SearchStrategy[str]:
    number = st.integers(low, high)
    single = number.map(str)
    ranged = st.tuples(number, number).map(lambda p: f"{min(p)}-{max(p)}")
    stepped = st.tuples(st.sampled_from(["*", *map(str, range(low, high + 1))]), st.integers(1, 9))
    step = stepped.map(lambda p: f"{p[0]}/{p[1]}")
    item = st.one_of(single, ranged, step)
    listed = st.lists(item, min_size=1, max_size=3).map(",".join)
    return st.one_of(st.just("*"), listed)


expressions = st.tuples(
    _field(0, 59), _field(0, 23), _field(1, 28), _field(1, 12), _field(0, 6)
).map(" ".join)


@pytest.mark.usefixtures("zone")
@settings(max_examples=150, deadline=None)
@example(expression="* * * * 1/1", after=datetime(2024, 9, 1, 0, 0))
@example(expression="* * 1 1 */5", after=datetime(2024, 1, 1, 0, 0))
@given(
    expression=expressions,
    after=st.datetimes(min_value=datetime(2024, 1, 1), max_value=datetime(2030, 12, 31)),
)
def test_next_slot_matches_a_brute_force_scan(expression: str, after: datetime) -> None:
    expected = _brute_next(expression, after)
    slot = parse_schedule(expression).next_after(after.timestamp())
    assert expected is not None  # days 1-28 exist in every month, every weekday within 28 years
    assert slot is not None
    assert datetime.fromtimestamp(slot) == expected
