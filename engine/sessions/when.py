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
_COUNT = r"\d{1,3}|" + "|".join(_NUMBERS) + r"|a couple of|a few|half an?"
_ORDINAL = r"\d{1,2}(?:st|nd|rd|th)?"
# The months of each season (northern: what "last summer" means to most who say it).
SEASONS = {
    "spring": (3, 5),
    "summer": (6, 8),
    "autumn": (9, 11),
    "fall": (9, 11),
    "winter": (12, 2),
}
# Parts of a year: "early 2024", "mid-2024", "late 2024", "the end of 2024".
_PARTS = {
    "early": (1, 4),
    "start": (1, 3),
    "beginning": (1, 3),
    "mid": (5, 8),
    "middle": (5, 8),
    "late": (9, 12),
    "end": (10, 12),
}
_PATTERNS = [
    # "in August 2023", "August 2023", "Aug, 2023", "in early march 2024", "June 14, 2024",
    # "on 14th June 2024" (a day named still searches its month: the talk may come later)
    (
        "month_year",
        rf"\b(?:in |during |from |on )?(?:early |late |mid-?)?(?:(?:the )?{_ORDINAL} (?:of )?)?"
        rf"({_MONTH})\.?(?: {_ORDINAL})?,?(?: of)? (\d{{4}})\b",
    ),
    # "2023-08", "2023/08"
    ("iso_month", r"\b(\d{4})[-/](\d{1,2})\b(?![-/]\d)"),
    ("ago", rf"\b({_COUNT}) (day|week|month|year)s? (?:ago|back)\b"),
    ("before_last", r"\bthe (week|month|year) before last\b"),
    ("last", r"\b(?:last|past|previous) (week|month|year|weekend)\b"),
    # "in the summer of 2024", "spring 2024", "last winter", "this autumn", "in the fall"
    (
        "season",
        r"\b(?:(in|during|over|last|this|the|past)\s+(?:the\s+)?)?"
        r"(spring|summer|autumn|fall|winter)(?:\s+(?:of\s+)?(\d{4}))?\b",
    ),
    # "in late 2024", "mid-2024", "at the end of 2024", "early in 2024"
    (
        "part_year",
        r"\b(?:in |at |by |around )?(?:the )?(early|start|beginning|mid|middle|late|end)"
        r"(?:-| of | in | )(\d{4})\b",
    ),
    # "over Christmas", "at New Year": the last one before the anchor
    ("holiday", r"\b(?:over |at |for |around )?(christmas|xmas|new year(?:'s)?)\b"),
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


def _count(word: str) -> float:
    word = word.lower()
    if word.startswith("half"):
        return 0.5
    word = word.removeprefix("a ").removesuffix(" of")
    return int(word) if word.isdigit() else _NUMBERS.get(word, 1)


def _months_span(year: int, first: int, last: int) -> Span:
    """Months ``first``..``last`` of ``year`` (``last`` may be of the next year, as winter's
    February is), and a week after them: "in August" is often told in early September."""
    start = datetime(year, first, 1, tzinfo=UTC)
    end_year = year + 1 if last < first else year
    end = datetime(end_year, last, calendar.monthrange(end_year, last)[1], tzinfo=UTC)
    return Span(start.timestamp(), (end + timedelta(days=8)).timestamp())


def _season(word: str | None, name: str, year: str | None, at: datetime) -> Span | None:
    first, last = SEASONS[name.lower()]
    word = (word or "").lower()
    if not (word or year) or (word == "the" and name.lower() in ("fall", "spring")):
        # A season alone is often something else: "Summer" is a name, "did she fall" and
        # "the spring water" are a verb and a noun.
        return None
    if year is not None:
        y = int(year)
        return _months_span(y, first, last) if 1900 < y < 2200 else None
    # The season's latest start at or before the anchor; "last" the one before that
    # when the anchor is inside it.
    y = at.year if (at.month, at.day) >= (first, 1) else at.year - 1
    span = _months_span(y, first, last)
    if word in ("last", "past") and span.until > at.timestamp():
        span = _months_span(y - 1, first, last)
    return span


def _resolve(kind: str, groups: tuple[str, ...], anchor: float) -> Span | None:
    at = datetime.fromtimestamp(anchor, UTC)
    if kind == "month_year":
        year = int(groups[1])
        month = MONTHS[groups[0].lower()]
        return _months_span(year, month, month) if 1900 < year < 2200 else None
    if kind == "iso_month":
        year, month = int(groups[0]), int(groups[1])
        valid = 1900 < year < 2200 and 1 <= month <= 12
        return _months_span(year, month, month) if valid else None
    if kind == "ago":
        days = _count(groups[0]) * _UNIT_DAYS[groups[1].lower()]
        slack = max(2.0, days * 0.25)
        return Span(anchor - (days + slack) * DAY, anchor - max(0.0, days - slack) * DAY)
    if kind == "before_last":
        days = {"week": 7, "month": 30.44, "year": 365.25}[groups[0].lower()]
        return Span(anchor - 3 * days * DAY, anchor - days * DAY)
    if kind == "season":
        return _season(groups[0], groups[1], groups[2], at)
    if kind == "part_year":
        year = int(groups[1])
        first, last = _PARTS[groups[0].lower()]
        return _months_span(year, first, last) if 1900 < year < 2200 else None
    if kind == "holiday":
        # Christmas to the first days of the new year, the last one before the anchor.
        y = at.year if (at.month, at.day) >= (12, 20) else at.year - 1
        christmas = datetime(y, 12, 20, tzinfo=UTC)
        return Span(christmas.timestamp(), (christmas + timedelta(days=20)).timestamp())
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
        return _months_span(year, 1, 12) if 1900 < year < 2200 else None
    if kind == "in_month":
        month = MONTHS[groups[0].lower()]
        year = at.year if month <= at.month else at.year - 1  # the last such month
        return _months_span(year, month, month)
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
