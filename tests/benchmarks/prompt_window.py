"""What every request carries, per model window: the fixed part of the prompt in each form.

    python tests/benchmarks/prompt_window.py

For each window an :class:`engine.agent.Agent` is opened on a fresh temp home (the default
persona, the four built-in tools, no skills) with a model stub that only reports the window,
so no request is made. Printed per window and memory state: the form the agent chose (full,
compact, core tools only), the system prompt's characters and estimated tokens, the tool
schemas' estimated tokens, the reply's reserve, the room left for the conversation and
whether the window can be used at all. Memory states: empty; both files filled to within one
entry of their default limits (2,200 and 1,375 chars); and a 252 KB MEMORY.md, which the
prompt bounds to its limit plus a quarter. Figures are estimates (prose ~4 characters a
token, JSON ~3), the same ones the agent uses.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from engine.agent import Agent
from engine.db import dispose_engines
from engine.home import Home
from engine.memory.entries import Target
from engine.memory.errors import MemoryToolError
from engine.memory.service import MemoryService

WINDOWS = (512, 1_024, 2_048, 4_096, 8_192, 32_768)
NOTE = "Staging runs on the small VM in fsn1; production on the managed cluster, region fra."
USER = "Prefers short answers with code first and one line of reason after it."


class WindowOnly:
    """A model that only says how large its window is."""

    name = "bench/window"

    def __init__(self, window: int) -> None:
        self.context_length = window

    def chat(self, *args: object, **kwargs: object) -> None:  # never called here
        raise AssertionError("no request is made")


def fill(home: Home, state: str) -> None:
    if state == "empty":
        return
    if state == "252 KB MEMORY.md":
        home.memories_dir.mkdir(parents=True, exist_ok=True)
        text = "\n§\n".join(f"{NOTE} (entry {i})" for i in range(2_600))
        (home.memories_dir / "MEMORY.md").write_text(text, encoding="utf-8")
        return
    service = MemoryService(home)
    for target, line in ((Target.MEMORY, NOTE), (Target.USER, USER)):
        for i in range(100):
            try:
                service.write(target, [{"action": "add", "content": f"{line} #{i}"}])
            except MemoryToolError:  # full: the next entry would not fit
                break


def main() -> None:
    print(
        f"{'memory':<18} {'window':>7} {'form':<8} {'prompt ch':>9} {'prompt t':>8} "
        f"{'tools t':>7} {'reply':>6} {'room':>7} {'usable':>6} {'build ms':>8}"
    )
    for state in ("empty", "full (default limits)", "252 KB MEMORY.md"):
        for window in WINDOWS:
            root = Path(tempfile.mkdtemp(prefix="cairn-window-"))
            try:
                home = Home(root / "home")
                fill(home, state)
                started = time.process_time()
                agent = Agent(home, provider=WindowOnly(window), background_review=False, cwd=root)
                cpu_ms = (time.process_time() - started) * 1000
                b = agent.window
                form = "core" if b.core_only else "compact" if b.compact else "full"
                print(
                    f"{state:<18.18} {window:>7,} {form:<8} {len(agent.prompt.text):>9,} "
                    f"{b.prompt_tokens:>8,} {b.tools_tokens:>7,} {b.reply_tokens:>6,} "
                    f"{b.room:>7,} {'yes' if b.fits else 'no':>6} {cpu_ms:>8.1f}"
                )
                agent.close()
            finally:
                dispose_engines()
                shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
