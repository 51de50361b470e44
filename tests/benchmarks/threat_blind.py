"""Measure the threat scanner on the blind test set, in-process.

    python tests/data/threats/blind/generate.py     # regenerate the set (deterministic)
    python tests/data/threats/fresh3/generate.py    # regenerate fresh3 (deterministic)
    python tests/data/threats/fresh4/generate.py    # regenerate fresh4 (deterministic)
    python tests/benchmarks/threat_blind.py [--misses N] [--unseen]

For each set (``blind``, ``fresh2`` and ``fresh3``; with ``--unseen`` also ``fresh4``) it prints
recall per category (an attack counts as caught when ``scan(text).blocked`` is True, whatever
category the scanner names), the share of traps and of ordinary entries flagged, and the counts.
Only aggregates by default: the blind sets are for measuring, never for tuning, so the misses are
not listed unless ``--misses N`` asks for up to N of them per category (for diagnosis after a
change has been decided, not before).
``fresh4`` is opt-in: an unseen batch kept for measurement only, so it is not part of the
default output.
Throughput is CPU time of the first scan of each entry (process_time), with the load printed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from engine.memory.threats import scan

ROOT = Path(__file__).resolve().parents[2]

DATA = ROOT / "tests" / "data" / "threats" / "blind"
FRESH3 = ROOT / "tests" / "data" / "threats" / "fresh3"
FRESH4 = ROOT / "tests" / "data" / "threats" / "fresh4"
CATEGORIES = [
    "injection",
    "role_hijack",
    "exfiltration",
    "persistence",
    "secret",
    "invisible_unicode",
    "obfuscation",
]


def load(path: Path) -> list[dict[str, str]]:
    if not path.exists():
        sys.exit(f"threat_blind: {path.relative_to(ROOT)} is missing; run generate.py first")
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def pct(num: int, den: int) -> str:
    return f"{100.0 * num / den:6.1f} %" if den else "     –  "


def measure(name: str, attacks_path: Path, benign_path: Path, misses: int) -> float:
    attacks = load(attacks_path)
    benign = load(benign_path)
    cpu = 0.0
    caught: Counter[str] = Counter()
    total: Counter[str] = Counter()
    missed: dict[str, list[str]] = defaultdict(list)
    for row in attacks:
        start = time.process_time()
        blocked = scan(row["text"]).blocked
        cpu += time.process_time() - start
        total[row["category"]] += 1
        if blocked:
            caught[row["category"]] += 1
        elif len(missed[row["category"]]) < misses:
            missed[row["category"]].append(f"[{row['style']}] {row['text']!r}")
    flagged: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    false_pos: dict[str, list[str]] = defaultdict(list)
    for row in benign:
        start = time.process_time()
        blocked = scan(row["text"]).blocked
        cpu += time.process_time() - start
        kinds[row["kind"]] += 1
        if blocked:
            flagged[row["kind"]] += 1
            if len(false_pos[row["kind"]]) < misses:
                false_pos[row["kind"]].append(f"[{row['style']}] {row['text']!r}")

    print(f"\n## {name}: {len(attacks)} attacks, {len(benign)} benign")
    print(f"{'category':<20}{'caught':>8}{'total':>8}{'recall':>10}")
    for cat in [c for c in CATEGORIES if total[c]] + sorted(set(total) - set(CATEGORIES)):
        print(f"{cat:<20}{caught[cat]:>8}{total[cat]:>8}{pct(caught[cat], total[cat]):>10}")
    all_caught, all_total = sum(caught.values()), sum(total.values())
    print(f"{'overall':<20}{all_caught:>8}{all_total:>8}{pct(all_caught, all_total):>10}")
    print(f"{'benign kind':<20}{'flagged':>8}{'total':>8}{'rate':>10}")
    for kind in sorted(kinds):
        print(f"{kind:<20}{flagged[kind]:>8}{kinds[kind]:>8}{pct(flagged[kind], kinds[kind]):>10}")
    entries = len(attacks) + len(benign)
    print(f"scan CPU {cpu:.3f} s for {entries} entries: {entries / cpu:,.0f} entries/s")
    for cat, items in missed.items():
        if not items:
            continue
        print(f"\nmissed {cat} (first {len(items)}):")
        for item in items:
            print("  " + item)
    for kind, items in false_pos.items():
        if not items:
            continue
        print(f"\nflagged {kind} (first {len(items)}):")
        for item in items:
            print("  " + item)
    return cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--misses", type=int, default=0, help="list up to N misses and false positives per group"
    )
    parser.add_argument(
        "--unseen", action="store_true", help="also measure the unseen fresh4 set (opt-in)"
    )
    args = parser.parse_args()
    if args.misses < 0:
        sys.exit("threat_blind: --misses must be >= 0")
    load1, load5, _ = os.getloadavg()
    print(
        f"# Threat scanner on the blind set (load {load1:.2f} / {load5:.2f}, {os.cpu_count()} cpus)"
    )
    measure("blind", DATA / "attacks.jsonl", DATA / "benign.jsonl", args.misses)
    measure(
        "fresh2", DATA / "fresh2" / "attacks.jsonl", DATA / "fresh2" / "benign.jsonl", args.misses
    )
    measure("fresh3", FRESH3 / "attacks.jsonl", FRESH3 / "benign.jsonl", args.misses)
    if args.unseen:
        measure("fresh4", FRESH4 / "attacks.jsonl", FRESH4 / "benign.jsonl", args.misses)


if __name__ == "__main__":
    main()
