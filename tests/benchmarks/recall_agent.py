"""A third synthetic archive for the relevance benchmark: an agent's own sessions with its user.

    python tests/benchmarks/recall_agent.py [--seed 211] [--examples 3]

recall.py's and recall_diary.py's archives are chats between people, every turn ``Name: text``.
What Cairn stores most is its own work: a user asking for help and an assistant answering at
length. Here one user works with the assistant over about eleven months: three software
projects (hosting, databases, test runners, retry settings, releases and outages), a household
(a partner's diet, a child's school, a dog, a car, a mortgage), health, travel, reading and
races. The user's turns are requests that state a fact in passing ("We're on Fly.io in
Frankfurt, if that matters"); the assistant's are long replies of several sentences, some with
a decision in the middle of them ("…so I'd keep SQLite in WAL mode for Larkspur…"). Other
sessions are plain help (a regular expression, a spreadsheet formula, a cover letter) whose
replies share the facts' words in general ("Postgres is the usual choice when…"), and a few
turns say a fact's words of someone else ("My sister's dog is a greyhound too").

Turns are stored as written, with no speaker's name: the role says who speaks.

Two batches were written before any ranking was tuned on this archive, each from its own
templates: ``agent-dev`` (the user asking, first person: "Where did I say Larkspur is
hosted?"; may be tuned on and its misses read) and ``agent-test`` (as an agent words a search
for its user: third person, terse, or about the general idea; measured only). A third,
``agent-fresh``, was written after the ranking changes chosen on agent-dev, without running
them: an agent thinking aloud before it acts, yes/no checks, loose dates (measured only). A
fourth, ``agent-later``, was written after the next round's change, again without running it:
the user's instruction passed on as the search ("find the chat where…"). Each has the four
kinds of question: single, multi (a fact over several sessions), temporal (a
month and year, a span counted back, "when did…") and inference.
"""

from __future__ import annotations

import argparse
import random
import re
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from recall import (  # type: ignore[import-not-found]  # noqa: E402
    MONTHS,
    Question,
    Session,
    Turn,
    _ago,
)

AGENT_SEED = 211
BATCHES = ("agent-dev", "agent-test", "agent-fresh", "agent-later", "agent-asked")
SESSIONS = 220
START = datetime(2025, 1, 6, 9, 30, tzinfo=UTC)
USER, ASSISTANT = "user", "assistant"


class Said(Turn):  # type: ignore[misc, valid-type]
    """A turn stored as written: an agent's sessions carry the role, not a name in the text."""

    def content(self) -> str:
        return str(self.text)


def _user(text: str) -> Said:
    return Said(USER, text)


def _assistant(text: str) -> Said:
    return Said(ASSISTANT, text)


# -- what long replies are made of --------------------------------------------------------------

OPENERS = [
    "Good question.",
    "Sure, here's how I'd approach it.",
    "Happy to help with that.",
    "Short answer: yes, with one caveat.",
    "Let's take it step by step.",
    "That makes sense given what you've described.",
    "There are a couple of ways to do this.",
    "Thanks, that's useful context.",
]
CLOSERS = [
    "Want me to draft the next step?",
    "Let me know if you'd like a worked example.",
    "If anything's unclear, paste the output and we'll look at it together.",
    "I can turn this into a checklist if that helps.",
    "Shout if you hit an error along the way.",
    "That should be enough to get you going.",
]
# Sentences of general advice a reply is padded with: words that facts also use, said of nothing
# in particular, as real replies are full of.
GENERAL = [
    "Postgres is the usual choice once several services write to the same data.",
    "SQLite handles far more traffic than people expect, as long as one process does the writing.",
    "Most hosting providers offer a free tier that is fine for a side project.",
    "A test runner that shows the failing assertion clearly saves more time than speed does.",
    "Retries without a cap can turn a short outage into a long one.",
    "Exponential backoff with some jitter keeps clients from retrying in lockstep.",
    "Gluten turns up in soy sauce, stock cubes and most beers, which catches people out.",
    "Greyhounds are often described as forty-mile-an-hour couch potatoes.",
    "School admissions usually close in the January before the September start.",
    "A fixed-rate mortgage trades a slightly higher rate for certainty.",
    "Physiotherapy tends to work best with a little every day rather than a lot once a week.",
    "Release notes are easier to write if every merged change has a one-line summary.",
    "An outage review is about the system, not about who pressed the button.",
    "Half marathons reward an even pace more than a fast start.",
    "A reading list goes further if you alternate long books with short ones.",
    "Night trains are often cheaper than they look once you count the hotel you save.",
    "The MOT can be done up to a month before the due date without losing any time.",
    "Keep secrets out of the repository and load them from the environment instead.",
    "Logging the request id on every line makes an incident far easier to trace.",
    "Back up anything you couldn't recreate, and test a restore now and then.",
    "A spreadsheet is a perfectly good budget tool if you update it weekly.",
    "For a cover letter, one concrete achievement beats three adjectives.",
    "Most regular expression bugs come from greedy quantifiers.",
    "Type hints pay for themselves the first time you rename something.",
    "It's worth pinning dependency versions before a release, not after.",
    "Caching helps reads, but it won't fix a slow write path.",
    "A standing desk is only useful if you actually alternate.",
    "Meal planning on a Sunday saves a surprising amount of money.",
]


def _reply(rng: random.Random, core: list[str], pad: tuple[int, int] = (2, 4)) -> str:
    """A long reply: an opener, the core sentences amid general ones, a closer."""
    padding = rng.sample(GENERAL, rng.randint(*pad))
    cut = rng.randint(0, len(padding))
    return " ".join(
        [rng.choice(OPENERS), *padding[:cut], *core, *padding[cut:], rng.choice(CLOSERS)]
    )


