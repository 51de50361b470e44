"""Benchmark: how long a terminal command takes from process start to exit.

    python tests/benchmarks/cli_startup.py            # 9 runs of each command
    python tests/benchmarks/cli_startup.py --runs 15

Each run is a fresh interpreter running the installed entry point (``python -m app.launch``,
what ``cairn`` runs) on a prepared home with a few memory entries, interleaved with a bare
``python -c pass`` so the ratio holds on a loaded machine. Wall time and the child's CPU time
(user + system, from ``os.wait4``) are reported as medians; the first run of each writes the
``.pyc`` files and is left out.

Goal (issue 15): ``cairn memory show`` <= 0.3 s wall on a quiet machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = {
    "python -c pass": ["-c", "pass"],
    "cairn memory show": ["-m", "app.launch", "memory", "show"],
    "cairn sessions list": ["-m", "app.launch", "sessions", "list"],
    "cairn --version": ["-m", "app.launch", "--version"],
}


def once(argv: list[str], home: Path) -> tuple[float, float]:
    extra = [] if argv[0] == "-c" or "--version" in argv else ["--home", str(home)]
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, *argv, *extra], cwd=ROOT, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(argv)} failed")
    return wall, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder) / "home"
        for text in ("Deploys go through CI", "Staging is db3", "Prefers short answers"):
            subprocess.run(
                [sys.executable, "-m", "app.launch", "memory", "add", text, "--home", str(home)],
                cwd=ROOT,
                check=True,
                stdout=subprocess.DEVNULL,
            )
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name in COMMANDS}
        for run in range(runs + 1):
            for name, argv in COMMANDS.items():  # interleaved: load hits every command alike
                sample = once(argv, home)
                if run:
                    samples[name].append(sample)
    print(f"load average {os.getloadavg()[0]:.2f}, {runs} runs each (medians)")
    base_wall = statistics.median(w for w, _ in samples["python -c pass"])
    for name, got in samples.items():
        wall = statistics.median(w for w, _ in got)
        cpu = statistics.median(c for _, c in got)
        print(f"{name:<22} wall {wall:6.3f} s  cpu {cpu:6.3f} s  ({wall / base_wall:4.1f}x bare)")


if __name__ == "__main__":
    main()
