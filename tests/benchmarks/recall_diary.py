"""A second synthetic archive for the relevance benchmark, in another style and on other topics.

    python tests/benchmarks/recall_diary.py [--seed 131]

recall.py's batches all come from one generator: short one-line turns between pairs of friends
about pets, races, road trips and the like. A ranking tuned on them could be tuned to that
generator. This archive is written independently to check that it generalises: five pairs
(colleagues, siblings, a mother and her adult son, old school friends, former flatmates),
twenty sessions each over about fourteen months, long turns that mix a fact with the rest of a
week ("Work's been relentless. Also I broke my wrist."), short reactions, follow-up questions,
small talk, and distractor turns that say a fact's words about someone else.

Thirty kinds of facts, none of recall.py's: a relative's wedding, a kitchen renovation, a lost
passport, a tax letter, restaurants tried, birds seen, and so on. Some are updated in a later
session (the wedding moves, the lost thing turns up), some recur with new values (a series
binged, a game played), and some are stated in a short reply whose subject is the question
before it ("Did you book the dentist?" / "Yes, finally, the 14th.").

Four batches ask about the same facts in separately written phrasings: ``diary-dev`` (for
tuning), ``diary-test`` (measured only; its wording is not to be guessed from dev),
``diary-fresh`` (written after the ranking was tuned on dev, in new shapes: requests to an
assistant, terse keyword queries, indirect ones, for an honest after-tuning figure) and
``diary-spoken`` (written after the seventh round's ranking changes, without looking at the
ranker: questions as said to a voice assistant or typed in a hurry, with lead-ins and hedges,
everyday paraphrases of the evidence, a few misspellings and loosely said dates). Each has
four kinds of question: single, multi (a fact over several sessions or its update), temporal
("in March 2024", "two months ago", "when did ...") and inference (the question names the
general idea, the evidence a case of it).
"""

from __future__ import annotations

import argparse
import random
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from recall import (  # type: ignore[import-not-found]  # noqa: E402
    BASELINE_STOPWORDS,
    MONTHS,
    Question,
    Session,
    Turn,
)

DIARY_SEED = 131
BATCHES = ("diary-dev", "diary-test", "diary-fresh", "diary-spoken")
SESSIONS_PER_PAIR = 20
FACTS_PER_SPEAKER = 6
SERIES_PER_PAIR = 3
SPAN_DAYS = 425
START = datetime(2024, 1, 8, 19, 0, tzinfo=UTC)
_WORD = re.compile(r"[^\W_]+")


# -- the people ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Person:
    name: str
    voice: str  # how they talk to the other: colleague, sibling, parent, child, school, flatmate
    partner: str
    kin_rel: str  # the relative whose wedding it may be
    kin: str
    elder_rel: str  # the oldest relative, whose birthday it may be
    elder: str
    kid_rel: str = ""  # a school-age child in the family, if any
    kid: str = ""


def _mine(p: Person) -> str:
    """How ``p`` names their partner to the other: a mother to her son says "your dad"."""
    return "your dad" if p.voice == "parent" else p.partner


def _theirs(p: Person) -> str:
    """How the other names ``p``'s partner: the son says "Dad"."""
    return "Dad" if p.voice == "parent" else p.partner


PAIRS: list[tuple[Person, Person]] = [
    (
        Person("Anjali", "colleague", "Rhys", "sister", "Meera", "grandmother", "Kamala"),
        Person(
            "Bruno",
            "colleague",
            "Lise",
            "brother",
            "Davi",
            "grandmother",
            "Celeste",
            "daughter",
            "Pia",
        ),
    ),
    (
        Person(
            "Elif", "sibling", "Dara", "cousin", "Selin", "grandmother", "Nesrin", "niece", "Juno"
        ),
        Person(
            "Oskar",
            "sibling",
            "Wren",
            "cousin",
            "Aras",
            "grandfather",
            "Ahmet",
            "daughter",
            "Juno",
        ),
    ),
    (
        Person(
            "Judith", "parent", "Graham", "sister", "Philippa", "mother", "Iris", "grandson", "Bram"
        ),
        Person(
            "Felix", "child", "Anouk", "sister", "Hattie", "grandfather", "Leonard", "son", "Bram"
        ),
    ),
    (
        Person("Kwame", "school", "Esi", "brother", "Yaw", "grandmother", "Akosua", "son", "Kofi"),
        Person("Ingrid", "school", "Matthias", "sister", "Liv", "grandfather", "Sten"),
    ),
    (
        Person(
            "Mateo",
            "flatmate",
            "Carys",
            "brother",
            "Andoni",
            "grandmother",
            "Amparo",
            "nephew",
            "Iker",
        ),
        Person(
            "Siobhan",
            "flatmate",
            "Declan",
            "sister",
            "Aoife",
            "grandfather",
            "Seamus",
            "daughter",
            "Orla",
        ),
    ),
]


# -- facts --------------------------------------------------------------------------------------


@dataclass
class Part:
    """The turns said about a fact in one session; ``marks`` names the turns that state it:
    role -> (turn index within the part, the answer that turn must contain)."""

    turns: list[Turn]
    marks: dict[str, tuple[int, str]]
    key: str = ""
    start: int = 0
    when: datetime = START


@dataclass
class Fact:
    kind: str
    owner: Person
    slots: dict[str, str]
    parts: list[Part] = field(default_factory=list)
    series: bool = False  # one value per part, asked across them


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


# Clauses of an ordinary week, mixed into fact turns so that they read like a life update and
# not like a fact on its own line. None of them states anything a question asks about.
PADS = [
    "It's been grey and drizzly all week.",
    "Work is relentless, three deadlines landed on the same Friday.",
    "I've had about four hours of sleep.",
    "The trains were a mess again this morning.",
    "{partner} says hi, by the way.",
    "Also I've lived on toast since Tuesday.",
    "Sorry for the essay, I've had a lot of coffee.",
    "Anyway, that's not even the main news.",
    "Other than that, the week has been pleasantly boring.",
    "The boiler at the office packed in, so we're all wearing scarves at our desks.",
    "Spent Saturday doing laundry and pretending to tidy.",
    "I keep forgetting to reply to everyone, so you're lucky.",
    "Also the bin men skipped our street again.",
    "{partner} and I have been like ships in the night.",
    "My inbox is a crime scene.",
]


def _dense(rng: random.Random, p: Person, core: str, reply: bool = False) -> str:
    """A fact sentence with the week around it: sometimes a clause before (not in a reply,
    which answers the turn before it first), sometimes after."""
    parts = [core]
    if rng.random() < 0.45 and not reply:
        parts.insert(0, _cap(rng.choice(PADS).format(partner=_mine(p))))
    if rng.random() < 0.4:
        extra = _cap(rng.choice(PADS).format(partner=_mine(p)))
        if extra not in parts:
            parts.append(extra)
    return " ".join(parts)


REACT = [
    "No way!",
    "That's rough.",
    "Ha, classic you.",
    "Oof.",
    "Love that.",
    "Stop it, amazing.",
    "Ugh, sorry.",
    "Honestly, same.",
    "Ha! Of course.",
    "That's so you.",
    "Wait, really?",
    "Brilliant.",
    "Nooo.",
    "Fair enough.",
    "I can picture it exactly.",
    "That's a lot.",
    "Good for you.",
    "Mood.",
    "Incredible scenes.",
    "Oh, bless.",
]

# Reactions to news that may be good or bad, and to a joke or an aside.
REACT_MIXED = [
    "Oof, what a week.",
    "Ha, sounds about right.",
    "Honestly, same.",
    "I can picture it exactly.",
    "That's a lot.",
    "Mood.",
    "Wait, really?",
    "Classic.",
]
REACT_LIGHT = [
    "Ha!",
    "Lol.",
    "Ha, of course.",
    "Stop it.",
    "Brilliant.",
    "Same, honestly.",
    "Classic.",
]

WEDDING_VENUES = [
    "a barn outside Ludlow",
    "the botanical gardens in Leicester",
    "a lighthouse hotel in Pembrokeshire",
    "a vineyard near Porto",
    "the old town hall in Whitby",
    "a boathouse on Loch Awe",
]
WEDDING_DATES = [
    "the 8th of June",
    "the 21st of September",
    "the 3rd of August",
    "the 14th of May",
    "the 26th of October",
    "the 12th of July",
]
WEDDING_REASONS = [
    "the venue double-booked them",
    "the florist went bust",
    "half the guests have a christening that day",
    "the marquee company lost their deposit",
]


def wedding(rng: random.Random, s: Person, o: Person) -> Fact:
    venue = rng.choice(WEDDING_VENUES)
    d1, d2 = rng.sample(WEDDING_DATES, 2)
    first = Part(
        [
            Turn(
                s.name,
                _dense(
                    rng,
                    s,
                    f"Big family news: my {s.kin_rel} {s.kin} is getting married! It's on {d1} "
                    f"at {venue}, and somehow I've been roped into giving a speech.",
                ),
            ),
            Turn(o.name, "Oh, that's lovely! Are you nervous about the speech?"),
            Turn(s.name, "Terrified. I'll write it the night before, like a true professional."),
        ],
        {"main": (0, venue), "date": (0, d1)},
    )
    second = Part(
        [
            Turn(o.name, f"Wait, is {s.kin}'s big day still {d1}?"),
            Turn(
                s.name,
                f"No, they've moved it to {d2}, because {rng.choice(WEDDING_REASONS)}. "
                "So my speech has even longer to fester.",
            ),
            Turn(o.name, rng.choice(REACT)),
        ],
        {"update": (1, d2)},
    )
    return Fact("wedding", s, {"kin": s.kin, "kin_rel": s.kin_rel}, [first, second])


BUILDERS_CO = [
    "a builder called Gethin",
    "two brothers from Dunmore Joinery",
    "a very calm woman called Ros",
    "a firm called Keel & Plumb",
]
FEATURES = [
    "terrazzo worktops",
    "a green tiled splashback",
    "oak open shelving",
    "a deep butler sink",
    "a walk-in pantry",
    "navy cabinets",
]


def renovation(rng: random.Random, s: Person, o: Person) -> Fact:
    feature, builder = rng.choice(FEATURES), rng.choice(BUILDERS_CO)
    weeks = rng.choice(["three", "four", "six", "eight"])
    part = Part(
        [
            Turn(o.name, "How's the house? Still living on takeaways?"),
            Turn(
                s.name,
                _dense(
                    rng,
                    s,
                    f"Yes, the kitchen is down to bare walls. {_cap(builder)} reckons {weeks} more "
                    f"weeks, and we went with {feature} in the end, which blew the budget, "
                    "but I regret nothing.",
                    reply=True,
                ),
            ),
            Turn(o.name, "Worth it. You'll be in there forever."),
        ],
        {"main": (1, feature)},
    )
    return Fact("renovation", s, {}, [part])


PROCEDURES = [
    "knee arthroscopy",
    "hernia repair",
    "wisdom tooth extraction",
    "cataract operation",
    "carpal tunnel release",
    "gallbladder removal",
]
HOSPITALS = ["St Brannock's", "the Royal Infirmary", "Westgate Clinic", "the Nuffield on Ash Road"]


def procedure(rng: random.Random, s: Person, o: Person) -> Fact:
    proc, hospital = rng.choice(PROCEDURES), rng.choice(HOSPITALS)
    part = Part(
        [
            Turn(o.name, "When's the op, by the way? I lost track."),
            Turn(
                s.name,
                f"Thursday, at {hospital}. It's only a {proc}, in and out the same day, but they "
                "want me there at seven and fasting. Mostly I'm upset about the no-coffee part.",
            ),
            Turn(o.name, "Fingers crossed. Text me when you're out."),
        ],
        {"main": (1, proc)},
    )
    return Fact("procedure", s, {}, [part])


BONES = ["wrist", "collarbone", "ankle", "little finger", "elbow"]
FALLS = [
    "Slipped on black ice outside the bakery",
    "Fell off a paddleboard in about a foot of water",
    "Missed the last step at the cinema",
    "Tripped on a kerb while reading a text",
    "Went over the handlebars of a hire bike",
]


def fracture(rng: random.Random, s: Person, o: Person) -> Fact:
    bone = rng.choice(BONES)
    first = Part(
        [
            Turn(
                s.name,
                f"Slight update: I broke my {bone}. {rng.choice(FALLS)}, of all things. Cast for "
                "six weeks, so I'm typing this with one hand and a lot of swearing.",
            ),
            Turn(o.name, "Oh no! That's rough. Do you need anything?"),
            Turn(s.name, "Just sympathy and someone to open jars."),
        ],
        {"main": (0, bone)},
    )
    second = Part(
        [
            Turn(o.name, "Is the cast off yet?"),
            Turn(
                s.name,
                f"Yes! Since Monday. My {bone} looks like a pale little noodle, but it works, "
                "and the physio says I can lift a kettle again.",
            ),
        ],
        {"cast": (1, bone)},
    )
    return Fact("fracture", s, {}, [first, second])


LANGUAGES = [
    ("Portuguese", "Lisbon"),
    ("Korean", "Seoul"),
    ("Welsh", "Snowdonia"),
    ("Turkish", "Izmir"),
    ("Dutch", "Utrecht"),
    ("Japanese", "Osaka"),
]
METHODS = [
    "with a tutor on Tuesday evenings",
    "an evening class at the adult college",
    "on an app, day forty of the streak today",
    "a group course above the library",
]


def language(rng: random.Random, s: Person, o: Person) -> Fact:
    lang, place = rng.choice(LANGUAGES)
    part = Part(
        [
            Turn(
                s.name,
                _dense(
                    rng,
                    s,
                    f"I've signed up for {lang} lessons, {rng.choice(METHODS)}. We're off to "
                    f"{place} next year and I refuse to just point at menus.",
                ),
            ),
            Turn(o.name, "Ooh. Say something!"),
            Turn(
                s.name, "I can say good morning and ask for the bill. That's the whole repertoire."
            ),
        ],
        {"main": (0, lang)},
    )
    return Fact("language", s, {}, [part])


PRODUCTS = [
    ("hand-poured candles", "Ember & Wick"),
    ("hot sauce", "Small Batch Fire"),
    ("upcycled denim tote bags", "Second Seam"),
    ("hand-bound notebooks", "Bindery Lane"),
    ("restored vintage lamps", "Lumen Again"),
]


def side_business(rng: random.Random, s: Person, o: Person) -> Fact:
    product, shop = rng.choice(PRODUCTS)
    orders = rng.choice(["thirty", "forty", "sixty-two", "nineteen"])
    part = Part(
        [
            Turn(o.name, "Any news? You sounded cagey last time."),
            Turn(
                s.name,
                f"Okay, secret project reveal: I've started selling {product} on the side, under "
                f"the name {shop}. {_cap(orders)} orders in the first month, and my spare room "
                "is now a warehouse.",
            ),
            Turn(o.name, "No way! Put me down for one."),
        ],
        {"main": (1, product)},
    )
    return Fact("side_business", s, {}, [part])


ROUTINES = [
    ("cold shower", "a cold shower every single morning"),
    ("journaling", "journaling for ten minutes before bed"),
    ("meditating", "meditating for twenty minutes before work"),
    ("no screens", "no screens after nine at night"),
    ("stretching", "twenty minutes of stretching after lunch"),
]


def routine(rng: random.Random, s: Person, o: Person) -> Fact:
    key, phrase = rng.choice(ROUTINES)
    weeks = rng.choice(["three", "five", "six"])
    part = Part(
        [
            Turn(
                s.name,
                _dense(
                    rng,
                    s,
                    f"New me, by the way. I've been doing {phrase} for {weeks} weeks now and I "
                    "feel annoyingly good about it.",
                ),
            ),
            Turn(o.name, "Ha, classic you. Next it'll be a standing desk."),
            Turn(s.name, "Already ordered one."),
        ],
        {"main": (0, key)},
    )
    return Fact("routine", s, {}, [part])


PROJECTS = [
    "Project Halyard",
    "the Kestrel migration",
    "Project Lantern",
    "the Orbit billing rewrite",
    "Project Tamarind",
]
ROLES = ["engineering lead", "head of operations", "senior product manager", "team lead"]


