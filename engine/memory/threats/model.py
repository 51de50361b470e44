"""The model layer: a small linear classifier for what no rule or signal names.

A logistic regression over word unigrams and bigrams of the normalised text decides whether an
entry reads like an attack; a second, multinomial one picks its category. Both are trained by
``tests/data/threats/train/train_model.py`` on the training set only (never on the held-out
set) and their weights live beside this file in ``model.json``. Scoring is plain Python — a few
dozen dictionary look-ups — so the layer costs microseconds and needs no numerical library at
run time. It runs only when no other layer has found anything, and its threshold is set on the
training data for very few false positives: it is a last line, not the main one.
"""

from __future__ import annotations

import functools
import itertools
import json
import re
from pathlib import Path

from engine.memory.threats import concepts

WEIGHTS = Path(__file__).with_name("model.json")
CLASSES = ("injection", "exfiltration", "persistence", "obfuscation")
# The model abstains on text it knows too little about (another language, a list of names).
_MIN_EVIDENCE = 4
# ...and on fragments of fewer distinct words: a config line ("api_key: ${OPENAI_API_KEY}") is
# not a sentence it was trained to read.
_MIN_WORDS = 4
# ...and on shell command lines, which the rules and signals judge by their structure (what is
# read, where it is sent); as words, every command looks like the training set's attacks.
_COMMAND = re.compile(
    r"""[\s$>#`(]*(?:sudo\s+)?(?:rm|cp|mv|cat|curl|wget|ssh|scp|rsync|git|docker|kubectl|npm|npx
    |pip|pipx|uv|python3?|node|echo|printf|ls|cd|make|tar|chmod|chown|find|grep|sed|awk|export
    |source|systemctl|crontab|brew|apt|apt-get|dnf|yum|pacman|terraform|helm|go|cargo|dd|mkdir
    |touch|tee|ln|kill|psql|mysql|redis-cli|openssl|gpg|base64|nc|ncat|powershell|pwsh|iwr|irm
    |bash|sh|zsh|fish|env|exec|eval|cmd|wsl|sqlite3|ruby|perl|java|dotnet|ffmpeg|rclone|aws|gcloud
    |az)
    (?:\s|$)""",
    re.VERBOSE,
)
# ...but "make", "find", "source" and "touch" begin English sentences too: a command line also
# carries a flag, a path, a variable, a pipe or a redirection.
_SHELLISH = re.compile(r"(?:^|\s)--?\w|[/~$|>&;=`]")
_TOKEN = re.compile(r"[^\W\d_]+|[^\w\s]")
_KEPT_MARKS = frozenset("$|@/<>`")
_MAX_TOKENS = 160


# Which host a URL names is arbitrary; that there is one is what matters.
_URL = re.compile(r"\b(?:https?|ftp)://[^\s)\]}>\"']+|\bwww\.[^\s)\]}>\"']+")
_HOST = re.compile(r"\b[\w-]{1,63}(?:\.[\w-]{1,63}){1,4}\.[a-z]{2,12}\b")


_HOSTISH = re.compile(
    r"://|www\.|\.(?:com|net|org|io|xyz|ru|cn|tk|top|site|online|app|dev|info|biz|me|co|cc|sh"
    r"|ai|cloud|link|pw|zip|example|test|local|internal|invalid)\b"
)


# The tokens :func:`tokens` keeps, found directly: a text of at most _MAX_TOKENS characters has
# at most that many raw tokens, so none is cut off and filtering afterwards gives the same list.
_KEPT_TOKEN = re.compile(r"[^\W\d_]{2,}|[$|@/<>`]")


def tokens(lc: str) -> list[str]:
    """Word, number and punctuation tokens of a normalised, lower-cased text."""
    if "." in lc and _HOSTISH.search(lc):
        lc = _HOST.sub(" host ", _URL.sub(" url ", lc))
    if len(lc) <= _MAX_TOKENS:
        return _KEPT_TOKEN.findall(lc)
    # Numbers and single letters ("w0", a hash split apart) tell nothing about intent.
    # Brackets, dots and commas are how notes are formatted, not what they ask for.
    return [t for t in _TOKEN.findall(lc)[:_MAX_TOKENS] if len(t) > 1 or t in _KEPT_MARKS]


# Scripts written without spaces: one "word" token is a whole clause, so character pairs are
# what the model reads there.
_UNSPACED = re.compile("[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff\u0e00-\u0e7f]+")


def _unspaced_grams(lc: str) -> list[str]:
    grams: list[str] = []
    for run in _UNSPACED.findall(lc):
        grams.extend(run[i : i + 2] for i in range(len(run) - 1))
    return grams[:_MAX_TOKENS]


def concept_features(toks: list[str], lc: str, marks: tuple[str, ...] = ()) -> list[str]:
    """Language-independent features: concepts named, every pair of them, structural marks."""
    return list(_concept_names(frozenset(concepts.concepts(toks, lc)), marks))


