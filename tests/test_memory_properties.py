"""Properties of the real store under arbitrary operation sequences (hypothesis).

Whatever the model sends: usage never exceeds the limit after a successful write, a refused
batch leaves the file byte-identical, and the file always parses back into what was written.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.config import Config, MemoryConfig
from engine.db import dispose_engines
from engine.home import Home
from engine.memory.entries import Target, parse, render, usage
from engine.memory.errors import MemoryToolError
from engine.memory.service import MemoryService

LIMIT = 120
words = st.sampled_from(["alpha", "beta", "gamma", "delta", "§", "x" * 40, "Uses uv", " ", ""])
content = st.lists(words, min_size=1, max_size=4).map(" ".join)
needle = st.sampled_from(["alpha", "beta", "gamma", "x" * 10, "Uses", "", "zeta"])
operation = st.one_of(
    st.fixed_dictionaries({"action": st.just("add"), "content": content}),
    st.fixed_dictionaries({"action": st.just("replace"), "old_text": needle, "content": content}),
    st.fixed_dictionaries({"action": st.just("remove"), "old_text": needle}),
)
batches = st.lists(st.lists(operation, min_size=1, max_size=4), min_size=1, max_size=8)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(batches)
def test_any_sequence_keeps_the_invariants(sequence: list[list[dict]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        service = MemoryService(
            Home(Path(tmp)), Config(memory=MemoryConfig(memory_char_limit=LIMIT))
        )
        path = service.read(Target.MEMORY).path
        try:
            for batch in sequence:
                before = path.read_bytes() if path.exists() else None
                try:
                    result = service.write(Target.MEMORY, batch)
                except MemoryToolError:
                    after = path.read_bytes() if path.exists() else None
                    assert after == before, "a refused batch changed the file"
                    continue
                current = service.read(Target.MEMORY)
                assert current.chars <= LIMIT
                assert result["usage"]["chars"] == current.chars
                text = path.read_text(encoding="utf-8") if path.exists() else ""
                assert render(parse(text)) == text
                assert usage(parse(text)) == len(text)
        finally:
            dispose_engines()