def promotion(rng: random.Random, s: Person, o: Person) -> Fact:
    project, role = rng.choice(PROJECTS), rng.choice(ROLES)
    part = Part(
        [
            Turn(o.name, "Did you hear anything back from the review?"),
            Turn(
                s.name,
                f"I did! They made me {role}, and I'm running {project} from next quarter. "
                "Small pay rise, enormous increase in meetings.",
            ),
            Turn(o.name, "Congratulations, that's huge! Drinks on you."),
        ],
        {"main": (1, project)},
    )
    return Fact("promotion", s, {}, [part])


CONFERENCES = [
    "DataFest in Lisbon",
    "the Northern UX Summit in Manchester",
    "LogisticsWorld in Rotterdam",
    "the Library Futures conference in Glasgow",
    "DevDays in Kraków",
]
TOPICS = ["accessible forms", "warehouse robots", "testing old code", "climate data for schools"]


def talk(rng: random.Random, s: Person, o: Person) -> Fact:
    conf, topic = rng.choice(CONFERENCES), rng.choice(TOPICS)
    weeks = rng.choice(["three", "five", "six"])
    people = rng.choice(["eleven", "a dozen", "nine"])
    first = Part(
        [
            Turn(
                s.name,
                f"Scary news: my talk got accepted at {conf}! Twenty-five minutes on {topic} "
                "in front of actual strangers.",
            ),
            Turn(o.name, "Amazing! When is it?"),
            Turn(
                s.name,
                f"In {weeks} weeks, first slot after the keynote. I've practised it on "
                f"{_mine(s)} so often they could give it themselves.",
            ),
        ],
        {"main": (0, conf), "date": (2, f"{weeks} weeks")},
    )
    second = Part(
        [
            Turn(o.name, "So? How did the big talk go?!"),
            Turn(
                s.name,
                f"Really well! Someone asked a question I could actually answer, and {people} "
                "people came up to me afterwards. I was shaking the whole time.",
            ),
        ],
        {"after": (1, people)},
    )
    return Fact("talk", s, {}, [first, second])


PROBLEMS = [
    ("black mould in the bathroom", "mould", "they treated the walls and put in an extractor fan"),
    ("a boiler that dies every other day", "boiler", "they fitted a brand new boiler"),
    ("a skylight that drips onto the bed", "skylight", "they resealed the skylight"),
    ("mice in the kitchen walls", "mice", "they blocked every gap with steel wool"),
    ("a front door that won't lock", "door", "they replaced the whole lock"),
]
LANDLORDS = [
    "Mr Adeyemi",
    "a letting agent called Pemberton's",
    "Mrs Kowalczyk",
    "Harbour Lettings",
]


def apartment(rng: random.Random, s: Person, o: Person) -> Fact:
    problem, short, fix = rng.choice(PROBLEMS)
    landlord = rng.choice(LANDLORDS)
    weeks = rng.choice(["five", "seven", "nine"])
    first = Part(
        [
            Turn(o.name, "How's the new flat treating you?"),
            Turn(
                s.name,
                f"Mixed. Gorgeous light, but there's {problem}, and {landlord} takes four days "
                "to answer an email. I've started a spreadsheet of grievances.",
            ),
            Turn(o.name, "That's rough. Withhold rent!"),
            Turn(s.name, "Don't tempt me."),
        ],
        {"main": (1, problem)},
    )
    second = Part(
        [
            Turn(o.name, f"Did {landlord} ever sort out the {short}?"),
            Turn(
                s.name,
                f"Yes, finally. Someone came on Tuesday and {fix}. Only took {weeks} weeks "
                "and eleven emails.",
            ),
        ],
        {"update": (1, fix)},
    )
    return Fact("apartment", s, {}, [first, second])


PODCASTS = ["Second Helpings", "Kerb Appeal", "Low Tide Radio", "The Margins", "Half-Term Report"]
POD_TOPICS = ["terrible films", "local history", "niche sports", "urban myths", "old TV adverts"]
COHOSTS = ["Tobias", "Marisol", "Fenwick", "Ottilie", "Kemal"]


def podcast(rng: random.Random, s: Person, o: Person) -> Fact:
    name, topic, cohost = rng.choice(PODCASTS), rng.choice(POD_TOPICS), rng.choice(COHOSTS)
    part = Part(
        [
            Turn(
                s.name,
                _dense(
                    rng,
                    s,
                    f"Okay, don't laugh: {cohost} and I started a podcast. It's called {name}, "
                    f"it's about {topic}, and episode one has 84 listens, mostly my family.",
                ),
            ),
            Turn(o.name, "I'm not laughing! I'm subscribing."),
        ],
        {"main": (0, name)},
    )
    return Fact("podcast", s, {}, [part])


GEAR = [
    ("tent", "a two-person tent that packs down to the size of a baguette"),
    ("sleeping bag", "a down sleeping bag rated to minus five"),
    ("stove", "a tiny gas stove and a pan set"),
    ("rucksack", "a 65-litre rucksack with about forty pockets"),
]
CAMP_PLACES = ["the Cairngorms", "Dartmoor", "the Brecon Beacons", "the Lake District"]


def camping(rng: random.Random, s: Person, o: Person) -> Fact:
    key, phrase = rng.choice(GEAR)
    place, price = rng.choice(CAMP_PLACES), rng.choice(["140", "95", "210", "180"])
    part = Part(
        [
            Turn(
                s.name,
                _dense(
                    rng,
                    s,
                    f"I spent a stupid amount at the outdoors shop: {phrase}, £{price}. We're "
                    f"wild camping in {place} next month and I refuse to be cold again.",
                ),
            ),
            Turn(o.name, "Ha, remember last time? You slept in the car."),
            Turn(s.name, "We don't talk about last time."),
        ],
        {"main": (0, key)},
    )
    return Fact("camping", s, {}, [part])


SCHOOL_EVENTS = [
    ("school play", "played the narrator and didn't miss a single line", "narrator"),
    ("science fair", "built a volcano that actually erupted, mostly over a judge", "volcano"),
    ("sports day", "won the egg-and-spoon race, with some light cheating", "egg-and-spoon"),
    ("nativity", "was a sheep and bleated through the entire second act", "sheep"),
    ("spelling bee", "got to the final and went out on 'necessary'", "necessary"),
]


def school_event(rng: random.Random, s: Person, o: Person) -> Fact:
    event, detail, key = rng.choice(SCHOOL_EVENTS)
    part = Part(
        [
            Turn(o.name, f"How did {s.kid}'s {event} go in the end?"),
            Turn(s.name, f"Brilliant. {s.kid} {detail}, and I cried a bit, obviously."),
            Turn(o.name, "Oh, bless. Give them a high five from me."),
        ],
        {"main": (1, key)},
    )
    return Fact("school_event", s, {"kid": s.kid, "kid_rel": s.kid_rel, "event": event}, [part])


TAX_YEARS = ["2021", "2022", "2019"]


def tax(rng: random.Random, s: Person, o: Person) -> Fact:
    amt = rng.choice(["1,240", "2,380", "860", "3,015"])
    amt2 = rng.choice(["112", "240", "75", "390"])
    first = Part(
        [
            Turn(
                s.name,
                _dense(
                    rng,
                    s,
                    f"Worst post ever today: a letter from the tax office saying I underpaid by "
                    f"£{amt} for {rng.choice(TAX_YEARS)}. I've read it six times and understood "
                    "it once.",
                ),
            ),
            Turn(o.name, "Oof. Do you have an accountant?"),
            Turn(s.name, "I have a cousin who did a course once. So, no."),
        ],
        {"main": (0, amt)},
    )
    second = Part(
        [
            Turn(o.name, "Any word on the letter from the tax people?"),
            Turn(
                s.name,
                f"Sorted, thank God. Their mistake, mostly: I only owed £{amt2} in the end, and "
                "I paid it over the phone in five minutes.",
            ),
            Turn(o.name, rng.choice(REACT)),
        ],
        {"update": (1, amt2)},
    )
    return Fact("tax", s, {}, [first, second])


DISHES = ["chicken soup", "plum dumplings", "tomato sauce", "Sunday stew", "rice pudding"]
SECRETS = [
    "a spoon of Marmite",
    "star anise",
    "a splash of vinegar",
    "grated quince",
    "smoked paprika",
]


def recipe(rng: random.Random, s: Person, o: Person) -> Fact:
    dish, secret = rng.choice(DISHES), rng.choice(SECRETS)
    part = Part(
        [
            Turn(
                s.name,
                f"I finally got {s.elder}'s {dish} written down, step by step. The secret is "
                f"{secret}, which has been denied for thirty years.",
            ),
            Turn(o.name, "Ha, the betrayal! Send it to me."),
        ],
        {"main": (0, secret)},
    )
    return Fact("recipe", s, {"dish": dish, "elder": s.elder}, [part])


TOURNAMENTS = [
    "the Harrogate Open",
    "a rapid tournament in Derby",
    "the county championship",
    "a weekend congress in Leith",
]
PLACINGS = ["third", "fifth", "second", "twelfth"]


def chess(rng: random.Random, s: Person, o: Person) -> Fact:
    tourn, place = rng.choice(TOURNAMENTS), rng.choice(PLACINGS)
    part = Part(
        [
            Turn(
                s.name,
                _dense(
                    rng,
                    s,
                    f"I played chess at {tourn} over the weekend and came {place} out of forty! "
                    "Lost the last game on time, which still haunts me.",
                ),
            ),
            Turn(o.name, "That's brilliant! Did you do the thing where you glare at them?"),
            Turn(s.name, "Constantly."),
        ],
        {"main": (0, place)},
    )
    return Fact("chess", s, {}, [part])


ITEMS = ["passport", "wedding ring", "work laptop", "vintage watch", "house keys"]
LOST_AT = ["on the train to York", "at the swimming baths", "somewhere in Gatwick", "at a gig"]
FOUND_AT = [
    ("in the lining of my winter coat", "lining"),
    ("in the freezer, don't ask", "freezer"),
    ("handed in at the station lost property office", "lost property"),
    ("under the passenger seat of Mum's car", "passenger seat"),
]


def lost_item(rng: random.Random, s: Person, o: Person) -> Fact:
    item = rng.choice(ITEMS)
    found, key = rng.choice(FOUND_AT)
    first = Part(
        [
            Turn(
                s.name,
                f"Nightmare: I've lost my {item}. Last seen {rng.choice(LOST_AT)}. I've turned "
                "the whole place upside down twice.",
            ),
            Turn(o.name, "Oh no. Have you called anyone?"),
            Turn(s.name, "Everyone. They're sick of me."),
        ],
        {"main": (0, item)},
    )
    second = Part(
        [
            Turn(o.name, f"Did your {item} ever turn up?"),
            Turn(s.name, f"Yes! {_cap(found)}. I have no memory of putting it there."),
        ],
        {"update": (1, key)},
    )
    return Fact("lost_item", s, {"item": item}, [first, second])


PHONES = ["Pixel 8", "iPhone 15", "Fairphone 5", "Galaxy S23", "Nothing Phone"]
PHONE_WHY = [
    "my old one fell in the bath",
    "the battery lasted about an hour",
    "the screen had a crack like a map of the Thames",
    "it stopped getting updates",
]


def phone(rng: random.Random, s: Person, o: Person) -> Fact:
    model = rng.choice(PHONES)
    part = Part(
        [
            Turn(
                s.name,
                _dense(
                    rng,
                    s,
                    f"I caved and got a {model}, because {rng.choice(PHONE_WHY)}. The camera is "
                    "ridiculous, I've taken forty photos of my breakfast.",
                ),
            ),
            Turn(o.name, "Ha, classic you."),
        ],
        {"main": (0, model)},
    )
    return Fact("phone", s, {}, [part])


PARTY_PLACES = [
    "the bowls club",
    "a curry house in Bradford",
    "the garden centre café",
    "the Legion",
]


def grandparent(rng: random.Random, s: Person, o: Person) -> Fact:
    age, place = str(rng.randint(88, 97)), rng.choice(PARTY_PLACES)
    part = Part(
        [
            Turn(o.name, "How was the birthday do?"),
            Turn(
                s.name,
                f"So lovely. {s.elder} turned {age}! We had the party at {place}, and there was "
                "a speech about 1962 that went on for twenty minutes.",
            ),
            Turn(o.name, "I love that. Happy birthday to them!"),
        ],
        {"main": (1, age)},
    )
    return Fact("grandparent", s, {"elder": s.elder, "elder_rel": s.elder_rel}, [part])


GALLERIES = ["the Arches gallery", "a café on Mill Street", "the library foyer", "the Bluecoat"]
SUBJECTS = ["night buses", "swimmers at the lido", "market traders", "empty car parks at dawn"]


def exhibition(rng: random.Random, s: Person, o: Person) -> Fact:
    gallery, subject = rng.choice(GALLERIES), rng.choice(SUBJECTS)
    count = rng.choice(["Twelve", "Eight", "Fifteen"])
    part = Part(
        [
            Turn(
                s.name,
                f"I have news! {count} of my photos are going up at {gallery} next month, the "
                f"series of {subject}. Opening night is a Friday, you have to come.",
            ),
            Turn(o.name, "I'm so proud of you! Of course I'll be there."),
        ],
        {"main": (0, gallery)},
    )
    return Fact("exhibition", s, {}, [part])


CHARITIES = [
    "the air ambulance",
    "a mountain rescue team",
    "the local hospice",
    "a refugee legal fund",
    "the food poverty network",
]


def donation(rng: random.Random, s: Person, o: Person) -> Fact:
    charity, amount = rng.choice(CHARITIES), rng.choice(["200", "150", "500", "75"])
    part = Part(
        [
            Turn(
                s.name,
                _dense(
                    rng,
                    s,
                    f"Did something decent for once: I gave £{amount} to {charity} instead of "
                    "buying myself a birthday present. Felt better than any pair of shoes.",
                ),
            ),
            Turn(o.name, "That's really lovely."),
        ],
        {"main": (0, charity)},
    )
    return Fact("donation", s, {}, [part])


APPOINTMENTS = [
    ("dentist", "dental check-up"),
    ("eye test", "optician"),
    ("boiler service", "heating engineer"),
    ("haircut", "hairdresser"),
]
DAYS = ["the 14th", "the 3rd", "the 22nd", "the 9th", "the 30th"]


def appointment(rng: random.Random, s: Person, o: Person) -> Fact:
    thing, alt = rng.choice(APPOINTMENTS)
    day, at = rng.choice(DAYS), rng.choice(["nine", "half eight", "four", "ten"])
    part = Part(
        [
            Turn(o.name, f"Did you ever book the {thing}? You've been saying it for months."),
            Turn(s.name, f"Yes, finally did it: {day}, at {at}."),
            Turn(o.name, "Proud of you. Peak adulting."),
        ],
        {"main": (1, day)},
    )
    return Fact("appointment", s, {"thing": thing, "alt": alt}, [part])


MADE = ["a wonky mug", "a fruit bowl", "a vase shaped like a boot", "six tiny espresso cups"]
STUDIOS = ["Clay Collective", "a studio under the railway arches", "the community centre"]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday"]


def pottery(rng: random.Random, s: Person, o: Person) -> Fact:
    made, studio, day = rng.choice(MADE), rng.choice(STUDIOS), rng.choice(WEEKDAYS)
    part = Part(
        [
            Turn(
                s.name,
                _dense(
                    rng,
                    s,
                    f"I joined a pottery class on {day}s at {studio}. The first thing I made was "
                    f"{made}, and I'm weirdly proud of it.",
                ),
            ),
            Turn(o.name, "Pictures or it didn't happen."),
            Turn(s.name, "Sending now. Be kind."),
        ],
        {"main": (0, made)},
    )
    return Fact("pottery", s, {}, [part])


COURTS = ["Snaresbrook Crown Court", "the Crown Court in Truro", "Minshull Street court"]


def jury(rng: random.Random, s: Person, o: Person) -> Fact:
    court = rng.choice(COURTS)
    part = Part(
        [
            Turn(
                s.name,
                f"Guess who got summoned for jury duty? Two weeks at {court} from Monday. I "
                "can't tell you anything about the case, which is killing me.",
            ),
            Turn(o.name, "Ooh, very serious. Take snacks."),
        ],
        {"main": (0, court)},
    )
    return Fact("jury", s, {}, [part])


QUIZ_TEAMS = ["Quiz Akabusi", "Les Quizerables", "Agatha Quiztie", "The Quizzly Bears"]
PUBS = ["the Red Lion", "the Fox and Anchor", "the Shipwrights", "the Bell"]