def _exchange(
    rng: random.Random, ask: str, core: list[str], pad: tuple[int, int] = (2, 4), then: str = ""
) -> list[Said]:
    """A request, the long reply to it, and the user's word after it when ``then`` says one."""
    turns = [_user(ask), _assistant(_reply(rng, core, pad))]
    return [*turns, _user(then)] if then else turns


# -- the facts ----------------------------------------------------------------------------------


@dataclass
class Fact:
    """Turns that state a fact, which of them is the evidence, what it must say, the slots."""

    kind: str
    turns: list[Said]
    evidence: int
    answer: str
    slots: dict[str, str]
    series: str | None = None  # recurring facts of one series (releases of one project, …)


PROJECTS = ["Larkspur", "Tidepool", "Quillon", "Fernhill", "Brightwater"]
WHAT = {
    "Larkspur": "online shop",
    "Tidepool": "command-line tool",
    "Quillon": "data pipeline",
    "Fernhill": "booking site",
    "Brightwater": "mobile app's backend",
}
HOSTS = [
    ("Fly.io", "Frankfurt"),
    ("Hetzner", "Helsinki"),
    ("Render", "Oregon"),
    ("DigitalOcean", "Amsterdam"),
]
DATABASES = [
    ("SQLite in WAL mode", "SQLite", "the writes all come from one worker"),
    ("Postgres 16", "Postgres", "the reporting job and the web app both write"),
    ("DuckDB", "DuckDB", "every query is an aggregate over a few million rows"),
]
RUNNERS = [("pytest", "pytest-xdist"), ("Vitest", "its watch mode"), ("Go's testing package", "")]
RETRIES = [("200", "5"), ("500", "3"), ("250", "8")]


def hosting(rng: random.Random, project: str) -> Fact:
    host, region = rng.choice(HOSTS)
    ask = (
        f"The {WHAT[project]}, {project}, is deployed on {host} in the {region} region, if that "
        f"matters. How do I stop the health check from failing right after a deploy?"
    )
    core = [
        "The health check is probably firing before the app has opened its port.",
        "Give it a grace period of thirty seconds and point it at a cheap endpoint.",
    ]
    return Fact(
        "hosting",
        _exchange(rng, ask, core),
        0,
        host,
        {"project": project, "host": host, "region": region},
    )


def database(rng: random.Random, project: str) -> Fact:
    choice, short, why = rng.choice(DATABASES)
    ask = f"Should {project} move to a different database before the launch?"
    core = [
        f"Since {why}, I'd stay with {choice} for {project} for now.",
        "We can revisit it if a second writer ever appears.",
    ]
    return Fact(
        "database",
        _exchange(rng, ask, core, then="Agreed, let's leave it."),
        1,
        short,
        {"project": project, "db": short},
    )


def runner(rng: random.Random, project: str) -> Fact:
    name, extra = rng.choice(RUNNERS)
    ask = f"The tests for {project} take forever and half of them are flaky. What would you use?"
    core = [f"I'd move {project}'s suite to {name}" + (f" with {extra}." if extra else ".")]
    core.append("Mark the flaky ones and fix them one by one rather than retrying them blindly.")
    return Fact(
        "runner",
        _exchange(rng, ask, core, then="Done, it's much quicker now."),
        1,
        name.split()[0],
        {"project": project, "runner": name},
    )


def retry(rng: random.Random, project: str) -> Fact:
    base, attempts = rng.choice(RETRIES)
    ask = f"{project}'s webhook calls fail whenever the payment provider hiccups."
    core = [
        f"Retry with exponential backoff starting at {base} milliseconds, at most {attempts} "
        "attempts, and send what still fails to a dead-letter table."
    ]
    return Fact(
        "retry",
        _exchange(rng, ask, core, then="Perfect, I'll set it up like that."),
        1,
        base,
        {"project": project, "base": base, "attempts": attempts},
    )


PARTNERS = [("Noor", "coeliac", "gluten"), ("Tomasz", "allergic to sesame", "sesame")]
KIDS = [("Ellis", "Brookfield Primary"), ("Maya", "St Anne's Juniors")]
DOGS = [("Pickle", "greyhound"), ("Moss", "border collie")]
JOINTS = [("left shoulder", "climbing"), ("right knee", "playing football")]
CARS = [("Skoda Octavia", "March"), ("Toyota Yaris", "October")]
LANGUAGES = ["Portuguese", "Japanese", "Welsh"]
NEWSLETTERS = [("Low Tide Notes", "Thursday"), ("The Margin", "Sunday")]
MEDS = [("lisinopril", "blood pressure"), ("levothyroxine", "thyroid")]
BIRTHDAYS = [("Gran", "a cashmere scarf"), ("Aunt Ruth", "a bread maker")]


def diet(rng: random.Random) -> Fact:
    partner, condition, avoid = rng.choice(PARTNERS)
    ask = (
        f"Can you plan five weeknight dinners? {partner} is {condition}, so nothing with "
        f"{avoid} in it, and I've got about thirty minutes each night."
    )
    core = [
        "Monday: a traybake of chicken thighs, peppers and chickpeas.",
        "Tuesday: salmon with rice and greens. Wednesday: a lentil dal.",
        "Thursday: steak and potato wedges. Friday: homemade pizza on a suitable base.",
    ]
    return Fact(
        "diet",
        _exchange(rng, ask, core, (1, 2)),
        0,
        avoid,
        {"partner": partner, "avoid": avoid},
    )


