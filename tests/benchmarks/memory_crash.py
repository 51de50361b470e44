"""The SIGKILL crash loop of tests/test_memory_crash.py at benchmark scale.

    python tests/benchmarks/memory_crash.py [--trials 1000] [--seed N] [--kills-per-home 20]

Each trial forks a writer that loops adds, replaces and remove+add batches through the real
``MemoryService`` and acknowledges every write on a pipe; the parent SIGKILLs it a random
moment after its first ack or right after its N-th, then checks that MEMORY.md reads, equals
the acknowledged state or that plus the one batch in flight, is canonical and within budget.
After each home's run of kills, a new write must apply and the change history must be one
unbroken chain. Prints where the kills landed (from a shared-memory byte the writer updates
around each step), how many left a temp file (killed between creating it and the rename),
and every failure.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.memory_writer import IDLE, PHASES, CrashReport, run_crash_trials


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=int(time.time()))
    parser.add_argument("--kills-per-home", type=int, default=20)
    parser.add_argument("--limit", type=int, default=1500, help="memory_char_limit")
    args = parser.parse_args()
    homes = max(1, -(-args.trials // args.kills_per_home))
    print(
        f"cpus: {os.cpu_count()}, python {sys.version.split()[0]}, seed {args.seed}, "
        f"{args.trials} trials over {homes} homes, limit {args.limit} chars, "
        f"load average {os.getloadavg()[0]:.2f}"
    )

    def progress(done: int, report: CrashReport) -> None:
        if done % 100 == 0:
            print(f"  {done} trials, {len(report.failures)} failures", flush=True)

    with tempfile.TemporaryDirectory(prefix="cairn-crash-") as root:
        where = Path(root)
        report = run_crash_trials(
            where, args.trials, seed=args.seed, limit=args.limit, homes=homes, progress=progress
        )
    print(f"trials:                        {report.trials}")
    print(f"acknowledged writes:           {report.acks}")
    print(f"kills that landed in a write:  {report.kills_during_write}")
    for phase, label in PHASES.items():
        marker = "  (not in a write)" if phase == IDLE else ""
        print(f"  {label:<46} {report.phases.get(phase, 0):>5}{marker}")
    print(f"kills that left a temp file:   {report.trials_with_temp_files}")
    print(f"failures:                      {len(report.failures)}")
    for failure in report.failures[:50]:
        print(f"  {failure}")
    print(f"time: {report.seconds:.1f} s ({report.seconds / report.trials * 1000:.0f} ms/trial)")
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())