def quiz(rng: random.Random, s: Person, o: Person) -> Fact:
    team, pub = rng.choice(QUIZ_TEAMS), rng.choice(PUBS)
    part = Part(
        [
            Turn(o.name, "What did you get up to on Wednesday?"),
            Turn(
                s.name,
                f"We won the pub quiz at {pub}! Team name {team}, and the prize was a £50 bar "
                "tab, which lasted about an hour.",
            ),
            Turn(o.name, "Legends."),
        ],
        {"main": (1, team)},
    )
    return Fact("quiz", s, {}, [part])


SINGLE_BUILDERS = {
    "wedding": wedding,
    "renovation": renovation,
    "procedure": procedure,
    "fracture": fracture,
    "language": language,
    "side_business": side_business,
    "routine": routine,
    "promotion": promotion,
    "talk": talk,
    "apartment": apartment,
    "podcast": podcast,
    "camping": camping,
    "school_event": school_event,
    "tax": tax,
    "recipe": recipe,
    "chess": chess,
    "lost_item": lost_item,
    "phone": phone,
    "grandparent": grandparent,
    "exhibition": exhibition,
    "donation": donation,
    "appointment": appointment,
    "pottery": pottery,
    "jury": jury,
    "quiz": quiz,
}
# A speaker has at most one fact of a group: the group's inference questions ("Does X have any
# health issues?") would have evidence that the other fact is left out of.
GROUPS = [
    {"procedure", "fracture", "appointment"},
    {"pottery", "exhibition", "podcast"},
    {"language", "pottery", "routine"},
    {"renovation", "apartment"},
    {"phone", "camping"},
    {"wedding", "grandparent"},
]

# Recurring facts: a new value in each of a few sessions.
SERIES_TV = [
    "The Salt Line",
    "Quiet Harbour",
    "Copper Street",
    "The Vantage",
    "Nightjar",
    "Long Division",
    "The Orchard Files",
    "Low Season",
]
TV_BLURBS = [
    "a Scottish ferry drama",
    "a heist thing set in Lyon",
    "a murder mystery in a tiny Welsh village",
    "sci-fi on a generation ship",
    "a legal drama with far too many twists",
    "a comedy about a failing seaside hotel",
]


def tv(rng: random.Random, s: Person, o: Person, series: str) -> Part:
    blurb = rng.choice(TV_BLURBS)
    shape = rng.randrange(3)
    if shape == 0:
        return Part(
            [
                Turn(o.name, "Watched anything good lately?"),
                Turn(
                    s.name,
                    _dense(
                        rng,
                        s,
                        f"We binged {series}, the whole series in three nights, {blurb}. I'm "
                        "now emotionally invested in people who don't exist.",
                        reply=True,
                    ),
                ),
            ],
            {"main": (1, series)},
        )
    if shape == 1:
        return Part(
            [
                Turn(
                    s.name,
                    f"Have you seen {series}? {_cap(blurb)}. {_cap(_mine(s))} and I finished the "
                    "show on Sunday and now I'm bereft.",
                ),
                Turn(o.name, "Adding it to the list I'll never get through."),
            ],
            {"main": (0, series)},
        )
    return Part(
        [
            Turn(
                s.name, f"Confession: I stayed up until one finishing {series}. Worth it. Mostly."
            ),
            Turn(o.name, "Which one is that again?"),
            Turn(s.name, f"{_cap(blurb)}. Trust me."),
        ],
        {"main": (0, series)},
    )


RESTAURANTS = [
    ("Olea", "Greek", "lamb kleftiko"),
    ("Saffron Lane", "Persian", "jewelled rice"),
    ("Bao Down", "Taiwanese", "pork belly bao"),
    ("Noodle Theory", "Sichuan", "dan dan noodles"),
    ("Little Lisbon", "Portuguese", "custard tarts"),
    ("Ember & Ash", "Argentinian", "short rib"),
    ("Kitchen Nine", "small-plates", "burnt leeks"),
    ("Tiffin Club", "South Indian", "masala dosa"),
]


def restaurant(rng: random.Random, s: Person, o: Person, name: str, favourite: bool) -> Part:
    _, cuisine, dish = next(r for r in RESTAURANTS if r[0] == name)
    if favourite:
        # The last visit is a return to a place tried before: now the favourite.
        return Part(
            [
                Turn(
                    s.name,
                    f"Went back to {name} on Friday and it's official: it's my favourite "
                    f"restaurant in the city. The {dish} hasn't missed once.",
                ),
                Turn(o.name, "Right, you're taking me next time."),
            ],
            {"main": (0, name), "favourite": (0, name)},
        )
    if rng.random() < 0.5:
        return Part(
            [
                Turn(
                    s.name,
                    _dense(
                        rng,
                        s,
                        f"We finally tried {name}, the {cuisine} restaurant by the station. The "
                        f"{dish} was unreal and the bill was less scary than I feared.",
                    ),
                ),
                Turn(o.name, rng.choice(REACT)),
            ],
            {"main": (0, name)},
        )
    return Part(
        [
            Turn(o.name, f"Where did you end up for {_theirs(s)}'s birthday dinner?"),
            Turn(
                s.name,
                f"{name}! {_cap(dish)} to die for, and they gave us free dessert because the "
                "waiter took pity on us.",
            ),
        ],
        {"main": (1, name)},
    )


BIRDS = [
    ("a hoopoe", "hoopoe"),
    ("a kingfisher", "kingfisher"),
    ("a red kite", "red kite"),
    ("two waxwings", "waxwings"),
    ("a barn owl", "barn owl"),
    ("a little egret", "egret"),
    ("a spoonbill", "spoonbill"),
    ("a firecrest", "firecrest"),
]
BIRD_PLACES = [
    "at the reservoir",
    "along the estuary path",
    "behind the retail park",
    "on the canal towpath",
    "in the old cemetery",
]


def birds(rng: random.Random, s: Person, o: Person, bird: str) -> Part:
    phrase = next(p for p, k in BIRDS if k == bird)
    if rng.random() < 0.5:
        return Part(
            [
                Turn(
                    s.name,
                    f"Bird news, brace yourself: I saw {phrase} {rng.choice(BIRD_PLACES)} this "
                    "morning! I got so excited I dropped my flask.",
                ),
                Turn(o.name, "Ha, you and your binoculars."),
            ],
            {"main": (0, bird)},
        )
    return Part(
        [
            Turn(o.name, "Any good spots on your walk?"),
            Turn(
                s.name,
                _dense(
                    rng,
                    s,
                    f"Yes! {_cap(phrase)}, {rng.choice(BIRD_PLACES)}, for a whole minute before "
                    "a jogger scared it off.",
                    reply=True,
                ),
            ),
        ],
        {"main": (1, bird)},
    )


GAMES = ["Azul", "Cascadia", "Carcassonne", "Pandemic", "Codenames", "Ticket to Ride", "Root"]
WINNERS = ["Tobias", "Marisol", "Kemal", "Bea"]


def boardgame(rng: random.Random, s: Person, o: Person, game: str) -> Part:
    if rng.random() < 0.5:
        return Part(
            [
                Turn(
                    s.name,
                    f"Games night at ours on Friday: {game} this time. {rng.choice(WINNERS)} "
                    "won again and did a lap of the living room, so we're not friends any more.",
                ),
                Turn(o.name, "Ha! Sore loser."),
            ],
            {"main": (0, game)},
        )
    return Part(
        [
            Turn(o.name, "How was the board game evening?"),
            Turn(
                s.name,
                _dense(
                    rng,
                    s,
                    f"Chaos. We played {game} until midnight and I lost spectacularly.",
                    reply=True,
                ),
            ),
        ],
        {"main": (1, game)},
    )


SPOTS = [
    "Loch Venachar",
    "Gyllyngvase beach",
    "the river at Grantchester",
    "Bude sea pool",
    "the quarry lake at Stoney Cove",
    "Llyn Padarn",
    "Windermere",
]


def swimming(rng: random.Random, s: Person, o: Person, spot: str) -> Part:
    temp = str(rng.randint(8, 17))
    if rng.random() < 0.5:
        return Part(
            [
                Turn(
                    s.name,
                    f"Went for a wild swim at {spot} on Sunday, {temp} degrees! Couldn't feel my "
                    "feet for an hour and I've never felt more alive.",
                ),
                Turn(o.name, "You're deranged. I love it."),
            ],
            {"main": (0, spot)},
        )
    return Part(
        [
            Turn(o.name, "What did you do at the weekend?"),
            Turn(
                s.name,
                f"Swam at {spot}, {temp} degrees, and a swan hissed at me. Ten out of ten.",
            ),
        ],
        {"main": (1, spot)},
    )


SERIES_VALUES = {
    "tv": SERIES_TV,
    "restaurant": [r[0] for r in RESTAURANTS],
    "birds": [k for _, k in BIRDS],
    "boardgame": GAMES,
    "swimming": SPOTS,
}
SERIES_BUILDERS = {"tv": tv, "birds": birds, "boardgame": boardgame, "swimming": swimming}


# -- the rest of a chat -------------------------------------------------------------------------

SEASONS = {12: "winter", 1: "winter", 2: "winter", 3: "spring", 4: "spring", 5: "spring"}
SEASONS |= {6: "summer", 7: "summer", 8: "summer", 9: "autumn", 10: "autumn", 11: "autumn"}
WEATHER = {
    "winter": [
        "It's so cold the car door froze shut this morning.",
        "Dark at four again, I'm basically hibernating.",
        "It snowed for ten minutes and the whole town panicked.",
    ],
    "spring": [
        "It's finally light when I leave work!",
        "Sun, hail and sun again, all before lunch.",
        "Everything is blossoming and my hay fever has noticed.",
    ],
    "summer": [
        "It's boiling, I'm sleeping with a wet flannel on my face.",
        "We had one glorious day and then it rained for a week.",
        "Too hot to think, so forgive the typos.",
    ],
    "autumn": [
        "The leaves are gorgeous and the rain is relentless.",
        "Heating's on, jumpers are out, I'm thrilled.",
        "It's gone dark and windy, proper soup weather.",
    ],
}
LIFE = [
    "Work's been hectic, we had three releases in one week.",
    "My manager finally approved my leave, so that's something.",
    "I spent most of Tuesday in a meeting that could have been an email.",
    "{partner} and I repainted the hallway on Sunday, it's a slightly alarming yellow.",
    "The washing machine is making that noise again.",
    "Made a giant pot of dal on Sunday, so lunches are sorted.",
    "I've been sleeping terribly, too much coffee probably.",
    "We're thinking of a weekend by the sea at some point.",
    "The trains were cancelled again, I waited forty minutes on the platform.",
    "Our neighbours have discovered karaoke.",
    "I finally cleared out the cupboard under the stairs and found three umbrellas.",
    "Had a long lunch with an old colleague, which was lovely.",
    "I'm trying to drink more water and mostly I just need the loo more.",
    "Our internet went down for two days and I had to talk to people.",
    "{partner} has started doing the crossword at breakfast and reading the clues out loud.",
    "Somebody reversed into our bins, so that's the week's drama.",
    "I bought a new duvet and it's changed my life, honestly.",
    "Spent the whole of Saturday on the sofa and felt no guilt.",
    "My hair is doing something strange and I've decided to embrace it.",
    "The council dug up our road, apparently for fun.",
    "I've got a cold that won't commit, just a constant sniffle.",
    "Went to a pub quiz with work people and we came last, gloriously.",
]
KID_NEWS = [
    "{kid} has decided to eat only beige food.",
    "{kid} asked me where the internet is kept.",
    "{kid} lost another tooth and negotiated a rate with the tooth fairy.",
    "{kid} is obsessed with dinosaurs again, we know every single one.",
]
VOICE_LINES = {
    "colleague": [
        "Did you see the all-hands slides? Forty of them, all about synergy.",
        "The coffee machine on four is broken again, productivity has collapsed.",
        "Hendrika wants the quarterly numbers by Thursday, so that's my week gone.",
        "The hot-desking email made me laugh. I give it a month.",
    ],
    "sibling": [
        "Mum rang me for an hour about the neighbours' hedge.",
        "Dad's discovered voice notes. Brace yourself.",
        "I'll do Mum's birthday lunch this year, you did it last time.",
        "Dad sent me a photo of a cloud that looks like a rabbit. It does not.",
    ],
    "parent": [
        "I hope you're eating properly, love.",
        "Your dad has taken up sudoku and it's all he talks about.",
        "I saw your old teacher in the supermarket, she asked after you.",
        "Don't forget to ring your sister, she's been a bit low.",
    ],
    "child": [
        "Mum, you don't need to sign your texts, I know it's you.",
        "Tell Dad the photo of the gate made me laugh.",
        "Yes, I'm eating vegetables. Sometimes. Frozen peas count.",
        "Tell Dad I'll come and help with the gutters next month.",
    ],
    "school": [
        "Someone posted our sixth-form photo in the group chat, my fringe was a crime.",
        "I still think about Mr Pryce's chemistry lab fire.",
        "It's twenty years since we left school, which is not possible.",
        "I drove past the old bus stop where we used to wait for hours.",
    ],
    "flatmate": [
        "I walked past our old flat on Harcourt Road, they've painted the door yellow.",
        "You still have my blue casserole dish, by the way. Third year running.",
        "I found a photo of our awful flat-warming party, your hat was iconic.",
        "Our old landlord is on a property show now, I nearly threw the remote.",
    ],
}
JOKES = [
    "I've decided adulthood is mostly emailing people back and buying bin bags.",
    "My greatest achievement this week was remembering to defrost something.",
    "I tried to be a morning person today. Never again.",
    "The self-checkout said unexpected item in the bagging area and honestly, same.",
    "I've started talking to the toaster. It's a good listener.",
    "I just said 'you too' to a waiter who told me to enjoy my meal.",
]
PARTNER_NEWS = [
    "{partner} is fine, working too much as usual.",
    "{partner}'s back is playing up, but otherwise good.",
    "{partner} is away with work until Friday, so I've had cereal for dinner twice.",
    "{partner} is great, just started a new shift pattern and hates it.",
    "{partner} has joined a five-a-side team and limps every Thursday.",
    "{partner} is well, says hello, and wants the ladder back.",
]
# Follow-up questions, each with the answers that fit it.
FOLLOW: list[tuple[str, list[str]]] = [
    (
        "Wait, how did that happen?",
        ["Honestly? No idea.", "Long story. I'll tell you over a drink."],
    ),
    ("And how are you feeling about it all?", ["Mostly good! Mostly.", "Better than it sounds."]),
    ("Is that a good thing or a bad thing?", ["Unclear.", "Good, I think? Ask me next week."]),
    ("What did {partner} say?", ["Rolled their eyes, as expected.", "Nothing printable."]),
    ("So what's the plan now?", ["No plan. Pure vibes.", "Sleep, mainly."]),
    ("Since when?", ["Since about Tuesday.", "A fortnight? Time is a blur."]),
]
# Plans, each with the answers that fit it.
PLANS: list[tuple[str, list[str]]] = [
    (
        "Are you free on the {nth}? There's a street food market on.",
        ["Maybe! Let me check with {partner}.", "Ugh, I'm away. Next one for sure."],
    ),
    (
        "We should get a date in for a proper catch-up, it's been ages.",
        ["Yes, please. Send me dates.", "Definitely. After this month though."],
    ),
    (
        "Fancy a walk one weekend soon? I need the fresh air.",
        ["Yes! Somewhere flat, please.", "Always. Send me dates."],
    ),
    (
        "Are you around at Easter, or away?",
        ["Around, sadly. No plans at all.", "Away the first week, back after."],
    ),
    (
        "Want to come over for dinner one night next month?",
        ["Maybe! Let me check with {partner}.", "Yes, please. I'll bring pudding."],
    ),
]
# Every opener asks how the other is, so that any reply fits it.
OPENERS = [
    "Hey {o}! {weather} How's things?",
    "Morning! Sorry I went quiet, this week ate me alive. {weather} How are you?",
    "Hiya {o}, got a minute? I have news and also complaints. How's your week been?",
    "{o}! Long time. How are you doing?",
    "Evening! {weather} How was your week?",
]
VOICE_OPENERS = {
    "parent": ["Hello love! {weather} How are you both?"],
    "child": ["Hi Mum! {weather} How's Dad?"],
    "colleague": ["Hey, are you still at your desk? {weather} How's your day going?"],
}
REPLIES = ["{life} You?", "Not bad at all! {life}", "Surviving. {life}", "Good, thanks! {life}"]
CLOSERS = [
    "Right, {partner}'s calling me for dinner. Talk soon!",
    "I'm going to bed before I fall asleep on the keyboard. Night!",
    "Gotta run. Same time next week?",
    "Okay, the washing machine is beeping at me. Bye!",
]
CLOSE_REPLIES = ["Bye! x", "Speak soon!", "Night!", "Later!", "Take care of yourself."]

