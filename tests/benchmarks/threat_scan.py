"""Benchmark for the memory threat scanner.

Run as ``python tests/benchmarks/threat_scan.py``. Prints recall per category on
``tests/data/threats/attacks.jsonl``, the false-positive rate on ``benign.txt``, and p50/p95 scan
times for a 2,000-character entry and a 64 KB adversarial input.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
DATA = ROOT / "tests" / "data" / "threats"

# Allow running the script straight from a checkout without installing the package.
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from engine.memory.threats import CATEGORIES, _scan_cached, scan  # noqa: E402


def _percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p50 = statistics.median(ordered)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return p50, p95


def _time(text: str, runs: int) -> tuple[float, float]:
    samples = []
    for _ in range(runs):
        _scan_cached.cache_clear()  # time the scan, not the cache of verdicts in front of it
        start = time.perf_counter()
        scan(text)
        samples.append(time.perf_counter() - start)
    return _percentiles(samples)


def _entry_2000(benign: list[str]) -> str:
    # A long but ordinary entry: benign notes run together, cut to exactly 2,000 characters.
    text = ""
    for line in benign * 10:
        text += line + " "
        if len(text) >= 2000:
            break
    return text[:2000]


def _adversarial_64k() -> str:
    # Fragments that each start many rule attempts without completing them, interleaved with
    # unclosed comments, base64-looking runs, invisible characters and look-alike letters.
    pieces = [
        "ignore all ",
        "curl ",
        "<!--",
        "QUFBQUFBQUFBQUFBQUFBQUFBQUFB ",
        "* * * * ",
        "![x](https://e.example/?",
        "edit your ",
        "\u200b",
        "p\u0430y ",
        "$a ",
        "password: ",
        "from now on ",
    ]
    text = "".join(pieces)
    return (text * (65536 // len(text) + 1))[:65536]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200, help="timed runs for the 2,000-char entry")
    parser.add_argument("--big-runs", type=int, default=20, help="timed runs for the 64 KB input")
    args = parser.parse_args()

    attacks = [
        json.loads(line)
        for line in (DATA / "attacks.jsonl").read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    benign = [
        line
        for line in (DATA / "benign.txt").read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]

    total: Counter[str] = Counter()
    blocked: Counter[str] = Counter()
    labelled: Counter[str] = Counter()
    for row in attacks:
        verdict = scan(row["text"])
        total[row["category"]] += 1
        blocked[row["category"]] += verdict.blocked
        labelled[row["category"]] += row["category"] in verdict.categories

    print(f"attacks: {len(attacks)} entries from {(DATA / 'attacks.jsonl').relative_to(ROOT)}")
    print(f"  {'category':<18} {'n':>4} {'blocked':>8} {'category hit':>13}")
    for category in CATEGORIES:
        n = total[category]
        if n:
            print(
                f"  {category:<18} {n:>4} {blocked[category] / n:>8.1%} "
                f"{labelled[category] / n:>13.1%}"
            )
    all_n = sum(total.values())
    print(
        f"  {'all':<18} {all_n:>4} {sum(blocked.values()) / all_n:>8.1%} "
        f"{sum(labelled.values()) / all_n:>13.1%}"
    )

    false_positives = [line for line in benign if scan(line).blocked]
    print(
        f"benign: {len(benign)} entries, false positives {len(false_positives)} "
        f"({len(false_positives) / len(benign):.1%})"
    )
    for line in false_positives:
        print(f"  FP: {line!r}")

    entry = _entry_2000(benign)
    p50, p95 = _time(entry, args.runs)
    print(f"scan 2,000-char entry: p50 {p50 * 1000:.2f} ms, p95 {p95 * 1000:.2f} ms")
    big = _adversarial_64k()
    p50, p95 = _time(big, args.big_runs)
    print(f"scan 64 KB adversarial input: p50 {p50 * 1000:.1f} ms, p95 {p95 * 1000:.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
