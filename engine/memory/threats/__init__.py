"""Threat scanner for persistent memory entries and everything else that reaches the prompt.

Memory entries are injected into the system prompt of every future session, so an entry that is
really an instruction ("ignore previous instructions", "curl $API_KEY to ...") would let whoever
planted it steer every later session. Every write is scanned before it is accepted and entries on
disk are scanned again at load; any finding blocks the entry.

The scanner judges in layers, and every finding names the layer that produced it:

- ``rules`` (:mod:`.rules`): named patterns on a normalised copy of the text (NFKC, look-alike
  letters folded, invisible characters removed), with a map back into the original text;
- ``normalise`` (:mod:`.unfold`): disguises undone — leetspeak, letters split by separators or
  string concatenation, padding characters, and base64/base32/hex/ROT13/URL/morse segments
  decoded — and the result scanned again;
- ``signals`` (:mod:`.signals`): structure rather than phrases — an instruction addressed to the
  assistant combined with an override, secrecy, role, exfiltration or persistence target; a
  network sink next to data nouns; shell verbs on sensitive paths; secret formats;
- ``model`` (:mod:`.model`): a small linear classifier over word and character n-grams that
  scores what no rule names.

Importing this module is cheap: the detectors are imported (and their patterns compiled) on the
first scan, so commands that only read or list memory do not pay for them.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from types import ModuleType

from engine.memory.threats.verdict import (
    BLOCKED_PREFIX,
    CATEGORIES,
    LAYERS,
    Finding,
    Verdict,
    placeholder,
)

__all__ = [
    "BLOCKED_PREFIX",
    "CATEGORIES",
    "LAYERS",
    "Finding",
    "Verdict",
    "iter_rule_ids",
    "placeholder",
    "scan",
]

_CLEAN = Verdict(blocked=False, findings=[])


@functools.cache
def _pipeline() -> ModuleType:
    from engine.memory.threats import pipeline

    return pipeline


def scan(text: str) -> Verdict:
    """Scan one entry; ``blocked`` is True if anything at all was found."""
    if not isinstance(text, str):
        raise TypeError(f"scan() expects str, not {type(text).__name__}")
    if len(text) <= _CACHED_CHARS:
        return _scan_cached(text)
    return _scan_uncached(text)


def _scan_uncached(text: str) -> Verdict:
    findings = _pipeline().findings(text)
    if not findings:
        return _CLEAN
    return Verdict(blocked=True, findings=findings)


# The same entries are scanned again and again: at every session start, on approval replays,
# by the desktop client. Verdicts are immutable, so they can be shared; only entry-sized texts
# are kept, so the cache stays a few megabytes at most.
_CACHED_CHARS = 4096
_scan_cached = functools.lru_cache(maxsize=1024)(_scan_uncached)


def iter_rule_ids() -> Iterator[str]:
    """Every rule id the scanner can report (for docs and tests)."""
    yield from _pipeline().rule_ids()