# A fact's words said of someone else: distractors that share words with the evidence.
WHO = [
    "my cousin",
    "a friend from work",
    "our neighbour",
    "{partner}'s brother",
    "my old boss",
    "someone in my building",
]
ECHOES: dict[str, list[str]] = {
    "wedding": [
        "{who} got married at {venue} last summer, the photos are unreal.",
        "Wedding season again, {who} has three this year and is broke.",
    ],
    "renovation": ["{who} has had the kitchen ripped out for a year, they wash up in the bath."],
    "procedure": ["{who} is having a {proc} next week and is being very brave, i.e. not at all."],
    "fracture": ["{who} broke a {bone} skiing, so everything's being typed one-handed."],
    "language": ["{who} is learning {lang} on an app and keeps sending me voice notes in it."],
    "side_business": ["{who} started selling {product} online and the hallway is all boxes."],
    "routine": ["{who} swears by {routine}, and won't stop going on about it."],
    "promotion": ["{who} just got made {role} and has already started saying 'circle back'."],
    "talk": ["{who} is speaking at {conf} and made me be the pretend audience three times."],
    "apartment": ["{who}'s flat has {problem} and the landlord just shrugs."],
    "podcast": ["{who} has started a podcast. Everyone has a podcast now."],
    "camping": ["{who} went camping in {camp} and came back with a cold and a hatred of tents."],
    "school_event": ["The school round the corner had its {event} today, the street was rammed."],
    "tax": ["{who} got a scary letter from the tax office too, it must be the season."],
    "recipe": ["{who} claims their gran's {dish} is the best in the world. It's fine."],
    "chess": ["{who} is obsessed with online chess now, eleven games a night."],
    "lost_item": ["{who} lost a {item} on the bus and somehow got it back the same day."],
    "phone": ["{who} just got the {phone} and keeps showing me the zoom."],
    "grandparent": ["{who}'s grandad turned {age} and still drives, which terrifies everyone."],
    "exhibition": ["There's a photography exhibition at {gallery} I keep meaning to see."],
    "donation": ["{who} is running a fundraiser for {charity}, I've been guilted into a tenner."],
    "appointment": ["{who} has been putting off the {thing} for two years, worse than me."],
    "pottery": ["{who} made me a mug at a pottery class. It leaks, but it's the thought."],
    "jury": ["{who} got called for jury duty and the trial collapsed on day one."],
    "quiz": ["The pub quiz at {pub} has got so competitive, someone was caught googling."],
    "tv": ["Everyone at work is watching {series}, I'm the only one who hasn't started."],
    "restaurant": ["{who} went to {rest} and said it was overrated. I refuse to believe it."],
    "birds": ["{who} saw {bird} in the park and sent me a blurry photo of a bush."],
    "boardgame": ["{who} bought {game} and makes everyone play it every weekend."],
    "swimming": ["{who} did a charity swim at {spot}, rather them than me."],
}


def _echo(rng: random.Random, p: Person, avoid: set[str], said: set[str]) -> str:
    """A distractor of a kind the speaker has no fact of (else it could contradict theirs),
    and not of a kind already echoed in the session."""
    kind = rng.choice([k for k in ECHOES if k not in avoid and f"echo:{k}" not in said])
    said.add(f"echo:{kind}")
    values = {
        "who": rng.choice(WHO).format(partner=_mine(p)),
        "venue": rng.choice(WEDDING_VENUES),
        "proc": rng.choice(PROCEDURES),
        "bone": rng.choice(BONES),
        "lang": rng.choice(LANGUAGES)[0],
        "product": rng.choice(PRODUCTS)[0],
        "routine": rng.choice(ROUTINES)[1],
        "role": rng.choice(ROLES),
        "conf": rng.choice(CONFERENCES),
        "problem": rng.choice(PROBLEMS)[0],
        "camp": rng.choice(CAMP_PLACES),
        "event": rng.choice(SCHOOL_EVENTS)[0],
        "dish": rng.choice(DISHES),
        "item": rng.choice(ITEMS),
        "phone": rng.choice(PHONES),
        "age": str(rng.randint(88, 99)),
        "gallery": rng.choice(GALLERIES),
        "charity": rng.choice(CHARITIES),
        "thing": rng.choice(APPOINTMENTS)[0],
        "pub": rng.choice(PUBS),
        "series": rng.choice(SERIES_TV),
        "rest": rng.choice(RESTAURANTS)[0],
        "bird": rng.choice(BIRDS)[0],
        "game": rng.choice(GAMES),
        "spot": rng.choice(SPOTS),
    }
    return _cap(rng.choice(ECHOES[kind]).format(**values))


def _fresh(rng: random.Random, pool: list[str], said: set[str]) -> str:
    """A line not yet said in this session, while there are any: a chat doesn't repeat itself."""
    unsaid = [line for line in pool if line not in said] or pool
    line = rng.choice(unsaid)
    said.add(line)
    return line


def _life(rng: random.Random, p: Person, n: int, said: set[str]) -> str:
    pool = LIFE + VOICE_LINES[p.voice][:2] + ([] if not p.kid else KID_NEWS)
    picked = [_fresh(rng, pool, said) for _ in range(n)]
    return " ".join(_cap(line.format(partner=_mine(p), kid=p.kid)) for line in picked)


def _smalltalk(rng: random.Random, s: Person, o: Person, said: set[str]) -> list[Turn]:
    """A stretch of ordinary chat: an update and its reaction, a joke, a plan, a complaint."""
    shape = rng.random()
    if shape < 0.4:
        turns = [
            Turn(s.name, _life(rng, s, rng.randint(2, 3), said)),
            Turn(o.name, rng.choice(REACT_MIXED)),
        ]
        if rng.random() < 0.5:
            asked = _fresh(rng, [q for q, _ in FOLLOW], said)
            answers = next(a for q, a in FOLLOW if q == asked)
            turns.append(Turn(o.name, asked.format(partner=_theirs(s))))
            turns.append(Turn(s.name, rng.choice(answers)))
        return turns
    if shape < 0.55:
        line = _fresh(rng, VOICE_LINES[s.voice], said)
        return [Turn(s.name, line), Turn(o.name, rng.choice(REACT_LIGHT))]
    if shape < 0.7:
        return [Turn(s.name, _fresh(rng, JOKES, said)), Turn(o.name, rng.choice(REACT_LIGHT))]
    if shape < 0.85:
        nth = rng.choice(["12th", "19th", "26th", "5th"])
        plan = _fresh(rng, [p for p, _ in PLANS], said)
        answers = next(a for p, a in PLANS if p == plan)
        return [
            Turn(s.name, plan.format(nth=nth)),
            Turn(o.name, rng.choice(answers).format(partner=_mine(o))),
        ]
    ask = f"How's {_theirs(s)} doing?"
    if ask in said:
        return [Turn(s.name, _life(rng, s, 2, said)), Turn(o.name, rng.choice(REACT_MIXED))]
    said.add(ask)
    news = _fresh(rng, PARTNER_NEWS, said).format(partner=_mine(s))
    return [Turn(o.name, ask), Turn(s.name, _cap(news))]


# -- building -----------------------------------------------------------------------------------


def _pick_facts(rng: random.Random, p: Person, used: Counter[str]) -> list[str]:
    """The speaker's facts: the kinds least used so far first, so that every kind is in the
    archive, and at most one of a group."""
    kinds = [k for k in SINGLE_BUILDERS if k != "school_event" or p.kid]
    rng.shuffle(kinds)
    kinds.sort(key=lambda k: used[k])
    chosen: list[str] = []
    for kind in kinds:
        if any(kind in g and chosen_kind in g for g in GROUPS for chosen_kind in chosen):
            continue
        chosen.append(kind)
        used[kind] += 1
        if len(chosen) == FACTS_PER_SPEAKER:
            break
    return chosen


def _build_archive(rng: random.Random) -> tuple[list[Session], list[Fact]]:
    sessions: list[Session] = []
    facts: list[Fact] = []
    used: Counter[str] = Counter()
    for pair, (a, b) in enumerate(PAIRS):
        when = START + timedelta(days=rng.randint(0, 9), hours=rng.randint(0, 3))
        # Irregular gaps of one to five weeks, stretched so that every pair spans about fourteen
        # months (the temporal questions count back from a pair's newest session).
        gaps = [rng.randint(7, 35) for _ in range(SESSIONS_PER_PAIR - 1)]
        gaps = [min(35, max(7, round(g * SPAN_DAYS / sum(gaps)))) for g in gaps] + [0]
        plan: list[list[Part]] = [[] for _ in range(SESSIONS_PER_PAIR)]
        owned: dict[str, set[str]] = {a.name: set(), b.name: set()}
        for s, o in ((a, b), (b, a)):
            for kind in _pick_facts(rng, s, used):
                fact = SINGLE_BUILDERS[kind](rng, s, o)
                facts.append(fact)
                owned[s.name].add(kind)
                if len(fact.parts) == 1:
                    plan[rng.randrange(SESSIONS_PER_PAIR)].append(fact.parts[0])
                else:
                    # An update comes two to eight sessions after what it updates.
                    first = rng.randrange(SESSIONS_PER_PAIR - 4)
                    later = rng.randint(first + 2, min(SESSIONS_PER_PAIR - 1, first + 8))
                    plan[first].append(fact.parts[0])
                    plan[later].append(fact.parts[1])
        series_kinds = rng.sample(sorted(SERIES_VALUES), len(SERIES_VALUES))
        series_kinds.sort(key=lambda k: used[k])
        for kind in series_kinds[:SERIES_PER_PAIR]:
            used[kind] += 1
            s, o = (a, b) if rng.random() < 0.5 else (b, a)
            owned[s.name].add(kind)
            count = rng.randint(3, 4)
            at = sorted(rng.sample(range(SESSIONS_PER_PAIR), count))
            fact = Fact(kind, s, {}, series=True)
            if kind == "restaurant":
                names = rng.sample(SERIES_VALUES[kind], count - 1)
                for name in names:
                    fact.parts.append(restaurant(rng, s, o, name, favourite=False))
                fact.parts.append(restaurant(rng, s, o, names[0], favourite=True))
            else:
                for value in rng.sample(SERIES_VALUES[kind], count):
                    fact.parts.append(SERIES_BUILDERS[kind](rng, s, o, value))
            for part, i in zip(fact.parts, at, strict=True):
                plan[i].append(part)
            facts.append(fact)
        for i in range(SESSIONS_PER_PAIR):
            session = Session(f"d{pair}-s{i:02d}", pair, when)
            said: set[str] = set()
            first, second = (a, b) if rng.random() < 0.5 else (b, a)
            weather = rng.choice(WEATHER[SEASONS[when.month]])
            opener = rng.choice(VOICE_OPENERS.get(first.voice, []) + OPENERS)
            # A son writes "Mum", not his mother's name.
            called = "Mum" if first.voice == "child" else second.name
            session.turns.append(Turn(first.name, opener.format(o=called, weather=weather)))
            session.turns.append(
                Turn(second.name, rng.choice(REPLIES).format(life=_life(rng, second, 1, said)))
            )
            chunks: list[list[Turn] | Part] = list(plan[i])
            for _ in range(rng.randint(1, 3)):
                s, o = (a, b) if rng.random() < 0.5 else (b, a)
                chunks.append(
                    [
                        Turn(s.name, _echo(rng, s, owned[s.name], said)),
                        Turn(o.name, rng.choice(REACT_MIXED)),
                    ]
                )
            # 30 to 60 turns with the opening and closing two: small talk fills the rest.
            target = rng.randint(30, 60) - 4
            size = sum(len(c.turns) if isinstance(c, Part) else len(c) for c in chunks)
            while size < target:
                s, o = (a, b) if rng.random() < 0.5 else (b, a)
                chunk = _smalltalk(rng, s, o, said)
                if size + len(chunk) > 56:
                    break
                chunks.append(chunk)
                size += len(chunk)
            rng.shuffle(chunks)
            for chunk in chunks:
                if isinstance(chunk, Part):
                    chunk.key, chunk.start, chunk.when = session.key, len(session.turns), when
                    session.turns.extend(chunk.turns)
                else:
                    session.turns.extend(chunk)
            last = session.turns[-1].speaker
            closer, replier = (a, b) if last == b.name else (b, a)
            session.turns.append(
                Turn(closer.name, _cap(rng.choice(CLOSERS).format(partner=_mine(closer))))
            )
            session.turns.append(Turn(replier.name, rng.choice(CLOSE_REPLIES)))
            sessions.append(session)
            when += timedelta(days=gaps[i], hours=rng.randint(-5, 5))
    sessions.sort(key=lambda s: (s.when, s.key))
    return sessions, facts


# -- questions ----------------------------------------------------------------------------------

