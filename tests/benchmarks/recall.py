"""Relevance benchmark of session_search on natural-language questions, against plain FTS5.

    python tests/benchmarks/recall.py [--seed 11] [--batch tuning|held-out|fresh|new|unseen|later|
        natural|chat-dev|diary-dev|diary-test|diary-fresh|diary-spoken|agent-dev|agent-test|agent-fresh|
        agent-later|agent-asked|all] [--misses N] [--postgres URL] [--semantic] [--train]

A deterministic archive of long chatty conversations between pairs of friends (six pairs, 24
sessions each over about eight months, a session every one to two weeks): greetings, small talk,
questions and short replies whose topic sits in the turn before, and among them the facts that
the questions ask about (pets, trips, jobs, hobbies, purchases, numbers, dates). Every turn is
``Name: text``, so a speaker's name is in every message that speaker wrote, as in an imported
group chat. Facts of the same kind recur in other sessions with other values, and their words
recur in passing, so that a question has near misses to rise above.

Questions are of four kinds: a single fact, a fact spread over several sessions, a temporal one
(a month and year, or a span counted back from the newest session) and an inference (the
question names the general idea, the evidence a case of it). Their wording differs from the
evidence on purpose: synonyms, other inflections (``adopted`` / ``adoption``), compounds
(``road trip`` / ``roadtrips``), question words, the speaker's name. Each question lists its
evidence turns and their sessions.

Eight batches, each from its own templates: ``tuning`` (the phrasings Cairn is tuned on, and the
only batch ``--train`` learns from), ``held-out`` (other phrasings of the same facts, never
looked at while tuning), ``fresh`` and ``new`` (written at later rounds, over archives of other
seeds), ``unseen`` (phrasings of its own, written before the learned weights, measured only),
``natural`` (written with unseen: questions that share words with the evidence the way
people ask, the name, a question word and a word of the evidence, over an archive with echoes,
turns that say the same words of someone else; a plain index is strong there; its temporal
misses were read once, in the fourth round, so it is a development set since), and ``later``
(an agent's requests on its user's behalf, "remind me…", written in the fifth round after the
semantic weights were chosen, over a sixth archive with echoes, measured only); ``chat-dev``
(eleventh round) is a second development batch, since tuning is answered whole: notes typed
as fragments and other words for the facts ("new wheels", "gig"), over an archive of its own
with echoes. Two more,
``diary-dev`` and ``diary-test``, come from another generator (recall_diary.py: other people,
other topics, long turns that mix several pieces of news), written in the sixth round without
looking at this one's templates; dev may be tuned on, test is measured only, ``diary-fresh``
was written after that round's tuning, in phrasings of its own, and ``diary-spoken`` after the
seventh round's ranking changes, as people say questions aloud, without looking at the ranker
(measured only). ``agent-dev`` and ``agent-test`` (recall_agent.py, ninth round) ask about an
agent's own sessions with its user, requests and long replies stored without names; dev may be
tuned on, test is measured only, ``agent-fresh`` was written after the ranking changes
chosen on dev, ``agent-later`` after the tenth round's and ``agent-asked`` after the eleventh
round's (all three measured only). Each prints,
for Cairn (``session_search`` discover, limit 5) and for a plain FTS5 baseline computed in the
same run (porter tokenizer, stopwords dropped, bm25, the 5 best turns and their sessions):

* session@5: an evidence session is among the 5 results;
* evidence@5: an evidence turn is one of the 5 matched messages (Cairn: each card's match);
* evidence in cards@5 (Cairn only): an evidence turn anywhere in the 5 cards;
* how lexical the set is: questions whose every content word appears, exactly, in an evidence
  turn (a set where that is high would be trivial for any index).

``--semantic`` ranks by meaning as well (the semantic extra, docs/sessions.md): each archive is
embedded first, and the figures are Cairn's with words and meaning fused.

Not a timed test: speed is tests/benchmarks/session_search.py's job.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import sqlite3
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
if __name__ == "__main__":
    # Run as a script, this module is __main__: the other generators' ``from recall import``
    # must get it, not a second copy whose classes are not the ones compared against.
    sys.modules.setdefault("recall", sys.modules[__name__])

from engine.config import Config, DatabaseConfig  # noqa: E402
from engine.db import dispose_engines  # noqa: E402
from engine.home import Home  # noqa: E402
from engine.sessions.search import SessionSearch  # noqa: E402
from engine.sessions.store import NewMessage, SessionStore  # noqa: E402

SEED, FRESH_SEED = 11, 29
TOP = 5
PAIRS = [
    ("Caroline", "Melanie"),
    ("Jon", "Gina"),
    ("Priya", "Tomas"),
    ("Dev", "Aisha"),
    ("Nora", "Sam"),
    ("Luis", "Hana"),
]
SESSIONS_PER_PAIR = 24
START = datetime(2023, 2, 6, 18, 0, tzinfo=UTC)

# The baseline's stopwords: a classic English list, kept separate from Cairn's own.
BASELINE_STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself
    yourselves""".split()  # noqa: SIM905 - a list of words reads better as prose
)
_WORD = re.compile(r"[^\W_]+")


# -- the archive -------------------------------------------------------------------------------


@dataclass
class Turn:
    speaker: str
    text: str

    def content(self) -> str:
        return f"{self.speaker}: {self.text}"


@dataclass
class Session:
    key: str
    pair: int
    when: datetime
    turns: list[Turn] = field(default_factory=list)


@dataclass
class Question:
    batch: str
    kind: str  # single, multi, temporal, inference
    text: str
    evidence: list[tuple[str, int]]  # (session key, turn index)
    fact: str

    @property
    def sessions(self) -> set[str]:
        return {key for key, _ in self.evidence}


@dataclass
class Episode:
    """Turns that state a fact, which of them are its evidence, and the slots questions use."""

    fact: str
    turns: list[Turn]
    evidence: list[int]
    slots: dict[str, str]


FILLER_OPEN = [
    "Hey {o}! How have you been?",
    "Hi {o}, long time no talk! What's new with you?",
    "Hey! Sorry I went quiet, this week was a lot.",
    "Good to hear from you, {o}. How was your week?",
    "Hiya! Did you have a good weekend?",
]
FILLER_REPLY = [
    "Pretty good, thanks for asking! Busy as always.",
    "Not bad at all. Work has been crazy lately though.",
    "Oh you know, same old. What about you?",
    "Honestly a bit tired, but good!",
    "Great, thanks! I have so much to tell you.",
]
FILLER_MID = [
    "Haha, totally.",
    "That's amazing, {o}!",
    "Wow, I didn't know that.",
    "I know, right?",
    "That sounds like so much fun.",
    "Oh no, that's rough. Hope it gets better.",
    "Same here, honestly.",
    "What do you mean?",
    "Really? Tell me more!",
    "How did that go?",
    "Why do you think that happened?",
    "When was that again?",
    "Ha, that's so you.",
    "I'm so happy for you!",
    "That makes sense.",
    "Did you tell anyone else?",
    "Which one did you pick in the end?",
    "We should do something like that together sometime.",
    "I've been meaning to ask you about that.",
    "Same time next week? I want to hear how it goes.",
]
FILLER_CLOSE = [
    "Anyway, I have to run. Talk soon!",
    "Okay, dinner's ready. Catch you later, {o}!",
    "Let's talk again next week. Take care!",
    "Gotta go, but this was nice. Bye!",
]

MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]


def _pick(rng: random.Random, values: list[str]) -> str:
    return rng.choice(values)


# Facts that come once per speaker: (fact name, builder). A builder gets the speaker, the other
# speaker and a random source and returns an Episode.
Builder = Callable[[random.Random, str, str], Episode]

PETS = [("dog", "puppy", "pup"), ("cat", "kitten", "kitty")]
PET_NAMES = ["Biscuit", "Pepper", "Mochi", "Juniper", "Waffles", "Clementine", "Ziggy", "Nutmeg"]
BREEDS = ["beagle", "terrier", "collie", "tabby", "siamese", "spaniel"]


def pet(rng: random.Random, s: str, o: str) -> Episode:
    animal, young, _ = rng.choice(PETS)
    name, breed = rng.choice(PET_NAMES), rng.choice(BREEDS)
    return Episode(
        "pet",
        [
            Turn(o, "Any news on your end?"),
            Turn(
                s,
                f"Yes! We adopted a {animal} from the shelter on Saturday. {name}, a little "
                f"{breed} mix, already sleeping on my bed.",
            ),
            Turn(o, "Stop, that's adorable. Send pictures!"),
        ],
        [1],
        {"young": young, "animal": animal, "name": name, "breed": breed},
    )


INSTRUMENTS = [("violin", "fiddle"), ("ukulele", "uke"), ("cello", "cello"), ("drums", "drum kit")]