@functools.lru_cache(maxsize=4096)
def _concept_names(found: frozenset[str], marks: tuple[str, ...]) -> tuple[str, ...]:
    ordered = sorted(found)
    feats = [f"c:{c}" for c in ordered]
    feats.extend(f"k:{a}&{b}" for a, b in itertools.combinations(ordered, 2))
    feats.extend(f"m:{m}" for m in marks)
    return tuple(feats)


def features(lc: str, marks: tuple[str, ...] = ()) -> list[str]:
    """Feature names of a text (the training script's view of what :func:`judge` scores)."""
    toks = tokens(lc)
    feats = [f"w:{t}" for t in toks]
    feats.extend(f"b:{a} {b}" for a, b in itertools.pairwise(toks))
    if not lc.isascii():
        feats.extend(f"g:{g}" for g in _unspaced_grams(lc))
    feats.extend(concept_features(toks, lc, marks))
    return feats


class _Model:
    def __init__(self, data: dict) -> None:  # type: ignore[type-arg]
        self.bias: float = data["bias"]
        self.threshold: float = data["threshold"]
        self.weights: dict[str, float] = data["weights"]
        self.cat_bias: list[float] = data["cat_bias"]
        self.cat_weights: dict[str, list[float]] = data["cat_weights"]
        self.classes: list[str] = data["classes"]
        # Scoring looks tokens up directly instead of building feature strings: unigram weights
        # by token, bigram weights by the pair of tokens. Each entry holds the weight and whether
        # it counts as evidence (a positive weight on words, not on punctuation), decided once
        # here instead of on every scored statement.
        self.uni: dict[str, tuple[float, bool]] = {}
        self.bi: dict[tuple[str, str], tuple[float, bool]] = {}
        self.other: dict[str, tuple[float, bool]] = {}
        for name, weight in self.weights.items():
            kind, _, rest = name.partition(":")
            if kind == "w":
                self.uni[rest] = (weight, weight > 0 and rest.isalpha())
            elif kind == "b":
                first, _, second = rest.partition(" ")
                positive = weight > 0 and first.isalpha() and second.isalpha()
                self.bi[first, second] = (weight, positive)
            else:
                self.other[name] = (weight, weight > 0)

    def score(self, toks: list[str], extra: list[str]) -> tuple[float, int]:
        """The logit, and how many features with a positive weight took part."""
        # The terms are added in the same order as the features are listed (extra, unigrams,
        # bigrams; each in set order), so the sum is the same float as the training script's.
        z = self.bias
        evidence = 0
        for table, keys in (
            (self.other, set(extra)),
            (self.uni, set(toks)),
            (self.bi, set(itertools.pairwise(toks))),
        ):
            get = table.get
            for key in keys:
                hit = get(key)  # type: ignore[arg-type]
                if hit is not None:
                    z += hit[0]
                    evidence += hit[1]
        return z, evidence

    def category(self, feats: list[str]) -> str:
        scores = list(self.cat_bias)
        for f in set(feats):
            row = self.cat_weights.get(f)
            if row is not None:
                scores = [s + w for s, w in zip(scores, row, strict=True)]
        return self.classes[max(range(len(scores)), key=scores.__getitem__)]


@functools.cache
def _load() -> _Model | None:
    try:
        return _Model(json.loads(WEIGHTS.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError):
        # A missing or damaged weights file must not stop scanning: the other layers still run.
        return None


def vocabulary() -> frozenset[str]:
    """The words the model has a weight for (empty when the weights cannot be read)."""
    loaded = _load()
    return frozenset(w for w in loaded.uni if w.isalpha()) if loaded is not None else frozenset()


def _abstains(lc: str, toks: list[str], grams: list[str]) -> bool:
    """Text the model does not judge: a command line, or too few words to read."""
    if _COMMAND.match(lc) and _SHELLISH.search(lc):
        return True
    return len({t for t in toks if t.isalpha()}) + len(grams) // 3 < _MIN_WORDS


def abstains(lc: str) -> bool:
    """Whether :func:`judge` leaves ``lc`` alone whatever its score (for the training script)."""
    return _abstains(lc, tokens(lc), _unspaced_grams(lc) if not lc.isascii() else [])


# Text hidden from whoever reads the entry (an HTML comment, a sentence inside an encoding) has
# no business reading like an instruction at all, so it is held to a lower bar: a logit this far
# below the threshold.
HIDDEN_SLACK = 1.5


def judge(lc: str, marks: tuple[str, ...] = (), slack: float = 0.0) -> str | None:
    """The attack category the model sees in ``lc``, or None when it reads as benign.

    ``slack`` lowers the threshold, for text that is hidden from the reader.
    """
    model = _load()
    if model is None:
        return None
    toks = tokens(lc)
    grams = _unspaced_grams(lc) if not lc.isascii() else []
    if _abstains(lc, toks, grams):
        return None
    extra = [f"g:{g}" for g in grams]
    extra.extend(concept_features(toks, lc, marks))
    z, evidence = model.score(toks, extra)
    if z < model.threshold - slack or evidence < _MIN_EVIDENCE:
        return None
    return model.category(features(lc, marks))