def school(rng: random.Random) -> Fact:
    kid, place = rng.choice(KIDS)
    ask = (
        f"{kid} starts at {place} in September and they want a short note about any worries. "
        "Could you help me write one? Mostly that they're shy at first."
    )
    core = [f"Here's a draft: 'Dear {place} team, {kid} is looking forward to starting…'"]
    return Fact("school", _exchange(rng, ask, core), 0, place, {"kid": kid, "at": place})


def dog(rng: random.Random) -> Fact:
    name, breed = rng.choice(DOGS)
    ask = (
        f"Our rescue {breed}, {name}, keeps pulling on the lead whenever she sees a cat. "
        "Any training tips that don't involve shouting?"
    )
    core = ["Stop walking the moment the lead goes tight, and reward her when it slackens."]
    return Fact("dog", _exchange(rng, ask, core), 0, breed, {"name": name, "breed": breed})


def injury(rng: random.Random) -> Fact:
    joint, sport = rng.choice(JOINTS)
    ask = (
        f"I'm seeing a physio for my {joint} after hurting it {sport}. She gave me exercises "
        "but I keep forgetting them. Can you make me a daily plan?"
    )
    core = ["Morning: ten slow rotations and a wall stretch. Evening: the band exercises, 3x12."]
    return Fact(
        "injury",
        _exchange(rng, ask, core, (1, 3)),
        0,
        joint,
        {"joint": joint, "sport": sport},
    )


def car(rng: random.Random) -> Fact:
    model, month = rng.choice(CARS)
    ask = (
        f"Remind me nearer the time: the {model}'s MOT is due in {month}. Also, is it worth "
        "getting it serviced at the same time?"
    )
    core = ["Doing both on the same visit usually saves a second trip and sometimes a discount."]
    return Fact("car", _exchange(rng, ask, core), 0, model, {"model": model, "mot": month})


def mortgage(rng: random.Random) -> Fact:
    rate = rng.choice(["4.19", "3.89", "4.45"])
    ask = (
        f"Our fixed rate ends in the summer and the broker has offered {rate}% for five years. "
        "Is that reasonable, or should we wait?"
    )
    core = [
        "Nobody can call the market, but a five-year fix is reasonable if certainty matters to "
        "you more than the last quarter point."
    ]
    return Fact("mortgage", _exchange(rng, ask, core), 0, rate, {"rate": rate})


def language(rng: random.Random) -> Fact:
    lang = rng.choice(LANGUAGES)
    ask = (
        f"I've started learning {lang}, twenty minutes a day before work. What's a good way to "
        "practise speaking when I don't know anyone who speaks it?"
    )
    core = ["Shadowing works well: play a short clip and repeat it aloud, a second behind."]
    return Fact("language", _exchange(rng, ask, core), 0, lang, {"lang": lang})


def newsletter(rng: random.Random) -> Fact:
    name, day = rng.choice(NEWSLETTERS)
    ask = (
        f"My newsletter, {name}, goes out every {day}. Could you tighten this week's intro? "
        "It rambles."
    )
    core = ["Here's a shorter version that gets to the point in the first line."]
    return Fact(
        "newsletter",
        _exchange(rng, ask, core),
        0,
        name,
        {"name": name, "day": day},
    )


def medication(rng: random.Random) -> Fact:
    med, condition = rng.choice(MEDS)
    ask = (
        f"I take {med} every morning for my {condition}. Is it fine to have grapefruit juice "
        "with breakfast?"
    )
    core = ["That one is worth checking with your pharmacist, who can see your whole list."]
    return Fact(
        "medication",
        _exchange(rng, ask, core),
        0,
        med,
        {"med": med, "condition": condition},
    )


def birthday(rng: random.Random) -> Fact:
    who, gift = rng.choice(BIRTHDAYS)
    ask = f"{who}'s birthday is next month and she's hinted she'd like {gift}. Any good ones?"
    core = ["Look for one with good reviews on durability rather than the most features."]
    return Fact("birthday", _exchange(rng, ask, core), 0, gift, {"who": who, "gift": gift})


def backup(rng: random.Random) -> Fact:
    target, hour = rng.choice([("a Backblaze bucket", "2 a.m."), ("the Synology NAS", "3 a.m.")])
    ask = "The family photos are only on my laptop. Can you set up something automatic?"
    core = [
        f"I've written a cron job that copies the photo library to {target} every night at "
        f"{hour}, keeping thirty daily versions."
    ]
    return Fact(
        "backup",
        _exchange(rng, ask, core, then="Brilliant, thank you."),
        1,
        target.split()[-2] if target.endswith("bucket") else "NAS",
        {"target": target, "hour": hour},
    )


# Recurring facts: several values over the months, each its own session.
FEATURES = ["gift cards", "a dark mode", "CSV export", "rate limiting", "a plugin API", "retries"]
CAUSES = [
    ("the disk filled up with logs", "disk"),
    ("an expired TLS certificate", "certificate"),
    ("a migration that locked the orders table", "migration"),
    ("the DNS provider's outage", "DNS"),
]
RACES = [
    ("Bath Half", "1:52"),
    ("a parkrun at Victoria Park", "24:10"),
    ("the Cardiff 10K", "51:30"),
    ("the Great North Run", "1:58"),
]
BOOKS = [
    ("Piranesi", "Susanna Clarke"),
    ("The Overstory", "Richard Powers"),
    ("Klara and the Sun", "Kazuo Ishiguro"),
    ("Project Hail Mary", "Andy Weir"),
]


