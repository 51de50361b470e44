"""Dates said in words inside a query: "last week", "in August 2023", "three years ago".

``find_span`` takes the time expressions out of a query and resolves them to a span of unix
seconds against an anchor: now, or for an archive whose newest message is older than
``STALE_DAYS`` (an imported history), that newest message, which is the "now" its
conversations were had in. The spans are generous (a month named is the whole month and a week
after it, when the talk about it may have come), since search uses them to rank what falls
inside first, not to hide the rest.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

STALE_DAYS = 30
DAY = 86_400.0
MONTHS = {
    name: number
    for number, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "couple": 2,
    "few": 3,
}
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30.44, "year": 365.25}
_MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))
_COUNT = r"\d{1,3}|" + "|".join(_NUMBERS) + r"|a couple of|a few"
_PATTERNS = [
    # "in August 2023", "August 2023", "Aug, 2023", "in early march 2024"
    (
        "month_year",
        rf"\b(?:in |during |from |on )?(?:early |late |mid-?)?({_MONTH})\.?,? (\d{{4}})\b",
    ),
    # "2023-08", "2023/08"
    ("iso_month", r"\b(\d{4})[-/](\d{1,2})\b(?![-/]\d)"),
    ("ago", rf"\b({_COUNT}) (day|week|month|year)s? ago\b"),
    ("last", r"\b(?:last|past|previous) (week|month|year|weekend)\b"),
    ("this", r"\b(?:this|current) (week|month|year)\b"),
    ("yesterday", r"\byesterday\b"),
    ("recently", r"\b(?:recently|lately)\b"),
    ("in_year", r"\b(?:in|during) (\d{4})\b"),
    ("in_month", rf"\b(?:in|during|last) ({_MONTH})\b"),
]
_COMPILED = [(kind, re.compile(pattern, re.IGNORECASE)) for kind, pattern in _PATTERNS]


@dataclass(frozen=True)
class Span:
    since: float
    until: float


def anchor_time(newest: float | None, now: float) -> float:
    """The "now" of relative dates: the newest message when the archive is stale."""
    if newest is not None and newest < now - STALE_DAYS * DAY:
        return newest
    return now


def _month_span(year: int, month: int) -> Span:
    first = datetime(year, month, 1, tzinfo=UTC)
    days = calendar.monthrange(year, month)[1]
    # The month, and a week after it: "in August" is often told in early September.
    return Span(first.timestamp(), (first + timedelta(days=days + 7)).timestamp())


def _count(word: str) -> int:
    word = word.lower().removeprefix("a ").removesuffix(" of")
    return int(word) if word.isdigit() else _NUMBERS.get(word, 1)


def _resolve(kind: str, groups: tuple[str, ...], anchor: float) -> Span | None:
    at = datetime.fromtimestamp(anchor, UTC)
    if kind == "month_year":
        year = int(groups[1])
        return _month_span(year, MONTHS[groups[0].lower()]) if 1900 < year < 2200 else None
    if kind == "iso_month":
        year, month = int(groups[0]), int(groups[1])
        return _month_span(year, month) if 1900 < year < 2200 and 1 <= month <= 12 else None
    if kind == "ago":
        days = _count(groups[0]) * _UNIT_DAYS[groups[1].lower()]
        slack = max(2.0, days * 0.25)
        return Span(anchor - (days + slack) * DAY, anchor - max(0.0, days - slack) * DAY)
    if kind == "last":
        unit = groups[0].lower()
        days = {"week": 14, "weekend": 10, "month": 45, "year": 400}[unit]
        return Span(anchor - days * DAY, anchor)
    if kind == "this":
        unit = groups[0].lower()
        if unit == "year":
            return Span(datetime(at.year, 1, 1, tzinfo=UTC).timestamp(), anchor)
        return Span(anchor - (8 if unit == "week" else 32) * DAY, anchor)
    if kind == "yesterday":
        return Span(anchor - 3 * DAY, anchor)
    if kind == "recently":
        return Span(anchor - 30 * DAY, anchor)
    if kind == "in_year":
        year = int(groups[0])
        if not 1900 < year < 2200:
            return None
        start = datetime(year, 1, 1, tzinfo=UTC).timestamp()
        return Span(start, datetime(year + 1, 1, 8, tzinfo=UTC).timestamp())
    if kind == "in_month":
        month = MONTHS[groups[0].lower()]
        year = at.year if month <= at.month else at.year - 1  # the last such month
        return _month_span(year, month)
    return None


def find_span(text: str, anchor: float) -> tuple[Span | None, str]:
    """The span the query's date expressions name (the first one that resolves), and the
    query without them."""
    span: Span | None = None
    rest = text
    for kind, pattern in _COMPILED:
        match = pattern.search(rest)
        if match is None:
            continue
        if kind == "in_month" and match.group(1).lower() in ("may", "mar", "jun", "dec"):
            # "may" and friends are words too: only with "in"/"during" in front, and not
            # before a verb-like word ("in may be" is not a date).
            following = rest[match.end() :].lstrip()[:3].lower()
            if match.group(1).lower() == "may" and following[:2] in ("be", "ha"):
                continue
        found = _resolve(kind, match.groups(), anchor)
        if found is None:
            continue
        span = span or found
        rest = (rest[: match.start()] + " " + rest[match.end() :]).strip()
    return span, rest
