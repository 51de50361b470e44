"""Skills at scale: loading 500 skills, building the prompt index, viewing one skill.

    python tests/benchmarks/skills_index.py [--skills N] [--samples N]

A temp home gets N skills (default 500) in 10 categories, each a SKILL.md of ~2 KB (front
matter with a description of 40-200 chars, tags and version, then Markdown steps), a quarter of
them with a supporting file. Timed, each the median of the samples:

- ``load_catalog``: walk the folder, read and parse every front matter; cold (a fresh
  process) and warm (front matter of unchanged files already parsed in this process);
- ``skills_index`` cold (every scan verdict cache cleared: a fresh process) and warm (the next
  session in the same process);
- ``skill_view(name)`` cold: find the skill, read it, scan all of it, count the use;
- ``skill_manage`` create and patch of a ~2 KB SKILL.md by the agent, cold: validate, parse,
  guard scan, lock, durable write (temp file, fsync, rename, folder fsync), trust record.

Index size is reported in chars and tokens (chars / 4), per skill, for the whole catalogue and
for a typical home of 20 skills.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from engine.config import Config
from engine.home import Home
from engine.memory import threats
from engine.skills import guard, store
from engine.skills.manage import SkillManager
from engine.skills.store import load_catalog
from engine.skills.tools import SkillView, skills_index

_VOCABULARY = """deploy build release staging database migration backup restore docker compose
kubernetes logs metrics alert review branch rebase bisect regression profile cache index query
report invoice email calendar notes draft outline translate summarise cleanup rotate certificate"""
WORDS = _VOCABULARY.split()
STEP = (
    "Run `make check` in the project root and read the first failure; fix it before moving on. "
    "Keep the output of each command, since the next step compares against it.\n"
)


def make_home(root: Path, count: int, rng: random.Random) -> Home:
    home = Home(root / "home")
    for i in range(count):
        name = f"{rng.choice(WORDS)}-{rng.choice(WORDS)}-{i:03d}"
        folder = home.skills_dir / f"cat{i % 10}" / name
        folder.mkdir(parents=True)
        description = " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 30))).capitalize()
        tags = ", ".join(rng.sample(WORDS, 3))
        body = "".join(f"{n}. {STEP}" for n in range(1, 12))
        (folder / "SKILL.md").write_text(
            f"---\nname: {name}\ndescription: {description}.\nversion: 1.{i % 7}\n"
            f"tags: [{tags}]\n---\n\n# {name}\n\n{body}",
            encoding="utf-8",
        )
        if i % 4 == 0:
            (folder / "references").mkdir()
            (folder / "references/notes.md").write_text(STEP * 20, encoding="utf-8")
        # Skills written an hour ago, as in real use (files changed in the last seconds are
        # never served from the parse cache).
        hour_ago = time.time() - 3600
        os.utime(folder / "SKILL.md", (hour_ago, hour_ago))
    return home


def clear_caches() -> None:
    threats._scan_cached.cache_clear()
    guard._scan_cached.cache_clear()
    store._META_CACHE.clear()


def timed(fn: Callable[[], object], samples: int, cold: bool = False) -> float:
    runs = []
    for _ in range(samples):
        if cold:
            clear_caches()
        start = time.perf_counter()
        fn()
        runs.append((time.perf_counter() - start) * 1000)
    return statistics.median(runs)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--skills", type=int, default=500)
    parser.add_argument("--samples", type=int, default=7)
    args = parser.parse_args()
    print(f"load average: {os.getloadavg()[0]:.2f}; python {sys.version.split()[0]}")
    root = Path(tempfile.mkdtemp(prefix="cairn-skills-bench-"))
    try:
        rng = random.Random(7)
        home = make_home(root, args.skills, rng)
        catalog = load_catalog(home)
        assert len(catalog.skills) == args.skills and not catalog.problems, catalog.problems
        print(f"{args.skills} skills, {sum(s.size for s in catalog.skills):,} bytes of SKILL.md")
        cold_load = timed(lambda: load_catalog(home), args.samples, cold=True)
        print(f"load_catalog cold:     {cold_load:8.1f} ms")
        print(f"load_catalog warm:     {timed(lambda: load_catalog(home), args.samples):8.1f} ms")
        cold = timed(lambda: skills_index(home), args.samples, cold=True)
        warm = timed(lambda: skills_index(home), args.samples)
        print(f"skills_index cold:     {cold:8.1f} ms")
        print(f"skills_index warm:     {warm:8.1f} ms")
        view = SkillView(home)
        name = catalog.skills[len(catalog.skills) // 2].ref
        print(
            f"skill_view cold:       "
            f"{timed(lambda: view({'name': name}), args.samples, cold=True):8.1f} ms"
        )

        # Writes go to a home of their own so the index figures below stay those of N skills.
        manager = SkillManager(Home(root / "writes"), Config(), author="agent")
        body = "".join(f"{n}. {STEP}" for n in range(1, 12))
        made = iter(range(10_000))

        def create() -> None:
            name = f"bench-{next(made)}"
            manager.run({"action": "create", "name": name, "description": "d", "body": body})

        print(f"create (agent, ~2 KB):  {timed(create, args.samples, cold=True):8.1f} ms")
        flip = iter(range(10_000))

        def patch() -> None:
            n = next(flip)
            pair = ("\n1. Run", "\n1. First run")
            old, new = pair if n % 2 == 0 else pair[::-1]
            manager.run({"action": "patch", "name": "bench-0", "find": old, "replace": new})

        print(f"patch (agent):          {timed(patch, args.samples, cold=True):8.1f} ms")

        index = skills_index(home)
        lines = index.splitlines()
        full = [line for line in lines[1:] if line.startswith("- ")]
        print(
            f"index, {args.skills} skills: {len(index):,} chars = {len(index) / 4:,.0f} tokens; "
            f"{len(full)} with a description, the rest by name or counted"
        )
        per_line = [len(line) / 4 for line in full]
        print(
            f"tokens per described skill: mean {statistics.mean(per_line):.1f}, "
            f"max {max(per_line):.1f}"
        )

        small = make_home(root / "small", 20, random.Random(11))
        small_index = skills_index(small)
        header = len(small_index.splitlines()[0]) + 1
        print(
            f"index, 20 skills: {len(small_index):,} chars = {len(small_index) / 4:,.0f} tokens "
            f"(header {header / 4:.0f} tokens, "
            f"{(len(small_index) - header) / 4 / 20:.1f} tokens per skill)"
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