def release(rng: random.Random, project: str, version: str, feature: str) -> Fact:
    ask = f"Tagged {project} {version} this morning, the one with {feature}. Can you help me "
    ask += "write the release notes? Here's the changelog."
    core = [f"{project} {version} adds {feature}.", "Upgrading needs no changes to your config."]
    return Fact(
        "release",
        _exchange(rng, ask, core, (1, 2)),
        0,
        version,
        {"project": project, "version": version, "feature": feature},
        f"release/{project}",
    )


def outage(rng: random.Random, project: str, cause: tuple[str, str]) -> Fact:
    minutes = rng.choice(["twenty", "forty", "ninety"])
    ask = f"{project} was down for {minutes} minutes last night. Can you help me write it up?"
    core = [
        f"From the timeline you pasted, the root cause was {cause[0]}.",
        "The fix is in; the follow-up is an alert that fires before it happens again.",
    ]
    return Fact(
        "outage",
        _exchange(rng, ask, core, (1, 2)),
        1,
        cause[1],
        {"project": project, "cause": cause[0]},
        f"outage/{project}",
    )


def race(rng: random.Random, name: str, time: str) -> Fact:
    ask = f"Ran {name} on Sunday in {time}! My legs are wrecked. What should recovery look like?"
    core = ["Two or three easy days, plenty of sleep, and a short walk rather than total rest."]
    return Fact(
        "race",
        _exchange(rng, ask, core),
        0,
        name.split()[-1],
        {"race": name, "time": time},
        "race",
    )


def book(rng: random.Random, title: str, author: str) -> Fact:
    ask = f"Just finished {title} by {author} and I loved it. What should I read next?"
    core = ["If you liked the voice of that one, try something by the same editor's list."]
    return Fact(
        "book",
        _exchange(rng, ask, core),
        0,
        title,
        {"title": title, "author": author},
        "book",
    )


# -- plain help and echoes ----------------------------------------------------------------------

HELP = [
    "Can you write a regular expression that matches UK postcodes?",
    "What's the spreadsheet formula to sum a column only where the next column says 'paid'?",
    "Help me write a cover letter for a product designer role.",
    "How do I undo the last git commit but keep the changes?",
    "Explain the difference between a process and a thread, briefly.",
    "What's a polite way to decline a meeting that has no agenda?",
    "Can you convert this list of dates from US to UK format?",
    "How do I stop my laptop fan from running all the time?",
    "Suggest a name for a team channel about releases.",
    "Is it better to pay off a credit card or put money in savings first?",
    "What's a good stretch for a stiff neck after a long day at the desk?",
    "How long should I rest bread dough before shaping it?",
    "Write a short apology email for missing a deadline.",
    "What does a 502 error from a load balancer usually mean?",
    "How do I make a Python script run every hour on a Mac?",
    "Give me a packing list for a weekend of hiking.",
]
FOLLOW_UPS = ["Thanks, that works.", "Great, one more thing.", "Got it.", "That's clearer now."]
ECHOES = [
    "My sister's dog is a greyhound too, funnily enough.",
    "A friend's kid goes to Brookfield Primary and loves it.",
    "My manager is learning Japanese for a work trip.",
    "Someone at work was coeliac and brought their own lunch everywhere.",
    "My brother's team moved everything to Postgres 16 last year.",
    "A colleague ran the Bath Half and said the hills were brutal.",
    "My neighbour hurt her right knee playing football.",
    "Our old office ran its servers at Hetzner.",
    "My dad drives a Toyota Yaris and won't hear a word against it.",
    "A friend recommended Piranesi but I haven't started it.",
]


def _help(rng: random.Random) -> list[Said]:
    ask = rng.choice(HELP)
    turns = [_user(ask), _assistant(_reply(rng, ["Here's what I'd do."], (2, 4)))]
    if rng.random() < 0.5:
        turns += [_user(rng.choice(FOLLOW_UPS)), _assistant(_reply(rng, [], (1, 2)))]
    return turns


def _echo(rng: random.Random) -> list[Said]:
    ask = rng.choice(HELP)
    return [
        _user(f"{rng.choice(ECHOES)} Anyway, {ask[0].lower()}{ask[1:]}"),
        _assistant(_reply(rng, [], (2, 3))),
    ]


# -- the archive --------------------------------------------------------------------------------


@dataclass
class Placed:
    fact: Fact
    key: str
    start: int  # index of the fact's first turn in its session
    when: datetime

    @property
    def where(self) -> tuple[str, int]:
        return (self.key, self.start + self.fact.evidence)


@dataclass
class AgentArchive:
    sessions: list[Session]
    placed: list[Placed] = field(default_factory=list)