# Per fact, per batch: (kind, roles, template). ``roles`` names the marked turns that are the
# evidence ("main+update": both); for a recurring fact, "all" is every value, "favourite" the
# favourite, and "month" / "ago" the values said in the month or span the question names. Per
# fact, one template of each (kind, roles) is asked. The two batches were written separately:
# dev in plain question shapes, test leaning on requests, hedges and other words. A third,
# diary-fresh, and a fourth, diary-spoken, are added below (FRESH_QUESTIONS, SPOKEN_QUESTIONS).
Template = tuple[str, str, str]
QUESTIONS: dict[str, dict[str, list[Template]]] = {
    "wedding": {
        "diary-dev": [
            ("single", "main", "Where is the wedding of {s}'s {kin_rel} taking place?"),
            ("single", "main", "Where is {s}'s {kin_rel} getting married?"),
            ("single", "main", "Which venue did {kin} book for the big day, according to {s}?"),
            ("single", "update", "What is the new date of the wedding {s} is speaking at?"),
            ("multi", "main+update", "How have the wedding plans of {s}'s {kin_rel} changed?"),
            (
                "temporal",
                "update",
                "What news did {s} give about {kin}'s wedding in {month} {year}?",
            ),
            ("inference", "main", "Does {s} have any big family occasions coming up?"),
        ],
        "diary-test": [
            ("single", "main", "Remind me where {s}'s {kin_rel} is tying the knot."),
            ("single", "main", "Who's getting married in {s}'s family, and where?"),
            ("single", "main", "{s}'s {kin_rel} has a ceremony planned somewhere. Where was it?"),
            ("single", "update", "{s} said {kin}'s nuptials were pushed back. To when?"),
            ("multi", "main+update", "Find the conversations where {s} discussed {kin}'s wedding."),
            ("temporal", "update", "{s} mentioned a change to the big day {ago}. What was it?"),
            ("inference", "main", "Is {s} expected to stand up and toast anyone this year?"),
        ],
    },
    "renovation": {
        "diary-dev": [
            ("single", "main", "What did {s} choose for the new kitchen?"),
            ("single", "main", "What did {s} go with in the end for the kitchen?"),
            ("single", "main", "Who is doing the building work on {s}'s kitchen?"),
            ("inference", "main", "Is {s} doing up the house?"),
            ("temporal", "main", "When was {s}'s kitchen stripped out?"),
        ],
        "diary-test": [
            ("single", "main", "Which finish did {s} go for in the kitchen remodel?"),
            ("single", "main", "What did {s} pick for the kitchen that blew the budget?"),
            ("single", "main", "Remind me who {s} hired as a contractor."),
            ("inference", "main", "Has {s} got tradespeople in at home?"),
            ("temporal", "main", "Roughly when was {s} cooking without a kitchen?"),
        ],
    },
    "procedure": {
        "diary-dev": [
            ("single", "main", "What operation did {s} have?"),
            ("single", "main", "What was {s}'s day surgery for?"),
            ("single", "main", "Which hospital did {s} go to for surgery?"),
            ("inference", "main", "Does {s} have any health issues?"),
            ("temporal", "main", "When did {s} have the operation?"),
        ],
        "diary-test": [
            ("single", "main", "What was {s} going under the knife for?"),
            ("single", "main", "What's the op {s} mentioned?"),
            ("single", "main", "Where was {s}'s surgical treatment done?"),
            ("inference", "main", "Has {s} needed medical care lately?"),
            ("temporal", "main", "How long ago did {s} go in for that procedure?"),
        ],
    },
    "fracture": {
        "diary-dev": [
            ("single", "main", "Which bone did {s} break?"),
            ("single", "main", "What did {s} break, and how?"),
            ("single", "main", "How did {s} end up with a broken bone?"),
            ("multi", "main+cast", "How did {s}'s fracture heal, from the fall to the cast off?"),
            ("inference", "main", "Has {s} been injured recently?"),
            ("temporal", "main", "When did {s} break something?"),
        ],
        "diary-test": [
            ("single", "main", "What did {s} fracture?"),
            ("single", "main", "{s} said they broke something. What was it?"),
            ("single", "main", "What accident left {s} in plaster?"),
            ("multi", "main+cast", "Pull up what {s} told me about the injury and the recovery."),
            ("inference", "main", "Has {s} had any mishaps that needed a hospital?"),
            ("temporal", "main", "When was it that {s} got hurt?"),
        ],
    },
    "language": {
        "diary-dev": [
            ("single", "main", "Which language is {s} learning?"),
            ("single", "main", "What lessons has {s} signed up for?"),
            ("single", "main", "How is {s} studying a language before travelling?"),
            ("inference", "main", "Is {s} picking up any new skills?"),
        ],
        "diary-test": [
            ("single", "main", "What tongue is {s} trying to get to grips with?"),
            ("single", "main", "Which language lessons did {s} sign up to?"),
            ("single", "main", "Wasn't {s} taking classes in something foreign? Which one?"),
            ("inference", "main", "Would {s} like a bilingual dictionary as a present?"),
        ],
    },
    "side_business": {
        "diary-dev": [
            ("single", "main", "What does {s} sell on the side?"),
            ("single", "main", "What is {s} selling on the side?"),
            ("single", "main", "What's {s}'s little business called?"),
            ("inference", "main", "Does {s} have a second income?"),
        ],
        "diary-test": [
            ("single", "main", "What's the name of {s}'s side hustle?"),
            ("single", "main", "What's {s} been selling under a brand name?"),
            ("single", "main", "What products is {s} making for extra cash?"),
            ("inference", "main", "Is {s} something of an entrepreneur?"),
        ],
    },
    "routine": {
        "diary-dev": [
            ("single", "main", "What new habit has {s} picked up?"),
            ("single", "main", "What has {s} been doing every morning or night?"),
            ("inference", "main", "Is {s} into self-improvement?"),
        ],
        "diary-test": [
            ("single", "main", "What's {s}'s daily ritual these days?"),
            ("single", "main", "What has {s} been doing for weeks that feels good?"),
            ("single", "main", "Remind me what {s} does each day now to feel better."),
            ("inference", "main", "Has {s} been trying to be more disciplined?"),
        ],
    },
    "promotion": {
        "diary-dev": [
            ("single", "main", "Which project will {s} be leading?"),
            ("single", "main", "What is {s} running from next quarter?"),
            ("single", "main", "What was {s} promoted to?"),
            ("inference", "main", "Has {s}'s career moved forward lately?"),
            ("temporal", "main", "When did {s} get the promotion?"),
        ],
        "diary-test": [
            ("single", "main", "What title was {s} given after the appraisal?"),
            ("single", "main", "What did {s} get made at work?"),
            ("single", "main", "Remind me the name of the project {s} is in charge of now."),
            ("inference", "main", "Did {s} get good news at the office this year?"),
            ("temporal", "main", "How long ago was {s} handed the new position?"),
        ],
    },
    "talk": {
        "diary-dev": [
            ("single", "main", "Where is {s} giving a talk?"),
            ("single", "main", "Where did {s}'s talk get accepted?"),
            ("single", "main", "What is {s}'s conference talk about?"),
            ("single", "date", "When is {s} presenting at the conference?"),
            ("single", "after", "How did {s}'s presentation go?"),
            ("multi", "main+after", "Tell me about {s}'s conference talk, from acceptance on."),
            ("inference", "main", "Does {s} do any public speaking?"),
        ],
        "diary-test": [
            ("single", "main", "Which event accepted {s}'s proposal to present?"),
            ("single", "main", "What's {s}'s talk on?"),
            ("single", "main", "What subject is {s} lecturing on?"),
            ("single", "date", "How soon is {s} due on stage?"),
            ("single", "after", "Did {s}'s session in front of the audience land well?"),
            ("multi", "main+after", "Find both chats about {s}'s speaking gig."),
            ("inference", "main", "Would {s} have tips for someone nervous about presenting?"),
        ],
    },
    "apartment": {
        "diary-dev": [
            ("single", "main", "What's wrong with {s}'s new flat?"),
            ("single", "main", "What grievances does {s} have about the new flat?"),
            ("single", "update", "Did {s}'s landlord ever fix the problem?"),
            ("multi", "main+update", "What happened with the fault in {s}'s place, start to end?"),
            ("inference", "main", "Is {s} having a hard time with housing?"),
            ("temporal", "update", "What did {s}'s landlord finally do in {month} {year}?"),
        ],
        "diary-test": [
            ("single", "main", "Which issue turned up in {s}'s apartment?"),
            ("single", "main", "What's on {s}'s spreadsheet of grievances?"),
            ("single", "main", "Who is {s} renting from?"),
            ("single", "update", "How was {s}'s apartment trouble resolved?"),
            ("multi", "main+update", "Pull up everything {s} said about the rental's defects."),
            ("inference", "main", "Would {s} have advice on dealing with a bad letting?"),
            ("temporal", "update", "What repair finally happened at {s}'s flat {ago}?"),
        ],
    },
    "podcast": {
        "diary-dev": [
            ("single", "main", "What is {s}'s podcast called?"),
            ("single", "main", "What did {s} call the podcast?"),
            ("single", "main", "Who does {s} record episodes with?"),
            ("inference", "main", "Does {s} have any creative projects on the go?"),
            ("temporal", "main", "When did {s} launch the podcast?"),
        ],
        "diary-test": [
            ("single", "main", "What's the show {s} began with a friend?"),
            ("single", "main", "What's the podcast {s} started called?"),
            ("single", "main", "What's {s}'s pod about?"),
            ("inference", "main", "Would {s} know anything about recording audio?"),
            ("temporal", "main", "How long ago did {s}'s broadcasting venture begin?"),
        ],
    },
    "camping": {
        "diary-dev": [
            ("single", "main", "What camping gear did {s} buy?"),
            ("single", "main", "What did {s} buy at the outdoors shop?"),
            ("single", "main", "How much did {s} spend on outdoor equipment?"),
            ("inference", "main", "Is {s} planning to sleep outdoors soon?"),
        ],
        "diary-test": [
            ("single", "main", "What kit did {s} splash out on before the trip?"),
            ("single", "main", "What did {s} spend a stupid amount on?"),
            ("single", "main", "Where is {s} off to pitch a tent?"),
            ("inference", "main", "Could I borrow things for a night under canvas from {s}?"),
        ],
    },
    "school_event": {
        "diary-dev": [
            ("single", "main", "What did {s}'s {kid_rel} do at the school event?"),
            ("inference", "main", "Are there school-age kids in {s}'s family?"),
        ],
        "diary-test": [
            ("single", "main", "How did {kid} get on at school, according to {s}?"),
            ("inference", "main", "Does {s} spend time with any young children?"),
        ],
    },
    "tax": {
        "diary-dev": [
            ("single", "main", "How much did the tax office say {s} owed?"),
            ("single", "main", "How much did {s} underpay by?"),
            ("single", "update", "How did {s}'s tax problem end?"),
            ("multi", "main+update", "Summarise {s}'s dispute with the tax office."),
            ("inference", "main", "Has {s} had any money worries?"),
            ("temporal", "main", "When did {s} get the letter about unpaid tax?"),
        ],
        "diary-test": [
            ("single", "main", "What sum was on the taxman's demand to {s}?"),
            ("single", "main", "How much was {s} told they underpaid?"),
            ("single", "update", "What did {s} pay in the end after the tax mix-up?"),
            ("multi", "main+update", "Find every chat where {s} moaned about the tax bill."),
            ("inference", "main", "Is {s} having trouble with paperwork or finances?"),
            ("temporal", "main", "How long ago did {s} hear from the revenue?"),
        ],
    },
    "recipe": {
        "diary-dev": [
            ("single", "main", "What's the secret ingredient in {s}'s family {dish}?"),
            ("single", "main", "What's the secret in {elder}'s {dish}, per {s}?"),
            ("single", "main", "Whose recipe did {s} finally write down?"),
            ("inference", "main", "Does {s} cook traditional family dishes?"),
        ],
        "diary-test": [
            ("single", "main", "What hidden extra goes into the {dish} in {s}'s family?"),
            ("single", "main", "What secret has {s}'s family denied for thirty years?"),
            ("single", "main", "Which old family recipe did {s} get hold of?"),
            ("inference", "main", "Would {s} have any heirloom recipes to share?"),
        ],
    },
    "chess": {
        "diary-dev": [
            ("single", "main", "Where did {s} finish in the chess tournament?"),
            ("single", "main", "Where did {s} come in the chess?"),
            ("single", "main", "Which chess competition did {s} enter?"),
        ],
        "diary-test": [
            ("single", "main", "How did {s} do at the chess event?"),
            ("single", "main", "What place did {s} come at chess?"),
            ("single", "main", "What placing did {s} get over the board?"),
        ],
    },
    "lost_item": {
        "diary-dev": [
            ("single", "main", "What did {s} lose?"),
            ("single", "main", "What has {s} lost?"),
            ("single", "update", "Where did {s}'s missing {item} turn up?"),
            ("multi", "main+update", "Tell me the whole story of {s}'s lost {item}."),
            ("temporal", "main", "When did {s} lose the {item}?"),
        ],
        "diary-test": [
            ("single", "main", "Which of {s}'s belongings went missing?"),
            ("single", "main", "What did {s} lose track of?"),
            ("single", "update", "Did {s} ever get the {item} back, and where was it?"),
            ("multi", "main+update", "Find the conversations about {s} misplacing something."),
            ("temporal", "main", "Roughly when did {s} mislay the {item}?"),
        ],
    },
    "phone": {
        "diary-dev": [
            ("single", "main", "What phone did {s} upgrade to?"),
            ("single", "main", "Which phone did {s} get?"),
            ("single", "main", "Why did {s} replace the old phone?"),
            ("inference", "main", "Has {s} bought any new gadgets?"),
        ],
        "diary-test": [
            ("single", "main", "Which handset has {s} got now?"),
            ("single", "main", "What phone did {s} cave and get?"),
            ("single", "main", "What made {s} switch to a new mobile?"),
            ("inference", "main", "Is {s}'s tech up to date?"),
        ],
    },
    "grandparent": {
        "diary-dev": [
            ("single", "main", "How old did {s}'s {elder_rel} turn?"),
            ("single", "main", "How old is {elder} now, according to {s}?"),
            ("single", "main", "Where was the birthday party for {s}'s {elder_rel}?"),
            ("inference", "main", "Does {s} have any elderly relatives?"),
            ("temporal", "main", "When did {s} go to {elder}'s birthday celebration?"),
        ],
        "diary-test": [
            ("single", "main", "What age did {elder} reach, per {s}?"),
            ("single", "main", "How old did {elder} turn at the party {s} went to?"),
            ("single", "main", "Where did {s}'s family throw the celebration for {elder}?"),
            ("inference", "main", "Is {s} close to the older generation of the family?"),
            ("temporal", "main", "How long ago did {s} celebrate with {elder}?"),
        ],
    },
    "exhibition": {
        "diary-dev": [
            ("single", "main", "Where is {s}'s photography being exhibited?"),
            ("single", "main", "Where are {s}'s photos going up?"),
            ("single", "main", "What are the pictures in {s}'s show about?"),
            ("inference", "main", "Is {s} a keen photographer?"),
        ],
        "diary-test": [
            ("single", "main", "Which venue is hanging {s}'s prints?"),
            ("single", "main", "Which photos of {s}'s are going up, and where?"),
            ("single", "main", "What subject did {s} shoot for the exhibition?"),
            ("inference", "main", "Would {s} appreciate a new camera lens?"),
        ],
    },
    "donation": {
        "diary-dev": [
            ("single", "main", "Which charity did {s} give money to?"),
            ("single", "main", "Who did {s} give money to instead of a present?"),
            ("inference", "main", "Does {s} support good causes?"),
        ],
        "diary-test": [
            ("single", "main", "Who received {s}'s donation?"),
            ("single", "main", "Which charity did {s} give to instead of a birthday present?"),
            ("single", "main", "How much did {s} donate, and to whom?"),
            ("inference", "main", "Is {s} generous with their money?"),
        ],
    },
    "appointment": {
        "diary-dev": [
            ("single", "main", "When is {s}'s {thing} appointment?"),
            ("single", "main", "Has {s} booked the {thing} yet?"),
        ],
        "diary-test": [
            ("single", "main", "What date did {s} get with the {alt}?"),
            ("single", "main", "Did {s} finally sort out a slot with the {alt}?"),
        ],
    },
    "pottery": {
        "diary-dev": [
            ("single", "main", "What did {s} make at the pottery class?"),
            ("single", "main", "Which night does {s} do ceramics?"),
            ("inference", "main", "Does {s} have a hands-on hobby?"),
        ],
        "diary-test": [
            ("single", "main", "What has {s} shaped out of clay so far?"),
            ("single", "main", "Where does {s} go for the clay lessons?"),
            ("inference", "main", "Would {s} enjoy a voucher for a craft workshop?"),
        ],
    },
    "jury": {
        "diary-dev": [
            ("single", "main", "Where is {s} doing jury service?"),
            ("single", "main", "Where is {s} doing jury duty?"),
            ("inference", "main", "Has {s} had any civic obligations lately?"),
            ("temporal", "main", "When was {s} called up for the jury?"),
        ],
        "diary-test": [
            ("single", "main", "Which court summoned {s}?"),
            ("single", "main", "Which court is {s} on jury duty at?"),
            ("inference", "main", "Has {s} been part of a trial recently?"),
            ("temporal", "main", "How long ago did {s} get the jury summons?"),
        ],
    },
    "quiz": {
        "diary-dev": [
            ("single", "main", "What's {s}'s quiz team called?"),
            ("single", "main", "What was the name of {s}'s team at the pub quiz?"),
            ("single", "main", "Where did {s}'s team win the quiz?"),
            ("inference", "main", "Is {s} good at trivia?"),
        ],
        "diary-test": [
            ("single", "main", "Under what name does {s} compete at trivia night?"),
            ("single", "main", "Which team won {s} a bar tab at the quiz?"),
            ("single", "main", "Which pub gave {s} a bar tab as a prize?"),
            ("inference", "main", "Would {s} be handy on a general-knowledge team?"),
        ],
    },
    "tv": {
        "diary-dev": [
            ("multi", "all", "Which TV series has {s} binge-watched?"),
            ("multi", "all", "Which series has {s} finished lately?"),
            ("multi", "all", "What shows has {s} been watching?"),
            ("temporal", "month", "What was {s} binge-watching in {month} {year}?"),
            ("temporal", "ago", "Which series did {s} get through {ago}?"),
        ],
        "diary-test": [
            ("multi", "all", "Remind me of the box sets {s} raved about."),
            ("multi", "all", "Which shows did {s} stay up late to finish?"),
            ("multi", "all", "{s} keeps recommending television, which programmes?"),
            ("temporal", "month", "Back in {mon} {year}, which show had {s} hooked?"),
            ("temporal", "ago", "{s} told me about a series {ago}, what was it called?"),
        ],
    },
    "restaurant": {
        "diary-dev": [
            ("multi", "all", "Which restaurants has {s} tried?"),
            ("multi", "all", "Which places has {s} finally tried?"),
            ("multi", "all", "Where has {s} eaten out?"),
            ("single", "favourite", "Where does {s} most like to eat out?"),
            ("temporal", "month", "Where did {s} eat out in {month} {year}?"),
            ("temporal", "ago", "What restaurant did {s} go to {ago}?"),
        ],
        "diary-test": [
            ("multi", "all", "List the places {s} went out for dinner."),
            ("multi", "all", "Which new places has {s} tried for dinner?"),
            ("multi", "all", "Find the chats where {s} reviewed somewhere to eat."),
            ("single", "favourite", "Which place does {s} rate highest for a meal?"),
            ("temporal", "month", "In {mon} {year}, which restaurant did {s} have dinner at?"),
            ("temporal", "ago", "{s} had a meal out {ago}: where?"),
        ],
    },
    "birds": {
        "diary-dev": [
            ("multi", "all", "What birds has {s} spotted?"),
            ("multi", "all", "What birds has {s} seen?"),
            ("multi", "all", "List {s}'s bird sightings."),
            ("inference", "all", "Is {s} a birdwatcher?"),
            ("temporal", "month", "What bird did {s} see in {month} {year}?"),
            ("temporal", "ago", "Which bird did {s} spot {ago}?"),
        ],
        "diary-test": [
            ("multi", "all", "Which species has {s} come across while out walking?"),
            ("multi", "all", "What has {s} seen on walks?"),
            ("multi", "all", "What wildlife has {s} been lucky enough to see?"),
            ("inference", "all", "Would binoculars make a good gift for {s}?"),
            ("temporal", "month", "What did {s} see out birding in {month} of {year}?"),
            ("temporal", "ago", "{s} was thrilled about a bird {ago}; which one?"),
        ],
    },
    "boardgame": {
        "diary-dev": [
            ("multi", "all", "Which board games has {s} played?"),
            ("multi", "all", "What has {s} played at games night?"),
            ("multi", "all", "What games come out at {s}'s game nights?"),
            ("inference", "all", "Does {s} host social evenings at home?"),
            ("temporal", "month", "What game did {s} play in {month} {year}?"),
            ("temporal", "ago", "Which board game did {s} play {ago}?"),
        ],
        "diary-test": [
            ("multi", "all", "What's on the table when {s} has friends round to play?"),
            ("multi", "all", "Which games did {s} play on games nights?"),
            ("multi", "all", "Name the tabletop games {s} mentioned."),
            ("inference", "all", "Would {s} be up for a strategy game evening?"),
            ("temporal", "month", "During {month} {year}, which game did {s}'s group play?"),
            ("temporal", "ago", "What was on the table at {s}'s games evening {ago}?"),
        ],
    },
    "swimming": {
        "diary-dev": [
            ("multi", "all", "Where has {s} been wild swimming?"),
            ("multi", "all", "Where has {s} swum?"),
            ("multi", "all", "Which places has {s} swum outdoors?"),
            ("inference", "all", "Does {s} do any outdoor sports?"),
            ("temporal", "month", "Where did {s} swim in {month} {year}?"),
            ("temporal", "ago", "Where did {s} go swimming {ago}?"),
        ],
        "diary-test": [
            ("multi", "all", "Remind me of the cold-water spots {s} has tried."),
            ("multi", "all", "Where has {s} swum outdoors, and how cold was it?"),
            ("multi", "all", "Where does {s} go for a dip outside?"),
            ("inference", "all", "Would {s} join me for a dip in the sea in winter?"),
            ("temporal", "month", "{mon} {year}: where was {s} taking a dip?"),
            ("temporal", "ago", "Which lake or beach did {s} swim at {ago}?"),
        ],
    },
}

