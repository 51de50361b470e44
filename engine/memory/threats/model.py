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
import math
import re
from pathlib import Path

WEIGHTS = Path(__file__).with_name("model.json")
CLASSES = ("injection", "exfiltration", "persistence", "obfuscation")
# The model abstains on text it knows too little about (another language, a list of names).
_MIN_EVIDENCE = 3
_TOKEN = re.compile(r"[^\W\d_]+|[0-9]+|[^\w\s]")
_MAX_TOKENS = 160


# Which host a URL names is arbitrary; that there is one is what matters.
_URL = re.compile(r"\b(?:https?|ftp)://[^\s)\]}>\"']+|\bwww\.[^\s)\]}>\"']+")
_HOST = re.compile(r"\b[\w-]{1,63}(?:\.[\w-]{1,63}){1,4}\.[a-z]{2,12}\b")


def features(lc: str) -> list[str]:
    """Feature names of a normalised, lower-cased text (shared with the training script)."""
    if "." in lc:
        lc = _HOST.sub(" host ", _URL.sub(" url ", lc))
    tokens = ["0" if t[0].isdigit() else t for t in _TOKEN.findall(lc)[:_MAX_TOKENS]]
    feats = [f"w:{t}" for t in tokens]
    feats.extend(f"b:{a} {b}" for a, b in itertools.pairwise(tokens))
    return feats


class _Model:
    def __init__(self, data: dict) -> None:  # type: ignore[type-arg]
        self.bias: float = data["bias"]
        self.threshold: float = data["threshold"]
        self.weights: dict[str, float] = data["weights"]
        self.cat_bias: list[float] = data["cat_bias"]
        self.cat_weights: dict[str, list[float]] = data["cat_weights"]
        self.classes: list[str] = data["classes"]

    def logit(self, feats: list[str]) -> float:
        get = self.weights.get
        return self.bias + sum(get(f, 0.0) for f in set(feats))

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


def probability(lc: str) -> float:
    model = _load()
    if model is None:
        return 0.0
    z = model.logit(features(lc))
    return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))


def judge(lc: str) -> str | None:
    """The attack category the model sees in ``lc``, or None when it reads as benign."""
    model = _load()
    if model is None:
        return None
    feats = features(lc)
    z = model.logit(feats)
    if z < model.threshold:
        return None
    if sum(1 for f in set(feats) if model.weights.get(f, 0.0) > 0) < _MIN_EVIDENCE:
        return None
    return model.category(feats)
