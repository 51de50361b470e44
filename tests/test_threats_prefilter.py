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
    # Conditions of different branches do not add up to one branch met.
    assert gate.mask("keep it simple and send it") == 0
    assert gate.mask("silently, from the user's side") == 0


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


def _one_char_at_a_time(text: str) -> tuple[str, str, list[int]]:
    # The normalisation as it was defined: every character through the general path.
    b = rules._Builder()
    for i, ch in enumerate(text):
        rules._normalise_char(b, ch, i)
    norm = b.finish()
    return norm.cp, norm.lc, list(norm.lc_map)


@pytest.mark.parametrize(
    "text",
    [
        "Café at 9 — don’t forget the “big” order  twice",
        "ｉｇｎｏｒｅ  previous\tinstructions ü\nnext line",
        "Привет, мир: keep it short, İstanbul ﬁne",
        "run it \\\n  --flag ü",
        "mixed ёж text with\u200bzero width and  spaces ",
    ],
)
def test_ascii_runs_copied_whole_give_the_same_normalisation(text: str) -> None:
    norm = rules._normalise(text)
    assert (norm.cp, norm.lc, list(norm.lc_map)) == _one_char_at_a_time(text)


def test_the_table_of_characters_seen_stays_bounded() -> None:
    # A text made of tens of thousands of distinct characters is still normalised whole.
    text = "".join(chr(c) for c in range(0x4E00, 0x4E00 + 20000))
    norm = rules._normalise(text)
    assert len(norm.cp) == 20000
    assert len(rules._ACTIONS) <= rules._MAX_ACTIONS