# diary-fresh: a third batch on the same facts, written after the ranking had been tuned on
# diary-dev, to report a figure that tuning has not seen. Its shapes are its own: requests to an
# assistant ("Can you check ..."), terse keyword queries ("{s} tax letter amount?"), indirect
# ones ("I forgot ..."), and now and then a word of the evidence in another inflection
# ("bingeing" for "binged", "breaking" for "broke"). Same (kind, roles) per fact as the others.
FRESH_QUESTIONS: dict[str, list[Template]] = {
    "wedding": [
        ("single", "main", "Can you check where {kin}'s marriage ceremony will be, per {s}?"),
        ("single", "main", "{s} {kin_rel} wedding venue?"),
        ("single", "main", "I forgot which place {s}'s {kin_rel} picked for marrying."),
        ("single", "update", "Has {kin}'s wedding been rescheduled? {s} would know the new day."),
        ("single", "update", "{s}: {kin_rel}'s wedding, revised date?"),
        ("multi", "main+update", "Trace the saga of {kin}'s wedding as {s} told it."),
        ("multi", "main+update", "What has {s} said over time about {kin} getting wed?"),
        ("temporal", "update", "Which wedding change did {s} report around {month} {year}?"),
        ("temporal", "update", "{s} wedding news for {kin}, {mon} {year}: what shifted?"),
        ("inference", "main", "Can you check whether {s} has a family celebration on the way?"),
        ("inference", "main", "Is {s} due at any relative's ceremony soon?"),
    ],
    "renovation": [
        ("single", "main", "Which splurge did {s} make on the new cooking space?"),
        ("single", "main", "{s} kitchen: what design choice broke the bank?"),
        ("single", "main", "Can you check which tradesperson {s} has working on the kitchen?"),
        ("inference", "main", "Is {s} in the middle of home improvements?"),
        ("inference", "main", "Has {s}'s house been a building site lately?"),
        ("temporal", "main", "Around which month did {s} have no usable kitchen?"),
        ("temporal", "main", "Can you check when {s}'s kitchen got gutted?"),
    ],
    "procedure": [
        ("single", "main", "What surgery was {s} fasting for?"),
        ("single", "main", "{s} operation type?"),
        ("single", "main", "I forgot what {s} had operated on. Can you find it?"),
        ("inference", "main", "Has {s} been through anything medical this year?"),
        ("inference", "main", "Can you check whether {s} spent a day being treated somewhere?"),
        ("temporal", "main", "Which month was {s}'s surgery in?"),
        ("temporal", "main", "{s} op date, roughly?"),
    ],
    "fracture": [
        ("single", "main", "Which part of {s} ended up in a cast?"),
        ("single", "main", "{s} broken bone: which one?"),
        ("single", "main", "I forgot how {s} got injured. What was the fall?"),
        ("multi", "main+cast", "Can you check how {s}'s broken limb went, accident to physio?"),
        ("multi", "main+cast", "From breaking it to healing: {s}'s injury, all of it?"),
        ("inference", "main", "Has {s} been physically hurt this year?"),
        ("inference", "main", "Would {s} have struggled with chores because of an accident?"),
        ("temporal", "main", "Roughly what month did {s} have that bad fall?"),
        ("temporal", "main", "{s} fracture date?"),
    ],
    "language": [
        ("single", "main", "What's {s} studying so as not to point at menus abroad?"),
        ("single", "main", "{s} new language?"),
        ("single", "main", "Can you check which foreign tongue {s} enrolled in?"),
        ("inference", "main", "Is {s} working on a new ability at the moment?"),
        ("inference", "main", "Has {s} taken up any kind of study?"),
    ],
    "side_business": [
        ("single", "main", "{s} shop name?"),
        ("single", "main", "Can you check what {s} is flogging from the spare room?"),
        ("single", "main", "I forgot what {s}'s secret project turned out to be."),
        ("inference", "main", "Does {s} earn money outside the day job?"),
        ("inference", "main", "Is {s} running a little company of some kind?"),
    ],
    "routine": [
        ("single", "main", "What regime has {s} been sticking to?"),
        ("single", "main", "{s} wellness thing, what is it?"),
        ("single", "main", "Can you check what self-care practice {s} adopted?"),
        ("inference", "main", "Is {s} trying to live more healthily?"),
        ("inference", "main", "Has {s} been on a personal-betterment kick?"),
    ],
    "promotion": [
        ("single", "main", "{s} new job title?"),
        ("single", "main", "What's {s} heading up after the review?"),
        ("single", "main", "Can you check what position {s} was given?"),
        ("inference", "main", "Is {s} climbing the ladder at work?"),
        ("inference", "main", "Has {s} earned more responsibility in the job?"),
        ("temporal", "main", "Which month did {s} land the promotion?"),
        ("temporal", "main", "{s} promoted: when?"),
    ],
    "talk": [
        ("single", "main", "Which conference is {s} speaking at?"),
        ("single", "main", "{s} talk: which event?"),
        ("single", "main", "Can you check what topic {s} is presenting?"),
        ("single", "date", "How many weeks until {s}'s conference slot?"),
        ("single", "date", "{s} presentation timing?"),
        ("single", "after", "How well was {s}'s talk received?"),
        ("single", "after", "How many came up to {s} after speaking?"),
        ("multi", "main+after", "Walk me through {s}'s speaking engagement, start to finish."),
        ("multi", "main+after", "{s} conference talk: before and after?"),
        ("inference", "main", "Is {s} comfortable addressing a crowd?"),
        ("inference", "main", "Can you check whether {s} has spoken at industry events?"),
    ],
    "apartment": [
        ("single", "main", "What defect is {s} complaining about at home?"),
        ("single", "main", "{s} flat problem?"),
        ("single", "main", "I forgot what was wrong in {s}'s rented place."),
        ("single", "update", "Can you check whether {s}'s landlord got round to a repair?"),
        ("single", "update", "How was the fault at {s}'s flat fixed eventually?"),
        ("multi", "main+update", "Track {s}'s housing complaint from first mention to repair."),
        ("multi", "main+update", "{s} rental issue, from start to fixed?"),
        ("inference", "main", "Is {s} unhappy with the place they rent?"),
        ("inference", "main", "Has {s} got a difficult landlord situation?"),
        ("temporal", "update", "In {mon} {year}, what repair did {s}'s flat get?"),
        ("temporal", "update", "{s}'s flat got repaired {ago}. Repaired how?"),
    ],
    "podcast": [
        ("single", "main", "{s} podcast name?"),
        ("single", "main", "Can you check who co-hosts the show with {s}?"),
        ("single", "main", "What topic does {s}'s podcasting cover?"),
        ("inference", "main", "Is {s} making any media of their own?"),
        ("inference", "main", "Does {s} have a side project involving microphones?"),
        ("temporal", "main", "Around which month did {s}'s podcast first go out?"),
        ("temporal", "main", "{s} started podcasting when?"),
    ],
    "camping": [
        ("single", "main", "What did {s} purchase ahead of the camping trip?"),
        ("single", "main", "{s} camping kit bought?"),
        ("single", "main", "Can you check where {s} plans to camp wild?"),
        ("inference", "main", "Is {s} heading off on an outdoor adventure?"),
        ("inference", "main", "Would {s} own equipment for a trip into the hills?"),
    ],
    "school_event": [
        ("single", "main", "I forgot how {kid}'s {event} went; {s} filled me in at the time."),
        ("single", "main", "{s} {kid_rel} {event} outcome?"),
        ("inference", "main", "Is {s} involved with a child at primary school?"),
        ("inference", "main", "Does {s} cheer on a youngster at school occasions?"),
    ],
    "tax": [
        ("single", "main", "{s} tax letter amount?"),
        ("single", "main", "Can you check how big a shortfall the tax office claimed from {s}?"),
        ("single", "update", "What did {s}'s tax issue settle at?"),
        ("single", "update", "{s} final tax payment?"),
        ("multi", "main+update", "How did the underpayment business go for {s}, letter to end?"),
        ("multi", "main+update", "I forgot how {s}'s tax trouble played out. Gather it for me?"),
        ("inference", "main", "Has {s} had a scare with the authorities over money?"),
        ("inference", "main", "Did {s} get any unwelcome bills this year?"),
        ("temporal", "main", "Which month did {s}'s tax letter arrive?"),
        ("temporal", "main", "{s} taxman letter, what month?"),
    ],
    "recipe": [
        ("single", "main", "Which ingredient makes {elder}'s {dish} special, according to {s}?"),
        ("single", "main", "{s}: {elder}'s {dish}, mystery component?"),
        ("single", "main", "Can you check what {s} discovered goes in the {dish}?"),
        ("inference", "main", "Is {s} preserving anything from the older generation's kitchen?"),
        ("inference", "main", "Has {s} been documenting family heritage?"),
    ],
    "chess": [
        ("single", "main", "{s} chess result?"),
        ("single", "main", "Can you check what rank {s} achieved in the tournament?"),
        ("single", "main", "I forgot how {s} placed at that chess weekend."),
    ],
    "lost_item": [
        ("single", "main", "Can you check which possession {s} was hunting for?"),
        ("single", "main", "{s} misplaced item?"),
        ("single", "update", "Where was {s}'s {item} eventually found?"),
        ("single", "update", "{s} {item} found where?"),
        ("multi", "main+update", "I forgot the business of {s} losing the {item}. All of it?"),
        ("multi", "main+update", "{s} {item}: gone and recovered, details?"),
        ("temporal", "main", "What month did {s} go without the {item}?"),
        ("temporal", "main", "{s} losing the {item}, when was that?"),
    ],
    "phone": [
        ("single", "main", "{s} phone model?"),
        ("single", "main", "Can you check which smartphone {s} bought?"),
        ("single", "main", "I forgot why {s} needed a new mobile."),
        ("inference", "main", "Has {s} treated themselves to any new tech?"),
        ("inference", "main", "Is {s} carrying a recent device?"),
    ],
    "grandparent": [
        ("single", "main", "{s}'s {elder_rel}: age reached?"),
        ("single", "main", "Can you check how many years {s}'s {elder_rel} was celebrating?"),
        ("single", "main", "Which venue hosted {elder}'s birthday for {s}'s family?"),
        ("inference", "main", "Does {s} have a very old family member still around?"),
        ("inference", "main", "Does {s} have a relative of a great age?"),
        ("temporal", "main", "Which month was {elder}'s party, the one {s} went to?"),
        ("temporal", "main", "{s} {elder_rel} birthday bash: when?"),
    ],
    "exhibition": [
        ("single", "main", "{s} exhibition venue?"),
        ("single", "main", "Can you check where {s}'s photographs will be on display?"),
        ("single", "main", "What theme does {s}'s photo series have?"),
        ("inference", "main", "Is {s} serious about taking pictures?"),
        ("inference", "main", "Would {s} have a gallery opening to invite me to?"),
    ],
    "donation": [
        ("single", "main", "{s} donation recipient?"),
        ("single", "main", "Can you check which organisation got money from {s}?"),
        ("single", "main", "I forgot how much {s} gave away, and who it went to."),
        ("inference", "main", "Is {s} the charitable type?"),
        ("inference", "main", "Does {s} give to those in need?"),
    ],
    "appointment": [
        ("single", "main", "{s} {thing} date?"),
        ("single", "main", "Can you check whether {s} ever got the {thing} sorted, and when?"),
        ("single", "main", "I forgot which day {s} is seeing the {alt}."),
    ],
    "pottery": [
        ("single", "main", "{s} first pottery piece?"),
        ("single", "main", "Which day of the week does {s} throw pots?"),
        ("single", "main", "I forgot which studio {s} joined for making pots."),
        ("inference", "main", "Does {s} do anything crafty?"),
        ("inference", "main", "Is {s} learning something artistic with their hands?"),
    ],
    "jury": [
        ("single", "main", "{s} jury court?"),
        ("single", "main", "Can you check which courthouse {s} was sent to?"),
        ("single", "main", "I forgot where {s} sat as a juror."),
        ("inference", "main", "Has {s} done anything for the justice system lately?"),
        ("inference", "main", "Was {s} recently away from work for a legal obligation?"),
        ("temporal", "main", "Which month did {s} start serving as a juror?"),
        ("temporal", "main", "{s} juror stint: when?"),
    ],
    "quiz": [
        ("single", "main", "{s} quiz team name?"),
        ("single", "main", "Can you check what {s}'s trivia squad calls itself?"),
        ("single", "main", "Which pub did {s} triumph at?"),
        ("single", "main", "I forgot what {s} won at the quiz, and where."),
        ("inference", "main", "Does {s} know a lot of random facts?"),
        ("inference", "main", "Would {s} be a good pick for a brainy contest?"),
    ],
    "tv": [
        ("multi", "all", "Can you check which dramas {s} has devoured?"),
        ("multi", "all", "{s} binge list?"),
        ("multi", "all", "I forgot the names of the programmes {s} got hooked on."),
        ("temporal", "month", "In {month} {year}, which programme was {s} glued to?"),
        ("temporal", "month", "{s} viewing, {mon} {year}?"),
        ("temporal", "ago", "Which drama had {s} gripped {ago}?"),
        ("temporal", "ago", "Can you check what {s} was bingeing {ago}?"),
    ],
    "restaurant": [
        ("multi", "all", "Dining out: what has {s} sampled?"),
        ("multi", "all", "{s} restaurants visited?"),
        ("multi", "all", "Can you check which eateries {s} has tried and reviewed?"),
        ("single", "favourite", "What's {s}'s go-to restaurant?"),
        ("single", "favourite", "Which spot has {s} crowned the best for dinner?"),
        ("temporal", "month", "{month} {year}: where did {s} dine?"),
        ("temporal", "month", "Can you check where {s} ate in {mon} {year}?"),
        ("temporal", "ago", "{s} went for food somewhere {ago}. Which restaurant?"),
        ("temporal", "ago", "Where was {s} eating {ago}?"),
    ],
    "birds": [
        ("multi", "all", "{s} bird list?"),
        ("multi", "all", "Can you check what feathered visitors {s} has reported?"),
        ("multi", "all", "I forgot which birds {s} got excited about."),
        ("inference", "all", "Is {s} into nature watching?"),
        ("inference", "all", "Is watching wildlife a pastime of {s}'s?"),
        ("temporal", "month", "{s} sighting, {mon} {year}?"),
        ("temporal", "month", "Can you check which bird {s} clocked during {month} {year}?"),
        ("temporal", "ago", "I forgot which bird {s} saw {ago}."),
        ("temporal", "ago", "{s}'s birding highlight {ago}?"),
    ],
    "boardgame": [
        ("multi", "all", "{s} game night lineup?"),
        ("multi", "all", "Can you check which games {s} and friends have been playing at home?"),
        ("multi", "all", "I forgot what {s} plays on those evenings in."),
        ("inference", "all", "Does {s} enjoy hosting?"),
        ("inference", "all", "Is {s} keen on competitive evenings with friends at home?"),
        ("temporal", "month", "{s} game night, {mon} {year}: which game?"),
        ("temporal", "month", "Which game got {s}'s living room competitive in {month} {year}?"),
        ("temporal", "ago", "What game was {s} losing at {ago}?"),
        ("temporal", "ago", "What was the game of the evening for {s} {ago}?"),
    ],
    "swimming": [
        ("multi", "all", "{s} outdoor swim spots?"),
        ("multi", "all", "Can you check the lakes and beaches {s} has plunged into?"),
        ("multi", "all", "I forgot where all {s}'s swims took place."),
        ("inference", "all", "Does {s} like cold water?"),
        ("inference", "all", "Is {s} hardy about chilly exercise outside?"),
        ("temporal", "month", "{s} swim location, {mon} {year}?"),
        ("temporal", "month", "Cold plunge for {s} in {month} {year}: which spot?"),
        ("temporal", "ago", "Can you check where {s} was swimming {ago}?"),
        ("temporal", "ago", "Which water did {s} brave {ago}?"),
    ],
}
for _kind, _templates in FRESH_QUESTIONS.items():
    # The same facts, asked in the same (kind, roles) as dev: only the wording is new.
    assert {t[:2] for t in _templates} == {t[:2] for t in QUESTIONS[_kind]["diary-dev"]}, _kind
    QUESTIONS[_kind]["diary-fresh"] = _templates

