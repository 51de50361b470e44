"""English words whose forms Porter's stems keep apart: irregular verbs and plurals.

A question is asked in the present ("What did Jon buy?", "When did Gina go to Lisbon?") and
the answer was told in the past ("I bought a Subaru", "We went to Lisbon"). Porter's stemmer
works on endings, so "buy" and "bought", "go" and "went", "child" and "children" stay apart,
and the stemmed index finds only the form the question typed. These families are the closed
class of English where that happens: about 140 verbs whose past or participle is not made
with "-ed", and the nouns whose plural is not made with "-s". ``other_forms`` gives a word's
family members that its stem does not already match; the ranking counts them as another form
of the word (below the form as typed), never as the word itself.

Left out are forms that are mostly another word in conversation ("rose", "ground", "wound",
"bore", "fell", "lay", "spoke" as nouns or other verbs), where a question about the flower or
the floor would match every "rise" and "grind".
"""

from __future__ import annotations

from functools import lru_cache

from engine.sessions.words import FILLER, stem

# base past participle (one family a line; "-" where a form is the base's own, "/" between
# spellings). Verbs whose forms all share the base's stem (put, cut, set) are not here, nor
# those whose every form is filler (be, do, have, get, say: see words.py).
_VERBS = """
arise arose arisen
awake awoke awoken
beat - beaten
become became become
begin began begun
bend bent bent
bind bound bound
bite bit bitten
bleed bled bled
blow blew blown
break broke broken
breed bred bred
bring brought brought
build built built
burn burnt burnt
buy bought bought
catch caught caught
choose chose chosen
cling clung clung
come came come
creep crept crept
deal dealt dealt
dig dug dug
dive dove -
draw drew drawn
dream dreamt dreamt
drink drank drunk
drive drove driven
dwell dwelt dwelt
eat ate eaten
feed fed fed
feel felt felt
fight fought fought
find found found
flee fled fled
fling flung flung
fly flew flown
forbid forbade forbidden
foresee foresaw foreseen
forget forgot forgotten
forgive forgave forgiven
freeze froze frozen
give gave given
go went gone
grow grew grown
hang hung hung
hear heard heard
hide hid hidden
hold held held
keep kept kept
kneel knelt knelt
know knew known
lead led led
lean leant leant
leap leapt leapt
learn learnt learnt
leave left left
lend lent lent
light lit lit
lose lost lost
make made made
mean meant meant
meet met met
mislead misled misled
mistake mistook mistaken
overcome overcame overcome
oversleep overslept overslept
overtake overtook overtaken
pay paid paid
prove - proven
rebuild rebuilt rebuilt
redo redid redone
rewrite rewrote rewritten
ride rode ridden
ring rang rung
rise - risen
run ran run
see saw seen
seek sought sought
sell sold sold
send sent sent
sew - sewn
shake shook shaken
shine shone shone
shoot shot shot
show - shown
shrink shrank shrunk
sing sang sung
sink sank sunk
sit sat sat
sleep slept slept
slide slid slid
sling slung slung
smell smelt smelt
sow - sown
speak - spoken
speed sped sped
spell spelt spelt
spend spent spent
spill spilt spilt
spin spun spun
spit spat spat
spoil spoilt spoilt
spring sprang sprung
stand stood stood
steal stole stolen
stick stuck stuck
sting stung stung
stink stank stunk
stride strode stridden
strike struck struck
string strung strung
strive strove striven
swear swore sworn
sweep swept swept
swell - swollen
swim swam swum
swing swung swung
take took taken
teach taught taught
tear tore torn
tell told told
think thought thought
throw threw thrown
tread trod trodden
undergo underwent undergone
understand understood understood
undertake undertook undertaken
undo undid undone
wake woke woken
wear wore worn
weave wove woven
weep wept wept
win won won
withdraw withdrew withdrawn
wring wrung wrung
write wrote written
"""

# singular plural ("/" between spellings)
_NOUNS = """
analysis analyses
calf calves
child children
crisis crises
diagnosis diagnoses
foot feet
goose geese
half halves
knife knives
leaf leaves
life lives
loaf loaves
man men
mouse mice
ox oxen
person people
scarf scarves
self selves
shelf shelves
thesis theses
thief thieves
tooth teeth
wife wives
wolf wolves
woman women
"""

# A verb made from an irregular one with a prefix is irregular the same way: "underpay",
# "underpaid"; "rebuild", "rebuilt"; "withhold", "withheld". Longest first.
_PREFIXES = ("under", "over", "with", "fore", "mis", "out", "re", "un", "up")
_MIN_REST = 3  # letters after the prefix: "re" + "d" is no verb

# Irregular forms that are mostly other words in a chat; kept out of every family.
_MOSTLY_OTHER = frozenset({"rose", "ground", "wound", "bore", "fell", "lay", "spoke", "lives"})


def _families() -> list[frozenset[str]]:
    families = []
    for block, width in ((_VERBS, 3), (_NOUNS, 2)):
        for line in block.strip().splitlines():
            parts = line.split()
            assert len(parts) == width, line
            base = parts[0]
            forms = {base}
            for part in parts[1:]:
                forms.update(base if spelling == "-" else spelling for spelling in part.split("/"))
            families.append(frozenset(forms - _MOSTLY_OTHER))
    return families


@lru_cache(maxsize=1)
def _by_stem() -> dict[str, frozenset[str]]:
    """Each stem of a family member, to everything in the families that stem belongs to."""
    found: dict[str, set[str]] = {}
    for family in _families():
        for form in family:
            found.setdefault(stem(form), set()).update(family)
    return {key: frozenset(forms) for key, forms in found.items()}


@lru_cache(maxsize=4096)
def other_forms(word: str) -> frozenset[str]:
    """The forms of ``word``'s family that its own stem does not match ("buy": bought;
    "children": child; "went": go, gone). Empty for a word of no such family."""
    own = stem(word)
    family = _by_stem().get(own)
    if family is None:
        for prefix in _PREFIXES:
            rest = word[len(prefix) :]
            if word.startswith(prefix) and len(rest) >= _MIN_REST and stem(rest) in _by_stem():
                return frozenset(prefix + form for form in other_forms(rest))
        return frozenset()
    # Filler is never searched for: "won" is the "won" of "won't" as the index splits it.
    return frozenset(form for form in family if stem(form) != own and form not in FILLER)