def instrument(rng: random.Random, s: str, o: str) -> Episode:
    inst, _ = rng.choice(INSTRUMENTS)
    return Episode(
        "instrument",
        [
            Turn(o, "So what's the new thing you mentioned?"),
            Turn(s, f"I started taking {inst} lessons! My teacher says I practise too fast."),
            Turn(o, "No way, I love that."),
        ],
        [1],
        {"inst": inst},
    )


PAINT_SUBJECTS = [
    "sunset over the lake",
    "field of sunflowers",
    "lighthouse in a storm",
    "portrait of my grandmother",
    "bowl of lemons",
]


def painting(rng: random.Random, s: str, o: str) -> Episode:
    subject = rng.choice(PAINT_SUBJECTS)
    # The evidence is a short reply: its topic is in the question before it.
    return Episode(
        "painting",
        [
            Turn(o, "So what did you end up painting for the community art show?"),
            Turn(s, f"A {subject}. Took me three weekends!"),
            Turn(o, "I'd love to see it sometime."),
        ],
        [1],
        {"subject": subject},
    )


JOBS = [
    ("a nurse", "the children's hospital", "nursing"),
    ("a data analyst", "a logistics startup", "analytics"),
    ("a teacher", "the middle school downtown", "teaching"),
    ("a sous chef", "an Italian restaurant", "cooking"),
    ("an architect", "a small design studio", "architecture"),
]


def job(rng: random.Random, s: str, o: str) -> Episode:
    title, place, _ = rng.choice(JOBS)
    return Episode(
        "job",
        [
            Turn(o, "Did you hear back about the interview?"),
            Turn(s, f"I got it! I start as {title} at {place} next month."),
            Turn(o, "Congratulations!! You totally deserve it."),
        ],
        [1],
        {"title": title, "place": place},
    )


RACES = [("half marathon", "21 kilometres"), ("10K", "ten kilometres"), ("marathon", "42 km")]


def race(rng: random.Random, s: str, o: str) -> Episode:
    kind, _ = rng.choice(RACES)
    minutes = rng.randint(48, 59)
    return Episode(
        "race",
        [
            Turn(s, f"I finished the {kind} race on Sunday in 1 hour {minutes} minutes."),
            Turn(o, "Amazing! Your legs must hate you."),
            Turn(s, "Running it with my sister made it so much easier."),
        ],
        [0, 2],
        {"kind": kind, "minutes": str(minutes)},
    )


ALLERGIES = ["peanuts", "shellfish", "strawberries", "cats"]


def allergy(rng: random.Random, s: str, o: str) -> Episode:
    what = rng.choice(ALLERGIES)
    return Episode(
        "allergy",
        [
            Turn(o, "Wait, why did you skip the dessert at the party?"),
            Turn(s, f"I'm allergic to {what}, found out the hard way at twelve."),
        ],
        [1],
        {"what": what},
    )


BOOKS = [
    ("The Night Circus", "fantasy"),
    ("Project Hail Mary", "science fiction"),
    ("Educated", "memoir"),
    ("The Thursday Murder Club", "mystery"),
]


def book(rng: random.Random, s: str, o: str) -> Episode:
    title, genre = rng.choice(BOOKS)
    return Episode(
        "book",
        [
            Turn(o, "What are you reading these days?"),
            Turn(s, f"{title}. Couldn't put it down, I stayed up until two finishing it."),
            Turn(o, "Adding it to my list."),
        ],
        [1],
        {"title": title, "genre": genre},
    )


CARS = [("used Subaru", "Subaru"), ("electric Kia", "Kia"), ("old Volvo wagon", "Volvo")]


def car(rng: random.Random, s: str, o: str) -> Episode:
    model, brand = rng.choice(CARS)
    price = rng.choice(["8,500", "12,000", "15,400", "6,900"])
    return Episode(
        "car",
        [
            Turn(s, f"Big purchase this week: I bought a {model} for ${price}."),
            Turn(o, "Finally! No more buses for you."),
        ],
        [0],
        {"model": model, "brand": brand, "price": price},
    )


GARDEN = [("tomatoes", "tomato"), ("basil", "herb"), ("zucchini", "squash")]


def garden(rng: random.Random, s: str, o: str) -> Episode:
    crop, _ = rng.choice(GARDEN)
    return Episode(
        "garden",
        [
            Turn(o, "How's the backyard project going?"),
            Turn(s, f"The raised garden beds are done and the {crop} are coming up nicely."),
        ],
        [1],
        {"crop": crop},
    )


VOLUNTEER = [("food bank", "hunger"), ("animal rescue", "animals"), ("literacy program", "kids")]


def volunteer(rng: random.Random, s: str, o: str) -> Episode:
    where, _ = rng.choice(VOLUNTEER)
    return Episode(
        "volunteer",
        [
            Turn(s, f"I've been volunteering at the {where} every other Thursday evening."),
            Turn(o, "That's really kind of you."),
        ],
        [0],
        {"where": where},
    )


MOVES = [("Portland", "Oregon"), ("Austin", "Texas"), ("Denver", "Colorado"), ("Boston", "MA")]


def move(rng: random.Random, s: str, o: str) -> Episode:
    city, state = rng.choice(MOVES)
    return Episode(
        "move",
        [
            Turn(o, "Where did you two decide to move in the end?"),
            Turn(s, f"{city}! We sign the lease on a two-bedroom apartment in two weeks."),
            Turn(o, "I'll miss you but I'm so excited for you."),
        ],
        [1],
        {"city": city, "state": state},
    )


SINGLE_FACTS: list[Builder] = [
    pet,
    instrument,
    painting,
    job,
    race,
    allergy,
    book,
    car,
    garden,
    volunteer,
    move,
]

# Facts that recur: the same kind with another value in several sessions (multi-session and
# temporal questions ask across them).
TRIP_PLACES = [
    "the Oregon coast",
    "Yellowstone",
    "the Grand Canyon",
    "Lake Tahoe",
    "Big Sur",
    "the Smoky Mountains",
    "Banff",
    "Zion",
]
BAKES = ["sourdough bread", "banana muffins", "a lemon tart", "cinnamon rolls", "apple pie"]
CONCERTS = ["Taylor Swift", "Coldplay", "a jazz trio", "the symphony", "an indie band"]


def trip(rng: random.Random, s: str, o: str, place: str) -> Episode:
    return Episode(
        "trip",
        [
            Turn(o, "How was the drive?"),
            Turn(s, f"Long! We did a road trip to {place} with the kids, six hours each way."),
            Turn(o, "Sounds exhausting but worth it."),
        ],
        [1],
        {"place": place},
    )


def bake(rng: random.Random, s: str, o: str, thing: str) -> Episode:
    return Episode(
        "bake",
        [
            Turn(s, f"I baked {thing} for the neighbours yesterday, first try that worked."),
            Turn(o, "Save me some next time!"),
        ],
        [0],
        {"thing": thing},
    )


def concert(rng: random.Random, s: str, o: str, act: str) -> Episode:
    return Episode(
        "concert",
        [
            Turn(o, "What did you get up to on Friday night?"),
            Turn(s, f"Went to see {act} live in concert downtown. My ears are still ringing."),
        ],
        [1],
        {"act": act},
    )


RECURRING: dict[str, tuple[Callable[..., Episode], list[str]]] = {
    "trip": (trip, TRIP_PLACES),
    "bake": (bake, BAKES),
    "concert": (concert, CONCERTS),
}

# Words of the facts said in passing, with no fact: the near misses.
NOISE = [
    "I really want a dog someday, but the landlord says no pets.",
    "My neighbour's puppy barked all night again.",
    "Maybe I'll pick up an instrument again, I played piano as a kid.",
    "The art museum has a new exhibit, we should go.",
    "Work was long today, the new manager keeps changing the schedule.",
    "I should start running again, I've been so lazy.",
    "Dinner was a disaster, I burned the rice.",
    "Reading before bed helps me sleep, usually.",
    "The bus was late again this morning.",
    "My plants keep dying, I have no green thumb.",
    "We talked about moving but the rent everywhere is insane.",
    "Traffic on the way home was terrible, we should avoid driving on Fridays.",
    "I was going to bake something but the oven is broken.",
    "Music festival tickets went on sale and sold out in minutes.",
    "My cousin's wedding is in the spring, I need a dress.",
    "Did you watch the game last night?",
    "I have a dentist appointment on Monday, ugh.",
    "The kids have a school trip next week.",
    "I tried a yoga class, it was harder than it looks.",
    "The weather has been so weird this month.",
    "We should plan a road trip this summer, somewhere with mountains.",
    "My brother went to a concert and lost his phone, classic.",
    "The neighbours are having a party again, so loud.",
    "I need a new job, honestly, this one is draining me.",
    "Got a parking ticket downtown, the signs make no sense.",
]

