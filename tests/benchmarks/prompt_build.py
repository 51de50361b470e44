"""Time to build a session's system prompt with full memory and a 100 KB project context file.

    python tests/benchmarks/prompt_build.py [--samples N]

Each sample is one ``build_system_prompt`` call on a real temp home: SOUL.md read and scanned,
tool guidance, a skills index, the context file found, read, cut to the cap and scanned, both
memory files read through ``MemoryService.prompt_snapshot`` (history check in SQLite, every
entry scanned) and the date. MEMORY.md and USER.md are filled to within one entry of their
default limits (2,200 and 1,375 chars); the context file is 100 KB of ordinary instruction
text that the scanner passes.

Three caps for the context file: the floor (a model of 8,192 tokens: 20,000 chars), a
128,000-token model (51,200 chars), and ``agent.context_file_max_chars`` set above the file's
size, so all 100 KB are loaded and scanned. Each is timed cold (every scan verdict cache
cleared first: a fresh process) and warm (caches kept: the next session in the same process).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from engine import prompt as prompt_module
from engine.config import AgentConfig, Config
from engine.db import dispose_engines
from engine.home import Home
from engine.memory import threats
from engine.memory.entries import Target
from engine.memory.errors import MemoryToolError
from engine.memory.service import MemoryService

NOW = datetime(2025, 3, 14)
TOOLS = ("memory", "session_search")
SKILLS = "\n".join(f"- skill-{i:02d}: one line saying what skill {i} is for" for i in range(30))
SOUL = (
    "You are Quill, a careful assistant for a small software team.\n\n"
    "Answer briefly, show code before prose, and say when you are unsure.\n\n"
    "Prefer the project's own tools and conventions over general advice.\n"
)
NOTES = [
    "Staging runs on Hetzner CX32 in fsn1; production is on Fly.io, region fra.",
    "User prefers concise answers, code first, with a one-line reason after it.",
    "The repo uses uv for environments; never pip install into the system Python.",
    "Postgres 16 runs in docker compose; migrations are alembic, autogenerate off.",
    "Release notes are short, in English, and say why a change was made.",
    "Design review is on Tuesdays at 10:00 CET; avoid scheduling anything then.",
    "CI is GitHub Actions; the slow suite runs nightly with pytest -m slow.",
]


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return statistics.median(ordered), p95


def fill(service: MemoryService, target: Target) -> str:
    """Add entries until the next one would not fit; the final usage, as the header shows it."""
    n = 0
    while True:
        note = NOTES[n % len(NOTES)]
        try:
            service.write(target, [{"action": "add", "content": f"{note} (#{n})"}])
        except MemoryToolError:
            break
        n += 1
    current = service.read(target)
    return f"{target.filename}: {current.chars:,}/{current.limit:,} chars, {n} entries"


def context_file(size: int) -> str:
    """``size`` characters of ordinary project instructions: headings, rules, commands, paths."""
    sections = []
    i = 0
    while sum(len(s) for s in sections) < size:
        sections.append(
            f"## Area {i}: module src/pkg/area_{i}/\n\n"
            f"- Run `uv run pytest tests/area_{i} -q` before committing changes here.\n"
            f"- Keep functions in area_{i} under 50 lines; split helpers into _util.py.\n"
            f"- Public names are documented in docs/area_{i}.md with one example each.\n"
            f"- Logs go through logging.getLogger(__name__), never print().\n"
            f"- Config keys for this area live under `area{i}:` in config.yaml.\n\n"
        )
        i += 1
    return "".join(sections)[:size]


def clear_caches() -> None:
    prompt_module._scan.cache_clear()
    threats._scan_cached.cache_clear()


def measure(fn: Callable[[], object], samples: int, cold: bool) -> list[float]:
    times = []
    fn()  # imports, first connection: not part of any session's cost
    for _ in range(samples):
        if cold:
            clear_caches()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--samples", type=int, default=50)
    args = parser.parse_args()

    print(
        f"cpus: {os.cpu_count()}, python {sys.version.split()[0]}, samples: {args.samples}, "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    root = Path(tempfile.mkdtemp(prefix="cairn-prompt-bench-"))
    try:
        home = Home(root / "home")
        project = root / "project"
        project.mkdir()
        home.root.mkdir()
        home.soul_file.write_text(SOUL, encoding="utf-8")
        text = context_file(100 * 1024)
        (project / "AGENTS.md").write_text(text, encoding="utf-8")
        assert not threats.scan(text).blocked, "the benchmark's context file must pass the scan"

        service = MemoryService(home, Config())
        print(fill(service, Target.MEMORY))
        print(fill(service, Target.USER))
        print(f"AGENTS.md: {len(text):,} chars")

        cases = [
            ("8,192-token model (cap 20,000)", Config(), 8192),
            ("128,000-token model (cap 51,200)", Config(), 128_000),
            (
                "cap 200,000 (whole file)",
                Config(agent=AgentConfig(context_file_max_chars=200_000)),
                8192,
            ),
        ]
        print(
            f"{'context file':<34} {'prompt chars':>12} {'cold p50':>9} {'cold p95':>9} "
            f"{'warm p50':>9} {'warm p95':>9}  (ms)"
        )
        for label, config, context_length in cases:

            def build(config: Config = config, context_length: int = context_length) -> object:
                return prompt_module.build_system_prompt(
                    home,
                    config,
                    memory=service,
                    tool_names=TOOLS,
                    context_length=context_length,
                    cwd=project,
                    skills_index=SKILLS,
                    now=NOW,
                )

            built = build()
            assert not built.warnings or all("middle is left out" in w for w in built.warnings)
            cold = percentiles(measure(build, args.samples, cold=True))
            warm = percentiles(measure(build, args.samples, cold=False))
            print(
                f"{label:<34} {len(built.text):>12,} {cold[0] * 1000:>9.1f} "
                f"{cold[1] * 1000:>9.1f} {warm[0] * 1000:>9.2f} {warm[1] * 1000:>9.2f}"
            )

        # Where a cold build spends its time: the context scan dominates.
        clear_caches()
        snapshot = percentiles(measure(service.prompt_snapshot, args.samples, cold=True))
        print(
            f"memory snapshot alone, cold: p50 {snapshot[0] * 1000:.1f} ms, "
            f"p95 {snapshot[1] * 1000:.1f} ms"
        )
    finally:
        dispose_engines()
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
