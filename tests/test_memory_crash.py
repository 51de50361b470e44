"""SIGKILL a writer mid-write, 200 times: MEMORY.md stays whole and keeps every acknowledged write.

Each trial forks a writer from this already-imported process (so the 200 trials do not pay
200 interpreter start-ups). The writer loops adds, replaces and, when full, remove+add batches
through the real ``MemoryService``, announcing each batch on a pipe before it writes and
acknowledging it after ``write`` returns. The parent kills it with SIGKILL either a random
moment after the first acknowledgement or just after the N-th, drains the acknowledgements
already in the pipe, and checks the store. Trials run in runs of 20 on the same home, so the
next writer meets the leftovers (temp files, an unfinished history entry) of the last kill.

A byte of shared memory says where the writer was when it died, which shows the kills do land
inside writes, including inside the temp-file/fsync/replace step.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.memory_writer import IDLE, IN_REPLACE, PHASES, run_crash_trials

TRIALS = 200
SEED = int(os.environ.get("CAIRN_CRASH_SEED", "20240611"))


@pytest.mark.slow
def test_sigkill_mid_write_never_tears_or_loses_acknowledged_entries(tmp_path: Path) -> None:
    """Tried: 200 SIGKILLs of a looping writer (10 homes x 20 kills each). After every kill:
    MEMORY.md reads through the store without error, equals the acknowledged state or that
    state plus the one batch in flight (never anything else), is canonical, is within the
    limit, and the memories folder holds nothing but MEMORY.md, its lock and ``.cairn-tmp-*``
    leftovers. After each home's run: a new write applies and the change history is one
    unbroken chain of states ending in the file as it is."""
    report = run_crash_trials(tmp_path, TRIALS, seed=SEED, limit=1500, homes=10)
    where = {PHASES[p]: n for p, n in sorted(report.phases.items())}
    summary = (
        f"seed {SEED}: {report.trials} trials, {report.acks} acks, kills landed {where}, "
        f"{report.trials_with_temp_files} left a temp file, {report.seconds:.1f} s"
    )
    assert not report.failures, summary + "\n" + "\n".join(report.failures[:20])
    assert report.trials == TRIALS
    assert report.acks >= TRIALS, summary
    # The kills must really land while writes are in flight, not between them.
    assert report.kills_during_write >= TRIALS // 2, summary
    assert report.phases.get(IN_REPLACE, 0) >= 5, summary
    assert report.phases.get(IDLE, 0) < TRIALS // 2, summary