# Turns with a fact's words that are not the fact (someone else's, a wish, a plan), for the
# archives built with ``echoes``: a question that shares words with its evidence shares them
# with these too.
ECHOES: dict[str, list[str]] = {
    "pet": [
        "My aunt adopted a {animal} from the shelter years ago, it still hates me.",
        "The shelter near us is full of {young}s looking for a home.",
    ],
    "instrument": [
        "My nephew started {inst} lessons and the whole house suffers.",
        "I always wanted to take music lessons, maybe one day.",
    ],
    "painting": [
        "The community art show needs volunteers, if you know anyone.",
        "My roommate paints, her whole room smells of oil paint.",
    ],
    "job": [
        "My brother had an interview for a job as {title}, no news yet.",
        "I start a new project at work next month, dreading it.",
    ],
    "race": [
        "My sister wants me to run a {kind} race with her, no chance.",
        "The marathon closed half the streets downtown on Sunday.",
    ],
    "allergy": [
        "My coworker is allergic to {what}, she had to leave the party.",
        "Allergy season is the worst, I can't stop sneezing.",
    ],
    "book": [
        "My book club is reading {title} next, have you read it?",
        "I stayed up until two watching a show, bad idea.",
    ],
    "car": [
        "My dad wants to buy a {model}, he keeps sending me listings.",
        "Car prices are insane right now, a used one costs a fortune.",
    ],
    "garden": [
        "My neighbour's garden beds are full of {crop}, she keeps giving me some.",
        "The backyard is a mess after the storm.",
    ],
    "volunteer": [
        "My mom volunteers at the {where} too, she loves it.",
        "They're asking for volunteers at work on Thursday evenings.",
    ],
    "move": [
        "My friend just moved to {city} and won't stop talking about it.",
        "We looked at a two-bedroom apartment but the lease was too strict.",
    ],
    "trip": [
        "My parents did a road trip to {place} last year and loved it.",
        "The kids want another road trip, I want a nap.",
    ],
    "bake": [
        "My sister baked {thing} and it was perfect, so annoying.",
        "The neighbours brought over {thing}, so sweet of them.",
    ],
    "concert": [
        "My friends went to see {act} in concert without me.",
        "Concert tickets downtown are so expensive now.",
    ],
}


def _echo(rng: random.Random) -> str:
    template = rng.choice(ECHOES[rng.choice(sorted(ECHOES))])
    animal, young, _ = rng.choice(PETS)
    values = {
        "animal": animal,
        "young": young,
        "inst": rng.choice(INSTRUMENTS)[0],
        "title": rng.choice(JOBS)[0],
        "kind": rng.choice(RACES)[0],
        "what": rng.choice(ALLERGIES),
        "model": rng.choice(CARS)[0],
        "crop": rng.choice(GARDEN)[0],
        "where": rng.choice(VOLUNTEER)[0],
        "city": rng.choice(MOVES)[0],
        "place": rng.choice(TRIP_PLACES),
        "thing": rng.choice(BAKES),
        "act": rng.choice(CONCERTS),
    }
    if "{title}" in template and "book club" in template:
        values["title"] = rng.choice(BOOKS)[0]
    return template.format(**values)


@dataclass
class Archive:
    sessions: list[Session]
    episodes: list[tuple[str, int, Episode, str, str, datetime]]  # key, start, ep, s, o, when


def build_archive(seed: int, echoes: bool = False) -> Archive:
    """The archive of ``seed``. With ``echoes``, every session also has a few turns that say a
    fact's words of someone else or of a wish (ECHOES): distractors that share words with the
    evidence, as real chats are full of."""
    rng = random.Random(seed)
    sessions: list[Session] = []
    episodes: list[tuple[str, int, Episode, str, str, datetime]] = []
    for p, (a, b) in enumerate(PAIRS):
        when = START + timedelta(days=rng.randint(0, 6), hours=rng.randint(0, 4))
        plan: list[list[tuple[str, Callable[..., Episode], tuple[Any, ...]]]] = [
            [] for _ in range(SESSIONS_PER_PAIR)
        ]
        slots = list(range(SESSIONS_PER_PAIR))
        for speaker in (a, b):
            for builder in rng.sample(SINGLE_FACTS, 6):
                plan[rng.choice(slots)].append((speaker, builder, ()))
        for builder, values in RECURRING.values():
            speaker = a if rng.random() < 0.5 else b
            for value, at in zip(rng.sample(values, 3), sorted(rng.sample(slots, 3)), strict=True):
                plan[at].append((speaker, builder, (value,)))
        for i in range(SESSIONS_PER_PAIR):
            key = f"p{p}-s{i:02d}"
            session = Session(key, p, when)
            first, second = (a, b) if rng.random() < 0.5 else (b, a)
            session.turns.append(Turn(first, _pick(rng, FILLER_OPEN).format(o=second)))
            session.turns.append(Turn(second, _pick(rng, FILLER_REPLY)))
            chunks: list[list[Turn] | Episode] = []
            for speaker, builder, extra in plan[i]:
                other = b if speaker == a else a
                chunks.append(builder(rng, speaker, other, *extra))
            for _ in range(rng.randint(4, 8)):
                speaker = rng.choice((a, b))
                other = b if speaker == a else a
                line = (
                    rng.choice(NOISE)
                    if rng.random() < 0.5
                    else _pick(rng, FILLER_MID).format(o=other)
                )
                chunks.append(
                    [Turn(speaker, line), Turn(other, _pick(rng, FILLER_MID).format(o=speaker))]
                )
            for _ in range(rng.randint(2, 4) if echoes else 0):
                speaker = rng.choice((a, b))
                other = b if speaker == a else a
                line = _echo(rng)
                chunks.append(
                    [Turn(speaker, line), Turn(other, _pick(rng, FILLER_MID).format(o=speaker))]
                )
            rng.shuffle(chunks)
            for chunk in chunks:
                if isinstance(chunk, Episode):
                    start = len(session.turns)
                    session.turns.extend(chunk.turns)
                    speaker = chunk.turns[chunk.evidence[0]].speaker
                    other = b if speaker == a else a
                    episodes.append((key, start, chunk, speaker, other, when))
                else:
                    session.turns.extend(chunk)
            last = session.turns[-1].speaker
            session.turns.append(
                Turn(b if last == a else a, _pick(rng, FILLER_CLOSE).format(o=last))
            )
            sessions.append(session)
            when += timedelta(days=rng.randint(7, 13), hours=rng.randint(-3, 3))
    return Archive(sessions, episodes)


# -- questions ---------------------------------------------------------------------------------