def build_archive(seed: int = AGENT_SEED) -> AgentArchive:
    rng = random.Random(seed)
    facts: list[Fact] = []
    for project in PROJECTS:
        for builder in (hosting, database, runner, retry):
            facts.append(builder(rng, project))
        versions = ["0.4", "0.5", "0.6", "1.0"]
        for version, feature in zip(versions[:3], rng.sample(FEATURES, 3), strict=True):
            facts.append(release(rng, project, f"v{version}", feature))
        for cause in rng.sample(CAUSES, 2):
            facts.append(outage(rng, project, cause))
    for builder in (diet, school, dog, injury, car, mortgage, language, newsletter, medication):
        facts.append(builder(rng))
    facts += [birthday(rng), backup(rng)]
    facts += [race(rng, *r) for r in rng.sample(RACES, 3)]
    facts += [book(rng, *b) for b in rng.sample(BOOKS, 3)]
    # Each fact in a session of its own, in time order within its series; the rest plain help.
    slots = sorted(rng.sample(range(SESSIONS), len(facts)))
    rng.shuffle(facts)
    by_series: dict[str, list[int]] = {}
    for i, fact in enumerate(facts):
        if fact.series:
            by_series.setdefault(fact.series, []).append(i)
    for members in by_series.values():  # versions in order: v0.4 before v0.5
        ordered = sorted((facts[i] for i in members), key=lambda f: f.answer)
        for i, fact in zip(members, ordered, strict=True):
            facts[i] = fact
    at = dict(zip(slots, facts, strict=True))
    archive = AgentArchive([])
    when = START
    for n in range(SESSIONS):
        key = f"a-s{n:03d}"
        session = Session(key, 0, when)
        chunks: list[list[Said] | Fact] = [_help(rng) for _ in range(rng.randint(1, 3))]
        if n in at:
            chunks.append(at[n])
        if rng.random() < 0.3:
            chunks.append(_echo(rng))
        rng.shuffle(chunks)
        for chunk in chunks:
            if isinstance(chunk, Fact):
                archive.placed.append(Placed(chunk, key, len(session.turns), when))
                session.turns.extend(chunk.turns)
            else:
                session.turns.extend(chunk)
        archive.sessions.append(session)
        when += timedelta(days=rng.randint(1, 3), hours=rng.randint(-2, 6))
    return archive


# -- questions ----------------------------------------------------------------------------------
# Per kind of fact and batch: (kind of question, template). Both batches were written together,
# before anything was tuned on this archive; agent-test in the voice of an agent searching for
# its user.

SINGLE: dict[str, dict[str, list[tuple[str, str]]]] = {
    "hosting": {
        "agent-dev": [
            ("single", "Where did I say {project} is hosted?"),
            ("single", "Which region is {project} deployed in?"),
            ("single", "What did I tell you about where {project} runs?"),
        ],
        "agent-test": [
            ("single", "user's hosting provider for {project}"),
            ("inference", "Which cloud does the {project} app run on?"),
            ("single", "{project} deployment region"),
        ],
    },
    "database": {
        "agent-dev": [
            ("single", "Which database did we decide to keep for {project}?"),
            ("single", "Did we agree to switch databases for {project}?"),
            ("single", "What did you recommend for the {project} database question?"),
        ],
        "agent-test": [
            ("single", "{project} storage decision before launch"),
            ("inference", "What does {project} persist its data in?"),
            ("single", "Was migrating {project} to another datastore ruled out?"),
        ],
    },
    "runner": {
        "agent-dev": [
            ("single", "What test runner did you suggest for {project}?"),
            ("single", "How did we fix the slow tests in {project}?"),
            ("single", "Which tool did I move the {project} tests to?"),
        ],
        "agent-test": [
            ("single", "Which testing framework was recommended for the {project} suite?"),
            ("inference", "Has the user dealt with flaky tests in {project}?"),
            ("single", "{project} test suite tooling"),
        ],
    },
    "retry": {
        "agent-dev": [
            ("single", "What retry settings did we agree for {project}'s webhooks?"),
            ("single", "How many attempts do {project}'s webhook retries make?"),
            ("single", "What backoff did you suggest when {project}'s webhooks fail?"),
        ],
        "agent-test": [
            ("single", "backoff policy for failed payment callbacks in {project}"),
            ("inference", "How does {project} cope when the payment provider is flaky?"),
            ("single", "dead-letter handling for {project} webhooks"),
        ],
    },
    "diet": {
        "agent-dev": [
            ("single", "What can't {partner} eat?"),
            ("inference", "Does anyone in my house have a food restriction?"),
            ("single", "What did I say about {partner} and food?"),
        ],
        "agent-test": [
            ("single", "user's partner dietary needs"),
            ("inference", "Is there anything to avoid when suggesting recipes for the user?"),
            ("single", "ingredients the user's household avoids"),
        ],
    },
    "school": {
        "agent-dev": [
            ("single", "Which school is {kid} starting at?"),
            ("inference", "Do I have children?"),
            ("single", "Where is {kid} going to school in September?"),
        ],
        "agent-test": [
            ("single", "name of the user's child's primary school"),
            ("inference", "Has the user mentioned a son or daughter?"),
            ("single", "letter to the teachers about the user's shy kid"),
        ],
    },
    "dog": {
        "agent-dev": [
            ("single", "What breed is {name}?"),
            ("inference", "Do I have any pets?"),
            ("single", "What's my dog called?"),
        ],
        "agent-test": [
            ("single", "the user's rescue dog and its lead-pulling problem"),
            ("inference", "Does the user own an animal?"),
            ("single", "breed of the user's dog"),
        ],
    },
    "injury": {
        "agent-dev": [
            ("single", "What am I seeing the physio about?"),
            ("single", "Which joint did I hurt {sport}?"),
            ("inference", "Have I had any sports injuries?"),
        ],
        "agent-test": [
            ("single", "user's physiotherapy exercises plan"),
            ("inference", "Is the user recovering from an injury?"),
            ("single", "which body part the user injured"),
        ],
    },
    "car": {
        "agent-dev": [
            ("single", "When is the MOT due on my car?"),
            ("single", "What car do I drive?"),
            ("inference", "Do I own a car?"),
        ],
        "agent-test": [
            ("single", "vehicle inspection date for the user's {model}"),
            ("inference", "Does the user own a vehicle that needs servicing?"),
            ("single", "user's car model"),
        ],
    },
    "mortgage": {
        "agent-dev": [
            ("single", "What rate did the broker offer me?"),
            ("single", "How long is the mortgage fix I was offered?"),
            ("inference", "Have I talked to you about my mortgage?"),
        ],
        "agent-test": [
            ("single", "remortgage offer interest rate"),
            ("inference", "Is the user facing a big financial decision about their home?"),
            ("single", "five-year fixed rate the broker quoted"),
        ],
    },
    "language": {
        "agent-dev": [
            ("single", "Which language am I learning?"),
            ("inference", "Am I studying anything in my spare time?"),
            ("single", "How long do I practise my language each day?"),
        ],
        "agent-test": [
            ("single", "foreign language the user practises before work"),
            ("inference", "Is the user picking up a new skill?"),
            ("single", "speaking practice advice for the language the user studies"),
        ],
    },
    "newsletter": {
        "agent-dev": [
            ("single", "What is my newsletter called?"),
            ("single", "Which day does my newsletter go out?"),
            ("inference", "Do I write anything regularly?"),
        ],
        "agent-test": [
            ("single", "title of the user's weekly email publication"),
            ("inference", "Does the user write for an audience regularly?"),
            ("single", "the user's newsletter name and send day"),
        ],
    },
    "medication": {
        "agent-dev": [
            ("single", "Which medicine do I take in the mornings?"),
            ("inference", "Do I have any ongoing health conditions?"),
            ("single", "What do I take {med} for?"),
        ],
        "agent-test": [
            ("single", "user's daily prescription"),
            ("inference", "Could grapefruit interact with something the user takes?"),
            ("inference", "Is the user on any long-term treatment?"),
        ],
    },
    "birthday": {
        "agent-dev": [
            ("single", "What does {who} want for her birthday?"),
            ("single", "Which present did {who} hint at?"),
            ("inference", "Whose birthday is coming up?"),
        ],
        "agent-test": [
            ("single", "gift idea for {who}"),
            ("inference", "Is there a family birthday coming up the user needs to shop for?"),
            ("single", "what {who} would like as a present"),
        ],
    },
    "backup": {
        "agent-dev": [
            ("single", "Where do my photo backups go?"),
            ("single", "What time does the backup job run?"),
            ("inference", "Did we set up anything to protect my photos?"),
        ],
        "agent-test": [
            ("single", "nightly cron copying the family pictures"),
            ("inference", "Are the user's photos safe if the laptop dies?"),
            ("single", "automatic photo backup destination"),
        ],
    },
}

