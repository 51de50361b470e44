"""Telling an environment variable's name from a key pasted where the name belongs.

``model.api_key_env`` names the variable that holds the key; the key itself must never reach
config.yaml, which is shared between tools and backed up in plain text. A token such as
``ghp_…`` is a valid variable name by shape, so shape alone cannot refuse it: a value is
taken for a key when it starts like the keys providers issue, or when it is long and reads
like random characters rather than words.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter

# Prefixes of keys and tokens as their issuers format them (case-sensitive where the issuer's
# are); a variable named like one of these is far less likely than a pasted key.
KEY_PREFIXES = (
    "sk-",  # OpenAI, Anthropic (sk-ant-), OpenRouter (sk-or-), DeepSeek …
    "sk_",  # Stripe-style secret keys
    "rk_",
    "pk_",
    "ghp_",  # GitHub: personal, OAuth, user-to-server, server-to-server, refresh
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "glpat-",  # GitLab
    "xoxb-",  # Slack
    "xoxp-",
    "xoxa-",
    "xoxs-",
    "hf_",  # Hugging Face
    "AKIA",  # AWS access key ids
    "ASIA",
    "AIza",  # Google API keys
    "gsk_",  # Groq
    "pplx-",  # Perplexity
    "r8_",  # Replicate
    "nvapi-",  # NVIDIA
    "eyJ",  # a JWT's encoded header
)
# A run of characters this long with no separator is no word a variable name is made of.
RANDOM_MIN_RUN = 20
# Shannon entropy, in bits per character, from which such a run reads as random (20+ random
# alphanumerics land near 4 and above; a long run of one repeated word stays well below).
RANDOM_MIN_BITS = 3.5
# Letter/digit (and lower/upper) alternations per character from which a value reads as random:
# names put digits at the end of a word (KEY_2, V2), keys scatter them throughout.
RANDOM_MIN_ALTERNATION = 0.25


def _bits_per_char(value: str) -> float:
    counts = Counter(value)
    total = len(value)
    return -sum(n / total * math.log2(n / total) for n in counts.values())


def _class(char: str) -> str:
    if char.isdigit():
        return "d"
    return "u" if char.isupper() else "l"


def _alternations(run: str) -> int:
    return sum(1 for a, b in itertools.pairwise(run) if _class(a) != _class(b))


def looks_like_secret(value: str) -> bool:
    """Whether ``value`` looks like a key or token rather than a variable's name."""
    value = value.strip()
    if value.startswith(KEY_PREFIXES) and len(value) >= 8:
        return True
    if len(value) < 16:
        return False
    runs = [run for run in re.split(r"[_\-.]", value) if run]
    for run in runs:
        mixed = any(c.isdigit() for c in run) or _alternations(run) >= 4
        if len(run) >= RANDOM_MIN_RUN and mixed and _bits_per_char(run) >= RANDOM_MIN_BITS:
            return True
    return sum(_alternations(run) for run in runs) / len(value) >= RANDOM_MIN_ALTERNATION


def refuse_secret_message(option: str = "--api-key-env") -> str:
    """The error for a key given where a variable's name belongs (the value is not echoed)."""
    return (
        f"{option} takes the NAME of an environment variable holding the key (like "
        "OPENROUTER_API_KEY), not the key itself; what was given looks like a key, so it was "
        "not saved. Run `export MY_API_KEY=<your key>` and pass --api-key-env MY_API_KEY"
    )
