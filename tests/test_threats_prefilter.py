"""The scanner's prefilter only skips patterns that cannot match: it never changes a verdict."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from engine.memory.threats import prefilter, rules, signals

DATA = Path(__file__).parent / "data" / "threats"


def _train_texts() -> list[str]:
    rows = [json.loads(x) for x in (DATA / "train" / "attacks.jsonl").read_text().splitlines() if x]
    rows += [json.loads(x) for x in (DATA / "train" / "benign.jsonl").read_text().splitlines() if x]
    texts = [r["text"] for r in rows]
    texts += [x for x in (DATA / "benign.txt").read_text(encoding="utf-8").splitlines() if x]
    return texts


def test_an_alternation_is_gated_branch_by_branch() -> None:
    # Each branch needs two words; the union of their first literals alone would let any text
    # with "user" or "send" through.
    pattern = re.compile(r"\bkeep\s+\w+\s+from\s+the\s+user\b|\bsilently\s+send\b")
    req = prefilter.required(pattern)
    assert req is not None and len(req.branches) == 2
    gate = prefilter.Gate([req])
    assert gate.mask("keep it from the user") == 1
    assert gate.mask("we silently send a digest") == 1
    assert gate.mask("the user asked us to send the file") == 0
    assert gate.mask("keep the receipts") == 0


def test_a_branch_without_literals_leaves_the_pattern_always_run() -> None:
    pattern = re.compile(r"\bkeep\s+it\b|\d{4}-\d{2}")
    gate = prefilter.Gate([prefilter.required(pattern)])
    assert gate.mask("2024-05 release") == 1


@pytest.mark.parametrize("layer", ["rules", "signals"])
def test_no_pattern_that_matches_is_skipped(layer: str) -> None:
    # Soundness over real entries: wherever a pattern matches the normalised text, the gate let
    # it run. A gate that is too clever would show up here as a match it would have skipped.
    if layer == "rules":
        gate = rules._gate()
        patterns = [(r.pattern, r.on_case) for r in rules._RULES]
    else:
        gate = signals._gate()
        patterns = [(s.pattern, s.on_case) for s in signals._SIGNALS]
    checked = matched = 0
    for text in _train_texts():
        norm = rules._normalise(text)
        mask = gate.mask(norm.lc)
        for index, (pattern, on_case) in enumerate(patterns):
            if pattern.search(norm.cp if on_case else norm.lc) is not None:
                matched += 1
                assert mask >> index & 1, (pattern.pattern[:80], text[:80])
            checked += 1
    assert matched > 100 and checked > 10 * matched