SERIES: dict[str, dict[str, list[tuple[str, str]]]] = {
    "release": {
        "agent-dev": [
            ("multi", "Which versions of {project} have I released?"),
            ("temporal", "What did I release for {project} in {month} {year}?"),
            ("temporal", "When did {project} {version} come out?"),
        ],
        "agent-test": [
            ("multi", "{project} release history and what each added"),
            ("temporal", "{project} changes shipped {ago}"),
            ("temporal", "date of the {project} release with {feature}"),
        ],
    },
    "outage": {
        "agent-dev": [
            ("multi", "What outages has {project} had?"),
            ("temporal", "Why did {project} go down in {month} {year}?"),
        ],
        "agent-test": [
            ("multi", "incident write-ups for {project} and their root causes"),
            ("temporal", "What took {project} offline {ago}?"),
        ],
    },
    "race": {
        "agent-dev": [
            ("multi", "Which races have I run?"),
            ("temporal", "What was my time in the race in {month} {year}?"),
        ],
        "agent-test": [
            ("multi", "user's running events and finishing times"),
            ("temporal", "Which run did the user do {ago}?"),
        ],
    },
    "book": {
        "agent-dev": [
            ("multi", "What books have I finished?"),
            ("temporal", "Which book did I finish in {month} {year}?"),
        ],
        "agent-test": [
            ("multi", "novels the user enjoyed recently"),
            ("temporal", "What was the user reading {ago}?"),
        ],
    },
}


# Written after the ninth round's ranking changes (chosen on agent-dev), without running them:
# an agent thinking aloud before it acts, yes/no checks of what it believes, and loose dates.
FRESH: dict[str, list[tuple[str, str]]] = {
    "hosting": [
        ("single", "Before suggesting a CDN: which data centre does {project} live in?"),
        ("single", "Is {project} on a managed platform or our own servers?"),
    ],
    "database": [
        ("single", "Is {project} still on the database it launched with?"),
        ("inference", "Does {project} need a database server running beside it?"),
    ],
    "runner": [
        ("single", "Check what the {project} suite runs under before I write a new test"),
        ("inference", "Were the {project} tests ever too slow to bear?"),
    ],
    "retry": [
        ("single", "How long does {project} wait before the first webhook retry?"),
        ("inference", "What happens to a {project} webhook that keeps failing?"),
    ],
    "diet": [
        ("single", "Planning a dinner party for the user: what is off the menu for {partner}?"),
        ("inference", "Does the user's partner have an allergy or intolerance?"),
    ],
    "school": [
        ("single", "When does {kid} start school, and where?"),
        ("inference", "Is the user a parent of a young child?"),
    ],
    "dog": [
        ("single", "Is {name} a cat or a dog?"),
        ("inference", "Would the user need a pet sitter when travelling?"),
    ],
    "injury": [
        ("single", "Before suggesting a workout: which joint is the user nursing?"),
        ("inference", "Does the user see a physiotherapist?"),
    ],
    "car": [
        ("single", "Which month is the {model} booked in for its test?"),
        ("inference", "Does the user have a car to get to the airport?"),
    ],
    "mortgage": [
        ("single", "What percentage was on the table for the new fix?"),
        ("inference", "Is the user's home loan about to change?"),
    ],
    "language": [
        ("single", "Is the user learning Spanish or something else?"),
        ("inference", "Would the user like a podcast in another language?"),
    ],
    "newsletter": [
        ("single", "On which weekday does {name} go out?"),
        ("inference", "Does the user publish anything?"),
    ],
    "medication": [
        ("single", "Is the user on any pills for their {condition}?"),
        ("inference", "Does the user take medication every day?"),
    ],
    "birthday": [
        ("single", "Shopping for {who}: what has she asked for?"),
        ("inference", "Which relative of the user wants a present soon?"),
    ],
    "backup": [
        ("single", "Does anything copy the photo library off the laptop?"),
        ("inference", "Where would the user restore lost pictures from?"),
    ],
    "release": [
        ("multi", "every {project} version tagged so far"),
        ("temporal", "Which {project} release went out around {month} {year}?"),
        ("temporal", "Roughly when was {version} of {project} tagged?"),
    ],
    "outage": [
        ("multi", "Has {project} ever been down, and why?"),
        ("temporal", "the {project} incident about {ago}"),
    ],
    "race": [
        ("multi", "Has the user done any organised runs?"),
        ("temporal", "How fast was the user's run around {month} {year}?"),
    ],
    "book": [
        ("multi", "Titles the user has read and liked"),
        ("temporal", "What had the user just finished reading around {month} {year}?"),
    ],
}