# Per fact, per batch: templates over the slots and {s} (the speaker). "tuning" and "held-out"
# are written together, before any tuning; "fresh" after it.
SINGLE_TEMPLATES: dict[str, dict[str, list[str]]] = {
    "pet": {
        "tuning": [
            "What is the name of the {young} {s} adopted?",
            "What breed is {s}'s shelter {young}?",
        ],
        "held-out": [
            "Which animal did {s} bring home after the adoption?",
            "What kind of {animal} did {s} adopt from a shelter?",
        ],
    },
    "instrument": {
        "tuning": [
            "Which instrument does {s} take lessons in?",
            "What does {s}'s teacher say about the practising?",
        ],
        "held-out": [
            "Which instrument did {s} start practicing?",
            "What lesson did {s} sign up for recently?",
        ],
    },
    "painting": {
        "tuning": [
            "What did {s} paint for the art show?",
            "What was the subject of {s}'s painting at the community show?",
        ],
        "held-out": [
            "Which picture did {s} make for the community art exhibition?",
            "How long did {s}'s art show painting take?",
        ],
    },
    "job": {
        "tuning": ["What job did {s} get after the interview?", "Where is {s} starting work?"],
        "held-out": [
            "What role did {s} start after interviewing?",
            "What was the outcome of {s}'s job interview?",
        ],
    },
    "race": {
        "tuning": [
            "How long did it take {s} to finish the {kind}?",
            "What was {s}'s race time?",
        ],
        "held-out": [
            "Which running race did {s} complete?",
            "How fast did {s} run the {kind}?",
        ],
    },
    "allergy": {
        "tuning": ["What is {s} allergic to?", "Why did {s} skip the dessert?"],
        "held-out": ["What allergy does {s} have?", "Why did {s} pass on dessert at the party?"],
    },
    "book": {
        "tuning": [
            "What book has {s} been reading?",
            "Which novel did {s} stay up late finishing?",
        ],
        "held-out": ["What was {s} reading lately?", "Which book did {s} finish at 2 am?"],
    },
    "car": {
        "tuning": ["What car did {s} purchase?", "How much was {s}'s big purchase?"],
        "held-out": ["Which vehicle did {s} purchase?", "What did {s} pay for the {brand}?"],
    },
    "garden": {
        "tuning": [
            "What is {s} growing in the backyard?",
            "Which vegetables are coming up in {s}'s raised bed?",
        ],
        "held-out": [
            "What did {s} plant in the garden beds?",
            "How is {s}'s back yard garden doing?",
        ],
    },
    "volunteer": {
        "tuning": ["Where does {s} volunteer?", "How often does {s} do volunteer work?"],
        "held-out": [
            "Which charity does {s} volunteer for?",
            "What volunteering does {s} do on Thursdays?",
        ],
    },
    "move": {
        "tuning": ["Which city are {s} and family moving to?", "Where is {s} signing a lease?"],
        "held-out": [
            "What city did {s} pick for the move?",
            "Where will {s}'s new two bedroom flat be?",
        ],
    },
}
# Inference: the question names the general idea, the evidence a case of it.
INFERENCE_TEMPLATES: dict[str, dict[str, list[str]]] = {
    "pet": {
        "tuning": ["Would {s} be a good person to ask about caring for a {animal}?"],
        "held-out": ["Would {s} know about shelter adoptions?"],
    },
    "instrument": {
        "tuning": ["Does {s} have a music teacher?"],
        "held-out": ["Would {s} like {inst} sheet music as a gift?"],
    },
    "race": {
        "tuning": ["Is {s} a runner?"],
        "held-out": ["Would {s} be up for a running club?"],
    },
    "volunteer": {
        "tuning": ["Does {s} care about volunteering in the community?"],
        "held-out": ["Would {s} join a volunteer drive?"],
    },
    "garden": {
        "tuning": ["Would {s} like a gardening book as a gift?"],
        "held-out": ["Does {s} enjoy growing vegetables in raised beds?"],
    },
}
MULTI_TEMPLATES: dict[str, dict[str, list[str]]] = {
    "trip": {
        "tuning": [
            "Where has {s} gone on roadtrips?",
            "Which places did {s} drive to with the kids?",
        ],
        "held-out": [
            "List the road-trips {s} took this year.",
            "How many long drives did {s}'s family make?",
        ],
    },
    "bake": {
        "tuning": ["What has {s} been baking for the neighbors?", "What baking has {s} done?"],
        "held-out": [
            "Which things did {s} bake for neighbors?",
            "What treats has {s} made in the oven?",
        ],
    },
    "concert": {
        "tuning": ["Which concerts has {s} been to?", "What live music did {s} see?"],
        "held-out": [
            "Who did {s} see perform live?",
            "What gigs has {s} gone to downtown?",
        ],
    },
}
TEMPORAL_TEMPLATES: dict[str, dict[str, list[str]]] = {
    "trip": {
        "tuning": ["Where did {s} go on a road trip in {month} {year}?"],
        "held-out": ["Which roadtrip did {s} take {ago}?"],
    },
    "bake": {
        "tuning": ["What did {s} bake in {month} {year}?"],
        "held-out": ["What baked treat did {s} make {ago}?"],
    },
    "concert": {
        "tuning": ["Which concert did {s} go to in {month} {year}?"],
        "held-out": ["What live show did {s} see {ago}?"],
    },
}
# Written after tuning, in phrasings of their own, and asked of an archive generated with
# another seed. Per fact: the kind of question and its templates.
FRESH_TEMPLATES: dict[str, list[tuple[str, str]]] = {
    "pet": [
        ("single", "Tell me about the {animal} {s} got from the shelter"),
        ("single", "what pet does {s} have now?"),
        ("inference", "Does {s} have a pet at home?"),
    ],
    "instrument": [
        ("single", "What is {s} taking lessons on?"),
        ("inference", "Could {s} play some music at a party?"),
    ],
    "painting": [
        ("single", "{s}'s painting for the show: what was it of?"),
        ("single", "What did {s} end up painting?"),
    ],
    "job": [
        ("single", "Did {s} get the job after interviewing?"),
        ("single", "What new job is {s} starting?"),
    ],
    "race": [
        ("single", "What race did {s} finish on Sunday?"),
        ("inference", "Does {s} do long-distance running?"),
    ],
    "allergy": [
        ("single", "Is {s} allergic to anything?"),
        ("single", "which allergies has {s} got"),
    ],
    "book": [
        ("single", "What was the book {s} couldn't put down?"),
        ("single", "recommend me what {s} read recently"),
    ],
    "car": [
        ("single", "What kind of car does {s} drive now?"),
        ("single", "How much did {s}'s {brand} cost?"),
    ],
    "garden": [
        ("single", "What's coming up in {s}'s garden?"),
        ("inference", "Does {s} have a green thumb for vegetables?"),
    ],
    "volunteer": [
        ("single", "Where does {s} volunteer on Thursday evenings?"),
        ("inference", "Is {s} the volunteering type?"),
    ],
    "move": [
        ("single", "Which city is {s} moving to?"),
        ("single", "Did {s} sign a lease somewhere new?"),
    ],
    "trip": [
        ("multi", "What road trips has {s} been on?"),
        ("multi", "Where did {s}'s family drive to on trips?"),
        ("temporal", "Where was {s}'s road trip in {month} {year}?"),
        ("temporal", "Where did {s} road trip to {ago}?"),
    ],
    "bake": [
        ("multi", "What does {s} like to bake?"),
        ("multi", "List everything {s} baked for the neighbours."),
        ("temporal", "{month} {year}: what did {s} bake?"),
        ("temporal", "What did {s} bake for the neighbours {ago}?"),
    ],
    "concert": [
        ("multi", "Which live concerts did {s} attend?"),
        ("multi", "What bands or shows has {s} seen in concert?"),
        ("temporal", "Who did {s} see in concert in {month} {year}?"),
        ("temporal", "Which concert was {s} at {ago}?"),
    ],
}

# Written before the second round of tuning and never looked at during it (no misses are
# printed for it), asked of an archive of a third seed: the way an agent might put things.
NEW_SEED = 53
NEW_TEMPLATES: dict[str, list[tuple[str, str]]] = {
    "pet": [
        ("single", "Has {s} adopted an animal?"),
        ("single", "what's the name of {s}'s new {animal}"),
        ("inference", "Is {s} an animal lover?"),
    ],
    "instrument": [
        ("single", "Which instrument is {s} learning to play?"),
        ("inference", "Is {s} musical?"),
    ],
    "painting": [
        ("single", "What artwork did {s} show at the exhibition?"),
        ("single", "How many weekends did {s} spend on the painting?"),
    ],
    "job": [
        ("single", "Where does {s} work now?"),
        ("single", "{s} interviewed for a position: how did it go?"),
    ],
    "race": [
        ("single", "What was {s}'s finishing time in the race?"),
        ("inference", "Has {s} ever run a race?"),
    ],
    "allergy": [
        ("single", "Any food allergies I should know about for {s}?"),
        ("single", "What can't {s} eat?"),
    ],
    "book": [
        ("single", "Which book kept {s} up all night?"),
        ("single", "Has {s} read anything good lately?"),
    ],
    "car": [
        ("single", "What did {s} buy recently?"),
        ("single", "price of the car {s} bought"),
    ],
    "garden": [
        ("single", "What crops is {s} growing?"),
        ("inference", "Does {s} like gardening?"),
    ],
    "volunteer": [
        ("single", "What charity work does {s} do?"),
        ("inference", "Does {s} give time to good causes?"),
    ],
    "move": [
        ("single", "Where is {s} relocating?"),
        ("single", "Is {s} moving house?"),
    ],
    "trip": [
        ("multi", "Summarise {s}'s family road trips"),
        ("multi", "which destinations did {s} drive to"),
        ("temporal", "In {month} {year}, where did {s} travel by car?"),
        ("temporal", "{s}'s trip {ago}: where to?"),
    ],
    "bake": [
        ("multi", "What has {s} baked so far?"),
        ("multi", "Has {s} made any desserts for the people next door?"),
        ("temporal", "What was {s} baking in {month} {year}?"),
        ("temporal", "{ago}, what did {s} bake?"),
    ],
    "concert": [
        ("multi", "Which performers has {s} seen?"),
        ("multi", "What shows did {s} go to?"),
        ("temporal", "What music did {s} see live in {month} {year}?"),
        ("temporal", "Who was {s} watching perform {ago}?"),
    ],
}

