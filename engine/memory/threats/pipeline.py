"""Runs the scanner's layers in order, cheapest first, and merges their findings."""

from __future__ import annotations

from collections.abc import Iterator

from engine.memory.threats import rules
from engine.memory.threats.verdict import Finding


def findings(text: str) -> list[Finding]:
    return rules._scan_findings(text, rules._Budget())


def rule_ids() -> Iterator[str]:
    yield from dict.fromkeys(rules.rule_ids())