# diary-spoken: a fourth batch on the same facts, written after the seventh round's ranking
# changes without looking at the ranker or its misses. Questions as people say them to a voice
# assistant or type them in a hurry: lead-ins and hedges ("So I was talking to ...", "quick
# one:", "remind me, wasn't ..."), the owner named once and then "they", everyday paraphrases in
# place of the evidence's words ("getting hitched", "in plaster", "go walkabout"), a few
# common misspellings of ordinary words ("buisness", "calender", "resturants"), and dates said
# loosely ("back in {month}", "sometime around {month} {year}", "{ago} or so"). Same
# (kind, roles) per fact as the others.
SPOKEN_QUESTIONS: dict[str, list[Template]] = {
    "wedding": [
        (
            "single",
            "main",
            "So I was talking to {s} the other day and I can't remember, where's their "
            "{kin_rel} getting hitched?",
        ),
        (
            "single",
            "main",
            "quick one: {kin}'s do, the one {s} has to make a speech at, whereabouts is it?",
        ),
        (
            "single",
            "main",
            "remind me, wasn't {s}'s {kin_rel} marrying somewhere kind of fancy? where was it",
        ),
        (
            "single",
            "update",
            "Hang on, didn't {s} say {kin}'s big day got shifted? what's the new date, do you "
            "know?",
        ),
        (
            "single",
            "update",
            "ok so {s}'s {kin_rel} had to change the date of the do, didn't they? what day's "
            "it on now",
        ),
        (
            "multi",
            "main+update",
            "So with {s}'s {kin_rel} getting hitched, where's it at and did the date end up "
            "changing or what? give me the lot",
        ),
        (
            "multi",
            "main+update",
            "I've lost track of {kin}'s wedding stuff, {s} told me bits and pieces, like where "
            "and then a date switch I think?",
        ),
        (
            "temporal",
            "update",
            "{s} said something about {kin}'s big day back in {month}, what had changed?",
        ),
        (
            "temporal",
            "update",
            "sometime around {month} {year} {s} mentioned a hiccup with their {kin_rel}'s "
            "wedding, what was that about?",
        ),
        ("temporal", "update", "what was the update {s} gave on {kin}'s wedding {ago} or so?"),
        (
            "inference",
            "main",
            "Has {s} got anything big coming up with the family? I feel like they mentioned "
            "some family do",
        ),
        (
            "inference",
            "main",
            "is {s} having to dress up for a relative's big day soon or am I making that up",
        ),
    ],
    "renovation": [
        (
            "single",
            "main",
            "um so {s}'s doing their kitchen up, right? what did they go for that cost a fortune?",
        ),
        (
            "single",
            "main",
            "remind me what {s} picked for the kitchen, the pricey bit they said was worth it?",
        ),
        (
            "single",
            "main",
            "who's {s} got in to do the work at their place? a company or just some guy?",
        ),
        (
            "inference",
            "main",
            "is {s} having work done on the house at the moment? I vaguely remember them living "
            "off takeaways",
        ),
        (
            "inference",
            "main",
            "has {s}'s place been a bit of a dust zone lately, like are they doing it up?",
        ),
        (
            "temporal",
            "main",
            "when abouts did {s} have their kitchen ripped out, roughly? feels like ages",
        ),
        ("temporal", "main", "so when was {s} stuck without a proper kitchen? I can't place it"),
    ],
    "procedure": [
        (
            "single",
            "main",
            "Sorry, random, but {s} went in for something minor at the hospital, didn't they? "
            "what were they having done?",
        ),
        ("single", "main", "what was {s}'s surgury for again? the in-and-out one"),
        ("single", "main", "which hospital did {s} have to go to for their little op thing?"),
        (
            "inference",
            "main",
            "has {s} had any health stuff going on lately? they mentioned something medical I "
            "think",
        ),
        (
            "inference",
            "main",
            "is {s} ok? I feel like they had to go in for treatment or something",
        ),
        (
            "temporal",
            "main",
            "when did {s} have that day-case thing done, roughly? I've lost track",
        ),
        ("temporal", "main", "remind me when {s} was having their op, was it a while back?"),
    ],
    "fracture": [
        ("single", "main", "Wait, {s} hurt themselves, didn't they? what did they snap?"),
        (
            "single",
            "main",
            "quick one: how'd {s} end up in plaster, was it a silly fall or something?",
        ),
        (
            "single",
            "main",
            "which bit of {s} was all strapped up, was it an arm or a leg thing? I can't remember",
        ),
        (
            "multi",
            "main+cast",
            "So {s} was in plaster for ages, what did they bust, and are they out of it now and "
            "back to normal?",
        ),
        (
            "multi",
            "main+cast",
            "can you give me the whole {s} broken bone saga, like from the fall to when they got "
            "the thing off?",
        ),
        ("inference", "main", "Has {s} been laid up with an injury or anything lately?"),
        (
            "inference",
            "main",
            "was {s} a bit out of action at some point, like hurt or something?",
        ),
        ("temporal", "main", "when was it {s} was going around all bandaged up? roughly?"),
        (
            "temporal",
            "main",
            "when did {s} have their accident, the one where they cracked something?",
        ),
    ],
    "language": [
        (
            "single",
            "main",
            "I was talking to {s} and totally blanked, which language is it they're trying to "
            "pick up?",
        ),
        (
            "single",
            "main",
            "remind me, {s} is doing classes in something for a holiday, what language was it?",
        ),
        (
            "single",
            "main",
            "how is {s} going about learning that language, like a teacher or an app or what?",
        ),
        (
            "inference",
            "main",
            "Is {s} learning anything new at the moment, like a course or something?",
        ),
        (
            "inference",
            "main",
            "has {s} taken on some new hobby where they're studying something?",
        ),
    ],
    "side_business": [
        (
            "single",
            "main",
            "so what's {s} making and selling these days? they've got a little shop thing going",
        ),
        ("single", "main", "whats {s}'s online store called again, I wanna order something"),
        (
            "single",
            "main",
            "I heard {s} started a buisness on the side, what do they sell?",
        ),
        (
            "inference",
            "main",
            "does {s} have some money-making thing going apart from their actual job?",
        ),
        ("inference", "main", "is {s} running some little venture outside of work?"),
    ],
    "routine": [
        (
            "single",
            "main",
            "{s} was going on about some new daily thing that's made them all smug, what was it?",
        ),
        (
            "single",
            "main",
            "what's that thing {s} has started doing daily, the one they won't shut up about?",
        ),
        ("single", "main", "remind me what {s}'s new self-discipline thing is, I keep forgetting"),
        ("inference", "main", "Is {s} on a bit of a health kick at the moment?"),
        (
            "inference",
            "main",
            "has {s} been trying to sort their life out a bit, like better habits?",
        ),
    ],
    "promotion": [
        (
            "single",
            "main",
            "So {s} got bumped up at work, what's the project they're steering now?",
        ),
        ("single", "main", "{s} moved up at work, right? what's their new role called?"),
        (
            "single",
            "main",
            "i wanna congradulate {s} properly, what did they get given at work, like the new "
            "title?",
        ),
        ("inference", "main", "things going well for {s} at work? I think they had some good news"),
        (
            "inference",
            "main",
            "did {s} get a step up in their career recently or am I thinking of someone else?",
        ),
        ("temporal", "main", "when did {s} get moved up at work, roughly?"),
        ("temporal", "main", "when was it {s} got that step up at their job?"),
    ],
    "talk": [
        ("single", "main", "Where's {s} doing their big speech thing, which event was it?"),
        ("single", "main", "whats the topic of {s}'s presentation? I should ask them about it"),
        ("single", "main", "so {s} got picked to speak at some event, which one was it?"),
        ("single", "date", "How long till {s} has to get up on stage for that thing?"),
        (
            "single",
            "date",
            "remind me how far off {s}'s speaking slot is, like how many weeks?",
        ),
        ("single", "after", "Did {s}'s big presentation go ok in the end? I never asked"),
        (
            "single",
            "after",
            "I forgot to ask {s}, did the speech go down well? they were so nervous",
        ),
        (
            "multi",
            "main+after",
            "So the whole {s} conference thing, where was it and how'd it go on the day?",
        ),
        (
            "multi",
            "main+after",
            "can you catch me up on {s} and the stage thing, getting picked and then how it went",
        ),
        (
            "inference",
            "main",
            "does {s} ever speak in front of crowds, like at events? I need someone to help me "
            "prep",
        ),
        (
            "inference",
            "main",
            "is {s} the kind of person who gets up and talks to a room full of people?",
        ),
    ],
    "apartment": [
        (
            "single",
            "main",
            "what was the problem at {s}'s new place again? something kept going wrong I think",
        ),
        ("single", "main", "{s} was moaning about their rental, what's actually wrong with it?"),
        ("single", "main", "who's {s}'s landlord again, the one who never replies?"),
        (
            "single",
            "update",
            "did {s}'s landlord ever actually deal with it, and what'd they end up doing?",
        ),
        ("single", "update", "so is {s}'s flat thing fixed now? how did they fix it"),
        (
            "multi",
            "main+update",
            "ok so {s}'s place, the thing that was wrong with it, can you give me the whole "
            "story, what it was and how it got fixed?",
        ),
        (
            "multi",
            "main+update",
            "catch me up on {s}'s housing drama from the begining, like what broke and what "
            "happened after",
        ),
        ("inference", "main", "is {s} having a rough time with where they live?"),
        (
            "inference",
            "main",
            "does {s} have a nightmare landlord or is that someone else I know?",
        ),
        (
            "temporal",
            "update",
            "back in {month} I think {s} finally had someone come round to fix their place, what "
            "did they do?",
        ),
        (
            "temporal",
            "update",
            "what got sorted at {s}'s place {ago} or so? the repair thing",
        ),
        (
            "temporal",
            "update",
            "sometime around {mon} {year}, {s} said their place finally got seen to, what was "
            "done?",
        ),
    ],
    "podcast": [
        ("single", "main", "{s} and some friend started recording a show, what's it called again?"),
        (
            "single",
            "main",
            "who does {s} do their podcast with? I can never remember the name",
        ),
        ("single", "main", "whats {s}'s show even about? like the subject"),
        ("inference", "main", "Is {s} into making their own content or anything like that?"),
        (
            "inference",
            "main",
            "has {s} got some creative side thing, like recording stuff for people to listen to?",
        ),
        ("temporal", "main", "When did {s} kick off their show with their mate? a while back?"),
        ("temporal", "main", "roughly when did {s}'s podcast thing start up?"),
    ],
    "camping": [
        ("single", "main", "{s} bought some pricey gear for a trip, what was it?"),
        (
            "single",
            "main",
            "so what did {s} blow all that cash on for sleeping out in the hills?",
        ),
        ("single", "main", "where's {s} going to camp, some national park?"),
        ("inference", "main", "is {s} going off roughing it somewhere soon? I think they said"),
        (
            "inference",
            "main",
            "would {s} have kit I could borrow if I go sleeping outside?",
        ),
    ],
    "school_event": [
        ("single", "main", "so {s}'s {kid_rel} had that {event} thing, how did {kid} do?"),
        ("single", "main", "how did little {kid} do at the {event}? {s} told me but I forgot"),
        (
            "inference",
            "main",
            "does {s} have little ones around, like kids in the family who are still at school?",
        ),
        (
            "inference",
            "main",
            "has {s} got a kid in their life they go and watch at school things?",
        ),
    ],
    "tax": [
        (
            "single",
            "main",
            "how much did the taxman reckon {s} owed them? it was a scary number",
        ),
        (
            "single",
            "main",
            "{s} got some awful letter about money owed, how much was it for?",
        ),
        (
            "single",
            "update",
            "so {s}'s tax thing, what did they actually end up having to pay?",
        ),
        ("single", "update", "did {s}'s tax drama get sorted? what was the final figure"),
        (
            "multi",
            "main+update",
            "what's the full story with {s} and the HMRC letter? I know it got sorted eventually",
        ),
        (
            "multi",
            "main+update",
            "can you remind me of the whole {s} taxes thing, the scary amount and how it ended?",
        ),
        ("inference", "main", "has {s} been stressed about money stuff at all?"),
        ("inference", "main", "has {s} had a nasty surprise in the post, money-wise?"),
        (
            "temporal",
            "main",
            "when did {s} get that horrible letter from the tax people, roughly?",
        ),
        (
            "temporal",
            "main",
            "how long ago was {s}'s tax letter drama, like what time of year?",
        ),
    ],
    "recipe": [
        ("single", "main", "what does {elder} sneak into the {dish}? {s} told me but I forget"),
        (
            "single",
            "main",
            "so {s} finally got the family {dish} recipe out of {elder}, what's the trick to it?",
        ),
        ("single", "main", "whose recipe did {s} finally get on paper? the {dish} one"),
        ("inference", "main", "is {s} into keeping old family food traditions going?"),
        ("inference", "main", "does {s} cook stuff that's been handed down in the family?"),
    ],
    "chess": [
        ("single", "main", "how'd {s} do at that chess thing, did they place?"),
        (
            "single",
            "main",
            "what position did {s} finish in the chess comp? I know it was out of loads of people",
        ),
        ("single", "main", "which chess tournement did {s} play in, the weekend one?"),
    ],
    "lost_item": [
        ("single", "main", "{s} couldn't find something important for ages, what was it?"),
        ("single", "main", "what did {s} lose that had them tearing the house apart?"),
        (
            "single",
            "update",
            "did {s}'s {item} ever show up in the end? where was it hiding?",
        ),
        ("single", "update", "where'd {s} find their {item} in the end, somewhere wierd?"),
        (
            "multi",
            "main+update",
            "what's the deal with {s} and the {item}, like the whole thing, losing it and then "
            "finding it?",
        ),
        (
            "multi",
            "main+update",
            "give me the full story of {s}'s {item} going missing and coming back",
        ),
        ("temporal", "main", "when did {s}'s {item} go walkabout? feels like ages ago"),
        ("temporal", "main", "roughly when was {s} panicking about their {item}?"),
    ],
    "phone": [
        ("single", "main", "what kind of mobile did {s} end up going for?"),
        (
            "single",
            "main",
            "why did {s} ditch their old mobile? something happened to it I think",
        ),
        (
            "single",
            "main",
            "so {s} got a new phone, which one? the camera's meant to be amazing",
        ),
        ("inference", "main", "any new toys for {s} lately, like techy stuff?"),
        ("inference", "main", "has {s} splashed out on anything electronic lately?"),
    ],
    "grandparent": [
        (
            "single",
            "main",
            "how old is {s}'s {elder_rel} now? I know they just had a big birthday",
        ),
        (
            "single",
            "main",
            "where did {s}'s family have {elder}'s do? some club or something?",
        ),
        (
            "single",
            "main",
            "remind me what age {elder} hit, {s} was telling me about the birthday",
        ),
        (
            "inference",
            "main",
            "does {s} still have a really old relative around? I think someone hit a big number",
        ),
        ("inference", "main", "are any of {s}'s family really getting on a bit, age-wise?"),
        ("temporal", "main", "when was {elder}'s big birthday thing that {s} went to?"),
        (
            "temporal",
            "main",
            "roughly when did {s}'s {elder_rel} have their birthday knees-up?",
        ),
    ],
    "exhibition": [
        (
            "single",
            "main",
            "where's {s}'s picture show going to be? they invited me to the opening",
        ),
        (
            "single",
            "main",
            "what are {s}'s pictures of, the ones going up on a wall somewhere?",
        ),
        ("single", "main", "so {s}'s got an exibition coming up, where is it?"),
        (
            "inference",
            "main",
            "does {s} do camera stuff semi-professionally or just for fun?",
        ),
        (
            "inference",
            "main",
            "is {s} an arty type, like the type who gets their work shown?",
        ),
    ],
    "donation": [
        ("single", "main", "what cause did {s} chip in to instead of treating themselves?"),
        (
            "single",
            "main",
            "how much did {s} hand over to that charity, and which one was it?",
        ),
        ("inference", "main", "does {s} ever chuck money at worthy causes?"),
        ("inference", "main", "is {s} the type to give stuff away to help people out?"),
    ],
    "appointment": [
        (
            "single",
            "main",
            "has {s} got a date for the {thing} yet or are they still putting it off?",
        ),
        (
            "single",
            "main",
            "quick one, when's {s} seeing the {alt}? they kept saying they'd book it",
        ),
        (
            "single",
            "main",
            "did {s} ever finally get the {thing} in the calender? what day",
        ),
    ],
    "pottery": [
        ("single", "main", "what was {s}'s first creation at the ceramics thing?"),
        ("single", "main", "what night is {s}'s clay class, I wanted to invite them out"),
        ("single", "main", "where does {s} go for their pottery sessions, some studio?"),
        ("inference", "main", "has {s} got a messy creative hobby going?"),
        ("inference", "main", "is {s} doing any kind of making-things hobby these days?"),
    ],
    "jury": [
        ("single", "main", "which court did {s} have to go to for the jury thing?"),
        ("single", "main", "where's {s} doing their civic duty, the trial stuff?"),
        ("inference", "main", "was {s} stuck doing something for the courts recently?"),
        (
            "inference",
            "main",
            "has {s} had to do any official duties, like the legal kind, lately?",
        ),
        ("temporal", "main", "when was {s} on that jury, roughly?"),
        (
            "temporal",
            "main",
            "when did {s} get called in to sit on a jury? ages ago?",
        ),
    ],
    "quiz": [
        ("single", "main", "what's {s}'s trivia team called? I know it's a pun"),
        ("single", "main", "which pub did {s} win that quiz night at?"),
        (
            "single",
            "main",
            "{s}'s lot won something at a quiz, what did they call themselves?",
        ),
        ("inference", "main", "is {s} a bit of a brainbox when it comes to trivia?"),
        ("inference", "main", "would {s} be good to have on my team for a quiz night?"),
    ],
    "tv": [
        ("multi", "all", "what's {s} been watching nonstop lately? I need recommendations"),
        ("multi", "all", "remind me what series {s} told me to watch, there were a few"),
        ("multi", "all", "{s} is always going on about some telly, what shows were they?"),
        (
            "temporal",
            "month",
            "what was {s} watching back in {month} {year}, some series they couldn't put down?",
        ),
        ("temporal", "month", "sometime around {mon} {year} {s} got into a show, what was it?"),
        ("temporal", "ago", "{s} was raving about some telly thing {ago} or so, what was it?"),
        ("temporal", "ago", "which show was {s} obsessed with, {ago} give or take?"),
    ],
    "restaurant": [
        ("multi", "all", "where's {s} been eating out lately? I want some new places"),
        (
            "multi",
            "all",
            "so {s} has tried a bunch of restaurants, which ones? I need ideas for a date night",
        ),
        (
            "multi",
            "all",
            "which resturants has {s} been to? they always know the good spots",
        ),
        (
            "single",
            "favourite",
            "what's {s}'s number one place to eat, the one they keep going back to?",
        ),
        (
            "single",
            "favourite",
            "where would {s} take me if I asked for their top food spot?",
        ),
        (
            "temporal",
            "month",
            "sometime around {month} {year} {s} went out for dinner somewhere, where was it?",
        ),
        ("temporal", "month", "where did {s} eat back in {mon} {year}? I think they liked it"),
        ("temporal", "ago", "where did {s} go for food {ago} or so?"),
        ("temporal", "ago", "what was the place {s} went to for a meal {ago}, roughly?"),
    ],
    "birds": [
        (
            "multi",
            "all",
            "{s} keeps telling me about birds they've seen, which ones were they?",
        ),
        ("multi", "all", "remind me which birds {s} got to see, they were so chuffed"),
        ("inference", "all", "is {s} into twitching, like properly?"),
        ("inference", "all", "does {s} like nature stuff, like looking out for wildlife?"),
        (
            "temporal",
            "month",
            "what bird did {s} get all excited about back in {month} {year}?",
        ),
        ("temporal", "month", "around {mon} {year}, {s} saw some bird, which was it?"),
        ("temporal", "ago", "{s} saw some bird {ago} or so I think, what was it?"),
        ("temporal", "ago", "which bird had {s} all giddy {ago}?"),
    ],
    "boardgame": [
        ("multi", "all", "what does {s} play when people come over? like the table games"),
        (
            "multi",
            "all",
            "which games has {s} had out on their game nights, I wanna buy one",
        ),
        ("inference", "all", "does {s} have people round a lot for evenings in?"),
        ("inference", "all", "is {s} big on nights in with friends, playing stuff?"),
        (
            "temporal",
            "month",
            "{s} had friends over to play something around {month} {year}, which game?",
        ),
        (
            "temporal",
            "month",
            "what game did {s} and co have on the go back in {mon} {year}?",
        ),
        ("temporal", "ago", "what did {s} and co play {ago} or so?"),
        (
            "temporal",
            "ago",
            "{s} had a games evening {ago}, give or take, what was it they played?",
        ),
    ],
    "swimming": [
        ("multi", "all", "where's {s} been going in the water, the freezing outdoor stuff?"),
        ("multi", "all", "where all has {s} jumped in outdoors? I wanna try one"),
        (
            "inference",
            "all",
            "is {s} one of those people who jumps in freezing water for fun?",
        ),
        (
            "inference",
            "all",
            "does {s} do much outdoorsy exercise, like in lakes and the sea?",
        ),
        ("temporal", "month", "where'd {s} go in the water around {month} {year}?"),
        (
            "temporal",
            "month",
            "back in {mon} {year} {s} went for a swim somewhere chilly, where was that?",
        ),
        ("temporal", "ago", "{s} went for a chilly swim {ago} or so, where was that?"),
        ("temporal", "ago", "where was {s} splashing about, {ago} or thereabouts?"),
    ],
}
assert set(SPOKEN_QUESTIONS) == set(QUESTIONS), set(QUESTIONS) ^ set(SPOKEN_QUESTIONS)
for _kind, _templates in SPOKEN_QUESTIONS.items():
    # The same facts, asked in the same (kind, roles) as dev: only the wording is new.
    assert {t[:2] for t in _templates} == {t[:2] for t in QUESTIONS[_kind]["diary-dev"]}, _kind
    QUESTIONS[_kind]["diary-spoken"] = _templates