# Written after the tenth round's change (the answer after a question is read with it, chosen
# on agent-dev), without running it: the user's own instruction passed on as the search ("find
# the chat where…", "pull up…", "look back at…"), the way an agent forwards a request it was
# given word for word.
LATER: dict[str, list[tuple[str, str]]] = {
    "hosting": [
        ("single", "Find the chat where I mentioned the {project} servers"),
        ("inference", "Pull up whatever I said about the cloud provider behind {project}"),
    ],
    "database": [
        ("single", "Look back at the talk about changing the {project} data store"),
        ("inference", "find where we weighed Postgres against SQLite for {project}"),
    ],
    "runner": [
        ("single", "Find the conversation about speeding up the {project} test suite"),
        ("inference", "pull up the advice on flaky {project} tests"),
    ],
    "retry": [
        ("single", "Look up the retry plan for failed {project} webhook calls"),
        ("inference", "find the dead-letter idea for {project} payments"),
    ],
    "diet": [
        ("single", "Find the meal plan I asked for that worked around {partner}"),
        ("inference", "pull up the weeknight dinners we planned"),
    ],
    "school": [
        ("single", "Find the letter we drafted for {kid}'s new teachers"),
        ("inference", "look back at the note about my shy child starting school"),
    ],
    "dog": [
        ("single", "Pull up the lead-training tips for {name}"),
        ("inference", "find the advice about my dog chasing cats"),
    ],
    "injury": [
        ("single", "Find the daily exercise plan from the physio chat"),
        ("inference", "look back at what I said about getting hurt {sport}"),
    ],
    "car": [
        ("single", "Find where I asked you to remind me about the {model}"),
        ("inference", "pull up the chat about getting the car serviced"),
    ],
    "mortgage": [
        ("single", "Look back at the broker's offer we discussed"),
        ("inference", "find the conversation about our fixed rate ending"),
    ],
    "language": [
        ("single", "Find the tips for practising {lang} out loud"),
        ("inference", "pull up the chat about learning a language before work"),
    ],
    "newsletter": [
        ("single", "Find where you tightened the intro of {name}"),
        ("inference", "look back at the edit of my weekly email"),
    ],
    "medication": [
        ("single", "Pull up the question about grapefruit and my pills"),
        ("inference", "find what I said about my {condition} treatment"),
    ],
    "birthday": [
        ("single", "Find the gift ideas for {who}"),
        ("inference", "look back at the present I was shopping for next month"),
    ],
    "backup": [
        ("single", "Find the cron job you wrote for the family photos"),
        ("inference", "pull up how my pictures are kept safe"),
    ],
    "release": [
        ("multi", "Find every set of {project} release notes we wrote"),
        ("temporal", "pull up the {project} release notes from {month} {year}"),
        ("temporal", "Look back at the changelog for {project} {version}"),
    ],
    "outage": [
        ("multi", "Find all the {project} incident write-ups"),
        ("temporal", "pull up the {project} post-mortem from {ago}"),
    ],
    "race": [
        ("multi", "Find each time I told you about a race I ran"),
        ("temporal", "look back at the recovery advice after my run in {month} {year}"),
    ],
    "book": [
        ("multi", "Pull up every book I said I'd finished"),
        ("temporal", "find the reading suggestion you gave me in {month} {year}"),
    ],
}


