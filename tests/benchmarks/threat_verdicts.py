"""Record every verdict of the threat scanner, or compare them with a recording.

    python tests/benchmarks/threat_verdicts.py --record before.json
    python tests/benchmarks/threat_verdicts.py --compare before.json

Work on the scanner's speed must not change what it decides. This script scans every entry of
the labelled data sets (train, held-out, fresh, dev2, post and the hand-written corpus; never
the blind set, which is kept for measuring) plus derived texts that reach code paths the entries
alone may not (two entries on consecutive lines, an entry upper-cased, a long entry, the
adversarial 64 KB text of ``threat_scan.py``), and writes each verdict — blocked, categories and
every finding's id, category, layer and span — to a JSON file. ``--compare`` scans again and
prints each difference; it exits non-zero when there is any.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from engine.memory import threats  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import threat_scan  # noqa: E402


def texts() -> list[str]:
    out: list[str] = []
    for attacks, benign in threat_scan.load_sets().values():
        out.extend(r["text"] for r in attacks + benign)
    base = list(dict.fromkeys(out))
    # Derived texts: lines of a multi-line entry, case the normalisation folds, length.
    out = list(base)
    out.extend(f"{a}\n{b}" for a, b in zip(base[::7], base[3::7], strict=False))
    out.extend(t.upper() for t in base[::5])
    out.extend(" ".join(base[i : i + 20]) for i in range(0, len(base), 400))
    out.append(threat_scan._adversarial_64k())
    return list(dict.fromkeys(out))


def verdict(text: str) -> dict[str, object]:
    v = threats._scan_uncached(text)
    return {
        "blocked": v.blocked,
        "categories": v.categories,
        "findings": [[f.id, f.category, f.layer, f.start, f.end] for f in v.findings],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--record", type=Path, metavar="FILE")
    group.add_argument("--compare", type=Path, metavar="FILE")
    args = parser.parse_args()
    corpus = texts()
    if args.record:
        data = [[t, verdict(t)] for t in corpus]
        args.record.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
        print(f"recorded {len(data)} verdicts ({sum(v['blocked'] for _, v in data)} blocked)")
        return 0
    recorded = json.loads(args.compare.read_text(encoding="utf-8"))
    differ = 0
    for text, before in recorded:
        now = verdict(text)
        if now != before:
            differ += 1
            if differ <= 20:
                print(f"DIFF {text[:100]!r}\n  before {before}\n  now    {now}")
    missing = set(corpus) - {t for t, _ in recorded}
    print(f"compared {len(recorded)} verdicts: {differ} differ"
          f"{f'; {len(missing)} texts not in the recording' if missing else ''}")  # fmt: skip
    return 1 if differ or missing else 0


if __name__ == "__main__":
    raise SystemExit(main())