_COUNTS = ["", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]


def _ago(when: datetime, newest: datetime) -> str:
    """A span counted back from the pair's newest session, as people say it."""
    days = (newest - when).days
    if days < 10:
        return "last week"
    if days < 46:
        return "last month"
    months = round(days / 30.44)
    if months >= 11:
        return "about a year ago"
    return f"{_COUNTS[months]} months ago"


@dataclass
class _Asked:
    question: Question
    owner: str
    answers: list[str]  # per evidence turn, the value it must say


def _evidence(parts: list[Part], role: str) -> tuple[list[tuple[str, int]], list[str]]:
    where: list[tuple[str, int]] = []
    answers: list[str] = []
    for part in parts:
        if role in part.marks:
            index, answer = part.marks[role]
            where.append((part.key, part.start + index))
            answers.append(answer)
    return where, answers


def _ask(
    rng: random.Random, facts: list[Fact], newest: dict[str, datetime], batch: str
) -> list[_Asked]:
    out: list[_Asked] = []
    seen: set[str] = set()

    def add(
        kind: str, text: str, where: list[tuple[str, int]], answers: list[str], f: Fact
    ) -> None:
        # Two values of a series in one month give the same question once, with both.
        if text not in seen and where:
            seen.add(text)
            out.append(_Asked(Question(batch, kind, text, where, f.kind), f.owner.name, answers))

    for fact in facts:
        groups: dict[tuple[str, str], list[str]] = {}
        for kind, roles, text in QUESTIONS[fact.kind][batch]:
            groups.setdefault((kind, roles), []).append(text)
        slots = {**fact.slots, "s": fact.owner.name}
        last = newest[fact.owner.name]
        for (kind, roles), texts in groups.items():
            text = rng.choice(texts)
            if roles in ("month", "ago"):
                continue  # asked per value below
            where: list[tuple[str, int]] = []
            answers: list[str] = []
            for role in ("main" if roles == "all" else roles).split("+"):
                w, a = _evidence(fact.parts, role)
                where += w
                answers += a
            stated = [p for p in fact.parts if any(r in p.marks for r in roles.split("+"))]
            at = stated[0].when if stated else START
            filled = text.format(
                **slots,
                month=MONTHS[at.month - 1],
                mon=MONTHS[at.month - 1][:3],
                year=at.year,
                ago=_ago(at, last),
            )
            add(kind, filled, where, answers, fact)
        if not fact.series:
            continue
        styles = [(r, t) for (k, r), t in groups.items() if k == "temporal"]
        for part in fact.parts:
            role, texts = rng.choice(styles)
            when = part.when

            def same(
                p: Part, role: str = role, when: datetime = when, last: datetime = last
            ) -> bool:
                if role == "month":
                    return (p.when.year, p.when.month) == (when.year, when.month)
                return _ago(p.when, last) == _ago(when, last)

            hits = [p for p in fact.parts if same(p)]
            where, answers = _evidence(hits, "main")
            filled = rng.choice(texts).format(
                **slots,
                month=MONTHS[when.month - 1],
                mon=MONTHS[when.month - 1][:3],
                year=when.year,
                ago=_ago(when, last),
            )
            add("temporal", filled, where, answers, fact)
    return out


def build_diary(seed: int) -> tuple[list[Session], dict[str, list[Question]]]:
    """Sessions (in time order) and questions per batch.

    Returns the sessions and {"diary-dev": [...], "diary-test": [...], "diary-fresh": [...],
    "diary-spoken": [...]}.
    """
    rng = random.Random(seed)
    sessions, facts = _build_archive(rng)
    by_key = {s.key: s for s in sessions}
    newest: dict[str, datetime] = {}
    for s in sessions:
        for p in PAIRS[s.pair]:
            newest[p.name] = max(newest.get(p.name, s.when), s.when)
    batches: dict[str, list[Question]] = {}
    for batch in BATCHES:
        # dev and test share the archive's stream, as they always have; diary-fresh and
        # diary-spoken, written later, each draw from a stream of their own, so that neither
        # changes any other batch's questions and no other batch changes theirs.
        picks = rng if batch in ("diary-dev", "diary-test") else random.Random(f"{seed}/{batch}")
        asked = _ask(picks, facts, newest, batch)
        for item in asked:
            q = item.question
            assert "{" not in q.text and item.owner in q.text and q.evidence, q
            for (key, index), answer in zip(q.evidence, item.answers, strict=True):
                turn = by_key[key].turns[index]
                # The evidence is exact: the owner's own turn, saying the answer.
                assert turn.speaker == item.owner, (q.text, turn)
                assert answer.lower() in turn.text.lower(), (q.text, answer, turn.text)
        batches[batch] = [item.question for item in asked]
    return sessions, batches


# -- a look by eye ------------------------------------------------------------------------------


def _content_words(text: str) -> set[str]:
    return {w for w in (w.lower() for w in _WORD.findall(text)) if w not in BASELINE_STOPWORDS}


def lexical(q: Question, sessions: list[Session]) -> bool:
    """Whether every content word of the question is in its evidence turns (as recall.py
    counts it: the turns as stored, ``Name: text``)."""
    by_key = {s.key: s for s in sessions}
    have: set[str] = set()
    for key, index in q.evidence:
        have |= {w.lower() for w in _WORD.findall(by_key[key].turns[index].content())}
    words = _content_words(q.text)
    return bool(words) and words <= have


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=DIARY_SEED)
    parser.add_argument("--examples", type=int, default=3)
    args = parser.parse_args(argv)
    sessions, batches = build_diary(args.seed)
    by_key = {s.key: s for s in sessions}
    turns = sum(len(s.turns) for s in sessions)
    first, last = min(s.when for s in sessions), max(s.when for s in sessions)
    sizes = [len(s.turns) for s in sessions]
    print(
        f"sessions {len(sessions)}, messages {turns} ({min(sizes)}-{max(sizes)} a session), "
        f"{first:%Y-%m-%d} to {last:%Y-%m-%d}, "
        f"{len({f for qs in batches.values() for f in (q.fact for q in qs)})} kinds of facts"
    )
    for batch, qs in batches.items():
        kinds = Counter(q.kind for q in qs)
        share = sum(lexical(q, sessions) for q in qs) / len(qs)
        counts = ", ".join(f"{k} {kinds[k]}" for k in ("single", "multi", "temporal", "inference"))
        print(f"\n{batch}: {len(qs)} questions ({counts}); lexical {share:.2f}")
        for kind in ("single", "multi", "temporal", "inference"):
            of_kind = [q for q in qs if q.kind == kind]
            # Spread over the list, so that the examples come from several pairs and facts.
            step = max(1, len(of_kind) // max(1, args.examples))
            for q in of_kind[::step][: args.examples]:
                print(f"  [{kind}/{q.fact}] {q.text}")
                for key, index in q.evidence:
                    print(
                        f"      {key}#{index} ({by_key[key].when:%Y-%m-%d}) "
                        f"{by_key[key].turns[index].content()}"
                    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
