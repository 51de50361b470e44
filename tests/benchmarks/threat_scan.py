"""Benchmark for the memory threat scanner: detection quality and speed.

Run as ``python tests/benchmarks/threat_scan.py [--baseline REV]``. For each data set (train,
held-out, fresh) it prints recall per labelled category, the share of risky-looking benign
entries (traps) and of ordinary entries that were flagged, and the throughput (entries/s of CPU
time, p50/p99 per entry) of scanning every entry with the verdict cache bypassed.

``--baseline REV`` loads the scanner as it was at git revision REV (read with ``git show``, never
copied into the tree) and measures it in the same run, in interleaved rounds, so that the two
figures share the machine's load.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import types
from collections import Counter
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
DATA = ROOT / "tests" / "data" / "threats"

# Allow running the script straight from a checkout without installing the package.
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from engine.memory import threats  # noqa: E402

# Held-out labels are finer than the scanner's categories: role hijack is reported as injection.
SCANNER_CATEGORY = {"role_hijack": "injection"}
Scan = Callable[[str], "threats.Verdict"]


def _jsonl(path: Path) -> list[dict[str, str]]:
    if not path.exists():
        return []
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def load_sets() -> dict[str, tuple[list[dict[str, str]], list[dict[str, str]]]]:
    """name -> (attacks with category, benign with kind) for every data set present."""
    legacy_attacks = _jsonl(DATA / "attacks.jsonl")
    legacy_benign = [
        {"kind": "ordinary", "text": x}
        for x in (DATA / "benign.txt").read_text(encoding="utf-8").splitlines()
        if x.strip()
    ]

    def pair(folder: str, prefix: str = "") -> tuple[list[dict[str, str]], list[dict[str, str]]]:
        return (
            _jsonl(DATA / folder / f"{prefix}attacks.jsonl"),
            _jsonl(DATA / folder / f"{prefix}benign.jsonl"),
        )

    train_attacks, train_benign = pair("train")
    sets = {
        "train": (legacy_attacks + train_attacks, legacy_benign + train_benign),
        # (name, folder, file prefix): a development set's "post" half is its measured one.
        **{
            name: pair(folder, prefix)
            for name, folder, prefix in (
                ("held-out", "heldout", ""),
                ("fresh", "fresh", ""),
                ("dev2", "dev2", ""),
                ("dev3", "dev3", ""),
                ("post", "post", ""),
                ("dev4", "dev4", ""),
                ("dev4-post", "dev4", "post_"),
                ("dev5", "dev5", ""),
                ("dev5-post", "dev5", "post_"),
            )
        },
    }
    return {name: rows for name, rows in sets.items() if rows[0] or rows[1]}


def quality(scan: Scan, attacks: list[dict[str, str]], benign: list[dict[str, str]]) -> dict:
    total: Counter[str] = Counter()
    hit: Counter[str] = Counter()
    labelled: Counter[str] = Counter()
    for row in attacks:
        verdict = scan(row["text"])
        cat = row["category"]
        total[cat] += 1
        hit[cat] += verdict.blocked
        labelled[cat] += SCANNER_CATEGORY.get(cat, cat) in verdict.categories
    kinds: Counter[str] = Counter()
    flagged: Counter[str] = Counter()
    fps: list[str] = []
    for row in benign:
        kinds[row["kind"]] += 1
        if scan(row["text"]).blocked:
            flagged[row["kind"]] += 1
            fps.append(row["text"])
    return {"total": total, "hit": hit, "labelled": labelled, "kinds": kinds, "flagged": flagged,
            "fps": fps}  # fmt: skip


def print_quality(name: str, label: str, q: dict, show_fp: int) -> None:
    total, hit, labelled = q["total"], q["hit"], q["labelled"]
    n = sum(total.values())
    print(f"[{name}] {label}")
    if n:
        print(f"  {'category':<18} {'n':>5} {'recall':>8} {'category hit':>13}")
        for cat in sorted(total):
            c = total[cat]
            print(f"  {cat:<18} {c:>5} {hit[cat] / c:>8.1%} {labelled[cat] / c:>13.1%}")
        print(f"  {'all':<18} {n:>5} {sum(hit.values()) / n:>8.1%}")
    for kind in ("trap", "ordinary"):
        k = q["kinds"][kind]
        if k:
            print(f"  benign {kind:<9} {k:>5} flagged {q['flagged'][kind]:>4} "
                  f"({q['flagged'][kind] / k:.2%})")  # fmt: skip
    for text in q["fps"][:show_fp]:
        print(f"    FP: {text[:110]!r}")


def throughput(scan: Scan, texts: list[str]) -> tuple[float, list[float]]:
    """CPU seconds for one pass over texts, and each entry's CPU time.

    CPU time, not wall time: on a shared machine a wall-clock p99 measures how often the
    process was preempted, which is the same for any scanner.
    """
    samples = []
    clock = time.process_time
    cpu = clock()
    for text in texts:
        start = clock()
        scan(text)
        samples.append(clock() - start)
    return clock() - cpu, samples


def _timed(scan: Scan, text: str) -> float:
    start = time.process_time()
    scan(text)
    return time.process_time() - start


def _entry_2000(benign: list[dict[str, str]]) -> str:
    """A long but ordinary entry: benign notes run together, cut to exactly 2,000 characters."""
    text = ""
    for row in benign * 10:
        text += row["text"] + " "
        if len(text) >= 2000:
            break
    return text[:2000]


def _adversarial_64k() -> str:
    """Fragments that each start many rule attempts without completing them."""
    pieces = ["ignore all ", "curl ", "<!--", "QUFBQUFBQUFBQUFBQUFBQUFBQUFB ", "* * * * ",
              "![x](https://e.example/?", "edit your ", "\u200b", "p\u0430y ", "$a ",
              "password: ", "from now on ", "i.g.n.o.r.e ", "1gn0r3 ", "-- .- ",
              "%41%42"]  # fmt: skip
    text = "".join(pieces)
    return (text * (65536 // len(text) + 1))[:65536]


def load_baseline(rev: str) -> types.ModuleType:
    source = subprocess.run(
        ["git", "show", f"{rev}:engine/memory/threats.py"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    module = types.ModuleType("threats_baseline")
    sys.modules["threats_baseline"] = module  # dataclasses look their module up by name
    exec(compile(source, f"{rev}:engine/memory/threats.py", "exec"), module.__dict__)
    return module


def uncached(module: types.ModuleType) -> Scan:
    # Time the scan, not the cache of verdicts in front of it (a write scans new text).
    return module._scan_uncached


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", metavar="REV", help="also measure the scanner at git REV")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved timing rounds")
    parser.add_argument("--show-fp", type=int, default=10, help="false positives to print")
    args = parser.parse_args()

    print(f"cpus: {os.cpu_count()}, python {sys.version.split()[0]}, "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")  # fmt: skip
    t0 = time.perf_counter()
    threats.scan("warm-up: compile the rules")
    print(f"first scan (lazy rule compilation): {(time.perf_counter() - t0) * 1000:.1f} ms")
    scanners: list[tuple[str, Scan]] = [("current", uncached(threats))]
    if args.baseline:
        scanners.insert(0, (f"baseline {args.baseline}", uncached(load_baseline(args.baseline))))

    sets = load_sets()
    print(
        "training data of the model: train, dev2, dev3, post, fresh, dev4, dev5; never: held-out, "
        "dev4-post, dev5-post"
    )
    for name, (attacks, benign) in sets.items():
        for label, scan in scanners:
            # dev2, dev3, post and fresh were development sets and are now part of the model's
            # training data; held-out is the gate, and the unseen measures are the blind set and
            # fresh3 (threat_blind.py).
            shown = 0 if name in ("dev2", "dev3") else args.show_fp
            print_quality(name, label, quality(scan, attacks, benign), shown)

    texts = [r["text"] for r in sets["held-out"][0] + sets["held-out"][1]]
    cpu: dict[str, float] = Counter()
    fastest: dict[str, float] = {}
    walls: dict[str, list[float]] = {label: [] for label, _ in scanners}
    for _ in range(args.rounds):
        for label, scan in scanners:
            spent, samples = throughput(scan, texts)
            cpu[label] += spent
            fastest[label] = min(fastest.get(label, spent), spent)
            walls[label].extend(samples)
    print(f"speed: {len(texts)} held-out entries (mean {sum(map(len, texts)) / len(texts):.0f} "
          f"chars) x {args.rounds} interleaved rounds, cache bypassed")  # fmt: skip
    for label, _ in scanners:
        ordered = sorted(walls[label])
        p50 = ordered[len(ordered) // 2] * 1000
        p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))] * 1000
        rate = len(texts) * args.rounds / cpu[label]
        # The least loaded round is the nearest to a quiet machine: other work only adds time.
        best = len(texts) / fastest[label]
        print(f"  {label:<22} {rate:>9,.0f} entries/s (best round {best:,.0f})  CPU p50 "
              f"{p50:.3f} ms  p99 {p99:.3f} ms  max {ordered[-1] * 1000:.2f} ms")  # fmt: skip
    entry, big = _entry_2000(sets["train"][1]), _adversarial_64k()
    for name, text, runs in (("2,000-char entry", entry, 50), ("64 KB adversarial", big, 3)):
        for label, scan in scanners:
            times = sorted(_timed(scan, text) for _ in range(runs))
            print(f"  {name:<18} {label:<22} p50 {times[len(times) // 2] * 1000:8.2f} ms  "
                  f"max {times[-1] * 1000:8.2f} ms")  # fmt: skip
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