# Written before the third round of tuning and never looked at during or after it (measured
# only), in phrasings of their own, over an archive of a fourth seed.
UNSEEN_SEED = 71
UNSEEN_TEMPLATES: dict[str, list[tuple[str, str]]] = {
    "pet": [
        ("single", "Which pet joined {s}'s household?"),
        ("single", "What is {s}'s rescue animal called?"),
        ("inference", "Would {s} need a pet sitter when travelling?"),
    ],
    "instrument": [
        ("single", "What is {s} being taught to play?"),
        ("inference", "Would {s} enjoy a voucher for a music store?"),
    ],
    "painting": [
        ("single", "What artwork did {s} create for the exhibit?"),
        ("single", "What scene did {s} put on canvas?"),
    ],
    "job": [
        ("single", "What position did {s} land?"),
        ("single", "Who hired {s}?"),
    ],
    "race": [
        ("single", "What distance did {s} cover in the competition?"),
        ("inference", "Is {s} into athletics?"),
    ],
    "allergy": [
        ("single", "What food does {s} react badly to?"),
        ("single", "Why does {s} avoid certain sweets?"),
    ],
    "book": [
        ("single", "What title did {s} binge-read?"),
        ("single", "What novel is {s} into?"),
    ],
    "car": [
        ("single", "What vehicle does {s} own now?"),
        ("single", "How much did {s} spend on new wheels?"),
    ],
    "garden": [
        ("single", "What vegetables is {s} cultivating?"),
        ("inference", "Would {s} want seeds for a birthday?"),
    ],
    "volunteer": [
        ("single", "Which organisation does {s} help out at?"),
        ("inference", "Does {s} do unpaid work for others?"),
    ],
    "move": [
        ("single", "Which city will {s} be living in?"),
        ("single", "Is {s} renting a new place?"),
    ],
    "trip": [
        ("multi", "Which destinations has {s} driven to with family?"),
        ("multi", "How many family roadtrips did {s} do?"),
        ("temporal", "Where did {s} drive in {month} {year}?"),
        ("temporal", "What trip did {s} take {ago}?"),
    ],
    "bake": [
        ("multi", "What goodies has {s} made for the neighbours?"),
        ("multi", "What has {s} pulled out of the oven?"),
        ("temporal", "What treat did {s} make in {month} {year}?"),
        ("temporal", "What baked goods did {s} make {ago}?"),
    ],
    "concert": [
        ("multi", "Which artists has {s} watched live?"),
        ("multi", "What performances did {s} attend?"),
        ("temporal", "Which gig did {s} go to in {month} {year}?"),
        ("temporal", "What concert did {s} attend {ago}?"),
    ],
}

# Questions as people ask them when they remember the conversation: the person's name, a
# question word and words of the evidence itself, in this or another inflection ("When did
# Jon see Coldplay in concert?"). Written with the unseen batch, never looked at, over an
# archive of a fifth seed built with echoes (turns sharing those words with other people's
# news), so that a plain index is strong here and has near misses to fall for.
NATURAL_SEED = 83
NATURAL_TEMPLATES: dict[str, list[tuple[str, str]]] = {
    "pet": [
        ("single", "What {animal} did {s} adopt from the shelter?"),
        ("single", "What is the name of the {animal} {s} adopted?"),
        ("inference", "Would {s} recommend adopting from a shelter?"),
    ],
    "instrument": [
        ("single", "What lessons did {s} start taking?"),
        ("single", "What does {s}'s teacher say about practising?"),
        ("inference", "Does {s} play the {inst}?"),
    ],
    "painting": [
        ("single", "What did {s} paint for the community art show?"),
        ("single", "How many weekends did {s} spend painting?"),
    ],
    "job": [
        ("single", "What will {s} start as next month?"),
        ("single", "Where did {s} get the job after the interview?"),
    ],
    "race": [
        ("single", "What race did {s} finish on Sunday?"),
        ("single", "Who did {s} run the {kind} with?"),
        ("inference", "Does {s} like running races?"),
    ],
    "allergy": [
        ("single", "What is {s} allergic to?"),
        ("single", "How did {s} find out about being allergic?"),
    ],
    "book": [
        ("single", "What book did {s} stay up until two finishing?"),
        ("single", "What has {s} been reading these days?"),
    ],
    "car": [
        ("single", "What car did {s} buy for ${price}?"),
        ("single", "What was {s}'s big purchase?"),
    ],
    "garden": [
        ("single", "What is coming up in {s}'s raised garden beds?"),
        ("single", "How is {s}'s backyard project going?"),
    ],
    "volunteer": [
        ("single", "Where has {s} been volunteering?"),
        ("single", "How often does {s} volunteer at the {where}?"),
    ],
    "move": [
        ("single", "Where did {s} decide to move?"),
        ("single", "When does {s} sign the lease on the new apartment?"),
    ],
    "trip": [
        ("multi", "Where did {s} go on road trips with the kids?"),
        ("multi", "Which places did {s} drive to on a road trip?"),
        ("temporal", "When did {s} go on a road trip to {place}?"),
        ("temporal", "When did {s} drive to {place} with the kids?"),
    ],
    "bake": [
        ("multi", "What did {s} bake for the neighbours?"),
        ("multi", "What has {s} baked?"),
        ("temporal", "When did {s} bake {thing}?"),
    ],
    "concert": [
        ("multi", "Which concerts did {s} go to?"),
        ("multi", "Who did {s} see live in concert?"),
        ("temporal", "When did {s} see {act} in concert?"),
        ("temporal", "When did {s} go to the {act} concert downtown?"),
    ],
}


def _ago(when: datetime, newest: datetime) -> str:
    """A span counted back from the newest session, as people say it."""
    days = (newest - when).days
    if days < 10:
        return "last week"
    months = round(days / 30.4)
    if months <= 1:
        return "last month"
    words = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight"}
    return f"{words.get(months, str(months))} months ago"


def questions(archive: Archive, batch: str) -> list[Question]:
    newest = max(s.when for s in archive.sessions)
    out: list[Question] = []
    recurring: dict[tuple[int, str, str], list[tuple[str, int, Episode, datetime]]] = defaultdict(
        list
    )
    pair_of = {s.key: s.pair for s in archive.sessions}
    for key, start, ep, speaker, _other, when in archive.episodes:
        evidence = [(key, start + i) for i in ep.evidence]
        if ep.fact in RECURRING:
            recurring[pair_of[key], speaker, ep.fact].append((key, start, ep, when))
            continue
        slots = {**ep.slots, "s": speaker}
        for text in SINGLE_TEMPLATES[ep.fact][batch]:
            out.append(Question(batch, "single", text.format(**slots), evidence, ep.fact))
        for text in INFERENCE_TEMPLATES.get(ep.fact, {}).get(batch, []):
            out.append(Question(batch, "inference", text.format(**slots), evidence, ep.fact))
    for (_pair, speaker, fact), found in sorted(recurring.items()):
        evidence = [(key, start + i) for key, start, ep, _ in found for i in ep.evidence]
        for text in MULTI_TEMPLATES[fact][batch]:
            out.append(Question(batch, "multi", text.format(s=speaker), evidence, fact))
        for key, start, ep, when in found:
            one = [(key, start + i) for i in ep.evidence]
            for text in TEMPORAL_TEMPLATES[fact][batch]:
                filled = text.format(
                    s=speaker, month=MONTHS[when.month - 1], year=when.year, ago=_ago(when, newest)
                )
                out.append(Question(batch, "temporal", filled, one, fact))
    return out


# -- running -----------------------------------------------------------------------------------


def _content_words(text: str) -> list[str]:
    return [w for w in (w.lower() for w in _WORD.findall(text)) if w not in BASELINE_STOPWORDS]


class Baseline:
    """Plain FTS5: porter stemming, stopwords dropped, bm25, the best turns."""

    def __init__(self, archive: Archive) -> None:
        self.db = sqlite3.connect(":memory:")
        self.db.execute(
            "CREATE VIRTUAL TABLE turns USING fts5(content, tokenize='porter unicode61')"
        )
        self.where: dict[int, tuple[str, int]] = {}
        rowid = 0
        for s in archive.sessions:
            for i, turn in enumerate(s.turns):
                rowid += 1
                self.where[rowid] = (s.key, i)
                self.db.execute(
                    "INSERT INTO turns(rowid, content) VALUES (?, ?)", (rowid, turn.content())
                )

    def search(self, question: str) -> list[tuple[str, int]]:
        words = _content_words(question)
        if not words:
            return []
        match = " OR ".join(f'"{w}"' for w in dict.fromkeys(words))
        rows = self.db.execute(
            "SELECT rowid FROM turns WHERE turns MATCH ? ORDER BY bm25(turns) LIMIT ?",
            (match, TOP),
        ).fetchall()
        return [self.where[r[0]] for r in rows]


def _empty_postgres(url: str) -> None:
    """The PostgreSQL database named on the command line, emptied for the archive."""
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("DROP SCHEMA IF EXISTS public CASCADE"))
        conn.execute(text("CREATE SCHEMA public"))
    engine.dispose()