# Written after the eleventh round's change (who holds the answer: a request that tells, or the
# reply to it, by what the search asks; chosen on agent-dev), without running it: short direct
# questions, some put politely to the agent ("do you remember…", "can you tell me…") though
# the fact is the user's own, and some after the reply's advice without naming who gave it.
ASKED: dict[str, list[tuple[str, str]]] = {
    "hosting": [
        ("single", "Do you remember which provider {project} is on?"),
        ("single", "{project} is on which host again?"),
    ],
    "database": [
        ("single", "What was the verdict on the {project} database?"),
        ("inference", "Is {project} still on the same database?"),
    ],
    "runner": [
        ("single", "Which runner is the {project} suite on now?"),
        ("single", "What was the advice for the flaky {project} tests?"),
    ],
    "retry": [
        ("single", "What delay do the {project} webhook retries start at?"),
        ("single", "Remind me of the plan for failed {project} payment webhooks"),
    ],
    "diet": [
        ("single", "What does {partner} have to avoid?"),
        ("inference", "Is anyone I cook for on a special diet?"),
    ],
    "school": [
        ("single", "What's the name of {kid}'s new school?"),
        ("inference", "Have you got a note of my kid's school?"),
    ],
    "dog": [
        ("single", "What kind of dog is {name}?"),
        ("inference", "What's the name of my rescue?"),
    ],
    "injury": [
        ("single", "Which part of me is the physio treating?"),
        ("single", "How did I get injured?"),
    ],
    "car": [
        ("single", "Which month does the {model} need its MOT?"),
        ("inference", "What model is my car?"),
    ],
    "mortgage": [
        ("single", "What percentage was the five-year fix?"),
        ("inference", "Would you remind me what the broker quoted?"),
    ],
    "language": [
        ("single", "How long do I spend on {lang} every day?"),
        ("inference", "Which language did I take up?"),
    ],
    "newsletter": [
        ("single", "Which day does {name} go out?"),
        ("inference", "What's my newsletter called?"),
    ],
    "medication": [
        ("single", "What is the {med} for?"),
        ("inference", "Which pill do I take with breakfast?"),
    ],
    "birthday": [
        ("single", "What present is {who} after?"),
        ("inference", "Can you tell me what my relative wants as a gift?"),
    ],
    "backup": [
        ("single", "Where do the family photos get copied to?"),
        ("single", "What time does the photo backup run?"),
    ],
    "release": [
        ("multi", "Which {project} versions have shipped?"),
        ("temporal", "What went into the {project} release in {month} {year}?"),
    ],
    "outage": [
        ("multi", "What has taken {project} down?"),
        ("temporal", "What caused the {project} outage {ago}?"),
    ],
    "race": [
        ("multi", "Which events have I raced?"),
        ("temporal", "What time did I run in {month} {year}?"),
    ],
    "book": [
        ("multi", "What have I read lately?"),
        ("temporal", "What was the book I finished in {month} {year}?"),
    ],
}


# The batches written after the first two, each with templates of its own per kind of fact.
LATER_BATCHES = {"agent-fresh": FRESH, "agent-later": LATER, "agent-asked": ASKED}


def _templates(kind: str, batch: str) -> list[tuple[str, str]]:
    if batch in LATER_BATCHES:
        return LATER_BATCHES[batch][kind]
    return (SINGLE | SERIES)[kind][batch]


def questions(archive: AgentArchive, batch: str) -> list[Question]:
    newest = max(s.when for s in archive.sessions)
    out: list[Question] = []
    series: dict[str, list[Placed]] = {}
    for p in archive.placed:
        if p.fact.series:
            series.setdefault(p.fact.series, []).append(p)
            continue
        for kind, template in _templates(p.fact.kind, batch):
            out.append(
                Question(batch, kind, template.format(**p.fact.slots), [p.where], p.fact.kind)
            )
    for name in sorted(series):
        members = series[name]
        every = [p.where for p in members]
        for kind, template in _templates(members[0].fact.kind, batch):
            if kind == "multi":
                text = template.format(**members[0].fact.slots)
                out.append(Question(batch, kind, text, every, members[0].fact.kind))
                continue
            for p in members:
                # A span or month that another member of the series shares: both are evidence.
                def same(o: Placed, p: Placed = p, template: str = template) -> bool:
                    if "{ago}" in template:
                        return _ago(o.when, newest) == _ago(p.when, newest)
                    if "{month}" in template:
                        return (o.when.year, o.when.month) == (p.when.year, p.when.month)
                    return o is p

                text = template.format(
                    **p.fact.slots,
                    month=MONTHS[p.when.month - 1],
                    year=p.when.year,
                    ago=_ago(p.when, newest),
                )
                where = [o.where for o in members if same(o)]
                out.append(Question(batch, kind, text, where, p.fact.kind))
    return out


def build_agent(seed: int = AGENT_SEED) -> tuple[list[Session], dict[str, list[Question]]]:
    """Sessions (in time order) and questions per batch, checked: every evidence turn says its
    fact's answer."""
    archive = build_archive(seed)
    by_key = {s.key: s for s in archive.sessions}
    answers = {p.where: p.fact.answer for p in archive.placed}
    batches = {batch: questions(archive, batch) for batch in BATCHES}
    for qs in batches.values():
        for q in qs:
            assert "{" not in q.text and q.evidence, q
            for key, index in q.evidence:
                said = by_key[key].turns[index].text
                assert answers[key, index].lower() in said.lower(), (q.text, said)
    return archive.sessions, batches


# -- a look by eye ------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=AGENT_SEED)
    parser.add_argument("--examples", type=int, default=3)
    args = parser.parse_args(argv)
    sessions, batches = build_agent(args.seed)
    by_key = {s.key: s for s in sessions}
    turns = [t for s in sessions for t in s.turns]
    long = sum(len(re.findall(r"[.!?](?:\s|$)", t.text)) >= 3 for t in turns)
    print(
        f"{len(sessions)} sessions, {len(turns):,} messages ({long:,} of three sentences or "
        f"more), {sessions[0].when:%Y-%m-%d} .. {sessions[-1].when:%Y-%m-%d}"
    )
    for batch, qs in batches.items():
        kinds: dict[str, int] = {}
        for q in qs:
            kinds[q.kind] = kinds.get(q.kind, 0) + 1
        print(f"\n{batch}: {len(qs)} questions, {kinds}")
        for q in random.Random(batch).sample(qs, min(args.examples, len(qs))):
            key, index = q.evidence[0]
            print(f"  [{q.kind}] {q.text}\n      {by_key[key].turns[index].text[:150]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