class Cairn:
    """The archive in a real Cairn home, searched through session_search."""

    def __init__(
        self, archive: Archive, folder: Path, postgres: str | None = None, semantic: bool = False
    ) -> None:
        config = Config()
        if postgres:
            _empty_postgres(postgres)
            config = Config(database=DatabaseConfig(url=postgres))
        self.store = SessionStore.open(Home(folder / "home"), config)
        self.where: dict[int, tuple[str, int]] = {}
        for s in archive.sessions:
            start = s.when.timestamp()
            self.store.create_session(
                session_id=s.key, source="import", title=None, started_at=start
            )
            roles = {}
            messages = []
            for i, turn in enumerate(s.turns):
                role = roles.setdefault(turn.speaker, "user" if not roles else "assistant")
                messages.append(
                    NewMessage(role=role, content=turn.content(), timestamp=start + 45 * (i + 1))
                )
            for i, mid in enumerate(self.store.append(s.key, messages)):
                self.where[mid] = (s.key, i)
        self.search_tool = SessionSearch(self.store, semantic=semantic)
        if semantic:
            from engine.sessions.vectors import VectorIndex

            cpu = time.process_time()
            embedded = VectorIndex(self.store.engine, self.store.writer).catch_up()
            print(f"  embedded {embedded:,} messages in {time.process_time() - cpu:.1f} s of CPU")

    def search(self, question: str) -> dict[str, Any]:
        return self.search_tool("discover", query=question, limit=TOP)

    def close(self) -> None:
        self.store.engine.dispose()
        dispose_engines()


@dataclass
class Tally:
    n: int = 0
    session: int = 0
    evidence: int = 0
    cards: int = 0
    b_session: int = 0
    b_evidence: int = 0
    lexical: int = 0

    def add(self, other: Tally) -> None:
        for name in vars(self):
            setattr(self, name, getattr(self, name) + getattr(other, name))


def _lexical(q: Question, archive_turns: dict[tuple[str, int], str]) -> bool:
    """Whether every content word of the question is, exactly, in an evidence turn."""
    words = set(_content_words(q.text))
    have: set[str] = set()
    for where in q.evidence:
        have |= {w.lower() for w in _WORD.findall(archive_turns[where])}
    return bool(words) and words <= have


DEVELOPMENT = (
    "tuning",
    "chat-dev",
    "diary-dev",
    "agent-dev",
)  # the batches whose misses may be read


def evaluate(
    archive: Archive, qs: list[Question], cairn: Cairn, baseline: Baseline | None, misses: int
) -> dict[str, Tally]:
    turns = {(s.key, i): t.content() for s in archive.sessions for i, t in enumerate(s.turns)}
    by_kind: dict[str, Tally] = defaultdict(Tally)
    shown = 0
    for q in qs:
        t = by_kind[q.kind]
        t.n += 1
        t.lexical += _lexical(q, turns)
        out = cairn.search(q.text)["results"]
        found = {r["session_id"] for r in out}
        matched = {cairn.where.get(r["match_message_id"]) for r in out}
        carded = {
            cairn.where.get(m["id"])
            for r in out
            for part in ("messages", "first_messages", "last_messages")
            for m in r.get(part, [])
        }
        evidence = set(q.evidence)
        ok_session = bool(found & q.sessions)
        ok_evidence = bool(matched & evidence)
        t.session += ok_session
        t.evidence += ok_evidence
        t.cards += bool(carded & evidence)
        base = baseline.search(q.text) if baseline is not None else []
        t.b_session += bool({k for k, _ in base} & q.sessions)
        t.b_evidence += bool(set(base) & evidence)
        # Misses are shown for the development batches only: the others are for measuring.
        if not ok_evidence and shown < misses and q.batch in DEVELOPMENT:
            shown += 1
            print(f"    miss [{q.kind}] {q.text!r} (session {'ok' if ok_session else 'MISSED'})")
            print(f"       want: {turns[q.evidence[0]][:100]!r}")
            for r in out[:3]:
                where = cairn.where.get(r["match_message_id"])
                print(f"       got:  {where} {turns.get(where, '?')[:90]!r}")
    return by_kind


def _ratio(a: int, b: int) -> str:
    return f"{a / b:.2f}x" if b else "n/a"


def report(name: str, by_kind: dict[str, Tally]) -> Tally:
    total = Tally()
    print(f"\n  {name}")
    print(
        f"    {'kind':10s} {'n':>4s}  {'session@5':>17s}  {'evidence@5':>17s}  "
        f"{'in cards':>8s}  {'lexical':>7s}"
    )
    print(f"    {'':10s} {'':>4s}  {'Cairn  FTS5':>17s}  {'Cairn  FTS5':>17s}")
    for kind in ("single", "multi", "temporal", "inference"):
        if kind in by_kind:
            total.add(by_kind[kind])
    for kind, t in [*((k, by_kind[k]) for k in sorted(by_kind)), ("all", total)]:
        print(
            f"    {kind:10s} {t.n:4d}  {t.session / t.n:8.3f} {t.b_session / t.n:6.3f}  "
            f"{t.evidence / t.n:10.3f} {t.b_evidence / t.n:6.3f}  {t.cards / t.n:8.3f}  "
            f"{t.lexical / t.n:7.2f}"
        )
    print(
        f"    Cairn/FTS5: session@5 {_ratio(total.session, total.b_session)}, "
        f"evidence@5 {_ratio(total.evidence, total.b_evidence)}"
    )
    return total


# The batches asked of an archive of their own seed, and their templates.
# Written in the fifth round, after the semantic weights were chosen, and measured once (words
# alone and with meaning): the requests an agent makes on its user's behalf ("remind me…",
# "did … ever mention…"), over an archive of a sixth seed with echoes.
LATER_SEED = 97
LATER_TEMPLATES: dict[str, list[tuple[str, str]]] = {
    "pet": [
        ("single", "Remind me what kind of animal {s} brought home."),
        ("inference", "Does {s} have someone at home to walk or feed?"),
    ],
    "instrument": [
        ("single", "Did {s} ever mention learning music?"),
        ("single", "Which {inst} teacher comment did {s} pass on?"),
    ],
    "painting": [
        ("single", "Remind me what {s} painted."),
        ("inference", "Is {s} an artist of some sort?"),
    ],
    "job": [
        ("single", "Did {s} find a new job?"),
        ("single", "Remind me what {s} does for a living now."),
    ],
    "race": [
        ("single", "How long did {s} take to finish the run?"),
        ("inference", "Does {s} do endurance sports?"),
    ],
    "allergy": [
        ("single", "Is there something {s} cannot eat?"),
        ("inference", "What should I leave out when cooking for {s}?"),
    ],
    "book": [
        ("single", "Which book kept {s} up at night?"),
        ("inference", "Could I recommend a story to {s}, what do they like reading?"),
    ],
    "car": [
        ("single", "What did {s} buy to get around?"),
        ("single", "Remind me about {s}'s car purchase."),
    ],
    "garden": [
        ("single", "What is {s} growing at home?"),
        ("inference", "Does {s} have a green thumb?"),
    ],
    "volunteer": [
        ("single", "Where does {s} give their time for free?"),
        ("inference", "Is {s} involved in any charity?"),
    ],
    "move": [
        ("single", "Where is {s} relocating to?"),
        ("single", "Did {s} mention moving house?"),
    ],
    "trip": [
        ("multi", "List the road trips {s} told me about."),
        ("multi", "Where has {s} been on holiday by car?"),
        ("temporal", "Remind me where {s} travelled in {month} {year}."),
        ("temporal", "Where did {s} go {ago}?"),
    ],
    "bake": [
        ("multi", "Everything {s} baked, please."),
        ("multi", "Which desserts has {s} tried making?"),
        ("temporal", "What did {s} bake in {month} {year}?"),
        ("temporal", "What came out of {s}'s oven {ago}?"),
    ],
    "concert": [
        ("multi", "Which bands has {s} seen?"),
        ("multi", "Remind me of the shows {s} went to."),
        ("temporal", "Which concert was {s} at in {month} {year}?"),
        ("temporal", "Who did {s} see play {ago}?"),
    ],
}


# A second development batch for the chat archive (eleventh round), over an archive of its own
# with echoes: the tuning batch is answered whole, so its misses no longer say what to build.
# Fragments typed as notes ("{s} art show piece") and other words for the facts ("new wheels",
# "gig", "allergies"), unlike the templates of the other chat batches.
CHAT_DEV_SEED = 127
CHAT_DEV_TEMPLATES: dict[str, list[tuple[str, str]]] = {
    "pet": [
        ("single", "{s} got a {young}?"),
        ("single", "name of {s}'s new {animal}"),
        ("inference", "Is {s} a dog or cat person?"),
    ],
    "instrument": [
        ("single", "what's {s} learning to play"),
        ("inference", "Is {s} musical?"),
    ],
    "painting": [
        ("single", "{s} art show piece"),
        ("inference", "Has {s} exhibited any artwork?"),
    ],
    "job": [
        ("single", "where does {s} work now"),
        ("single", "{s}'s new role after the interview"),
        ("inference", "Did {s} change careers?"),
    ],
    "race": [
        ("single", "{s} {kind} finishing time"),
        ("inference", "Has {s} done any running events?"),
    ],
    "allergy": [
        ("single", "food {s} is allergic to"),
        ("inference", "Does {s} have any allergies?"),
    ],
    "book": [
        ("single", "the novel {s} stayed up late reading"),
        ("inference", "What genre does {s} enjoy?"),
    ],
    "car": [
        ("single", "how much did {s} pay for the car"),
        ("single", "{s}'s new wheels"),
    ],
    "garden": [
        ("single", "vegetables in {s}'s raised beds"),
        ("inference", "Does {s} do any gardening?"),
    ],
    "volunteer": [
        ("single", "{s} volunteering schedule"),
        ("inference", "Does {s} do unpaid work for the community?"),
    ],
    "move": [
        ("single", "which city {s} is moving to"),
        ("inference", "Is {s} signing a new lease?"),
    ],
    "trip": [
        ("multi", "all of {s}'s family drives"),
        ("temporal", "{s} trip {month} {year}"),
        ("temporal", "where {s} drove to {ago}"),
    ],
    "bake": [
        ("multi", "things {s} has baked"),
        ("temporal", "{s} baking {month} {year}"),
        ("temporal", "what {s} made for the neighbours {ago}"),
    ],
    "concert": [
        ("multi", "live music {s} has been to"),
        ("temporal", "gig {s} went to in {month} {year}"),
        ("temporal", "which act {s} saw {ago}"),
    ],
}

# Written after the twelfth round's change was chosen on the development batches, and before it
# was run on any other: whole questions about one participant, asked the way a friend would
# ask another, mostly in other words than the evidence's ("What can't {s} eat?").
CHAT_TOLD_SEED = 139
CHAT_TOLD_TEMPLATES: dict[str, list[tuple[str, str]]] = {
    "pet": [
        ("single", "What animal did {s} bring home?"),
        ("single", "Does {s} have a {animal} now?"),
        ("inference", "Would {s} need a pet sitter when travelling?"),
    ],
    "instrument": [
        ("single", "Which instrument is {s} taking classes for?"),
        ("inference", "Does {s} have a music teacher?"),
    ],
    "painting": [
        ("single", "What did {s} paint for the exhibition?"),
        ("inference", "Is {s} into painting?"),
    ],
    "job": [
        ("single", "What job did {s} land?"),
        ("inference", "Is {s} starting somewhere new next month?"),
    ],
    "race": [
        ("single", "How long did {s}'s {kind} take?"),
        ("inference", "Is {s} a runner?"),
    ],
    "allergy": [
        ("single", "What can't {s} eat?"),
        ("inference", "Should I avoid any ingredients when cooking for {s}?"),
    ],
    "book": [
        ("single", "Which book kept {s} up all night?"),
        ("inference", "Does {s} read {genre}?"),
    ],
    "car": [
        ("single", "What does {s} drive these days?"),
        ("single", "Did {s} buy a {brand}?"),
    ],
    "garden": [
        ("single", "What is {s} growing at home?"),
        ("inference", "Does {s} have a vegetable patch?"),
    ],
    "volunteer": [
        ("single", "Where does {s} help out on Thursdays?"),
        ("inference", "Does {s} give time to a charity?"),
    ],
    "move": [
        ("single", "Where is {s} relocating?"),
        ("inference", "Is {s} leaving town?"),
    ],
    "trip": [
        ("multi", "Every road trip {s} took with the kids"),
        ("temporal", "Where did {s} travel by car in {month} {year}?"),
        ("temporal", "{s}'s drive {ago}"),
    ],
    "bake": [
        ("multi", "What has {s} baked for the neighbours?"),
        ("temporal", "What did {s} bake in {month} {year}?"),
        ("temporal", "{s}'s baking {ago}"),
    ],
    "concert": [
        ("multi", "Which bands has {s} seen live?"),
        ("temporal", "Whose show did {s} catch in {month} {year}?"),
        ("temporal", "the concert {s} went to {ago}"),
    ],
}


OWN_ARCHIVE: dict[str, tuple[int, dict[str, list[tuple[str, str]]], bool]] = {
    "fresh": (FRESH_SEED, FRESH_TEMPLATES, False),
    "new": (NEW_SEED, NEW_TEMPLATES, False),
    "unseen": (UNSEEN_SEED, UNSEEN_TEMPLATES, False),
    "natural": (NATURAL_SEED, NATURAL_TEMPLATES, True),
    "later": (LATER_SEED, LATER_TEMPLATES, True),
    "chat-dev": (CHAT_DEV_SEED, CHAT_DEV_TEMPLATES, True),
    "chat-told": (CHAT_TOLD_SEED, CHAT_TOLD_TEMPLATES, True),
}


def run(
    seed: int,
    batches: list[str],
    misses: int,
    postgres: str | None = None,
    echoes: bool = False,
    semantic: bool = False,
) -> dict[str, Tally]:
    archive = build_archive(seed, echoes)

    def asked(batch: str) -> list[Question]:
        if batch in OWN_ARCHIVE:
            return fresh_questions(archive, OWN_ARCHIVE[batch][1], batch)
        return questions(archive, batch)

    return _measure(f"archive (seed {seed})", archive, asked, batches, misses, postgres, semantic)


DIARY_BATCHES = ("diary-dev", "diary-test", "diary-fresh", "diary-spoken")


def run_diary(
    batches: list[str], misses: int, postgres: str | None = None, semantic: bool = False
) -> dict[str, Tally]:
    """The batches of recall_diary.py: an archive of another generator, in another style
    (longer turns that mix several pieces of news, other topics, pairs who are not all friends),
    so that what is tuned here is also measured on conversations it was not written for."""
    from recall_diary import DIARY_SEED, build_diary  # type: ignore[import-not-found]

    sessions, by_batch = build_diary(DIARY_SEED)
    archive = Archive(sessions, [])
    title = f"diary archive (seed {DIARY_SEED})"
    return _measure(title, archive, by_batch.__getitem__, batches, misses, postgres, semantic)


AGENT_BATCHES = ("agent-dev", "agent-test", "agent-fresh", "agent-later", "agent-asked")


def run_agent(
    batches: list[str], misses: int, postgres: str | None = None, semantic: bool = False
) -> dict[str, Tally]:
    """The batches of recall_agent.py: an agent's own sessions with its user (requests and
    long replies, stored without names), the kind of history Cairn keeps most."""
    from recall_agent import AGENT_SEED, build_agent  # type: ignore[import-not-found]

    sessions, by_batch = build_agent(AGENT_SEED)
    archive = Archive(sessions, [])
    title = f"agent archive (seed {AGENT_SEED})"
    return _measure(title, archive, by_batch.__getitem__, batches, misses, postgres, semantic)


def _measure(
    title: str,
    archive: Archive,
    asked: Callable[[str], list[Question]],
    batches: list[str],
    misses: int,
    postgres: str | None,
    semantic: bool,
) -> dict[str, Tally]:
    """``archive`` in a Cairn home and in the plain FTS5 baseline, each batch's questions
    (``asked(batch)``) put to both."""
    sessions = archive.sessions
    messages = sum(len(s.turns) for s in sessions)
    print(
        f"{title}: {len(sessions)} sessions, {messages:,} messages, "
        f"{sessions[0].when:%Y-%m-%d} .. {max(s.when for s in sessions):%Y-%m-%d}"
    )
    results: dict[str, Tally] = {}
    with tempfile.TemporaryDirectory(prefix="cairn-recall-") as folder:
        started = time.perf_counter()
        cairn = Cairn(archive, Path(folder), postgres, semantic)
        print(
            f"  Cairn on {'PostgreSQL' if postgres else 'SQLite'}"
            + (", words and meaning (semantic)" if semantic else "")
        )
        baseline = Baseline(archive)
        print(f"  loaded in {time.perf_counter() - started:.1f} s")
        try:
            for batch in batches:
                qs = asked(batch)
                by_kind = evaluate(archive, qs, cairn, baseline, misses)
                results[batch] = report(f"{batch} ({len(qs)} questions)", by_kind)
        finally:
            cairn.close()
    return results


def fresh_questions(
    archive: Archive,
    templates: dict[str, list[tuple[str, str]]] = FRESH_TEMPLATES,
    batch: str = "fresh",
) -> list[Question]:
    """Questions from templates written after tuning (FRESH_TEMPLATES, NEW_TEMPLATES)."""
    newest = max(s.when for s in archive.sessions)
    pair_of = {s.key: s.pair for s in archive.sessions}
    out: list[Question] = []
    recurring: dict[tuple[int, str, str], list[tuple[str, int, Episode, datetime]]] = defaultdict(
        list
    )
    for key, start, ep, speaker, _other, when in archive.episodes:
        if ep.fact in RECURRING:
            recurring[pair_of[key], speaker, ep.fact].append((key, start, ep, when))
            continue
        evidence = [(key, start + i) for i in ep.evidence]
        for kind, template in templates[ep.fact]:
            filled = template.format(**ep.slots, s=speaker)
            out.append(Question(batch, kind, filled, evidence, ep.fact))
    for (_pair, speaker, fact), found in sorted(recurring.items()):
        every = [(key, start + i) for key, start, ep, _ in found for i in ep.evidence]
        for kind, template in templates[fact]:
            if kind == "multi":
                out.append(Question(batch, kind, template.format(s=speaker), every, fact))
                continue
            for key, start, ep, when in found:
                one = [(key, start + i) for i in ep.evidence]
                filled = template.format(
                    **ep.slots,
                    s=speaker,
                    month=MONTHS[when.month - 1],
                    year=when.year,
                    ago=_ago(when, newest),
                )
                out.append(Question(batch, kind, filled, one, fact))
    return out


# -- learning the weights ----------------------------------------------------------------------


def train(seed: int = SEED, epochs: int = 600, rate: float = 0.05, l2: float = 0.02) -> int:
    """Learn the weights of recall.py's score on the tuning batch, and print them.

    First the message features' weights (Recall.weights): every question of the tuning batch
    is asked through session_search; each round of ranking reports its candidates and their
    features (Recall.observer), and the weights are fit so that within a round the evidence
    turns come first: a softmax over the round's candidates, the loss the evidence's share of
    it (listwise), weights kept at zero or above and pulled towards the design's own
    (HAND_WEIGHTS) so that a feature the batch says little about keeps its meaning, and another
    form of a word held at most 0.85 of the word as typed (the batch was worded in other forms
    on purpose, and would otherwise teach the opposite). Plain
    gradient descent from the hand weights: deterministic.

    Then the conversation's terms (Recall.session_weights: a name in the session, what other
    messages cover, the runner-up) and the scale of the message score beside them, which the
    message-level fit cannot see: a coordinate search over a few values each, on the tuning
    batch's session@5 + evidence@5.
    """
    import numpy as np

    from engine.sessions import recall as recall_module

    recall = recall_module.Recall
    archive = build_archive(seed)
    qs = questions(archive, "tuning")
    rounds: list[tuple[Any, Any, Any]] = []  # features, asks, labels
    with tempfile.TemporaryDirectory(prefix="cairn-recall-train-") as folder:
        cairn = Cairn(archive, Path(folder))
        ids = {where: mid for mid, where in cairn.where.items()}
        seen: list[list[tuple[int, tuple[float, ...]]]] = []
        recall.weights = recall_module.HAND_WEIGHTS
        recall.session_weights = recall_module.SESSION_WEIGHTS_HAND
        recall.observer = seen.append
        try:
            for q in qs:
                seen.clear()
                cairn.search(q.text)
                evidence = {ids[where] for where in q.evidence}
                for found in seen:
                    labels = [mid in evidence for mid, _ in found]
                    if any(labels) and not all(labels):
                        x = np.array([f[:-1] for _, f in found])
                        asks = np.array([recall_module.ASKING if f[-1] else 1.0 for _, f in found])
                        rounds.append((x, asks, np.array(labels, dtype=float)))
        finally:
            recall.observer = None
        hand = np.array(recall_module.HAND_WEIGHTS)
        w = hand.copy()
        for _ in range(epochs):
            grad = 2 * l2 * (w - hand)
            for x, asks, labels in rounds:
                scores = (x @ w) * asks
                p = np.exp(scores - scores.max())
                p /= p.sum()
                q_ = labels * p
                q_ /= q_.sum()
                grad += ((p - q_) * asks) @ x / len(rounds)  # d(-log sum_evidence p) / d w
            w = np.maximum(0.0, w - rate * grad)
            # The word as typed ranks above its other forms, whatever the batch says: its
            # questions were worded in other forms on purpose, which real questions are not.
            w[1] = min(w[1], recall_module.STEMMED * w[0])
        # In the units of the hand weights: the evidence scores on average what it did.
        mean = np.vstack([x[labels > 0] for x, _, labels in rounds]).mean(axis=0)
        w *= float(mean @ hand) / float(mean @ w)
        print(f"message weights learned on {len(rounds)} rounds of the tuning batch (seed {seed})")

        def score(values: list[float]) -> float:
            scale, *conversation = values
            recall.weights = tuple(float(v) for v in w * scale)
            recall.session_weights = (conversation[0], conversation[1], conversation[2])
            tally = evaluate(archive, qs, cairn, None, 0)
            total = Tally()
            for t in tally.values():
                total.add(t)
            return (total.session + total.evidence) / (2 * total.n)

        grid = [
            [0.5, 0.75, 1.0, 1.5, 2.0],  # scale of the message score
            [0.35, 0.65, 1.0, 1.5],  # a name in the session
            [0.25, 0.5, 0.75, 1.0],  # a concept another message covers
            [0.0, 0.1, 0.2, 0.4],  # the runner-up
        ]
        best = [1.0, *recall_module.SESSION_WEIGHTS_HAND]
        best_score = score(best)
        for _sweep in range(2):
            for i, values in enumerate(grid):
                for v in values:
                    trial = [*best[:i], v, *best[i + 1 :]]
                    if (got := score(trial)) > best_score + 1e-9:
                        best, best_score = trial, got
        print(f"conversation terms: (session@5 + evidence@5) / 2 = {best_score:.3f} on tuning")
        cairn.close()
    recall.weights = recall_module.WEIGHTS
    recall.session_weights = recall_module.SESSION_WEIGHTS
    print("WEIGHTS = (")
    for name, value in zip(recall_module.FEATURES, w * best[0], strict=True):
        print(f"    {value:.3f},  # {name}")
    print(")")
    print(f"SESSION_WEIGHTS = ({best[1]}, {best[2]}, {best[3]})")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument(
        "--batch",
        default="all",
        help="tuning, held-out, fresh, new, unseen, natural, later, chat-dev, chat-told, "
        "diary-dev, diary-test, diary-fresh, diary-spoken, agent-dev, agent-test, agent-fresh, "
        "agent-later, agent-asked or all",
    )
    parser.add_argument("--misses", type=int, default=0, help="print this many misses a batch")
    parser.add_argument(
        "--postgres", default=None, help="URL of a PostgreSQL database to EMPTY and search in"
    )
    parser.add_argument(
        "--semantic",
        action="store_true",
        help="rank by meaning as well (needs the semantic extra; embeds each archive first)",
    )
    parser.add_argument(
        "--train", action="store_true", help="learn recall.py's weights on the tuning batch"
    )
    args = parser.parse_args(argv)
    if args.train:
        return train()
    print("load average: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    results: dict[str, Tally] = {}
    if args.batch == "all":
        results |= run(
            args.seed, ["tuning", "held-out"], args.misses, args.postgres, semantic=args.semantic
        )
        for batch, (seed, _, echoes) in OWN_ARCHIVE.items():
            results |= run(seed, [batch], args.misses, args.postgres, echoes, args.semantic)
        results |= run_diary(list(DIARY_BATCHES), args.misses, args.postgres, args.semantic)
        results |= run_agent(list(AGENT_BATCHES), args.misses, args.postgres, args.semantic)
    elif args.batch in AGENT_BATCHES:
        results |= run_agent([args.batch], args.misses, args.postgres, args.semantic)
    elif args.batch in DIARY_BATCHES:
        results |= run_diary([args.batch], args.misses, args.postgres, args.semantic)
    else:
        seed, _, echoes = OWN_ARCHIVE.get(args.batch, (args.seed, {}, False))
        seed = seed if args.seed == SEED else args.seed
        results |= run(seed, [args.batch], args.misses, args.postgres, echoes, args.semantic)
    print("\nsummary: session@5 / evidence@5, Cairn against plain FTS5")
    for batch, t in results.items():
        print(
            f"  {batch:10s} {t.n:4d}  Cairn {t.session / t.n:.3f} / {t.evidence / t.n:.3f}   "
            f"FTS5 {t.b_session / t.n:.3f} / {t.b_evidence / t.n:.3f}   "
            f"ratio {_ratio(t.session, t.b_session)} / {_ratio(t.evidence, t.b_evidence)}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
